"""Codes written with a leading zero (postcodes, NUTS or ISCO codes: "0104") named as
quasi-identifiers: a reader keeps them as text, and they are protected as categories, never
averaged, at every door; the out-of-core mode, which publishes group means only, refuses them in
one line unless they are declared continuous."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from test_doors import _publish_three_ways

import microagg
from microagg import cli
from microagg.column_rules import leading_zero_codes

COLUMNS = ["income", "expend", "zip"]


def _coded(n: int = 150, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": np.arange(1000, 1000 + n),
            "zip": [f"0{code}" for code in rng.integers(100, 110, n)],
            "income": np.round(rng.lognormal(10, 1, n), 2),
            "expend": np.round(rng.lognormal(9, 1, n), 2),
        }
    )


def test_the_rule_sees_a_leading_zero_and_only_that():
    assert "leading zero" in leading_zero_codes(pd.Series(["104", "0104", None]))
    assert leading_zero_codes(pd.Series(["104", "0.5", "-3", "0", ""])) is None
    assert leading_zero_codes(pd.Series([1.0, 2.0])) is None


def test_the_api_protects_them_as_categories_and_says_so():
    df = _coded()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = microagg.microaggregate(df, k=3, columns=COLUMNS)
    assert res.publication.kinds["zip"] == "nominal"
    assert set(res.data["zip"]) <= set(df["zip"])  # codes published as codes, zeros kept
    assert any("leading zero" in str(w.message) for w in caught)
    declared = microagg.microaggregate(df, k=3, columns=COLUMNS, continuous=["zip"])
    assert declared.publication.kinds["zip"] == "continuous"  # declared: averaged, as asked


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_every_door_publishes_the_codes_with_their_zeros(tmp_path, suffix):
    df = _coded()
    src = tmp_path / f"coded{suffix}"
    df.to_csv(src, index=False) if suffix == ".csv" else df.to_parquet(src, index=False)
    outputs = _publish_three_ways(src, {"k": 3, "columns": COLUMNS, "seed": 1}, tmp_path)
    for path in outputs:
        published = (
            pd.read_csv(path, dtype=str, keep_default_na=False)
            if suffix == ".csv"
            else pd.read_parquet(path)
        )
        assert set(published["zip"]) <= set(df["zip"]), path.name
        assert published.groupby(COLUMNS).size().min() >= 3, path.name


def test_the_out_of_core_mode_refuses_them_in_one_line(tmp_path, capsys):
    src, out = tmp_path / "coded.csv", tmp_path / "out"
    _coded().to_csv(src, index=False)
    args = ["protect", str(src), "-k", "3", "--columns", ",".join(COLUMNS), "--out-of-core"]
    args += ["--block-size", "50", "-o", str(out), "-q"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "zip" in err and "category codes" in err
    assert not out.exists()
    assert cli.main(args + ["--continuous", "zip"]) == 0  # declared continuous: averaged
