"""The partitioned mode's refinement moves (numba; ``microagg.partitioned.refine_labels``): exact
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
    n, d = Z.shape
    full = 2 * k - 1
    sizes, sums, start, members = group_sums(Z, labels, g)
    changed = np.zeros(g, dtype=np.bool_)  # member lists of changed groups are stale
    picked = np.zeros(g, dtype=np.int64)  # records promised to a group by the dissolve being planned
    target = np.empty(max(1, sizes.max()), dtype=np.int64)
    dissolved, migrated, total = 0, 0, 0.0
    for p in candidates:
        mp = sizes[p]
        if mp == 0:
            continue
        if not changed[p]:
            own = 0.0  # SSE of p
            for a in range(mp):
                i = members[start[p] + a]
                for t in range(d):
                    v = Z[i, t] - sums[p, t] / mp
                    own += v * v
            # plan: each record to its cheapest neighbour group with room (centroid shifts ignored)
            planned, nt = 0.0, 0
            for a in range(mp):
                i = members[start[p] + a]
                best, bq = np.inf, -1
                for b in range(nbr_start[i], nbr_start[i + 1]):
                    q = nbr[b]
                    if q == p or sizes[q] == 0 or sizes[q] + picked[q] >= full:
                        continue
                    v = join_cost(Z, i, sums, sizes, q)
                    if v < best:
                        best, bq = v, q
                if bq < 0 or planned + best - own >= -tol:
                    break
                target[nt] = bq
                nt += 1
                picked[bq] += 1
                planned += best
            for a in range(nt):
                picked[target[a]] = 0
            if nt == mp:
                # exact change: records join one after another (a group may take two of them)
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
                    dissolved += 1
                    total += delta
                    continue
                for a in range(mp):  # undo
                    i = members[start[p] + a]
                    q = target[a]
                    sizes[q] -= 1
                    for t in range(d):
                        sums[q, t] -= Z[i, t]
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
            best, bq = np.inf, -1
            for b in range(nbr_start[i], nbr_start[i + 1]):
                q = nbr[b]
                if q == p or sizes[q] == 0 or sizes[q] >= full:
                    continue
                v = join_cost(Z, i, sums, sizes, q)
                if v < best:
                    best, bq = v, q
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
    return dissolved, migrated, total
