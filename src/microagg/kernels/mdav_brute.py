"""MDAV by vectorised brute force (``mdav_brute_kernel``): the plain loop's labels bit for bit,
with the records stored as columns so that distance passes vectorise, and about one pass over the
records per pair of groups instead of four (``_brute_pairs``)."""

from __future__ import annotations

import numpy as np

from .cycles import cycles, past, stop_cycle_after
from .jit import kernel
from .kbest import sort_small
from .mdav_passes import _distances_select, _distances_two_select, _select
from .mdav_split import (
    _distances_select_threads,
    _distances_two_select_threads,
    _split_current,
    _split_now,
    _split_timed,
)
from .nearest import argmax_first, join_nearest_centroid
from .radial import farthest_from_centroid, radial_index
from .running_sum import running_mean, running_sum_add, running_sum_init

__all__ = ["mdav_brute_kernel"]


@kernel
def _columns(X, members):
    """The records ``members`` of X as columns (d × m), in the order given: each coordinate of a
    block of records is contiguous, so brute-force distance passes vectorise."""
    m, d = members.shape[0], X.shape[1]
    Xc = np.empty((d, m))
    for j in range(m):
        i = members[j]
        for t in range(d):
            Xc[t, j] = X[i, t]
    return Xc


#: ``_brute_pairs`` marks the columns of grouped records removed (NaN) and drops them in one stable
#: pass once they are this share of the columns: a removal after every pair of groups had copied
#: about all columns each time (measured at 10^4 records: the kernel 0.064 -> 0.055 s census-like,
#: 0.051 -> 0.042 s Gaussian 10-d; 1/4 and 1/16 measured no better)
DEAD_SHARE = 0.125


@kernel
def _mark_removed(Xc, gone, a, b):
    """The columns at positions gone[a:b] hold removed records: NaN in every coordinate."""
    for j in range(a, b):
        for t in range(Xc.shape[0]):
            Xc[t, gone[j]] = np.nan


@kernel
def _drop_removed(Xc, idx, ahead, width, keep):
    """Stable removal of the NaN columns (``_mark_removed``) among the first ``width`` of Xc and the
    entries of idx and ahead; returns the number of columns left."""
    for i in range(width):
        keep[i] = Xc[0, i] == Xc[0, i]
    for t in range(Xc.shape[0]):
        row = Xc[t]
        w = 0  # every coordinate's row keeps the same columns
        for i in range(width):
            if keep[i]:
                row[w] = row[i]
                w += 1
    w = 0
    for i in range(width):
        if keep[i]:
            idx[w] = idx[i]
            ahead[w] = ahead[i]
            w += 1
    return w


@kernel
def _remove_columns(Xc, idx, m, gone, ngone):
    """Stable removal of the positions gone[:ngone] (ascending) from the first m columns of Xc
    and entries of idx; returns the new count. Each stretch between two removed positions moves
    left as one contiguous copy per coordinate."""
    d = Xc.shape[0]
    for j in range(ngone):
        a = gone[j] + 1
        b = gone[j + 1] if j + 1 < ngone else m
        shift = j + 1
        for t in range(d):
            src = Xc[t, a:b]
            dst = Xc[t, a - shift : b - shift]
            for i in range(b - a):
                dst[i] = src[i]
        src_i = idx[a:b]
        dst_i = idx[a - shift : b - shift]
        for i in range(b - a):
            dst_i[i] = src_i[i]
    return m - ngone


@kernel
def _brute_take(X, idx, k, pos, labels, g, s, comp, gone, at, alive):
    """The records at positions pos[:k] become group g (in pos order, as _take_group: the same
    running sums); their positions go to gone[at:at + k]."""
    for j in range(k):
        p = pos[j]
        i = idx[p]
        labels[i] = g
        alive[i] = False
        running_sum_add(s, comp, X[i], -1.0)
        gone[at + j] = p


@kernel
def _brute_pairs(
    X,
    Xc,
    idx,
    m,
    width,
    k,
    stop,
    max_pairs,
    labels,
    g,
    s,
    comp,
    dist,
    ahead,
    keep,
    pos,
    gone,
    alive,
    tail,
    prefix,
    anchors,
    work,
    stop_cycle,
    split,
):
    """mdav_kernel's pairs of groups by brute force over the columns Xc[:, :width] (the records
    idx[:width], ascending: the m remaining ones and removed ones, NaN), while at least ``stop``
    remain, at most max_pairs pairs; returns (m, width, g, tail, prefix, passes over the records).

    The record r farthest from the centroid comes from the radial lists
    (``farthest_from_centroid``, as in the tree kernel); then two distance passes: to r (r's
    group, and the record s farthest from r among the others, as the plain loop finds it after
    removing the group) and to s (s's group); both groups' columns are marked removed (NaN) and
    dropped in one stable pass once they are DEAD_SHARE of the columns (``_drop_removed``). The
    columns are left as they are at the end: a trial of the tree kernel whose tree goes on throws
    them away (measured, a compaction there doubled the cost of a trial).

    Above the L2 cache a pass is bound by memory, so the pass to s also computes the distances to
    a guess of the next pair's r (``ahead``): the record farthest from the centroid of the records
    left without r's group and with k copies of s taken off, s itself left out. The guess is
    nearly always the next r (measured: 94 % of pairs on 10^5 Gaussian 10-d records, 99.9 % on
    census-like ones), whose pass is then only a selection, made in the same pass unless it picked
    a record of s's group: about one pass over the records per pair instead of two, the same
    distances bit for bit (10^5 Gaussian 10-d records: 5.35 -> 3.41 s).

    dist, ahead and keep: buffers of at least m entries. Stops early once the cycle counter
    passes stop_cycle (> 0: the time limit, ``budget_cycles``). split: None (one thread) or the
    passes' split (``mdav_brute_kernel``), checked against one thread as it goes (``_split_now``).
    """
    d = Xc.shape[0]
    xs = np.empty(d)
    cg = np.empty(d)
    best = np.empty(k)
    pos_q, best_q = np.empty(k, dtype=np.int64), np.empty(k)
    guess = -1  # the record whose distances ``ahead`` holds, or -1
    selected, far_q = False, 0  # whether pos_q, best_q and far_q hold ahead's selection
    pairs, passes = 0, 0
    removed = width - m  # columns of grouped records (NaN)
    guard = np.array([0.0, 0.0, 0.0, 1.0, 0.0])  # split passes against one thread (``_split_now``)
    while m >= stop and pairs < max_pairs:
        c = running_mean(s, comp, m)
        r, tail, prefix = farthest_from_centroid(X, tail, prefix, anchors, work, alive, c, -1)
        if r == guess:
            dist, ahead = ahead, dist
            if selected:
                far = far_q
                for j in range(k):  # element-wise: an array copy compiles numba's shape-error path
                    pos[j], best[j] = pos_q[j], best_q[j]
            else:
                far = _select(dist, width, k, pos, best)
        elif split is None:  # one thread: the parallel passes are not even compiled (pruned)
            far = _distances_select(Xc, width, X[r], dist, k, pos, best, True)
            passes += 1
        else:
            far = _distances_select_threads(
                Xc, width, X[r], dist, k, pos, best, True, _split_current(split, guard)
            )
            passes += 1
        _brute_take(X, idx, k, pos, labels, g, s, comp, gone, 0, alive)
        _mark_removed(Xc, gone, 0, k)
        if not dist[far] > best[k - 1]:  # the largest may be in r's group (ties): as the plain loop
            for j in range(k):
                dist[gone[j]] = np.nan
            far = argmax_first(dist, width)
        for t in range(d):
            xs[t] = Xc[t, far]
        guess = -1
        if m - 2 * k >= stop and pairs + 1 < max_pairs:
            # s's group, not known before the pass, lies around s: the centroid without r's group
            # and k copies of s, s left out (s is often the next farthest from the centroid)
            for t in range(d):
                cg[t] = (s[t] + comp[t] - k * xs[t]) / (m - 2 * k)
            guess, tail, prefix = farthest_from_centroid(
                X, tail, prefix, anchors, work, alive, cg, idx[far]
            )
        if split is None:  # a condition on split alone, so that numba prunes the branch not taken
            if guess >= 0:
                far_q = _distances_two_select(
                    Xc, width, xs, X[guess], ahead, k, pos, best, pos_q, best_q
                )
            else:
                _distances_select(
                    Xc, width, xs, dist, k, pos, best, False
                )  # r's group is NaN: left out
        elif guess >= 0:  # the pass nearly every pair makes: timed against one thread now and then
            now, tic = _split_now(split, guard), cycles()
            far_q = _distances_two_select_threads(
                Xc, width, xs, X[guess], ahead, k, pos, best, pos_q, best_q, now
            )
            _split_timed(guard, cycles() - tic, width)
        else:
            _distances_select_threads(
                Xc, width, xs, dist, k, pos, best, False, _split_current(split, guard)
            )
        passes += 1
        _brute_take(X, idx, k, pos, labels, g + 1, s, comp, gone, k, alive)
        _mark_removed(Xc, gone, k, 2 * k)
        if guess >= 0 and alive[guess]:
            # s's group was not NaN yet in the pass: left out of ahead; the selection made in the
            # pass stands if it picked none of them (leaving out others changes no k smallest)
            selected = True
            for j in range(k, 2 * k):
                ahead[gone[j]] = np.nan
                selected &= gone[j] != far_q
                for i in range(k):
                    selected &= gone[j] != pos_q[i]
        else:
            guess = -1
        m -= 2 * k
        removed += 2 * k
        if removed >= DEAD_SHARE * width:
            width, removed = _drop_removed(Xc, idx, ahead, width, keep), 0
            selected = False  # its positions moved
        g += 2
        pairs += 1
        if past(stop_cycle):
            break
    return m, width, g, tail, prefix, passes


@kernel
def _brute_finish(
    X, Xc, idx, m, width, k, classic, labels, g, s, comp, dist, keep, pos, gone, alive
):
    """mdav_kernel's last steps by brute force once fewer than ``stop`` records remain (the
    columns as _brute_pairs leaves them)."""
    if width > m:
        _drop_removed(Xc, idx, dist, width, keep)  # dist: scratch here, compacted along for nothing
    if classic and m >= 2 * k:
        best = np.empty(k)  # the pairs' selections, not compiled again for these two passes
        r = _distances_select(Xc, m, running_mean(s, comp, m), dist, k, pos, best, True)
        _distances_select(Xc, m, Xc[:, r].copy(), dist, k, pos, best, False)
        _brute_take(X, idx, k, pos, labels, g, s, comp, gone, 0, alive)
        sort_small(gone, k)
        m = _remove_columns(Xc, idx, m, gone, k)
        g += 1
    if m >= k or g == 0:
        for j in range(m):
            labels[idx[j]] = g
    elif m > 0:
        join_nearest_centroid(X, labels, g)


@kernel
def mdav_brute_kernel(X, k, classic, budget, split):
    """mdav_kernel by vectorised brute force: the same labels, bit for bit (same distances, same
    selections, same running sums), with the records as columns, the farthest record from the
    centroid from radial lists and about one distance pass per pair of groups instead of four
    (``_brute_pairs``). O(n²·d/k) time, O(n·d) memory. budget > 0: stop forming pairs once this
    many cycles have passed, the records not reached keep label −1 (``budget_cycles``). split:
    None, one thread (the parallel passes are not compiled); or (threads, fewest records): each
    distance pass over at least that many records split into ``threads`` ranges computed at once
    (``_distances_select_threads``; numba's threads set by the caller, ``cores.split_threads``)."""
    stop_cycle = stop_cycle_after(budget)
    n, d = X.shape
    labels = np.full(n, -1, dtype=np.int64)
    alive = np.ones(n, dtype=np.bool_)
    idx = np.arange(n)
    Xc = _columns(X, idx)
    s, comp = running_sum_init(X)
    anchors = np.empty((2, d))
    tail, prefix = radial_index(X, idx, anchors, running_mean(s, comp, n))
    work = np.zeros(2, dtype=np.int64)
    dist, ahead, keep = np.empty(n), np.empty(n), np.empty(n, dtype=np.bool_)
    pos = np.empty(k, dtype=np.int64)
    gone = np.empty(2 * k, dtype=np.int64)
    stop = 3 * k if classic else 2 * k
    m, width, g, tail, prefix, _ = _brute_pairs(
        X,
        Xc,
        idx,
        n,
        n,
        k,
        stop,
        n,
        labels,
        0,
        s,
        comp,
        dist,
        ahead,
        keep,
        pos,
        gone,
        alive,
        tail,
        prefix,
        anchors,
        work,
        stop_cycle,
        split,
    )
    if m < stop:  # not stopped by the budget
        _brute_finish(
            X, Xc, idx, m, width, k, classic, labels, g, s, comp, dist, keep, pos, gone, alive
        )
    return labels
