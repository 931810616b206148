"""Rounding heuristics on the master LP solution (column-generation paper, Section 5.2) and the
subset-row cut separation (ours).

SimpleRoundingHeuristic and RoundingMSTHeuristic turn a fractional x into partitions;
``separate_subset_rows`` finds the violated subset-row cuts on triples (Jepsen et al. 2008) that
strengthen the master LP. The column-generation driver (``methods.colgen.driver``) calls them.
"""

from __future__ import annotations

import numpy as np
from numba import types

from .jit import kernel
from .nearest import join_nearest_centroid

__all__ = ["simple_rounding", "mst_rounding", "separate_subset_rows", "SEPARATE_SUBSET_ROWS_TYPES"]

#: The argument types of the column-generation driver's one call of ``separate_subset_rows``,
#: for ``jit.compile_ahead``
SEPARATE_SUBSET_ROWS_TYPES = (
    types.int64,
    types.int64[::1],
    types.int64[::1],
    types.float64[::1],
    types.float64,
)


@kernel
def simple_rounding(X, k, ptr, members, order):
    """SimpleRoundingHeuristic: columns by decreasing x_C, disjoint ones taken while at least
    2k records are unassigned; k..2k−1 leftovers form a cluster, others join the nearest."""
    n = X.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    left = n
    g = 0
    for c in order:
        if left < 2 * k:
            break
        ok = True
        for p in range(ptr[c], ptr[c + 1]):
            if labels[members[p]] >= 0:
                ok = False
                break
        if not ok:
            continue
        for p in range(ptr[c], ptr[c + 1]):
            labels[members[p]] = g
        left -= ptr[c + 1] - ptr[c]
        g += 1
    if left > 0:
        if (k <= left <= 2 * k - 1) or g == 0:
            for i in range(n):
                if labels[i] < 0:
                    labels[i] = g
            g += 1
        else:
            join_nearest_centroid(X, labels, g)  # AddRemainingNodes
    return labels


@kernel
def _find(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@kernel
def mst_rounding(X, k, ptr, members, x, maxcl):
    """RoundingMSTHeuristic for one maxcl: z_ij = Σ_{C∋i,j} x_C, edges by decreasing z_ij glue
    clusters while the union has at most maxcl records. Clusters left smaller than k are
    dissolved and their records join the nearest valid cluster (a repair the paper does not
    make: it discards such roundings). Returns labels, or all −1 when nothing is valid."""
    n = X.shape[0]
    ncol = ptr.shape[0] - 1
    npairs = 0
    for c in range(ncol):
        if x[c] > 1e-9:
            s = ptr[c + 1] - ptr[c]
            npairs += s * (s - 1) // 2
    keys = np.empty(npairs, dtype=np.int64)
    w = np.empty(npairs)
    q = 0
    for c in range(ncol):
        if x[c] > 1e-9:
            for a in range(ptr[c], ptr[c + 1]):
                for b in range(a + 1, ptr[c + 1]):
                    i, j = members[a], members[b]
                    if i > j:
                        i, j = j, i
                    keys[q] = i * n + j
                    w[q] = x[c]
                    q += 1
    # sorted as float64 (exact: keys < n² < 2^53 for n below 9·10^7; the same stable order),
    # so numba compiles one mergesort for both sorts here, not a second one for int64
    o = np.argsort(keys.astype(np.float64), kind="mergesort")
    uk = np.empty(npairs, dtype=np.int64)
    uw = np.empty(npairs)
    m = 0
    for t in range(npairs):
        if m > 0 and uk[m - 1] == keys[o[t]]:
            uw[m - 1] += w[o[t]]
        else:
            uk[m] = keys[o[t]]
            uw[m] = w[o[t]]
            m += 1
    oe = np.argsort(-uw[:m], kind="mergesort")
    parent = np.arange(n)
    size = np.ones(n, dtype=np.int64)
    for t in oe:
        i, j = uk[t] // n, uk[t] % n
        ri, rj = _find(parent, i), _find(parent, j)
        if ri != rj and size[ri] + size[rj] <= maxcl:
            parent[rj] = ri
            size[ri] += size[rj]
    labels = np.full(n, -1, dtype=np.int64)
    root_label = np.full(n, -1, dtype=np.int64)
    g = 0
    for i in range(n):
        r = _find(parent, i)
        if size[r] >= k:
            if root_label[r] < 0:
                root_label[r] = g
                g += 1
            labels[i] = root_label[r]
    if g == 0:
        return np.full(n, -1, dtype=np.int64)
    join_nearest_centroid(X, labels, g)  # AddRemainingNodes
    return labels


@kernel
def separate_subset_rows(n, ptr, members, x, min_violation):
    """Violated subset-row cuts on triples: Σ_{C: |C∩S|>=2} x_C > 1 (Jepsen et al. 2008), over
    the support columns (ptr, members, x > 0). Triples are found around a record a whose
    support columns reach b and c. Returns (triples (m, 3), lhs (m,))."""
    ncol = ptr.shape[0] - 1
    cnt = np.zeros(n + 1, dtype=np.int64)
    for c in range(ncol):
        for p in range(ptr[c], ptr[c + 1]):
            cnt[members[p] + 1] += 1
    rptr = np.cumsum(cnt)
    rcol = np.empty(rptr[n], dtype=np.int64)
    fill = rptr[:-1].copy()
    for c in range(ncol):
        for p in range(ptr[c], ptr[c + 1]):
            rcol[fill[members[p]]] = c
            fill[members[p]] += 1
    out = np.empty((4 * n, 3), dtype=np.int64)
    lhs_out = np.empty(4 * n)
    found = 0
    seen = np.full(n, -1, dtype=np.int64)
    nb = np.empty(n, dtype=np.int64)
    for a in range(n):
        m = 0
        for q in range(rptr[a], rptr[a + 1]):
            c = rcol[q]
            for p in range(ptr[c], ptr[c + 1]):
                b = members[p]
                if b != a and seen[b] != a:
                    seen[b] = a
                    nb[m] = b
                    m += 1
        for u in range(m):
            for v in range(u + 1, m):
                b, c2 = nb[u], nb[v]
                # count each triple once: a must be its smallest record among centres found
                if not (a < b and a < c2):
                    continue
                lhs = 0.0
                for q in range(rptr[a], rptr[a + 1]):
                    c = rcol[q]
                    hit = 0
                    for p in range(ptr[c], ptr[c + 1]):
                        if members[p] == b or members[p] == c2:
                            hit += 1
                    if hit >= 1:
                        lhs += x[c]
                for q in range(rptr[b], rptr[b + 1]):
                    c = rcol[q]
                    has_a = False
                    has_c = False
                    for p in range(ptr[c], ptr[c + 1]):
                        if members[p] == a:
                            has_a = True
                        elif members[p] == c2:
                            has_c = True
                    if has_c and not has_a:
                        lhs += x[c]
                if lhs > 1.0 + min_violation and found < out.shape[0]:
                    out[found, 0] = a
                    out[found, 1] = min(b, c2)
                    out[found, 2] = max(b, c2)
                    lhs_out[found] = lhs
                    found += 1
    return out[:found], lhs_out[:found]
