"""Brute-force distance passes over records stored as columns (d × m, ``mdav_brute._columns``):
the squared distances to one or two points, a block of BRUTE_BLOCK records at a time, fused with the
selection of the k smallest and of the largest while the block is in cache."""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .kbest import kbest_admits, kbest_insert

__all__ = ["BRUTE_BLOCK"]

# records per block of a brute-force distance pass (measured: 64 beats 512 and whole columns)
BRUTE_BLOCK = 64


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
    NaN by ``mdav_brute._mark_removed``, left out), each block selected
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
def _distances_two_select(Xc, m, p, q, out_q, k, pos, best, pos_q, best_q):
    """One pass for two points (``_block_distances_two``): for p, its k smallest in pos; for q,
    out_q[:m], its k smallest in pos_q and the first position of its largest, returned (as
    _distances_select). p's distances are selected from a block's scratch and not kept: MDAV
    needs only their k smallest, and not writing them back saves a stream to memory (measured
    on 4·10^5 Gaussian 10-d records: 1.10-1.61 -> 1.02-1.11 ms a pass on one thread)."""
    filled, filled_q, top, far = 0, 0, -np.inf, 0
    scratch = np.empty(BRUTE_BLOCK)
    for i0 in range(0, m, BRUTE_BLOCK):
        i1 = min(i0 + BRUTE_BLOCK, m)
        o, u = scratch[: i1 - i0], out_q[i0:i1]
        _block_distances_two(Xc, i0, i1, p, q, o, u)
        filled = _block_k_smallest(o, i0, k, pos, best, filled)
        filled_q = _block_k_smallest(u, i0, k, pos_q, best_q, filled_q)
        top, far = _block_farthest(u, i0, top, far)
    return far
