"""Brute-force nearest / farthest primitives over a compacted set of rows (numba)."""

from __future__ import annotations

import numpy as np

from .jit import kernel


@kernel
def sqdist(a, b):
    s = 0.0
    for t in range(a.shape[0]):
        diff = a[t] - b[t]
        s += diff * diff
    return s


@kernel
def mean_rows(X, m):
    """Mean of the first m rows of X."""
    d = X.shape[1]
    c = np.zeros(d)
    for i in range(m):
        for t in range(d):
            c[t] += X[i, t]
    for t in range(d):
        c[t] /= m
    return c


@kernel
def sqdist_to_point(X, m, p, out):
    """out[i] = |X[i] − p|² for the first m rows."""
    for i in range(m):
        out[i] = sqdist(X[i], p)


@kernel
def argmax_first(v, m):
    """Index of the largest of v[:m], NaN left out (MDAV's brute force marks removed records so);
    the first one on ties."""
    best, top = 0, -np.inf
    for i in range(m):
        if v[i] > top:
            best, top = i, v[i]
    return best


@kernel
def compact(X, idx, m, removed):
    """Stable in-place removal of rows flagged in removed[:m]; returns the new count."""
    w = 0
    d = X.shape[1]
    for i in range(m):
        if not removed[i]:
            if w != i:
                for t in range(d):
                    X[w, t] = X[i, t]
                idx[w] = idx[i]
            w += 1
    for i in range(m):
        removed[i] = False
    return w


@kernel
def join_nearest_centroid(X, labels, g):
    """Records labelled −1 join the non-empty group 0..g−1 with the nearest centroid.

    Centroids are those of the records already labelled, computed once before any record
    joins, so the result does not depend on the order of the joining records (MDAV's last
    step; the column-generation paper's AddRemainingNodes).
    """
    n, d = X.shape
    cent = np.zeros((g, d))
    cnt = np.zeros(g)
    for i in range(n):
        if labels[i] >= 0:
            cnt[labels[i]] += 1
            for t in range(d):
                cent[labels[i], t] += X[i, t]
    for h in range(g):
        for t in range(d):
            cent[h, t] /= max(cnt[h], 1.0)
    for i in range(n):
        if labels[i] < 0:
            best, bd = 0, np.inf
            for h in range(g):
                if cnt[h] > 0:
                    dd = sqdist(X[i], cent[h])
                    if dd < bd:
                        bd, best = dd, h
            labels[i] = best
