"""MDAV and V-MDAV with KD-trees (``kdtree``) and radial lists (``radial``): the plain loops'
labels bit for bit (the same distances by the same arithmetic, candidates only pruned by
conservative bounds, ties towards the lower record index). MDAV's tree kernel hands over to brute
force (``mdav_brute``) once a timed trial finds it cheaper."""

from __future__ import annotations

import numpy as np
from numba import prange

from . import kdtree
from .cycles import cycles, past, stop_cycle_after
from .jit import kernel
from .mdav_brute import _brute_finish, _brute_pairs, _columns
from .mdav_split import _pair_split_now, _pair_timed
from .nearest import join_nearest_centroid, mean_rows
from .radial import farthest_from_centroid, radial_index
from .running_sum import running_mean, running_sum_add, running_sum_init

__all__ = [
    "mdav_tree_kernel",
    "vmdav_tree_kernel",
    "SWITCH_NEVER",
    "SWITCH_MEASURED",
    "SWITCH_ALWAYS",
    "SWITCH_TRIALS",
]

REBUILD_BELOW = (
    0.6  # rebuild the KD-tree over the alive records when fewer remain than this fraction
)
#: at each trial (``mdav_tree_kernel``) the tree kernel times this many pairs of groups by brute
#: force, and goes on by brute force if they cost less than the tree's pairs now
SWITCH_TRIAL_PAIRS = 16
#: pairs of groups by brute force before a trial's timed ones: the first passes after the columns
#: are copied fault in their buffers' pages and run unlike the passes that follow (measured at
#: 5·10^5 Gaussian 10-d records: 2.1-2.8 ms a pass over 4 pairs, 1.6-1.8 over 16 to 2,000)
SWITCH_WARM_PAIRS = 8
#: brute force goes on only if its trial costs less than this share of the tree's cost: above the
#: last-level cache a trial's passes ran cheaper than the passes that follow (10^6 Gaussian 10-d
#: records, one thread, 6.4·10^5 left: 1.38 ms a pass in the trial, 2.1-2.5 ms over 1,500 pairs),
#: and brute force taken there cost 10-20 s more than the tree (runs of 175-196 s against 165 s)
SWITCH_MARGIN = 0.8
SWITCH_SKIP = (
    2.0  # no trial while brute force, scaled from the last trial, costs this many times the tree
)
SWITCH_FIRST_PAIRS = (
    32  # the first trial after this many pairs of groups by the tree (n/16k if fewer)
)
SWITCH_NEVER, SWITCH_MEASURED, SWITCH_ALWAYS, SWITCH_TRIALS = (
    0,
    1,
    2,
    3,
)  # mdav_tree_kernel's ``switch``
SWITCH_EVERY = 0.8  # then a trial each time the records left have fallen by this factor


@kernel
def _tree_take_members(T, X, k, labels, g, s, comp, members, alive):
    """The records members[:k] (a query's k nearest, in order) become group g: removed from the
    tree and, in that order, from the sum."""
    for j in range(k):
        i = members[j]
        labels[i] = g
        alive[i] = False
        running_sum_add(s, comp, X[i], -1.0)
        kdtree.delete(T, i)


@kernel
def _tree_take_group(T, X, q, k, labels, g, s, comp, members, dbuf, excl, alive):
    """The k alive records nearest to q become group g (removed from the tree and the sum)."""
    kdtree.knn(T, q, k, members, dbuf, excl, 0)
    _tree_take_members(T, X, k, labels, g, s, comp, members, alive)


@kernel(parallel=True)
def _pair_ahead(T, F, X, xr, b, k, bufs, ahead, found):
    """A pair's three queries and the next pair's three at once, on two threads, three queries
    each: one finds the k records nearest to xr (members), then the record farthest from record b
    (found[1]), then the k nearest to that one (ahead's second); the other the record farthest
    from xr (found[0]), then the k records nearest to it (members_s), then the k nearest to b
    (ahead's first). b < 0: no next pair, only this pair's queries. The trees are only read: each
    answer is that of its query alone, over the records alive now (a superset of those alive when
    the answer is used: ``_split_pair``)."""
    members, dbuf, members_s, dbuf_s, excl, _ = bufs
    members_b, dbuf_b, members_f, dbuf_f = ahead
    for j in prange(2):
        if j == 0:
            kdtree.knn(T, xr, k, members, dbuf, excl, 0)
            if b >= 0:
                found[1] = kdtree.farthest(F, X[b].copy(), excl, 0)[0]
                kdtree.knn(T, X[found[1]].copy(), k, members_f, dbuf_f, excl, 0)
        else:
            far = kdtree.farthest(F, xr, excl, 0)[0]
            found[0] = far
            kdtree.knn(T, X[far].copy(), k, members_s, dbuf_s, excl, 0)
            if b >= 0:
                kdtree.knn(T, X[b].copy(), k, members_b, dbuf_b, excl, 0)


@kernel
def _all_alive(ids, k, alive):
    """Whether ids[:k] are k records all still alive (a query's answer over an earlier superset
    of the records alive that holds none removed since: the answer over those alive now)."""
    for j in range(k):
        if ids[j] < 0 or not alive[ids[j]]:
            return False
    return True


@kernel(parallel=True)
def _two_nearest(T, X, xr, s, k, members, dbuf, members_s, dbuf_s, excl):
    """The k records nearest to xr (members) and to record s (members_s) at once, on two
    threads (the tree only read)."""
    for j in prange(2):
        if j == 0:
            kdtree.knn(T, xr, k, members, dbuf, excl, 0)
        else:
            kdtree.knn(T, X[s].copy(), k, members_s, dbuf_s, excl, 0)


@kernel
def _none_of(members, k, ids, count):
    """Whether none of ids[:count] is among members[:k]."""
    for a in range(count):
        for b in range(k):
            if ids[a] == members[b]:
                return False
    return True


@kernel(parallel=True)
def _take_two_groups(T, F, X, k, labels, g, s, comp, members, members_s, alive):
    """The records members[:k] become group g and members_s[:k] group g + 1, in that order
    (``_tree_take_members``), while the other thread removes both from the shell tree F."""
    for j in prange(2):
        if j == 0:
            _tree_take_members(T, X, k, labels, g, s, comp, members, alive)
            _tree_take_members(T, X, k, labels, g + 1, s, comp, members_s, alive)
        else:
            _delete_all(F, members, k)
            _delete_all(F, members_s, k)


@kernel(inline="always")
def _delete_all(F, ids, count):
    """Remove the records ids[:count] from the tree F."""
    for j in range(count):
        kdtree.delete(F, ids[j])


@kernel
def _trees_take_group(T, F, X, q, k, labels, g, s, comp, members, dbuf, excl, alive):
    """_tree_take_group, the group also removed from the shell tree F."""
    _tree_take_group(T, X, q, k, labels, g, s, comp, members, dbuf, excl, alive)
    _delete_all(F, members, k)


@kernel
def _split_pair(
    T, F, X, radial, alive, c, r, k, labels, g, s, comp, bufs, ahead, likely, follows, split
):
    """Groups g (around r, the record farthest from the centroid c) and g + 1 (around the record
    farthest from r), their queries on two threads (``split``; else one after the other); returns
    the radial lists (tail, prefix). radial = (tail, prefix, anchors, work), as for
    ``farthest_from_centroid``; bufs = (members, dbuf, members_s, dbuf_s, excl, found);
    ahead = (members_b, dbuf_b, members_f, dbuf_f), the next pair's answers.

    Two threads answer two pairs' six queries in one region, three each (``_pair_ahead``): while
    one finds r's k nearest, the other finds s, the record farthest from r, then s's k nearest.
    If another pair ``follows``, the first thread then finds the record farthest from the next
    pair's likely r, b (the record farthest from c after r: the centroid barely moves), and its k
    nearest, the second b's k nearest; b and its farthest are kept in ``likely``. When the next
    pair's r is b, its groups come from those answers with no query (or, if one holds a record
    this pair took, from two k-nearest queries at once). So two pairs cost about three queries'
    time where one thread takes six, in one region: a region waits for its slower thread, and
    three queries a thread vary less than one (measured at 3·10^5 Gaussian 10-d records: the tree
    part's query regions 20 % shorter than with the next pair's two k-nearest queries in a region
    of their own).

    Each answer is a query's over the records alive when it ran, a superset of those alive when
    it is used: an answer that holds no record removed since is the answer over the records
    alive (the k nearest by (distance, index) of a superset, all in the subset, are the subset's
    k nearest in the same order; the farthest likewise), and one that does is asked again. The
    labels are the one-thread kernel's, bit for bit."""
    tail, prefix, anchors, work = radial
    members, dbuf, members_s, dbuf_s, excl, found = bufs
    xr = X[r].copy()
    ready = split[0] >= 2  # members_s: the k nearest to found[0], asked with the pair
    if ready and likely[0] == r and alive[likely[1]]:
        found[0] = likely[1]
        members_b, _, members_f, _ = ahead
        if _all_alive(members_b, k, alive) and _all_alive(members_f, k, alive):
            for j in range(k):  # asked with the last pair: element-wise, as in _brute_pairs
                members[j], members_s[j] = members_b[j], members_f[j]
        else:  # a record of the last pair's groups among them: asked again
            _two_nearest(T, X, xr, found[0], k, members, dbuf, members_s, dbuf_s, excl)
        likely[0] = -1
    elif ready:
        b = -1
        if follows:
            b, tail, prefix = farthest_from_centroid(X, tail, prefix, anchors, work, alive, c, r)
        _pair_ahead(T, F, X, xr, b, k, bufs, ahead, found)
        likely[0], likely[1] = b, found[1]
    else:
        kdtree.knn(T, xr, k, members, dbuf, excl, 0)
        found[0] = kdtree.farthest(F, xr, excl, 0)[0]
    if ready and _none_of(members, k, found[0:1], 1) and _none_of(members, k, members_s, k):
        _take_two_groups(T, F, X, k, labels, g, s, comp, members, members_s, alive)
    else:  # an answer holds a record of r's group (ties, few records left): asked again
        _tree_take_members(T, X, k, labels, g, s, comp, members, alive)
        _delete_all(F, members, k)
        if not alive[found[0]]:
            found[0] = kdtree.farthest(F, xr, excl, 0)[0]
        xs = X[found[0]].copy()
        _trees_take_group(T, F, X, xs, k, labels, g + 1, s, comp, members, dbuf, excl, alive)
    return tail, prefix


@kernel
def _brute_trial(
    X, Xc, rest, m, k, stop, labels, g, s, comp, buffers, alive, radial, stop_cycle, split
):
    """A trial of brute force in the tree kernel: SWITCH_WARM_PAIRS pairs of groups, then
    SWITCH_TRIAL_PAIRS timed (``_brute_pairs`` over the columns Xc of the records ``rest``);
    returns (m, width, g, tail, prefix, cycles per pass over the records). buffers = (dist, ahead,
    keep, pos, gone); radial = (tail, prefix, anchors, work)."""
    dist, ahead, keep, pos, gone = buffers
    tail, prefix, anchors, work = radial
    width = m
    for pairs in (SWITCH_WARM_PAIRS, SWITCH_TRIAL_PAIRS):  # the last call timed
        tic = cycles()
        m, width, g, tail, prefix, passes = _brute_pairs(
            X,
            Xc,
            rest,
            m,
            width,
            k,
            stop,
            pairs,
            labels,
            g,
            s,
            comp,
            dist,
            ahead,
            keep,
            pos,
            gone,
            alive,
            tail,
            prefix,
            anchors,
            work,
            stop_cycle,
            split,
        )
    return m, width, g, tail, prefix, (cycles() - tic) / max(passes, 1)


@kernel
def _build_trees(X, members, leaf_size, split):
    """kdtree.build_pair, the two trees built at once on two threads when ``split`` grants them
    (the same trees)."""
    if split is None:  # a condition on split alone, so that numba prunes the branch not taken
        return kdtree.build_pair(X, members, leaf_size)
    else:
        if split[0] >= 2:
            return kdtree.build_pair_threads(X, members, leaf_size)
        return kdtree.build_pair(X, members, leaf_size)


@kernel
def _pairs_split(split, guard):
    """The split as the pairs of groups now run (``_pair_split_now``); None stays None."""
    if split is None:
        return split
    else:
        return split if _pair_split_now(guard) else (1, split[1])


@kernel
def mdav_tree_kernel(X, k, classic, leaf_size, switch, budget, split):
    """mdav_kernel with KD-trees and a radial list: the same labels, bit for bit.

    Farthest-from-centroid queries use the radial list (records sorted by distance to a nearby
    anchor), nearest-k queries a KD-tree, farthest-from-a-record queries a shell tree; both
    trees are rebuilt over the remaining records whenever their number has fallen below
    REBUILD_BELOW of the last build.

    switch=SWITCH_MEASURED chooses between the tree and brute force by measured cost (cycles): after
    SWITCH_FIRST_PAIRS pairs of groups, then each time the records left have fallen by SWITCH_EVERY,
    the next SWITCH_WARM_PAIRS + SWITCH_TRIAL_PAIRS pairs are formed by brute force
    (``_brute_trial``, the same groups), the last ones timed; if they cost less per pass over the
    records (going on, brute force makes about one a pair) than SWITCH_MARGIN times the tree's pairs
    since it was last built (its pairs get dearer as it empties until the next rebuild; few
    dimensions prune well, many do not, and brute force gains as the records run out), the rest runs
    by brute force. No trial while the last trial's cost per pass, scaled to the records left, is
    SWITCH_SKIP times the tree's. SWITCH_NEVER: the tree throughout; SWITCH_ALWAYS / SWITCH_TRIALS:
    brute force from the first trial on / trials without switching (both for the tests: the same
    labels on every path). The trial's cost leaves out copying the records into columns, paid once
    if brute force goes on (counted, it doubled brute force's cost per pair at 3·10^4 Gaussian
    records and kept the tree where brute force was cheaper).

    budget > 0: no pair of groups starts once this many cycles have passed since the call; the
    records not reached keep label −1 (``budget_cycles``; the caller groups them). split: as for
    ``mdav_brute_kernel``, for the passes once brute force goes on; with the tree, the queries of
    two pairs of groups at a time run on two threads (``_split_pair``), checked against one thread
    as they go (``mdav_split._pair_split_now``).
    """
    stop_cycle = stop_cycle_after(budget)
    n, d = X.shape
    labels = np.full(n, -1, dtype=np.int64)
    alive = np.ones(n, dtype=np.bool_)
    T, F = _build_trees(X, np.arange(n), leaf_size, split)
    built = n
    s, comp = running_sum_init(X)
    anchors = np.empty((2, d))
    tail, prefix = radial_index(X, np.arange(n), anchors, running_mean(s, comp, n))
    work = np.zeros(2, dtype=np.int64)
    members = np.empty(k, dtype=np.int64)
    dbuf = np.empty(k)
    excl = np.empty(1, dtype=np.int64)
    pos = np.empty(k, dtype=np.int64)
    gone = np.empty(2 * k, dtype=np.int64)
    m = n
    g = 0
    stop = 3 * k if classic else 2 * k
    tree_cycles, tree_pairs = 0, 0  # the tree's pairs of groups since it was built
    guard = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # split pairs against one thread
    bufs = (members, dbuf, np.empty(k, dtype=np.int64), np.empty(k), excl, np.zeros(2, np.int64))
    likely = np.full(2, -1, dtype=np.int64)  # a record likely to be a next pair's r, its farthest
    next_pair = (  # the next pair's answers, asked with this pair's (``_pair_ahead``)
        np.empty(k, dtype=np.int64),
        np.empty(k),
        np.empty(k, dtype=np.int64),
        np.empty(k),
    )
    brute_per_record = -1.0  # the last trial's cycles per pair and remaining record
    check = n - 2 * k * max(
        1, min(SWITCH_FIRST_PAIRS, n // (16 * k))
    )  # the next trial once this many remain
    while m >= stop:
        tic = cycles()
        c = running_mean(s, comp, m)
        r, tail, prefix = farthest_from_centroid(X, tail, prefix, anchors, work, alive, c, -1)
        xr = X[r].copy()
        if split is None:  # a condition on split alone, so that numba prunes the branch not taken
            _trees_take_group(T, F, X, xr, k, labels, g, s, comp, members, dbuf, excl, alive)
            r, _ = kdtree.farthest(F, xr, excl, 0)
            _trees_take_group(
                T, F, X, X[r].copy(), k, labels, g + 1, s, comp, members, dbuf, excl, alive
            )
        else:
            timed = m >= split[1]
            now = split if timed and _pair_split_now(guard) else (1, split[1])
            tail, prefix = _split_pair(
                T,
                F,
                X,
                (tail, prefix, anchors, work),
                alive,
                c,
                r,
                k,
                labels,
                g,
                s,
                comp,
                bufs,
                next_pair,
                likely,
                m - 2 * k >= stop,
                now,
            )
            if timed:
                _pair_timed(guard, cycles() - tic)
        g += 2
        m -= 2 * k
        toc = cycles()
        tree_cycles += toc - tic
        tree_pairs += 1
        if (
            m >= stop and stop_cycle > 0 and toc > stop_cycle
        ):  # pairs remain: stop (else MDAV's own tail)
            return labels
        if switch != SWITCH_NEVER and m <= check and m >= stop:
            tree_cost = tree_cycles / max(tree_pairs, 1)
            if (
                switch != SWITCH_MEASURED
                or brute_per_record < 0
                or brute_per_record * m < SWITCH_SKIP * tree_cost
            ):
                rest = kdtree.alive_indices(T)
                Xc = _columns(X, rest)
                dist, ahead, keep = np.empty(m), np.empty(m), np.empty(m, dtype=np.bool_)
                m_after, width, g, tail, prefix, brute_cost = _brute_trial(
                    X,
                    Xc,
                    rest,
                    m,
                    k,
                    stop,
                    labels,
                    g,
                    s,
                    comp,
                    (dist, ahead, keep, pos, gone),
                    alive,
                    (tail, prefix, anchors, work),
                    stop_cycle,
                    split,
                )
                brute_per_record = brute_cost / m
                if switch == SWITCH_ALWAYS or (
                    switch == SWITCH_MEASURED and brute_cost < SWITCH_MARGIN * tree_cost
                ):  # brute from here
                    m, width, g, tail, prefix, _ = _brute_pairs(
                        X,
                        Xc,
                        rest,
                        m_after,
                        width,
                        k,
                        stop,
                        n,
                        labels,
                        g,
                        s,
                        comp,
                        dist,
                        ahead,
                        keep,
                        pos,
                        gone,
                        alive,
                        tail,
                        prefix,
                        anchors,
                        work,
                        stop_cycle,
                        split,
                    )
                    if m < stop:  # not stopped by the budget
                        _brute_finish(
                            X,
                            Xc,
                            rest,
                            m,
                            width,
                            k,
                            classic,
                            labels,
                            g,
                            s,
                            comp,
                            dist,
                            keep,
                            pos,
                            gone,
                            alive,
                        )
                    return labels
                for i in kdtree.alive_indices(T):  # the tree goes on without the trial's groups
                    if not alive[i]:
                        kdtree.delete(T, i)
                        kdtree.delete(F, i)
                m = m_after
            check = int(SWITCH_EVERY * m)
        if m < REBUILD_BELOW * built:
            T, F = _build_trees(X, kdtree.alive_indices(T), leaf_size, _pairs_split(split, guard))
            built = m
            tree_cycles, tree_pairs = 0, 0
    if classic and m >= 2 * k:
        c = running_mean(s, comp, m)
        r, tail, prefix = farthest_from_centroid(X, tail, prefix, anchors, work, alive, c, -1)
        _trees_take_group(T, F, X, X[r].copy(), k, labels, g, s, comp, members, dbuf, excl, alive)
        g += 1
        m -= k
    rest = kdtree.alive_indices(T)
    if m >= k or g == 0:
        for i in rest:
            labels[i] = g
        g += 1
    elif m > 0:
        join_nearest_centroid(X, labels, g)
    return labels


@kernel
def vmdav_tree_kernel(X, k, gamma, global_centroid, leaf_size, budget):
    """vmdav_kernel with KD-tree queries: the same labels, bit for bit.

    The record nearest to the group (smallest d_in, lowest index on ties) comes from one
    nearest-to-any-member query (kernels.kdtree.nearest_to_any). budget > 0: no group starts once
    this many cycles have passed; the records not reached keep label −1 (``budget_cycles``).
    """
    stop_cycle = stop_cycle_after(budget)
    n, d = X.shape
    labels = np.full(n, -1, dtype=np.int64)
    alive = np.ones(n, dtype=np.bool_)
    T = kdtree.build(X, leaf_size)
    s, comp = running_sum_init(X)
    anchors = np.empty((2, d))
    tail, prefix = radial_index(X, np.arange(n), anchors, running_mean(s, comp, n))
    work = np.zeros(2, dtype=np.int64)
    members = np.empty(2 * k - 1, dtype=np.int64)
    dbuf = np.empty(k)
    excl = np.empty(1, dtype=np.int64)
    m = n
    g = 0
    c = mean_rows(X, n)
    while m >= k:
        if not global_centroid:
            c = running_mean(s, comp, m)
        r, tail, prefix = farthest_from_centroid(X, tail, prefix, anchors, work, alive, c, -1)
        _tree_take_group(T, X, X[r].copy(), k, labels, g, s, comp, members, dbuf, excl, alive)
        m -= k
        size = k
        while size < 2 * k - 1 and m > 0:
            e, din = kdtree.nearest_to_any(T, X, members, size, excl, 0)
            excl[0] = e
            if m == 1:  # e is the last unassigned record: d_out = inf, as in the plain loop
                if not (np.sqrt(din) < gamma * np.sqrt(np.inf)):
                    break
            elif kdtree.has_witness(T, X[e], excl, 1, din, gamma):  # not √din < gamma·√dout
                break
            members[size] = e
            size += 1
            labels[e] = g
            alive[e] = False
            running_sum_add(s, comp, X[e], -1.0)
            kdtree.delete(T, e)
            m -= 1
        g += 1
        if m >= 2 * k and past(stop_cycle):
            return labels
    if m > 0:
        join_nearest_centroid(X, labels, g)
    return labels
