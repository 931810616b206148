"""t-closeness through microaggregation (microagg.privacy.tcloseness, measures.risk.closeness):
the EMD against an independent computation (scipy's Wasserstein distance on ranks; half the L1
distance for categories), the t-closeness-first block count against the paper's bound, and the
guarantee at every door: every group of the published data, as read back, within t."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import wasserstein_distance

import microagg
from microagg.cli import main
from microagg.errors import ParameterError
from microagg.measures.risk.closeness import SensitiveScale, group_emd
from microagg.privacy.tcloseness import ALGORITHMS, block_count

QIS = ["age", "income"]


def _reference_emd(values: np.ndarray, groups: np.ndarray, ordered: bool) -> np.ndarray:
    """Each group's EMD by the definition: ordered, the 1-Wasserstein distance between the ranks
    of the file's distinct values scaled to [0, 1]; equal, the total variation distance."""
    out = []
    if ordered:
        distinct = np.unique(values)
        position = np.searchsorted(distinct, values) / max(len(distinct) - 1, 1)
        for g in np.unique(groups):
            out.append(wasserstein_distance(position[groups == g], position))
        return np.array(out)
    cats = np.unique(values)
    whole = np.array([np.mean(values == c) for c in cats])
    for g in np.unique(groups):
        part = np.array([np.mean(values[groups == g] == c) for c in cats])
        out.append(0.5 * np.abs(part - whole).sum())
    return np.array(out)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=2, max_size=60),
    st.integers(1, 6),
    st.booleans(),
    st.integers(0, 10**6),
)
def test_emd_is_the_definition(values, groups, ordered, seed):
    x = np.array(values, dtype=float)
    g = np.random.default_rng(seed).integers(0, groups, len(x))
    g = np.unique(g, return_inverse=True)[1]
    scale = SensitiveScale.of(x if ordered else x.astype(int).astype(str), ordered=ordered)
    got = group_emd(scale, g)
    assert got == pytest.approx(_reference_emd(x, g, ordered), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 5000), st.integers(2, 20), st.floats(0.001, 1.0))
def test_the_block_count_is_the_smallest_the_papers_bound_allows(n, k, t):
    kk = block_count(n, k, t)

    def bound(blocks):  # EMD of a cluster with one record per block (TKDE 2015, section 5.3)
        return (n - blocks) / (2 * (n - 1) * blocks)

    assert kk >= min(k, n) and (kk == n or bound(kk) <= t + 1e-12)
    if kk > k:
        assert bound(kk - 1) > t  # one block fewer would not do


def _records(n: int = 120, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(float)
    return pd.DataFrame(
        {
            "id": [f"r{i:03d}" for i in range(n)],
            "age": age,
            "income": np.round(age * 40 + rng.normal(0, 300, n), 2),
            "salary": np.round(age * 50 + rng.normal(0, 100, n)),  # tied to the QIs: disclosive
            "disease": rng.choice(["flu", "cold", "none", "asthma"], n, p=[0.1, 0.2, 0.6, 0.1]),
        }
    )


def _largest(frame: pd.DataFrame, sensitive: str, ordered: bool) -> float:
    groups = frame.groupby(QIS, sort=False).ngroup().to_numpy()
    values = frame[sensitive].to_numpy()
    return float(_reference_emd(values, groups, ordered).max())


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_publishes_t_close_k_anonymous_groups(algorithm):
    df = _records()
    plain = microagg.microaggregate(df, 3, columns=QIS, sensitive=["salary", "disease"])
    assert plain.audit["tcloseness_largest_emd"] > 0.2  # without the model: far from 0.2-close
    res = microagg.microaggregate(
        df,
        3,
        columns=QIS,
        sensitive=["salary", "disease"],
        t_closeness=0.2,
        t_closeness_algorithm=algorithm,
    )
    assert res.data.groupby(QIS).size().min() >= 3
    assert _largest(res.data, "salary", True) <= 0.2
    assert _largest(res.data, "disease", False) <= 0.2
    assert res.audit["tcloseness_largest_emd"] <= 0.2
    model = res.method_facts["privacy_models"][0]
    assert model["model"] == "t-closeness" and model["t"] == 0.2
    assert algorithm == "auto" or model["algorithm"] == algorithm
    assert res.data[["id", "salary", "disease"]].equals(df[["id", "salary", "disease"]])


def test_auto_takes_the_lowest_information_loss():
    df = _records()
    runs = {
        a: microagg.microaggregate(
            df,
            3,
            columns=QIS,
            sensitive="salary",
            t_closeness=0.15,
            t_closeness_algorithm=a,
            audit=False,
        ).information_loss
        for a in ALGORITHMS
    }
    assert runs["auto"] == pytest.approx(min(runs[a] for a in ALGORITHMS[1:]), rel=1e-12)


def test_the_command_line_writes_a_file_t_close_as_read_back(tmp_path):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    _records().to_csv(src, index=False)
    argv = ["protect", str(src), "-o", str(out), "-k", "3", "--columns", "age,income"]
    assert main([*argv, "--sensitive", "salary,disease", "--t-closeness", "0.25", "-q"]) == 0
    back = pd.read_csv(out)
    assert _largest(back, "salary", True) <= 0.25 and _largest(back, "disease", False) <= 0.25
    doc = json.loads(out.with_name("out.csv.manifest.json").read_text())
    (model,) = doc["privacy_models"]
    assert model["t"] == 0.25 and set(model["largest_emd"]) == {"salary", "disease"}
    assert "--t-closeness 0.25" in doc["command"]
    assert doc["audit"]["groups"]["risk"]["tcloseness_largest_emd"] <= 0.25
    same = tmp_path / "api.csv"
    microagg.protect(src, same, k=3, columns=QIS, sensitive=["salary", "disease"], t_closeness=0.25)
    assert same.read_bytes() == out.read_bytes()  # every door, one file


def test_explore_runs_are_t_close():
    df = _records()
    ex = microagg.explore(
        df, k=[3, 4], methods=["mdav"], columns=QIS, sensitive=["salary"], t_closeness=0.2
    )
    for run in ex.runs:
        assert run.status == "ok"
        assert run.figures["risk"]["tcloseness_largest_emd"] <= 0.2


def test_the_app_offers_it():
    from microagg.app.controls import option_controls

    names = [control.param.name for control in option_controls()]
    assert {"t_closeness", "t_closeness_algorithm"} <= set(names)


def test_a_model_without_its_columns_is_one_error_before_any_work(tmp_path, capsys):
    with pytest.raises(ParameterError, match="sensitive"):
        microagg.microaggregate(tmp_path / "missing.csv", 3, t_closeness=0.2)
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    _records().to_csv(src, index=False)
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "--t-closeness", "0.2"]) == 2
    assert "--sensitive" in capsys.readouterr().err and not out.exists()


def test_a_file_that_reads_back_not_t_close_is_refused(tmp_path, monkeypatch):
    """The read-back check, not the algorithm, is what lets a file out: a partition the check
    finds too far is refused and nothing is written."""
    from microagg.privacy import tcloseness

    monkeypatch.setattr(tcloseness, "t_close_labels", lambda Z, labels, *a, **kw: (labels, {}))
    monkeypatch.setattr(tcloseness, "group_emd", lambda s, labels: np.zeros(1))
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    _records().to_csv(src, index=False)
    with pytest.raises(microagg.InputError, match="not 0.05-close"):
        microagg.protect(src, out, k=3, columns=QIS, sensitive="salary", t_closeness=0.05)
    assert not out.exists()


def test_an_explore_runs_partition_publishes_as_the_run_did():
    """The app opens an explore run by its labels: the same t-close partition is published."""
    df = _records()
    options = dict(columns=QIS, sensitive=["salary"], t_closeness=0.2)
    res = microagg.microaggregate(df, 3, **options)
    again = microagg.microaggregate(df, 3, labels=res.labels, **options)
    same = pd.factorize(again.labels)[0], pd.factorize(res.labels)[0]
    assert np.array_equal(*same)  # the same groups
    assert again.method_facts["privacy_models"][0]["merges"] == 0


def test_an_algorithm_without_t_is_one_error():
    with pytest.raises(ParameterError, match="t_closeness"):
        microagg.microaggregate(_records(), 3, columns=QIS, t_closeness_algorithm="first")


@settings(max_examples=25, deadline=None)
@given(
    st.integers(6, 40),
    st.integers(2, 4),
    st.floats(0.02, 0.6),
    st.sampled_from(ALGORITHMS),
    st.integers(1, 6),
    st.booleans(),
    st.integers(0, 10**6),
)
def test_any_file_any_t_is_published_t_close(n, k, t, algorithm, levels, ordered, seed):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, levels, n)
    df = pd.DataFrame(
        {
            "age": rng.normal(size=n),
            "income": rng.normal(size=n) + s,
            "s": s if ordered else s.astype(str),
        }
    )
    res = microagg.microaggregate(
        df,
        k,
        columns=QIS,
        sensitive="s",
        t_closeness=t,
        t_closeness_algorithm=algorithm,
        audit=False,
    )
    assert res.data.groupby(QIS).size().min() >= k
    groups = res.data.groupby(QIS, sort=False).ngroup().to_numpy()
    assert _reference_emd(df["s"].to_numpy(), groups, ordered).max() <= t


def test_evaluate_measures_t_closeness_of_two_files(tmp_path, capsys):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    df = _records()
    df.to_csv(src, index=False)
    microagg.protect(src, out, k=3, columns=QIS, manifest=False)
    capsys.readouterr()
    argv = ["evaluate", str(src), str(out), "--columns", "age,income", "--sensitive", "salary"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    figures = json.dumps(doc)
    assert "tcloseness_largest_emd" in figures and "record_linkage_method_aware" in figures
    assert _find(doc, "tcloseness_largest_emd") == pytest.approx(
        _largest(pd.read_csv(out), "salary", True), rel=1e-12
    )


def _find(doc, name):
    """A figure's value anywhere in a JSON document."""
    if isinstance(doc, dict):
        if name in doc:
            return doc[name]
        for value in doc.values():
            found = _find(value, name)
            if found is not None:
                return found
    return None
