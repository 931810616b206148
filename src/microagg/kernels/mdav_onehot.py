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
from .kbest import kbest_admits, kbest_insert
from .nearest import argmax_first
from .running_sum import running_mean, running_sum_add, running_sum_init

__all__ = ["mdav_onehot_kernel"]


#: grouped records stay in the columns, marked (NaN), until they are this share of them; then
#: one stable pass drops them (``mdav_brute.DEAD_SHARE``'s rule: a removal after every group
#: copied about every column each time)
DEAD_SHARE = 0.125


@kernel(inline="always")
def _numeric_part(Nc, mark, w, point, out):
    """out[i] = mark[i] + the squared distance of record i's numeric part (Nc: rows of columns) to
    ``point``, for the positions 0..w−1 (the first term of both distances below)."""
    for i in range(w):
        out[i] = mark[i]
    for t in range(Nc.shape[0]):
        col, pt = Nc[t], point[t]
        for i in range(w):
            diff = col[i] - pt
            out[i] += diff * diff


@kernel
def _to_centroid(Nc, Cc, mark, U2, w, m, c, cnt, off, sq, out):
    """out[i]: squared distance of the records at positions 0..w−1 (Nc numeric and Cc codes as
    rows of columns; mark 0, or NaN for a grouped record) to the centroid of the m remaining ones
    (numeric part c; blocks from the level counts cnt and their sums of squares sq)."""
    _numeric_part(Nc, mark, w, c, out)
    mm = float(m)
    for j in range(Cc.shape[0]):
        codes, at = Cc[j], off[j]
        base = U2[j] * (sq[j] / (mm * mm) + 1.0)
        slope = 2.0 * U2[j] / mm
        for i in range(w):
            out[i] += base - slope * cnt[at + codes[i]]
    return out


@kernel
def _to_record(Nc, Cc, mark, U2, w, x, a, out):
    """out[i]: squared distance of the records at positions 0..w−1 to the record (x numeric,
    a codes); NaN for a grouped one."""
    _numeric_part(Nc, mark, w, x, out)
    for j in range(Cc.shape[0]):
        codes, aj, mismatch = Cc[j], a[j], 2.0 * U2[j]
        for i in range(w):
            if codes[i] != aj:
                out[i] += mismatch
    return out


@kernel
def _k_smallest(v, w, k, out):
    """Positions of the k smallest of v[:w], NaN left out, in increasing order; ties by lower
    position (``kbest.k_smallest``'s rule)."""
    best = np.empty(k)
    filled = 0
    for i in range(w):
        if v[i] == v[i] and kbest_admits(best, out, k, filled, v[i], i):
            filled = kbest_insert(best, out, k, filled, v[i], i)
    return out


@kernel
def _take(Nc, Cc, mark, idx, dist, pos, labels, g, s, comp, cnt, off, sq, row):
    """The records at positions pos become group g (in pos order, as the plain loop: the same
    running sums); their levels leave the counts, their positions are marked (NaN)."""
    for p in pos:
        labels[idx[p]] = g
        mark[p] = np.nan
        dist[p] = np.nan
        for t in range(Nc.shape[0]):
            row[t] = Nc[t, p]
        running_sum_add(s, comp, row, -1.0)
        for j in range(Cc.shape[0]):
            at = off[j] + Cc[j, p]
            sq[j] -= 2 * cnt[at] - 1
            cnt[at] -= 1


@kernel
def _drop_marked(Nc, Cc, mark, idx, dist, w):
    """Stable removal of the marked positions among the first w; returns the count left."""
    kept = 0
    for i in range(w):
        if mark[i] == mark[i]:
            for t in range(Nc.shape[0]):
                Nc[t, kept] = Nc[t, i]
            for j in range(Cc.shape[0]):
                Cc[j, kept] = Cc[j, i]
            mark[kept], idx[kept], dist[kept] = 0.0, idx[i], dist[i]
            kept += 1
    return kept


@kernel
def _group_around(Nc, Cc, mark, U2, idx, dist, w, m, far, k, pos, labels, g, sums, counts):
    """The record at position far and its k − 1 nearest become group g; dist then holds the
    remaining records' distances to that record (NaN: grouped). Returns (w, m) after it."""
    s, comp, cnt, off, sq, row = sums[0], sums[1], counts[0], counts[1], counts[2], sums[2]
    x, a = Nc[:, far].copy(), Cc[:, far].copy()
    _to_record(Nc, Cc, mark, U2, w, x, a, dist)
    _k_smallest(dist, w, k, pos)
    _take(Nc, Cc, mark, idx, dist, pos, labels, g, s, comp, cnt, off, sq, row)
    m -= k
    if w - m >= DEAD_SHARE * w:
        w = _drop_marked(Nc, Cc, mark, idx, dist, w)
    return w, m


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
    n, p, q = N.shape[0], N.shape[1], C.shape[1]
    labels = np.full(n, -1, dtype=np.int64)
    Nc, Cc = np.ascontiguousarray(N.T), np.ascontiguousarray(C.T)  # records as columns
    mark, idx = np.zeros(n), np.arange(n)
    off = np.zeros(q + 1, dtype=np.int64)
    for j in range(q):
        off[j + 1] = off[j] + sizes[j]
    cnt = np.zeros(off[q], dtype=np.int64)
    for i in range(n):
        for j in range(q):
            cnt[off[j] + C[i, j]] += 1
    sq = np.zeros(max(q, 1), dtype=np.int64)
    for j in range(q):
        for level in range(off[j], off[j + 1]):
            sq[j] += cnt[level] * cnt[level]
    s, comp = running_sum_init(N)
    sums = (s, comp, np.empty(p))
    counts = (cnt, off, sq)
    dist, pos = np.empty(n), np.empty(k, dtype=np.int64)
    w, m, g = n, n, 0
    stop = 3 * k if classic else 2 * k
    while m >= stop:
        _to_centroid(Nc, Cc, mark, U2, w, m, running_mean(s, comp, m), cnt, off, sq, dist)
        r = argmax_first(dist, w)
        w, m = _group_around(Nc, Cc, mark, U2, idx, dist, w, m, r, k, pos, labels, g, sums, counts)
        far = argmax_first(dist, w)  # the distances to r, grouped ones NaN: the farthest from r
        w, m = _group_around(
            Nc, Cc, mark, U2, idx, dist, w, m, far, k, pos, labels, g + 1, sums, counts
        )
        g += 2
        if past(stop_cycle):
            break
    if m >= stop:  # stopped by the budget: the rest keep −1
        return labels
    if classic and m >= 2 * k:
        _to_centroid(Nc, Cc, mark, U2, w, m, running_mean(s, comp, m), cnt, off, sq, dist)
        r = argmax_first(dist, w)
        w, m = _group_around(Nc, Cc, mark, U2, idx, dist, w, m, r, k, pos, labels, g, sums, counts)
        g += 1
    if m >= k or g == 0:
        for j in range(w):
            if mark[j] == mark[j]:
                labels[idx[j]] = g
    elif m > 0:
        _join_nearest(N, C, U2, labels, g)
    return labels
