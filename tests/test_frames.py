"""polars and pyarrow frames in, the same kind out (issue 46, ``microagg.frames``): values and
dtypes of every column the run did not change are kept exactly; the quasi-identifiers are those
pandas gives."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")


def _frame(n: int, seed: int):
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "x": rng.normal(size=n),
            "y": rng.integers(0, 10_000, n),
            "name": [f"p{i}" for i in range(n)],
            "maybe": pl.Series([None if i % 5 == 0 else i for i in range(n)], dtype=pl.Int32),
            "group": pl.Series([["a", "b", "c"][i % 3] for i in range(n)], dtype=pl.Categorical),
            "day": pl.Series([i % 28 + 1 for i in range(n)]).cast(pl.Date),
            "flag": pl.Series([i % 2 == 0 for i in range(n)]),
        }
    )


@settings(max_examples=10, deadline=None)
@given(n=st.integers(9, 80), seed=st.integers(0, 2**16), shuffle=st.booleans())
def test_polars_in_polars_out(n, seed, shuffle):
    df = _frame(n, seed)
    res = microagg.microaggregate(df, k=3, columns=["x", "y"], shuffle=shuffle, audit=False)
    out = res.data
    assert isinstance(out, pl.DataFrame) and out.columns == df.columns
    assert (
        out.schema["x"] == pl.Float64 and out.schema["y"] == pl.Float64
    )  # means of integers, as pandas
    for c in ("name", "maybe", "group", "day", "flag"):
        assert out.schema[c] == df.schema[c]
    expected = microagg.microaggregate(
        df.to_pandas(), k=3, columns=["x", "y"], shuffle=shuffle, audit=False
    )
    if not shuffle:
        for c in ("name", "maybe", "group", "day", "flag"):
            assert out[c].equals(df[c]), c
        np.testing.assert_array_equal(out["x"].to_numpy(), expected.data["x"].to_numpy())
        np.testing.assert_array_equal(out["y"].to_numpy(), expected.data["y"].to_numpy())
    else:  # the same records, in a new order
        assert sorted(out["name"].to_list()) == sorted(df["name"].to_list())


def test_pyarrow_in_pyarrow_out_keeps_the_schema():
    table = _frame(60, 0).to_arrow()
    res = microagg.microaggregate(table, k=4, columns=["x", "y"])
    out = res.data
    assert isinstance(out, pa.Table) and out.column_names == table.column_names
    for c in ("name", "maybe", "group", "day", "flag"):
        assert out.schema.field(c).type == table.schema.field(c).type
        assert out.column(c).equals(table.column(c))
    assert out.schema.field("x").type == pa.float64() and out.schema.field("y").type == pa.float64()
    assert res.group_sizes.min() >= 4


def test_a_categorical_quasi_identifier_keeps_its_dtype():
    df = _frame(60, 1)
    res = microagg.microaggregate(
        df, k=3, columns=["x", "group"], categorical=["group"], audit=False
    )
    assert res.data.schema["group"] == pl.Categorical and res.data.schema["y"] == pl.Int64
    assert set(res.data["group"].to_list()) <= {"a", "b", "c"}


def test_explore_takes_a_polars_frame():
    ex = microagg.explore(_frame(40, 2), k=[3], methods=["mdav"], time_limit=20, columns=["x", "y"])
    assert [r.status for r in ex.runs] == ["ok"]


def test_pandas_and_arrays_are_untouched_by_the_layer():
    from microagg.frames import is_foreign_frame

    assert not is_foreign_frame(pd.DataFrame({"a": [1]})) and not is_foreign_frame(np.zeros(3))
    assert is_foreign_frame(pl.DataFrame({"a": [1]})) and is_foreign_frame(pa.table({"a": [1]}))
