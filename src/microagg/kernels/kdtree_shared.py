"""KD-tree queries over one of two halves of the records, run beside the same query over the
other half on another thread, each pruning by the other's bound as well as its own
(``mdav_halves``). The two answers merged give exactly the query over all records.

``bounds[h]`` is half h's current k-th distance (knn) or farthest distance (farthest), published
as the search goes. Half h also prunes a node whose every record is strictly worse than the other
half's bound: the other half already holds k records (or one record) strictly better, so none of
the node's records is in the answer over all records. A bound read late is an older one, looser
(the k-th distance only falls, the farthest only grows), so pruning stays conservative; pruning
is strict, so ties (broken by the lower index at the merge) are never lost.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .kbest import kbest_admits, kbest_insert
from .kdtree import _lower, _new_stack, _push, _push_nearer_last, _upper
from .kdtree_build import _LB_SCALE
from .nearest import sqdist

__all__ = ["knn_shared", "farthest_shared"]


@kernel
def knn_shared(T, q, k, out_idx, out_d, bounds, h):
    """kdtree.knn over T (half h, no exclusions), pruning by min(own k-th, bounds[1 − h]) and
    publishing its k-th distance in bounds[h]; returns how many were found."""
    Xt, oidx, start, cnt, left, right = T.Xt, T.oidx, T.start, T.cnt, T.left, T.right
    other = 1 - h
    filled = 0
    for j in range(k):
        out_d[j] = np.inf
        out_idx[j] = -1
    stack, bound, top = _new_stack(0.0)
    while top > 0:
        top -= 1
        v = stack[top]
        limit = min(out_d[k - 1], bounds[other])
        if bound[top] * _LB_SCALE > limit:
            continue
        if left[v] < 0:
            s = start[v]
            for p in range(s, s + cnt[v]):
                dd = sqdist(Xt[p], q)
                i = oidx[p]
                if kbest_admits(out_d, out_idx, k, filled, dd, i):
                    filled = kbest_insert(out_d, out_idx, k, filled, dd, i)
            if filled == k:
                bounds[h] = out_d[k - 1]
            continue
        a, b = left[v], right[v]
        la = _lower(T, a, q, limit) if cnt[a] > 0 else np.inf
        lb = _lower(T, b, q, limit) if cnt[b] > 0 else np.inf
        top = _push_nearer_last(stack, bound, top, a, b, la, lb)
    return filled


@kernel
def farthest_shared(F, q, bounds, h):
    """kdtree.farthest over F (half h, no exclusions), pruning by max(own best, bounds[1 − h])
    and publishing its best distance in bounds[h]: (original index, squared distance), (-1, -1.0)
    when none is alive."""
    Xt, oidx, start, cnt, left, right, anchor = (
        F.Xt,
        F.oidx,
        F.start,
        F.cnt,
        F.left,
        F.right,
        F.anchor,
    )
    other = 1 - h
    best_i, best_d = -1, -1.0
    u = q - anchor
    uu = sqdist(q, anchor)
    un = np.sqrt(uu)
    stack, bound, top = _new_stack(np.inf)
    while top > 0:
        top -= 1
        v = stack[top]
        limit = max(best_d, bounds[other])
        if bound[top] < limit:
            continue
        if left[v] < 0:
            s = start[v]
            for p in range(s, s + cnt[v]):
                dd = sqdist(Xt[p], q)
                i = oidx[p]
                if dd > best_d or (dd == best_d and i < best_i):
                    best_d, best_i = dd, i
            bounds[h] = best_d
            continue
        a, b = left[v], right[v]
        ua = _upper(F, a, q, u, uu, un, limit) if cnt[a] > 0 else -np.inf
        ub = _upper(F, b, q, u, uu, un, limit) if cnt[b] > 0 else -np.inf
        if ua < ub:  # explore the child that may hold the farther records first
            a, b, ua, ub = b, a, ub, ua
        if ub > -np.inf:
            top = _push(stack, bound, top, b, ub)
        if ua > -np.inf:
            top = _push(stack, bound, top, a, ua)
    return best_i, best_d
