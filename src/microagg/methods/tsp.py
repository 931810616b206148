"""Travelling-salesman methods: MF-TSP (groups from Hamiltonian paths) and TSP-MHM (a tour cut
optimally).

MF-TSP follows its paper (Multivariate microaggregation with Fixed group size based on
the TSP, Algorithm 1): a Hamiltonian path from every record, a neighbourhood count matrix N
over those paths, greedy groups of k grown from the largest cell of N, leftovers to their
closest group. TSP-MHM is the variable-size method the paper leaves as future work: one good
tour of all records, cut optimally into consecutive groups of k..2k−1 (Tour2Assignment of the
ICSM paper, ``kernels.segments.optimal_cyclic_labels``).
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from ..declarations import Param
from ..labels import group_means, sse
from . import BudgetError, MethodOutput, register, step_fits, step_seconds

#: mf-tsp's grouping after the paths (greedy over the n×n counts, then the two endings): its time in
#: units of one batch of paths' time measured in the run, GROUPING_PER_BATCH at GROUPING_REF_N
#: records, growing as √n (eia, load 9.7: 1.14 at 2,000 records, 1.56 at 4,092; doubled for the
#: endings and a denser matrix). Under a time limit no batch starts that would leave less. The
#: estimate fails on a sparse matrix (one batch: many tied cells, 1.5 s against 0.3 s on eia), so
#: the grouping also watches the clock and, past the limit, groups the rest along the last path
#: (benchmarks/results/time_limits.md).
GROUPING_PER_BATCH, GROUPING_REF_N = 3.2, 4096
#: Work (``Deadline.charge``) per record of a path or tour, in record-steps of the local search
#: (measured on census and eia: a path's record costs 0.2-0.7 of one)
PATH_WEIGHT = 0.5

_EXTENSIONS = ("pair", "max", "sum")
_BATCH = 16  # paths per kernel call between time-limit checks
# candidate list width for nearest neighbour (fewer full scans); 2-opt/Or-opt use `neighbours`
_NN_CANDIDATES = 24


def candidate_neighbours(X: np.ndarray, K: int) -> np.ndarray:
    """(n, K) ids of each record's K nearest other records, nearest first (KD-tree).

    Duplicated rows may list each other in any order; a record is never its own candidate.
    """
    from scipy.spatial import cKDTree

    n = len(X)
    K = max(1, min(int(K), n - 1))
    _, idx = cKDTree(X).query(X, k=K + 1)
    idx = np.asarray(idx, dtype=np.int64).reshape(n, K + 1)
    keep = idx != np.arange(n)[:, None]
    keep[keep.all(axis=1), -1] = False  # self not returned (duplicates): drop the farthest
    return np.ascontiguousarray(idx[keep].reshape(n, K))


def _row_best(X, N, active, rows, block=256, deadline=None):
    """(value, partner) of the largest N[i, j] over active j ≠ i for each i in rows; ties go to
    the j nearest to i (the first such j on equal distances). Rows in blocks: O(block·n) memory.
    None when ``deadline``'s clock ran out between blocks (``Deadline.out_of_time``)."""
    vals = np.empty(len(rows), dtype=np.int64)
    args = np.empty(len(rows), dtype=np.int64)
    for b in range(0, len(rows), block):
        if deadline is not None and deadline.out_of_time():
            return None
        sub = rows[b : b + block]
        M = np.where(active, N[sub], -1)
        M[np.arange(len(sub)), sub] = -1
        v = M.max(axis=1)
        hit = M == v[:, None]
        vals[b : b + block] = v
        args[b : b + block] = hit.argmax(axis=1)
        for r in np.flatnonzero(hit.sum(axis=1) > 1):
            ties = np.flatnonzero(hit[r])
            args[b + r] = ties[np.argmin(((X[ties] - X[sub[r]]) ** 2).sum(axis=1))]
    return vals, args


def greedy_groups(X, N, k, extension="pair", deadline=None, order=None):
    """MF-TSP Algorithm 1 lines 11-24: greedy groups of k from the count matrix N.

    Seed (line 12): the largest cell N[i, j] among unassigned records. Ties (frequent: many pairs
    are neighbours on every path) go to the record i farthest from the centroid of the unassigned
    records, as in MDAV, paired with the nearest of its tied partners j. Extension (lines 14-22),
    k−2 times, by the unassigned record x with the largest score, ties to the record nearest the
    group's centroid: 'pair' (the paper's row i / column j maxima) scores max(N[i, x], N[x, j]);
    'max' the maximum over all members' rows; 'sum' the sum over them. Assigned records leave N
    (line 23); each row's best cell is cached and recomputed only when its partner leaves.

    Groups are made while at least k records remain. Returns (labels with −1 for the fewer than
    k leftovers, number of groups, number of groups made while more than 2k−1 remained, i.e.
    where the literal line 11 stops).

    ``deadline``: its clock is asked between groups (``Deadline.out_of_time``; a work budget is
    spent by the paths, never here). Once past the time limit, the records still unassigned are
    grouped k at a time in their order on ``order`` (the last path built: records near each other
    on it are close), the last group taking the fewer than k left; both endings are then that one.
    """
    n = len(X)
    labels = np.full(n, -1, dtype=np.int64)
    active = np.ones(n, dtype=bool)
    best_rows = _row_best(X, N, active, np.arange(n), deadline=deadline)
    if best_rows is None:
        return _along_path(labels, order, k, 0)
    row_val, row_arg = best_rows
    total = X.sum(axis=0)  # of the unassigned records
    remaining, g, g_literal = n, 0, 0
    while remaining >= k:
        if deadline is not None and deadline.out_of_time():
            return _along_path(labels, order, k, g)
        if remaining > 2 * k - 1:
            g_literal = g + 1
        stale = np.flatnonzero(active & ~active[row_arg])
        if len(stale):
            row_val[stale], row_arg[stale] = _row_best(X, N, active, stale)
        best = row_val[active].max()
        tied = np.flatnonzero(active & (row_val == best))
        i = int(tied[np.argmax(((X[tied] - total / remaining) ** 2).sum(axis=1))])
        members = [i, int(row_arg[i])]
        active[members] = False
        cent = 0.5 * (X[members[0]] + X[members[1]])
        while len(members) < k:
            if extension == "pair":
                score = np.maximum(N[members[0]], N[members[1]]).astype(np.int64)
            elif extension == "max":
                score = N[members].max(axis=0).astype(np.int64)
            else:
                score = N[members].sum(axis=0, dtype=np.int64)
            score[~active] = -1
            ties = np.flatnonzero(score == score.max())
            x = (
                int(ties[np.argmin(((X[ties] - cent) ** 2).sum(axis=1))])
                if len(ties) > 1
                else int(ties[0])
            )
            members.append(x)
            active[x] = False
            cent = cent + (X[x] - cent) / len(members)
        labels[members] = g
        total = total - X[members].sum(axis=0)
        remaining -= k
        g += 1
    return labels, g, g_literal


def _along_path(labels: np.ndarray, order: np.ndarray, k: int, g: int):
    """The unassigned records (label −1) in groups of k along ``order``, the last taking the
    remainder; returns greedy_groups' triple with both endings equal (every record grouped)."""
    order = np.arange(len(labels)) if order is None else order
    rest = order[labels[order] < 0]
    groups = max(len(rest) // k, 1)
    labels[rest] = g + np.minimum(np.arange(len(rest)) // k, groups - 1)
    return labels, g + groups, g + groups


def _finish(X: np.ndarray, labels: np.ndarray, g: int, k: int) -> np.ndarray:
    """Algorithm 1 line 25: k..2k−1 leftovers form a group; fewer join their closest group."""
    rest = labels < 0
    r = int(rest.sum())
    if r >= k or g == 0:
        labels[rest] = g
    elif r > 0:
        cent = group_means(X[~rest], labels[~rest])
        d2 = ((X[rest][:, None, :] - cent[None, :, :]) ** 2).sum(axis=2)
        labels[rest] = np.argmin(d2, axis=1)
    return labels


NEIGHBOURS = Param(
    "neighbours", "int", 10, "K: candidate neighbours per record for 2-opt and Or-opt", low=1
)


#: mf-tsp refuses data whose n×n int32 count matrix would take more than this share of the memory
MF_TSP_MEMORY_SHARE = 0.5


def _physical_memory() -> int:
    """Bytes of physical memory (Linux / macOS sysconf; 8 GiB where it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return 8 * 2**30


@register(
    "mf-tsp",
    family="tsp",
    paper=(
        "MF-TSP: multivariate microaggregation with fixed group size based on the TSP (its paper,"
        " Algorithm 1)"
    ),
    complexity=(
        "O(P·n²·d) time for P paths (P = n by default: O(n³)), O(n²) memory (n×n int32 count"
        " matrix)"
    ),
    variable_size=False,
    params=(
        Param(
            "n_paths",
            "int",
            None,
            "paths built, from seed-ed random start records (None: all n, the paper)",
            low=1,
            nullable=True,
        ),
        NEIGHBOURS,
        Param(
            "extension",
            "str",
            "pair",
            "how a group grows: 'pair' row/column maximum (the paper), 'max' / "
            "'sum' of N over all current members",
            choices=_EXTENSIONS,
        ),
    ),
)
def mf_tsp(X, k, *, seed, deadline, progress, n_paths, neighbours, extension):
    """MF-TSP: groups of k from how often records stand within k−1 places on Hamiltonian paths.

    Algorithm 1 of the paper: for every start record s, a short Hamiltonian path starting at s
    (the paper sets distances back to s to zero; here the path has s fixed first and a free end),
    found by nearest neighbour (over a candidate list of max(``neighbours``, 24) nearest records,
    scanning all unvisited records when it is used up), then 2-opt and Or-opt over the
    ``neighbours`` nearest records with don't-look bits (kernels/tsp_heuristics.py). N[i, j]
    counts the paths on which i and j stand within k−1 positions of each other
    (the paper's "at a distance of (k−1)", Table V; the window of its conclusion). N is
    accumulated as each path is built, never storing the paths: memory is the n×n int32 matrix
    (4·n² bytes: 4.7 MB for census, 67 MB for eia), so this method is documented quadratic.
    Groups: the largest cell of N gives two records; k−2 times the group grows by the row or
    column maximum (``extension='pair'``, lines 14-22); assigned records leave N (line 23).
    ``extension='max'`` / ``'sum'`` score a candidate by the maximum / sum of N over all
    current members instead (readings of "row and column" once a group has 3+ members).

    Ambiguities, resolved towards lower SSE: ties for the largest cell (frequent: on census
    k=3, 247 records have a partner next to them on all 1080 paths) go, as in MDAV, to the
    record farthest from the centroid of the unassigned records, paired with its nearest tied
    partner (census k=3: IL 5.90; taking the closest tied pair instead gave 6.54); ties when
    extending go to the record nearest the group's centroid. Algorithm 1
    (line 11) stops at 2k−1 remaining records, which then form one group, while the toy
    example keeps making groups of k and sends fewer than k leftovers to their closest group
    (nearest centroid); both endings are computed and the one with lower SSE is returned.

    ``n_paths`` (default None = all n start records, as in the paper) limits the number of
    paths, from start records in a ``seed``-ed random order, to bound the O(n³)-like time on
    large files; the deadline stops adding paths once expired, and the cycle counter ends the
    improvement of a path at the time limit (at least one path is always built). With all paths
    and no time limit the result does not depend on seed.
    """
    from ..kernels.cycles import budget_cycles
    from ..kernels.tsp_heuristics import build_paths

    n = len(X)
    need, memory = 4 * n * n, _physical_memory()
    if need > MF_TSP_MEMORY_SHARE * memory:
        raise BudgetError(
            f"mf-tsp keeps an n×n count matrix: {need / 2**30:,.1f} GiB for {n:,} records, more"
            f" than {MF_TSP_MEMORY_SHARE:.0%} of this machine's {memory / 2**30:,.0f} GiB; use"
            " tsp-mhm, lsearch or mdav"
        )
    X = np.ascontiguousarray(X, dtype=np.float64)
    neigh = candidate_neighbours(X, max(int(neighbours), _NN_CANDIDATES))
    K = min(int(neighbours), neigh.shape[1])
    order = np.random.default_rng(seed).permutation(n)
    if n_paths is not None:
        order = order[: min(int(n_paths), n)]
    N = np.zeros((n, n), dtype=np.int32)
    path = np.empty(n, dtype=np.int64)
    done = 0
    grouping = GROUPING_PER_BATCH * math.sqrt(n / GROUPING_REF_N)  # the grouping's time in batches
    for b in range(0, len(order), _BATCH):
        batch = order[b : b + _BATCH]
        tic = time.monotonic()
        cut_at = budget_cycles(step_seconds(deadline))  # the cycle counter ends a path at the limit
        done += build_paths(X, neigh, K, K, batch, False, k, N, path, cut_at)
        deadline.charge(PATH_WEIGHT * len(batch) * n)  # work: each path visits every record
        progress("mf-tsp", done / len(order), f"{done}/{len(order)} paths")
        # no batch whose end would leave less than the grouping needs (it cannot be interrupted)
        if not deadline.room_for((1.0 + grouping) * (time.monotonic() - tic)):
            break
    labels, g, g_literal = greedy_groups(X, N, k, extension, deadline, path)
    literal = labels.copy()
    literal[literal >= g_literal] = -1  # Algorithm 1 line 11: stop at 2k−1 remaining records
    best, best_sse = None, np.inf
    for candidate in (_finish(X, literal, g_literal, k), _finish(X, labels, g, k)):
        value = sse(X, candidate)
        if value < best_sse:
            best, best_sse = candidate, value
    extras = {"paths": done}
    if deadline.out_of_time():  # the grouping was cut (greedy_groups)
        extras["stopped"] = (
            "mf-tsp reached the time limit while grouping: the records left were "
            "grouped k at a time along its last path"
        )
    return MethodOutput(best, extras=extras)


#: tsp-mhm's first tour (candidate neighbours, nearest neighbour, 2-opt and Or-opt) cannot be
#: interrupted; measured (census-like, 13 attributes, k = 3, CPU s, time limit 0.01 s): 0.73 s at
#: 3·10^4, 4.7 s at 10^5 (n^1.55); killed after 240 s at 10^6. What a time limit must leave
#: (``least_seconds``).
TSP_FIRST_TOUR_SECONDS = 0.7
#: From this many records a time-limited tsp-mhm first times its first tour on samples of
#: PROBE_RECORDS / 4 and PROBE_RECORDS records (its own generator) and extrapolates with the growth
#: they show (clipped to TOUR_GROWTH): the cost varies with the data far beyond the census-based
#: model. Measured first tours at 4,000 / 16,000 / 10^5 records: census-like 0.076 / 0.47 / 4.8 s
#: (n^1.3), Gaussian 10-d 0.18 / 1.77 / 44 s (n^1.65-1.76; the model said 3.5 s at 10^5).
PROBE_MIN_N, PROBE_RECORDS, TOUR_GROWTH = 20_000, 8_000, (1.2, 2.0)


def _tour_inputs(X, k, smoothing, neighbours):
    """(Y, candidate neighbours, K, m): the cloud the tours are built through (each record's mean
    with its m − 1 nearest neighbours when m = smoothing > 1) and its candidate lists."""
    from scipy.spatial import cKDTree

    n = len(X)
    m = k // 2 + 1 if smoothing is None else min(int(smoothing), n)
    Y = X
    if m > 1:
        _, idx = cKDTree(X).query(X, k=m)
        Y = np.ascontiguousarray(X[idx].mean(axis=1))
    neigh = candidate_neighbours(Y, max(int(neighbours), _NN_CANDIDATES))
    return Y, neigh, min(int(neighbours), neigh.shape[1]), m


def _first_tour(X, k, smoothing, neighbours):
    """The first tour's work on X (for timing): its inputs and one tour from record 0."""
    from ..kernels.tsp_heuristics import build_paths

    Y, neigh, K, _ = _tour_inputs(X, k, smoothing, neighbours)
    build_paths(
        Y,
        neigh,
        K,
        K,
        np.array([0], dtype=np.int64),
        True,
        0,
        np.zeros((1, 1), dtype=np.int32),
        np.empty(len(X), dtype=np.int64),
    )


def _refuse_if_first_tour_cannot_fit(X, k, smoothing, neighbours, deadline):
    """BudgetError when the first tour on X, extrapolated from one on PROBE_RECORDS records,
    cannot end within the time left (``step_fits``): it cannot be interrupted."""

    n = len(X)
    if not deadline.bounded or n < PROBE_MIN_N:
        return
    sample = np.ascontiguousarray(
        X[np.random.default_rng(0).choice(n, PROBE_RECORDS, replace=False)]
    )
    _first_tour(
        sample[:100], k, smoothing, neighbours
    )  # loads (or compiles) the kernels: not timed
    seconds = []
    for size in (PROBE_RECORDS // 4, PROBE_RECORDS):
        tic = time.monotonic()
        _first_tour(sample[:size], k, smoothing, neighbours)
        seconds.append(time.monotonic() - tic)
    growth = float(
        np.clip(np.log(max(seconds[1], 1e-9) / max(seconds[0], 1e-9)) / np.log(4.0), *TOUR_GROWTH)
    )
    need = seconds[1] * (n / PROBE_RECORDS) ** growth
    if not step_fits(deadline, need):
        raise BudgetError(
            f"method 'tsp-mhm' cannot finish within the time limit on {n:,} records: its first tour"
            f" needs about {need:,.0f} s on these data (timed on {PROBE_RECORDS:,} of them, growing"
            f" as n^{growth:.2f}), {deadline.remaining():,.0f} s left; raise the time limit, or use"
            " mdav, lsearch or auto"
        )


@register(
    "tsp-mhm",
    family="tsp",
    paper=(
        "MF-TSP paper's future work (variable size); Tour2Assignment from the ICSM paper"
        " (Algorithm 5)"
    ),
    complexity=(
        "O(S·(n²·d + n·k²·d)) time for S tours (nearest-neighbour scans, 2k−1 cuts), O(n·(d + K))"
        " memory"
    ),
    variable_size=True,
    randomized=True,
    least_seconds=lambda n, d, k: TSP_FIRST_TOUR_SECONDS * (d / 13) * (n / 3e4) ** 1.55,
    params=(
        Param(
            "n_starts",
            "int",
            10,
            "tours tried (the first from the record farthest from the centroid)",
            low=1,
        ),
        Param(
            "smoothing",
            "int",
            None,
            "tours built through each record's mean with its smoothing − 1 nearest "
            "neighbours (None: ⌊k/2⌋ + 1; 1: off)",
            low=1,
            nullable=True,
        ),
        NEIGHBOURS,
    ),
)
def tsp_mhm(X, k, *, seed, deadline, progress, n_starts, smoothing, neighbours):
    """TSP-MHM: a short closed tour of all records, cut optimally into groups of k..2k−1.

    The variable-size variant the MF-TSP paper names as future work: each tour is built by
    nearest neighbour and improved by 2-opt + Or-opt (K = ``neighbours`` candidates per record);
    Tour2Assignment (ICSM paper, Algorithm 5) cuts it optimally into consecutive groups of
    k..2k−1 along the cycle. ``n_starts`` tours are tried, from the record farthest from the
    centroid and then from ``seed``-ed random records; the cut with the lowest SSE is kept.

    ``smoothing`` (default None = ⌊k/2⌋ + 1; 1 = off): the tour is built through each record's
    mean with its smoothing − 1 nearest neighbours, the cut uses the records themselves. Plain
    tours in 13 dimensions run in strands, so groups of 10 consecutive records are elongated
    (census k=10: IL 15.2 at best over 40 tours, worse than MDAV's 14.16); on the smoothed
    cloud records of one compact neighbourhood sit together on the tour (13.4-13.8).
    No new tour starts once the longest so far would overrun the deadline; the first always runs,
    its 2-opt / Or-opt ended by the cycle counter at the time limit (kernels/tsp_heuristics.py
    ``improve``).
    """
    from ..kernels.cycles import budget_cycles
    from ..kernels.segments import optimal_cyclic_labels
    from ..kernels.tsp_heuristics import build_paths

    n = len(X)
    X = np.ascontiguousarray(X, dtype=np.float64)
    _refuse_if_first_tour_cannot_fit(X, k, smoothing, neighbours, deadline)
    Y, neigh, K, m = _tour_inputs(X, k, smoothing, neighbours)
    far = int(np.argmax(((X - X.mean(axis=0)) ** 2).sum(axis=1)))
    rng = np.random.default_rng(seed)
    others = rng.permutation(np.delete(np.arange(n), far))
    starts = np.concatenate([[far], others])[: int(n_starts)]
    unused = np.zeros((1, 1), dtype=np.int32)
    tour = np.empty(n, dtype=np.int64)
    best_cost, best_labels, tours, longest = np.inf, None, 0, 0.0
    for s in starts:
        tic = time.monotonic()
        build_paths(
            Y,
            neigh,
            K,
            K,
            np.array([s], dtype=np.int64),
            True,
            0,
            unused,
            tour,
            budget_cycles(step_seconds(deadline)),
        )
        cost, by_position = optimal_cyclic_labels(X[tour], k)
        tours += 1
        deadline.charge(PATH_WEIGHT * n)  # work: a tour visits every record
        if cost < best_cost:
            best_cost = cost
            best_labels = np.empty(n, dtype=np.int64)
            best_labels[tour] = by_position
        progress(
            "tsp-mhm", tours / len(starts), f"tour {tours}/{len(starts)}, best SSE {best_cost:.4f}"
        )
        longest = max(longest, time.monotonic() - tic)
        if not deadline.room_for(longest):  # a tour cannot be interrupted: none that would overrun
            break
    return MethodOutput(best_labels, extras={"tours": tours, "smoothing": m})
