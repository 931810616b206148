"""Neighbourhood local search (``lsearch``): ICSM's exact moves between nearby groups only.

ICSM (Mortazavi & Jalili 2015, Algorithm 2) compares every pair of groups, O(n²·d) per pass.
Most pairs are far apart and no move between them can lower SSE, so here each group p only
tries moves with K candidate neighbour groups: 1-opt migrations (Eqs. 5, 6), 2-opt exchanges
(Eqs. 3, 4) and the dissolution of p into those groups; each group applies its best move while
one lowers SSE, every delta exact (``kernels/neighbourhood.py``). One sweep costs O(n·K·k·d).

Neighbour groups: a k-NN graph of the records (scipy cKDTree, approximate within 1 + eps; it
only proposes candidates) is computed once, O(n·log n) time and O(n·K) memory; before every
round each group's neighbours are read from its members' nearest records (the first K other
groups met, nearest rank first), O(n·K), so they follow the records as groups change. Within
a round the graph is not refreshed: every delta is computed from the current sums anyway, so a
stale neighbour only costs a missed candidate, never a wrong delta. After the first sweep of a
round only the groups near a change are visited again.

Each round ends with a tour regrouping (ICSM Algorithm 2, lines 5–6, made scalable): the
groups strung into a path, each next group the neighbour group holding the record nearest to
the last one placed (a KD-tree over the centroids when every neighbour is visited), and the
path cut optimally into groups of k..2k−1 (Tour2Assignment), which is never worse and opens
new moves for the next round's sweeps. The search stops at convergence, after ``rounds``, or
at the deadline (checked between slices of groups and between rounds), and returns the current
partition: always valid (every group in k..2k−1) and never worse than the start.
"""

from __future__ import annotations

import time

import numpy as np

from ..deadline import Deadline
from ..declarations import Param
from ..labels import check_partition, relabel, sse, sst
from . import MethodOutput, register, step_fits
from .starts import check_labels_vs_input, check_start, start_labels

# moves with |ΔSSE| below this (relative to SST) are ignored: rounding noise
REL_TOL = 1e-10
NEIGHBOURS = 8
RECORD_NEIGHBOURS = 8  # nearest records per record, from which the neighbour groups are read
MAX_MOVES = 4  # moves a group applies per visit before the sweep moves on
SLICE = 20_000  # groups per kernel call between two deadline checks
KNN_SLICE = 20_000  # records per k-NN query between two deadline checks
#: a tour regrouping's seconds per record before the first one is timed (measured 2.5e-6
#: census-like, 5.3-7.4e-6 Gaussian 10-d at 10^5-3·10^5 records, load 3.4); later ones take
#: the longest so far
REGROUP_SECONDS_PER_RECORD = 1e-5
# the search ends when its last GAIN_WINDOW rounds lowered SSE by less than MIN_GAIN per round
# (relative). Measured on the benchmark data (10^5, k = 3): 5e-4 stops after ~20 rounds at
# −15.3 % IL vs MDAV; 1e-4 runs ~46 rounds for −16.1 % in 2.5x the time
MIN_GAIN = 5e-4
GAIN_WINDOW = 3
# neighbour queries within a factor 1 + NEIGHBOUR_EPS of the exact distances: the neighbours only
# propose candidate moves, evaluated exactly; exact queries cost ~5x more in 8-d
NEIGHBOUR_EPS = 1.0


def _valid_start(X, labels, k):
    """Labels 0..g−1 with every group in k..2k−1: groups of 2k or more split by MDAV inside the
    group."""
    labels = relabel(np.asarray(labels, dtype=np.int64))
    sizes = np.bincount(labels)
    if sizes.min() < k:
        raise ValueError(
            f"the start partition has a group of {int(sizes.min())} records, fewer than k = {k}"
        )
    if sizes.max() >= 2 * k:
        from ..kernels.mdav_labels import split_oversized

        labels = relabel(split_oversized(X, labels, k))
    return labels


def _record_knn(X, K, deadline=None):
    """(n, K) each record's K nearest other records (approximate, NEIGHBOUR_EPS), computed once, in
    calls of KNN_SLICE records with the deadline checked between them: None if it ends first (the
    graph is the search's longest step that nothing else interrupts: 8.5 s on 3·10^5 census-like
    records, 50 s on 3·10^5 Gaussian 10-d, load 3.4)."""
    from scipy.spatial import cKDTree

    m = min(K + 1, len(X))
    tree = cKDTree(X)
    near = np.empty((len(X), m - 1), dtype=np.int64)
    for a in range(0, len(X), KNN_SLICE):
        if deadline is not None and deadline.expired():
            return None
        _, found = tree.query(X[a : a + KNN_SLICE], k=m, eps=NEIGHBOUR_EPS)
        near[a : a + KNN_SLICE] = found.reshape(-1, m)[:, 1:]
    return near


def tour_regroup(X, k, sizes, sums, slots, nbr, first):
    """(SSE, labels): the partition's groups strung into a path (``group_tour``) and the path cut
    optimally into groups of k..2k−1 (Tour2Assignment, ICSM Algorithm 5, path version)."""
    from ..kernels.jit import tree_leaf_size
    from ..kernels.mdav_labels import LEAF_SIZE
    from ..kernels.neighbourhood import TOUR_SCAN_MAX_N, group_tour
    from ..kernels.segments import optimal_path_labels

    leaf_size = tree_leaf_size(len(X), LEAF_SIZE, TOUR_SCAN_MAX_N)
    tour = group_tour(X, sizes, sums, slots, nbr, first, leaf_size)
    cost, by_position = optimal_path_labels(X[tour], k)
    out = np.empty(len(X), dtype=np.int64)
    out[tour] = by_position
    return cost, out


def _changed_groups(old, new, g_new):
    """Mask of the groups of ``new`` whose member set is not a group of ``old``."""
    lo = np.full(g_new, len(old), dtype=np.int64)
    hi = np.full(g_new, -1, dtype=np.int64)
    np.minimum.at(lo, new, old)
    np.maximum.at(hi, new, old)
    return ~((lo == hi) & (np.bincount(new, minlength=g_new) == np.bincount(old)[lo]))


def _sweeps(X, k, labels, state, nbr, active, deadline, tol, dissolve, log, trace):
    """Sweeps over ``active`` groups, then over the groups near a change, until none changes
    (or the deadline). Returns (SSE change, moves, sweeps, stopped at the deadline)."""
    from ..kernels.neighbourhood import sweep

    sizes, sums, slots, pos = state
    g = len(sizes)
    gained, moves_total, sweeps = 0.0, 0, 0
    while len(active):
        changed = np.zeros(g, dtype=np.bool_)
        moves = 0
        for lo in range(0, len(active), SLICE):
            if deadline is not None and deadline.expired():
                return gained, moves_total + moves, sweeps, True
            part = active[lo : lo + SLICE]
            if deadline is not None:  # work: the records of the groups swept
                deadline.charge(float(sizes[part].sum()))
            delta, m, nlog = sweep(
                X,
                labels,
                sizes,
                sums,
                slots,
                pos,
                nbr,
                part,
                k,
                tol,
                MAX_MOVES,
                dissolve,
                changed,
                log,
                0,
            )
            gained += delta
            moves += m
            if trace is not None:
                for kind, a, b, dl in log[: min(nlog, len(log))]:
                    trace.append(
                        {
                            "kind": ("migrate", "exchange", "dissolve")[int(kind)],
                            "a": int(a),
                            "b": int(b),
                            "delta": float(dl),
                        }
                    )
        sweeps += 1
        moves_total += moves
        if moves == 0:
            break
        # next: the groups that changed and those that list a changed group as a neighbour
        touched = changed | (changed[np.maximum(nbr, 0)] & (nbr >= 0)).any(axis=1)
        active = np.flatnonzero(touched & (sizes > 0)).astype(np.int64)
    return gained, moves_total, sweeps, False


def _stopped_at_start(labels, start_sse):
    """The start, valid, as the answer: the deadline ended before the search could begin."""
    out = relabel(labels)
    return out, {
        "sse_start": start_sse,
        "sse": start_sse,
        "rounds": 0,
        "sweeps": 0,
        "moves": 0,
        "regroups": 0,
        "stopped": "deadline",
        "groups": int(out.max()) + 1,
    }


def _keep_if_lower(labels, regrouped, cost, current, tol, trace):
    """The regrouped partition if it lowers the SSE by more than rounding (tol), else the current
    one; returns (labels 0..g−1, the groups to sweep next (those changed), SSE)."""
    if cost < current - tol:
        old = relabel(labels)
        labels = relabel(regrouped)
        changed = _changed_groups(old, labels, int(labels.max()) + 1)
        active = np.flatnonzero(changed).astype(np.int64)
        if trace is not None:
            trace.append({"kind": "regroup", "labels": labels.copy(), "delta": cost - current})
        return labels, active, cost
    return relabel(labels), np.empty(0, dtype=np.int64), current


def _sweep_round(X, k, labels, record_knn, active, tol, options, log):
    """One round's sweeps of exact moves from ``labels`` (changed in place) until none applies:
    returns (the state of the groups, their neighbour groups, SSE change, moves, sweeps, stopped
    at the deadline). ``options``: neighbours, dissolve, deadline, trace."""
    from ..kernels.neighbourhood import build_state, neighbour_groups

    state = build_state(X, labels, int(labels.max()) + 1, k)
    nbr = neighbour_groups(labels, state[0], state[2], record_knn, options["neighbours"])
    deadline, dissolve, trace = options["deadline"], options["dissolve"], options["trace"]
    gained, moves, sweeps, out_of_time = _sweeps(
        X, k, labels, state, nbr, active, deadline, tol, dissolve, log, trace
    )
    return state, nbr, gained, moves, sweeps, out_of_time


def _regroup_fits(deadline, regroup_seconds):
    """Whether a tour regrouping may start: one cannot stop, so one expected to end past the
    deadline is not started."""
    return deadline is None or not (deadline.expired() or not step_fits(deadline, regroup_seconds))


def _regroup(X, k, state, nbr, rng, deadline):
    """The groups strung into a path from a random live group (``rng``) and cut optimally
    (``tour_regroup``): returns (its SSE, its labels, the seconds it took)."""
    sizes, sums, slots, _ = state
    alive = np.flatnonzero(sizes > 0)
    tic = time.perf_counter()
    cost, new = tour_regroup(X, k, sizes, sums, slots, nbr, int(alive[rng.integers(len(alive))]))
    if deadline is not None:
        deadline.charge(len(X))  # work: one pass over the records
    return cost, new, time.perf_counter() - tic


def _converged(history, min_gain, round_start):
    """The last round gained nothing, or the last GAIN_WINDOW rounds gained less than
    ``min_gain`` of the SSE per round."""
    window = history[-GAIN_WINDOW:]
    return history[-1] <= 0.0 or sum(window) <= min_gain * len(window) * round_start


def neighbourhood_search(
    X,
    k,
    labels,
    *,
    seed=None,
    deadline=None,
    progress=None,
    neighbours=NEIGHBOURS,
    rounds=None,
    regroup=True,
    dissolve=True,
    min_gain=MIN_GAIN,
    trace=None,
):
    """Local search from the valid partition ``labels``; returns (labels 0..g'−1, stats dict).

    One round: sweeps of exact moves between neighbour groups until none applies, then (with
    ``regroup``) the groups strung into a path from a random group (``seed``) and cut optimally
    (``tour_regroup``), which is never worse. Rounds repeat until one lowers SSE by less than
    ``min_gain`` (relative), ``rounds`` rounds, or the deadline. ``trace`` (a list; a debug hook
    for the tests) receives the labels at the start of every round ("round"), one dict per
    applied move ("migrate": record a to group b; "exchange": records a and b swap groups;
    "dissolve": one record a of a dissolved group joins group b) with its exact delta, and the
    labels after every applied regrouping ("regroup") with its delta.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    labels = _valid_start(X, labels, k)
    start_sse = current = sse(X, labels)
    if deadline is not None and deadline.expired():
        return _stopped_at_start(labels, start_sse)  # no k-NN graph (10^6: tens of s)
    record_knn = _record_knn(X, RECORD_NEIGHBOURS, deadline)
    if record_knn is None:  # the deadline ended while the graph was built: the start, valid
        return _stopped_at_start(labels, start_sse)
    tol = REL_TOL * max(sst(X), 1e-300)
    rng = np.random.default_rng(seed)
    log = np.empty((1_000_000 if trace is not None else 0, 4))
    options = {"neighbours": neighbours, "dissolve": dissolve, "deadline": deadline, "trace": trace}
    regroup_seconds = REGROUP_SECONDS_PER_RECORD * len(X)
    active = np.arange(int(labels.max()) + 1, dtype=np.int64)
    tally = {"rounds": 0, "sweeps": 0, "moves": 0, "regroups": 0}
    history, stopped = [], "converged"
    while rounds is None or tally["rounds"] < rounds:
        if trace is not None:
            trace.append({"kind": "round", "labels": labels.copy(), "delta": 0.0})
        state, nbr, gained, moves, sweeps, out_of_time = _sweep_round(
            X, k, labels, record_knn, active, tol, options, log
        )
        round_start, current = current, current + gained
        tally["rounds"] += 1
        tally["moves"] += moves
        tally["sweeps"] += sweeps
        if progress is not None:
            summary = f"{moves} moves in {sweeps} sweeps, SSE {current:.6g}"
            progress("lsearch", None, f"round {tally['rounds']}: {summary}")
        if out_of_time or (regroup and not _regroup_fits(deadline, regroup_seconds)):
            stopped = "deadline"
            break
        if not regroup:
            break
        cost, new, seconds = _regroup(X, k, state, nbr, rng, deadline)
        regroup_seconds = seconds if tally["regroups"] == 0 else max(regroup_seconds, seconds)
        tally["regroups"] += 1
        labels, active, current = _keep_if_lower(labels, new, cost, current, tol, trace)
        history.append(round_start - current)
        if _converged(history, min_gain, round_start):
            break
    out = relabel(labels)
    stats = {"sse_start": start_sse, "sse": current, "rounds": tally["rounds"]}
    stats.update(sweeps=tally["sweeps"], moves=tally["moves"], regroups=tally["regroups"])
    stats.update(stopped=stopped, groups=int(out.max()) + 1)
    return out, stats


#: share of a bounded deadline the initial method named by ``init`` may use
INIT_SHARE = 0.5


def _check_init(init):
    """``init``: a registered method name other than lsearch, or labels (one group id per
    record)."""
    return check_start(init, "lsearch")


def _check_input(values, n, d, k):
    """Start labels must be a valid partition: lsearch's moves keep every group at k or more."""
    check_labels_vs_input(values["init"], n, k, "lsearch", min_group=True)


@register(
    "lsearch",
    family="local-search",
    paper=(
        "Mortazavi & Jalili 2015 (ICSM) moves and Tour2Assignment, restricted to neighbour groups"
    ),
    complexity=(
        "O(n·log n) for the record k-NN graph, O(n·K·k·d) per sweep and per tour regrouping, "
        "O(n·(d + K)) memory"
    ),
    variable_size=True,
    randomized=True,
    params=(
        Param(
            "init",
            "object",
            "mdav",
            "start partition: a registered method name or labels, one group id "
            "per record (groups of 2k or more are split by MDAV)",
            check=_check_init,
        ),
        Param(
            "effort",
            "float",
            None,
            "stop the search after effort × the initial method's seconds (None: convergence, rounds"
            " or the time limit stop it; a number makes the result depend on the machine's speed)",
            low=0.0,
            nullable=True,
        ),
        Param(
            "neighbours",
            "int",
            NEIGHBOURS,
            "K: neighbour groups each group tries moves with",
            low=1,
        ),
        Param(
            "rounds",
            "int",
            None,
            "rounds (sweeps + one tour regrouping) at most (None: until converged)",
            low=1,
            nullable=True,
        ),
        Param(
            "min_gain",
            "float",
            MIN_GAIN,
            "converged when the last 3 rounds lowered SSE by less than this share per round",
            low=0.0,
        ),
        Param(
            "regroup",
            "bool",
            True,
            "regroup along a tour through the groups after each round's sweeps",
        ),
        Param("dissolve", "bool", True, "try dissolving each group into its neighbour groups"),
    ),
    interruptible=True,
    check_input=_check_input,
)
def lsearch(
    X, k, *, seed, deadline, progress, init, effort, neighbours, rounds, min_gain, regroup, dissolve
):
    """Local search that scales: ICSM's exact moves between neighbour groups and tour regroupings.

    From ``init``'s partition (MDAV by default), rounds of (1) sweeps in which every group
    applies its best exact 1-opt migration (ICSM Eqs. 5, 6) or 2-opt exchange (Eqs. 3, 4) with
    its K nearest groups, or dissolves into them, while one lowers SSE, and (2) a tour through
    the groups (each group's records consecutive, the next group the neighbour holding the
    record nearest to the last one) cut optimally into groups of k..2k−1 (Tour2Assignment,
    ICSM Algorithm 5), which is never worse. Neighbour groups are read from a k-NN graph of the
    records computed once. A sweep costs O(n·K·k·d), not ICSM's O(n²·d). Anytime: stops at
    convergence (three rounds gaining less than ``min_gain`` each on average), after ``rounds``,
    after ``effort`` × the initial method's time, or at the deadline, with a valid partition
    never worse than the start. The same ``seed`` (it picks each tour's first group) gives the
    same labels unless a time limit or ``effort`` stops the search.
    """
    n = len(X)
    deadline = Deadline.of(deadline)
    clock = Deadline(None)
    start = start_labels(
        X,
        k,
        init,
        owner="lsearch",
        seed=seed,
        deadline=deadline,
        share=INIT_SHARE,
        progress=progress,
    )
    init_seconds = clock.elapsed() if isinstance(init, str) else None
    limit = deadline.seconds()
    if effort is not None and init_seconds is not None:
        limit = effort * init_seconds if limit is None else min(limit, effort * init_seconds)
    search_deadline = deadline.share(1, 1)  # what the start left of the time and the work
    if limit is not None:
        search_deadline.end = search_deadline.start + limit
    if limit is None:
        report = progress
    else:

        def report(stage, fraction=None, message=""):
            progress(stage, min(search_deadline.elapsed() / max(limit, 1e-9), 1.0), message)

    labels, stats = neighbourhood_search(
        X,
        k,
        start,
        seed=seed,
        deadline=search_deadline,
        progress=report,
        neighbours=neighbours,
        rounds=rounds,
        regroup=regroup,
        dissolve=dissolve,
        min_gain=min_gain,
    )
    stats["init_seconds"] = init_seconds
    stats["init"] = init if isinstance(init, str) else "labels"
    return MethodOutput(check_partition(labels, n, k, "lsearch"), extras=stats)
