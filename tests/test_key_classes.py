"""Keys beside numeric QIs (microagg.key_classes, key_anonymity): the whole file k-anonymous on
keys + QIs with a missing key matching any value, the suppressions counted as the file's new
blanks (the input's own apart), and sdcMicro's measure_risk on files with missing keys."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg import key_classes, suppression
from microagg.measures.records import key_codes, wildcard_frequencies
from microagg.measures.risk import individual_risk

FIXTURES = Path(__file__).parent / "fixtures"


@st.composite
def surveys(draw):
    """A survey-shaped frame: a few categorical keys (some values missing), numeric QIs."""
    n = draw(st.integers(8, 50))
    m = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    frame = {}
    for j in range(m):
        cats = draw(st.integers(1, 5))
        values = rng.integers(0, cats, n).astype(float)
        values[rng.random(n) < draw(st.sampled_from([0.0, 0.1, 0.3]))] = np.nan
        frame[f"key{j}"] = values
    frame["income"] = np.round(rng.lognormal(8, 1, n), 2)
    frame["hours"] = np.round(rng.normal(35, 8, n), 1)
    k = draw(st.integers(2, 4))
    return pd.DataFrame(frame), [f"key{j}" for j in range(m)], min(k, n)


def _records_below_k(frame, keys, fixed, k):
    """Brute force: records matching fewer than k records (equal on ``fixed``, on each key equal
    or one of the two missing)."""
    values = frame[keys].to_numpy(dtype=float)
    same = frame[fixed].to_numpy(dtype=float) if fixed else np.zeros((len(frame), 0))
    below = 0
    for i in range(len(frame)):
        keys_match = np.all(np.isnan(values) | np.isnan(values[i]) | (values == values[i]), axis=1)
        fixed_match = np.all(same == same[i], axis=1)
        below += int((keys_match & fixed_match).sum() < k)
    return below


def _run(frame, keys, k, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return microagg.microaggregate(
            frame,
            k=k,
            columns=["income", "hours"],
            continuous=["income", "hours"],
            keys=keys,
            audit=False,
            **options,
        )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(surveys())
def test_keys_and_qis_k_anonymous_with_suppressions_counted_as_blanks(case):
    frame, keys, k = case
    res = _run(frame, keys, k)
    out = res.data
    # the whole file: every record matches k records on the published QIs and the keys
    assert _records_below_k(out, keys, ["income", "hours"], k) == 0
    s = res.suppression
    new = frame[keys].notna().to_numpy() & out[keys].isna().to_numpy()
    assert s.total == int(new.sum()) and np.array_equal(s.suppressed, new)
    assert s.missing_before == int(frame[keys].isna().to_numpy().sum())
    assert s.key_anonymity == "keys+qis"
    # the keys-alone plan the classes were formed after is kept; more only for joined classes
    classes = key_classes.for_run(frame, keys, k, "suppress")
    assert classes.to_dict()["classes"] == len(np.unique(classes.codes))
    assert np.all(s.suppressed[classes.plan.suppressed])
    if classes.joined == 0:
        assert s.total == classes.plan.total
    # every QI group lies in one key class
    pairs = np.unique(np.column_stack([res.labels, classes.codes]), axis=0)
    assert len(pairs) == len(np.unique(res.labels))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(surveys())
def test_sdcmicro_semantics_keys_alone(case):
    frame, keys, k = case
    res = _run(frame, keys, k, key_anonymity="keys")
    out = res.data
    assert _records_below_k(out, keys, [], k) == 0
    # the keys-alone plan exactly: the QIs play no part in the suppression
    assert res.suppression.total == suppression.plan(frame, keys, k).total
    assert res.suppression.key_anonymity == "keys"
    sizes = np.bincount(res.labels)
    assert sizes.min() >= k


def test_blank_cells_and_tokens_are_missing_to_the_planner():
    """A blank field and a declared token are missing, matching any value: never a category of
    their own, never counted as suppressed."""
    rng = np.random.default_rng(5)
    n = 60
    region = rng.choice(["north", "south", "east"], n).astype(object)
    region[:6] = ""
    region[6:9] = "n/a"
    frame = pd.DataFrame({"region": region, "sex": rng.choice(["f", "m"], n)})
    as_missing = frame.assign(region=frame["region"].replace({"": None, "n/a": None}))
    found = suppression.plan(frame, ["region", "sex"], 3, missing=("n/a",))
    expected = suppression.plan(as_missing, ["region", "sex"], 3)
    assert np.array_equal(found.suppressed, expected.suppressed)
    assert found.missing_before == int(as_missing[["region", "sex"]].isna().to_numpy().sum())
    assert not found.suppressed[:9, 0].any()


def test_csv_door_reports_the_blanks_of_the_file_read_back(tmp_path):
    rng = np.random.default_rng(11)
    n = 240
    frame = pd.DataFrame(
        {
            "region": rng.integers(1, 30, n).astype(str).astype(object),
            "sex": rng.choice(["f", "m"], n).astype(object),
            "agegroup": rng.integers(1, 8, n).astype(str).astype(object),
            "income": np.round(rng.lognormal(9, 1, n), 2),
            "assets": np.round(rng.lognormal(10, 1, n), 2),
        }
    )
    frame.loc[rng.random(n) < 0.1, "agegroup"] = ""
    frame.loc[rng.random(n) < 0.05, "region"] = "n/a"  # a declared missing token
    source = tmp_path / "survey.csv"
    frame.to_csv(source, index=False)
    keys = ["region", "sex", "agegroup"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = microagg.protect(
            source,
            tmp_path / "public.csv",
            k=3,
            columns=["income", "assets"],
            keys=keys,
            missing=("n/a",),
        )
    back = pd.read_csv(tmp_path / "public.csv", dtype=str, keep_default_na=False)
    given = pd.read_csv(source, dtype=str, keep_default_na=False)
    gap = given[keys].isin(["", "n/a"])
    new = int((~gap & (back[keys] == "")).to_numpy().sum())
    old = int((gap & back[keys].isin(["", "n/a"])).to_numpy().sum())
    assert old == int(gap.to_numpy().sum())  # the input's gaps stay as they were
    risk = res.audit.group("risk")
    assert res.suppression.total == new == risk["suppressed_key_values"]
    assert res.suppression.missing_before == old == risk["key_values_missing_in_input"]
    manifest = json.loads((tmp_path / "public.csv.manifest.json").read_text())
    assert manifest["verified"]["suppression"]["total"] == new
    assert manifest["verified"]["suppression"]["key_anonymity"] == "keys+qis"
    assert manifest["verified"]["k_anonymous"] is True and risk["key_records_below_k"] == 0
    assert "key_anonymity='keys+qis'" in res.summary()


def _sdcmicro_frequencies(codes, weights):
    """sdcMicro's freqCalc (alpha = 1), read from its R code: a missing value matches any value,
    except that with two keys or more a record missing every key is no match of a complete
    record; a record missing every key counts every record."""
    n, m = codes.shape
    fk, Fk = np.zeros(n), np.zeros(n)
    for i in range(n):
        match = np.all((codes < 0) | (codes[i] < 0) | (codes == codes[i]), axis=1)
        if m > 1 and np.all(codes[i] >= 0):
            match &= ~np.all(codes < 0, axis=1)
        fk[i], Fk[i] = match.sum(), weights[match].sum()
    return fk, Fk


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_freqcalc_all_missing_rule(n, m, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 3, (n, m))
    codes[rng.random((n, m)) < 0.3] = -1
    codes[rng.random(n) < 0.2] = -1
    weights = rng.uniform(1, 50, n)
    fk, Fk = wildcard_frequencies(codes, weights, all_missing_matches_complete=False)
    bf, bF = _sdcmicro_frequencies(codes, weights)
    assert np.array_equal(fk, bf) and np.allclose(Fk, bF, rtol=1e-12)


def test_measure_risk_equals_sdcmicro_on_the_fixture():
    """sdcMicro's measure_risk (run by benchmarks/keys_suppression.py from its source) on a
    generated file where many records miss every key; microagg's figure recomputed here."""
    doc = json.loads((FIXTURES / "keys_measure_risk.json").read_text())
    frame = pd.read_csv(FIXTURES / "keys_measure_risk.csv")
    for tag, weight in (("weighted", doc["weight"]), ("unweighted", None)):
        ours = individual_risk(frame, doc["keys"], weight, missing="wildcard")
        figures = doc[tag]
        assert np.isclose(ours.expected_reidentifications, figures["global_risk_ER"], rtol=1e-9)
        assert ours.fk.sum() == figures["fk_sum"]
        assert np.isclose(ours.Fk.sum(), figures["Fk_sum"], rtol=1e-9)
    codes = key_codes(frame, doc["keys"])
    assert np.any(np.all(codes < 0, axis=1)) and np.any(np.all(codes >= 0, axis=1))


def test_given_labels_publish_the_same_file():
    """A run's labels given back (explore's --from-explore, the app's opened run) publish the same
    file: the keys-alone plan does not depend on the labels."""
    rng = np.random.default_rng(3)
    n = 90
    frame = pd.DataFrame(
        {
            "key0": rng.integers(0, 6, n).astype(float),
            "key1": rng.integers(0, 3, n).astype(float),
            "income": rng.lognormal(8, 1, n),
            "hours": rng.normal(35, 8, n),
        }
    )
    first = _run(frame, ["key0", "key1"], 3)
    again = _run(frame, ["key0", "key1"], 3, labels=first.labels)
    pd.testing.assert_frame_equal(first.data, again.data)
    assert again.suppression.to_dict() == first.suppression.to_dict()


def test_explore_shows_each_runs_suppressions(tmp_path):
    """explore: each run's suppressed key values beside IL and risk, in the table, the map, the
    saved document; equal to the run's own count."""
    from microagg import explore

    rng = np.random.default_rng(8)
    n = 150
    frame = pd.DataFrame(
        {
            "key0": rng.integers(0, 12, n).astype(float),
            "key1": rng.integers(0, 3, n).astype(float),
            "income": rng.lognormal(8, 1, n),
            "hours": rng.normal(35, 8, n),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = explore.explore(
            frame,
            [3, 5],
            ["mdav"],
            time_limit=120,
            columns=["income", "hours"],
            continuous=["income", "hours"],
            keys=["key0", "key1"],
        )
    rows = found.rows()
    for row in rows:
        own = _run(frame, ["key0", "key1"], row["k"]).suppression.total
        assert row["suppressed"] == own
    assert "suppressed" in found.table().splitlines()[0]
    assert all(f"{row['suppressed']} key values suppressed" in found.map_svg() for row in rows)
    saved = json.loads(found.save(tmp_path / "grid.json").read_text())
    assert [r["suppressed"] for r in saved["runs"]] == [row["suppressed"] for row in rows]


def test_cli_names_the_model_and_counts_the_file(tmp_path, capsys):
    """The command line: --key-anonymity keys (sdcMicro's semantics) named in the summary and the
    manifest, its suppressions the file's new blanks, the keys k-anonymous with the strata."""
    from microagg.cli import main

    rng = np.random.default_rng(21)
    n = 200
    frame = pd.DataFrame(
        {
            "region": rng.integers(1, 25, n).astype(str),
            "sex": rng.choice(["f", "m"], n),
            "income": np.round(rng.lognormal(9, 1, n), 2),
            "assets": np.round(rng.lognormal(10, 1, n), 2),
        }
    )
    source, out = tmp_path / "s.csv", tmp_path / "p.csv"
    frame.to_csv(source, index=False)
    argv = ["protect", str(source), "-o", str(out), "-k", "3", "--columns", "income,assets"]
    assert main([*argv, "--keys", "region,sex", "--key-anonymity", "keys"]) == 0
    assert "key_anonymity='keys'" in capsys.readouterr().out
    back = pd.read_csv(out, dtype=str, keep_default_na=False)
    blanks = int((back[["region", "sex"]] == "").to_numpy().sum())
    doc = json.loads((tmp_path / "p.csv.manifest.json").read_text())["verified"]["suppression"]
    assert doc["key_anonymity"] == "keys" and doc["total"] == blanks
    keys = back[["region", "sex"]].replace({"": np.nan, "f": 0, "m": 1}).astype(float)
    assert _records_below_k(keys, ["region", "sex"], [], 3) == 0
