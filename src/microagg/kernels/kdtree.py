"""Exact branch-and-bound queries on the KD-tree with deletions (``kdtree_build``: the tree's
layout, its construction and deletions; their names are re-exported here, the tree's one home for
callers): k nearest, nearest weighted, nearest to any member of a group, V-MDAV's witness test,
farthest, and the alive records.

Every query returns EXACTLY what a brute-force scan in record-index order returns: distances by
the same ``sqdist``, box bounds in the same operation order (IEEE rounding is monotone, so a bound
is a true bound on every computed distance inside the box; a small relative margin is added and
pruning is strict, so exact ties are never pruned), ties broken by the lower original index.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .kbest import kbest_admits, kbest_insert
from .kdtree_build import (
    _LB_SCALE,
    _UB_SCALE,
    STACK,
    KDTree,
    build,
    build_pair,
    build_pair_threads,
    build_subset,
    delete,
)
from .nearest import sqdist

__all__ = [
    "KDTree",
    "build",
    "build_pair",
    "build_pair_threads",
    "build_subset",
    "delete",
    "knn",
    "nearest_to_any",
    "has_witness",
    "node_max",
    "nearest_weighted",
    "farthest",
    "alive_indices",
]


@kernel(inline="always")
def _box_lb(lo, hi, v, q):
    s = 0.0
    for t in range(q.shape[0]):
        x = q[t]
        if x < lo[v, t]:
            diff = lo[v, t] - x
            s += diff * diff
        elif x > hi[v, t]:
            diff = x - hi[v, t]
            s += diff * diff
    return s


@kernel(inline="always")
def _lower(T, v, q, kth):
    """Lower bound on the squared distance from q to node v's records (box, then ball if needed)."""
    lo, hi, center, rad = T.lo, T.hi, T.center, T.rad
    box = _box_lb(lo, hi, v, q)
    if box * _LB_SCALE > kth:
        return box
    dq = np.sqrt(sqdist(q, center[v]))
    gap = dq - rad[v] - 1e-9 * (dq + rad[v])  # absolute slack: the difference may cancel
    if gap > 0.0:
        ball = gap * gap
        if ball > box:
            return ball
    return box


@kernel(inline="always")
def _upper(T, v, q, u, uu, un, best):
    """Upper bound on the squared distance from q to node v's records, u = q − anchor, un = ‖u‖.

    The smallest of: the box bound; the anchor split r2[v] + ‖u‖² + max over the box of
    −2·(x − a)·u; the cone bound r2[v] + ‖u‖² + 2·√r2[v]·‖u‖·cos(max(0, ∠(−u, mu[v]) − β))
    (shell trees; β the cone's half-angle); the ball bound. Each is computed only while the
    cheaper ones cannot prune. The anchor bounds get a rounding margin relative to the
    magnitudes of their terms (the cone's sine comes from √(1 − c²), hence its larger margin).
    """
    lo, hi, center, rad, anchor, r2, mu, cosb = (
        T.lo,
        T.hi,
        T.center,
        T.rad,
        T.anchor,
        T.r2,
        T.mu,
        T.cosb,
    )
    box = 0.0
    lin = 0.0
    mag = 0.0
    for t in range(q.shape[0]):
        a = q[t] - lo[v, t]
        b = hi[v, t] - q[t]
        diff = a if a > b else b
        box += diff * diff
        l1 = -2.0 * (lo[v, t] - anchor[t]) * u[t]
        l2 = -2.0 * (hi[v, t] - anchor[t]) * u[t]
        if l1 > l2:
            lin += l1
            mag += abs(l1)
        else:
            lin += l2
            mag += abs(l2)
    split = r2[v] + uu + lin + 1e-9 * (r2[v] + uu + mag)
    bound = box * _UB_SCALE
    if split < bound:
        bound = split
    if bound < best:
        return bound
    if mu.shape[0] > 0 and un > 0 and cosb[v] > -1.0:
        ct = 0.0  # cos ∠(−u, mu[v])
        for t in range(q.shape[0]):
            ct -= mu[v, t] * u[t]
        ct = min(1.0, max(-1.0, ct / un))
        cb = cosb[v]
        c = 1.0
        if ct < cb:  # outside the cone: cos(θ − β) = cos θ cos β + sin θ sin β
            c = ct * cb + np.sqrt(max(0.0, 1.0 - ct * ct)) * np.sqrt(max(0.0, 1.0 - cb * cb))
        reach = 2.0 * np.sqrt(r2[v]) * un
        cone = r2[v] + uu + reach * max(c, 0.0) + 1e-7 * (r2[v] + uu + reach)
        if cone < bound:
            bound = cone
            if bound < best:
                return bound
    reach = np.sqrt(sqdist(q, center[v])) + rad[v]
    ball = reach * reach * _UB_SCALE
    return ball if ball < bound else bound


@kernel(inline="always")
def _push(stack, bound, top, v, bv):
    """Push node v with its bound on the traversal stack; returns the new top."""
    stack[top] = v
    bound[top] = bv
    return top + 1


@kernel(inline="always")
def _new_stack(root_bound):
    """(stack, bound, top) of a traversal holding the root with root_bound."""
    stack = np.empty(STACK, dtype=np.int64)
    bound = np.empty(STACK)
    return stack, bound, _push(stack, bound, 0, 0, root_bound)


@kernel(inline="always")
def _push_nearer_last(stack, bound, top, a, b, la, lb):
    """Push children a, b with lower bounds la, lb (inf = empty), the nearer last so that it is
    explored first; returns the new top."""
    if la > lb:
        a, b, la, lb = b, a, lb, la
    if lb < np.inf:
        top = _push(stack, bound, top, b, lb)
    if la < np.inf:
        top = _push(stack, bound, top, a, la)
    return top


@kernel(inline="always")
def _excluded(i, excl, nexcl):
    for e in range(nexcl):
        if excl[e] == i:
            return True
    return False


@kernel
def knn(T, q, k, out_idx, out_d, excl, nexcl):
    """The k alive records nearest to q, by (squared distance, original index), into out_*.

    Records listed in excl[:nexcl] are skipped. Returns how many were found (< k if fewer alive).
    """
    Xt, oidx, start, cnt, left, right = T.Xt, T.oidx, T.start, T.cnt, T.left, T.right
    filled = 0
    for j in range(k):
        out_d[j] = np.inf
        out_idx[j] = -1
    stack, bound, top = _new_stack(0.0)
    while top > 0:
        top -= 1
        v = stack[top]
        if filled == k and bound[top] * _LB_SCALE > out_d[k - 1]:
            continue
        if left[v] < 0:
            s = start[v]
            for p in range(s, s + cnt[v]):
                dd = sqdist(Xt[p], q)
                i = oidx[p]
                if not kbest_admits(out_d, out_idx, k, filled, dd, i):
                    continue
                if nexcl > 0 and _excluded(i, excl, nexcl):
                    continue
                filled = kbest_insert(out_d, out_idx, k, filled, dd, i)
            continue
        a, b = left[v], right[v]
        kth = out_d[k - 1]
        la = _lower(T, a, q, kth) if cnt[a] > 0 else np.inf
        lb = _lower(T, b, q, kth) if cnt[b] > 0 else np.inf
        top = _push_nearer_last(stack, bound, top, a, b, la, lb)
    return filled


@kernel
def node_max(T, w):
    """Per node, the largest w[i] over its alive records (-inf when none): the weight bound of
    ``nearest_weighted``. After later deletions it is still an upper bound."""
    oidx, start, cnt, left, right = T.oidx, T.start, T.cnt, T.left, T.right
    out = np.full(start.shape[0], -np.inf)
    for v in range(start.shape[0] - 1, -1, -1):  # children are created after their parent
        if left[v] < 0:
            for p in range(start[v], start[v] + cnt[v]):
                if w[oidx[p]] > out[v]:
                    out[v] = w[oidx[p]]
        else:
            out[v] = max(out[left[v]], out[right[v]])
    return out


@kernel
def nearest_weighted(T, q, lam, w, wmax, excl, nexcl):
    """(original index, value) of the alive record minimising ‖x_i − q‖² − lam·w[i] (lam >= 0),
    by (value, original index), skipping the records in excl[:nexcl]; (-1, inf) when none.
    wmax = node_max(T, w): a node is pruned when its box bound less lam·wmax exceeds the best."""
    Xt, oidx, start, cnt, left, right, lo, hi = (
        T.Xt,
        T.oidx,
        T.start,
        T.cnt,
        T.left,
        T.right,
        T.lo,
        T.hi,
    )
    best_i, best_v = -1, np.inf
    stack, bound, top = _new_stack(-np.inf)
    while top > 0:
        top -= 1
        v = stack[top]
        if bound[top] > best_v:
            continue
        if left[v] < 0:
            for p in range(start[v], start[v] + cnt[v]):
                i = oidx[p]
                val = sqdist(Xt[p], q) - lam * w[i]
                if val < best_v or (val == best_v and i < best_i):
                    if nexcl > 0 and _excluded(i, excl, nexcl):
                        continue
                    best_i, best_v = i, val
            continue
        a, b = left[v], right[v]
        la = _box_lb(lo, hi, a, q) * _LB_SCALE - lam * wmax[a] if cnt[a] > 0 else np.inf
        lb = _box_lb(lo, hi, b, q) * _LB_SCALE - lam * wmax[b] if cnt[b] > 0 else np.inf
        top = _push_nearer_last(stack, bound, top, a, b, la, lb)
    return best_i, best_v


@kernel
def nearest_to_any(T, X, members, nmem, excl, nexcl):
    """(original index, squared distance) of the alive record nearest to any of the records
    members[:nmem] of X, by (min over members of sqdist(record, member), original index); the
    records in excl[:nexcl] are skipped. One traversal instead of one 1-NN query per member: a
    node's bound is the smallest of its bounds to the members. (-1, inf) when none is alive."""
    Xt, oidx, start, cnt, left, right = T.Xt, T.oidx, T.start, T.cnt, T.left, T.right
    best_i, best_d = -1, np.inf
    stack, bound, top = _new_stack(0.0)
    while top > 0:
        top -= 1
        v = stack[top]
        if bound[top] * _LB_SCALE > best_d:
            continue
        if left[v] < 0:
            for p in range(start[v], start[v] + cnt[v]):
                dd = np.inf
                for j in range(nmem):
                    dj = sqdist(Xt[p], X[members[j]])
                    if dj < dd:
                        dd = dj
                i = oidx[p]
                if dd < best_d or (dd == best_d and i < best_i):
                    if nexcl > 0 and _excluded(i, excl, nexcl):
                        continue
                    best_d, best_i = dd, i
            continue
        a, b = left[v], right[v]
        la, lb = np.inf, np.inf
        for j in range(nmem):
            q = X[members[j]]
            if cnt[a] > 0:
                la = min(la, _lower(T, a, q, best_d))
            if cnt[b] > 0:
                lb = min(lb, _lower(T, b, q, best_d))
        top = _push_nearer_last(stack, bound, top, a, b, la, lb)
    return best_i, best_d


@kernel
def has_witness(T, q, excl, nexcl, din, gamma):
    """Whether some alive record x outside excl[:nexcl] has not (√din < gamma·√sqdist(x, q)).

    V-MDAV extends a group by e only if √d_in < gamma·√d_out, d_out being e's squared distance
    to its nearest other unassigned record; any such witness x shows d_out ≤ sqdist(x, e) and
    so, √ and the product being monotone in floating point too, rejects the extension exactly.
    The search stops at the first witness (usually in e's own leaf); nodes whose lower bound
    already satisfies the inequality hold none and are pruned.
    """
    Xt, oidx, start, cnt, left, right = T.Xt, T.oidx, T.start, T.cnt, T.left, T.right
    root_din = np.sqrt(din)
    stack, bound, top = _new_stack(0.0)
    while top > 0:
        top -= 1
        v = stack[top]
        if root_din < gamma * np.sqrt(bound[top] * _LB_SCALE):
            continue
        if left[v] < 0:
            for p in range(start[v], start[v] + cnt[v]):
                if not (root_din < gamma * np.sqrt(sqdist(Xt[p], q))):
                    if nexcl > 0 and _excluded(oidx[p], excl, nexcl):
                        continue
                    return True
            continue
        a, b = left[v], right[v]
        la = _lower(T, a, q, np.inf) if cnt[a] > 0 else np.inf
        lb = _lower(T, b, q, np.inf) if cnt[b] > 0 else np.inf
        top = _push_nearer_last(stack, bound, top, a, b, la, lb)
    return False


@kernel
def farthest(T, q, excl, nexcl):
    """(original index, squared distance) of the alive record farthest from q; lowest index on ties.

    Records listed in excl[:nexcl] are skipped; (-1, -1.0) when none is alive.
    """
    Xt, oidx, start, cnt, left, right, anchor = (
        T.Xt,
        T.oidx,
        T.start,
        T.cnt,
        T.left,
        T.right,
        T.anchor,
    )
    best_i, best_d = -1, -1.0
    u = q - anchor
    uu = sqdist(q, anchor)
    un = np.sqrt(uu)
    stack, bound, top = _new_stack(np.inf)
    while top > 0:
        top -= 1
        v = stack[top]
        if bound[top] < best_d:
            continue
        if left[v] < 0:
            s = start[v]
            for p in range(s, s + cnt[v]):
                dd = sqdist(Xt[p], q)
                i = oidx[p]
                if dd > best_d or (dd == best_d and i < best_i):
                    if nexcl > 0 and _excluded(i, excl, nexcl):
                        continue
                    best_d, best_i = dd, i
            continue
        a, b = left[v], right[v]
        ua = _upper(T, a, q, u, uu, un, best_d) if cnt[a] > 0 else -np.inf
        ub = _upper(T, b, q, u, uu, un, best_d) if cnt[b] > 0 else -np.inf
        if ua < ub:  # explore the child that may hold the farther records first
            a, b, ua, ub = b, a, ub, ua
        if ub > -np.inf:
            top = _push(stack, bound, top, b, ub)
        if ua > -np.inf:
            top = _push(stack, bound, top, a, ua)
    return best_i, best_d


@kernel
def alive_indices(T):
    """Original indices of the alive records, ascending."""
    oidx, pos_of, start, cnt, left = T.oidx, T.pos_of, T.start, T.cnt, T.left
    mark = np.zeros(pos_of.shape[0], dtype=np.bool_)
    for v in range(left.shape[0]):
        if left[v] < 0:
            for p in range(start[v], start[v] + cnt[v]):
                mark[oidx[p]] = True
    return np.nonzero(mark)[0]
