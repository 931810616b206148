"""Group statistics over a labelling, shared by the local searches, the tours and the partitioned
mode: per-group sizes, coordinate sums or centroids, and CSR member lists (numba)."""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .kdtree_build import _select


@kernel
def group_sums(X, labels, g):
    """(sizes, sums, start, members): per-group sizes and coordinate sums, and CSR member lists
    (members[start[p]:start[p+1]] of group p, in record order) of groups 0..g-1."""
    n, d = X.shape
    sizes = np.zeros(g, dtype=np.int64)
    sums = np.zeros((g, d))
    for i in range(n):
        p = labels[i]
        sizes[p] += 1
        for t in range(d):
            sums[p, t] += X[i, t]
    start = np.zeros(g + 1, dtype=np.int64)
    for p in range(g):
        start[p + 1] = start[p] + sizes[p]
    fill = start[:-1].copy()
    members = np.empty(n, dtype=np.int64)
    for i in range(n):
        p = labels[i]
        members[fill[p]] = i
        fill[p] += 1
    return sizes, sums, start, members


@kernel
def group_stats(X, labels, g):
    """(sizes, centroids, start, members): group_sums with the sums divided by the sizes."""
    sizes, cent, start, members = group_sums(X, labels, g)
    for p in range(g):
        for t in range(X.shape[1]):
            cent[p, t] /= sizes[p]
    return sizes, cent, start, members


@kernel
def median_split_labels(X, rows, k, labels, g):
    """Groups of k..2k−1 over X[rows] by recursive splits, given labels g, g+1, ... (returns the
    next free label). A part of 2k records or more is split on its widest coordinate at a multiple
    of k near its median (both sides keep k or more), as a KD-tree is built
    (``kdtree_build._select``),
    until every part has fewer than 2k records. O(m·d·log(m/k)) time for m rows, O(m) memory:
    the fallback for the records a time-limited MDAV did not reach."""
    perm = rows.copy()
    d = X.shape[1]
    parts = [(0, len(perm))]
    while len(parts) > 0:
        a, b = parts.pop()
        if b - a < 2 * k:
            for j in range(a, b):
                labels[perm[j]] = g
            g += 1
            continue
        widest, span = 0, -1.0
        for t in range(d):
            lo, hi = np.inf, -np.inf
            for j in range(a, b):
                v = X[perm[j], t]
                lo = min(lo, v)
                hi = max(hi, v)
            if hi - lo > span:
                widest, span = t, hi - lo
        cut = a + k * (((b - a) // k) // 2)
        _select(perm, X, widest, a, b, cut)
        parts.append((cut, b))
        parts.append((a, cut))
    return g
