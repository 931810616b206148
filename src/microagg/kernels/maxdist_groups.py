"""Kernels of multivariate fixed-size microaggregation (data-oriented paper, Algorithm 2; the method
``md`` is registered in methods/maxdist.py).

Groups are formed in pairs around the two most distant remaining records x_r, x_s. The exact
farthest pair is found lazily from a farthest-partner pointer per record (stale distances are
upper bounds; only the top entry is rescanned). The plain kernel scans every record for each
query (O(n²·d/k)); the tree kernel (``algorithm='tree'``) returns the same labels with a max-heap
of the farthest-partner distances, farthest partners from a shell tree and group growth by
nearest-neighbour queries on a KD-tree with deletions (kernels.kdtree). Memory O(n·d).
"""

from __future__ import annotations

import numpy as np

from . import kdtree
from .jit import kernel
from .kbest import kbest_admits, kbest_insert
from .nearest import sqdist

LEAF_SIZE = 32


@kernel
def _farthest(X, alive, i):
    n = X.shape[0]
    best, bd = np.int64(-1), -1.0  # np.int64: a literal -1 would compile callers twice
    for j in range(n):
        if alive[j] and j != i:
            dd = sqdist(X[i], X[j])
            if dd > bd:
                bd, best = dd, j
    return best, bd


@kernel
def _farthest_alive(X, alive, i, F, excl):
    """_farthest through the shell tree F (same answer: lowest index among the farthest); a full
    scan when F is None (numba then prunes the tree branch: the tree is compiled only if used)."""
    if F is not None:
        excl[0] = i
        return kdtree.farthest(F, X[i], excl, 1)
    return _farthest(X, alive, i)


@kernel(inline="always")
def _before(fard, a, b):
    """Heap order: larger farthest-partner distance first, lower index on ties."""
    return fard[a] > fard[b] or (fard[a] == fard[b] and a < b)


@kernel
def _sift_down(heap, size, fard, j):
    while True:
        c = 2 * j + 1
        if c >= size:
            return
        if c + 1 < size and _before(fard, heap[c + 1], heap[c]):
            c += 1
        if not _before(fard, heap[c], heap[j]):
            return
        heap[j], heap[c] = heap[c], heap[j]
        j = c


@kernel
def _heap_of(fard):
    """Max-heap of all record indices ordered by _before."""
    n = fard.shape[0]
    heap = np.arange(n)
    for j in range(n // 2 - 1, -1, -1):
        _sift_down(heap, n, fard, j)
    return heap


@kernel
def _farthest_pair_heap(X, alive, far, fard, F, excl, heap, size):
    """_farthest_pair with the max-heap of fard: dead records are dropped from the top, a stale
    top entry gets its partner recomputed and sinks in place. Returns (r, new heap size)."""
    while True:
        r = heap[0]
        if not alive[r]:
            size -= 1
            heap[0] = heap[size]
            _sift_down(heap, size, fard, 0)
            continue
        if alive[far[r]]:
            return r, size
        far[r], fard[r] = _farthest_alive(X, alive, r, F, excl)
        _sift_down(heap, size, fard, 0)


@kernel
def _farthest_pair(X, alive, far, fard, T, excl):
    """One end r of the most distant alive pair (r, far[r]).

    fard[i] is i's distance to its farthest partner when last computed; removals only lower the
    true value, so stale entries are upper bounds. The largest entry whose partner is still
    alive is therefore the exact maximum: rescan only the entries that reach the top (lazy).
    """
    n = X.shape[0]
    while True:
        r, best = np.int64(-1), -1.0
        for i in range(n):
            if alive[i] and fard[i] > best:
                best, r = fard[i], i
        if alive[far[r]]:
            return r
        far[r], fard[r] = _farthest_alive(X, alive, r, T, excl)


@kernel
def _grow(X, alive, seed_idx, k, by_centroid, out, T=None, excl=None, nexcl=0):
    """Group of seed_idx and k−1 more alive records, nearest to the seed or to the growing centroid.

    With a KD-tree T of the alive records, the nearest record comes from a 1-NN query that skips
    the nexcl records in excl (taken tentatively: the other group of the pair) and the group's
    own members (same record, lowest index on ties, as the scan). Around the seed
    (by_centroid False) the k−1 nearest are one k-best selection (kernels/kbest.py): the same
    records, in the same order, as k−1 successive nearest-record scans.
    """
    n, d = X.shape
    out[0] = seed_idx
    c = X[seed_idx].copy()
    if not by_centroid and k > 1:  # the k−1 nearest to the seed by (distance, index): one selection
        near_d = np.empty(k - 1)
        if T is not None:
            skip = np.empty(nexcl + 1, dtype=np.int64)
            skip[:nexcl] = excl[:nexcl]
            skip[nexcl] = seed_idx
            kdtree.knn(T, c, k - 1, out[1:], near_d, skip, nexcl + 1)
            return out
        filled = 0
        for j in range(n):
            if alive[j] and j != seed_idx:
                dd = sqdist(X[j], c)
                if kbest_admits(near_d, out[1:], k - 1, filled, dd, j):
                    filled = kbest_insert(near_d, out[1:], k - 1, filled, dd, j)
        return out
    if T is not None:
        skip = np.empty(nexcl + k, dtype=np.int64)
        skip[:nexcl] = excl[:nexcl]
        one_i = np.empty(1, dtype=np.int64)
        one_d = np.empty(1)
        for size in range(1, k):
            skip[nexcl + size - 1] = out[size - 1]
            kdtree.knn(T, c, 1, one_i, one_d, skip, nexcl + size)
            best = one_i[0]
            out[size] = best
            if by_centroid:
                for t in range(d):
                    c[t] += (X[best, t] - c[t]) / (size + 1)
        return out
    taken = np.zeros(n, dtype=np.bool_)
    taken[seed_idx] = True
    for size in range(1, k):
        best, bd = np.int64(-1), np.inf
        for j in range(n):
            if alive[j] and not taken[j]:
                dd = sqdist(X[j], c)
                if dd < bd:
                    bd, best = dd, j
        out[size] = best
        taken[best] = True
        if by_centroid:
            for t in range(d):
                c[t] += (X[best, t] - c[t]) / (size + 1)
    return out


@kernel
def _group_sse(X, members):
    d = X.shape[1]
    c = np.zeros(d)
    for i in members:
        for t in range(d):
            c[t] += X[i, t]
    c /= len(members)
    s = 0.0
    for i in members:
        s += sqdist(X[i], c)
    return s


@kernel
def _pair(X, alive, a, b, k, by_centroid, T=None, F=None):
    """Two groups, first around a then around b among the rest; returns (sse, ga, gb).
    With trees (T for nearest, F for farthest queries) a's group is excluded by lists instead."""
    ga = np.empty(k, dtype=np.int64)
    gb = np.empty(k, dtype=np.int64)
    _grow(X, alive, a, k, by_centroid, ga, T, ga, 0)
    for i in ga:
        alive[i] = False
    if not alive[b]:  # b was taken by a's group (only with ties / tiny data): next farthest
        if F is not None:
            b, _ = kdtree.farthest(F, X[a], ga, k)
        else:
            b, _ = _farthest(X, alive, a)
        alive[a] = False
    _grow(X, alive, b, k, by_centroid, gb, T, ga, k)
    for i in ga:
        alive[i] = True
    return _group_sse(X, ga) + _group_sse(X, gb), ga, gb


def md_kernel(X, k, by_centroid, both_orders, use_tree=False):
    """Algorithm 2. use_tree: the tree kernel (same labels as the plain scans, see the module
    docstring): a KD-tree for nearest and a shell tree for farthest queries, both with deletions."""
    if not use_tree:
        return _md_groups(X, k, by_centroid, both_orders)
    T, F = kdtree.build_pair(X, np.arange(len(X)), LEAF_SIZE)
    return _md_groups(X, k, by_centroid, both_orders, T, F)


@kernel
def _md_groups(X, k, by_centroid, both_orders, T=None, F=None):
    """Algorithm 2. With trees (T: KD-tree for nearest, F: shell tree for farthest queries, both
    over X), every query goes through them (exact: same records, lowest index on ties) and the
    farthest pair through a max-heap. T=F=None compiles a kernel without any tree code (numba
    prunes those branches)."""
    n, d = X.shape
    labels = np.full(n, -1, dtype=np.int64)
    alive = np.ones(n, dtype=np.bool_)
    far = np.empty(n, dtype=np.int64)
    fard = np.empty(n)
    excl = np.empty(1, dtype=np.int64)
    for i in range(n):
        far[i], fard[i] = _farthest_alive(X, alive, i, F, excl)
    heap = _heap_of(fard) if F is not None else np.empty(0, dtype=np.int64)
    size = n
    m = n
    g = 0
    while m >= 3 * k:
        if F is not None:
            r, size = _farthest_pair_heap(X, alive, far, fard, F, excl, heap, size)
        else:
            r = _farthest_pair(X, alive, far, fard, F, excl)
        s = far[r]
        sse_rs, ga, gb = _pair(X, alive, r, s, k, by_centroid, T, F)
        if both_orders:
            sse_sr, ha, hb = _pair(X, alive, s, r, k, by_centroid, T, F)
            if sse_sr < sse_rs:
                ga, gb = ha, hb
        for i in ga:
            labels[i] = g
            alive[i] = False
        for i in gb:
            labels[i] = g + 1
            alive[i] = False
        if T is not None:
            for grp in (ga, gb):
                for i in grp:
                    kdtree.delete(T, i)
                    kdtree.delete(F, i)
        g += 2
        m -= 2 * k
    # Steps 3-4: m < 3k remain. With 2k..3k-1 one more group around the farthest pair's end,
    # so that every group keeps k..2k-1 records; k..2k-1 form the last group.
    if m >= 2 * k:
        if F is not None:
            r, size = _farthest_pair_heap(X, alive, far, fard, F, excl, heap, size)
        else:
            r = _farthest_pair(X, alive, far, fard, F, excl)
        ga = np.empty(k, dtype=np.int64)
        _grow(X, alive, r, k, by_centroid, ga, T, ga, 0)
        for i in ga:
            labels[i] = g
            alive[i] = False
        g += 1
        m -= k
    for i in range(n):
        if alive[i]:
            labels[i] = g
    return labels
