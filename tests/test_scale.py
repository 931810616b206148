"""Partitioned (Dask) and out-of-core microaggregation return valid groups and every row."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import microagg
from microagg.partition import check_partition
from microagg.scale import partitioned_labels, protect_out_of_core, spatial_blocks


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 300), st.integers(1, 6), st.integers(1, 5), st.integers(1, 60),
       st.booleans())
def test_partitioned_labels_valid(seed, n, d, k, block_size, dup):
    if k > n:
        return
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    if dup:
        Z = np.round(Z)
    labels = partitioned_labels(Z, k, "mdav", block_size=block_size, scheduler="synchronous")
    assert labels.shape == (n,)
    check_partition(labels, n, k)
    for b in spatial_blocks(Z, max(k, block_size)):
        assert len(b) >= min(n, max(k, block_size))


def test_blocks_cover_every_row_once():
    Z = np.random.default_rng(0).normal(size=(1000, 3))
    blocks = spatial_blocks(Z, 70)
    allrows = np.sort(np.concatenate(blocks))
    assert np.array_equal(allrows, np.arange(1000))
    assert all(70 <= len(b) < 140 for b in blocks)


@pytest.mark.parametrize("scheduler", [None, "threads", "synchronous"])
def test_microaggregate_partitioned(scheduler):
    df = microagg.datasets.load("census")
    res = microagg.microaggregate(df, k=3, method="mdav", block_size=200, scheduler=scheduler)
    check_partition(res.labels, len(df), 3)
    assert len(res.data) == len(df)
    full = microagg.microaggregate(df, k=3, method="mdav")
    assert res.information_loss >= full.information_loss * 0.8


def test_partitioned_any_method_and_seed():
    df = microagg.datasets.load("tarragona")
    a = microagg.microaggregate(df, k=4, method="vmdav", block_size=300, scheduler="synchronous", seed=1)
    b = microagg.microaggregate(df, k=4, method="vmdav", block_size=300, scheduler="synchronous", seed=1)
    assert np.array_equal(a.labels, b.labels)
    check_partition(a.labels, len(df), 4)


def test_bad_block_size():
    with pytest.raises(ValueError):
        partitioned_labels(np.zeros((10, 2)), 2, "mdav", block_size=0)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_out_of_core(tmp_path, fmt):
    rng = np.random.default_rng(5)
    n = 3000
    df = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    df["name"] = [f"r{i}" for i in range(n)]
    df["a"] = np.round(df["a"], 1)  # ties
    if fmt == "parquet":
        src = tmp_path / "in"
        src.mkdir()
        df.iloc[:1700].to_parquet(src / "part-0.parquet")
        df.iloc[1700:].to_parquet(src / "part-1.parquet")
    else:
        src = tmp_path / "in.csv"
        df.to_csv(src, index=False)
    out = tmp_path / "out"
    summary = protect_out_of_core(src, out, k=3, columns=["a", "b", "c"], block_size=200, chunk_rows=700,
                                  slab_blocks=3)
    res = pd.concat([pd.read_parquet(f) for f in summary["files"]], ignore_index=True)
    assert len(res) == n
    assert list(res["name"]) == list(df["name"])  # every record, in order, non-QI unchanged
    sizes = res.groupby(["a", "b", "c"]).size()
    assert sizes.min() >= 3
    assert summary["min_group_size"] >= 3 and summary["records"] == n
    assert summary["slabs"] > 1
    assert 0 < summary["information_loss"] < 100
    # group means preserve the column means
    assert np.allclose(res[["a", "b", "c"]].mean(), df[["a", "b", "c"]].mean())


def test_out_of_core_bad_input(tmp_path):
    with pytest.raises(ValueError):
        protect_out_of_core(tmp_path / "missing.parquet", tmp_path / "o", k=3, block_size=10)
