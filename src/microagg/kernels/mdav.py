"""MDAV and V-MDAV kernels, each as a plain loop and as an exact KD-tree version, and MDAV by
vectorised brute force (methods/mdav.py registers the methods; mdav-mhm, icsm, lsearch and colgen
call these kernels too). Every kernel runs on one thread: a run never waits for a second thread
that another process holds (issue 35: the former two-thread MDAV, in lock-step, was 5–12× slower
than one thread once two other processes held the two cores).

The plain kernels are O(n²·d/k) loops over a compacted copy of the remaining records; they stay
as the reference. The brute-force kernel (``algorithm='brute'``) computes the same distances with
the records stored as columns, which vectorises, and reads the records about once per pair of
groups instead of four times (``_brute_pairs``). The tree kernels (``algorithm='tree'``) return
exactly the same labels: the same distances are computed by the same arithmetic, candidates are
only pruned by conservative box bounds (``kernels.kdtree``), and ties are broken towards the
lower record index everywhere (farthest record, nearest neighbours). The centroid of the
remaining records is kept as a compensated (Neumaier) running sum in both versions, updated in
the same order (the members of each new group in order of their distance to the group's seed),
so both see bit-identical centroids; it is also more accurate than re-summing the remaining
records in floating point.
"""

from __future__ import annotations

import os
import time

import numpy as np

from . import kdtree
from .cycles import budget_cycles, cycles, past, stop_cycle_after
from .jit import kernel, planned_records
from .kbest import k_smallest, kbest_admits, kbest_insert, sort_small
from .nearest import (
    argmax_first,
    compact,
    join_nearest_centroid,
    mean_rows,
    sqdist,
    sqdist_to_point,
)

TREE_MIN_N = 3000  # V-MDAV's algorithm='auto' switches to the tree from this many records on
LEAF_SIZE = 32  # measured: 32-64 beat 8-12 on census-like and Gaussian data (leaf scans are cheap, node visits are not)
REBUILD_BELOW = 0.6  # rebuild the KD-tree over the alive records when fewer remain than this fraction
RADIAL_REBUILD_WORK = 32  # rebuild a radial list once scans cost this many list lengths (measured: 8 → 32
# cut the farthest-from-centroid time 5.3 s → 3.6 s on 10^6 census-like records; 1024 is worse again)
#: the outermost records' list (_radial_index); census-like 3·10^6, two threads: one list 88.5 s,
#: prefix 1/128 86.1 s, 1/32 76.4 s, 1/8 71.5 s, 1/4 70.3 s (prefix re-sorted after 8 lengths: 76.0 s)
RADIAL_PREFIX_SHARE, RADIAL_PREFIX_MIN = 1 / 4, 1024
#: algorithm='auto' runs brute force alone up to this many records (planned: ``jit.planned_records``):
#: there it costs at most about 0.1 s whatever the data (measured at 10^4: Gaussian 10-d 0.07 s
#: against 0.19 s for the tree, census-like 0.09 s against 0.10 s), and a first run compiles only it
BRUTE_MAX_N = 10_000
BRUTE_BLOCK = 64  # records per block of a brute-force distance pass (measured: 64 beats 512 and whole columns)
#: at each tree rebuild the tree kernel runs this many pairs of groups by brute force, timed, and
#: goes on by brute force if they cost less than the tree's pairs since the last rebuild
SWITCH_TRIAL_PAIRS = 4
#: up to this many records, MDAV runs in numpy (``mdav_numpy``) while the brute-force kernel is not
#: compiled yet: at most about 0.3 s, where compiling costs about 12 s of CPU once; from here on
#: the kernel is compiled on a first run (numpy: 0.7 s at 10^4 records, the kernel 0.07 s)
NUMPY_MAX_N = 5_000
SWITCH_SKIP = 2.0  # no trial while brute force, scaled from the last trial, costs this many times the tree
SWITCH_FIRST_PAIRS = 32  # the first trial after this many pairs of groups by the tree (n/16k if fewer)
SWITCH_NEVER, SWITCH_MEASURED, SWITCH_ALWAYS, SWITCH_TRIALS = 0, 1, 2, 3  # mdav_tree_kernel's ``switch``
SWITCH_EVERY = 0.8  # then a trial each time the records left have fallen by this factor


@kernel
def running_sum_init(X):
    """Compensated column sums of X in row order: (sum, compensation)."""
    d = X.shape[1]
    s = np.zeros(d)
    comp = np.zeros(d)
    for i in range(X.shape[0]):
        running_sum_add(s, comp, X[i], 1.0)
    return s, comp


@kernel(inline="always")
def running_sum_add(s, comp, x, sign):
    """Neumaier-compensated s += sign·x, coordinate-wise (sign is +1 or -1)."""
    for t in range(s.shape[0]):
        v = sign * x[t]
        u = s[t] + v
        if abs(s[t]) >= abs(v):
            comp[t] += (s[t] - u) + v
        else:
            comp[t] += (v - u) + s[t]
        s[t] = u


@kernel
def running_mean(s, comp, m):
    c = np.empty(s.shape[0])
    for t in range(s.shape[0]):
        c[t] = (s[t] + comp[t]) / m
    return c


@kernel
def _take_group(Xr, idx, m, pos, labels, g, removed, s, comp):
    for p in pos:
        labels[idx[p]] = g
        removed[p] = True
        running_sum_add(s, comp, Xr[p], -1.0)
    return compact(Xr, idx, m, removed)


@kernel
def _farthest_group(Xr, idx, m, point, k, dist, pos, labels, g, removed, s, comp):
    """The record farthest from ``point`` and its k − 1 nearest become group g; returns the
    number of records left and the farthest record."""
    sqdist_to_point(Xr, m, point, dist)
    far = Xr[argmax_first(dist, m)].copy()
    sqdist_to_point(Xr, m, far, dist)
    k_smallest(dist, m, k, pos)
    return _take_group(Xr, idx, m, pos, labels, g, removed, s, comp), far


@kernel
def mdav_kernel(X, k, classic):
    """MDAV (ICSM Algorithm 1; Domingo-Ferrer & Torra 2005), plain O(n²·d/k) reference loop.

    classic=True: pairs of groups while >= 3k remain, then one group around the farthest
    record and one of the rest if >= 2k remain, else one group of the rest.
    classic=False: the ICSM paper's wording, pairs while >= 2k remain, a last group of k..2k-1,
    fewer than k leftovers join their nearest group.
    """
    n, d = X.shape
    labels = np.full(n, -1, dtype=np.int64)
    Xr = X.copy()
    idx = np.arange(n)
    dist = np.empty(n)
    removed = np.zeros(n, dtype=np.bool_)
    pos = np.empty(k, dtype=np.int64)
    s, comp = running_sum_init(X)
    m = n
    g = 0
    stop = 3 * k if classic else 2 * k
    while m >= stop:
        # xr: the record farthest from the centroid; then xs, the one farthest from xr
        m, xr = _farthest_group(Xr, idx, m, running_mean(s, comp, m), k, dist, pos, labels, g, removed, s, comp)
        m, _ = _farthest_group(Xr, idx, m, xr, k, dist, pos, labels, g + 1, removed, s, comp)
        g += 2
    if classic and m >= 2 * k:
        m, _ = _farthest_group(Xr, idx, m, running_mean(s, comp, m), k, dist, pos, labels, g, removed, s, comp)
        g += 1
    if m >= k or g == 0:
        for j in range(m):
            labels[idx[j]] = g
        g += 1
    elif m > 0:
        join_nearest_centroid(X, labels, g)
    return labels


@kernel
def _tree_take_group(T, X, q, k, labels, g, s, comp, members, dbuf, excl, alive):
    """The k alive records nearest to q become group g (removed from the tree and the sum)."""
    kdtree.knn(T, q, k, members, dbuf, excl, 0)
    for j in range(k):
        i = members[j]
        labels[i] = g
        alive[i] = False
        running_sum_add(s, comp, X[i], -1.0)
        kdtree.delete(T, i)


@kernel(inline="always")
def _delete_all(F, ids, count):
    """Remove the records ids[:count] from the tree F."""
    for j in range(count):
        kdtree.delete(F, ids[j])


@kernel
def _trees_take_group(T, F, X, q, k, labels, g, s, comp, members, dbuf, excl, alive):
    """_tree_take_group, the group also removed from the shell tree F."""
    _tree_take_group(T, X, q, k, labels, g, s, comp, members, dbuf, excl, alive)
    _delete_all(F, members, k)


@kernel
def _radial_index(X, members, anchors, c):
    """The radial lists around c over the records ``members``: (tail, prefix). The prefix is a
    copy of the tail's first RADIAL_PREFIX_SHARE (the outermost records, which MDAV takes next)
    and the tail starts after it. anchors[0] is the tail's anchor, anchors[1] the prefix's."""
    tail = kdtree.radial_build(X, members, c)
    Xa, idx, rho, head = tail
    size = min(idx.shape[0], max(RADIAL_PREFIX_MIN, int(idx.shape[0] * RADIAL_PREFIX_SHARE)))
    prefix = (Xa[:size].copy(), idx[:size].copy(), rho[:size].copy(), np.zeros(1, dtype=np.int64))
    head[0] = size
    for t in range(c.shape[0]):  # element-wise: a row assignment compiles numba's shape-error path (1.4 s)
        anchors[0, t] = c[t]
        anchors[1, t] = c[t]
    return tail, prefix


@kernel
def _farthest_from_centroid(X, tail, prefix, anchors, work, alive, c, skip):
    """Farthest alive record from the centroid c via two radial lists, the record ``skip`` left
    out (−1: none): (record, tail, prefix).

    The centroid drifts slowly, so few records pass the triangle-inequality test of a list
    around a nearby anchor. The outermost records, where the farthest one lies, are kept in a
    short prefix list, re-sorted around the current centroid once its scans have cost
    RADIAL_REBUILD_WORK times its length: on clustered data the outermost cluster's records are
    nearly equidistant from an old anchor, and a scan of one long list passed over all of them at
    every query. The tail is read only when its outermost record could be farther; it is rebuilt
    (and a new prefix cut) on the same rule. work = [tail scans, prefix scans] since the rebuilds.
    """
    best_i, best_d, scanned = kdtree.radial_farthest(prefix, anchors[1], alive, c, skip)
    work[1] += scanned
    idx, rho = tail[1], tail[2]
    j = kdtree.radial_skip_dead(tail, alive)
    if j < idx.shape[0] and (best_i < 0 or (rho[j] + np.sqrt(sqdist(c, anchors[0]))) * kdtree._UB_SCALE
                             >= np.sqrt(best_d)):
        i, dd, scanned = kdtree.radial_farthest(tail, anchors[0], alive, c, skip)
        work[0] += scanned
        if dd > best_d or (dd == best_d and i < best_i):
            best_i, best_d = i, dd
    if work[0] > RADIAL_REBUILD_WORK * idx.shape[0] + 1000:
        tail, prefix = _radial_index(X, np.nonzero(alive)[0], anchors, c)
        work[:] = 0
    elif work[1] > RADIAL_REBUILD_WORK * prefix[1].shape[0] + 1000:
        members = prefix[1][prefix[3][0]:]
        prefix = kdtree.radial_build(X, members[alive[members]], c)
        for t in range(c.shape[0]):
            anchors[1, t] = c[t]
        work[1] = 0
    return best_i, tail, prefix


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
        o = dist[i0:min(i0 + BRUTE_BLOCK, m)]
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
            dst = Xc[t, a - shift:b - shift]
            for i in range(b - a):
                dst[i] = src[i]
        src_i = idx[a:b]
        dst_i = idx[a - shift:b - shift]
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
def _brute_pairs(X, Xc, idx, m, width, k, stop, max_pairs, labels, g, s, comp, dist, ahead, keep, pos, gone, alive,
                 tail, prefix, anchors, work, stop_cycle):
    """mdav_kernel's pairs of groups by brute force over the columns Xc[:, :width] (the records
    idx[:width], ascending: the m remaining ones and removed ones, NaN), while at least ``stop``
    remain, at most max_pairs pairs; returns (m, width, g, tail, prefix, passes over the records).

    The record r farthest from the centroid comes from the radial lists
    (``_farthest_from_centroid``, as in the tree kernel); then two distance passes: to r (r's
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
    passes stop_cycle (> 0: the time limit, ``budget_cycles``)."""
    d = Xc.shape[0]
    xs = np.empty(d)
    cg = np.empty(d)
    best = np.empty(k)
    pos_q, best_q = np.empty(k, dtype=np.int64), np.empty(k)
    guess = -1  # the record whose distances ``ahead`` holds, or -1
    selected, far_q = False, 0  # whether pos_q, best_q and far_q hold ahead's selection
    pairs, passes = 0, 0
    removed = width - m  # columns of grouped records (NaN)
    while m >= stop and pairs < max_pairs:
        c = running_mean(s, comp, m)
        r, tail, prefix = _farthest_from_centroid(X, tail, prefix, anchors, work, alive, c, -1)
        if r == guess:
            dist, ahead = ahead, dist
            if selected:
                far = far_q
                for j in range(k):  # element-wise: an array copy compiles numba's shape-error path
                    pos[j], best[j] = pos_q[j], best_q[j]
            else:
                far = _select(dist, width, k, pos, best)
        else:
            far = _distances_select(Xc, width, X[r], dist, k, pos, best, True)
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
            guess, tail, prefix = _farthest_from_centroid(X, tail, prefix, anchors, work, alive, cg, idx[far])
        if guess >= 0:
            far_q = _distances_two_select(Xc, width, xs, X[guess], dist, ahead, k, pos, best, pos_q, best_q)
        else:
            _distances_select(Xc, width, xs, dist, k, pos, best, False)  # r's group is NaN: left out
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
def _brute_finish(X, Xc, idx, m, width, k, classic, labels, g, s, comp, dist, keep, pos, gone, alive):
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
def mdav_brute_kernel(X, k, classic, budget):
    """mdav_kernel by vectorised brute force: the same labels, bit for bit (same distances, same
    selections, same running sums), with the records as columns, the farthest record from the
    centroid from radial lists and about one distance pass per pair of groups instead of four
    (``_brute_pairs``). O(n²·d/k) time, O(n·d) memory. budget > 0: stop forming pairs once this
    many cycles have passed, the records not reached keep label −1 (``budget_cycles``)."""
    stop_cycle = stop_cycle_after(budget)
    n, d = X.shape
    labels = np.full(n, -1, dtype=np.int64)
    alive = np.ones(n, dtype=np.bool_)
    idx = np.arange(n)
    Xc = _columns(X, idx)
    s, comp = running_sum_init(X)
    anchors = np.empty((2, d))
    tail, prefix = _radial_index(X, idx, anchors, running_mean(s, comp, n))
    work = np.zeros(2, dtype=np.int64)
    dist, ahead, keep = np.empty(n), np.empty(n), np.empty(n, dtype=np.bool_)
    pos = np.empty(k, dtype=np.int64)
    gone = np.empty(2 * k, dtype=np.int64)
    stop = 3 * k if classic else 2 * k
    m, width, g, tail, prefix, _ = _brute_pairs(X, Xc, idx, n, n, k, stop, n, labels, 0, s, comp, dist, ahead, keep,
                                                pos, gone, alive, tail, prefix, anchors, work, stop_cycle)
    if m < stop:  # not stopped by the budget
        _brute_finish(X, Xc, idx, m, width, k, classic, labels, g, s, comp, dist, keep, pos, gone, alive)
    return labels


@kernel
def mdav_tree_kernel(X, k, classic, leaf_size, switch, budget):
    """mdav_kernel with KD-trees and a radial list: the same labels, bit for bit.

    Farthest-from-centroid queries use the radial list (records sorted by distance to a nearby
    anchor), nearest-k queries a KD-tree, farthest-from-a-record queries a shell tree; both
    trees are rebuilt over the remaining records whenever their number has fallen below
    REBUILD_BELOW of the last build.

    switch=SWITCH_MEASURED chooses between the tree and brute force by measured cost (cycles):
    after SWITCH_FIRST_PAIRS pairs of groups, then each time the records left have fallen by
    SWITCH_EVERY, the next SWITCH_TRIAL_PAIRS pairs are formed by brute force (``_brute_pairs``,
    the same groups) and timed; if they cost less per pass over the records (going on, brute
    force makes about one a pair) than the tree's pairs since the last trial (few dimensions
    prune well, many do not, and brute force gains as the records run out), the rest runs by
    brute force. No trial while the last trial's cost per pass, scaled to
    the records left, is SWITCH_SKIP times the tree's. SWITCH_NEVER: the tree throughout;
    SWITCH_ALWAYS / SWITCH_TRIALS: brute force from the first trial on / trials without switching
    (both for the tests: the same labels on every path). The trial's cost leaves out copying the
    records into columns, paid once if brute force goes on (counted, it doubled brute force's cost
    per pair at 3·10^4 Gaussian records and kept the tree where brute force was cheaper).

    budget > 0: no pair of groups starts once this many cycles have passed since the call; the
    records not reached keep label −1 (``budget_cycles``; the caller groups them).
    """
    stop_cycle = stop_cycle_after(budget)
    n, d = X.shape
    labels = np.full(n, -1, dtype=np.int64)
    alive = np.ones(n, dtype=np.bool_)
    T, F = kdtree.build_pair(X, np.arange(n), leaf_size)
    built = n
    s, comp = running_sum_init(X)
    anchors = np.empty((2, d))
    tail, prefix = _radial_index(X, np.arange(n), anchors, running_mean(s, comp, n))
    work = np.zeros(2, dtype=np.int64)
    members = np.empty(k, dtype=np.int64)
    dbuf = np.empty(k)
    excl = np.empty(1, dtype=np.int64)
    pos = np.empty(k, dtype=np.int64)
    gone = np.empty(2 * k, dtype=np.int64)
    m = n
    g = 0
    stop = 3 * k if classic else 2 * k
    tree_cycles, tree_pairs = 0, 0
    brute_per_record = -1.0  # the last trial's cycles per pair and remaining record
    check = n - 2 * k * max(1, min(SWITCH_FIRST_PAIRS, n // (16 * k)))  # the next trial once this many remain
    while m >= stop:
        tic = cycles()
        c = running_mean(s, comp, m)
        r, tail, prefix = _farthest_from_centroid(X, tail, prefix, anchors, work, alive, c, -1)
        xr = X[r].copy()
        _trees_take_group(T, F, X, xr, k, labels, g, s, comp, members, dbuf, excl, alive)
        r, _ = kdtree.farthest(F, xr, excl, 0)
        _trees_take_group(T, F, X, X[r].copy(), k, labels, g + 1, s, comp, members, dbuf, excl, alive)
        g += 2
        m -= 2 * k
        toc = cycles()
        tree_cycles += toc - tic
        tree_pairs += 1
        if m >= stop and stop_cycle > 0 and toc > stop_cycle:  # pairs remain: stop (else MDAV's own tail)
            return labels
        if switch != SWITCH_NEVER and m <= check and m >= stop:
            tree_cost = tree_cycles / tree_pairs
            if switch != SWITCH_MEASURED or brute_per_record < 0 or brute_per_record * m < SWITCH_SKIP * tree_cost:
                rest = kdtree.alive_indices(T)
                Xc = _columns(X, rest)
                dist, ahead, keep = np.empty(m), np.empty(m), np.empty(m, dtype=np.bool_)
                tic = cycles()
                m_after, width, g, tail, prefix, passes = _brute_pairs(X, Xc, rest, m, m, k, stop, SWITCH_TRIAL_PAIRS,
                                                                       labels, g, s, comp, dist, ahead, keep, pos,
                                                                       gone, alive, tail, prefix, anchors, work,
                                                                       stop_cycle)
                brute_cost = (cycles() - tic) / max(passes, 1)  # going on, a pass a pair (``ahead``)
                brute_per_record = brute_cost / m
                if switch == SWITCH_ALWAYS or (switch == SWITCH_MEASURED and brute_cost < tree_cost):  # brute from here
                    m, width, g, tail, prefix, _ = _brute_pairs(X, Xc, rest, m_after, width, k, stop, n, labels, g, s,
                                                                comp, dist, ahead, keep, pos, gone, alive, tail,
                                                                prefix, anchors, work, stop_cycle)
                    if m < stop:  # not stopped by the budget
                        _brute_finish(X, Xc, rest, m, width, k, classic, labels, g, s, comp, dist, keep, pos, gone,
                                      alive)
                    return labels
                for i in kdtree.alive_indices(T):  # the tree goes on without the trial's groups
                    if not alive[i]:
                        kdtree.delete(T, i)
                        kdtree.delete(F, i)
                m = m_after
                tree_cycles, tree_pairs = 0, 0
            check = int(SWITCH_EVERY * m)
        if m < REBUILD_BELOW * built:
            T, F = kdtree.build_pair(X, kdtree.alive_indices(T), leaf_size)
            built = m
    if classic and m >= 2 * k:
        c = running_mean(s, comp, m)
        r, tail, prefix = _farthest_from_centroid(X, tail, prefix, anchors, work, alive, c, -1)
        _trees_take_group(T, F, X, X[r].copy(), k, labels, g, s, comp, members, dbuf, excl, alive)
        g += 1
        m -= k
    rest = kdtree.alive_indices(T)
    if m >= k or g == 0:
        for i in rest:
            labels[i] = g
        g += 1
    elif m > 0:
        join_nearest_centroid(X, labels, g)
    return labels


@kernel
def vmdav_kernel(X, k, gamma, global_centroid):
    """V-MDAV, plain O(n²·d/k) reference loop."""
    n, d = X.shape
    labels = np.full(n, -1, dtype=np.int64)
    Xr = X.copy()
    idx = np.arange(n)
    dist = np.empty(n)
    din = np.empty(n)  # squared distance of each remaining record to the current group
    removed = np.zeros(n, dtype=np.bool_)
    pos = np.empty(k, dtype=np.int64)
    s, comp = running_sum_init(X)
    m = n
    g = 0
    c = mean_rows(Xr, m)
    while m >= k:
        if not global_centroid:
            c = running_mean(s, comp, m)
        sqdist_to_point(Xr, m, c, dist)
        r = argmax_first(dist, m)
        xr = Xr[r].copy()
        sqdist_to_point(Xr, m, xr, dist)
        k_smallest(dist, m, k, pos)
        m = _take_group(Xr, idx, m, pos, labels, g, removed, s, comp)
        for i in range(m):
            din[i] = np.inf
        members = np.empty(2 * k - 1, dtype=np.int64)
        size = 0
        for i in range(n):
            if labels[i] == g:
                members[size] = i
                size += 1
        for i in range(m):
            for q in range(size):
                dd = sqdist(Xr[i], X[members[q]])
                if dd < din[i]:
                    din[i] = dd
        # V-MDAV group extension: nearest unassigned e joins while d_in(e) < gamma·d_out(e)
        while size < 2 * k - 1 and m > 0:
            e = 0
            for i in range(1, m):
                if din[i] < din[e]:
                    e = i
            dout = np.inf
            for i in range(m):
                if i != e:
                    dd = sqdist(Xr[i], Xr[e])
                    if dd < dout:
                        dout = dd
            if not (np.sqrt(din[e]) < gamma * np.sqrt(dout)):
                break
            xe = Xr[e].copy()
            members[size] = idx[e]
            size += 1
            labels[idx[e]] = g
            removed[e] = True
            running_sum_add(s, comp, xe, -1.0)
            m2 = 0
            for i in range(m):
                if not removed[i]:
                    dd = sqdist(Xr[i], xe)
                    din[m2] = din[i] if din[i] < dd else dd
                    m2 += 1
            m = compact(Xr, idx, m, removed)
        g += 1
    if m > 0:
        join_nearest_centroid(X, labels, g)
    return labels


@kernel
def vmdav_tree_kernel(X, k, gamma, global_centroid, leaf_size, budget):
    """vmdav_kernel with KD-tree queries: the same labels, bit for bit.

    The record nearest to the group (smallest d_in, lowest index on ties) comes from one
    nearest-to-any-member query (kernels.kdtree.nearest_to_any). budget > 0: no group starts once
    this many cycles have passed; the records not reached keep label −1 (``budget_cycles``).
    """
    stop_cycle = stop_cycle_after(budget)
    n, d = X.shape
    labels = np.full(n, -1, dtype=np.int64)
    alive = np.ones(n, dtype=np.bool_)
    T = kdtree.build(X, leaf_size)
    s, comp = running_sum_init(X)
    anchors = np.empty((2, d))
    tail, prefix = _radial_index(X, np.arange(n), anchors, running_mean(s, comp, n))
    work = np.zeros(2, dtype=np.int64)
    members = np.empty(2 * k - 1, dtype=np.int64)
    dbuf = np.empty(k)
    excl = np.empty(1, dtype=np.int64)
    m = n
    g = 0
    c = mean_rows(X, n)
    while m >= k:
        if not global_centroid:
            c = running_mean(s, comp, m)
        r, tail, prefix = _farthest_from_centroid(X, tail, prefix, anchors, work, alive, c, -1)
        _tree_take_group(T, X, X[r].copy(), k, labels, g, s, comp, members, dbuf, excl, alive)
        m -= k
        size = k
        while size < 2 * k - 1 and m > 0:
            e, din = kdtree.nearest_to_any(T, X, members, size, excl, 0)
            excl[0] = e
            if m == 1:  # e is the last unassigned record: d_out = inf, as in the plain loop
                if not (np.sqrt(din) < gamma * np.sqrt(np.inf)):
                    break
            elif kdtree.has_witness(T, X[e], excl, 1, din, gamma):  # not √din < gamma·√dout
                break
            members[size] = e
            size += 1
            labels[e] = g
            alive[e] = False
            running_sum_add(s, comp, X[e], -1.0)
            kdtree.delete(T, e)
            m -= 1
        g += 1
        if m >= 2 * k and past(stop_cycle):
            return labels
    if m > 0:
        join_nearest_centroid(X, labels, g)
    return labels


def _np_running_add(s, comp, x, sign):
    """running_sum_add in numpy, coordinate-wise the same operations."""
    v = sign * x
    u = s + v
    comp += np.where(np.abs(s) >= np.abs(v), (s - u) + v, (v - u) + s)
    s[:] = u


def _np_k_smallest(dist, k):
    """k_smallest in numpy: the positions of the k smallest, by (value, position)."""
    kth = np.partition(dist, k - 1)[k - 1]
    candidates = np.flatnonzero(dist <= kth)
    return candidates[np.argsort(dist[candidates], kind="stable")[:k]]


def mdav_numpy(X, k, classic=True, seconds=None):
    """mdav_kernel in numpy: the same labels, bit for bit (the same distances, coordinate by
    coordinate from the first, the same selections and running sums), without compiling
    anything. For a first run on few records (``mdav_labels``): compiling the numba kernels
    costs about 12 s of CPU once; this costs about 0.3 s on 4,000 records and 1.2 s on 10^4
    (O(n/k) numpy calls of O(n·d) each). ``seconds``: as the kernels' budget, no group starts
    after it and the records not reached keep label −1 (``group_unreached``)."""
    reserve = UNREACHED_SECONDS_PER_VALUE * X.size
    end = None if seconds is None else time.monotonic() + max(seconds - reserve, 0.0)
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, d = X.shape
    labels = np.full(n, -1, dtype=np.int64)
    Xc = np.ascontiguousarray(X.T)
    idx = np.arange(n)
    s, comp = np.zeros(d), np.zeros(d)
    for i in range(n):
        _np_running_add(s, comp, X[i], 1.0)

    def distances(p):
        out = (Xc[0] - p[0]) ** 2
        for t in range(1, d):
            out += (Xc[t] - p[t]) ** 2
        return out

    def take(pos, g):
        labels[idx[pos]] = g
        for p in pos:
            _np_running_add(s, comp, Xc[:, p], -1.0)

    def group_around_farthest(point, g):
        """The record farthest from point and its k − 1 nearest become group g: (positions, record)."""
        far = Xc[:, int(np.argmax(distances(point)))].copy()
        dist = distances(far)
        pos = _np_k_smallest(dist, k)
        take(pos, g)
        return pos, dist

    m, g = n, 0
    stop = 3 * k if classic else 2 * k
    while m >= stop:
        pos, dist = group_around_farthest((s + comp) / m, g)
        dist[pos] = -1.0  # the farthest from r among the others, as the plain loop finds it
        xs = Xc[:, int(np.argmax(dist))].copy()
        dist = distances(xs)
        dist[pos] = np.inf
        pos2 = _np_k_smallest(dist, k)
        take(pos2, g + 1)
        keep = np.ones(m, dtype=bool)
        keep[pos] = keep[pos2] = False
        Xc, idx = Xc[:, keep], idx[keep]
        m, g = m - 2 * k, g + 2
        if end is not None and time.monotonic() >= end:  # as the kernels: after a pair of groups
            return labels
    if classic and m >= 2 * k:
        pos, _ = group_around_farthest((s + comp) / m, g)
        keep = np.ones(m, dtype=bool)
        keep[pos] = False
        Xc, idx = Xc[:, keep], idx[keep]
        m, g = m - k, g + 1
    if m >= k or g == 0:
        labels[idx] = g
    elif m > 0:  # join_nearest_centroid: centroids of the groups so far, summed in record order
        cent = np.zeros((g, d))
        done = labels >= 0
        np.add.at(cent, labels[done], X[done])
        cnt = np.bincount(labels[done], minlength=g).astype(float)
        cent /= np.maximum(cnt, 1.0)[:, None]
        for i in idx:
            dc = (X[i, 0] - cent[:, 0]) ** 2
            for t in range(1, d):
                dc += (X[i, t] - cent[:, t]) ** 2
            dc[cnt == 0] = np.inf
            labels[i] = int(np.argmin(dc))
    return labels


def _kernel_ready(dispatcher) -> bool:
    """Whether calling the numba kernel costs no compilation: loaded in this process, or in
    numba's on-disk cache (its index file is there). Where that cannot be told: True."""
    if dispatcher.signatures:
        return True
    try:
        return os.path.exists(dispatcher._cache._cache_file._index_path)
    except AttributeError:
        return True


#: seconds a time-limited MDAV keeps for grouping the records it did not reach
#: (``groups.median_split_labels``: measured 1.2 s on 10^6 × 13 Gaussian records, 0.9e-7 s per value;
#: with the pipeline's steps after the method, 1.9 s over a 20 s limit at 10^6 × 10)
UNREACHED_SECONDS_PER_VALUE = 1.5e-7


def _mdav_budget(seconds, n, d) -> int:
    """The cycle budget of an MDAV kernel that must stop within ``seconds`` (None: 0, unbounded)
    and then leave time to group up to n × d unreached values (``clock.budget_cycles``)."""
    if seconds is None:
        return 0
    return budget_cycles(max(seconds - UNREACHED_SECONDS_PER_VALUE * n * d, 0.0))


def group_unreached(X, labels, k) -> float:
    """Group the records a time-limited kernel left at −1 (``groups.median_split_labels``), in
    place; returns the share of records the kernel had grouped (1.0: none left)."""
    rest = np.flatnonzero(labels < 0)
    if len(rest) == 0:
        return 1.0
    from .groups import median_split_labels

    median_split_labels(X, rest, k, labels, int(labels.max()) + 1)
    return 1.0 - len(rest) / len(labels)


def mdav_labels(X, k, classic=True, algorithm="auto", seconds=None):
    """MDAV labels with the kernel ``algorithm`` selects; every kernel gives the same labels, on
    one thread. 'plain': the reference loop; 'brute': vectorised brute force; 'numpy': the same
    in numpy; 'tree': KD-trees throughout; 'auto': brute force up to BRUTE_MAX_N records
    (planned, ``jit.planned_records``; in numpy up to NUMPY_MAX_N while the brute-force kernel
    is not compiled yet, which would cost far more than the run), else the tree switching to
    brute force when that is measured cheaper. ``seconds``: the brute-force and tree kernels stop
    forming groups then (``budget_cycles``), and the records they did not reach keep label −1
    (``group_unreached``); the plain and numpy loops run to completion."""
    if algorithm == "plain":
        return mdav_kernel(X, k, classic)
    if algorithm == "numpy" or (algorithm == "auto" and planned_records(len(X)) <= NUMPY_MAX_N
                                and not _kernel_ready(mdav_brute_kernel)):
        return mdav_numpy(X, k, classic, seconds)  # a first run on few records: nothing to compile
    budget = _mdav_budget(seconds, *X.shape)
    if algorithm == "brute" or (algorithm == "auto" and planned_records(len(X)) <= BRUTE_MAX_N):
        return mdav_brute_kernel(X, k, classic, budget)
    return mdav_tree_kernel(X, k, classic, LEAF_SIZE, SWITCH_MEASURED if algorithm == "auto" else SWITCH_NEVER,
                            budget)


def vmdav_labels(X, k, gamma, global_centroid=False, algorithm="auto", seconds=None):
    """V-MDAV labels: 'plain' the reference loop, 'tree' the KD-tree version (the same labels),
    'auto' the tree from TREE_MIN_N records on (planned, ``jit.planned_records``). ``seconds``:
    as for mdav_labels (the tree kernel only)."""
    if algorithm == "tree" or (algorithm == "auto" and planned_records(len(X)) >= TREE_MIN_N):
        return vmdav_tree_kernel(X, k, float(gamma), global_centroid, LEAF_SIZE, _mdav_budget(seconds, *X.shape))
    return vmdav_kernel(X, k, float(gamma), global_centroid)


def split_oversized(X, labels, k):
    """Groups of 2k records or more (SRH's AddRemainingNodes, the MSTH repair and some initial
    methods make them) split by MDAV inside the group into groups of k..2k−1. Splitting never
    raises the SSE: SSE(A ∪ B) = SSE(A) + SSE(B) + |A||B|/(|A| + |B|)·‖x̄_A − x̄_B‖²."""
    sizes = np.bincount(labels)
    big = np.flatnonzero(sizes >= 2 * k)
    if len(big) == 0:
        return labels
    labels = labels.copy()
    g = len(sizes)
    for b in big:
        idx = np.flatnonzero(labels == b)
        sub = mdav_labels(np.ascontiguousarray(X[idx]), k)  # numpy while its kernel is not compiled
        labels[idx] = np.where(sub == 0, b, g + sub - 1)
        g += int(sub.max())
    return labels
