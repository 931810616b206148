"""MDAV and V-MDAV kernels, each as a plain loop and as an exact KD-tree version (methods/mdav.py
registers the methods; mdav-mhm, icsm and colgen call these kernels too).

The plain kernels are O(n²·d/k) loops over a compacted copy of the remaining records; they stay
as the reference. The tree kernels (``algorithm='tree'``) return exactly the same labels: the
same distances are computed by the same arithmetic, candidates are only pruned by conservative
box bounds (``kernels.kdtree``), and ties are broken towards the lower record index everywhere
(farthest record, nearest neighbours). The centroid of the remaining records is kept as a
compensated (Neumaier) running sum in both versions, updated in the same order (the members of
each new group in order of their distance to the group's seed), so both see bit-identical
centroids; it is also more accurate than re-summing the remaining records in floating point.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import prange

from . import kdtree
from .jit import kernel
from .kbest import k_smallest
from .nearest import (
    argmax_first,
    compact,
    join_nearest_centroid,
    mean_rows,
    sqdist,
    sqdist_to_point,
)

TREE_MIN_N = 3000  # algorithm='auto' switches to the tree from this many records on
LEAF_SIZE = 32  # measured: 32-64 beat 8-12 on census-like and Gaussian data (leaf scans are cheap, node visits are not)
REBUILD_BELOW = 0.6  # rebuild the KD-tree over the alive records when fewer remain than this fraction
RADIAL_REBUILD_WORK = 32  # rebuild a radial list once scans cost this many list lengths (measured: 8 → 32
# cut the farthest-from-centroid time 5.3 s → 3.6 s on 10^6 census-like records; 1024 is worse again)
#: the outermost records' list (_radial_index); census-like 3·10^6, two threads: one list 88.5 s,
#: prefix 1/128 86.1 s, 1/32 76.4 s, 1/8 71.5 s, 1/4 70.3 s (prefix re-sorted after 8 lengths: 76.0 s)
RADIAL_PREFIX_SHARE, RADIAL_PREFIX_MIN = 1 / 4, 1024
PIPELINE_MIN_N = 100_000  # the tree kernel runs two queries per pair of groups at once from this many records on


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
    anchors[0] = c
    anchors[1] = c
    return tail, prefix


@kernel
def _farthest_from_centroid(X, tail, prefix, anchors, work, alive, c):
    """Farthest alive record from the centroid c via two radial lists: (record, tail, prefix).

    The centroid drifts slowly, so few records pass the triangle-inequality test of a list
    around a nearby anchor. The outermost records, where the farthest one lies, are kept in a
    short prefix list, re-sorted around the current centroid once its scans have cost
    RADIAL_REBUILD_WORK times its length: on clustered data the outermost cluster's records are
    nearly equidistant from an old anchor, and a scan of one long list passed over all of them at
    every query. The tail is read only when its outermost record could be farther; it is rebuilt
    (and a new prefix cut) on the same rule. work = [tail scans, prefix scans] since the rebuilds.
    """
    best_i, best_d, scanned = kdtree.radial_farthest(prefix, anchors[1], alive, c)
    work[1] += scanned
    idx, rho = tail[1], tail[2]
    j = kdtree.radial_skip_dead(tail, alive)
    if j < idx.shape[0] and (best_i < 0 or (rho[j] + np.sqrt(sqdist(c, anchors[0]))) * kdtree._UB_SCALE
                             >= np.sqrt(best_d)):
        i, dd, scanned = kdtree.radial_farthest(tail, anchors[0], alive, c)
        work[0] += scanned
        if dd > best_d or (dd == best_d and i < best_i):
            best_i, best_d = i, dd
    if work[0] > RADIAL_REBUILD_WORK * idx.shape[0] + 1000:
        tail, prefix = _radial_index(X, np.nonzero(alive)[0], anchors, c)
        work[:] = 0
    elif work[1] > RADIAL_REBUILD_WORK * prefix[1].shape[0] + 1000:
        members = prefix[1][prefix[3][0]:]
        prefix = kdtree.radial_build(X, members[alive[members]], c)
        anchors[1] = c
        work[1] = 0
    return best_i, tail, prefix


@kernel(parallel=True)
def _first_group_and_next_seed(T, F, X, xr, k, labels, g, s, comp, members, dbuf, excl, alive, stale, nstale,
                               far):
    """Two threads: group g = the k nearest to xr (from T), and far[0] = the record farthest from
    xr in F, after F has dropped the records ``stale[:nstale]`` (taken from T earlier).

    F still holds group g during the farthest query; the caller checks the answer is alive.
    """
    for task in prange(2):
        if task == 0:
            _tree_take_group(T, X, xr, k, labels, g, s, comp, members, dbuf, excl, alive)
        else:
            _delete_all(F, stale, nstale)
            far[0] = kdtree.farthest(F, xr, excl, 0)[0]


@kernel
def mdav_tree_kernel(X, k, classic, leaf_size, pipelined=False):
    """mdav_kernel with KD-trees and a radial list: the same labels, bit for bit.

    Farthest-from-centroid queries use the radial list (records sorted by distance to a nearby
    anchor), nearest-k queries a KD-tree, farthest-from-a-record queries a shell tree; both
    trees are rebuilt over the remaining records whenever their number has fallen below
    REBUILD_BELOW of the last build.

    pipelined=True runs the first group's nearest-k query and the farthest-from-r query (the
    second group's seed) on two threads: the farthest query does not wait for the first group to
    leave the shell tree. Its answer is exact unless it lies in that group (the group is the k
    nearest to r, so only with ties or very few records left); then it is asked again.
    """
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
    stale = np.empty(2 * k, dtype=np.int64)  # pipelined: records taken from T, still in F
    nstale = 0
    far = np.empty(1, dtype=np.int64)
    m = n
    g = 0
    stop = 3 * k if classic else 2 * k
    while m >= stop:
        c = running_mean(s, comp, m)
        r, tail, prefix = _farthest_from_centroid(X, tail, prefix, anchors, work, alive, c)
        xr = X[r].copy()
        if pipelined:
            _first_group_and_next_seed(T, F, X, xr, k, labels, g, s, comp, members, dbuf, excl, alive, stale,
                                       nstale, far)
            stale[:k] = members
            nstale = k
            r = far[0]
            if not alive[r]:  # the farthest record joined group g: ask again without the group
                _delete_all(F, stale, nstale)
                nstale = 0
                r, _ = kdtree.farthest(F, xr, excl, 0)
            _tree_take_group(T, X, X[r].copy(), k, labels, g + 1, s, comp, members, dbuf, excl, alive)
            stale[nstale:nstale + k] = members
            nstale += k
        else:
            _trees_take_group(T, F, X, xr, k, labels, g, s, comp, members, dbuf, excl, alive)
            r, _ = kdtree.farthest(F, xr, excl, 0)
            _trees_take_group(T, F, X, X[r].copy(), k, labels, g + 1, s, comp, members, dbuf, excl, alive)
        g += 2
        m -= 2 * k
        if m < REBUILD_BELOW * built:
            T, F = kdtree.build_pair(X, kdtree.alive_indices(T), leaf_size)
            built = m
            nstale = 0
    if classic and m >= 2 * k:
        c = running_mean(s, comp, m)
        r, tail, prefix = _farthest_from_centroid(X, tail, prefix, anchors, work, alive, c)
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
def vmdav_tree_kernel(X, k, gamma, global_centroid, leaf_size):
    """vmdav_kernel with KD-tree queries: the same labels, bit for bit.

    The record nearest to the group (smallest d_in, lowest index on ties) comes from one
    nearest-to-any-member query (kernels.kdtree.nearest_to_any).
    """
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
        r, tail, prefix = _farthest_from_centroid(X, tail, prefix, anchors, work, alive, c)
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
    if m > 0:
        join_nearest_centroid(X, labels, g)
    return labels


_PIPELINE_LOCK = threading.Lock()  # one pipelined kernel at a time; concurrent callers run the serial one


def _pipeline_usable():
    """Whether numba can run the pipelined kernel's two tasks at once, cheaply: two threads or
    more and a threading layer other than 'workqueue' (its launch costs more than the step).
    OpenMP's own default is kept: its idle thread spins briefly before sleeping, which the short
    serial parts between steps need (10^5 Gaussian records, OMP_WAIT_POLICY=PASSIVE: 3.0 s wall
    against 2.4 s; one thread 3.7 s).
    """
    import importlib

    import numba

    if numba.get_num_threads() < 2:
        return False
    try:
        return numba.threading_layer() != "workqueue"
    except ValueError:  # no parallel launch yet: find the layer numba would pick
        pass
    layer = numba.config.THREADING_LAYER
    pools = {"tbb": ("tbbpool",), "omp": ("omppool",), "workqueue": ()}.get(layer, ("tbbpool", "omppool"))
    for pool in pools:
        try:
            importlib.import_module(f"numba.np.ufunc.{pool}")
            return True
        except ImportError:
            continue
    return False


def mdav_labels(X, k, classic=True, algorithm="auto", pipelined=None):
    """MDAV labels with the kernel ``algorithm`` selects: 'plain', 'tree', or 'auto' (the tree from
    TREE_MIN_N records on); both kernels give the same labels.

    pipelined (tree only): None runs the two-thread tree kernel from PIPELINE_MIN_N records on when
    numba can (``_pipeline_usable``) and no other thread is running it; the labels are the same.
    """
    if not (algorithm == "tree" or (algorithm == "auto" and len(X) >= TREE_MIN_N)):
        return mdav_kernel(X, k, classic)
    if pipelined is None:
        pipelined = len(X) >= PIPELINE_MIN_N and _pipeline_usable()
    if pipelined and _PIPELINE_LOCK.acquire(blocking=False):
        try:
            return mdav_tree_kernel(X, k, classic, LEAF_SIZE, True)
        finally:
            _PIPELINE_LOCK.release()
    return mdav_tree_kernel(X, k, classic, LEAF_SIZE, False)


def vmdav_labels(X, k, gamma, global_centroid=False, algorithm="auto"):
    """V-MDAV labels, kernel chosen as in ``mdav_labels``."""
    if algorithm == "tree" or (algorithm == "auto" and len(X) >= TREE_MIN_N):
        return vmdav_tree_kernel(X, k, float(gamma), global_centroid, LEAF_SIZE)
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
        sub = mdav_kernel(np.ascontiguousarray(X[idx]), k, True)
        labels[idx] = np.where(sub == 0, b, g + sub - 1)
        g += int(sub.max())
    return labels
