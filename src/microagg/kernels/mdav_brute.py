"""MDAV by vectorised brute force (``mdav_brute_kernel``): the plain loop's labels bit for bit,
with the records stored as columns so that distance passes vectorise, and about one pass over the
records per pair of groups instead of four (``_brute_pairs``)."""

from __future__ import annotations

import numpy as np
from numba import prange

from .cycles import cycles, past, stop_cycle_after
from .jit import kernel
from .kbest import kbest_admits, kbest_insert, sort_small
from .nearest import argmax_first, join_nearest_centroid
from .radial import farthest_from_centroid, radial_index
from .running_sum import running_mean, running_sum_add, running_sum_init

__all__ = ["mdav_brute_kernel", "BRUTE_BLOCK"]

# records per block of a brute-force distance pass (measured: 64 beats 512 and whole columns)
BRUTE_BLOCK = 64


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


@kernel(inline="always")
def _block_distances(Xc, i0, i1, p, o):
    """o[j] = ‖record i0 + j − p‖² for the columns i0..i1−1 of Xc: nearest.sqdist's operations in
    its order (coordinate 0 first, from 0.0), so the same bits, over the block one coordinate at a
    time, which the compiler vectorises (loops over a slice from 0: no negative index to wrap,
    measured 2.4 ns a 10-d record against 4.4 for sqdist row by row). Four coordinates per trip
    through the block (the sums in the same order): o is read and written a quarter as often
    (measured at 10^4 Gaussian 10-d records in L2: 1.77 -> 1.28 ns a record)."""
    n = i1 - i0
    d = Xc.shape[0]
    x = Xc[0, i0:i1]
    c = p[0]
    for j in range(n):
        diff = x[j] - c
        o[j] = diff * diff
    t = 1
    while t + 3 < d:
        xa, xb, xc, xd = Xc[t, i0:i1], Xc[t + 1, i0:i1], Xc[t + 2, i0:i1], Xc[t + 3, i0:i1]
        ca, cb, cc, cd = p[t], p[t + 1], p[t + 2], p[t + 3]
        for j in range(n):
            a, b, e, f = xa[j] - ca, xb[j] - cb, xc[j] - cc, xd[j] - cd
            o[j] = (((o[j] + a * a) + b * b) + e * e) + f * f
        t += 4
    while t < d:
        x = Xc[t, i0:i1]
        c = p[t]
        for j in range(n):
            diff = x[j] - c
            o[j] += diff * diff
        t += 1


@kernel(inline="always")
def _block_distances_two(Xc, i0, i1, p, q, o, u):
    """_block_distances to two points at once: o for p, u for q, each the same bits as alone.
    Above the L2 cache the pass is bound by memory (measured on 10^5 Gaussian 10-d records: 3.2
    ns a record for one point, 3.3 for two), so the second point costs little."""
    n = i1 - i0
    d = Xc.shape[0]
    x = Xc[0, i0:i1]
    cp, cq = p[0], q[0]
    for j in range(n):
        a, b = x[j] - cp, x[j] - cq
        o[j] = a * a
        u[j] = b * b
    t = 1
    while t + 1 < d:
        xa, xb = Xc[t, i0:i1], Xc[t + 1, i0:i1]
        pa, pb, qa, qb = p[t], p[t + 1], q[t], q[t + 1]
        for j in range(n):
            a, b = xa[j] - pa, xb[j] - pb
            e, f = xa[j] - qa, xb[j] - qb
            o[j] = (o[j] + a * a) + b * b
            u[j] = (u[j] + e * e) + f * f
        t += 2
    while t < d:
        x = Xc[t, i0:i1]
        cp, cq = p[t], q[t]
        for j in range(n):
            a, b = x[j] - cp, x[j] - cq
            o[j] += a * a
            u[j] += b * b
        t += 1


@kernel(inline="always")
def _block_k_smallest(o, i0, k, pos, best, filled):
    """One block's part of _select's k smallest: o holds the keys of positions i0, i0 + 1, ...;
    returns the updated count held."""
    n = o.shape[0]
    hit = filled < k
    if not hit:
        kth = best[k - 1]
        for j in range(n):
            hit |= o[j] < kth
    if hit:
        for j in range(n):
            if o[j] == o[j] and kbest_admits(best, pos, k, filled, o[j], i0 + j):  # not NaN
                filled = kbest_insert(best, pos, k, filled, o[j], i0 + j)
    return filled


@kernel(inline="always")
def _block_farthest(o, i0, top, far):
    """One block's part of _select's largest: returns the updated (top, far)."""
    n = o.shape[0]
    higher = False
    for j in range(n):
        higher |= o[j] > top
    if higher:
        for j in range(n):
            if o[j] > top:
                top, far = o[j], i0 + j
    return top, far


@kernel
def _select(dist, m, k, pos, best):
    """k_smallest and argmax_first over dist[:m] at once, NaN left out: pos[:k] the positions of
    the k smallest (ties to the lower position), returns the first position of the largest. A
    block of BRUTE_BLOCK keys is scanned one by one only if one of them beats the k-th smallest or
    the largest so far (a comparison over the block, which vectorises; NaN never beats): positions
    come in increasing order, so a later equal key never enters."""
    filled, top, far = 0, -np.inf, 0
    for i0 in range(0, m, BRUTE_BLOCK):
        o = dist[i0 : min(i0 + BRUTE_BLOCK, m)]
        filled = _block_k_smallest(o, i0, k, pos, best, filled)
        top, far = _block_farthest(o, i0, top, far)
    return far


@kernel
def _distances_select(Xc, m, p, out, k, pos, best, farthest):
    """out[:m] = the squared distances of the first m columns of Xc to p, a block of BRUTE_BLOCK
    records at a time (``_block_distances``), fused with _select (the columns of removed records,
    NaN by ``_mark_removed``, left out), each block selected
    while it is in cache (measured at 10^4 census-like records: two separate scans cost 17 µs
    beside 28 µs for the pass). farthest=False: the k smallest only (returns 0)."""
    filled, top, far = 0, -np.inf, 0
    for i0 in range(0, m, BRUTE_BLOCK):
        i1 = min(i0 + BRUTE_BLOCK, m)
        o = out[i0:i1]
        _block_distances(Xc, i0, i1, p, o)
        filled = _block_k_smallest(o, i0, k, pos, best, filled)
        if farthest:
            top, far = _block_farthest(o, i0, top, far)
    return far


@kernel
def _distances_two_select(Xc, m, p, q, out, out_q, k, pos, best, pos_q, best_q):
    """One pass for two points (``_block_distances_two``): for p, out[:m] and its k smallest in
    pos; for q, out_q[:m], its k smallest in pos_q and the first position of its largest,
    returned (as _distances_select)."""
    filled, filled_q, top, far = 0, 0, -np.inf, 0
    for i0 in range(0, m, BRUTE_BLOCK):
        i1 = min(i0 + BRUTE_BLOCK, m)
        o, u = out[i0:i1], out_q[i0:i1]
        _block_distances_two(Xc, i0, i1, p, q, o, u)
        filled = _block_k_smallest(o, i0, k, pos, best, filled)
        filled_q = _block_k_smallest(u, i0, k, pos_q, best_q, filled_q)
        top, far = _block_farthest(u, i0, top, far)
    return far


#: a distance pass over at least this many records is split into ranges, one a thread, when the
#: kernel runs with threads (``split``); below, waking a second thread costs more than it saves
SPLIT_MIN_RECORDS = 50_000


#: passes between two checks of the split passes against one thread (``_split_now``)
SPLIT_CHECK_EVERY = 128


@kernel(inline="always")
def _split_now(split, guard):
    """The split of the next timed pass. Every SPLIT_CHECK_EVERY timed passes, one is split and the
    next one is not, both timed (``_split_timed``); in between, the passes run as the faster of the
    two did. guard = [timed passes, cycles per record split, the same on one thread, 1.0 while
    splitting]. When another process takes the second core, split passes wait for it and turn
    slower than one thread's: the kernel goes on on one thread until the next check."""
    turn = int(guard[0]) % SPLIT_CHECK_EVERY
    if turn == 0 or (turn != 1 and guard[3] > 0):
        return split
    return (1, split[1])


@kernel(inline="always")
def _split_timed(guard, spent, records):
    """Record a timed pass over ``records`` records that took ``spent`` cycles (``_split_now``)."""
    turn = int(guard[0]) % SPLIT_CHECK_EVERY
    if turn == 0:
        guard[1] = spent / max(records, 1)
    elif turn == 1:
        guard[2] = spent / max(records, 1)
        guard[3] = 1.0 if guard[1] < guard[2] else 0.0
    guard[0] += 1


@kernel(inline="always")
def _split_current(split, guard):
    """The split of an untimed pass: as the last check decided."""
    return split if guard[3] > 0 else (1, split[1])


@kernel(inline="always")
def _range_two_select(Xc, i0, i1, p, q, out, out_q, k, pos, best, pos_q, best_q, parts, j):
    """_distances_two_select over the columns i0..i1−1 alone (positions absolute): the k smallest
    for p in pos[j], best[j], for q in pos_q[j], best_q[j]; their counts, q's largest and its
    position in parts[j] = (filled, filled_q, top, far)."""
    filled, filled_q, top, far = 0, 0, -np.inf, 0
    for b0 in range(i0, i1, BRUTE_BLOCK):
        b1 = min(b0 + BRUTE_BLOCK, i1)
        o, u = out[b0:b1], out_q[b0:b1]
        _block_distances_two(Xc, b0, b1, p, q, o, u)
        filled = _block_k_smallest(o, b0, k, pos[j], best[j], filled)
        filled_q = _block_k_smallest(u, b0, k, pos_q[j], best_q[j], filled_q)
        top, far = _block_farthest(u, b0, top, far)
    parts[j, 0], parts[j, 1], parts[j, 2], parts[j, 3] = filled, filled_q, top, far


@kernel(inline="always")
def _range_select(Xc, i0, i1, p, out, k, pos, best, farthest, parts, j):
    """_distances_select over the columns i0..i1−1 alone, as _range_two_select for p alone:
    parts[j] = (filled, 0, top, far)."""
    filled, top, far = 0, -np.inf, 0
    for b0 in range(i0, i1, BRUTE_BLOCK):
        b1 = min(b0 + BRUTE_BLOCK, i1)
        o = out[b0:b1]
        _block_distances(Xc, b0, b1, p, o)
        filled = _block_k_smallest(o, b0, k, pos[j], best[j], filled)
        if farthest:
            top, far = _block_farthest(o, b0, top, far)
    parts[j, 0], parts[j, 1], parts[j, 2], parts[j, 3] = filled, 0, top, far


@kernel(inline="always")
def _merge_ranges(part_pos, part_best, parts, column, k, pos, best):
    """The k smallest of the ranges' k smallest (counts in parts[:, column]), into pos and best:
    by (distance, position), as the pass over all columns keeps them (``kbest``)."""
    filled = 0
    for j in range(parts.shape[0]):
        for e in range(int(parts[j, column])):
            if kbest_admits(best, pos, k, filled, part_best[j, e], part_pos[j, e]):
                filled = kbest_insert(best, pos, k, filled, part_best[j, e], part_pos[j, e])


@kernel(inline="always")
def _farthest_of_ranges(parts):
    """The first position of the largest distance over the ranges (the earlier range on ties)."""
    top, far = -np.inf, 0
    for j in range(parts.shape[0]):
        if parts[j, 2] > top:
            top, far = parts[j, 2], int(parts[j, 3])
    return far


@kernel(inline="always")
def _range_step(m, threads):
    """Columns per range: m split into ``threads`` ranges of whole blocks."""
    blocks = (m + BRUTE_BLOCK - 1) // BRUTE_BLOCK
    return (blocks + threads - 1) // threads * BRUTE_BLOCK


@kernel(parallel=True)
def _distances_select_threads(Xc, m, p, out, k, pos, best, farthest, split):
    """_distances_select, the columns split into ``threads`` ranges computed at once (numba's
    threading layer, one range a thread), each range's k smallest and largest merged after: the
    same distances (each one computed alone, by the same operations) and the same selections.
    split = (threads, fewest columns to split): fewer columns, one thread."""
    threads, fewest = split
    if threads < 2 or m < fewest:
        return _distances_select(Xc, m, p, out, k, pos, best, farthest)
    step = _range_step(m, threads)
    ranges = (m + step - 1) // step
    part_pos, part_best = np.empty((ranges, k), dtype=np.int64), np.empty((ranges, k))
    parts = np.empty((ranges, 4))
    for j in prange(ranges):
        _range_select(
            Xc,
            j * step,
            min(j * step + step, m),
            p,
            out,
            k,
            part_pos,
            part_best,
            farthest,
            parts,
            j,
        )
    _merge_ranges(part_pos, part_best, parts, 0, k, pos, best)
    return _farthest_of_ranges(parts) if farthest else 0


@kernel(parallel=True)
def _distances_two_select_threads(Xc, m, p, q, out, out_q, k, pos, best, pos_q, best_q, split):
    """_distances_two_select split as _distances_select_threads."""
    threads, fewest = split
    if threads < 2 or m < fewest:
        return _distances_two_select(Xc, m, p, q, out, out_q, k, pos, best, pos_q, best_q)
    step = _range_step(m, threads)
    ranges = (m + step - 1) // step
    part_pos, part_best = np.empty((ranges, k), dtype=np.int64), np.empty((ranges, k))
    part_pos_q, part_best_q = np.empty((ranges, k), dtype=np.int64), np.empty((ranges, k))
    parts = np.empty((ranges, 4))
    for j in prange(ranges):
        _range_two_select(
            Xc,
            j * step,
            min(j * step + step, m),
            p,
            q,
            out,
            out_q,
            k,
            part_pos,
            part_best,
            part_pos_q,
            part_best_q,
            parts,
            j,
        )
    _merge_ranges(part_pos, part_best, parts, 0, k, pos, best)
    _merge_ranges(part_pos_q, part_best_q, parts, 1, k, pos_q, best_q)
    return _farthest_of_ranges(parts)


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
    guard = np.array([0.0, 0.0, 0.0, 1.0])  # split passes against one thread (``_split_now``)
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
                    Xc, width, xs, X[guess], dist, ahead, k, pos, best, pos_q, best_q
                )
            else:
                _distances_select(
                    Xc, width, xs, dist, k, pos, best, False
                )  # r's group is NaN: left out
        elif guess >= 0:  # the pass nearly every pair makes: timed against one thread now and then
            now, tic = _split_now(split, guard), cycles()
            far_q = _distances_two_select_threads(
                Xc, width, xs, X[guess], dist, ahead, k, pos, best, pos_q, best_q, now
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
