"""Partitioned (Dask) and out-of-core microaggregation return valid groups and every row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import _records
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg
from microagg.blocks import _gap_cut, partitioned_labels, refine_labels, spatial_blocks
from microagg.labels import check_partition, sse


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(1, 300),
    st.integers(1, 6),
    st.integers(2, 5),
    st.integers(1, 60),
    st.booleans(),
    st.sampled_from([0.0, 0.05, 1.0]),
)
def test_partitioned_labels_valid(seed, n, d, k, block_size, dup, refine):
    if k > n:
        return
    Z = _records(seed, n, d, dup)
    labels = partitioned_labels(
        Z, k, "mdav", block_size=block_size, scheduler="synchronous", refine=refine
    )
    assert labels.shape == (n,)
    check_partition(labels, n, k)
    for b in spatial_blocks(Z, max(k, block_size)):
        assert len(b) >= min(n, max(k, block_size))


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(2, 400),
    st.integers(1, 5),
    st.integers(1, 5),
    st.booleans(),
    st.floats(0.0, 1.0),
    st.integers(1, 3),
)
def test_refine_keeps_a_valid_partition_and_lowers_sse(seed, n, d, k, dup, share, passes):
    if 2 * k > n:
        return
    Z = _records(seed, n, d, dup)
    rng = np.random.default_rng(seed + 1)
    # a valid but poor start: random groups of k records, the last one taking the rest
    start = np.minimum(rng.permutation(n) // k, n // k - 1)
    labels = refine_labels(Z, start, k, share=share, passes=passes)
    assert labels.shape == (n,) and labels.min() == 0
    assert np.array_equal(np.unique(labels), np.arange(labels.max() + 1))
    check_partition(labels, n, k)
    assert sse(Z, labels) <= sse(Z, start) * (1 + 1e-12) + 1e-12
    assert np.array_equal(
        labels, refine_labels(Z, start, k, share=share, passes=passes)
    )  # deterministic


def test_refine_dissolves_groups_mixing_clusters():
    # three far-apart clusters of 4, 5 and 6 near-duplicates; k = 3: the pure optimum keeps
    # each cluster to itself (groups of 4, 5, 3 + 3)
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    cluster = np.repeat([0, 1, 2], [4, 5, 6])
    Z = centres[cluster] + 0.01 * rng.normal(size=(15, 2))
    # MDAV-like chains: a cluster's remainder grouped with the next cluster's records
    start = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4])
    labels = refine_labels(Z, start, 3, share=1.0)
    check_partition(labels, 15, 3)
    for g in np.unique(labels):
        assert len(set(cluster[labels == g])) == 1
    assert sse(Z, labels) < 0.01 * sse(Z, start)


def test_refine_leaves_groups_alone_without_room():
    # k = 2: every group of the start already has 2k − 1 = 3 records, so nothing can join one
    Z = np.arange(9, dtype=float)[:, None]
    start = np.array([0, 0, 1, 1, 2, 2, 0, 1, 2])
    assert np.array_equal(refine_labels(Z, start, 2, share=1.0), start)


def test_cuts_pass_between_clusters():
    # clusters of 50 near-duplicates along a line, unequal gaps: every cut falls between clusters
    # (blocks of at least 100, so a cluster boundary is always within reach of a cut)
    rng = np.random.default_rng(1)
    centres = np.cumsum(rng.uniform(1, 3, size=40))
    cluster = rng.permutation(np.repeat(np.arange(40), 50))
    Z = np.column_stack(
        [centres[cluster] + 0.01 * rng.normal(size=2000), 0.01 * rng.normal(size=2000)]
    )
    blocks = spatial_blocks(Z, 100)
    assert len(blocks) > 4
    for b in blocks:
        assert 100 <= len(b) < 200
    block_of = np.empty(2000, dtype=int)
    for i, b in enumerate(blocks):
        block_of[b] = i
    for c in range(40):
        assert len(set(block_of[cluster == c])) == 1


def test_blocks_cover_every_row_once():
    Z = np.random.default_rng(0).normal(size=(1000, 3))
    blocks = spatial_blocks(Z, 70)
    allrows = np.sort(np.concatenate(blocks))
    assert np.array_equal(allrows, np.arange(1000))
    assert all(70 <= len(b) < 140 for b in blocks)


def test_blocks_of_identical_rows_are_balanced():
    # no gap anywhere: every cut at the median, as without the gap search
    blocks = spatial_blocks(np.ones((1000, 3)), 100)
    assert sorted(len(b) for b in blocks) == [125] * 8


def test_gap_cut_prefers_widest_gap_then_target():
    proj = np.array([0.0, 1.0, 2.0, 5.0, 6.0, 7.0, 8.0])
    assert _gap_cut(proj, 1, 6, 3.5) == 3  # the gap 2 -> 5
    assert _gap_cut(np.zeros(8), 1, 7, 5.2) == 5  # all gaps zero: nearest the target


@pytest.mark.parametrize("scheduler", [None, "threads", "synchronous"])
def test_microaggregate_partitioned(scheduler):
    df = microagg.datasets.load("census")
    res = microagg.microaggregate(df, k=3, method="mdav", block_size=200, scheduler=scheduler)
    check_partition(res.labels, len(df), 3)
    assert len(res.data) == len(df)
    full = microagg.microaggregate(df, k=3, method="mdav")
    assert res.information_loss >= full.information_loss * 0.8


def test_partitioned_same_labels_on_every_scheduler_and_any_method_with_seed():
    df = microagg.datasets.load("tarragona")
    runs = [
        microagg.microaggregate(df, k=4, method="vmdav", block_size=300, scheduler=s, seed=1).labels
        for s in ("synchronous", "threads", "synchronous")
    ]
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])
    check_partition(runs[0], len(df), 4)


def test_refinement_repairs_blocked_clusters():
    # census-like: census records resampled with 1% noise, so tight clusters of ~10 records
    # that blocks of 400 cut and leave remainders of
    df = microagg.datasets.load("census").select_dtypes("number")
    Z0 = ((df - df.mean()) / df.std(ddof=0)).to_numpy()
    rng = np.random.default_rng(0)
    Z = Z0[rng.integers(0, len(Z0), 6000)] + 0.01 * rng.normal(size=(6000, Z0.shape[1]))
    plain = partitioned_labels(Z, 3, "mdav", block_size=400, refine=0, scheduler="synchronous")
    refined = partitioned_labels(Z, 3, "mdav", block_size=400, scheduler="synchronous")
    check_partition(refined, len(Z), 3)
    full = microagg.methods.run("mdav", Z, 3).labels
    assert sse(Z, refined) < 0.7 * sse(Z, plain)
    assert sse(Z, refined) < sse(Z, full)


def test_partitioned_per_variable_method():
    Z = np.random.default_rng(2).normal(size=(500, 3))
    labels = partitioned_labels(Z, 3, "individual-ranking", block_size=100, scheduler="synchronous")
    assert labels.shape == (500, 3)
    check_partition(labels, 500, 3)


@pytest.mark.parametrize(
    "kwargs",
    [{"block_size": 0}, {"block_size": 10, "refine": 1.5}, {"block_size": 10, "refine": True}],
)
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        partitioned_labels(np.zeros((10, 2)), 2, "mdav", **kwargs)


def test_distributed_cluster_by_client_and_by_address(tmp_path):
    # the scheduler= / --scheduler contract with a real dask.distributed cluster (in-process here,
    # so that the test is quick): a Client object and its address give the same labels as the
    # synchronous scheduler, in the API and from the command line
    from distributed import Client, LocalCluster

    from microagg.cli import main

    df = microagg.datasets.load("tarragona")
    expected = microagg.microaggregate(
        df, k=3, method="mdav", block_size=300, seed=2, scheduler="synchronous"
    ).labels
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        by_client = microagg.microaggregate(
            df, k=3, method="mdav", block_size=300, seed=2, scheduler=client
        )
        by_address = microagg.microaggregate(
            df, k=3, method="mdav", block_size=300, seed=2, scheduler=cluster.scheduler_address
        )
        src, out = tmp_path / "in.csv", tmp_path / "out.csv"
        df.to_csv(src, index=False)
        assert (
            main(
                [
                    "protect",
                    str(src),
                    "-o",
                    str(out),
                    "-k",
                    "3",
                    "--block-size",
                    "300",
                    "--seed",
                    "2",
                    "--scheduler",
                    cluster.scheduler_address,
                    "-q",
                ]
            )
            == 0
        )
    assert np.array_equal(by_client.labels, expected) and np.array_equal(
        by_address.labels, expected
    )
    published = pd.read_csv(out)
    assert len(published) == len(df)
    assert np.allclose(published.to_numpy(), by_client.data.to_numpy())
