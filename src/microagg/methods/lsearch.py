"""Neighbourhood local search: ICSM's exact moves between nearby groups only, O(n·K) per sweep.

ICSM (Mortazavi & Jalili 2015, Algorithm 3) compares every pair of groups, O(n²) per pass. Most
pairs are far apart and no move between them can lower SSE, so here each group p only tries
moves with its K nearest groups by centroid (a k-NN graph over the groups): 1-opt migrations
(Eqs. 5, 6), 2-opt exchanges (Eqs. 3, 4) and the dissolution of p into those groups; each
group applies its best move while one lowers SSE, exactly (``kernels/neighbourhood.py``).

The k-NN graph is rebuilt before every sweep from the current centroids (a scipy cKDTree over
the centroids of the non-empty groups, O(g·log g)): during a sweep centroids drift only by the
moves of that sweep and every delta is computed from the current centroids anyway, so a stale
graph only means a candidate pair is missed for one sweep, never a wrong delta. After the first
sweep only the groups near a change are visited again (a group whose own and neighbours'
members did not change has no new improving move). The search stops when a sweep changes
nothing, after ``max_sweeps`` sweeps or at the deadline (checked between slices of groups), and
returns the current partition, which is always valid (every group in k..2k−1) and never worse
than the start.
"""

from __future__ import annotations

import numpy as np

from ..kernels.neighbourhood import build_state, sweep
from ..partition import relabel, sse

# moves with |ΔSSE| below this (relative to SST) are ignored: rounding noise
REL_TOL = 1e-10
NEIGHBOURS = 8
MAX_MOVES = 4  # moves a group applies per visit before the sweep moves on
SLICE = 20_000  # groups per kernel call between two deadline checks


def _valid_start(X, labels, k):
    """Labels 0..g−1 with every group in k..2k−1: groups of 2k or more split by MDAV inside the group."""
    labels = relabel(np.asarray(labels, dtype=np.int64))
    sizes = np.bincount(labels)
    if sizes.min() < k:
        raise ValueError(f"the start partition has a group of {int(sizes.min())} records, fewer than k = {k}")
    if sizes.max() >= 2 * k:
        from .colgen import _split_oversized

        labels = relabel(_split_oversized(X, labels, k))
    return labels


def _neighbour_graph(sizes, sums, K):
    """(g, K) ids of the K groups nearest to each group's centroid (−1: none / empty group)."""
    from scipy.spatial import cKDTree

    g = len(sizes)
    alive = np.flatnonzero(sizes > 0)
    nbr = np.full((g, K), -1, dtype=np.int64)
    m = min(K + 1, len(alive))
    if m < 2:
        return nbr
    cent = sums[alive] / sizes[alive, None]
    _, near = cKDTree(cent).query(cent, k=m)
    near = alive[near]
    # drop the group itself (usually first; with duplicate centroids maybe elsewhere)
    own = near == alive[:, None]
    keep = np.where(own.any(axis=1)[:, None], ~own, np.arange(m)[None, :] < m - 1)
    nbr[alive, : m - 1] = near[keep].reshape(len(alive), m - 1)
    return nbr


def neighbourhood_search(X, k, labels, *, deadline=None, progress=None, neighbours=NEIGHBOURS,
                         max_sweeps=None, dissolve=True, trace=None):
    """Local search from the valid partition ``labels``; returns (labels 0..g'−1, stats dict).

    ``trace`` (a list) receives one dict per applied move (kind, records / group, exact delta)
    for the tests; it caps the kernel's move log at 10^6 entries.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = len(X)
    labels = _valid_start(X, labels, k)
    start_sse = sse(X, labels)
    tol = REL_TOL * max(float(np.sum((X - X.mean(axis=0)) ** 2)), 1e-300)
    g = int(labels.max()) + 1
    sizes, sums, slots, pos = build_state(X, labels, g, k)
    log = np.empty((1_000_000 if trace is not None else 0, 4))
    active = np.arange(g, dtype=np.int64)
    sweeps, moves_total, gained = 0, 0, 0.0
    stopped = "converged"
    while len(active) and (max_sweeps is None or sweeps < max_sweeps):
        nbr = _neighbour_graph(sizes, sums, neighbours)
        changed = np.zeros(g, dtype=np.bool_)
        moves = 0
        for lo in range(0, len(active), SLICE):
            if deadline is not None and deadline.expired():
                stopped = "deadline"
                break
            nlog = 0
            delta, m, nlog = sweep(X, labels, sizes, sums, slots, pos, nbr, active[lo:lo + SLICE], k, tol,
                                   MAX_MOVES, dissolve, changed, log, nlog)
            gained += delta
            moves += m
            if trace is not None:
                for kind, a, b, dl in log[:min(nlog, len(log))]:
                    trace.append({"kind": ("migrate", "exchange", "dissolve")[int(kind)], "a": int(a), "b": int(b),
                                  "delta": float(dl)})
        sweeps += 1
        moves_total += moves
        if progress is not None:
            progress("lsearch", None, f"sweep {sweeps}: {moves} moves, SSE {start_sse + gained:.6g}")
        if stopped == "deadline" or moves == 0:
            break
        # next sweep: the groups that changed and those that list a changed group as a neighbour
        touched = changed | (changed[np.maximum(nbr, 0)] & (nbr >= 0)).any(axis=1)
        touched &= sizes > 0
        active = np.flatnonzero(touched).astype(np.int64)
    out = relabel(labels)
    stats = {"sse_start": start_sse, "sse": start_sse + gained, "sweeps": sweeps, "moves": moves_total,
             "stopped": stopped, "groups": int(np.count_nonzero(sizes))}
    return out, stats
