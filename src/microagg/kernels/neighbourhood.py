"""Numba kernels of the neighbourhood local search (``methods/lsearch.py``).

ICSM's moves (Mortazavi & Jalili 2015) restricted to candidate neighbourhoods: each group p
only tries moves with the groups nbr[p, :] nearest to its centroid, so one sweep costs
O(g·K·(2k−1)²·d) = O(n·K·k·d) instead of O(n²·d). Every delta is exact, from the records and
the groups' running sizes and coordinate sums (centroid = sum / size), and a move is applied
only when its delta is below −tol; sums and sizes are then updated incrementally.

* migration (1-opt) of x from A (size a, centroid c_A) to B (size b), ICSM Eqs. 5 + 6:
  ΔSSE = b/(b+1)·|x−c_B|² − a/(a−1)·|x−c_A|²   (a > k and b < 2k−1 keep both in k..2k−1)
* exchange (2-opt) of x ∈ A and y ∈ B, ICSM Eqs. 3 + 4 (R1 + R1):
  ΔSSE = |x−c_B|² − |y−c_B|² − |x−y|²/b + |y−c_A|² − |x−c_A|² − |x−y|²/a
* dissolve of A: its records leave one at a time, each for the neighbour group with room that
  it joins most cheaply (the same migration formula, with a/(a−1)·|x−c_A|² = 0 for the last
  record); applied when the summed exact deltas are below −tol, undone otherwise.

State: sizes (g), sums (g, d), slots (g, 2k−1) the members of each group and pos (n) each
record's slot, so moves cost O(d) to apply; memory O(n·d + g·(2k−1) + g·K).
"""

from __future__ import annotations

import numpy as np

from .groups import group_sums
from .jit import kernel
from .kdtree import build, delete, knn
from .nearest import sqdist
from .tours import walk_group

MIGRATE = 0
EXCHANGE = 1
DISSOLVE_STEP = (
    2  # one record of a dissolved group joining a neighbour (the group is below k meanwhile)
)
#: up to this many records group_tour scans the unvisited groups' centroids instead of a tree (the
#: scan is the faster there: benchmarks/results/scan_or_tree.md)
TOUR_SCAN_MAX_N = 5_000


@kernel
def build_state(X, labels, g, k):
    """(sizes, sums, slots, pos) of a partition whose groups all hold at most 2k−1 records."""
    n = X.shape[0]
    sizes, sums, start, members = group_sums(X, labels, g)
    slots = np.full((g, 2 * k - 1), -1, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    for p in range(g):
        for a in range(sizes[p]):
            i = members[start[p] + a]
            slots[p, a] = i
            pos[i] = a
    return sizes, sums, slots, pos


@kernel(inline="always")
def _to_centroid(X, i, sums, m, q):
    """|X[i] − sums[q]/m|²."""
    s = 0.0
    for t in range(X.shape[1]):
        v = X[i, t] - sums[q, t] / m
        s += v * v
    return s


@kernel
def _move(X, labels, sizes, sums, slots, pos, i, q):
    """Record i leaves its group for group q (bookkeeping only)."""
    p = labels[i]
    last = sizes[p] - 1
    j = slots[p, last]  # the last member fills i's slot
    slots[p, pos[i]] = j
    pos[j] = pos[i]
    slots[p, last] = -1
    sizes[p] -= 1
    slots[q, sizes[q]] = i
    pos[i] = sizes[q]
    sizes[q] += 1
    for t in range(X.shape[1]):
        sums[p, t] -= X[i, t]
        sums[q, t] += X[i, t]
    labels[i] = q


@kernel
def _exchange(X, labels, sums, slots, pos, i, j):
    """Records i and j swap groups (each takes the other's slot; sizes unchanged)."""
    p, q = labels[i], labels[j]
    slots[p, pos[i]] = j
    slots[q, pos[j]] = i
    pos[i], pos[j] = pos[j], pos[i]
    labels[i], labels[j] = q, p
    for t in range(X.shape[1]):
        v = X[i, t] - X[j, t]
        sums[p, t] -= v
        sums[q, t] += v


@kernel
def _log(log, nlog, kind, a, b, delta):
    if nlog < log.shape[0]:
        log[nlog, 0] = kind
        log[nlog, 1] = a
        log[nlog, 2] = b
        log[nlog, 3] = delta
    return nlog + 1


@kernel
def _best_move(X, labels, sizes, sums, slots, p, nbr, k, tol, dself, gx):
    """The most negative migration or exchange between p and its neighbour groups:
    (delta, kind, a, b) with kind MIGRATE (record a to group b) or EXCHANGE (records a, b);
    kind −1 when none is below −tol."""
    full = 2 * k - 1
    mp = sizes[p]
    for a in range(mp):
        dself[a] = _to_centroid(X, slots[p, a], sums, mp, p)
    best, kind, ba, bb = -tol, -1, -1, -1
    for j in range(nbr.shape[1]):
        q = nbr[p, j]
        if q < 0 or q == p:
            continue
        mq = sizes[q]
        if mq == 0:
            continue
        out_ok = mp > k and mq < full
        in_ok = mq > k and mp < full
        w = 1.0 / mp + 1.0 / mq
        for a in range(mp):
            x = slots[p, a]
            gx[a] = _to_centroid(X, x, sums, mq, q)
            if out_ok:
                delta = mq / (mq + 1.0) * gx[a] - mp / (mp - 1.0) * dself[a]
                if delta < best:
                    best, kind, ba, bb = delta, MIGRATE, x, q
        for b in range(mq):
            y = slots[q, b]
            dyq = _to_centroid(X, y, sums, mq, q)
            dyp = _to_centroid(X, y, sums, mp, p)
            if in_ok:
                delta = mp / (mp + 1.0) * dyp - mq / (mq - 1.0) * dyq
                if delta < best:
                    best, kind, ba, bb = delta, MIGRATE, y, p
            gy = dyp - dyq
            for a in range(mp):
                # R1(x, B, y) + R1(y, A, x), ICSM Eq. 4
                delta = gx[a] - dself[a] + gy - w * sqdist(X[slots[p, a]], X[y])
                if delta < best:
                    best, kind, ba, bb = delta, EXCHANGE, slots[p, a], y
    return best, kind, ba, bb


@kernel
def _try_dissolve(X, labels, sizes, sums, slots, pos, p, nbr, k, tol, moved_i, moved_to, log, nlog):
    """Dissolve p into its neighbour groups when that lowers SSE (exact); (delta, nlog) or (0,
    nlog)."""
    full = 2 * k - 1
    total = 0.0
    count = 0
    while sizes[p] > 0:
        m = sizes[p]
        i = slots[p, m - 1]
        leave = 0.0 if m == 1 else m / (m - 1.0) * _to_centroid(X, i, sums, m, p)
        best, bq = np.inf, -1
        for j in range(nbr.shape[1]):
            q = nbr[p, j]
            if q < 0 or q == p or sizes[q] == 0 or sizes[q] >= full:
                continue
            mq = sizes[q]
            v = mq / (mq + 1.0) * _to_centroid(X, i, sums, mq, q)
            if v < best:
                best, bq = v, q
        if bq < 0:
            break
        _move(X, labels, sizes, sums, slots, pos, i, bq)
        moved_i[count] = i
        moved_to[count] = bq
        total += best - leave
        count += 1
    if sizes[p] == 0 and total < -tol:
        if log.shape[0] > 0:  # replay the steps' deltas for the trace
            for c in range(count - 1, -1, -1):
                _move(X, labels, sizes, sums, slots, pos, moved_i[c], p)
            for c in range(count):
                i = moved_i[c]
                q = moved_to[c]
                m = sizes[p]
                leave = 0.0 if m == 1 else m / (m - 1.0) * _to_centroid(X, i, sums, m, p)
                mq = sizes[q]
                join = mq / (mq + 1.0) * _to_centroid(X, i, sums, mq, q)
                _move(X, labels, sizes, sums, slots, pos, i, q)
                nlog = _log(log, nlog, DISSOLVE_STEP, i, q, join - leave)
        return total, nlog
    for c in range(count - 1, -1, -1):  # undo, last move first
        _move(X, labels, sizes, sums, slots, pos, moved_i[c], p)
    return 0.0, nlog


@kernel
def sweep(
    X, labels, sizes, sums, slots, pos, nbr, order, k, tol, max_moves, dissolve, changed, log, nlog
):
    """One pass over the groups ``order``: for each, apply its best migration / exchange with
    its neighbour groups while one lowers SSE (at most max_moves), then try to dissolve it.
    changed[p] is set for every group a move touched. Returns (SSE change, moves, nlog)."""
    full = 2 * k - 1
    dself = np.empty(full)
    gx = np.empty(full)
    moved_i = np.empty(full, dtype=np.int64)
    moved_to = np.empty(full, dtype=np.int64)
    total = 0.0
    moves = 0
    for p in order:
        if sizes[p] == 0:
            continue
        for _ in range(max_moves):
            delta, kind, a, b = _best_move(X, labels, sizes, sums, slots, p, nbr, k, tol, dself, gx)
            if kind < 0:
                break
            if kind == MIGRATE:
                changed[labels[a]] = True
                _move(X, labels, sizes, sums, slots, pos, a, b)
                changed[b] = True
            else:
                pa, pb = labels[a], labels[b]
                _exchange(X, labels, sums, slots, pos, a, b)
                changed[pa] = True
                changed[pb] = True
            nlog = _log(log, nlog, kind, a, b, delta)
            total += delta
            moves += 1
        if dissolve and sizes[p] > 0:
            delta, nlog = _try_dissolve(
                X, labels, sizes, sums, slots, pos, p, nbr, k, tol, moved_i, moved_to, log, nlog
            )
            if delta < 0.0:
                changed[p] = True
                for j in range(nbr.shape[1]):
                    if nbr[p, j] >= 0:
                        changed[nbr[p, j]] = True
                total += delta
                moves += 1
    return total, moves, nlog


@kernel
def group_tour(X, sizes, sums, slots, nbr, first, leaf_size=None):
    """Records as a path through the groups (ICSM Algorithm 2's tour, in O(n·K·k·d + g·log g)):
    start at group ``first``; walk each group nearest point next from its entry record; the next
    group is the unvisited neighbour group (nbr) holding the record nearest to the last record
    placed, entered there; when every neighbour is visited, the unvisited group whose centroid
    is nearest to that record (a KD-tree over the centroids, with deletions). Every group is
    consecutive on the path, so the optimal cut of the path (Tour2Assignment) is never worse
    than the partition it came from. ``leaf_size`` None (``jit.tree_leaf_size``: small data): the
    nearest unvisited centroid by a scan (the tree query's group), and no tree compiled."""
    n, d = X.shape
    g = sizes.shape[0]
    alive = np.flatnonzero(sizes > 0)
    cent = np.empty((alive.shape[0], d))
    for r in range(alive.shape[0]):
        for t in range(d):
            cent[r, t] = sums[alive[r], t] / sizes[alive[r]]
    row_of = np.full(g, -1, dtype=np.int64)
    for r in range(alive.shape[0]):
        row_of[alive[r]] = r
    if leaf_size is not None:
        T = build(cent, leaf_size)
    visited = np.zeros(g, dtype=np.bool_)
    tour = np.empty(n, dtype=np.int64)
    out_idx = np.empty(1, dtype=np.int64)
    out_d = np.empty(1)
    excl = np.empty(0, dtype=np.int64)
    placed = np.zeros(n, dtype=np.bool_)
    p = first
    entry = slots[first, 0]
    at = 0
    while True:
        visited[p] = True
        if leaf_size is not None:
            delete(T, row_of[p])
        cur = entry
        tour[at] = cur
        at += 1
        placed[cur] = True
        cur, at = walk_group(X, slots[p, : sizes[p]], cur, placed, tour, at)
        if at == n:
            break
        bq, bj, bd = -1, -1, np.inf
        for c in range(nbr.shape[1]):
            q = nbr[p, c]
            if q < 0 or visited[q] or sizes[q] == 0:
                continue
            for a in range(sizes[q]):
                v = sqdist(X[slots[q, a]], X[cur])
                if v < bd:
                    bq, bj, bd = q, slots[q, a], v
        if bq < 0:
            if leaf_size is not None:
                knn(T, X[cur], 1, out_idx, out_d, excl, 0)
                bq = alive[out_idx[0]]
            else:  # the tree's query by a scan in row order: the same (distance, row)
                nearest = np.inf
                for r in range(alive.shape[0]):
                    if not visited[alive[r]]:
                        v = sqdist(cent[r], X[cur])
                        if v < nearest:
                            nearest, bq = v, alive[r]
            for a in range(sizes[bq]):
                v = sqdist(X[slots[bq, a]], X[cur])
                if v < bd:
                    bj, bd = slots[bq, a], v
        p, entry = bq, bj
    return tour


@kernel
def neighbour_groups(labels, sizes, slots, record_knn, K):
    """(g, K) candidate neighbour groups: for each group, the first K distinct other groups met
    among its members' nearest records, rank by rank (−1 where fewer). O(n·K_r + g·K)."""
    g = sizes.shape[0]
    nbr = np.full((g, K), -1, dtype=np.int64)
    for p in range(g):
        m = sizes[p]
        if m == 0:
            continue
        c = 0
        for r in range(record_knn.shape[1]):
            for a in range(m):
                q = labels[record_knn[slots[p, a], r]]
                if q == p:
                    continue
                seen = False
                for e in range(c):
                    if nbr[p, e] == q:
                        seen = True
                        break
                if not seen:
                    nbr[p, c] = q
                    c += 1
                    if c == K:
                        break
            if c == K:
                break
    return nbr
