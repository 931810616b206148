"""The partitioned mode's refinement moves (numba; ``microagg.blocks.refine_labels``): exact
SSE-lowering 1-opt moves that repair the poor groups blocked methods leave behind, dissolving a
group into nearby groups or migrating its records one at a time, every group keeping k records
or more. A record i joining a group q of m records with centroid c_q raises the SSE by
m/(m+1)·‖x_i − c_q‖², and leaving its group p of m records lowers it by m/(m−1)·‖x_i − c_p‖²
(the centroid moves by (x_i − c)/(m ± 1)).
"""

from __future__ import annotations

import numpy as np

from .groups import group_sums
from .jit import kernel

__all__ = ["dissolve_and_migrate", "join_cost"]


@kernel
def join_cost(Z, i, sums, sizes, q):
    """SSE increase when record i joins group q: m/(m+1)·|x − c_q|²."""
    m = sizes[q]
    s = 0.0
    for t in range(Z.shape[1]):
        v = Z[i, t] - sums[q, t] / m
        s += v * v
    return m / (m + 1.0) * s


@kernel
def dissolve_and_migrate(Z, labels, g, k, candidates, nbr_start, nbr, tol):
    """Dissolve and migrate moves over the candidate groups, in order; labels updated in place.

    Dissolve: every record of group p joins one of its listed neighbour groups (the cheapest with
    room), p disappears. Migrate: a record leaves p (while p has more than k) for the cheapest
    listed group with room. "Room": fewer than 2k−1 records. A move is applied only when its exact
    SSE change is below −tol, so every group keeps at least k records and SSE only falls.
    nbr[nbr_start[i]:nbr_start[i+1]]: groups near record i (empty for non-candidates).
    Returns (groups dissolved, records migrated, SSE change).
    """
    full = 2 * k - 1
    sizes, sums, start, members = group_sums(Z, labels, g)
    changed = np.zeros(g, dtype=np.bool_)  # member lists of changed groups are stale
    picked = np.zeros(g, dtype=np.int64)  # records promised to a group by the dissolve planned
    target = np.empty(max(1, sizes.max()), dtype=np.int64)
    dissolved, migrated, total = 0, 0, 0.0
    for p in candidates:
        if sizes[p] == 0:
            continue
        if not changed[p]:
            own = _group_sse(Z, p, sizes, sums, start, members)
            planned = _plan_dissolve(
                Z, p, own, sizes, sums, start, members, nbr_start, nbr, picked, target, full, tol
            )
            if planned == sizes[p]:
                applied, delta = _dissolve(
                    Z, labels, p, own, sizes, sums, start, members, target, changed, tol
                )
                if applied:
                    dissolved += 1
                    total += delta
                    continue
        moved, change = _migrate(
            Z, labels, p, k, sizes, sums, start, members, nbr_start, nbr, picked, changed, full, tol
        )
        migrated += moved
        total += change
    return dissolved, migrated, total


@kernel
def _group_sse(Z, p, sizes, sums, start, members):
    """SSE of group p."""
    mp = sizes[p]
    own = 0.0
    for a in range(mp):
        i = members[start[p] + a]
        for t in range(Z.shape[1]):
            v = Z[i, t] - sums[p, t] / mp
            own += v * v
    return own


@kernel
def _cheapest_with_room(Z, i, p, sizes, sums, nbr_start, nbr, picked, full):
    """(cost, group) of the cheapest listed neighbour group other than p that record i can join:
    fewer than ``full`` records, counting those ``picked`` for it; (inf, −1) when none."""
    best, bq = np.inf, -1
    for b in range(nbr_start[i], nbr_start[i + 1]):
        q = nbr[b]
        if q == p or sizes[q] == 0 or sizes[q] + picked[q] >= full:
            continue
        v = join_cost(Z, i, sums, sizes, q)
        if v < best:
            best, bq = v, q
    return best, bq


@kernel
def _plan_dissolve(
    Z, p, own, sizes, sums, start, members, nbr_start, nbr, picked, target, full, tol
):
    """Each record of p to its cheapest neighbour group with room, centroid shifts ignored
    (target[:planned]), while the planned cost stays below p's own SSE by more than tol;
    returns how many records were planned (all of p's: it may be dissolved)."""
    planned, cost = 0, 0.0
    for a in range(sizes[p]):
        i = members[start[p] + a]
        best, bq = _cheapest_with_room(Z, i, p, sizes, sums, nbr_start, nbr, picked, full)
        if bq < 0 or cost + best - own >= -tol:
            break
        target[planned] = bq
        planned += 1
        picked[bq] += 1
        cost += best
    for a in range(planned):
        picked[target[a]] = 0
    return planned


@kernel
def _dissolve(Z, labels, p, own, sizes, sums, start, members, target, changed, tol):
    """Group p's records join their targets one after another (a group may take two of them):
    kept when the exact SSE change is below −tol, else undone. Returns (kept, change)."""
    mp = sizes[p]
    d = Z.shape[1]
    delta = -own
    for a in range(mp):
        i = members[start[p] + a]
        q = target[a]
        delta += join_cost(Z, i, sums, sizes, q)
        sizes[q] += 1
        for t in range(d):
            sums[q, t] += Z[i, t]
    if delta < -tol:
        for a in range(mp):
            labels[members[start[p] + a]] = target[a]
            changed[target[a]] = True
        sizes[p] = 0
        return True, delta
    for a in range(mp):  # undo
        i = members[start[p] + a]
        q = target[a]
        sizes[q] -= 1
        for t in range(d):
            sums[q, t] -= Z[i, t]
    return False, delta


@kernel
def _migrate(
    Z, labels, p, k, sizes, sums, start, members, nbr_start, nbr, picked, changed, full, tol
):
    """p's records, one at a time while p has more than k, each to its cheapest listed group with
    room when that lowers the SSE by more than tol. Returns (records migrated, SSE change)."""
    d = Z.shape[1]
    migrated, total = 0, 0.0
    for a in range(start[p], start[p + 1]):
        mp = sizes[p]
        if mp <= k:
            break
        i = members[a]
        if labels[i] != p:
            continue
        leave = 0.0
        for t in range(d):
            v = Z[i, t] - sums[p, t] / mp
            leave += v * v
        leave *= mp / (mp - 1.0)
        best, bq = _cheapest_with_room(Z, i, p, sizes, sums, nbr_start, nbr, picked, full)
        if bq >= 0 and best - leave < -tol:
            labels[i] = bq
            sizes[p] -= 1
            sizes[bq] += 1
            for t in range(d):
                sums[p, t] -= Z[i, t]
                sums[bq, t] += Z[i, t]
            changed[p] = True
            changed[bq] = True
            migrated += 1
            total += best - leave
    return migrated, total
