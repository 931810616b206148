"""Univariate methods and optimal cuts of an ordering (paths and cycles)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import brute_force_optimum
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg
from microagg import labels as label_stats
from microagg import methods
from microagg.kernels.segments import optimal_cyclic_labels, optimal_path_labels


@given(st.lists(st.integers(-5, 5), min_size=2, max_size=9), st.integers(2, 4))
@settings(max_examples=60, deadline=None)
def test_univariate_optimal_equals_brute_force(values, k):
    x = np.array(values, dtype=float)
    if len(x) < k:
        return
    labels = methods.run("univariate-optimal", x[:, None], k).labels
    labels = label_stats.check_partition(labels, len(x), k)
    assert label_stats.group_sizes(labels).max() <= 2 * k - 1
    assert label_stats.sse(x, labels) == pytest.approx(brute_force_optimum(x[:, None], k), abs=1e-9)


@given(st.integers(0, 10_000), st.integers(2, 6), st.integers(6, 300))
@settings(max_examples=40, deadline=None)
def test_univariate_fixed_is_fixed_size_and_never_beats_optimal(seed, k, n):
    if n < k:
        return
    x = np.random.default_rng(seed).lognormal(size=n).round(1)
    fixed = label_stats.check_partition(methods.run("univariate-fixed", x[:, None], k).labels, n, k)
    sizes = np.sort(label_stats.group_sizes(fixed))
    assert (sizes[:-1] == k).all() and k <= sizes[-1] <= 2 * k - 1
    opt = methods.run("univariate-optimal", x[:, None], k).labels
    assert label_stats.sse(x, fixed) >= label_stats.sse(x, opt) - 1e-9
    # groups are intervals of the sorted values (ties may straddle a boundary)
    lo = np.array([x[fixed == g].min() for g in range(len(sizes))])
    hi = np.array([x[fixed == g].max() for g in range(len(sizes))])
    by_lo = np.lexsort((hi, lo))
    assert (hi[by_lo][:-1] <= lo[by_lo][1:]).all()


def test_univariate_methods_reject_multivariate_data():
    with pytest.raises(ValueError, match="univariate"):
        microagg.microaggregate(
            np.random.default_rng(0).normal(size=(20, 2)), k=3, method="univariate-optimal"
        )


@given(st.integers(0, 10_000), st.integers(2, 3), st.integers(2, 10), st.integers(1, 3))
@settings(max_examples=25, deadline=None)
def test_path_and_cyclic_cuts_are_optimal(seed, k, n, d):
    if n < k:
        return
    X = np.random.default_rng(seed).integers(0, 4, size=(n, d)).astype(float)

    def best_path(Y):
        # every consecutive cut with sizes k..2k-1
        best = np.inf

        def rec(i, acc):
            nonlocal best
            if i == len(Y):
                best = min(best, acc)
            for s in range(k, 2 * k):
                if i + s <= len(Y):
                    G = Y[i : i + s]
                    rec(i + s, acc + float(np.sum((G - G.mean(axis=0)) ** 2)))

        rec(0, 0.0)
        return best

    cost, labels = optimal_path_labels(X, k)
    if np.isfinite(best_path(X)):
        assert cost == pytest.approx(best_path(X), abs=1e-9)
        assert label_stats.sse(X, labels) == pytest.approx(cost, abs=1e-9)
    ccost, clabels = optimal_cyclic_labels(X, k)
    brute = min(best_path(np.roll(X, -r, axis=0)) for r in range(n))
    assert ccost == pytest.approx(brute, abs=1e-9)
    assert label_stats.sse(X, clabels) == pytest.approx(ccost, abs=1e-9)
