"""Exact pricing by branch and bound over members (numba): from a seed, the clusters of size eta
with the most negative reduced cost rc(C) = SSE(C) − Σ_{i∈C} π_i (eq. (10) of the
column-generation paper), pruned by the completion bound and limited to the radius proved in
``microagg.kernels.pricing``'s module docstring.

``bnb_pricing`` searches seed by seed (the pricer's exact step); ``region_part_pricing`` searches
one seed's clusters inside a region and keeps, per part of the region they cover, the best
reduced cost (``methods.colgen.region``'s bound). A node S of m members is bounded, expanded
(its children's bounds, ``_expand_node``) and the search descends into its best child
(``_descend``), backtracking when the bound reaches the threshold.
"""

from __future__ import annotations

import numpy as np
from numba import types

from .jit import kernel
from .pricing import cut_penalty

__all__ = ["bnb_pricing", "region_part_pricing", "BNB_PRICING_TYPES"]

_F1, _F2, _I1 = types.float64[::1], types.float64[:, ::1], types.int64[::1]
#: The argument types of column generation's one call of ``bnb_pricing``
#: (``methods.colgen.column_pricing``), for ``jit.compile_ahead``
BNB_PRICING_TYPES = (
    *(_F2, _F1, types.int64, _I1, _I1, _I1, types.float64, types.boolean),
    *(types.int64, types.int64, types.int64, _F2, types.float64, types.int64),
    *(_F1, _I1, _I1, _F1),
)


@kernel
def _by_root_term(X, pi, eta, s, cand):
    """The candidates of seed s in order of their root completion term ‖x_i − x_s‖²/eta − π_i
    (good members first: good clusters are met early)."""
    d = X.shape[1]
    g0 = np.empty(cand.shape[0])
    for p in range(cand.shape[0]):
        acc = -pi[cand[p]]
        for t in range(d):
            diff = X[cand[p], t] - X[s, t]
            acc += diff * diff / eta
        g0[p] = acc
    return cand[np.argsort(g0)]


@kernel
def _root(X, pi, s, L, chosen, sumv, sumsq, pis, lst, ln):
    """The root node {s} at level 1, every one of the L candidates in its list."""
    chosen[0] = s
    sumsq[1] = 0.0
    for t in range(X.shape[1]):
        sumv[1, t] = X[s, t]
        sumsq[1] += X[s, t] * X[s, t]
    pis[1] = pi[s]
    for t in range(L):
        lst[1, t] = t
    ln[1] = L


@kernel
def _expand_node(X, pi, eta, knn_sum, cand, lst, ln, m, sumv, sumsq, pis, g, cb, sm2, small):
    """Branch-and-bound node S of m members (sums sumv[m], sumsq[m], pis[m]) with candidate list
    lst[m, :ln[m]] (positions in cand): fills each candidate's completion term g[m, u], the
    bound of its child cb[m, u] = rc(S) + g[u] + the r − 1 smallest later terms (r = eta − m;
    inf when too few are left), and sm2[m, u], those r − 1 minus the largest of them (to filter
    the child's own list); returns rc(S). small: scratch of eta."""
    d = X.shape[1]
    ss = 0.0
    for t in range(d):
        ss += sumv[m, t] * sumv[m, t]
    rcS = sumsq[m] - ss / m - pis[m]
    r = eta - m
    lm = ln[m]
    for u in range(lm):
        i = cand[lst[m, u]]
        acc = 0.0
        for t in range(d):
            diff = X[i, t] - sumv[m, t] / m
            acc += diff * diff
        # completion term; D_i(r−1)/(2·eta) bounds i's share of SSE(R)
        g[m, u] = (m / eta) * acc + knn_sum[i, r - 1] / (2.0 * eta) - pi[i]
    nsm = 0
    ssum = 0.0
    for u in range(lm - 1, -1, -1):
        if nsm >= r - 1:
            cb[m, u] = rcS + g[m, u] + ssum
            sm2[m, u] = ssum - small[r - 2] if r >= 2 else 0.0
        else:
            cb[m, u] = np.inf
            sm2[m, u] = 0.0
        # insert g[m, u] into the r-1 smallest
        if r - 1 > 0:
            x = g[m, u]
            if nsm < r - 1:
                q = nsm
                while q > 0 and small[q - 1] > x:
                    small[q] = small[q - 1]
                    q -= 1
                small[q] = x
                nsm += 1
                ssum += x
            elif x < small[r - 2]:
                ssum += x - small[r - 2]
                q = r - 2
                while q > 0 and small[q - 1] > x:
                    small[q] = small[q - 1]
                    q -= 1
                small[q] = x
    return rcS


@kernel
def _descend(X, pi, cand, lst, ln, m, u, sumv, sumsq, pis, g, sm2, rcS, thr, chosen):
    """Child S ∪ {i} of node S (level m, rc rcS), i = cand[lst[m, u]]: its sums at level m + 1
    and its list, the later candidates q that can still complete a cluster below thr with it:
    rcS + g[u] + g[q] + (r − 2 smallest later terms, q possibly among them: a valid, weaker
    test) < thr."""
    d = X.shape[1]
    i = cand[lst[m, u]]
    chosen[m] = i
    for t in range(d):
        sumv[m + 1, t] = sumv[m, t] + X[i, t]
    acc = 0.0
    for t in range(d):
        acc += X[i, t] * X[i, t]
    sumsq[m + 1] = sumsq[m] + acc
    pis[m + 1] = pis[m] + pi[i]
    cut_q = thr - rcS - g[m, u] - sm2[m, u]
    w = 0
    for q in range(u + 1, ln[m]):
        if g[m, q] < cut_q:
            lst[m + 1, w] = lst[m, q]
            w += 1
    ln[m + 1] = w


@kernel
def bnb_pricing(
    X,
    pi,
    eta,
    seeds,
    nbr_ptr,
    nbr_idx,
    thr,
    collect_all,
    max_cols,
    max_nodes,
    seed_nodes,
    knn_sum,
    retry_step,
    max_attempts,
    rec_min,
    cptr,
    ccut,
    cpen,
):
    """Exact pricing by branch-and-bound over members, one seed at a time.

    Seed seeds[j] is the member with the largest dual (callers rank records by π); its
    candidates nbr_idx[nbr_ptr[j]:nbr_ptr[j+1]] are the later-ranked records of its ball.
    A node S (m members) bounds its subtree by rc(S) + the sum of the r = eta − m smallest
    completion terms (m/eta)·‖x_i − x̄_S‖² + D_i(r−1)/(2·eta) − π_i (the docstring of
    ``microagg.kernels.pricing``; knn_sum[i, t] = D_i(t)); it is pruned when that is ≥ the
    threshold.
    collect_all=False: per seed, the cluster of minimum rc < thr; rec_min[i] (updated in place)
    becomes the minimum rc of the clusters found below the threshold that hold record i (the
    threshold does not tighten on a find, so every cluster below it is found). A seed
    whose search exceeds seed_nodes nodes is cut short (max_nodes only stops the call between
    seeds, so the cut never depends on where a call starts): the minimum bound over its open
    nodes (the unexplored children along the current path) is then a lower bound on the rc of
    the clusters not searched, and min(that, best rc found, threshold) bounds the rc of EVERY
    cluster of size eta whose largest-dual member is the seed (pruned nodes are ≥ the
    threshold). A cut search is then retried (up to max_attempts in all) with the lower
    threshold tau = min(thr, best found) − retry_step·4^attempt: fewer nodes are below it, and
    a retry that completes proves rc ≥ min(tau, best found). seed_lb[j] is the best of these
    bounds; seed_exact[j] says whether the first search was complete (no cluster with rc < thr
    missed); seed_tau[j] is the threshold of the search that completed (NaN if none did): then
    every cluster headed by the seed and holding record i has rc ≥ min(rec_min[i], seed_tau[j]).
    collect_all=True: every cluster with rc < thr (column enumeration); when max_cols are
    stored the threshold drops to their median rc and the ones above are discarded, so at the
    end the output holds exactly the clusters with rc < the returned threshold. A seed cut
    short by max_nodes or seed_nodes is not counted as done (to be searched again).
    Returns (members, rcs, count, seeds_done, nodes, threshold, best_rc, seed_lb, seed_exact,
    seed_tau); seeds_done < len(seeds) when max_nodes ran out (the remaining seeds were not
    searched).
    """
    d = X.shape[1]
    ns = seeds.shape[0]
    out = np.empty((max_cols, eta), dtype=np.int64)
    rcs = np.empty(max_cols)
    seed_lb = np.full(ns, np.inf)
    seed_exact = np.zeros(ns, dtype=np.bool_)
    seed_tau = np.full(ns, np.nan)
    count = 0
    nodes = 0
    best_all = np.inf
    sumv = np.empty((eta + 1, d))
    sumsq = np.empty(eta + 1)
    pis = np.empty(eta + 1)
    chosen = np.empty(eta, dtype=np.int64)  # record ids of the members by level
    nextpos = np.empty(eta + 1, dtype=np.int64)
    rcl = np.empty(eta + 1)
    seed_best = np.empty(eta, dtype=np.int64)
    small = np.empty(eta)
    hits = np.zeros(cpen.shape[0], dtype=np.int64)
    with_cuts = cpen.shape[0] > 0
    seeds_done = 0
    for j in range(ns):
        if nodes >= max_nodes:
            break
        s = seeds[j]
        a, b = nbr_ptr[j], nbr_ptr[j + 1]
        L = b - a
        if L < eta - 1:
            seed_lb[j] = thr  # no cluster of size eta here
            seed_exact[j] = True
            seeds_done += 1
            continue
        cand = _by_root_term(X, pi, eta, s, nbr_idx[a:b])
        g = np.empty((eta + 1, L))
        cb = np.empty((eta + 1, L))
        sm2 = np.empty((eta + 1, L))
        lst = np.empty((eta + 1, L), dtype=np.int64)
        ln = np.empty(eta + 1, dtype=np.int64)
        local_thr = thr
        found_seed = False
        best_seed = np.inf
        lb_seed = -np.inf
        exact_seed = False
        aborted = False
        tau = thr
        for attempt in range(max_attempts):
            local_thr = tau
            _root(X, pi, s, L, chosen, sumv, sumsq, pis, lst, ln)
            m = 1
            expand = True
            seed_start = nodes
            open_min = np.inf
            truncated = False
            while m >= 1:
                if expand:
                    expand = False
                    nodes += 1
                    rcl[m] = _expand_node(
                        X, pi, eta, knn_sum, cand, lst, ln, m, sumv, sumsq, pis, g, cb, sm2, small
                    )
                    nextpos[m] = 0
                # next child of level m
                u = nextpos[m]
                lm = ln[m]
                while u < lm and not (cb[m, u] < local_thr):
                    u += 1
                if u >= lm:
                    m -= 1
                    continue
                if nodes - seed_start >= seed_nodes or (collect_all and nodes >= max_nodes):
                    if collect_all:
                        aborted = True
                        break
                    # cut short: every unsearched cluster lies below an open child of the path
                    for lv in range(1, m + 1):
                        for q in range(nextpos[lv], ln[lv]):
                            if cb[lv, q] < open_min:
                                open_min = cb[lv, q]
                    truncated = True
                    break
                nextpos[m] = u + 1
                p = lst[m, u]
                if m == eta - 1:
                    rc = cb[m, u]  # exact at the last member (cut penalties are >= 0: added now)
                    if with_cuts:
                        chosen[m] = cand[p]
                        rc += cut_penalty(chosen, eta, cptr, ccut, cpen, hits)
                        if not (rc < local_thr):
                            continue
                    if collect_all:
                        if count == max_cols:
                            # buffer full: lower the threshold to the median and drop the rest
                            thr = np.sort(rcs[:count])[count // 2]
                            local_thr = thr
                            w = 0
                            for c in range(count):
                                if rcs[c] < thr:
                                    for q in range(eta):
                                        out[w, q] = out[c, q]
                                    rcs[w] = rcs[c]
                                    w += 1
                            count = w
                            if not (rc < thr):
                                continue
                        for q in range(m):
                            out[count, q] = chosen[q]
                        out[count, m] = cand[p]
                        rcs[count] = rc
                        count += 1
                    else:
                        # no tightening of the threshold: every cluster below it is visited, so
                        # that rec_min holds, per record, the minimum rc of those it belongs to
                        chosen[m] = cand[p]
                        for q in range(eta):
                            if rc < rec_min[chosen[q]]:
                                rec_min[chosen[q]] = rc
                        if rc < best_seed:
                            best_seed = rc
                            found_seed = True
                            for q in range(eta):
                                seed_best[q] = chosen[q]
                    if rc < best_all:
                        best_all = rc
                    continue
                _descend(
                    X, pi, cand, lst, ln, m, u, sumv, sumsq, pis, g, sm2, rcl[m], local_thr, chosen
                )
                m += 1
                expand = True
            att_lb = min(local_thr, open_min, best_seed)
            if att_lb > lb_seed:
                lb_seed = att_lb
            if aborted or not truncated:
                exact_seed = not aborted and attempt == 0
                if not aborted:
                    seed_tau[j] = local_thr
                break
            if collect_all or retry_step <= 0.0:
                break
            # cut short: prove a weaker bound tau with a smaller tree (nodes ≥ tau are pruned)
            tau = min(thr, best_seed) - retry_step * 4.0**attempt
            if tau <= lb_seed:
                break
        if aborted:
            break  # this seed is not finished: not counted as done
        if found_seed and count < max_cols:
            for q in range(eta):
                out[count, q] = seed_best[q]
            rcs[count] = best_seed
            count += 1
        seed_lb[j] = lb_seed
        if lb_seed < best_all:
            best_all = lb_seed
        seed_exact[j] = exact_seed
        seeds_done += 1
    return (
        out[:count],
        rcs[:count],
        count,
        seeds_done,
        nodes,
        thr,
        best_all,
        seed_lb,
        seed_exact,
        seed_tau,
    )


@kernel
def _set_bit(mask, pos):
    """Set bit pos of a part's mask (bit pos % 63 of word pos // 63, as region.py reads them)."""
    mask[pos // 63] |= np.int64(1) << (pos % 63)


@kernel
def _part_slot(keys, used, mask):
    """The slot of ``mask`` in the open-addressing table (keys, used; capacity a power of two):
    its own, or the empty one where it goes (the words mixed by MurmurHash3's 64-bit finaliser,
    whose high input bits reach the low output bits the slot is taken from; linear probing)."""
    cap = used.shape[0]
    h = np.uint64(0)
    for w in range(mask.shape[0]):
        h ^= (
            np.uint64(mask[w])
            + np.uint64(0x9E3779B97F4A7C15)
            + (h << np.uint64(6))
            + (h >> np.uint64(2))
        )
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xC4CEB9FE1A85EC53)
        h ^= h >> np.uint64(33)
    j = np.int64(h & np.uint64(cap - 1))
    while used[j]:
        same = True
        for w in range(mask.shape[0]):
            if keys[j, w] != mask[w]:
                same = False
                break
        if same:
            return j
        j = (j + 1) & (cap - 1)
    return j


@kernel
def _part_store(keys, vals, used, filled, mask, rc):
    """Record rc for the part ``mask`` if below its least so far; the table doubles when half
    full. Returns (keys, vals, used, filled, stored?)."""
    j = _part_slot(keys, used, mask)
    if used[j] and not (rc < vals[j]):
        return keys, vals, used, filled, False
    if not used[j]:
        used[j] = True
        keys[j] = mask
        filled += 1
    vals[j] = rc
    if 2 * filled > used.shape[0]:
        cap = 2 * used.shape[0]
        new_keys = np.zeros((cap, keys.shape[1]), dtype=np.int64)
        new_vals = np.full(cap, np.inf)
        new_used = np.zeros(cap, dtype=np.bool_)
        for old in range(used.shape[0]):
            if used[old]:
                q = _part_slot(new_keys, new_used, keys[old])
                new_used[q] = True
                new_keys[q] = keys[old]
                new_vals[q] = vals[old]
        return new_keys, new_vals, new_used, filled, True
    return keys, vals, used, filled, True


@kernel
def region_part_pricing(
    X,
    pi,
    eta,
    s,
    cand,
    position,
    thr,
    max_nodes,
    knn_sum,
    cptr,
    ccut,
    cpen,
    keys,
    vals,
    used,
    filled,
):
    """The least rc of the clusters of size eta made of seed s and candidates cand, per part (their
    intersection with a region R of records: a bit mask, bit position[i] for i in R, position −1
    outside R), for the parts where it is below thr: into the open-addressing table (keys,
    vals, used; filled entries), where the region bound (methods/colgen/region.py) needs no
    more than that least rc. So not every cluster below thr is visited: R's candidates are
    branched on before the others, so below a node's first member from outside R its part is
    fixed, and that subtree is pruned at the least rc found for the part so far (bounds and
    child lists as in bnb_pricing). s must be in R.
    Returns (keys, vals, used, filled, stored, nodes, done): the table (it grows by rehashing),
    the clusters stored (each lowered its part's value), and done False when max_nodes ran out
    (the search is then incomplete)."""
    d = X.shape[1]
    words = keys.shape[1]
    inside = position[cand] >= 0
    from_region = _by_root_term(X, pi, eta, s, cand[inside])
    nr = from_region.shape[0]
    cand = np.concatenate((from_region, _by_root_term(X, pi, eta, s, cand[~inside])))
    L = cand.shape[0]
    if L < eta - 1:
        return keys, vals, used, filled, 0, 0, True
    g = np.empty((eta + 1, L))
    cb = np.empty((eta + 1, L))
    sm2 = np.empty((eta + 1, L))
    lst = np.empty((eta + 1, L), dtype=np.int64)
    ln = np.empty(eta + 1, dtype=np.int64)
    sumv = np.empty((eta + 1, d))
    sumsq = np.empty(eta + 1)
    pis = np.empty(eta + 1)
    chosen = np.empty(eta, dtype=np.int64)
    nextpos = np.empty(eta + 1, dtype=np.int64)
    rcl = np.empty(eta + 1)
    small = np.empty(eta)
    hits = np.zeros(cpen.shape[0], dtype=np.int64)
    with_cuts = cpen.shape[0] > 0
    mask = np.zeros((eta + 1, words), dtype=np.int64)  # the part of the node at each level
    leaf_mask = np.empty(words, dtype=np.int64)
    in_region = np.zeros(eta + 1, dtype=np.int64)  # its members from R (the first ones on the path)
    part_thr = np.empty(eta + 1)  # the threshold of its children from outside R
    _set_bit(mask[1], position[s])
    in_region[1] = 1
    _root(X, pi, s, L, chosen, sumv, sumsq, pis, lst, ln)
    stored = 0
    nodes = 0
    m = 1
    expand = True
    while m >= 1:
        if expand:
            expand = False
            nodes += 1
            if nodes > max_nodes:
                return keys, vals, used, filled, stored, nodes, False
            rcl[m] = _expand_node(
                X, pi, eta, knn_sum, cand, lst, ln, m, sumv, sumsq, pis, g, cb, sm2, small
            )
            nextpos[m] = 0
            j = _part_slot(keys, used, mask[m])
            part_thr[m] = min(thr, vals[j]) if used[j] else thr
        u = nextpos[m]
        lm = ln[m]
        while u < lm and not (cb[m, u] < (thr if lst[m, u] < nr else part_thr[m])):
            u += 1
        if u >= lm:
            m -= 1
            continue
        nextpos[m] = u + 1
        p = lst[m, u]
        i = cand[p]
        limit = thr if p < nr else part_thr[m]
        if m == eta - 1:
            rc = cb[m, u]  # exact at the last member, cut penalties (>= 0) added now
            if with_cuts:
                chosen[m] = i
                rc += cut_penalty(chosen, eta, cptr, ccut, cpen, hits)
                if not (rc < limit):
                    continue
            for w in range(leaf_mask.shape[0]):
                leaf_mask[w] = mask[m, w]
            if p < nr:
                _set_bit(leaf_mask, position[i])
            keys, vals, used, filled, done = _part_store(keys, vals, used, filled, leaf_mask, rc)
            if done:
                stored += 1
                if p >= nr:  # the levels on the path that share this part
                    for lv in range(in_region[m], m + 1):
                        part_thr[lv] = min(part_thr[lv], rc)
            continue
        _descend(X, pi, cand, lst, ln, m, u, sumv, sumsq, pis, g, sm2, rcl[m], limit, chosen)
        mask[m + 1] = mask[m]
        in_region[m + 1] = in_region[m]
        if p < nr:
            _set_bit(mask[m + 1], position[i])
            in_region[m + 1] += 1
        m += 1
        expand = True
    return keys, vals, used, filled, stored, nodes, True
