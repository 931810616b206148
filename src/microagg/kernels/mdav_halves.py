"""MDAV's tree kernel on two threads for every query of a pair of groups (``mdav_halves_kernel``):
the records cut into two halves (even and odd indices, so that each half spreads over the data
as the records do), each half with its own KD-trees and radial lists, one thread a half. Every
query runs on both halves at once, each pruning by the other's bound too (``kdtree_shared``),
and the two answers are merged by the plain loop's rules (k nearest: the k smallest by
(distance, index); farthest: the largest distance, the lower index on ties), so the labels are
``mdav_tree_kernel``'s bit for bit. A pair costs three parallel regions: the last group's
deletions and the farthest record from the centroid; the k nearest to r and the farthest from r;
r's group's deletions and the k nearest to s.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from . import kdtree
from .cycles import cycles, stop_cycle_after
from .jit import kernel
from .kbest import kbest_admits, kbest_insert
from .kdtree_shared import farthest_shared, knn_shared
from .mdav_brute import _brute_finish, _brute_pairs, _columns
from .mdav_tree import (
    REBUILD_BELOW,
    SWITCH_ALWAYS,
    SWITCH_EVERY,
    SWITCH_FIRST_PAIRS,
    SWITCH_MEASURED,
    SWITCH_NEVER,
    SWITCH_SKIP,
    SWITCH_TRIAL_PAIRS,
)
from .nearest import join_nearest_centroid
from .radial import radial_index, radial_refresh, radial_scan
from .running_sum import running_mean, running_sum_add, running_sum_init

__all__ = ["mdav_halves_kernel"]

#: the guard (``_guard_threads``): GUARD_TRIALS pairs of groups on two threads and as many on
#: one, alternating and timed, then GUARD_EVERY pairs as the faster did before the next check; each
#: check that one thread wins doubles the wait, up to GUARD_MOST (under load a split pair can
#: cost many times a pair on one thread, so the checks themselves must be rare then)
GUARD_TRIALS, GUARD_EVERY, GUARD_MOST = 4, 128, 16384

#: what a region asks of each half (``_halves``): the farthest from the centroid, the k nearest,
#: the farthest from a record
RADIAL, NEAREST, FARTHEST = 1, 2, 4


@kernel(inline="always")
def _half(h, Ta, Fa, Tb, Fb, tail_a, prefix_a, tail_b, prefix_b, anchors, work, halves_alive,
          side, kidx, kd, counts, found, bounds, gone, ngone, q, k, ask):  # fmt: skip
    """Half h's share of a region (``_halves``, whose tuples arrive unpacked: numba's parallel
    regions take tuples of arrays, not tuples of tuples): delete the records gone[:ngone] of half
    h from its trees, then answer what ``ask`` asks about q."""
    T = Ta if h == 0 else Tb
    F = Fa if h == 0 else Fb
    tail = tail_a if h == 0 else tail_b
    prefix = prefix_a if h == 0 else prefix_b
    for j in range(ngone):
        i = gone[j]
        if side[i] == h:
            kdtree.delete(T, i)
            kdtree.delete(F, i)
    if ask & RADIAL:
        i, dd = radial_scan(tail, prefix, anchors[h], work[h], halves_alive[h], q, -1)
        found[h, 0], found[h, 1] = i, dd
    if ask & NEAREST:
        counts[h] = knn_shared(T, q, k, kidx[h], kd[h], bounds[0], h)
    if ask & FARTHEST:
        i, dd = farthest_shared(F, q, bounds[1], h)
        found[h, 2], found[h, 3] = i, dd


@kernel(parallel=True)
def _halves(Ta, Fa, Tb, Fb, lists, state, out, gone, ngone, q, k, ask, threads):
    """Both halves' shares of a region: at once on two threads when ``threads`` is 2 or more, else
    one after the other. Ta, Fa, Tb, Fb: the trees of each half (arguments: numba's parallel
    regions rebuild a named tuple from its definition), lists = (tail, prefix) of each half,
    state = (anchors, work, halves_alive, side), out = (kidx, kd, counts, found, bounds): the k
    nearest into kidx[h], kd[h], counts[h]; the farthest from the centroid in found[h, 0:2], from
    q in found[h, 2:4]; the bounds the halves share (``kdtree_shared``) in bounds."""
    tail_a, prefix_a, tail_b, prefix_b = lists
    anchors, work, halves_alive, side = state
    kidx, kd, counts, found, bounds = out
    bounds[0, 0], bounds[0, 1] = np.inf, np.inf
    bounds[1, 0], bounds[1, 1] = -1.0, -1.0
    if threads < 2:
        for h in range(2):
            _half(h, Ta, Fa, Tb, Fb, tail_a, prefix_a, tail_b, prefix_b, anchors, work,
                  halves_alive, side, kidx, kd, counts, found, bounds, gone, ngone, q, k,
                  ask)  # fmt: skip
    else:
        for h in prange(2):
            _half(h, Ta, Fa, Tb, Fb, tail_a, prefix_a, tail_b, prefix_b, anchors, work,
                  halves_alive, side, kidx, kd, counts, found, bounds, gone, ngone, q, k,
                  ask)  # fmt: skip


@kernel(inline="always")
def _merged_farthest(found, column):
    """The farther of the halves' answers in found[:, column:column + 2], the lower index on ties
    (−1 when neither half has one)."""
    i0, d0 = int(found[0, column]), found[0, column + 1]
    i1, d1 = int(found[1, column]), found[1, column + 1]
    if i0 < 0 or (i1 >= 0 and (d1 > d0 or (d1 == d0 and i1 < i0))):
        return i1
    return i0


@kernel(inline="always")
def _merged_nearest(kidx, kd, counts, k, members, dbuf):
    """The k smallest by (distance, index) of the halves' k nearest, into members and dbuf."""
    filled = 0
    for h in range(2):
        for e in range(counts[h]):
            if kbest_admits(dbuf, members, k, filled, kd[h, e], kidx[h, e]):
                filled = kbest_insert(dbuf, members, k, filled, kd[h, e], kidx[h, e])
    return filled


@kernel(inline="always")
def _take(X, members, k, g, groups, state, gone):
    """members[:k] become group g: labels, alive, the sum (in that order, as the tree kernel
    takes them); gone[:k] notes them for the trees' deletions at the next region.
    groups = (labels, alive, s, comp)."""
    labels, alive, s, comp = groups
    halves_alive, side = state[2], state[3]
    for j in range(k):
        i = members[j]
        labels[i] = g
        alive[i] = False
        halves_alive[side[i], i] = False
        running_sum_add(s, comp, X[i], -1.0)
        gone[j] = i


@kernel
def _build_halves(X, halves_alive, leaf_size):
    """Each half's trees over its alive records: (T, F) of half 0, then of half 1."""
    Ta, Fa = kdtree.build_pair(X, np.nonzero(halves_alive[0])[0], leaf_size)
    Tb, Fb = kdtree.build_pair(X, np.nonzero(halves_alive[1])[0], leaf_size)
    return Ta, Fa, Tb, Fb


@kernel
def _farthest_from_centroid(X, trees, lists, state, out, gone, ngone, c, t):
    """The alive record farthest from the centroid c, the records gone[:ngone] deleted from the
    trees meanwhile; returns (record, lists), each half's lists re-sorted when due."""
    anchors, work, halves_alive, _ = state
    _halves(*trees, lists, state, out, gone, ngone, c, 0, RADIAL, t)
    tail_a, prefix_a = radial_refresh(
        X, lists[0], lists[1], anchors[0], work[0], halves_alive[0], c
    )
    tail_b, prefix_b = radial_refresh(
        X, lists[2], lists[3], anchors[1], work[1], halves_alive[1], c
    )
    return _merged_farthest(out[3], 0), (tail_a, prefix_a, tail_b, prefix_b)


@kernel
def _pair(X, k, g, m, trees, lists, state, out, groups, members, dbuf, gone, ngone, t):
    """Groups g and g + 1 of the m records left, as mdav_tree_kernel forms them, on t threads:
    gone[:ngone] (the last group formed) is deleted from the trees at the first region, and
    gone[:k] holds group g + 1 after, to be deleted at the next; returns the lists."""
    labels, alive, s, comp = groups
    kidx, kd, counts, found, _ = out
    c = running_mean(s, comp, m)
    r, lists = _farthest_from_centroid(X, trees, lists, state, out, gone, ngone, c, t)
    xr = X[r].copy()
    _halves(*trees, lists, state, out, gone, 0, xr, k, NEAREST | FARTHEST, t)
    _merged_nearest(kidx, kd, counts, k, members, dbuf)
    r = _merged_farthest(found, 2)
    _take(X, members, k, g, groups, state, gone)
    ngone = k
    if not alive[r]:  # the farthest lies in r's group (ties, few records left): asked again
        _halves(*trees, lists, state, out, gone, k, xr, k, FARTHEST, t)
        ngone = 0
        r = _merged_farthest(found, 2)
    _halves(*trees, lists, state, out, gone, ngone, X[r].copy(), k, NEAREST, t)
    _merged_nearest(kidx, kd, counts, k, members, dbuf)
    _take(X, members, k, g + 1, groups, state, gone)
    return lists


@kernel
def _brute_trial(X, k, classic, m, g, groups, switch, tree_cost, stop_cycle, split):
    """mdav_tree_kernel's trial: SWITCH_TRIAL_PAIRS pairs by brute force, timed; if brute force
    goes on (SWITCH_ALWAYS, or SWITCH_MEASURED and cheaper than the tree's pairs), it forms every
    group left. Returns (records left, next group, the trial's cycles per pair and record, whether
    every group is formed)."""
    labels, alive, s, comp = groups
    n, d = X.shape
    stop = 3 * k if classic else 2 * k
    rest = np.nonzero(alive)[0]
    Xc = _columns(X, rest)
    dist, ahead, keep = np.empty(m), np.empty(m), np.empty(m, dtype=np.bool_)
    pos, gone = np.empty(k, dtype=np.int64), np.empty(2 * k, dtype=np.int64)
    anchors, work = np.empty((2, d)), np.zeros(2, dtype=np.int64)
    tail, prefix = radial_index(X, rest, anchors, running_mean(s, comp, m))
    tic = cycles()
    m_after, width, g, tail, prefix, passes = _brute_pairs(
        X, Xc, rest, m, m, k, stop, SWITCH_TRIAL_PAIRS, labels, g, s, comp, dist, ahead, keep,
        pos, gone, alive, tail, prefix, anchors, work, stop_cycle, split,
    )  # fmt: skip
    brute_cost = (cycles() - tic) / max(passes, 1)  # going on, a pass a pair (``ahead``)
    if not (switch == SWITCH_ALWAYS or (switch == SWITCH_MEASURED and brute_cost < tree_cost)):
        return m_after, g, brute_cost / m, False
    m_left, width, g, tail, prefix, _ = _brute_pairs(
        X, Xc, rest, m_after, width, k, stop, n, labels, g, s, comp, dist, ahead, keep, pos,
        gone, alive, tail, prefix, anchors, work, stop_cycle, split,
    )  # fmt: skip
    if m_left < stop:  # not stopped by the budget
        _brute_finish(
            X, Xc, rest, m_left, width, k, classic, labels, g, s, comp, dist, keep, pos, gone,
            alive,
        )  # fmt: skip
    return m_left, g, brute_cost / m, True


@kernel(inline="always")
def _guard_threads(guard, threads):
    """The threads of the next pair: alternating during a check, else as the last check found
    faster. guard = [cycles on two threads, on one, 1.0 while splitting, pairs of the check left
    to time, pairs before the next check, the current wait]."""
    left = int(guard[3])
    if left > 0:
        return threads if left % 2 == 0 else 1
    return threads if guard[2] > 0 else 1


@kernel(inline="always")
def _guard_timed(guard, spent):
    """Record the cycles the pair just formed took (``_guard_threads``)."""
    left = int(guard[3])
    if left > 0:
        guard[left % 2] += spent
        guard[3] = left - 1
        if left == 1:
            wins = guard[0] < guard[1]
            guard[2] = 1.0 if wins else 0.0
            guard[5] = GUARD_EVERY if wins else min(2 * guard[5], GUARD_MOST)
            guard[4] = guard[5]
            guard[0], guard[1] = 0.0, 0.0
    else:
        guard[4] -= 1
        if guard[4] <= 0:
            guard[3] = 2 * GUARD_TRIALS


@kernel
def mdav_halves_kernel(X, k, classic, leaf_size, switch, budget, split):
    """mdav_tree_kernel with every query of a pair of groups split over the two halves of the
    records (module docstring): the same labels, bit for bit. split = (threads, fewest records to
    split); a pair runs its halves one after the other below ``fewest`` records or while the
    guard (``_guard_threads``) finds one thread faster. ``switch`` and ``budget`` as for
    mdav_tree_kernel: the hand-over to brute force (its passes split, ``_brute_pairs``) on the
    same measured rule."""
    stop_cycle = stop_cycle_after(budget)
    n, d = X.shape
    labels, alive = np.full(n, -1, dtype=np.int64), np.ones(n, dtype=np.bool_)
    s, comp = running_sum_init(X)
    groups = (labels, alive, s, comp)
    side = np.arange(n) % 2
    halves_alive = np.zeros((2, n), dtype=np.bool_)
    for i in range(n):
        halves_alive[side[i], i] = True
    anchors, work = np.empty((2, 2, d)), np.zeros((2, 2), dtype=np.int64)
    state = (anchors, work, halves_alive, side)
    kidx, kd, counts = np.empty((2, k), dtype=np.int64), np.empty((2, k)), np.zeros(2, np.int64)
    out = (kidx, kd, counts, np.empty((2, 4)), np.empty((2, 2)))
    trees = _build_halves(X, halves_alive, leaf_size)
    c = running_mean(s, comp, n)
    tail_a, prefix_a = radial_index(X, np.nonzero(halves_alive[0])[0], anchors[0], c)
    tail_b, prefix_b = radial_index(X, np.nonzero(halves_alive[1])[0], anchors[1], c)
    lists = (tail_a, prefix_a, tail_b, prefix_b)
    members, dbuf = np.empty(k, dtype=np.int64), np.empty(k)
    gone, ngone = np.empty(k, dtype=np.int64), 0
    m, g, built = n, 0, n
    stop = 3 * k if classic else 2 * k
    threads, fewest = split
    tree_cycles, tree_pairs = 0, 0
    guard = np.array([0.0, 0.0, 1.0, 2.0 * GUARD_TRIALS, 0.0, GUARD_EVERY])  # ``_guard_threads``
    brute_per_record = -1.0
    check = n - 2 * k * max(1, min(SWITCH_FIRST_PAIRS, n // (16 * k)))
    while m >= stop:
        tic = cycles()
        guarded = m >= fewest
        t = _guard_threads(guard, threads) if guarded else 1
        lists = _pair(X, k, g, m, trees, lists, state, out, groups, members, dbuf, gone, ngone, t)
        ngone = k
        g += 2
        m -= 2 * k
        toc = cycles()
        if guarded:
            _guard_timed(guard, toc - tic)
        tree_cycles += toc - tic
        tree_pairs += 1
        if m >= stop and stop_cycle > 0 and toc > stop_cycle:
            return labels
        if switch != SWITCH_NEVER and m <= check and m >= stop:
            tree_cost = tree_cycles / tree_pairs
            if (
                switch != SWITCH_MEASURED
                or brute_per_record < 0
                or brute_per_record * m < SWITCH_SKIP * tree_cost
            ):
                m, g, brute_per_record, done = _brute_trial(
                    X, k, classic, m, g, groups, switch, tree_cost, stop_cycle, split
                )
                if done:
                    return labels
                for i in range(n):  # the trees go on without the trial's groups
                    if not alive[i]:
                        halves_alive[side[i], i] = False
                trees = _build_halves(X, halves_alive, leaf_size)
                built, ngone = m, 0
                tree_cycles, tree_pairs = 0, 0
            check = int(SWITCH_EVERY * m)
        if m < REBUILD_BELOW * built:
            trees = _build_halves(X, halves_alive, leaf_size)
            built, ngone = m, 0
    if classic and m >= 2 * k:
        c = running_mean(s, comp, m)
        r, lists = _farthest_from_centroid(X, trees, lists, state, out, gone, ngone, c, 1)
        _halves(*trees, lists, state, out, gone, 0, X[r].copy(), k, NEAREST, 1)
        _merged_nearest(kidx, kd, counts, k, members, dbuf)
        _take(X, members, k, g, groups, state, gone)
        g += 1
        m -= k
    if m >= k or g == 0:
        for i in np.nonzero(alive)[0]:
            labels[i] = g
    elif m > 0:
        join_nearest_centroid(X, labels, g)
    return labels
