"""Numba kernels of the ICSM local search (Mortazavi & Jalili 2015); the tours it regroups with are
in ``tours.py``.

Every move is evaluated with exact SSE deltas computed on the fly from the records and the
cluster centroids (no (n+c)² weight matrix): memory stays O(n·d + c·d).

* R1(x, G_q, y) = |x−c_q|² − |y−c_q|² − |x−y|²/m_q: SSE change of G_q (size m_q) when x
  replaces y (ICSM Eq. 3, rewritten exactly).
* R2(x, G_q) = m_q/(m_q+1)·|x−c_q|²: x joins G_q (Eq. 5), +inf if m_q ≥ 2k−1.
* R3(G_p, x) = −m_p/(m_p−1)·|x−c_p|²: x leaves its own group G_p (Eq. 6), +inf if m_p ≤ k.

A 1-opt migration is R2 + R3, a 2-opt exchange R1 + R1 (Eq. 4), an n-opt cyclic shift a cycle
of such edges through distinct groups (Eq. 8); every one of them is exact because each group
involved changes once.
"""

from __future__ import annotations

import numpy as np

from .cycles import past, stop_cycle_after
from .groups import group_stats
from .jit import kernel
from .nearest import sqdist

MIGRATE = 0
EXCHANGE = 1


@kernel
def _pool_insert(pool_delta, pool_kind, pool_a, pool_b, count, delta, kind, a, b):
    """Keep the len(pool) most negative moves; returns the new count."""
    size = pool_delta.shape[0]
    if count < size:
        j = count
        count += 1
    else:
        j = 0
        for t in range(1, size):
            if pool_delta[t] > pool_delta[j]:
                j = t
        if pool_delta[j] <= delta:
            return count
    pool_delta[j] = delta
    pool_kind[j] = kind
    pool_a[j] = a
    pool_b[j] = b
    return count


@kernel
def simple_heuristic(X, labels, g, k, pool_size, tol, budget):
    """SimpleHeuristic (ICSM Algorithm 3): one scan for negative 2-cycles of H, then a greedy
    application of the pool that touches no group twice.

    Scans every pair of groups once: 1-opt migrations (R2 + R3, Eqs. 5, 6) and 2-opt exchanges
    (R1 + R1, Eqs. 3, 4). The pool keeps the pool_size most negative moves (the paper adds the
    first p_n it finds; the best p_n give lower SSE). labels are updated in place.
    Returns (moves applied as rows (kind, a, b, delta), number of negative moves seen):
    kind 0 moves record a to group b, kind 1 exchanges the groups of records a and b.
    budget > 0: the scan stops once this many cycles have passed (``clock.budget_cycles``) and
    the pool found so far is applied (every move in it is exact; the paper's scan just ends early).
    """
    stop_cycle = stop_cycle_after(budget)
    n, d = X.shape
    sizes, cent, start, members = group_stats(X, labels, g)
    dself = np.empty(n)
    for i in range(n):
        dself[i] = sqdist(X[i], cent[labels[i]])
    hi = 2 * k - 1
    pool_delta = np.empty(pool_size)
    pool_kind = np.empty(pool_size, dtype=np.int64)
    pool_a = np.empty(pool_size, dtype=np.int64)
    pool_b = np.empty(pool_size, dtype=np.int64)
    count = np.int64(0)  # np.int64: literal 0/kind constants would compile _pool_insert 4 times
    found = 0
    worst = 0.0  # pool threshold once full
    maxm = 0
    for p in range(g):
        if sizes[p] > maxm:
            maxm = sizes[p]
    gx = np.empty(maxm)
    gy = np.empty(maxm)
    radius = np.zeros(g)  # max distance of a member to its centroid
    for i in range(n):
        r = np.sqrt(dself[i])
        if r > radius[labels[i]]:
            radius[labels[i]] = r
    for p in range(g):
        if past(stop_cycle):
            break
        mp = sizes[p]
        rp = radius[p]
        for q in range(p + 1, g):
            mq = sizes[q]
            # skip group pairs whose moves provably cannot lower SSE (triangle inequality):
            # |x−c_q| ≥ D − r_p;  gx ≥ D² − 2·D·r_p;  |x−y| ≤ r_p + D + r_q
            rq = radius[q]
            D = np.sqrt(sqdist(cent[p], cent[q]))
            w = 1.0 / mp + 1.0 / mq
            skip_exchange = 2.0 * D * D - 2.0 * D * (rp + rq) - w * (rp + rq + D) ** 2 > 0.0
            fp = max(D - rp, 0.0)
            fq = max(D - rq, 0.0)
            skip_pq = (
                mp <= k or mq >= hi or mq / (mq + 1.0) * fp * fp - mp / (mp - 1.0) * rp * rp > 0.0
            )
            skip_qp = (
                mq <= k or mp >= hi or mp / (mp + 1.0) * fq * fq - mq / (mq - 1.0) * rq * rq > 0.0
            )
            if skip_exchange and skip_pq and skip_qp:
                continue
            for a in range(mp):
                x = members[start[p] + a]
                dq = sqdist(X[x], cent[q])
                gx[a] = dq - dself[x]
                if not skip_pq:
                    delta = mq / (mq + 1.0) * dq - mp / (mp - 1.0) * dself[x]
                    if delta < -tol:
                        found += 1
                        if count < pool_size or delta < worst:
                            count = _pool_insert(
                                pool_delta,
                                pool_kind,
                                pool_a,
                                pool_b,
                                count,
                                delta,
                                np.int64(MIGRATE),
                                x,
                                q,
                            )
                            if count == pool_size:
                                worst = pool_delta.max()
            for b in range(mq):
                y = members[start[q] + b]
                dp = sqdist(X[y], cent[p])
                gy[b] = dp - dself[y]
                if not skip_qp:
                    delta = mp / (mp + 1.0) * dp - mq / (mq - 1.0) * dself[y]
                    if delta < -tol:
                        found += 1
                        if count < pool_size or delta < worst:
                            count = _pool_insert(
                                pool_delta,
                                pool_kind,
                                pool_a,
                                pool_b,
                                count,
                                delta,
                                np.int64(MIGRATE),
                                y,
                                p,
                            )
                            if count == pool_size:
                                worst = pool_delta.max()
            # exchange (Eq. 4): R1(x, G_q, y) + R1(y, G_p, x) = gx + gy − |x−y|²·(1/mp + 1/mq)
            if skip_exchange:
                continue
            for a in range(mp):
                x = members[start[p] + a]
                for b in range(mq):
                    s = gx[a] + gy[b]
                    y = members[start[q] + b]
                    delta = s - w * sqdist(X[x], X[y])
                    if delta < -tol:
                        found += 1
                        if count < pool_size or delta < worst:
                            count = _pool_insert(
                                pool_delta,
                                pool_kind,
                                pool_a,
                                pool_b,
                                count,
                                delta,
                                np.int64(EXCHANGE),
                                x,
                                y,
                            )
                            if count == pool_size:
                                worst = pool_delta.max()
    order = np.argsort(pool_delta[:count], kind="mergesort")
    touched = np.zeros(g, dtype=np.bool_)
    applied = np.empty((count, 4))
    m = 0
    for t in order:
        a = pool_a[t]
        b = pool_b[t]
        if pool_kind[t] == MIGRATE:
            p, q = labels[a], b
        else:
            p, q = labels[a], labels[b]
        if touched[p] or touched[q]:
            continue
        touched[p] = True
        touched[q] = True
        if pool_kind[t] == MIGRATE:
            labels[a] = q
        else:
            labels[a] = q
            labels[b] = p
        applied[m, 0] = pool_kind[t]
        applied[m, 1] = a
        applied[m, 2] = b
        applied[m, 3] = pool_delta[t]
        m += 1
    return applied[:m], found


@kernel
def group_scores(X, labels, g, sizes, cent):
    """Score(G_p) of ICSM Eq. 7: Σ R1 over all edges leaving G_p's records minus Σ over edges
    entering them, in closed form. With S_pq = Σ_{x∈G_p}|x−c_q|² = SSE_p + m_p|c_p−c_q|²,
    Σ_{x∈G_p, y∈G_q} R1(x, G_q, y) = (m_q−1)·S_pq − m_p·SSE_q·(1 + 1/m_q). O(n·d + g²·d)."""
    n, d = X.shape
    gsse = np.zeros(g)
    for i in range(n):
        gsse[labels[i]] += sqdist(X[i], cent[labels[i]])
    score = np.zeros(g)
    for p in range(g):
        mp = sizes[p]
        for q in range(p + 1, g):
            mq = sizes[q]
            cc = sqdist(cent[p], cent[q])
            out_pq = (mq - 1.0) * (gsse[p] + mp * cc) - mp * gsse[q] * (1.0 + 1.0 / mq)
            out_qp = (mp - 1.0) * (gsse[q] + mq * cc) - mq * gsse[p] * (1.0 + 1.0 / mp)
            score[p] += out_pq - out_qp
            score[q] += out_qp - out_pq
    return score


@kernel
def complex_heuristic(X, labels, g, k, tol, tries, budget):
    """ComplexHeuristic (ICSM Algorithm 4): one negative cycle of the ranked acyclic graph H′.

    G_s is the group of lowest Score (Eq. 7); groups are ranked by the distance of their
    centroid to G_s's; H′ keeps the edges of Eq. 8 from lower to higher rank, so a path meets
    each group at most once and every cycle closed back into G_s is a valid cyclic shift.
    From each source (every record of G_s and the node G_s) a DAG shortest-path sweep in rank
    order (edge weights computed on the fly, O((n+g)²·d) per source, O(n + g) memory) checks
    the closing edge of every node reached. The most negative cycle found is applied.
    tries > 1 (an extension) falls back to the groups of next-lowest Score, in order, when G_s
    yields no negative cycle. labels are updated in place.
    Returns (cycle nodes in order: record i as i, group p as n + p; cycle cost); an empty
    cycle when none is negative. budget > 0: the sweeps stop once this many cycles have passed
    (checked every 256 groups of a sweep); the most negative cycle closed so far is applied.
    """
    stop_cycle = stop_cycle_after(budget)
    out_of_time = False
    n, d = X.shape
    hi = 2 * k - 1
    sizes, cent, start, members = group_stats(X, labels, g)
    dself = np.empty(n)
    for i in range(n):
        dself[i] = sqdist(X[i], cent[labels[i]])
    score = group_scores(X, labels, g, sizes, cent)
    candidates = np.argsort(score, kind="mergesort")
    distR = np.empty(n)
    predR = np.empty(n, dtype=np.int64)
    distC = np.empty(g)
    predC = np.empty(g, dtype=np.int64)
    proc = np.empty(n, dtype=np.int64)
    pg_group = np.empty(g, dtype=np.int64)
    pg_lo = np.empty(g, dtype=np.int64)
    pg_hi = np.empty(g, dtype=np.int64)
    pg_min = np.empty(g)
    glb = np.empty(g)
    tlow = np.empty(g)
    radius = np.zeros(g)
    for i in range(n):
        r = np.sqrt(dself[i])
        if r > radius[labels[i]]:
            radius[labels[i]] = r
    gdist = np.empty(g)
    best_cost = -tol
    best_cycle = np.empty(0, dtype=np.int64)
    for attempt in range(min(tries, g)):
        s = candidates[attempt]
        ms = sizes[s]
        for q in range(g):
            gdist[q] = sqdist(cent[q], cent[s])
        gdist[s] = -1.0
        rank_order = np.argsort(gdist, kind="mergesort")  # rank 0 is G_s
        for src in range(ms + 1):
            source_is_record = src < ms
            xs = members[start[s] + src] if source_is_record else -1
            for i in range(n):
                distR[i] = np.inf
            for q in range(g):
                distC[q] = np.inf
            nproc = 0
            npg = 0  # processed groups: records proc[pg_lo[t]:pg_hi[t]] of group pg_group[t]
            bestC = np.inf
            bestC_node = -1
            if source_is_record:
                distR[xs] = 0.0
                proc[0] = xs
                nproc = 1
                pg_group[0], pg_lo[0], pg_hi[0], pg_min[0] = s, 0, 1, 0.0
                npg = 1
            else:
                bestC = 0.0
                bestC_node = n + s
            for r in range(1, g):
                if r % 256 == 0 and past(stop_cycle):
                    out_of_time = True
                    break
                q = rank_order[r]
                mq = sizes[q]
                rq = radius[q]
                mq_start = start[q]
                # x reaches y ∈ G_q at distR[x] + dq − dself[y] − |x−y|²/m_q with dq = |x−c_q|²;
                # as |x−y| ≤ √dq + r_q, distR[x] + h(√dq), h(t) = t² − (t + r_q)²/m_q, bounds that
                # value + dself[y] from below for every y. Per processed group P, √dq ≥ t_P =
                # max(|c_P − c_q| − r_P, 0) and h is convex with its minimum at r_q/(m_q − 1).
                tmin = rq / (mq - 1.0) if mq > 1 else 0.0
                for t in range(npg):
                    D = np.sqrt(sqdist(cent[pg_group[t]], cent[q]))
                    tl = max(D - radius[pg_group[t]], 0.0)
                    tlow[t] = tl
                    tt = max(tl, tmin)
                    glb[t] = pg_min[t] + tt * tt - (tt + rq) ** 2 / mq
                # records of G_q: reached from a group node (R3) or from a record (R1)
                threshold = -np.inf
                for b in range(mq):
                    y = members[mq_start + b]
                    distR[y] = np.inf
                    predR[y] = -1
                    if mq > k and bestC < np.inf:
                        distR[y] = bestC - mq / (mq - 1.0) * dself[y]
                        predR[y] = bestC_node
                    if distR[y] + dself[y] > threshold:
                        threshold = distR[y] + dself[y]
                tfirst = -1
                for t in range(npg):
                    if tfirst < 0 or glb[t] < glb[tfirst]:
                        tfirst = t
                for step in range(npg):
                    # the group of lowest bound first (it sets a tight threshold), then the rest
                    t = tfirst if step == 0 else (step - 1 if step - 1 < tfirst else step)
                    if glb[t] >= threshold:
                        continue
                    for j in range(pg_lo[t], pg_hi[t]):
                        x = proc[j]
                        dqx = sqdist(X[x], cent[q])
                        e = np.sqrt(dqx) + rq
                        accx = distR[x] + dqx
                        if accx - e * e / mq >= threshold:
                            continue
                        threshold = -np.inf
                        for b in range(mq):
                            y = members[mq_start + b]
                            v = accx - dself[y] - sqdist(X[x], X[y]) / mq
                            if v < distR[y]:
                                distR[y] = v
                                predR[y] = x
                            if distR[y] + dself[y] > threshold:
                                threshold = distR[y] + dself[y]
                # the node G_q: a record joins it (R2), bound distR[x] + m_q/(m_q+1)·t_P²
                if mq < hi:
                    bv = np.inf
                    bp = -1
                    w2 = mq / (mq + 1.0)
                    for t in range(npg):
                        if pg_min[t] + w2 * tlow[t] * tlow[t] >= bv:
                            continue
                        for j in range(pg_lo[t], pg_hi[t]):
                            x = proc[j]
                            if distR[x] >= bv:
                                continue
                            v = distR[x] + w2 * sqdist(X[x], cent[q])
                            if v < bv:
                                bv, bp = v, x
                    distC[q] = bv
                    predC[q] = bp
                # closing edges back to the source (weights of H)
                end = -1
                for b in range(start[q], start[q + 1]):
                    y = members[b]
                    if distR[y] == np.inf:
                        continue
                    if source_is_record:
                        close = sqdist(X[y], cent[s]) - dself[xs] - sqdist(X[y], X[xs]) / ms
                    elif ms < hi:
                        close = ms / (ms + 1.0) * sqdist(X[y], cent[s])
                    else:
                        continue
                    if distR[y] + close < best_cost:
                        best_cost = distR[y] + close
                        end = y
                if source_is_record and ms > k and distC[q] < np.inf:
                    close = -ms / (ms - 1.0) * dself[xs]
                    if distC[q] + close < best_cost:
                        best_cost = distC[q] + close
                        end = n + q
                if end >= 0:
                    length = 0
                    v = end
                    while True:
                        length += 1
                        if v == (xs if source_is_record else n + s):
                            break
                        v = predR[v] if v < n else predC[v - n]
                    best_cycle = np.empty(length, dtype=np.int64)
                    v = end
                    for t in range(length - 1, -1, -1):
                        best_cycle[t] = v
                        if t > 0:
                            v = predR[v] if v < n else predC[v - n]
                # the nodes of G_q become available to higher ranks
                lo = nproc
                gm = np.inf
                for b in range(start[q], start[q + 1]):
                    y = members[b]
                    if distR[y] < np.inf:
                        proc[nproc] = y
                        nproc += 1
                        if distR[y] < gm:
                            gm = distR[y]
                if nproc > lo:
                    pg_group[npg], pg_lo[npg], pg_hi[npg], pg_min[npg] = q, lo, nproc, gm
                    npg += 1
                if distC[q] < bestC:
                    bestC = distC[q]
                    bestC_node = n + q
            if out_of_time:
                break
        if best_cycle.shape[0] > 0 or out_of_time:
            break
    if best_cycle.shape[0] > 0:
        old = labels.copy()
        L = best_cycle.shape[0]
        for t in range(L):
            u = best_cycle[t]
            v = best_cycle[(t + 1) % L]
            if u < n:
                labels[u] = old[v] if v < n else v - n
    return best_cycle, best_cost
