"""Univariate microaggregation: the optimal method and fixed-size groups around the mode.

Both work on one standardised variable (d = 1). Optimal groups of a sorted variable are
consecutive (data-oriented paper, Theorem 1), so both methods sort once and cut the order.
"""

from __future__ import annotations

import numpy as np

from ..params import Param
from . import register


def sorted_order(x: np.ndarray) -> np.ndarray:
    """Ascending order of a 1-D variable.

    numpy's default introsort: deterministic for a given input and twice as fast as the stable
    sort at 10^6 values (sorting dominates optimal univariate microaggregation). The order of
    equal values does not change the SSE of a cut of the sorted sequence.
    """
    return np.argsort(x)


def labels_from_order(order: np.ndarray, labels_by_rank: np.ndarray) -> np.ndarray:
    labels = np.empty(len(order), dtype=np.int64)
    labels[order] = labels_by_rank
    return labels


@register(
    "univariate-optimal",
    family="univariate",
    paper="Hansen & Mukherjee 2003",
    complexity="O(n log n + n·k) time, O(n) memory",
    variable_size=True,
    multivariate=False,
    interruptible=False,
    categorical=False,
)
def univariate_optimal(X, k, *, seed, deadline, progress):
    """Optimal univariate microaggregation: shortest path over the sorted values, groups of k..2k−1."""
    from ..kernels.segments import optimal_path_labels

    x = X[:, 0]
    order = sorted_order(x)
    _, by_rank = optimal_path_labels(x[order], k)
    return labels_from_order(order, by_rank)


def fixed_size_by_rank(xs: np.ndarray, k: int, placement: str = "best") -> np.ndarray:
    """Group ids by rank for sorted values xs: groups of k, one group of k + (n mod k).

    placement='best' puts the larger group where it gives the lowest SSE (the data-oriented
    paper places it "around the modal value" as the option that reduces information loss most;
    trying every position realises that intent exactly). placement='mode' puts it at the
    group-aligned window of k + r values with the smallest range, the densest spot.
    """
    n = len(xs)
    q, r = divmod(n, k)
    if q == 0:
        return np.zeros(n, dtype=np.int64)
    # SSE of each candidate: larger group is group j, covering ranks [j*k, j*k+k+r)
    csum = np.concatenate([[0.0], np.cumsum(xs)])
    csq = np.concatenate([[0.0], np.cumsum(xs * xs)])

    def seg_sse(a, b):
        s = csum[b] - csum[a]
        return csq[b] - csq[a] - s * s / (b - a)

    j = np.arange(q)
    # groups before j start at multiples of k, groups after j are shifted by r
    small_start = np.arange(q) * k
    before = seg_sse(small_start, small_start + k)  # group i < j at [i*k, i*k+k)
    after = seg_sse(small_start + r, small_start + r + k)  # group i > j at [i*k+r, i*k+r+k)
    cb = np.concatenate([[0.0], np.cumsum(before)])
    ca = np.concatenate([[0.0], np.cumsum(after)])
    big = seg_sse(j * k, j * k + k + r)
    total = cb[j] + big + (ca[q] - ca[j + 1])
    if placement == "best":
        jbest = int(np.argmin(total))
    elif placement == "mode":
        jbest = int(np.argmin(xs[j * k + k + r - 1] - xs[j * k]))
    else:
        raise ValueError(f"unknown placement {placement!r}")
    ranks = np.arange(n)
    ids = np.where(ranks < jbest * k, ranks // k, np.where(ranks < jbest * k + k + r, jbest, (ranks - r) // k))
    return ids.astype(np.int64)


@register(
    "univariate-fixed",
    family="univariate",
    paper="Domingo-Ferrer & Mateo-Sanz 2002 (data-oriented paper, §4)",
    complexity="O(n log n) time, O(n) memory",
    variable_size=False,
    multivariate=False,
    interruptible=False,
    categorical=False,
    params=(Param("placement", "str", "best", "where the larger group (k + n mod k values) goes: 'best' where it "
                  "gives the lowest SSE, 'mode' the densest window of k + r values", choices=("best", "mode")),),
)
def univariate_fixed(X, k, *, seed, deadline, progress, placement):
    """Fixed-size univariate microaggregation: sorted groups of k, the larger one around the mode."""
    x = X[:, 0]
    order = sorted_order(x)
    return labels_from_order(order, fixed_size_by_rank(x[order], k, placement))
