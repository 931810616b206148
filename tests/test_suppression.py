"""Local suppression of categorical keys (microagg.suppression) and the wildcard key frequencies
it relies on (a missing value matches any value, sdcMicro's freqCalc with alpha = 1)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg
from microagg import suppression
from microagg.errors import InputError
from microagg.measures import risk as D


def _brute_frequencies(codes, fixed=None):
    n = len(codes)
    fixed = np.zeros(n) if fixed is None else np.asarray(fixed)
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        for r in range(n):
            same = fixed[i] == fixed[r] and all(
                a < 0 or b < 0 or a == b for a, b in zip(codes[i], codes[r])
            )
            out[i] += same
    return out


@st.composite
def key_frames(draw):
    n = draw(st.integers(1, 40))
    m = draw(st.integers(1, 4))
    cols = {}
    for j in range(m):
        cats = draw(st.integers(1, 6))
        values = draw(st.lists(st.integers(0, cats - 1), min_size=n, max_size=n))
        missing = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        cols[f"k{j}"] = [
            None if gone and draw(st.booleans()) else v for v, gone in zip(values, missing)
        ]
    frame = pd.DataFrame(cols, dtype="object")
    frame["block"] = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    return frame


@settings(max_examples=60, deadline=None)
@given(key_frames())
def test_wildcard_frequencies_match_brute_force(frame):
    keys = [c for c in frame.columns if c != "block"]
    codes = D.key_codes(frame, keys)
    fk, Fk = D.wildcard_frequencies(codes, fixed=frame["block"].to_numpy())
    assert np.array_equal(fk, _brute_frequencies(codes, frame["block"].to_numpy()))
    assert np.array_equal(Fk, fk)  # no weights: Fk counts records


@settings(max_examples=60, deadline=None)
@given(key_frames(), st.integers(1, 4))
def test_plan_makes_every_block_k_anonymous_and_is_locally_minimal(frame, k):
    keys = [c for c in frame.columns if c != "block"]
    plan = suppression.plan(frame, keys, k, fixed=["block"])
    out = suppression.apply(frame, plan)
    original = D.key_codes(frame, keys)
    codes = np.where(plan.suppressed, -1, original)  # the published keys, coded as the original's
    assert np.array_equal(out[keys].isna().to_numpy(), codes < 0)
    fk = _brute_frequencies(codes, frame["block"].to_numpy())
    block_size = frame.groupby("block")["block"].transform("size").to_numpy()
    assert np.all(
        (fk >= k) | (block_size < k)
    )  # below k only where the block itself is smaller than k
    assert plan.records_left_below_k == int(np.count_nonzero(fk < k))
    assert plan.total == sum(plan.per_key.values()) == int(plan.suppressed.sum())
    assert np.all(original[plan.suppressed] >= 0)  # only present values are suppressed
    assert frame.drop(columns=keys).equals(out.drop(columns=keys))  # other columns unchanged
    # locally minimal: giving back any one suppressed value breaks k somewhere (where k was reached)
    if plan.records_left_below_k == 0:
        for i, j in np.argwhere(plan.suppressed):
            trial = codes.copy()
            trial[i, j] = original[i, j]
            assert (_brute_frequencies(trial, frame["block"].to_numpy()) < k).any()
    # deterministic
    again = suppression.plan(frame, keys, k, fixed=["block"])
    assert np.array_equal(again.suppressed, plan.suppressed)


def test_importance_decides_which_key_is_suppressed():
    frame = pd.DataFrame({"a": [1, 1, 2, 2, 1], "b": [5, 5, 6, 6, 6]})
    # record 4 is unique; suppressing either key alone makes it match two others
    assert suppression.plan(frame, ["a", "b"], 2, importance=["a", "b"]).per_key == {"a": 0, "b": 1}
    assert suppression.plan(frame, ["a", "b"], 2, importance=["b", "a"]).per_key == {"a": 1, "b": 0}
    with pytest.raises(ValueError, match="not suppressed keys"):
        suppression.plan(frame, ["a", "b"], 2, importance=["c"])


def test_default_importance_is_sdcmicros_fewer_categories_first():
    frame = pd.DataFrame({"many": [1, 2, 3, 4], "two": [1, 2, 1, 2], "three": [1, 2, 3, 1]})
    assert suppression.default_importance(frame, ["many", "two", "three"]) == [
        "two",
        "three",
        "many",
    ]


def test_apply_keeps_dtypes_missing_as_the_column_holds_it():
    frame = pd.DataFrame(
        {
            "i": np.array([1, 1, 2], dtype=np.int64),
            "s": ["x", "x", "y"],
            "c": pd.Categorical(["u", "u", "v"]),
        }
    )
    plan = suppression.plan(frame, ["i", "s", "c"], 2)
    out = suppression.apply(frame, plan)
    assert plan.total >= 1 and out.isna().sum().sum() == plan.total
    assert str(out["i"].dtype) in ("int64", "Int64")
    assert isinstance(out["c"].dtype, pd.CategoricalDtype)


def _survey(n=240, seed=1):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "income": rng.lognormal(10, 1, n),
            "assets": rng.lognormal(11, 1, n),
            "region": rng.integers(1, 30, n),
            "sex": rng.integers(1, 3, n),
            "age": rng.integers(18, 90, n),
        }
    )


def test_api_suppresses_keys_after_microaggregation_whole_file_k_anonymous():
    df = _survey()
    res = microagg.microaggregate(
        df, k=3, columns=["income", "assets"], keys=["region", "sex", "age"]
    )
    s = res.suppression
    assert s.mode == "suppress" and s.total > 0 and s.records_left_below_k == 0
    assert set(c for c, n in s.per_key.items() if n) <= set(res.changed_columns)
    out = res.data
    assert out[["region", "sex", "age"]].isna().sum().sum() == s.total
    key_vars = ["income", "assets", "region", "sex", "age"]
    assert D.key_frequencies(out, key_vars, 3, missing="wildcard").is_k_anonymous
    assert res.audit["key_records_below_k"] == 0
    assert (
        res.audit["suppressed_key_values"] == s.total
    )  # the registered measure, from the two files
    assert "local suppression on the keys" in res.summary()


def test_api_refuse_before_any_work_and_report_publishes_unchanged():
    df = _survey()
    with pytest.raises(InputError, match="on_keys_below_k='refuse'"):
        microagg.microaggregate(
            df,
            k=3,
            columns=["income", "assets"],
            keys=["region", "sex", "age"],
            on_keys_below_k="refuse",
        )
    res = microagg.microaggregate(
        df,
        k=3,
        columns=["income", "assets"],
        keys=["region", "sex", "age"],
        on_keys_below_k="report",
    )
    assert res.suppression.mode == "report" and res.suppression.total == 0
    assert res.suppression.records_left_below_k > 0
    assert res.data[["region", "sex", "age"]].equals(df[["region", "sex", "age"]])
    with pytest.raises(InputError, match="key_importance"):
        microagg.microaggregate(
            df, k=3, columns=["income"], keys=["region"], key_importance=["sex"]
        )


@pytest.mark.parametrize("fmt", ["csv", "dta", "sav"])
def test_cli_modes_and_read_back(tmp_path, fmt):
    df = _survey()
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    base = [
        sys.executable,
        "-m",
        "microagg.cli",
        "protect",
        str(src),
        "-k",
        "3",
        "--columns",
        "income,assets",
        "--keys",
        "region,sex,age",
        "-q",
    ]
    out = tmp_path / f"out.{fmt}"
    done = subprocess.run(base + ["-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    import json

    verified = json.loads((tmp_path / f"out.{fmt}.manifest.json").read_text())["verified"]
    assert verified["k_anonymous"] and verified["suppression"]["total"] > 0
    if fmt != "csv":
        return
    back = pd.read_csv(out)
    assert back[["region", "sex", "age"]].isna().sum().sum() == verified["suppression"]["total"]
    shown = subprocess.run(
        base + ["-o", str(tmp_path / "j.csv"), "--json"], capture_output=True, text=True
    )
    record = json.loads(shown.stdout)
    assert (
        record["risk"]["suppressed_key_values"] == record["suppression"]["total"] > 0
    )  # audit of the file read back
    assert record["risk"]["key_records_below_k"] == 0
    report = subprocess.run(
        base + ["-o", str(tmp_path / "r.csv"), "--on-keys-below-k", "report"],
        capture_output=True,
        text=True,
    )
    assert report.returncode == 3 and (tmp_path / "r.csv").exists()
    assert "not k-anonymous" in report.stderr
    refuse = subprocess.run(
        base + ["-o", str(tmp_path / "x.csv"), "--on-keys-below-k", "refuse"],
        capture_output=True,
        text=True,
    )
    assert refuse.returncode == 2 and not (tmp_path / "x.csv").exists()
    assert refuse.stderr.count("\n") == 1 and refuse.stderr.startswith("microagg: error: ")
