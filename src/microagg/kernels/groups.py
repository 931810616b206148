"""Group statistics over a labelling, shared by the local searches, the tours and the partitioned
mode: per-group sizes, coordinate sums or centroids, and CSR member lists (numba)."""

from __future__ import annotations

import numpy as np

from .jit import kernel


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
