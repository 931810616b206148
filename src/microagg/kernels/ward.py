"""Ward merging with the k-Ward size rule (data-oriented paper, Algorithm 1 step 2; Appendix II).

Ward's distance between groups G_i, G_j is the SSE increase of their union,
n_i·n_j/(n_i+n_j)·|mean_i − mean_j|² (Appendix II). k-Ward merges greedily by this distance but
never merges two groups that both already have >= k records, and stops as soon as every group has
>= k records.

Two kernels, both "stored data" (Anderberg): only group means and sizes are kept, memory O(m·d).

* ``ward_adjacent_1d``: sorted univariate values; merges are restricted to groups adjacent in the
  sorted order, so every group is a run of consecutive ranks (Theorem 1, connected groups). A heap
  of adjacent-pair costs gives O(m log m) time.
* ``ward_nn_chain``: multivariate; a nearest-neighbour chain. The constrained distance (Ward's, or
  +inf for two groups of >= k) is reducible — d(i∪j, l) >= min(d(i, l), d(j, l)), and a union of a
  large group stays large — so reciprocal-nearest-neighbour merges give the same set of merges as
  the greedy global-minimum order (up to ties). Each nearest-neighbour scan is O(m·d) and there are
  at most about 3m of them: O(m²·d) time.
"""

from __future__ import annotations

import heapq

import numpy as np

from .jit import kernel


@kernel
def ward_adjacent_1d(xs, k):
    """k-Ward pass over sorted values xs (m >= 2k): group id per rank, groups of >= k consecutive
    ranks.

    Step 1: ranks [0, k) and [m−k, m) start as two groups, the others as singletons. Step 2: the
    cheapest adjacent pair that is not two groups of >= k merges, until every group has >= k.
    Ties go to the lower rank.
    """
    m = xs.shape[0]
    nxt = np.empty(m, dtype=np.int64)  # start rank of the next group (m for the last one)
    prv = np.empty(m, dtype=np.int64)  # start rank of the previous group (-1 for the first)
    size = np.zeros(m, dtype=np.int64)
    mean = np.zeros(m)
    version = np.zeros(m, dtype=np.int64)  # of the pair (g, nxt[g]); stale heap entries are skipped
    alive = np.zeros(m, dtype=np.bool_)
    starts = [0]
    for i in range(k, m - k):
        starts.append(i)
    starts.append(m - k)
    for t in range(len(starts)):
        g = starts[t]
        end = starts[t + 1] if t + 1 < len(starts) else m
        alive[g] = True
        size[g] = end - g
        s = 0.0
        for i in range(g, end):
            s += xs[i]
        mean[g] = s / (end - g)
        nxt[g] = end
        prv[g] = starts[t - 1] if t > 0 else -1
    n_small = m - 2 * k if k > 1 else 0  # the singletons between the two end groups
    heap = [(0.0, 0, 0)]
    heap.pop()
    for t in range(len(starts) - 1):
        g = starts[t]
        r = nxt[g]
        if size[g] < k or size[r] < k:
            diff = mean[g] - mean[r]
            heapq.heappush(heap, (size[g] * size[r] / (size[g] + size[r]) * diff * diff, g, 0))
    while n_small > 0:
        cost, g, ver = heapq.heappop(heap)
        if not alive[g] or ver != version[g]:
            continue
        r = nxt[g]
        was_small = (size[g] < k) + (size[r] < k)
        total = size[g] + size[r]
        mean[g] += (mean[r] - mean[g]) * size[r] / total
        size[g] = total
        n_small -= was_small - (total < k)
        alive[r] = False
        nxt[g] = nxt[r]
        if nxt[g] < m:
            prv[nxt[g]] = g
        version[g] += 1
        if nxt[g] < m:
            r2 = nxt[g]
            if size[g] < k or size[r2] < k:
                diff = mean[g] - mean[r2]
                heapq.heappush(
                    heap, (size[g] * size[r2] / (size[g] + size[r2]) * diff * diff, g, version[g])
                )
        p = prv[g]
        if p >= 0:
            version[p] += 1
            if size[p] < k or size[g] < k:
                diff = mean[p] - mean[g]
                heapq.heappush(
                    heap, (size[p] * size[g] / (size[p] + size[g]) * diff * diff, p, version[p])
                )
    labels = np.empty(m, dtype=np.int64)
    g = 0
    gid = 0
    while g < m:
        for i in range(g, nxt[g]):
            labels[i] = gid
        gid += 1
        g = nxt[g]
    return labels


@kernel(inline="always")
def _ward_distance(C, S, a, b):
    s = 0.0
    for t in range(C.shape[1]):
        diff = C[a, t] - C[b, t]
        s += diff * diff
    return S[a] * S[b] / (S[a] + S[b]) * s


@kernel
def ward_nn_chain(X, init, k):
    """k-Ward pass (Algorithm 1 step 2) over the rows of X by a nearest-neighbour chain.

    init[i] is 0 or 1 for the rows of the two initial groups of step 1 (each of k rows) and −1
    for rows that start as singletons. Returns a group id 0..g−1 per row; every group has >= k
    rows. Ties prefer the previous chain element (so the chain always ends), then the lower slot.
    """
    m, d = X.shape
    C = np.zeros((m, d))
    S = np.zeros(m)
    parent = np.arange(m)
    rep = np.array([-1, -1])
    for i in range(m):
        g = init[i]
        if g < 0:
            for t in range(d):
                C[i, t] = X[i, t]
            S[i] = 1.0
        else:
            if rep[g] < 0:
                rep[g] = i
            r = rep[g]
            parent[i] = r
            S[r] += 1.0
            for t in range(d):
                C[r, t] += X[i, t]
    for g in range(2):
        r = rep[g]
        if r >= 0:
            for t in range(d):
                C[r, t] /= S[r]
    act = np.empty(m, dtype=np.int64)  # active slots, swap-removed
    where = np.full(m, -1, dtype=np.int64)
    nact = 0
    n_small = 0
    for i in range(m):
        if S[i] > 0:
            act[nact] = i
            where[i] = nact
            nact += 1
            if S[i] < k:
                n_small += 1
    chain = np.empty(m, dtype=np.int64)
    clen = 0
    while n_small > 0:
        if clen == 0:
            for t in range(nact):
                if S[act[t]] < k:
                    chain[0] = act[t]
                    clen = 1
                    break
        a = chain[clen - 1]
        prev = chain[clen - 2] if clen >= 2 else -1
        best = -1
        bd = np.inf
        if prev >= 0:
            best = prev
            bd = _ward_distance(C, S, a, prev)
        a_large = S[a] >= k
        for t in range(nact):
            b = act[t]
            if b == a or b == prev or (a_large and S[b] >= k):
                continue
            dd = _ward_distance(C, S, a, b)
            if dd < bd:
                bd = dd
                best = b
        if best != prev:
            chain[clen] = best
            clen += 1
            continue
        # a and prev are reciprocal nearest neighbours: merge prev into a
        clen -= 2
        b = prev
        was_small = (S[a] < k) + (S[b] < k)
        total = S[a] + S[b]
        for t in range(d):
            C[a, t] += (C[b, t] - C[a, t]) * S[b] / total
        S[a] = total
        parent[b] = a
        n_small -= was_small - (total < k)
        w = where[b]
        nact -= 1
        act[w] = act[nact]
        where[act[w]] = w
        where[b] = -1
    labels = np.empty(m, dtype=np.int64)
    gid = np.full(m, -1, dtype=np.int64)
    ng = 0
    for i in range(m):
        r = i
        while parent[r] != r:
            r = parent[r]
        j = i
        while parent[j] != r:  # path compression
            nj = parent[j]
            parent[j] = r
            j = nj
        if gid[r] < 0:
            gid[r] = ng
            ng += 1
        labels[i] = gid[r]
    return labels


@kernel
def farthest_pair(X):
    """(r, s), r < s, the two most distant rows (squared Euclidean); first pair found on ties."""
    m, d = X.shape
    br, bs, bd = 0, min(1, m - 1), -1.0
    for i in range(m):
        for j in range(i + 1, m):
            s = 0.0
            for t in range(d):
                diff = X[i, t] - X[j, t]
                s += diff * diff
            if s > bd:
                bd, br, bs = s, i, j
    return br, bs
