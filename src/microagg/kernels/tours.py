"""Tours over the records (ICSM paper §4.2, MDAV-MHM and NPN-MHM): nearest point next over the
records, or over the groups of a partition with each group's records consecutive (numba)."""

from __future__ import annotations

import numpy as np

from . import kdtree
from .groups import group_stats
from .jit import kernel
from .nearest import mean_rows, sqdist

TOUR_LEAF_SIZE = 32  # records per leaf of the tree over the unvisited groups' records (as MDAV's)
#: up to this many records groups_tour scans the unplaced records instead of querying a tree: as
#: fast up to here, slower beyond (benchmarks/results/scan_or_tree.md)
TOUR_SCAN_MAX_N = 1_500


@kernel
def npn_tour(X):
    """Nearest point next: start at the record farthest from the centroid, then always the
    nearest unvisited record (ties: lowest index). O(n²·d) time, O(n·d) memory."""
    n, d = X.shape
    c = mean_rows(X, n)
    cur = 0
    best = -1.0
    for i in range(n):
        v = sqdist(X[i], c)
        if v > best:
            best, cur = v, i
    rem = np.empty(n, dtype=np.int64)  # unvisited records, kept in increasing index order
    m = 0
    for i in range(n):
        if i != cur:
            rem[m] = i
            m += 1
    tour = np.empty(n, dtype=np.int64)
    tour[0] = cur
    for step in range(1, n):
        bj, bd = 0, np.inf
        for j in range(m):
            v = sqdist(X[rem[j]], X[cur])
            if v < bd:
                bd, bj = v, j
        cur = rem[bj]
        tour[step] = cur
        for j in range(bj, m - 1):  # stable removal keeps the lowest-index tie rule
            rem[j] = rem[j + 1]
        m -= 1
    return tour


@kernel(inline="always")
def walk_group(X, members, cur, placed, tour, at):
    """Put a group's records on a tour, nearest point next from ``cur`` (a member already placed
    at tour[at - 1]); returns (last record placed, next tour position). Shared by the ICSM tour
    (``groups_tour``) and lsearch's (``neighbourhood.group_tour``)."""
    for _ in range(members.shape[0] - 1):
        bj, bd = -1, np.inf
        for a in range(members.shape[0]):
            j = members[a]
            if not placed[j]:
                v = sqdist(X[j], X[cur])
                if v < bd:
                    bd, bj = v, j
        cur = bj
        tour[at] = cur
        at += 1
        placed[cur] = True
    return cur, at


@kernel
def groups_tour(X, labels, g, formation_order, leaf_size=None):
    """A tour visiting the groups one after another, each group's records consecutively.

    ICSM §4.2 (MDAV-MHM style): start with the group holding the record farthest from the
    centroid, entering it at that record; inside a group go nearest point next; the next group
    is the unvisited group holding the record nearest to the last record placed (NPN over
    groups), entered at that record: a nearest-neighbour query on a KD-tree of the records of
    the unvisited groups (a visited group's records are deleted from it), ties to the lower
    index as a scan in index order. formation_order=True visits groups 0, 1, 2, ... instead
    (MDAV's formation order), entering each at its record nearest to the last one placed.
    O(n log n) tree building and queries on data of low intrinsic dimension (O(n·g·d) at worst),
    O(n·k·d) inside the groups, O(n·d) memory. ``leaf_size`` None (``jit.tree_leaf_size``: small
    data): the same nearest record by a scan of the unplaced ones, and no tree compiled.
    """
    n, d = X.shape
    sizes, cent, start, members = group_stats(X, labels, g)
    mean = mean_rows(X, n)
    placed = np.zeros(n, dtype=np.bool_)
    tour = np.empty(n, dtype=np.int64)
    pos = 0
    entry = 0
    best = -1.0
    if formation_order:
        for a in range(start[0], start[1]):
            v = sqdist(X[members[a]], mean)
            if v > best:
                best, entry = v, members[a]
    else:
        for i in range(n):
            v = sqdist(X[i], mean)
            if v > best:
                best, entry = v, i
    if leaf_size is not None:
        T = kdtree.build(X if not formation_order else X[:0], leaf_size)
    near = np.empty(1, dtype=np.int64)
    near_d = np.empty(1)
    excl = np.empty(1, dtype=np.int64)
    for step in range(g):
        p = labels[entry]
        # stitch group p, nearest point next from the entry record
        cur = entry
        tour[pos] = cur
        pos += 1
        placed[cur] = True
        cur, pos = walk_group(X, members[start[p] : start[p + 1]], cur, placed, tour, pos)
        if step == g - 1:
            break
        bj, bd = -1, np.inf
        if formation_order:
            q = p + 1
            for a in range(start[q], start[q + 1]):
                j = members[a]
                v = sqdist(X[j], X[cur])
                if v < bd:
                    bd, bj = v, j
        elif leaf_size is not None:
            for a in range(start[p], start[p + 1]):
                kdtree.delete(T, members[a])
            kdtree.knn(T, X[cur], 1, near, near_d, excl, 0)
            bj = near[0]
        else:  # the placed records are those of the visited groups
            for j in range(n):
                if not placed[j]:
                    v = sqdist(X[j], X[cur])
                    if v < bd:
                        bd, bj = v, j
        entry = bj
    return tour
