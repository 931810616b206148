"""Kernels that query a KD-tree take ``leaf_size=None`` on small data and scan the records instead
(``kernels.jit.tree_leaf_size``), so that a first run on small data does not compile the tree's
kernels: the scan must return exactly what the tree returns (ties: the lower index)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg.kernels.jit import planning, tree_leaf_size
from microagg.kernels.neighbourhood import build_state, group_tour
from microagg.kernels.pricing import greedy_pricing
from microagg.kernels.tours import groups_tour


def _data(seed, n, d, ties):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, d)).astype(float) if ties else rng.normal(size=(n, d))
    return rng, np.ascontiguousarray(X)


def _partition(rng, n, k):
    """A random partition into groups of k..2k−1 records, numbered 0..g−1."""
    labels = np.minimum(np.arange(n) // k, n // k - 1)
    return rng.permutation(labels).astype(np.int64)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 4), st.integers(1, 4), st.booleans())
def test_groups_tour_scan_is_the_tree_query(seed, k, d, ties):
    rng, X = _data(seed, 60 + seed % 90, d, ties)
    labels = _partition(rng, len(X), k)
    g = int(labels.max()) + 1
    for formation_order in (False, True):
        tree = groups_tour(X, labels, g, formation_order, 4)
        scan = groups_tour(X, labels, g, formation_order, None)
        assert np.array_equal(tree, scan)
        assert np.array_equal(np.sort(scan), np.arange(len(X)))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 4), st.integers(1, 4), st.booleans())
def test_group_tour_scan_is_the_tree_query(seed, k, d, ties):
    rng, X = _data(seed, 60 + seed % 90, d, ties)
    labels = _partition(rng, len(X), k)
    g = int(labels.max()) + 1
    sizes, sums, slots, _ = build_state(X, labels, g, k)
    nbr = rng.integers(-1, g, size=(g, 2))  # few neighbours: the centroid query is reached often
    first = int(rng.integers(g))
    tree = group_tour(X, sizes, sums, slots, nbr, first, 4)
    scan = group_tour(X, sizes, sums, slots, nbr, first, None)
    assert np.array_equal(tree, scan)
    assert np.array_equal(np.sort(scan), np.arange(len(X)))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 6), st.integers(1, 4), st.booleans())
def test_greedy_pricing_scan_is_the_tree_query(seed, eta, d, ties):
    rng, X = _data(seed, int(40 + seed % 80), d, ties)
    n = len(X)
    pi = rng.gamma(1.0, 1.0, size=n)
    if ties:
        pi = np.round(pi)
    cuts = (np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0))
    thr = float(rng.uniform(-0.5, 3.0))
    tree = greedy_pricing(X, pi, eta, thr, *cuts, 0, 4)
    scan = greedy_pricing(X, pi, eta, thr, *cuts, 0, None)
    assert np.array_equal(tree[0], scan[0])
    assert np.array_equal(tree[1], scan[1])


def test_tree_leaf_size_follows_the_planned_records():
    assert tree_leaf_size(100, 32, 1_000) is None
    assert tree_leaf_size(1_001, 32, 1_000) == 32
    with planning(10**6):  # a warm-up on a sample loads the kernels of the real run: the tree's
        assert tree_leaf_size(100, 32, 1_000) == 32
