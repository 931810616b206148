"""MDAV on records whose nominal QIs are kept as level codes (``onehot.OneHot``), never as their
one-hot blocks: the distances of the dense embedding, computed in O(p + q) per record instead of
O(p + Σ levels) (issue 57: 10,000 levels on 10,000 records took over 240 s).

A nominal column j is a one-hot block with entries u_j (``embedding``: u_j² = NOMINAL_WEIGHT/2,
times its variable weight). Over that block, for a record x of level a:

* to another record y:       ‖x_j − y_j‖² = 2·u_j²·[a ≠ b]
* to the centroid of m records, cnt_l of level l:
                             ‖x_j − c_j‖² = u_j²·(Σ_l cnt_l² / m² − 2·cnt_a / m + 1)

so the kernel keeps, per block, the level counts of the remaining records and Σ cnt² (integers:
exact), and the numeric columns' compensated running sum as every MDAV kernel does
(``running_sum``). The loop is the plain reference loop's (``mdav.mdav_kernel``): the same
seeds, selections and tie rules (first index; ``k_smallest``), the same labels up to
floating-point ties, since the sums are the dense ones in another order. The distances to the
first seed r are reused for the second seed s (the plain loop computes them again: the same
values). O(n²·(p + q)/k) time, O(n·(p + q) + Σ levels) memory.
"""

from __future__ import annotations

import numpy as np

from .cycles import past, stop_cycle_after
from .jit import kernel
from .kbest import k_smallest
from .nearest import argmax_first
from .running_sum import running_mean, running_sum_add, running_sum_init

__all__ = ["mdav_onehot_kernel"]


@kernel
def _to_centroid(N, C, U2, m, c, cnt, off, sq, out):
    """out[i]: squared distance of the first m records (N numeric, C codes) to the centroid
    (numeric part c; blocks from the level counts cnt and their sums of squares sq)."""
    p, q = N.shape[1], C.shape[1]
    mm = float(m)
    for i in range(m):
        s = 0.0
        for t in range(p):
            diff = N[i, t] - c[t]
            s += diff * diff
        for j in range(q):
            s += U2[j] * (sq[j] / (mm * mm) - 2.0 * cnt[off[j] + C[i, j]] / mm + 1.0)
        out[i] = s
    return out


@kernel
def _to_record(N, C, U2, m, x, a, out):
    """out[i]: squared distance of the first m records to the record (x numeric, a codes)."""
    p, q = N.shape[1], C.shape[1]
    for i in range(m):
        s = 0.0
        for t in range(p):
            diff = N[i, t] - x[t]
            s += diff * diff
        for j in range(q):
            if C[i, j] != a[j]:
                s += 2.0 * U2[j]
        out[i] = s
    return out


@kernel
def _take(N, C, idx, dist, m, pos, labels, g, removed, s, comp, cnt, off, sq):
    """The records at positions pos become group g (in pos order, as the plain loop: the same
    running sums); their levels leave the counts; N, C, idx and dist are compacted (stable).
    Returns the number of records left."""
    q = C.shape[1]
    for p in pos:
        labels[idx[p]] = g
        removed[p] = True
        running_sum_add(s, comp, N[p], -1.0)
        for j in range(q):
            at = off[j] + C[p, j]
            sq[j] -= 2 * cnt[at] - 1
            cnt[at] -= 1
    w = 0
    for i in range(m):
        if not removed[i]:
            if w != i:
                N[w] = N[i]
                C[w] = C[i]
                idx[w] = idx[i]
                dist[w] = dist[i]
            w += 1
    for i in range(m):
        removed[i] = False
    return w


@kernel
def _group_around(N, C, U2, idx, dist, m, far, k, pos, labels, g, removed, s, comp, cnt, off, sq):
    """The record at position far and its k − 1 nearest become group g; dist then holds (for the
    records left, compacted) their distances to that record. Returns the number left."""
    x, a = N[far].copy(), C[far].copy()
    _to_record(N, C, U2, m, x, a, dist)
    k_smallest(dist, m, k, pos)
    return _take(N, C, idx, dist, m, pos, labels, g, removed, s, comp, cnt, off, sq)


@kernel
def _join_nearest(N, C, U2, labels, g):
    """Records labelled −1 (fewer than k) join the group 0..g−1 with the nearest centroid, the
    centroids those of the labelled records (``nearest.join_nearest_centroid``'s rule)."""
    n, p = N.shape
    q = C.shape[1]
    before = labels.copy()  # the centroids are those before any record joins
    size = np.zeros(g)
    cent = np.zeros((g, p))
    for i in range(n):
        h = labels[i]
        if h >= 0:
            size[h] += 1
            for t in range(p):
                cent[h, t] += N[i, t]
    members = np.argsort(labels, kind="mergesort")
    first = int(np.searchsorted(labels[members], 0))
    # per group Σ_j u_j²·Σ_l cnt_l² / m², from the pairs of members with equal levels
    same = np.zeros(g)
    start = first
    while start < n:
        h = labels[members[start]]
        stop = start
        while stop < n and labels[members[stop]] == h:
            stop += 1
        for a in range(start, stop):
            for b in range(start, stop):
                for j in range(q):
                    if C[members[a], j] == C[members[b], j]:
                        same[h] += U2[j]
        start = stop
    unit = 0.0
    for j in range(q):
        unit += U2[j]
    for h in range(g):
        for t in range(p):
            cent[h, t] /= max(size[h], 1.0)
    for x in members[:first]:
        match = np.zeros(g)
        for i in range(n):
            if before[i] >= 0:
                for j in range(q):
                    if C[i, j] == C[x, j]:
                        match[before[i]] += U2[j]
        best, bd = 0, np.inf
        for h in range(g):
            if size[h] > 0:
                dd = 0.0
                for t in range(p):
                    diff = N[x, t] - cent[h, t]
                    dd += diff * diff
                dd += same[h] / (size[h] * size[h]) - 2.0 * match[h] / size[h] + unit
                if dd < bd:
                    bd, best = dd, h
        labels[x] = best


@kernel
def mdav_onehot_kernel(N, C, U2, sizes, k, classic, budget):
    """MDAV (``mdav.mdav_kernel``'s loop and variants) on numeric columns N (n, p, no NaN) and
    nominal level codes C (n, q; column j's codes in 0..sizes[j] − 1, its one-hot entries of
    square U2[j]). budget > 0: stop forming pairs once this many cycles have passed; the records
    not reached keep label −1 (``budget_cycles``)."""
    stop_cycle = stop_cycle_after(budget)
    n, q = N.shape[0], C.shape[1]
    labels = np.full(n, -1, dtype=np.int64)
    Nr, Cr, idx = N.copy(), C.copy(), np.arange(n)
    off = np.zeros(q + 1, dtype=np.int64)
    for j in range(q):
        off[j + 1] = off[j] + sizes[j]
    cnt = np.zeros(off[q], dtype=np.int64)
    for i in range(n):
        for j in range(q):
            cnt[off[j] + C[i, j]] += 1
    sq = np.zeros(q, dtype=np.int64)
    for j in range(q):
        for level in range(off[j], off[j + 1]):
            sq[j] += cnt[level] * cnt[level]
    s, comp = running_sum_init(N)
    dist, removed = np.empty(n), np.zeros(n, dtype=np.bool_)
    pos = np.empty(k, dtype=np.int64)
    m, g = n, 0
    stop = 3 * k if classic else 2 * k
    while m >= stop:
        _to_centroid(Nr, Cr, U2, m, running_mean(s, comp, m), cnt, off, sq, dist)
        r = argmax_first(dist, m)
        m = _group_around(
            Nr, Cr, U2, idx, dist, m, r, k, pos, labels, g, removed, s, comp, cnt, off, sq
        )
        far = argmax_first(dist, m)  # the distances to r, compacted: the farthest from r
        m = _group_around(
            Nr, Cr, U2, idx, dist, m, far, k, pos, labels, g + 1, removed, s, comp, cnt, off, sq
        )
        g += 2
        if past(stop_cycle):
            break
    if m >= stop:  # stopped by the budget: the rest keep −1
        return labels
    if classic and m >= 2 * k:
        _to_centroid(Nr, Cr, U2, m, running_mean(s, comp, m), cnt, off, sq, dist)
        r = argmax_first(dist, m)
        m = _group_around(
            Nr, Cr, U2, idx, dist, m, r, k, pos, labels, g, removed, s, comp, cnt, off, sq
        )
        g += 1
    if m >= k or g == 0:
        for j in range(m):
            labels[idx[j]] = g
    elif m > 0:
        _join_nearest(N, C, U2, labels, g)
    return labels
