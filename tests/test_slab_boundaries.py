"""The local search across slab boundaries (slab_boundaries.py): cuts that bound their slabs,
bands of whole groups, and searches that keep every group at k records or more in one stratum
and never raise the SSE."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg
from microagg import io, slab_boundaries
from microagg.kernels.mdav_labels import mdav_labels
from microagg.labels import group_means, group_sizes, sse
from microagg.outofcore import _slab_bounds, check_out_of_core, compute_chunked
from microagg.progress import silent
from microagg.slab_boundaries import (
    ancestors,
    apply_bands,
    cuts_of,
    drop_groups,
    new_groups,
    save_band_pieces,
    search_bands,
)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(40, 600), st.integers(1, 3), st.integers(1, 4))
def test_every_cut_separates_its_two_sides(seed, n, d, levels):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n, d)).astype(np.float32)
    axes = np.eye(d)
    order, bounds, positions = _slab_bounds(P, 10, levels)
    cuts = cuts_of(positions, bounds, axes, first_slab=0)
    slab_of = np.empty(n, dtype=int)
    slab_of[order] = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    for cut in cuts:
        side = P.astype(np.float64) @ cut.axis
        left = (slab_of >= cut.left[0]) & (slab_of < cut.left[1])
        right = (slab_of >= cut.right[0]) & (slab_of < cut.right[1])
        assert left.any() and right.any() and not (left & right).any()
        assert side[left].max() <= cut.value <= side[right].min()
    for s in range(len(bounds) - 1):  # a slab lies on one side of each of its level's cuts
        assert len(ancestors(cuts, s)) <= levels


def _two_slabs(seed, n, k):
    """Records cut in two slabs by the plane z0 = 0, each microaggregated alone (MDAV)."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 3))
    left = Z[:, 0] < 0
    rows = [np.flatnonzero(left), np.flatnonzero(~left)]
    cut = slab_boundaries.Cut(np.array([1.0, 0.0, 0.0]), 0.0, (0, 1), (1, 2))
    return Z, rows, cut, [mdav_labels(Z[r], k) for r in rows]


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10**6), st.integers(60, 400), st.integers(2, 5))
def test_bands_keep_groups_valid_and_never_raise_sse(tmp_path_factory, seed, n, k):
    if n < 4 * k:
        return
    spill = str(tmp_path_factory.mktemp("spill"))
    Z, rows, cut, slab_labels = _two_slabs(seed, n, k)
    offsets = np.array([0, slab_labels[0].max() + 1], dtype=np.int64)
    labels = np.empty(n, dtype=np.int64)
    banded = 0
    for s, (r, lab) in enumerate(zip(rows, slab_labels, strict=True)):
        labels[r] = lab + offsets[s]
        banded += save_band_pieces(spill, s, [(0, cut)], Z[r], r, lab, group_means(Z[r], lab))
    public = group_means(Z, labels)
    before = sse(Z, labels)
    deadline = microagg_deadline()
    searched = search_bands(
        spill, [cut], offsets, k, seed, deadline, "synchronous", silent, 1.0, banded
    )
    assert banded == sum(records for _, (records, _, _) in searched)  # what the bands hold
    g = len(public)
    public = np.concatenate([public, np.full((new_groups(searched), 3), np.nan)])
    change, emptied = apply_bands(searched, labels, public, lambda m: m, g)
    public = drop_groups(labels, public, emptied)
    after = sse(Z, labels)
    assert after <= before + 1e-9 * max(before, 1.0)
    assert after == pytest.approx(before + change, rel=1e-9, abs=1e-9)
    assert group_sizes(labels).min() >= k
    assert labels.max() + 1 == len(public)
    np.testing.assert_allclose(public, group_means(Z, labels), atol=1e-12)


def microagg_deadline():
    from microagg.deadline import Deadline

    return Deadline(None)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 300), st.integers(1, 60))
def test_dropping_emptied_groups_renumbers_in_place(seed, n, g):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, g, size=n)
    public = rng.normal(size=(g, 2))
    used = np.unique(labels)
    emptied = np.setdiff1d(np.arange(g), used)
    expected_public, expected_labels = public[used], np.searchsorted(used, labels)
    kept = drop_groups(labels, public, emptied)
    np.testing.assert_array_equal(labels, expected_labels)
    np.testing.assert_array_equal(kept, expected_public)


def _census(tmp_path, n=12_000):
    rng = np.random.default_rng(3)
    F = rng.normal(size=(n, 2))
    X = F @ rng.normal(size=(2, 4)) + 0.4 * rng.normal(size=(n, 4))
    df = pd.DataFrame(X, columns=list("abcd"))
    df["region"] = rng.choice(["n", "s"], size=n)
    src = tmp_path / "in.parquet"
    df.to_parquet(src)
    return src, df


def _computed(tmp_path, src, **options):
    run = check_out_of_core({"k": 3, "block_size": 60, "columns": list("abcd"), **options}, {})
    return compute_chunked(io.open_chunked(src, 5_000), run, tmp_path, slab_blocks=4)


def test_the_search_across_slabs_lowers_the_il_and_keeps_strata(tmp_path, monkeypatch):
    src, df = _census(tmp_path)
    crossed = _computed(tmp_path, src, strata="region", seed=2)
    monkeypatch.setattr(slab_boundaries, "search_bands", lambda *a, **k: [])
    alone = _computed(tmp_path, src, strata="region", seed=2)
    assert crossed.summary["slabs"] > 2  # cuts inside both strata
    assert crossed.summary["sse"] < alone.summary["sse"]
    for computed in (crossed, alone):
        labels = computed.labels
        assert group_sizes(labels).min() == computed.summary["min_group_size"] >= 3
        assert labels.max() + 1 == computed.summary["groups"] == len(computed.public)
        regions = pd.Series(df["region"].to_numpy()).groupby(labels).nunique()
        assert (regions == 1).all()
    X = df[list("abcd")].to_numpy()
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    assert crossed.summary["sse"] == pytest.approx(sse(Z, crossed.labels), rel=1e-7)
    np.testing.assert_allclose(crossed.public, group_means(X, crossed.labels), rtol=1e-9, atol=1e-9)


def test_refine_zero_leaves_the_slabs_groups(tmp_path, monkeypatch):
    src, _ = _census(tmp_path, 6_000)
    called = []
    monkeypatch.setattr(slab_boundaries, "search_bands", lambda *a, **k: called.append(a) or [])
    _computed(tmp_path, src, refine=0)
    assert not called


def test_the_publication_across_slabs_is_k_anonymous(tmp_path):
    src, df = _census(tmp_path)
    out = tmp_path / "out"
    res = microagg.protect(
        src, out, k=3, out_of_core=True, columns=list("abcd"), strata="region", block_size=60
    )
    published = pd.read_parquet(out)
    assert len(published) == len(df)
    assert published.groupby(list("abcd") + ["region"]).size().min() >= 3
    assert res.information_loss > 0
