"""The file audit computes what several measures share once (issue 45): the shortcuts give the
figures the measures' own definitions give, on random data (hypothesis) and on the cases where
a shortcut must not apply (two texts read as one value, a suppressed key, declared keys)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg.measures import AuditRoles, audit_files
from microagg.measures.comparison import Comparison
from microagg.measures.file_audit import FileAudit
from microagg.measures.records import blank_as_missing, key_frequencies
from microagg.measures.risk.intervals import sdid_risk
from microagg.measures.risk.rmd import rmd_interval_risk
from microagg.measures.utility import correlation_discrepancy, eigen_sdcmicro, il1s, sample_sd


def _files(seed: int, n: int, d: int, k: int = 3):
    """An original (integers) and its microaggregated file: means of groups of k in the order of
    the first column, as the writer writes them (shortest round-trip texts)."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)) * 100)
    groups = np.argsort(np.argsort(X[:, 0], kind="stable"), kind="stable") // k
    groups = np.minimum(groups, max(n // k - 1, 0))
    names = [f"q{j}" for j in range(d)]
    original = pd.DataFrame(X, columns=names)
    published = original.groupby(groups).transform("mean")
    texts = pd.DataFrame({c: pd.Categorical([repr(v) for v in published[c]]) for c in names})
    return original, published, texts, names


def _roles(names, k=3, **more):
    return AuditRoles(tuple(names), {c: "continuous" for c in names}, k, **more)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 300), d=st.integers(1, 4))
def test_the_shared_key_counts_are_the_measures_own(seed, n, d):
    original, published, texts, names = _files(seed, n, d)
    roles = _roles(names)
    counted = key_frequencies(texts, names, 3)
    files = FileAudit(original, published, roles, grouped=texts, frequencies=counted)
    own = FileAudit(original, published, roles, grouped=texts)
    assert files.frequencies is counted
    assert np.array_equal(files.frequencies.fk, own.frequencies.fk)
    shared, plain = files.published_frequencies, Comparison.published_frequencies.func(files)
    assert np.array_equal(shared.combination, plain.combination)
    assert np.array_equal(shared.fk, plain.fk)
    assert shared.keys == plain.keys and shared.k == plain.k
    assert (
        audit_files(original, published, roles, grouped=texts, frequencies=counted).to_dict()
        == audit_files(original, published, roles, grouped=texts).to_dict()
    )


def test_two_texts_read_as_one_value_are_counted_by_value():
    # '1' and '1.0' are two texts of the value 1.0: grouping by text splits what the values join
    original = pd.DataFrame({"a": [1.0, 1.0, 2.0, 2.0, 2.0, 1.0]})
    published = pd.DataFrame({"a": [1.0, 1.0, 2.0, 2.0, 2.0, 1.0]})
    texts = pd.DataFrame({"a": pd.Categorical(["1", "1", "2", "2", "2", "1.0"])})
    files = FileAudit(original, published, _roles(["a"], k=2), grouped=texts)
    assert not files._texts_name_values()
    assert files.published_frequencies.smallest == 3  # by value: {1.0} x 3, {2.0} x 3
    assert files.frequencies.smallest == 1  # by text: '1.0' alone


def test_one_text_read_as_two_values_is_counted_by_value():
    original = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0]})
    published = pd.DataFrame({"a": [1.0, 1.5, 2.0, 2.0]})
    texts = pd.DataFrame({"a": pd.Categorical(["x", "x", "y", "y"])})
    files = FileAudit(original, published, _roles(["a"], k=2), grouped=texts)
    assert not files._texts_name_values()
    assert files.published_frequencies.smallest == 1


def test_a_suppressed_key_is_counted_as_a_wildcard_not_taken_from_the_check():
    original = pd.DataFrame({"a": [1.0, 1.0, 2.0, 2.0], "s": ["x", "x", "y", "z"]})
    published = pd.DataFrame({"a": [1.0, 1.0, 2.0, 2.0], "s": ["x", "x", "y", ""]})
    texts = pd.DataFrame(
        {"a": pd.Categorical(["1.0", "1.0", "2.0", "2.0"]), "s": pd.Categorical(published["s"])}
    )
    roles = _roles(["a"], k=2, strata=("s",))
    grouped = blank_as_missing(texts)
    counted = key_frequencies(grouped, ["a", "s"], 2)  # the check's: missing as a value
    files = FileAudit(original, published, roles, grouped=grouped, frequencies=counted)
    assert files.keys_missing
    assert files.frequencies is not counted
    assert files.frequencies.fk.tolist() == [2, 2, 2, 2]  # the blank matches 'y'
    assert counted.fk.tolist() == [2, 2, 1, 1]


def test_counts_of_other_keys_are_not_taken():
    original, published, texts, names = _files(0, 30, 2)
    counted = key_frequencies(texts, names[:1], 3)
    files = FileAudit(original, published, _roles(names), grouped=texts, frequencies=counted)
    assert files.frequencies is not counted
    assert files.frequencies.keys == tuple(names)


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"a": pd.Categorical(["x", "", "y"]), "b": [1.0, 2.0, np.nan]}),
        pd.DataFrame({"a": ["", "u", None], "b": [1, 2, 3]}),
        pd.DataFrame({"a": pd.Categorical(["x", "y", "y"]), "b": [1.0, 2.0, 3.0]}),
        pd.DataFrame({"a": pd.array(["", "u", "v"], dtype="string")}),
    ],
)
def test_blank_as_missing_is_replace_blank_by_none(frame):
    assert blank_as_missing(frame).equals(frame.replace("", None))


def test_blank_as_missing_leaves_a_frame_without_blanks_as_it_is():
    frame = pd.DataFrame({"a": pd.Categorical(["x", "y"]), "b": [1.0, 2.0]})
    assert blank_as_missing(frame) is frame


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 200), d=st.integers(1, 4))
def test_the_shared_scales_and_correlations_give_the_functions_own_figures(seed, n, d):
    original, published, _, _ = _files(seed, n, d)
    X, Xp = original.to_numpy(), published.to_numpy()
    c = Comparison(X, Xp)
    assert c.il1s == il1s(X, Xp) or (np.isnan(c.il1s) and np.isnan(il1s(X, Xp)))
    assert c.correlation_discrepancy == correlation_discrepancy(X, Xp)
    assert eigen_sdcmicro(X, Xp, c.correlations, c.sample_sds) == eigen_sdcmicro(X, Xp)
    assert sdid_risk(X, Xp, sd=c.sample_sds[1]) == sdid_risk(X, Xp)
    assert np.array_equal(sample_sd(X), X.std(axis=0, ddof=1))

    def rmd(**sd):
        try:
            return rmd_interval_risk(X, Xp, seed=0, max_fit=50, **sd)
        except ValueError as exc:  # a zero robust covariance: both say so
            return str(exc)

    shared, own = rmd(sd=c.sample_sds[0]), rmd()
    if isinstance(own, str):
        assert shared == own
        return
    assert np.array_equal(shared.rmd, own.rmd)
    assert np.array_equal(shared.at_risk1, own.at_risk1)
    assert np.array_equal(shared.at_risk2, own.at_risk2)


@pytest.mark.parametrize(
    "options",
    [
        {"columns": ["expend", "income", "savings"]},
        {"columns": ["expend", "income", "roof"], "strata": ["urbrur"]},
        {"columns": ["expend", "income"], "keys": ["sex"]},
    ],
)
def test_protects_audit_with_the_runs_embedding_and_the_checks_counts_is_a_fresh_one(
    tmp_path, options
):
    """protect audits its file with the run's embedding of the original and the read-back
    check's key counts: the figures a fresh audit of the file read back gives (``evaluate``)."""
    import warnings

    import microagg
    from microagg import io
    from microagg.datasets import __file__ as datasets

    source = tmp_path / "survey.csv"
    source.write_bytes((Path(datasets).parent / "testdata.csv").read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the code-list columns' notice
        res = microagg.protect(source, tmp_path / "out.csv", k=3, seed=0, **options)
    roles = res.audit_roles
    back = io.read(tmp_path / "out.csv")
    fresh = audit_files(
        io.read(source).frame,
        io.published_view(back),
        roles,
        grouped=blank_as_missing(io.key_view(back, roles.key_variables)),
        seed=0,
    )
    for group in ("utility", "risk"):
        assert res.audit.group(group) == fresh.group(group)


def _inside_by_sorting_every_value(x, xp, m):
    """The rank-interval count by sorting the n values (the former computation)."""
    n = len(xp)
    order = np.argsort(xp)
    ordered = xp[order]
    same = (ordered[1:] == ordered[:-1]) | (np.isnan(ordered[1:]) & np.isnan(ordered[:-1]))
    new_run = np.concatenate(([True], ~same))
    starts = np.flatnonzero(new_run)
    ends = np.append(starts[1:], n) - 1
    lo = ordered[np.maximum(starts - m, 0)]
    hi = ordered[np.minimum(ends + m, n - 1)]
    run = np.cumsum(new_run) - 1
    x = x[order]
    return int(np.count_nonzero((x >= lo[run]) & (x <= hi[run])))


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0, np.nan, 7.0, 1e300]), min_size=1, max_size=60
    ),
    seed=st.integers(0, 1000),
    p=st.sampled_from([0.0, 5.0, 10.0, 50.0, 100.0]),
)
def test_rank_intervals_on_distinct_values_count_as_sorting_every_value(values, seed, p):
    from microagg.measures.risk.intervals import _inside_rank_intervals

    xp = np.array(values)
    x = xp + np.random.default_rng(seed).normal(size=len(xp))
    m = int(np.floor(p * len(xp) / 100.0))
    assert _inside_rank_intervals(x, xp, m) == _inside_by_sorting_every_value(x, xp, m)
