"""Travelling-salesman heuristics over records (numba): nearest neighbour, 2-opt, Or-opt.

Used by the MF-TSP method (Hamiltonian paths from every record) and by the tour method
`tsp-mhm` (one closed tour cut optimally into groups). Distances are Euclidean and computed
on the fly from X, so memory stays O(n·d + n·K) for K candidate neighbours per record.

A tour or path is an array ``path`` of record ids with its inverse ``pos``. Position 0 never
moves: for an open path it is the fixed start record (ICSM/MF-TSP "path starting in city i"),
for a closed tour any cyclic 2-opt move can be written as a reversal that avoids position 0.
The edge after the last position costs |x_last − x_first| for a closed tour and nothing for an
open path (the paper's zero "way back" to the start city).

Improvement is the classic neighbour-list local search with don't-look bits (Bentley 1992):
a queue of active records; for each, the best improving 2-opt move adding an edge to one of
its K nearest neighbours, or the best Or-opt move (a segment of 1..3 records starting or
ending at it re-inserted, in either orientation, next to a neighbour of an end record).
Records at the ends of changed edges are re-activated. Or-opt moves are done with reversals.
"""

from __future__ import annotations

import numpy as np

from .cycles import past, stop_cycle_after
from .jit import kernel

_EPS = 1e-10  # smallest gain accepted, against cycling on rounding noise


@kernel
def _dist(X, a, b):
    s = 0.0
    for t in range(X.shape[1]):
        diff = X[a, t] - X[b, t]
        s += diff * diff
    return np.sqrt(s)


@kernel
def _edge(X, a, b):
    """Length of edge a-b; an absent end (-1) costs nothing."""
    if a < 0 or b < 0:
        return 0.0
    return _dist(X, a, b)


@kernel
def _next(path, j, closed):
    n = path.shape[0]
    if j < n - 1:
        return path[j + 1]
    return path[0] if closed else -1


@kernel
def _prev(path, j, closed):
    if j > 0:
        return path[j - 1]
    return path[path.shape[0] - 1] if closed else -1


@kernel
def _reverse(path, pos, lo, hi):
    while lo < hi:
        a = path[lo]
        b = path[hi]
        path[lo] = b
        pos[b] = lo
        path[hi] = a
        pos[a] = hi
        lo += 1
        hi -= 1


@kernel
def nearest_neighbour_path(X, neigh, start, path, pos, unvisited, upos):
    """Nearest-neighbour construction from ``start`` into path/pos.

    The first unvisited record of the sorted candidate list is the nearest unvisited one
    whenever any candidate is unvisited; otherwise all unvisited records are scanned
    (ties towards the lower record id). unvisited/upos are O(n) work arrays.
    """
    n = X.shape[0]
    for i in range(n):
        unvisited[i] = i
        upos[i] = i
    m = n
    cur = start
    for step in range(n):
        path[step] = cur
        pos[cur] = step
        # swap-remove cur from the unvisited list (upos[i] = -1 marks visited)
        q = upos[cur]
        last = unvisited[m - 1]
        unvisited[q] = last
        upos[last] = q
        upos[cur] = -1
        m -= 1
        if m == 0:
            break
        nxt = -1
        for c in neigh[cur]:
            if upos[c] >= 0:
                nxt = c
                break
        if nxt < 0:
            best = np.inf
            for q in range(m):
                c = unvisited[q]
                dd = 0.0
                for t in range(X.shape[1]):
                    diff = X[cur, t] - X[c, t]
                    dd += diff * diff
                if dd < best or (dd == best and c < nxt):
                    best = dd
                    nxt = c
        cur = nxt


@kernel
def improve(X, neigh, K, K_or, path, pos, closed, queue, inq, stop_cycle=0):
    """2-opt + Or-opt local search with don't-look bits until no active record improves.

    2-opt tries the first K candidates of each record, Or-opt the first K_or. path/pos are
    modified in place; position 0 is fixed. queue/inq are O(n) work arrays. ``stop_cycle``
    (``cycles.stop_cycle_after``; 0: none): the search ends once the counter passes it, checked
    every 64 records, the path as improved so far. Returns the number of moves applied.
    """
    n = path.shape[0]
    if n < 5:
        return 0
    for i in range(n):
        queue[i] = path[i]
        inq[path[i]] = True
    head = 0
    count = n
    moves = 0
    touched = np.empty(6, dtype=np.int64)
    visited = 0
    while count > 0:
        visited += 1
        if (visited & 63) == 0 and past(stop_cycle):
            break
        a = queue[head]
        head = (head + 1) % n
        count -= 1
        inq[a] = False
        i = pos[a]
        best_gain = _EPS
        kind = 0  # 1: 2-opt reversal [l, r]; 2: Or-opt segment [s, e] after j
        # np.int64(0), not 0: a literal start would make numba compile _reverse/_next once per
        # literal/int64 combination
        m_l = np.int64(0)
        m_r = np.int64(0)
        m_s = np.int64(0)
        m_e = np.int64(0)
        m_j = np.int64(0)
        m_fwd = True
        # --- 2-opt: new edge a-c replacing a's successor (side 0) or predecessor (side 1) edge
        for side in range(2):
            if side == 0:
                d1 = _edge(X, a, _next(path, i, closed))
            else:
                d1 = _edge(X, _prev(path, i, closed), a)
            for q in range(K):
                c = neigh[a, q]
                if _dist(X, a, c) >= d1:
                    break
                j = pos[c]
                lo = min(i, j) + 1 - side
                hi = max(i, j) - side
                if lo == 0:
                    if not closed:
                        continue
                    lo, hi = hi + 1, n - 1  # the complementary reversal, same cycle
                if lo >= hi:
                    continue
                P = path[lo - 1]
                nx = _next(path, hi, closed)
                g = (
                    _dist(X, P, path[lo])
                    + _edge(X, path[hi], nx)
                    - _dist(X, P, path[hi])
                    - _edge(X, path[lo], nx)
                )
                if g > best_gain:
                    best_gain = g
                    kind = 1
                    m_l = lo
                    m_r = hi
        # --- Or-opt: segments of 1..3 records with a at one end
        if n >= 8:
            for L in range(1, 4):
                for side in range(2):
                    if L == 1 and side == 1:
                        continue
                    s = i if side == 0 else i - L + 1
                    e = s + L - 1
                    if s < 1 or e > n - 1:
                        continue
                    P = path[s - 1]
                    u = path[s]
                    v = path[e]
                    Nn = _next(path, e, closed)
                    g_rem = _dist(X, P, u) + _edge(X, v, Nn) - _edge(X, P, Nn)
                    if g_rem <= best_gain:
                        continue
                    for endside in range(2):
                        end = u if endside == 0 else v
                        other = v if endside == 0 else u
                        for q in range(K_or):
                            c = neigh[end, q]
                            dce = _dist(X, c, end)
                            if dce >= g_rem - best_gain:
                                break
                            jc = pos[c]
                            if s <= jc <= e:
                                continue
                            for before in range(2):
                                # after c: c, end, ..., other, next(c); before c: prev(c), other,
                                # ..., end, c
                                jj = jc - before
                                if jj < 0:
                                    if not closed:
                                        continue
                                    jj = n - 1
                                if s - 1 <= jj <= e:
                                    continue
                                if before == 0:
                                    nj = _next(path, jj, closed)
                                    g = g_rem - (dce + _edge(X, other, nj) - _edge(X, c, nj))
                                else:
                                    pj = path[jj]
                                    g = g_rem - (_dist(X, pj, other) + dce - _dist(X, pj, c))
                                if g > best_gain:
                                    best_gain = g
                                    kind = 2
                                    m_s = s
                                    m_e = e
                                    m_j = jj
                                    m_fwd = (end == u) == (before == 0)
        if kind == 0:
            continue
        moves += 1
        nt = 0
        if kind == 1:
            touched[0] = path[m_l - 1]
            touched[1] = path[m_l]
            touched[2] = path[m_r]
            touched[3] = _next(path, m_r, closed)
            nt = 4
            _reverse(path, pos, m_l, m_r)
        else:
            s, e, j = m_s, m_e, m_j
            L = e - s + 1
            touched[0] = path[s - 1]
            touched[1] = path[s]
            touched[2] = path[e]
            touched[3] = _next(path, e, closed)
            touched[4] = path[j]
            touched[5] = _next(path, j, closed)
            nt = 6
            if j > e:
                nb = j - e
                _reverse(path, pos, s, j)  # [rev B][rev S]
                _reverse(path, pos, s, s + nb - 1)
                if m_fwd:
                    _reverse(path, pos, s + nb, j)
            else:
                _reverse(path, pos, j + 1, e)  # [rev S][rev B]
                _reverse(path, pos, j + L + 1, e)
                if m_fwd:
                    _reverse(path, pos, j + 1, j + L)
        for t in range(nt):
            b = touched[t]
            if b >= 0 and not inq[b]:
                inq[b] = True
                queue[(head + count) % n] = b
                count += 1
    return moves


@kernel
def path_length(X, path, closed):
    n = path.shape[0]
    total = 0.0
    for p in range(n - 1):
        total += _dist(X, path[p], path[p + 1])
    if closed and n > 1:
        total += _dist(X, path[n - 1], path[0])
    return total


@kernel
def build_paths(X, neigh, K, K_or, starts, closed, k, N, last_path, budget=0):
    """Improved TSP paths (or tours) from each start record, counted into N as they are built.

    For each start s: nearest neighbour from s, then 2-opt + Or-opt with s fixed first; an open
    path (closed=False) has a free end, a tour (closed=True) pays the edge back to s. With
    k >= 2, N[a, b] and N[b, a] are incremented for every pair standing within k−1 positions
    of each other on the path (MF-TSP Algorithm 1, lines 2-10), so the n paths are never
    stored (k = 0: no counting, N unused). The last path is copied into last_path.
    ``budget``: cycles (``cycles.budget_cycles``; 0: none) after which the improvement of the
    current path ends where it is (the path is counted) and no further path starts.
    Returns the number of paths built.
    """
    stop = stop_cycle_after(budget)
    n = X.shape[0]
    path = np.empty(n, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    w1 = np.empty(n, dtype=np.int64)
    w2 = np.empty(n, dtype=np.int64)
    inq = np.zeros(n, dtype=np.bool_)
    built = 0
    for start in starts:
        nearest_neighbour_path(X, neigh, start, path, pos, w1, w2)
        improve(X, neigh, K, K_or, path, pos, closed, w1, inq, stop)
        for p in range(n):
            a = path[p]
            for q in range(p + 1, min(n, p + k)):
                b = path[q]
                N[a, b] += 1
                N[b, a] += 1
        built += 1
        if past(stop):
            break
    for p in range(n):  # an element loop: slice assignment compiles a shape-error message formatter
        last_path[p] = path[p]
    return built
