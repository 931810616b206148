"""Households as a structure (issue 54, part 1): with a household id, every published combination
of quasi-identifiers, strata and keys (a blank key matching any value) comes from at least k
households, and each household publishes one value of each household-level variable, at every
door (the API, microagg.protect written and read back, the command line). Checked here by brute
force on generated surveys shaped like EU-SILC (``datasets.household_survey``), independently of
``microagg.households``' own counting."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg.cli import main
from microagg.errors import InputError, ParameterError

HOUSEHOLD_LEVEL = ["hy010", "hy040", "hy090"]
PERSON_LEVEL = ["py010", "py090", "age"]

SETTINGS = settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _survey(households: int, seed: int) -> pd.DataFrame:
    return microagg.datasets.household_survey(households, seed=seed, regions=2)


def _households_sharing(published: pd.DataFrame, exact: list, keys: list, hid: str) -> np.ndarray:
    """Per record, the distinct households of the records that publish its combination: equal on
    ``exact``, and on each key equal or missing on either side. Brute force, pair by pair."""
    exact_values = published[exact].astype(str).to_numpy()
    key_values = published[keys].astype(str).to_numpy()
    blank = published[keys].isna().to_numpy()
    homes = published[hid].to_numpy()
    out = np.empty(len(published), dtype=np.int64)
    for i in range(len(published)):
        same = (exact_values == exact_values[i]).all(axis=1)
        if keys:
            same &= ((key_values == key_values[i]) | blank | blank[i]).all(axis=1)
        out[i] = len(set(homes[same]))
    return out


def _assert_k_by_households(published, k, columns, level, keys=(), strata=(), hid="db030"):
    for c in level:  # one published value per household
        assert (published.groupby(hid)[c].nunique(dropna=False) == 1).all(), c
    sharing = _households_sharing(published, [*columns, *strata], list(keys), hid)
    assert sharing.min() >= k


def _published_csv(path) -> pd.DataFrame:
    return pd.read_csv(path)


@SETTINGS
@given(
    households=st.integers(12, 40),
    seed=st.integers(0, 10_000),
    k=st.integers(2, 4),
    which=st.sampled_from(["both", "household", "person"]),
    strata=st.booleans(),
    weighted=st.booleans(),
)
def test_the_api_publishes_every_combination_from_k_households(
    households, seed, k, which, strata, weighted
):
    df = _survey(households, seed)
    columns = {
        "both": HOUSEHOLD_LEVEL[:2] + PERSON_LEVEL,
        "household": HOUSEHOLD_LEVEL,
        "person": PERSON_LEVEL,
    }[which]
    options = {"strata": ["db040"], "merge_small_strata": True} if strata else {}
    if strata and df.groupby("db040")["db030"].nunique().min() < k:
        options = {}
    res = microagg.microaggregate(
        df,
        k=k,
        columns=columns,
        continuous=["age"] if "age" in columns else None,
        household="db030",
        sample_weight="db090" if weighted else None,
        **options,
    )
    # the household-level QIs are found from the data: every one constant within every household
    # (the survey's household incomes; a person's column zero in every larger household too)
    constant = df.groupby("db030")[columns].nunique(dropna=False).max() == 1
    level = [c for c in columns if constant[c]]
    assert set(HOUSEHOLD_LEVEL) & set(columns) <= set(level)
    assert list(res.audit_roles.household_level) == level
    _assert_k_by_households(res.data, k, columns, level, strata=options.get("strata", ()))
    # the household id and weights are never averaged: every column outside the QIs as it came
    for c in df.columns:
        if c not in columns:
            pd.testing.assert_series_equal(res.data[c], df[c])
    risk = res.audit.group("risk")
    assert risk["households_smallest"] >= k and risk["households_records_below_k"] == 0
    assert "k-anonymous by households" in res.summary()


@SETTINGS
@given(households=st.integers(15, 40), seed=st.integers(0, 10_000), k=st.integers(2, 4))
def test_keys_are_suppressed_until_each_combination_comes_from_k_households(households, seed, k):
    df = _survey(households, seed)
    df["agegroup"] = (df["age"] // 20).astype(np.int64)
    res = microagg.microaggregate(
        df,
        k=k,
        columns=["hy010", "py010"],
        household="db030",
        keys=["rb090", "agegroup"],
    )
    _assert_k_by_households(res.data, k, ["hy010", "py010"], ["hy010"], keys=["rb090", "agegroup"])


@SETTINGS
@given(households=st.integers(12, 30), seed=st.integers(0, 10_000), k=st.integers(2, 4))
def test_protect_writes_a_file_that_reads_back_k_anonymous_by_households(
    tmp_path, households, seed, k
):
    df = _survey(households, seed)
    src, out = tmp_path / f"in{seed}.csv", tmp_path / f"out{seed}.csv"
    df.to_csv(src, index=False)
    columns = HOUSEHOLD_LEVEL[:2] + ["py010", "age"]
    res = microagg.protect(
        src, out, k=k, columns=columns, continuous=["age"], household="db030", keys=["rb090"]
    )
    published = _published_csv(out)
    _assert_k_by_households(published, k, columns, HOUSEHOLD_LEVEL[:2], keys=["rb090"])
    manifest = json.loads(out.with_name(out.name + ".manifest.json").read_text())
    assert manifest["roles"]["household"] == ["db030"]
    assert (
        manifest["roles"]["privacy_model"]
        == manifest["verified"]["privacy_model"]
        == f"k-anonymous by households (k = {k}, household id db030)"
    )
    assert manifest["verified"]["smallest_households"] >= k
    assert res.file.k_anonymous


@SETTINGS
@given(households=st.integers(12, 30), seed=st.integers(0, 10_000), k=st.integers(2, 4))
def test_the_command_line_publishes_k_anonymous_by_households(
    tmp_path, capsys, households, seed, k
):
    df = _survey(households, seed)
    src, out = tmp_path / f"in{seed}.csv", tmp_path / f"cli{seed}.csv"
    df.to_csv(src, index=False)
    columns = ["hy010", "hy090", "py010", "age"]
    command = ["protect", str(src), "-o", str(out), "-k", str(k), "--columns", ",".join(columns)]
    command += ["--continuous", "age", "--household", "db030", "--sample-weight", "db090"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(command) == 0
    printed = capsys.readouterr().out
    assert f"k-anonymous by households (k = {k}, household id db030)" in printed
    _assert_k_by_households(_published_csv(out), k, columns, ["hy010", "hy090"])


def test_a_household_of_several_columns_and_a_declared_household_level():
    df = _survey(30, 1)
    # (country, number) identifies a household; the number alone is shared by two households
    df["country"] = np.where(df["db030"] % 2 == 1, "AT", "BE")
    df["number"] = df["db030"] // 2
    assert df.groupby("number")["db030"].nunique().max() >= 1
    res = microagg.microaggregate(
        df,
        k=3,
        columns=["hy010", "hy040", "py010"],
        household=["country", "number"],
        household_level=["hy010"],
    )
    assert list(res.audit_roles.household_level) == ["hy010"]
    assert list(res.audit_roles.household) == ["country", "number"]
    _assert_k_by_households(res.data, 3, ["hy010", "hy040", "py010"], ["hy010"], hid="db030")


def test_household_options_are_refused_in_one_line():
    df = _survey(20, 2)
    with pytest.raises(InputError, match="not constant within every household"):
        microagg.microaggregate(
            df, k=3, columns=["hy010", "py010"], household="db030", household_level=["py010"]
        )
    with pytest.raises(ParameterError, match="household_level"):
        microagg.microaggregate(df, k=3, columns=["hy010"], household_level=["hy010"])
    with pytest.raises(ParameterError, match="both quasi-identifier and household id"):
        microagg.microaggregate(df, k=3, columns=["hy010", "db030"], household="db030")
    broken = df.astype({"db030": "float64"})
    broken.loc[broken.index[0], "db030"] = np.nan
    with pytest.raises(InputError, match="no household id"):
        microagg.microaggregate(broken, k=3, columns=["hy010", "py010"], household="db030")
    with pytest.raises(InputError, match="univariate|each variable"):
        microagg.microaggregate(
            df, k=3, columns=["hy010", "py010"], household="db030", method="individual-ranking"
        )


def test_a_file_not_k_anonymous_by_households_is_refused_and_nothing_written(tmp_path, monkeypatch):
    from microagg.pipeline import grouping

    df = _survey(25, 4)
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    df.to_csv(src, index=False)

    def one_household_per_group(roles, prepared, run, strata, deadline, progress):
        # a partition that ignores households: each household of several members a group of its
        # own (k records, one household), the one-member households together
        codes = roles.households.codes
        sizes = np.bincount(codes)
        labels = np.where(sizes[codes] >= 2, codes, -1)
        labels[labels < 0] = codes.max() + 1
        return grouping.Grouped(microagg.labels.relabel(labels), None, {}, None, strata, None)

    monkeypatch.setattr(grouping, "_household_partition", one_household_per_group)
    with pytest.raises(InputError, match="not k-anonymous by households"):
        microagg.protect(src, out, k=2, columns=["py010", "age"], household="db030")
    assert not out.exists() and not out.with_name(out.name + ".manifest.json").exists()


def test_households_smallest_counts_households_not_records():
    df = _survey(30, 5)
    plain = microagg.microaggregate(df, k=3, columns=["py010", "age"], continuous=["age"])
    by_households = microagg.microaggregate(
        df, k=3, columns=["py010", "age"], continuous=["age"], household="db030"
    )
    assert "households_smallest" not in plain.audit.group("risk")  # no household id: no figure
    sharing = _households_sharing(by_households.data, ["py010", "age"], [], "db030")
    assert by_households.audit.group("risk")["households_smallest"] == sharing.min() >= 3


# --- household risk: sdcMicro's own figures (benchmarks/sdcmicro_households.py), no R here -------


def _harness():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "sdcmicro_households.py"
    spec = importlib.util.spec_from_file_location("sdcmicro_households", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HARNESS = _harness()
PARITY = json.loads((HARNESS.RESULTS / "sdcmicro_households.json").read_text())


@pytest.mark.parametrize("case", PARITY["cases"], ids=lambda c: c["name"])
def test_household_risk_equals_sdcmicro_measure_risk_with_hid(case):
    from microagg.measures.risk import individual_risk
    from microagg.measures.risk.household_risk import hierarchical_risk, household_codes

    spec = next(c for c in HARNESS.CASES if c["name"] == case["name"])
    df = HARNESS.case_data(spec)
    assert len(df) == case["records"]
    figures = HARNESS.microagg_side(df)  # the registered measures, through the file audit
    theirs = case["sdcmicro"]
    assert figures["household_risk_expected"] == pytest.approx(theirs["hier_risk_ER"], rel=1e-9)
    assert figures["household_risk_percent"] == pytest.approx(theirs["hier_risk_pct"], rel=1e-9)
    individual = individual_risk(df, PARITY["keys"], df["db090"].to_numpy(), missing="wildcard")
    per_record = hierarchical_risk(individual.risk, household_codes(df, ["db030"]))
    np.testing.assert_allclose(per_record, case["sdcmicro_hier_risk"], rtol=1e-9, atol=1e-15)


@SETTINGS
@given(households=st.integers(12, 30), seed=st.integers(0, 10_000), k=st.integers(2, 4))
def test_a_categorical_household_level_qi_publishes_one_category_per_household(households, seed, k):
    df = _survey(households, seed)
    columns = ["hy010", "py010", "hh020"]
    res = microagg.microaggregate(
        df, k=k, columns=columns, categorical=["hh020"], household="db030"
    )
    assert set(res.audit_roles.household_level) == {"hy010", "hh020"}
    assert set(res.data["hh020"]) <= set(df["hh020"])  # a category of the original
    _assert_k_by_households(res.data, k, columns, ["hy010", "hh020"])


def test_explore_runs_are_household_aware_and_a_picked_run_publishes_the_same_file():
    df = _survey(40, 6)
    columns = ["hy010", "py010", "age"]
    options = dict(columns=columns, continuous=["age"], household="db030")
    exploration = microagg.explore(df, k=[3, 4], methods=["mdav"], time_limit=60, **options)
    for run in exploration.runs:
        assert run.figures["risk"]["households_smallest"] >= run.k
        direct = microagg.microaggregate(df, k=run.k, **options)
        picked = microagg.microaggregate(df, k=run.k, labels=run.labels, **options)
        pd.testing.assert_frame_equal(picked.data, direct.data)
    # labels that are not the run's (k = 4's, given at k = 3): checked by households, published
    # over the groups of households they link
    other = exploration.runs[1].labels
    res = microagg.microaggregate(df, k=3, labels=other, **options)
    _assert_k_by_households(res.data, 3, columns, ["hy010"])
    one_household = microagg.microaggregate(df, k=3, columns=columns, continuous=["age"]).labels
    homes = microagg.households.household_codes(df, ["db030"])
    if (microagg.households.households_per_group(one_household, homes) < 3).any():
        with pytest.raises(InputError, match="household"):
            microagg.microaggregate(df, k=3, labels=one_household, **options)


def test_fewer_households_than_k_is_one_error_line():
    df = _survey(3, 7)
    with pytest.raises(InputError, match="fewer than k = 4"):
        microagg.microaggregate(df, k=4, columns=["hy010", "py010"], household="db030")


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(
        st.tuples(
            st.integers(0, 6),  # household
            st.integers(0, 1),  # stratum
            st.one_of(st.none(), st.integers(0, 2)),  # a QI's value (None: missing)
            st.one_of(st.none(), st.integers(0, 2)),  # a key's value (None: blank)
        ),
        min_size=1,
        max_size=30,
    ),
    k=st.integers(1, 4),
)
def test_households_sharing_counts_a_missing_qi_or_key_as_any_value(data, k):
    from microagg.measures.risk.household_risk import household_codes, households_sharing

    frame = pd.DataFrame(data, columns=["hid", "stratum", "qi", "key"]).astype(
        {"qi": "float64", "key": "float64"}
    )
    homes = household_codes(frame, ["hid"])
    found = households_sharing(frame, ["stratum"], ["qi"], ["key"], homes, k)
    truth = _households_sharing(frame, ["stratum"], ["qi", "key"], "hid")
    assert (found <= truth).all()  # a lower bound everywhere
    below = truth < k
    np.testing.assert_array_equal(found[below], truth[below])  # exact below k
    assert found.min() == truth.min()


@SETTINGS
@given(households=st.integers(15, 40), seed=st.integers(0, 10_000), k=st.integers(2, 4))
def test_missing_person_incomes_with_households_publish_k_households_and_stay_missing(
    households, seed, k
):
    """Children's incomes missing (EU-SILC's py* are asked of persons aged 16 and over): the
    household-aware run accepts them, publishes them missing, and every combination, a missing
    value matching any value, still comes from at least k households."""
    df = _survey(households, seed)
    df.loc[df["age"] < 16, ["py010", "py090"]] = np.nan
    columns = HOUSEHOLD_LEVEL[:2] + ["py010", "py090"]
    res = microagg.microaggregate(df, k=k, columns=columns, household="db030")
    published = res.data
    pd.testing.assert_frame_equal(
        published[["py010", "py090"]].isna(), df[["py010", "py090"]].isna()
    )
    level = list(res.audit_roles.household_level)
    for c in level:
        assert (published.groupby("db030")[c].nunique(dropna=False) == 1).all(), c
    complete = [c for c in columns if not df[c].isna().any()]
    gappy = [c for c in columns if df[c].isna().any()]
    assert _households_sharing(published, complete, gappy, "db030").min() >= k


def test_household_suppressions_reported_equal_the_new_blanks_of_the_file(tmp_path):
    """With a household id and keys, the suppressions the run reports are the file's new blanks:
    a key already blank in the input is not suppressed again when a record's keys are blanked
    for households."""
    df = _survey(60, 4)
    df["agegroup"] = "y" + df["age"].astype(str)  # text, fine: keys blanked for households
    df.loc[df.index % 7 == 0, "agegroup"] = ""  # blank in the input
    src, out = tmp_path / "silc.csv", tmp_path / "out.csv"
    df.to_csv(src, index=False)
    res = microagg.protect(
        src, out, k=3, columns=HOUSEHOLD_LEVEL[:2], keys=["rb090", "agegroup"], household="db030"
    )
    before = pd.read_csv(src, dtype=str, keep_default_na=False)
    after = pd.read_csv(out, dtype=str, keep_default_na=False)
    for key in ("rb090", "agegroup"):
        new_blanks = int(((after[key] == "") & (before[key] != "")).sum())
        assert res.suppression.per_key[key] == new_blanks
    assert res.suppression.total == sum(res.suppression.per_key.values())


def test_household_with_keys_alone_semantics_is_one_error_line(tmp_path):
    df = _survey(20, 1)
    with pytest.raises(ParameterError, match="key_anonymity"):
        microagg.microaggregate(
            df,
            k=3,
            columns=HOUSEHOLD_LEVEL[:2],
            keys=["rb090"],
            household="db030",
            key_anonymity="keys",
        )
