"""Pricing kernels for column generation (numba): clusters of fixed size eta with the most
negative reduced cost  rc(C) = SSE(C) − Σ_{i∈C} π_i  (eq. (10) of the column-generation paper).

Facts used throughout (x̄_S = centroid of S, m = |S|):
- rc(C) = min_z Σ_{i∈C} (‖x_i − z‖² − π_i)  (the centroid minimises the sum of squares);
- completion bound: for S ⊂ T, |T| = eta, R = T \\ S, r = |R| = eta − m,
      SSE(T) = SSE(S) + (m/eta)·Σ_{i∈R} ‖x_i − x̄_S‖² + (r/eta)·SSE(R)
  (SSE(T) = SSE(S) + SSE(R) + (m·r/eta)‖x̄_S − x̄_R‖² and Σ_{i∈R}‖x_i − x̄_S‖² = SSE(R) +
  r‖x̄_R − x̄_S‖²), and SSE(R) = (1/(2r))·Σ_{i,j∈R} ‖x_i − x_j‖² ≥ (1/(2r))·Σ_{i∈R} D_i(r−1),
  D_i(t) = the sum of the t smallest squared distances from i to other records. Hence
      rc(T) ≥ rc(S) + Σ_{i∈R} [ (m/eta)·‖x_i − x̄_S‖² + D_i(r−1)/(2·eta) − π_i ],
  minimised by the r smallest terms; with m = eta − 1 (D_i(0) = 0) it is exact;
- the same with S = ∅ and m = 0: every cluster T of size eta has
      rc(T) ≥ Σ_{i∈T} [ D_i(eta−1)/(2·eta) − π_i ];
  so π_i = D_i(k−1)/(2k) is a feasible dual of the master (9) (D_i(t)/(t+1) grows with t:
  rc ≥ 0 for every size eta ≥ k), whose value Σπ is a lower bound on the optimal SSE;
- radius: if s is the member of T with the largest dual, every i ∈ T has
      ‖x_i − x_s‖² < 2·(π_s + π_i + P_s + G)   whenever rc(T) < G, G ≥ 0
  (SSE(T) ≥ ‖x_i − c‖² + ‖x_s − c‖² ≥ ‖x_i − x_s‖²/2, and Σ_T π ≤ π_s + π_i + P_s with P_s
  the sum of the eta − 2 largest duals ranked after s, at most (eta − 2)·π_s), so the exact
  search from seed s is limited to a ball (found with a KD-tree by the caller);
- a search cut short still proves a bound: every cluster below a node S has rc ≥ the node's
  bound, so the minimum bound over the open (unexplored) nodes bounds all that was not
  searched (``bnb_pricing`` in ``microagg.kernels.pricing_bnb``).
"""

from __future__ import annotations

import numpy as np

from . import kdtree
from .cycles import past, stop_cycle_after
from .jit import kernel
from .kbest import k_smallest, sort_small
from .nearest import sqdist

#: leaf size of the KD-tree of greedy_pricing
GREEDY_LEAF = 32  # as mdav's LEAF_SIZE; 16 was slower, 64–128 no faster (eia, k = 10)
#: up to this many records greedy_pricing scans instead of querying its KD-tree (the scan is the
#: faster there: benchmarks/results/scan_or_tree.md)
GREEDY_SCAN_MAX_N = 5_000


@kernel
def column_costs(X, ptr, members):
    """SSE of each column c = members[ptr[c]:ptr[c+1]] (the cost w_C of eq. (8))."""
    ncol = ptr.shape[0] - 1
    d = X.shape[1]
    out = np.empty(ncol)
    cent = np.empty(d)
    for c in range(ncol):
        a, b = ptr[c], ptr[c + 1]
        for t in range(d):
            cent[t] = 0.0
        for p in range(a, b):
            for t in range(d):
                cent[t] += X[members[p], t]
        for t in range(d):
            cent[t] /= b - a
        s = 0.0
        for p in range(a, b):
            for t in range(d):
                diff = X[members[p], t] - cent[t]
                s += diff * diff
        out[c] = s
    return out


@kernel
def column_rcs(X, pi, ptr, members, cptr, ccut, cpen):
    """Reduced cost SSE(C) − Σ_{i∈C} π_i + (cut penalties) of each column
    c = members[ptr[c]:ptr[c+1]] (cptr/ccut/cpen as in cut_penalty)."""
    ncol = ptr.shape[0] - 1
    out = column_costs(X, ptr, members)
    hits = np.zeros(cpen.shape[0], dtype=np.int64)
    for c in range(ncol):
        a, b = ptr[c], ptr[c + 1]
        for p in range(a, b):
            out[c] -= pi[members[p]]
        if cpen.shape[0] > 0:
            out[c] += cut_penalty(members[a:b], b - a, cptr, ccut, cpen, hits)
    return out


@kernel
def cut_penalty(members, size, cptr, ccut, cpen, hits):
    """Σ of −σ_S over the subset-row cuts S (3 records each) meeting the cluster in >= 2
    records; cptr/ccut: record -> cuts (CSR), cpen[S] = −σ_S >= 0; hits: zeroed scratch."""
    pen = 0.0
    for q in range(size):
        i = members[q]
        for p in range(cptr[i], cptr[i + 1]):
            c = ccut[p]
            hits[c] += 1
            if hits[c] == 2:
                pen += cpen[c]
    for q in range(size):
        i = members[q]
        for p in range(cptr[i], cptr[i + 1]):
            hits[ccut[p]] = 0
    return pen


@kernel
def _cluster_rc(X, pi, members, size):
    d = X.shape[1]
    cent = np.zeros(d)
    ps = 0.0
    for q in range(size):
        ps += pi[members[q]]
        for t in range(d):
            cent[t] += X[members[q], t]
    for t in range(d):
        cent[t] /= size
    s = 0.0
    for q in range(size):
        for t in range(d):
            diff = X[members[q], t] - cent[t]
            s += diff * diff
    return s - ps


@kernel
def _nearest_weighted_scan(X, q, lam, w, free, members, size):
    """``kdtree.nearest_weighted`` by a scan in record order: the free record, not in
    members[1:size], minimising ‖x_i − q‖² − lam·w[i] (ties: the lowest index); -1 when none."""
    best_i, best_v = -1, np.inf
    for i in range(X.shape[0]):
        if free[i]:
            val = sqdist(X[i], q) - lam * w[i]
            if val < best_v:
                taken = False
                for a in range(1, size):
                    if members[a] == i:
                        taken = True
                        break
                if not taken:
                    best_i, best_v = i, val
    return best_i


@kernel
def greedy_pricing(X, pi, eta, thr, cptr, ccut, cpen, budget=0, leaf_size=None):
    """The paper's SolveHeuristicPricing (Section 5.1): disjoint clusters of size eta.

    Nodes in descending order of π; a cluster starts at the first unassigned node and grows
    by the unassigned w minimising Σ_{e∈[w:C]} c_e/eta − π_w/(eta − 1) (c_e squared
    distance), as written in the paper. Clusters with rc < thr are kept and their nodes leave
    U; otherwise only the start node leaves U. Returns (members (m, eta), rc (m,)).

    The paper scans every node at each step (O(n²·eta·d) per call, 4 s per round at n = 4092,
    k = 10). With m = |C| and centroid c, Σ_{u∈C} ‖x_w − x_u‖² = m‖x_w − c‖² + SSE(C), so
    the same w minimises ‖x_w − c‖² − eta/(m·(eta − 1))·π_w: a weighted nearest-neighbour
    query in a KD-tree over U (kdtree.nearest_weighted), nodes leaving U deleted from it. The
    choice is the paper's up to rounding in near-ties (its sums are formed differently).
    ``budget``: cycles (``cycles.budget_cycles``; 0: none) after which no cluster starts (a
    heuristic may stop anywhere: the clusters found so far are returned). ``leaf_size`` None
    (``jit.tree_leaf_size``: small data): the same query by a scan, and no tree compiled.
    """
    stop = stop_cycle_after(budget)
    n, d = X.shape
    order = np.argsort(-pi, kind="mergesort")
    if leaf_size is not None:
        tree = kdtree.build(X, leaf_size)
        wmax = kdtree.node_max(tree, pi)
    out = np.empty((n // eta + 1, eta), dtype=np.int64)
    rcs = np.empty(n // eta + 1)
    found = 0
    left = n
    unassigned = np.ones(n, dtype=np.bool_)
    members = np.empty(eta, dtype=np.int64)
    centre = np.empty(d)
    total = np.empty(d)
    hits = np.zeros(cpen.shape[0], dtype=np.int64)
    for v in order:
        if left < eta or past(stop):
            break
        if not unassigned[v]:
            continue
        unassigned[v] = False
        if leaf_size is not None:
            kdtree.delete(tree, v)
        left -= 1
        members[0] = v
        for t in range(d):
            total[t] = X[v, t]
        size = 1
        while size < eta:
            for t in range(d):
                centre[t] = total[t] / size
            # members[1:size] are still in the tree (unassigned): excluded from the query
            lam = eta / (size * (eta - 1.0))
            if leaf_size is not None:
                best, _ = kdtree.nearest_weighted(
                    tree, centre, lam, pi, wmax, members[1:size], size - 1
                )
            else:
                best = _nearest_weighted_scan(X, centre, lam, pi, unassigned, members, size)
            if best < 0:
                break
            members[size] = best
            for t in range(d):
                total[t] += X[best, t]
            size += 1
        if size < eta:
            break
        rc = _cluster_rc(X, pi, members, eta) + cut_penalty(members, eta, cptr, ccut, cpen, hits)
        if rc < thr:
            for q in range(1, eta):
                unassigned[members[q]] = False
                if leaf_size is not None:
                    kdtree.delete(tree, members[q])
                left -= 1
            for q in range(eta):
                out[found, q] = members[q]
            rcs[found] = rc
            found += 1
    return out[:found], rcs[:found]


@kernel
def _smallest(val, eta, out):
    """out[:] = the indices of the eta smallest values, ascending (ties: the lowest indices).
    One O(n) pass keeping the eta best (``kbest.k_smallest``; the full argsort it replaced was
    most of the alternating descent's time at n = 4092), then the eta indices sorted in place:
    numba's np.partition and sort cost 4.6 s to compile on a first run (issue 35)."""
    k_smallest(val, val.shape[0], eta, out)
    sort_small(out, eta)


@kernel
def alternating_pricing(X, pi, eta, starts, thr, max_iter, cptr, ccut, cpen):
    """Alternate centre z and the eta records minimising ‖x_i − z‖² − π_i (a k-means-like
    descent on rc(C) = min_z Σ_{i∈C}(‖x_i − z‖² − π_i)), from each start point z.

    Returns (members (m, eta), rc (m,)) of the distinct local minima with rc < thr.
    """
    n, d = X.shape
    ns = starts.shape[0]
    out = np.empty((ns, eta), dtype=np.int64)
    rcs = np.empty(ns)
    found = 0
    z = np.empty(d)
    val = np.empty(n)
    cur = np.empty(eta, dtype=np.int64)
    prev = np.empty(eta, dtype=np.int64)
    hits = np.zeros(cpen.shape[0], dtype=np.int64)
    for s in range(ns):
        for t in range(d):
            z[t] = starts[s, t]
        for q in range(eta):
            prev[q] = -1
        for _ in range(max_iter):
            for i in range(n):
                acc = -pi[i]
                for t in range(d):
                    diff = X[i, t] - z[t]
                    acc += diff * diff
                val[i] = acc
            _smallest(val, eta, cur)
            same = True
            for q in range(eta):
                if cur[q] != prev[q]:
                    same = False
            if same:
                break
            for q in range(eta):  # element by element: a slice assignment compiles numba's
                prev[q] = cur[q]  # shape-mismatch error path, 1.5 s of a first run
            for t in range(d):
                z[t] = 0.0
            for q in range(eta):
                for t in range(d):
                    z[t] += X[cur[q], t]
            for t in range(d):
                z[t] /= eta
        rc = _cluster_rc(X, pi, cur, eta) + cut_penalty(cur, eta, cptr, ccut, cpen, hits)
        if rc < thr:
            dup = False
            for f in range(found):
                eq = True
                for q in range(eta):
                    if out[f, q] != cur[q]:
                        eq = False
                        break
                if eq:
                    dup = True
                    break
            if not dup:
                for q in range(eta):
                    out[found, q] = cur[q]
                rcs[found] = rc
                found += 1
    return out[:found], rcs[:found]


@kernel
def enumeration_pricing(X, pi, eta, first_lo, first_hi, thr, max_cols, cptr, ccut, cpen):
    """The paper's SolveCompleteEnumeration: every eta-subset whose smallest index is in
    [first_lo, first_hi), by nested loops (an index odometer), rc from running sums.

    Returns (members, rcs, count, best_members, best_rc, overflow): the clusters with rc < thr
    (up to max_cols) and the overall minimum.
    """
    n, d = X.shape
    out = np.empty((max_cols, eta), dtype=np.int64)
    rcs = np.empty(max_cols)
    count = 0
    overflow = False
    best = np.full(eta, -1, dtype=np.int64)
    best_rc = np.inf
    idx = np.empty(eta, dtype=np.int64)
    sumv = np.zeros((eta + 1, d))
    sumsq = np.zeros(eta + 1)
    pis = np.zeros(eta + 1)
    hits = np.zeros(cpen.shape[0], dtype=np.int64)
    for f in range(first_lo, min(first_hi, n - eta + 1)):
        idx[0] = f
        level = 1
        for t in range(d):
            sumv[1, t] = X[f, t]
        sumsq[1] = np.dot(X[f], X[f])
        pis[1] = pi[f]
        idx[1] = f  # incremented before use
        while level >= 1:
            if level == 1 and eta == 1:
                break
            idx[level] += 1
            if idx[level] > n - (eta - level):
                level -= 1
                continue
            i = idx[level]
            for t in range(d):
                sumv[level + 1, t] = sumv[level, t] + X[i, t]
            sumsq[level + 1] = sumsq[level] + np.dot(X[i], X[i])
            pis[level + 1] = pis[level] + pi[i]
            if level + 1 == eta:
                ss = 0.0
                for t in range(d):
                    ss += sumv[eta, t] * sumv[eta, t]
                rc = sumsq[eta] - ss / eta - pis[eta]
                if cpen.shape[0] > 0:
                    rc += cut_penalty(idx, eta, cptr, ccut, cpen, hits)
                if rc < best_rc:
                    best_rc = rc
                    for q in range(eta):
                        best[q] = idx[q]
                if rc < thr:
                    if count < max_cols:
                        for q in range(eta):
                            out[count, q] = idx[q]
                        rcs[count] = rc
                        count += 1
                    else:
                        overflow = True
            else:
                level += 1
                idx[level] = idx[level - 1]
        if eta == 1:
            rc = -pi[f]
            if rc < best_rc:
                best_rc = rc
                best[0] = f
    return out[:count], rcs[:count], count, best, best_rc, overflow
