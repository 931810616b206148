"""MDAV and V-MDAV: the plain reference loops, MDAV in numpy, and the choice of kernel
(``mdav_labels``, ``vmdav_labels``; methods/mdav.py registers the methods; mdav-mhm, icsm, lsearch
and colgen call these kernels too). The other kernels give the plain loops' labels bit for bit:
vectorised brute force (``mdav_brute``) and KD-trees with radial lists (``mdav_tree``,
``kdtree``, ``radial``); all keep the centroid of the remaining records as the same compensated
running sum (``running_sum``).

The plain kernels are O(n²·d/k) loops over a compacted copy of the remaining records; they stay
as the reference. Every kernel runs on one thread, except the brute-force distance passes over
many records when a second core is free (``threads``): issue 35 measured the former two-thread
MDAV, spinning in lock-step, 5–12× slower than one thread once two other processes held the two
cores, so the passes are split only when a probe finds a core idle (``cores``).
"""

from __future__ import annotations

import os
import time

import numpy as np

from .cores import split_threads, threads_to_use
from .cycles import budget_cycles
from .jit import in_warm_up, kernel, planned_records
from .kbest import k_smallest
from .mdav_brute import mdav_brute_kernel
from .mdav_split import SPLIT_MIN_RECORDS
from .mdav_tree import (
    SWITCH_MEASURED,
    SWITCH_NEVER,
    mdav_tree_kernel,
    vmdav_tree_kernel,
)
from .nearest import (
    argmax_first,
    compact,
    join_nearest_centroid,
    mean_rows,
    sqdist,
    sqdist_to_point,
)
from .running_sum import running_mean, running_sum_add, running_sum_init

TREE_MIN_N = 3000  # V-MDAV's algorithm='auto' switches to the tree from this many records on
# measured: 32-64 beat 8-12 on census-like and Gaussian data (leaf scans are cheap, node visits are
# not)
LEAF_SIZE = 32
# : algorithm='auto' runs brute force alone up to this many records (planned:
# ``jit.planned_records``):
#: there it costs at most about 0.1 s whatever the data (measured at 10^4: Gaussian 10-d 0.07 s
#: against 0.19 s for the tree, census-like 0.09 s against 0.10 s), and a first run compiles only it
BRUTE_MAX_N = 10_000
#: up to this many records, MDAV runs in numpy (``mdav_numpy``) while the brute-force kernel is not
#: compiled yet: at most about 0.3 s, where compiling costs about 12 s of CPU once; from here on
#: the kernel is compiled on a first run (numpy: 0.7 s at 10^4 records, the kernel 0.07 s)
NUMPY_MAX_N = 5_000
#: from this many records (planned) MDAV's brute-force passes may run on several threads
#: (``split_for``): below, a run takes about a second or less on one thread
SPLIT_MIN_N = 100_000


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
        m, xr = _farthest_group(
            Xr, idx, m, running_mean(s, comp, m), k, dist, pos, labels, g, removed, s, comp
        )
        m, _ = _farthest_group(Xr, idx, m, xr, k, dist, pos, labels, g + 1, removed, s, comp)
        g += 2
    if classic and m >= 2 * k:
        m, _ = _farthest_group(
            Xr, idx, m, running_mean(s, comp, m), k, dist, pos, labels, g, removed, s, comp
        )
        g += 1
    if m >= k or g == 0:
        for j in range(m):
            labels[idx[j]] = g
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
        """The record farthest from point and its k − 1 nearest become group g: (positions,
        record)."""
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
# : (``groups.median_split_labels``: measured 1.2 s on 10^6 × 13 Gaussian records, 0.9e-7 s per
# value;
#: with the pipeline's steps after the method, 1.9 s over a 20 s limit at 10^6 × 10)
UNREACHED_SECONDS_PER_VALUE = 1.5e-7


def _mdav_budget(seconds, n, d) -> int:
    """The cycle budget of an MDAV kernel that must stop within ``seconds`` (None: 0, unbounded)
    and then leave time to group up to n × d unreached values (``cycles.budget_cycles``). A warm-up
    on a sample (``jit.warming_up``) runs unbounded: the budget's type is the same, and measuring
    the counter's rate (10 ms, and its own kernel loaded) is left to a run that has a limit."""
    if seconds is None or in_warm_up():
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


def mdav_labels(X, k, classic=True, algorithm="auto", seconds=None, threads=1):
    """MDAV labels with the kernel ``algorithm`` selects; every kernel gives the same labels.
    'plain': the reference loop; 'brute': vectorised brute force; 'numpy': the same in numpy;
    'tree': KD-trees throughout; 'auto': brute force up to BRUTE_MAX_N records (planned,
    ``jit.planned_records``; in numpy up to NUMPY_MAX_N while the brute-force kernel is not
    compiled yet, which would cost far more than the run), else the tree switching to brute force
    when that is measured cheaper. ``seconds``: the brute-force and tree kernels stop forming
    groups then (``budget_cycles``), and the records they did not reach keep label −1
    (``group_unreached``); the plain and numpy loops run to completion. ``threads``: 1 runs on one
    thread; None splits the work over the cores a probe finds idle (``split_for``) from
    SPLIT_MIN_N records on, and runs on one thread exactly as threads=1 does when it finds none;
    a number, over that many threads."""
    if algorithm == "plain":
        return mdav_kernel(X, k, classic)
    planned = planned_records(len(X))
    if algorithm == "numpy" or (
        algorithm == "auto" and planned <= NUMPY_MAX_N and not _kernel_ready(mdav_brute_kernel)
    ):
        return mdav_numpy(X, k, classic, seconds)  # a first run on few records: nothing to compile
    budget = _mdav_budget(seconds, *X.shape)
    with split_threads(split_for(len(X), threads)) as granted:
        # from SPLIT_MIN_N records on, every run takes the split kernel, on one thread too
        # (split[0] = 1): threads=1 and a probe that finds the cores busy run the same compiled
        # code on the same arguments, and a machine idle at one run and busy at the next
        # compiles one kernel, not two
        split = (granted, SPLIT_MIN_RECORDS) if planned >= SPLIT_MIN_N else None
        if algorithm == "brute" or (algorithm == "auto" and planned <= BRUTE_MAX_N):
            return mdav_brute_kernel(X, k, classic, budget, split)
        return mdav_tree_kernel(
            X,
            k,
            classic,
            LEAF_SIZE,
            SWITCH_MEASURED if algorithm == "auto" else SWITCH_NEVER,
            budget,
            split,
        )


def split_for(n, threads=None) -> int:
    """The threads MDAV's passes run on for n records: 1 below SPLIT_MIN_N (planned) or with
    threads=1; else ``threads``, or with None the cores the probe finds idle
    (``cores.threads_to_use``)."""
    if threads == 1 or planned_records(n) < SPLIT_MIN_N:
        return 1
    return threads_to_use(threads)


def vmdav_labels(X, k, gamma, global_centroid=False, algorithm="auto", seconds=None):
    """V-MDAV labels: 'plain' the reference loop, 'tree' the KD-tree version (the same labels),
    'auto' the tree from TREE_MIN_N records on (planned, ``jit.planned_records``). ``seconds``:
    as for mdav_labels (the tree kernel only)."""
    if algorithm == "tree" or (algorithm == "auto" and planned_records(len(X)) >= TREE_MIN_N):
        return vmdav_tree_kernel(
            X, k, float(gamma), global_centroid, LEAF_SIZE, _mdav_budget(seconds, *X.shape)
        )
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
        sub = mdav_labels(
            np.ascontiguousarray(X[idx]), k, threads=1
        )  # numpy while its kernel is not compiled
        labels[idx] = np.where(sub == 0, b, g + sub - 1)
        g += int(sub.max())
    return labels
