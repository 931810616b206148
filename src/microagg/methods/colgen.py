"""Column generation for microaggregation with a proven lower bound on the optimal SSE.

Paper: ../shared/papers/column-generation.txt (set-partitioning model (9), cluster cost
w_C = SSE of C (8), pricing per fixed size eta (10), ILP (14) with the node-to-node
inequalities (12), SolveHeuristicPricing, SimpleRoundingHeuristic, RoundingMSTHeuristic and
MicroaggregationHeuristicMP, Section 5). Beyond the paper (ours): exact pricing by
branch-and-bound in a KD-tree ball, subset-row cuts, and a closing enumeration + MIP that
turns the LP bound into a proof of optimality when the gap is small.

Lower bound. For any duals π, every partition P into clusters of sizes k..2k−1 (optimal
partitions only use those, Proposition 2.2) has SSE(P) = Σ_i π_i + Σ_{C∈P} rc(C), and
rc(C) = Σ_{i∈C} rc(C)/|C|; so with ρ_i ≤ rc(C)/|C| for every cluster C ∋ i,
    SSE(P) ≥ Σ_i π_i + Σ_i ρ_i                                 (per-record Lagrangian bound)
which is at least the paper-style Σπ + n·min(0, min_eta rc*_eta / eta). The issue allows a
proven bound on rc*_eta instead of its value: the branch-and-bound pricing gives every seed
(the largest-dual member of a cluster) a proven bound even when its search is cut short
(kernels/pricing.py), and ρ_i is the smallest such bound over the seeds whose ball holds i,
divided by eta. So every completed exact pass yields a bound, at any duals; at convergence
(no negative column, no seed cut short) it equals the LP value. Before any LP, the feasible
dual π_i = D_i(k−1)/(2k) (D_i(t): the t smallest squared distances from i, kernels/pricing.py)
gives the bound Σπ (the k-nearest-neighbour bound). After convergence, if the best partition
is above the bound by G, every cluster of a better partition has rc < G − (its share), so
enumerating all clusters with rc < UB − Σπ − Σρ and solving the integral master over them
proves the optimum (the bound then equals the best SSE); this closing step is ours.

Time limit. Every step checks the clock: the master LPs and MIPs get the time left (HiGHS
limits; MIPs 80 % of it, as HiGHS can overrun), the numba kernels run in slices (pricing
heuristics by chunks of starts, branch-and-bound by node budgets from the measured node rate),
the init methods get 30 % of the time left (icsm honours it; mdav, vmdav take milliseconds).
Measured slack with numba's cache warm: ≤ max(0.5 s, 10 % of the limit)
(benchmarks/results/colgen_time_limit.md). The first call after installing or editing the
kernels compiles them (seconds, not covered).
"""

from __future__ import annotations

import itertools
import time

import highspy
import numpy as np
from numba import njit
from scipy import sparse
from scipy.spatial import cKDTree

from ..kernels.nearest import join_nearest_centroid
from ..kernels.pricing import (
    alternating_pricing,
    bnb_pricing,
    column_costs,
    column_rcs,
    enumeration_pricing,
    greedy_pricing,
)
from ..kernels.mdav import mdav_kernel
from ..params import Param
from ..partition import check_partition, relabel, sse
from . import MethodOutput, register
from . import run as run_method


# --------------------------------------------------------------------------------------
# rounding heuristics (Section 5.2)


@njit(cache=True, nogil=True)
def _simple_rounding(X, k, ptr, members, order):
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


def _split_oversized(X, labels, k):
    """Groups of 2k records or more (SRH's AddRemainingNodes, the MSTH repair and some initial
    methods make them) split by MDAV inside the group into groups of k..2k−1. Splitting never
    raises the SSE: SSE(A ∪ B) = SSE(A) + SSE(B) + |A||B|/(|A| + |B|)·‖x̄_A − x̄_B‖²."""
    sizes = np.bincount(labels)
    big = np.flatnonzero(sizes >= 2 * k)
    if len(big) == 0:
        return labels
    labels = labels.copy()
    g = len(sizes)
    for b in big:
        idx = np.flatnonzero(labels == b)
        sub = mdav_kernel(np.ascontiguousarray(X[idx]), k, True)
        labels[idx] = np.where(sub == 0, b, g + sub - 1)
        g += int(sub.max())
    return labels


@njit(cache=True, nogil=True)
def _find(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@njit(cache=True, nogil=True)
def _mst_rounding(X, k, ptr, members, x, maxcl):
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
    o = np.argsort(keys, kind="mergesort")
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


@njit(cache=True, nogil=True)
def _separate_subset_rows(n, ptr, members, x, min_violation):
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


# --------------------------------------------------------------------------------------
# the restricted master LP (9), grown with addCols and re-solved warm


def _set_time_limit(h: highspy.Highs, seconds: float) -> None:
    """Let the next h.run() last at most ``seconds``. HiGHS (1.x) compares its time_limit
    with the run time accumulated over ALL runs of the object, so the limit is offset by it."""
    if not np.isfinite(seconds):
        h.setOptionValue("time_limit", highspy.kHighsInf)
    else:
        h.setOptionValue("time_limit", float(h.getRunTime()) + max(float(seconds), 0.0))


class _Master:
    def __init__(self, X: np.ndarray):
        self.X = X
        self.n = len(X)
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)
        # primal simplex: after addCols the last basis stays primal feasible. The default (dual)
        # simplex stalls on the degenerate early masters: census k = 5, 120 s, it spent 93 s in
        # 14 LPs (43 000 iterations for the last one); primal: 19 s in 46 LPs
        self.h.setOptionValue("simplex_strategy", 4)
        ones = np.ones(self.n)
        self.h.addRows(self.n, ones, ones, 0, np.zeros(self.n, np.int32), np.zeros(0, np.int32), np.zeros(0))
        self.keys: set[bytes] = set()
        self.ptr = np.zeros(1, dtype=np.int64)
        self.members = np.zeros(0, dtype=np.int64)
        self.costs = np.zeros(0)
        self.cuts = np.zeros((0, 3), dtype=np.int64)  # subset-row cuts: Σ_{C: |C∩S|>=2} x_C <= 1
        self.cut_keys: set[tuple] = set()

    def _incidence(self, ptr, members):
        ncol = len(ptr) - 1
        return sparse.csr_matrix(
            (np.ones(len(members)), members, ptr), shape=(ncol, self.n)
        )

    def _cut_hits(self, ptr, members, cuts):
        """(column, cut) pairs where the column holds >= 2 records of the cut."""
        if len(cuts) == 0 or len(ptr) <= 1:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        M = sparse.csr_matrix(
            (np.ones(cuts.size), cuts.ravel(), np.arange(0, cuts.size + 1, 3)), shape=(len(cuts), self.n)
        ).T.tocsr()
        hits = (self._incidence(ptr, members) @ M).tocoo()
        keep = hits.data >= 2
        return hits.row[keep].astype(np.int64), hits.col[keep].astype(np.int64)

    def add_cuts(self, triples) -> int:
        new = [t for t in (tuple(sorted(map(int, t))) for t in triples) if t not in self.cut_keys]
        if not new:
            return 0
        self.cut_keys.update(new)
        new = np.asarray(new, dtype=np.int64)
        cols, cuts = self._cut_hits(self.ptr, self.members, new)
        order = np.lexsort((cols, cuts))
        cols, cuts = cols[order], cuts[order]
        starts = np.searchsorted(cuts, np.arange(len(new)))
        self.h.addRows(len(new), np.full(len(new), -highspy.kHighsInf), np.ones(len(new)), len(cols),
                       starts.astype(np.int32), cols.astype(np.int32), np.ones(len(cols)))
        self.cuts = np.concatenate([self.cuts, new])
        return len(new)

    def cut_arrays(self, sigma):
        """record -> cuts CSR and penalties −σ_S >= 0 for the pricing kernels."""
        nc = len(self.cuts)
        if nc == 0:
            return np.zeros(self.n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0)
        rec = self.cuts.ravel()
        cut = np.repeat(np.arange(nc), 3)
        order = np.argsort(rec, kind="stable")
        cptr = np.concatenate([[0], np.cumsum(np.bincount(rec, minlength=self.n))]).astype(np.int64)
        return cptr, cut[order].astype(np.int64), np.maximum(-sigma, 0.0)

    @property
    def ncols(self) -> int:
        return len(self.costs)

    def has(self, c) -> bool:
        return np.unique(np.asarray(c, dtype=np.int64)).tobytes() in self.keys

    def add(self, clusters) -> int:
        """Add the clusters (iterables of record ids) not yet in the master; returns how many."""
        new = []
        for c in clusters:
            c = np.unique(np.asarray(c, dtype=np.int64))
            key = c.tobytes()
            if key not in self.keys:
                self.keys.add(key)
                new.append(c)
        if not new:
            return 0
        sizes = np.fromiter((len(c) for c in new), dtype=np.int64, count=len(new))
        flat = np.concatenate(new)
        ptr = np.concatenate([[0], np.cumsum(sizes)])
        costs = column_costs(self.X, ptr, flat)
        if len(self.cuts):
            hc, hk = self._cut_hits(ptr, flat, self.cuts)
            rows = np.concatenate([flat, self.n + hk])
            owner = np.concatenate([np.repeat(np.arange(len(new)), sizes), hc])
            order = np.argsort(owner, kind="stable")
            rows = rows[order]
            cstarts = np.searchsorted(owner[order], np.arange(len(new)))
        else:
            rows, cstarts = flat, ptr[:-1]
        self.h.addCols(
            len(new), costs, np.zeros(len(new)), np.full(len(new), highspy.kHighsInf),
            len(rows), cstarts.astype(np.int32), rows.astype(np.int32), np.ones(len(rows)),
        )
        self.members = np.concatenate([self.members, flat])
        self.ptr = np.concatenate([self.ptr, ptr[1:] + self.ptr[-1]])
        self.costs = np.concatenate([self.costs, costs])
        return len(new)

    def solve(self, time_limit: float = np.inf):
        """(LP value, x, π) of the restricted master; None if stopped by the time limit."""
        _set_time_limit(self.h, time_limit)
        self.h.run()
        status = self.h.getModelStatus()
        if status == highspy.HighsModelStatus.kTimeLimit:
            return None
        if status != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(f"master LP not solved to optimality: {self.h.modelStatusToString(status)}")
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value, dtype=np.float64)
        duals = np.asarray(sol.row_dual, dtype=np.float64)
        sigma = np.minimum(duals[self.n:], 0.0)  # <= rows of a minimisation: σ <= 0
        return float(self.h.getInfo().objective_function_value), x, duals[:self.n], sigma

    def solve_integral(self, time_limit: float, incumbent: np.ndarray | None, abs_gap: float = 0.0,
                       primal: bool = False):
        """The integral master over the current columns (HiGHS MIP), stopped when the gap to
        its own bound is at most abs_gap.

        Returns (labels or None, objective, dual bound, optimal?)."""
        mip = highspy.Highs()
        mip.setOptionValue("output_flag", False)
        mip.setOptionValue("threads", 1)
        mip.passModel(self.h.getLp())
        ncol = self.ncols
        if primal:
            # looking for good partitions: cut rows only slow the MIP down; more heuristics
            if len(self.cuts):
                mip.deleteRows(len(self.cuts), np.arange(self.n, self.n + len(self.cuts), dtype=np.int32))
            mip.setOptionValue("mip_heuristic_effort", 0.3)
        mip.changeColsIntegrality(
            ncol, np.arange(ncol, dtype=np.int32), np.full(ncol, highspy.HighsVarType.kInteger)
        )
        _set_time_limit(mip, max(float(time_limit), 0.05))
        mip.setOptionValue("mip_rel_gap", 1e-9)
        mip.setOptionValue("mip_abs_gap", float(abs_gap))
        if incumbent is not None:
            sol = highspy.HighsSolution()
            sol.col_value = list(incumbent)
            sol.value_valid = True
            try:
                mip.setSolution(sol)
            except Exception:  # older highspy: no warm start, not needed for correctness
                pass
        mip.run()
        info = mip.getInfo()
        status = mip.getModelStatus()
        optimal = status == highspy.HighsModelStatus.kOptimal
        dual_bound = float(info.mip_dual_bound)
        if info.primal_solution_status < 2:  # no feasible solution
            return None, np.inf, dual_bound, optimal
        xv = np.asarray(mip.getSolution().col_value)
        return self.labels_from(xv), float(info.objective_function_value), dual_bound, optimal

    def labels_from(self, x: np.ndarray) -> np.ndarray | None:
        """Labels from an integral x (columns with x > 0.5), None if they do not partition."""
        labels = np.full(self.n, -1, dtype=np.int64)
        for g, c in enumerate(np.flatnonzero(x > 0.5)):
            mem = self.members[self.ptr[c]:self.ptr[c + 1]]
            if (labels[mem] >= 0).any():
                return None
            labels[mem] = g
        return None if (labels < 0).any() else labels

    def indicator(self, labels: np.ndarray) -> np.ndarray:
        """x with 1 on the columns of the partition ``labels`` (all must be in the master)."""
        x = np.zeros(self.ncols)
        index = {self.members[self.ptr[c]:self.ptr[c + 1]].tobytes(): c for c in range(self.ncols)}
        for mem in _groups(labels):
            x[index[np.sort(mem).tobytes()]] = 1.0
        return x


def _groups(labels: np.ndarray) -> list[np.ndarray]:
    labels = relabel(labels)
    order = np.argsort(labels, kind="stable")
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    return np.split(order, cuts)


# --------------------------------------------------------------------------------------
# pricing


_RADIUS_FACTOR = 2.0  # see _Pricer._bnb


def knn_sums(X: np.ndarray, t_max: int) -> np.ndarray:
    """D[i, t] = sum of the t smallest squared distances from record i to the OTHER records,
    t = 0..t_max (the D_i(t) of kernels/pricing.py). The neighbours come from a KD-tree; the
    squared distances are recomputed exactly and the sums scaled down by 1e-12 relative, so
    that rounding can never make the bounds built on them invalid."""
    n = len(X)
    t_max = min(int(t_max), n - 1)
    _, idx = cKDTree(X).query(X, k=t_max + 1)
    idx = np.asarray(idx).reshape(n, t_max + 1)
    d2 = np.einsum("ijk,ijk->ij", X[idx] - X[:, None, :], X[idx] - X[:, None, :])
    d2 = np.sort(d2, axis=1)[:, 1:]  # drop one zero: the record itself (or an identical one)
    out = np.zeros((n, t_max + 1))
    out[:, 1:] = np.cumsum(d2, axis=1) * (1.0 - 1e-12)
    return out


class _Exact:
    """Result of one exact pricing call for one size eta.

    cols, rcs: clusters with rc < thr found; lb: lower bound on the rc of every cluster of
    size eta (None: no bound, out of time); rho: per record i, a lower bound on the rc of
    every cluster of size eta containing i (None: only lb); exact: the search was complete
    (no seed cut short), so no cluster with rc < thr was missed; overflow: enumeration buffer
    full."""

    __slots__ = ("cols", "rcs", "lb", "rho", "exact", "overflow")

    def __init__(self, cols, rcs, lb, rho=None, exact=True, overflow=False):
        self.cols, self.rcs, self.lb, self.rho, self.exact, self.overflow = cols, rcs, lb, rho, exact, overflow


class _Pricer:
    """Pricing for sizes eta = k..2k−1: heuristics, then an exact method."""

    def __init__(self, X, k, exact_pricing, deadline, max_nodes, seed_nodes):
        self.X, self.k = X, k
        self.n = len(X)
        self.exact = exact_pricing
        self.deadline = deadline
        self.max_nodes = max_nodes  # per call when enumerating all columns below a threshold
        self.seed_nodes = seed_nodes  # per seed when pricing (grown when a pass is cut short)
        self.pass_deadline = None  # after it, a pricing pass only computes root bounds (fast)
        self.stats = {"seeds": 0, "cut_short": 0, "nodes": 0}  # exact pricing (bnb), all passes
        # a seed cut short is searched again with thresholds lowered by retry_unit·eta·4^j
        # (bnb_pricing); the unit is set by the caller from the scale of the SSE
        self.retry_unit = 0.0
        self.max_attempts = 8
        self.node_rate = 20_000.0  # first guess (nodes per second); measured on every slice
        self.tree = cKDTree(X) if exact_pricing == "bnb" else None
        self.knn_sum = knn_sums(X, 2 * k - 2)
        self.set_cuts(np.zeros(self.n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0))

    def _measured(self, nodes: int, seconds: float) -> None:
        """Update the branch-and-bound node rate (nodes per second, smoothed)."""
        if nodes >= 1_000 and seconds > 1e-3:
            self.node_rate = 0.5 * self.node_rate + 0.5 * nodes / seconds

    def set_cuts(self, cptr, ccut, cpen):
        self.cuts = (cptr, ccut, cpen)

    def time_left(self) -> float:
        return np.inf if self.deadline is None else self.deadline - time.perf_counter()

    def heuristic(self, pi, thr, starts):
        """Paper's greedy, then alternating centre/members from ``starts``; lists of clusters."""
        cols, rcs = [], []
        # the alternating descent costs O(starts·n·d) per eta (~1 s at n = 1080, eta = 19):
        # run it on chunks of starts and stop at the deadline (a heuristic may stop anywhere)
        chunk = max(16, 200_000 // max(self.n, 1))
        for eta in range(self.k, 2 * self.k):
            if eta > self.n or self.time_left() <= 0:
                break
            m, r = greedy_pricing(self.X, pi, eta, thr, *self.cuts)
            cols += list(m)
            rcs += list(r)
            for lo in range(0, len(starts), chunk):
                if self.time_left() <= 0:
                    break
                m, r = alternating_pricing(self.X, pi, eta, starts[lo:lo + chunk], thr, 20, *self.cuts)
                cols += list(m)
                rcs += list(r)
        return cols, np.asarray(rcs)

    def exact_eta(self, pi, eta, thr, collect_all=False, max_cols=200_000) -> _Exact:
        """Exact pricing for size eta at the duals pi (cut penalties from set_cuts)."""
        if eta > self.n:
            return _Exact([], np.zeros(0), np.inf, np.full(self.n, np.inf))
        if self.exact == "enumeration":
            return self._enumerate(pi, eta, thr, collect_all, max_cols)
        if self.exact == "ilp":
            return self._ilp(pi, eta, thr, collect_all, max_cols)
        return self._bnb(pi, eta, thr, collect_all, max_cols)

    def enumerate_below(self, pi, thr, max_cols):
        """Every cluster of size k..2k−1 with rc < G' for the largest G' ≤ thr that keeps at
        most ~max_cols of them. Returns (clusters, rcs, G'), all None when out of time."""
        per_eta = max(max_cols // self.k, 1)
        while True:
            cols, rcs, g = [], [], thr
            for eta in range(self.k, 2 * self.k):
                self.last_threshold = g
                res = self.exact_eta(pi, eta, g, collect_all=True, max_cols=per_eta)
                if res.lb is None or not res.exact:
                    return None, None, None
                if res.overflow:  # enumeration / ilp: no adaptive threshold, retry lower
                    g = None
                    break
                g = min(g, self.last_threshold)
                cols += list(res.cols)
                rcs += list(res.rcs)
            if g is None:
                thr /= 2.0
                continue
            rcs = np.asarray(rcs)
            keep = np.flatnonzero(rcs < g)
            return [cols[i] for i in keep], rcs[keep], g

    def _bnb(self, pi, eta, thr, collect_all, max_cols):
        """Branch-and-bound from every seed s (the member of largest dual) in its KD-tree ball.

        Pricing (collect_all=False): each seed gets at most self.seed_nodes nodes; a seed cut
        short still yields a proven lower bound (its open nodes), so the pass always ends with
        valid bounds: lb on every cluster of size eta and rho_i on those containing record i
        (over the seeds whose ball holds i: the least rc found below the threshold, and for the
        rest the seed's threshold or bound, raised to the root bound with i forced in; thr when
        no ball holds i: such clusters have rc ≥ max(thr, 0), see the ball below). The pass is
        exact when no seed was cut. Out of time: lb = None. collect_all: every cluster with rc < thr
        (searched to the end; lb = None when that could not be done in time / max_nodes).
        """
        X, n = self.X, self.n
        gpos = max(thr, 0.0)
        order = np.argsort(-pi, kind="stable")
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        # next[r, t]: the sum of the t largest duals ranked after rank r (a bound on the duals
        # of the other members of a cluster headed by the record of rank r)
        prefix = np.concatenate([[0.0], np.cumsum(pi[order])])

        def next_sum(r, t):
            return prefix[np.minimum(r + 1 + t, n)] - prefix[r + 1]

        # a cluster T with rc(T) < G has Σ_T π > SSE(T) − G ≥ −G and Σ_T π ≤ π_s + next(s, eta−1)
        seeds_all = order[pi[order] + next_sum(np.arange(n), eta - 1) + gpos > 0]
        cols, rcs = [], []
        cols_arr, rcs_arr = np.zeros((0, eta), dtype=np.int64), np.zeros(0)
        best = np.inf
        rho = np.full(n, float(thr))
        rec_min = np.full(n, np.inf)  # per record: the least rc of the clusters found below thr
        complete = True  # every seed processed (searched to the end or cut with a bound)
        exact = True  # no seed cut short
        chunk = 128
        huge = np.iinfo(np.int64).max // 4
        used = 0  # nodes spent in this call (collect_all: capped by max_nodes)
        for lo in range(0, len(seeds_all), chunk):
            if self.time_left() <= 0:
                complete = False
                break
            seeds = seeds_all[lo:lo + chunk]
            # ball of the members of a cluster T with rc(T) < G around its largest-dual member s:
            # SSE(T) ≥ ‖x_i − x_s‖²/2 (two of its points) and Σ_T π ≤ π_s + π_i + next(s, eta−2)
            # (the eta − 2 others rank after s), so, with π_i ≤ π_s,
            # ‖x_i − x_s‖² < 2·(π_s + π_i + next(s, eta−2) + G) ≤ 2·(2·π_s + next(s, eta−2) + G)
            others = pi[seeds] + next_sum(rank[seeds], eta - 2) + gpos
            radii = np.sqrt(np.maximum(_RADIUS_FACTOR * (pi[seeds] + others), 0.0)) * (1 + 1e-9) + 1e-12
            lists = self.tree.query_ball_point(X[seeds], r=radii, return_sorted=False)
            lengths = np.fromiter((len(a) for a in lists), dtype=np.int64, count=len(lists))
            flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
            owner_pos = np.repeat(np.arange(len(seeds)), lengths)
            owner = seeds[owner_pos]
            d2 = np.einsum("ij,ij->i", X[flat] - X[owner], X[flat] - X[owner])
            keep = (rank[flat] > rank[owner]) & (
                d2 < _RADIUS_FACTOR * (others[owner_pos] + pi[flat]) * (1 + 1e-9) + 1e-12
            )
            counts = np.bincount(owner_pos[keep], minlength=len(seeds))
            nptr = np.concatenate([[0], np.cumsum(counts)])
            nbr = flat[keep]
            pos = 0
            boost = 1.0
            while pos < len(seeds):
                # numba cannot read the clock: the search runs in slices of a node budget
                # worth ~0.2 s at the measured node rate, the clock is checked between slices
                tl = self.time_left()
                if tl <= 0 or (collect_all and used >= self.max_nodes):
                    complete = False
                    break
                if collect_all:
                    seed_budget = huge
                    budget = self.max_nodes - used
                else:
                    seed_budget = self.seed_nodes
                    budget = huge
                if self.deadline is not None:  # without a deadline: one call (deterministic)
                    # the call stops starting seeds after ~0.2 s of nodes; a seed started runs
                    # to its own budget, which near the pass deadline shrinks to the time left
                    # (after it: 1 node, the root bound, so that the pass still ends with bounds)
                    budget = int(min(budget, max(1_000, self.node_rate * min(boost * 0.2, tl))))
                    if not collect_all:
                        pass_left = tl if self.pass_deadline is None else self.pass_deadline - time.perf_counter()
                        seed_budget = int(max(1, min(seed_budget, self.node_rate * min(tl, pass_left))))
                sub = seeds[pos:]
                room = max_cols if collect_all else len(sub)
                tic = time.perf_counter()
                m, r, cnt, done, nodes, thr_out, b, seed_lb, seed_exact, seed_tau = bnb_pricing(
                    X, pi, eta, sub, nptr[pos:] - nptr[pos], nbr[nptr[pos]:], thr, collect_all, max(room, 1),
                    budget, seed_budget, self.knn_sum, self.retry_unit * eta, self.max_attempts, rec_min,
                    *self.cuts
                )
                self._measured(nodes, time.perf_counter() - tic)
                used += nodes
                if collect_all and done < len(sub) and len(m):
                    # the interrupted seed is searched again from scratch: drop its clusters
                    # (each cluster's first member is its seed) so they are not listed twice
                    mine = m[:, 0] == sub[done]
                    m, r = m[~mine], r[~mine]
                best = min(best, b)
                if collect_all:
                    # one shared buffer: keep what is below the (possibly lowered) threshold
                    thr = thr_out
                    allc = np.concatenate([cols_arr, m]) if len(cols_arr) else m
                    allr = np.concatenate([rcs_arr, r])
                    if len(allr) > max_cols:
                        thr = min(thr, np.sort(allr)[max_cols // 2])
                    keep_c = allr < thr
                    cols_arr, rcs_arr = allc[keep_c], allr[keep_c]
                else:
                    cols += list(m)
                    rcs += list(r)
                    exact &= bool(seed_exact[:done].all())
                    self.stats["seeds"] += done
                    self.stats["cut_short"] += int(done - seed_exact[:done].sum())
                    self.stats["nodes"] += nodes
                    # per-record bounds on the clusters headed by seed s and holding record i:
                    # the clusters found below the threshold are in rec_min (applied at the end);
                    # the others have rc ≥ the threshold of the search that completed (seed_tau),
                    # or, if none did, ≥ the seed's bound; and rc ≥ the root bound with i forced in
                    floor = np.where(np.isnan(seed_tau[:done]), seed_lb[:done], seed_tau[:done])
                    for j in np.flatnonzero(floor < thr):
                        sj = sub[j]
                        rho[sj] = min(rho[sj], floor[j])
                        ball = nbr[nptr[pos + j]:nptr[pos + j + 1]]
                        rho[ball] = np.minimum(rho[ball], np.maximum(floor[j], self._root_bounds(pi, eta, sj, ball)))
                pos += done
                # collect_all: one seed larger than the slice: double the slice until it fits
                boost = boost * 2.0 if done == 0 else 1.0
            if not complete:
                break
        self.last_threshold = thr
        if collect_all:
            cols, rcs = list(cols_arr), list(rcs_arr)
            return _Exact(cols, np.asarray(rcs), min(best, thr) if complete else None, exact=complete)
        if not complete:
            return _Exact(cols, np.asarray(rcs), None, None, exact=False)
        rho = np.minimum(rho, rec_min)
        return _Exact(cols, np.asarray(rcs), float(min(best, thr, rho.min(initial=np.inf))), rho, exact=exact)

    def _root_bounds(self, pi, eta, s, ball):
        """For each candidate i of seed s: a lower bound on rc(T) over the clusters T of size
        eta holding s and i whose other members come from ``ball``: the root bound of
        kernels/pricing.py with i forced in, −π_s + g_i + (the eta − 2 smallest g_j, j ≠ i),
        g_j = ‖x_j − x_s‖²/eta + D_j(eta−2)/(2·eta) − π_j."""
        if len(ball) < eta - 1:
            return np.full(len(ball), np.inf)  # no cluster of size eta
        X = self.X
        diff = X[ball] - X[s]
        g = np.einsum("ij,ij->i", diff, diff) / eta + self.knn_sum[ball, eta - 2] / (2.0 * eta) - pi[ball]
        if eta == 2:
            return g - pi[s]
        gs = np.partition(g, eta - 2)[: eta - 1]
        gs.sort()
        small = gs[: eta - 2].sum()  # the eta − 2 smallest; without i if i is among them
        excl = np.where(g <= gs[eta - 3], small - g + gs[eta - 2], small)
        return -pi[s] + g + excl

    def _enumerate(self, pi, eta, thr, collect_all, max_cols):
        cols, rcs = [], []
        best = np.inf
        best_members = None
        complete = True
        overflow = False
        step = 1  # one smallest index per call: the deadline is checked between calls
        for lo in range(0, self.n, step):
            if self.time_left() <= 0:
                complete = False
                break
            m, r, cnt, bm, brc, ovf = enumeration_pricing(self.X, pi, eta, lo, lo + step, thr, max_cols, *self.cuts)
            overflow |= ovf
            if collect_all:
                cols += list(m)
                rcs += list(r)
            if brc < best:
                best, best_members = brc, bm.copy()
        if not collect_all and best < thr:
            cols, rcs = [best_members], [best]  # the paper returns the minimum cluster
        lb = min(best, thr) if complete else None
        return _Exact(cols, np.asarray(rcs), lb, None if lb is None else np.full(self.n, lb), complete, overflow)

    def _ilp(self, pi, eta, thr, collect_all, max_cols):
        """Pricing ILP (14): edge variables z_e, fixed size (11), node-to-node inequalities (12)."""
        X, n = self.X, self.n
        iu, ju = np.triu_indices(n, 1)
        ne = len(iu)
        c_e = np.einsum("ij,ij->i", X[iu] - X[ju], X[iu] - X[ju])
        cost = c_e / eta - (pi[iu] + pi[ju]) / (eta - 1)
        edge_id = np.full((n, n), -1, dtype=np.int64)
        edge_id[iu, ju] = np.arange(ne)
        edge_id[ju, iu] = np.arange(ne)
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.addCols(ne, cost, np.zeros(ne), np.ones(ne), 0, np.zeros(ne, np.int32), np.zeros(0, np.int32), np.zeros(0))
        h.changeColsIntegrality(ne, np.arange(ne, dtype=np.int32), np.full(ne, highspy.HighsVarType.kInteger))
        size = eta * (eta - 1) / 2
        h.addRow(size, size, ne, np.arange(ne, dtype=np.int32), np.ones(ne))
        if eta > 2:
            # (12) for ordered (i, j): Σ_{e∈δ(i)\ij} z_e − (eta−2) z_ij ≥ 0
            starts, idx, val = [], [], []
            pos = 0
            for i in range(n):
                inc = edge_id[i][edge_id[i] >= 0]
                for j in range(n):
                    if j == i:
                        continue
                    e = edge_id[i, j]
                    starts.append(pos)
                    idx.append(inc)
                    v = np.ones(len(inc))
                    v[inc == e] = -(eta - 2)
                    val.append(v)
                    pos += len(inc)
            nr = len(starts)
            h.addRows(nr, np.zeros(nr), np.full(nr, highspy.kHighsInf), pos,
                      np.asarray(starts, np.int32), np.concatenate(idx).astype(np.int32), np.concatenate(val))
        _set_time_limit(h, max(self.time_left(), 0.05))
        h.setOptionValue("mip_rel_gap", 1e-9)
        h.run()
        info = h.getInfo()
        optimal = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        # a MIP stopped early still has a valid dual bound on the minimum rc
        dual = float(info.mip_dual_bound)
        rc_lb = min(dual, thr) if np.isfinite(dual) else None
        cols, rcs = [], []
        if info.primal_solution_status >= 2:
            z = np.asarray(h.getSolution().col_value) > 0.5
            members = np.unique(np.concatenate([iu[z], ju[z]]))
            val = float(info.objective_function_value)
            if len(members) == eta and val < thr:
                cols, rcs = [members], [val]
        return _Exact(cols, np.asarray(rcs), rc_lb, None if rc_lb is None else np.full(n, rc_lb), optimal)


def _disjoint_families(cols, rcs, n, max_families=3):
    """Greedy disjoint selections by increasing rc/size, repeated on what is left."""
    order = np.argsort(rcs / np.fromiter((len(c) for c in cols), float, count=len(cols)), kind="stable")
    chosen = []
    remaining = list(order)
    for _ in range(max_families):
        used = np.zeros(n, dtype=bool)
        rest = []
        for c in remaining:
            mem = cols[c]
            if used[mem].any():
                rest.append(c)
            else:
                used[mem] = True
                chosen.append(cols[c])
        remaining = rest
        if not remaining:
            break
    return chosen


# --------------------------------------------------------------------------------------


def _parse_init(init) -> list[str]:
    """Initial methods: a list or comma-separated string of registered method names."""
    from . import get

    if init is None or init == "":
        return []
    if isinstance(init, str):
        init = [s.strip() for s in init.split(",") if s.strip()]
    if not isinstance(init, (list, tuple)) or any(not isinstance(s, str) for s in init):
        raise ValueError(f"init must be method names (a list or comma-separated string), got {init!r}")
    for name in init:
        if get(name).per_variable:
            raise ValueError(f"init method {name!r} groups each variable on its own")
    return list(init)


@register(
    "colgen",
    family="column generation",
    paper="column-generation.txt (set partitioning + column generation, Section 5)",
    complexity="exponential worst case (exact pricing); per round O(n²·d·k) pricing heuristics + LP; "
    "O(n·d + columns·k) memory",
    variable_size=True,
    params=(
        Param("init", "object", "", "further initial methods besides mdav and vmdav (names, a list or "
              "comma-separated); each gets 30 % of the time left", check=_parse_init),
        Param("exact_pricing", "str", "bnb", "exact pricer: 'bnb' branch-and-bound in a KD-tree ball (ours), "
              "'enumeration' or 'ilp' (the paper's)", choices=("bnb", "enumeration", "ilp")),
        Param("max_rounds", "int", None, "column-generation rounds at most", low=1, nullable=True),
        Param("close_gap", "bool", True, "after convergence, enumerate the clusters below the gap and prove the "
              "optimum with the integral master"),
        Param("final_mip", "bool", True, "solve the integral master over the generated columns at the end"),
        Param("mip_time_limit", "float", 60.0, "seconds for the final MIP at most", low=0.0, nullable=True),
        Param("max_enumerated", "int", 50_000, "clusters enumerated by the closing step at most", low=1),
        Param("primal_columns", "int", 3_000, "columns kept for the primal MIP", low=1),
        Param("max_nodes", "int", 5_000_000, "branch-and-bound nodes per exact pass at most", low=1),
        Param("seed_nodes", "int", 20_000, "branch-and-bound nodes per seed before it is cut short", low=1),
        Param("alternating_starts", "int", 300, "starts of the alternating pricing heuristic", low=0),
        Param("cuts", "bool", True, "subset-row cuts on triples once no column prices out (not with 'ilp')"),
        Param("max_cut_rounds", "int", 30, "rounds of subset-row cuts at most", low=0),
        Param("smoothing", "float", 0.0, "Wentges dual smoothing α (measured slower here)", low=0.0, high=1.0,
              high_open=True),
    ),
)
def colgen(X, k, *, seed, deadline, progress, init, exact_pricing, max_rounds, close_gap, final_mip, mip_time_limit,
           max_enumerated, primal_columns, max_nodes, seed_nodes, alternating_starts, cuts, max_cut_rounds,
           smoothing):
    """Column generation over clusters of size k..2k−1 with a proven lower bound on the optimal SSE.

    The restricted master (9) (cost w_C = SSE of C, eq. (8)) starts from the groups of mdav,
    vmdav and the methods named in ``init`` (list or comma string), is solved by HiGHS (primal
    simplex, one thread) and grown with addCols. Pricing per size eta: the paper's
    SolveHeuristicPricing, then an alternating centre/members descent on
    rc(C) = min_z Σ(‖x_i − z‖² − π_i) from the ``alternating_starts`` largest duals; when both
    find nothing (and periodically, for the bound), an exact method: exact_pricing='bnb'
    (KD-tree ball around the largest-dual member + branch-and-bound with completion bounds,
    at most ``seed_nodes`` nodes per seed before it is cut short with a proven bound and
    retried at lower thresholds; the budget grows 4× whenever a pass finds no column but cut a
    seed; ours), 'enumeration' (the paper's complete enumeration) or 'ilp' (the paper's ILP
    (14) with node-to-node inequalities (12), solved by HiGHS; only for small n). Many disjoint
    negative columns are added per round (3 disjoint families; up to 50 while the LP value
    stalls). Every round runs SimpleRoundingHeuristic and RoundingMSTHeuristic on the LP
    solution (MSTH repairs undersized clusters instead of discarding the rounding: lower SSE).
    At the end the integral master over the generated columns is solved by HiGHS
    (``final_mip``, at most ``mip_time_limit`` s; a run stopped by ``time_limit`` keeps
    min(10 %, mip_time_limit) of it for this), and after convergence, with ``close_gap``, all
    clusters with reduced cost below the remaining gap are enumerated first so that the MIP
    proves optimality. The lower bound (module docstring) is returned as
    MethodOutput.lower_bound: the per-record Lagrangian bound of the best exact pass, the LP
    value at convergence, the closing MIP's bound, or at least the k-nearest-neighbour bound.
    With ``cuts`` (ours, not the paper's), once no column prices out, violated subset-row cuts
    Σ_{C: |C∩S|>=2} x_C <= 1 on triples S are added to the master (up to ``max_cut_rounds``
    rounds) and column generation resumes with their duals σ_S <= 0 charged to the clusters
    meeting S in two records; the bound becomes Σπ + Σσ + Σρ. Not used with
    exact_pricing='ilp'.
    With ``smoothing`` = α > 0 (Wentges dual smoothing; not in the paper), pricing is done at
    π_s = α·π_center + (1−α)·π_LP, π_center being the duals of the best Lagrangian bound so far
    (at first the k-nearest-neighbour dual); only columns with negative reduced cost at π_LP
    are added, and when there is none (a mis-price) the round prices again at π_LP. The exact
    pass is then made at π_s: the Lagrangian bound is valid at any duals. Measured
    (benchmarks/results/colgen_smoothing.md, k = 5): smoothing only slows column generation
    down here. Census full data, 150 s: α = 0 converges in 132 s (gap 2.88 %), α = 0.5 and 0.8
    do not (gaps 3.36 %, 3.72 %); 200-record subsets: convergence 4.3 / 7.3 / 10.1 s (census)
    and 4.5 / 9.8 / 14.3 s (tarragona) for α = 0 / 0.5 / 0.8. So it stays off by default.
    Ambiguities: the paper stops pricing at the first eta with a column; we price every eta
    (more columns per round, needed for the bound).
    """
    # the driver keeps its own perf_counter deadline, taken from the run's Deadline
    time_limit = deadline.seconds()
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + float(time_limit)
    cuts = cuts and exact_pricing != "ilp"  # the pricing ILP (14) has no cut duals
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = len(X)

    def left() -> float:
        return np.inf if deadline is None else deadline - time.perf_counter()

    # initial partitions (MicroaggregationHeuristicMP steps 1–4); an init method with a time
    # limit of its own (icsm, ...) gets 30 % of what is left
    init_names = ["mdav", "vmdav"] + [m for m in _parse_init(init) if m not in ("mdav", "vmdav", "colgen")]
    init_sse = {}
    best_labels, best_sse, best_from = None, np.inf, None
    partitions = []
    for name in init_names:
        remaining = left()
        tl = None if not np.isfinite(remaining) else max(remaining * 0.3, 0.05)
        out = run_method(name, X, k, seed=seed, time_limit=tl)
        lab = check_partition(out.labels, n, k, name)
        init_sse[name] = sse(X, lab)
        lab = _split_oversized(X, lab, k)
        val = sse(X, lab)
        partitions.append(lab)
        if val < best_sse:
            best_labels, best_sse, best_from = lab, val, name

    init_seconds = time.perf_counter() - t0
    master = _Master(X)
    for lab in partitions:
        master.add(_groups(lab))
    pricer = _Pricer(X, k, exact_pricing, deadline, max_nodes, int(seed_nodes))
    pricer.retry_unit = 1e-3 * best_sse / n  # 0.1 % of the mean SSE per record
    tol = 1e-9 * max(best_sse / n, 1e-12)
    thr = -tol

    # a dual solution feasible from the start (kernels/pricing.py): π_i = D_i(k−1)/(2k) gives
    # every cluster rc ≥ 0, so Σπ is a lower bound before any LP is solved
    pi_knn = pricer.knn_sum[:, k - 1] / (2.0 * k)
    lower_bound = float(pi_knn.sum())
    bound_from = "knn"
    rounds = 0
    converged = False
    lp_integral = False
    lp_value = None
    pi = None
    heur_best = {"srh": np.inf, "msth": np.inf}
    last_exact = {"round": 0, "end": t0, "seconds": None}
    history = []

    def offer(lab, source):
        nonlocal best_labels, best_sse, best_from
        if lab is None or (lab < 0).any():
            return
        if source in heur_best:  # the paper's heuristic as it is (Tables 3–4 report it)
            heur_best[source] = min(heur_best[source], sse(X, lab))
        lab = _split_oversized(X, lab, k)
        val = sse(X, lab)
        master.add(_groups(lab))
        if val < best_sse - 1e-12 * max(best_sse, 1.0):
            best_labels, best_sse, best_from = relabel(lab), val, source

    # (π, σ) of the best Lagrangian bound so far: the smoothing centre
    center, center_bound = (pi_knn, np.zeros(0)), lower_bound
    mispriced = 0
    exact_passes = {"complete": 0, "exact": 0, "started": 0}
    lagrangian_found = False
    phase = {"init": init_seconds, "lp": 0.0, "rounding": 0.0, "heuristic_pricing": 0.0, "exact_pricing": 0.0,
             "mip_and_closing": 0.0}

    def exact_due() -> bool:
        """A periodic exact pass (for the bound) before the heuristics stop finding columns:
        every 25 rounds, or once the time since the last one is 4 times its duration (and at
        least 10 % of the time limit), or with 25 % of the time left and no pricing bound yet.
        It searches deep for 5 % of the time left, then takes root bounds (see price_at)."""
        if rounds - last_exact["round"] >= 25:
            return True
        if deadline is None:
            return False
        since = time.perf_counter() - last_exact["end"]
        if last_exact["seconds"] is not None and since >= max(4.0 * last_exact["seconds"], 0.1 * float(time_limit)):
            return True
        return not lagrangian_found and left() < 0.25 * float(time_limit)

    def price_at(p_pi, p_sigma, force_exact):
        """Columns with rc < thr at the duals (p_pi, p_sigma): heuristics, then the exact pass
        when they find nothing new (force_exact=None) or when force_exact. Returns (columns,
        rc, rho, exact): rho[i] ≤ rc(C)/|C| for every cluster C ∋ i (None when no exact pass
        was completed), exact = no seed of the exact pass was cut short."""
        pricer.set_cuts(*master.cut_arrays(p_sigma))
        pos = np.flatnonzero(p_pi > 0)
        starts = X[pos[np.argsort(-p_pi[pos], kind="stable")][:alternating_starts]]
        tic = time.perf_counter()
        cols, rcs = pricer.heuristic(p_pi, thr, starts)
        fresh = [i for i, c in enumerate(cols) if not master.has(c)]
        cols, rcs = [cols[i] for i in fresh], rcs[fresh]
        phase["heuristic_pricing"] += time.perf_counter() - tic
        run_exact = (len(cols) == 0 or exact_due()) if force_exact is None else force_exact
        if not run_exact or left() <= 0:
            return cols, rcs, None, False
        tic = time.perf_counter()
        if deadline is not None:
            # deep search until the pass deadline, root bounds after it (~0.03 s per size at
            # n = 1080): a pass needed for columns may use the time left, a periodic one 5 %
            reserve = max(0.1 * left(), 0.03 * k)
            allowance = left() - reserve if len(cols) == 0 else 0.05 * left()
            pricer.pass_deadline = tic + max(allowance, 0.0)
        last_exact["round"] = rounds
        exact_passes["started"] += 1
        rho = np.full(n, np.inf)
        all_exact = True
        for eta in range(k, 2 * k):
            res = pricer.exact_eta(p_pi, eta, thr)
            fresh = [i for i, c in enumerate(res.cols) if not master.has(c)]
            cols += [res.cols[i] for i in fresh]
            rcs = np.concatenate([rcs, np.asarray(res.rcs)[fresh]])
            if res.lb is None:
                phase["exact_pricing"] += time.perf_counter() - tic
                return cols, rcs, None, False
            rho = np.minimum(rho, res.rho / eta)
            all_exact &= res.exact
        last_exact["end"] = time.perf_counter()
        phase["exact_pricing"] += last_exact["end"] - tic
        last_exact["seconds"] = last_exact["end"] - tic
        exact_passes["complete"] += 1
        exact_passes["exact"] += int(all_exact)
        return cols, rcs, rho, all_exact

    def record_bound(p_pi, p_sigma, rho):
        """Lagrangian bound at any duals (π, σ <= 0) from a completed exact pass:
        SSE(P) = Σπ + Σ_S σ_S·(Σ_{C: |C∩S|>=2} x_C) + Σ_{C∈P} rc(C) ≥ Σπ + Σσ + Σ_i ρ_i, as every
        cut row is ≤ 1 and record i lies in one cluster C of P, rc(C) = Σ_{i∈C} rc(C)/|C|.
        A better bound moves the smoothing centre there."""
        nonlocal lower_bound, center, center_bound, bound_from, lagrangian_found
        lagrangian_found = True
        lag = float(p_pi.sum() + p_sigma.sum()) + float(np.minimum(rho, 0.0).sum())
        if lag > lower_bound:
            lower_bound, bound_from = lag, "lagrangian"
        if lag > center_bound:
            center, center_bound = (p_pi.copy(), p_sigma.copy()), lag

    def reduced_costs(cols, p_pi, cut_arrays):
        cptr, ccut, cpen = cut_arrays
        sizes = np.fromiter((len(c) for c in cols), dtype=np.int64, count=len(cols))
        flat = np.concatenate(cols).astype(np.int64)
        cptr_c = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return column_rcs(X, p_pi, cptr_c, flat, cptr, ccut, cpen)

    cut_rounds = 0
    deepened = 0
    prev_lp = None
    # a run stopped by the time limit before convergence keeps some time for the integral master
    # over the generated columns (the primal side): the loop ends that much earlier
    end_deadline = deadline
    if deadline is not None and final_mip:
        deadline = end_deadline - min(0.1 * float(time_limit), mip_time_limit or np.inf)
        pricer.deadline = deadline
    rho_lp = None  # per-record rc bounds of the last exact pass at the LP duals
    dual_const = 0.0  # Σπ + Σσ: the LP value of the current duals
    while True:
        if left() <= 0 or (max_rounds is not None and rounds >= max_rounds):
            break
        tic = time.perf_counter()
        solved = master.solve(left())
        phase["lp"] += time.perf_counter() - tic
        if solved is None:
            break
        rounds += 1
        lp_value, x, pi, sigma = solved
        dual_const = float(pi.sum() + sigma.sum())
        frac = np.abs(x - np.round(x)).max() if len(x) else 0.0
        lp_integral = frac < 1e-6
        tic = time.perf_counter()
        if lp_integral:
            offer(master.labels_from(x), "lp")
        else:
            order = np.lexsort((master.costs / np.diff(master.ptr), -x))
            offer(_simple_rounding(X, k, master.ptr, master.members, order), "srh")
            for maxcl in range(k + 1, 2 * k):
                if left() <= 0:
                    break
                # offer() may have added columns since the LP was solved: they have x = 0
                x_all = np.zeros(master.ncols)
                x_all[:len(x)] = x
                offer(_mst_rounding(X, k, master.ptr, master.members, x_all, maxcl), "msth")
        phase["rounding"] += time.perf_counter() - tic
        # pricing: heuristics first; columns already in the master (rc ≈ 0 within the LP
        # tolerances) are not new. With smoothing (Wentges), price at
        # π_s = α·π_center + (1−α)·π_LP and keep the columns negative at π_LP; none = a mis-price,
        # and the round prices again at π_LP (so "no column" still means LP optimality).
        rho, pass_exact = None, False
        smoothed = smoothing > 0
        if smoothed:
            c_pi, c_sigma = center
            c_sigma = np.concatenate([c_sigma, np.zeros(len(sigma) - len(c_sigma))])  # new cuts: σ = 0
            s_pi = smoothing * c_pi + (1.0 - smoothing) * pi
            s_sigma = smoothing * c_sigma + (1.0 - smoothing) * sigma
            cols, rcs, s_rho, _ = price_at(s_pi, s_sigma, None)
            if s_rho is not None:
                record_bound(s_pi, s_sigma, s_rho)
            if cols:  # reduced costs at the LP duals decide which columns are useful
                rc_lp = reduced_costs(cols, pi, master.cut_arrays(sigma))
                keep = np.flatnonzero(rc_lp < thr)
                cols, rcs = [cols[i] for i in keep], rc_lp[keep]
            if not cols:
                mispriced += 1
                smoothed = False
        if not smoothed:
            cols, rcs, rho, pass_exact = price_at(pi, sigma, None)
            if rho is not None:
                record_bound(pi, sigma, rho)
                rho_lp = rho
        history.append((rounds, time.perf_counter() - t0, lp_value, len(cols), lower_bound, best_sse))
        progress("colgen", None, f"round {rounds}: LP {lp_value:.6g}, bound {lower_bound:.6g}, best {best_sse:.6g}")
        if not cols:
            if rho is None:
                break  # out of time
            if not pass_exact:
                # no column found, but some seeds were cut short: search deeper
                pricer.seed_nodes *= 4
                deepened += 1
                continue
            # the LP over all columns is solved: strengthen it with subset-row cuts
            proven_now = best_sse - lower_bound <= 1e-9 * max(best_sse, 1e-300)
            if cuts and not lp_integral and not proven_now and cut_rounds < max_cut_rounds:
                sup = np.flatnonzero(x > 1e-9)
                sptr = np.concatenate([[0], np.cumsum(np.diff(master.ptr)[sup])]).astype(np.int64)
                smem = np.concatenate([master.members[master.ptr[c]:master.ptr[c + 1]] for c in sup])
                triples, lhs = _separate_subset_rows(n, sptr, smem, x[sup], 1e-4)
                if len(triples):
                    best_first = np.argsort(-lhs, kind="stable")[: max(n // 4, 10)]
                    if master.add_cuts(triples[best_first]) > 0:
                        cut_rounds += 1
                        continue
            converged = True
            break
        tic = time.perf_counter()
        # a stalled (degenerate) master needs many columns before its value moves: census,
        # k = 10, 120 s, 3 families per round: no LP progress in 24 rounds; all columns: it
        # moves after 17 rounds
        stalled = prev_lp is not None and lp_value >= prev_lp - 1e-9 * abs(prev_lp)
        master.add(_disjoint_families(cols, rcs, n, max_families=50 if stalled else 3))
        prev_lp = lp_value
        phase["lp"] += time.perf_counter() - tic

    deadline = end_deadline
    pricer.deadline = deadline
    tic_end = time.perf_counter()

    def primal_mip(tl):
        """The integral master over the generated columns, warm-started from the best partition,
        within ``tl`` seconds; its solution is offered."""
        lab, _, _, optimal = master.solve_integral(
            tl if np.isfinite(tl) else 1e9, master.indicator(best_labels), primal=True
        )
        offer(lab, "mip")
        progress("colgen", None, f"MIP over {master.ncols} columns: {'optimal' if optimal else 'stopped'}, "
                 f"best {best_sse:.6g}")

    # closing (ours): with converged duals π, a partition P costs Σπ + Σσ + Σ_{C∈P} rc(C) at
    # least, and every record i contributes rc(C)/|C| ≥ ρ_i; so if P uses a cluster with
    # rc ≥ G' it costs ≥ Σπ + Σσ + G' + Σρ. Enumerate all clusters with rc < G' (G' as large
    # as max_enumerated allows, at most UB − Σπ − Σσ − Σρ), solve the integral master over
    # them: OPT ≥ min(MIP bound, Σπ + Σσ + G' + Σρ); the largest G' proves OPT.
    if final_mip and left() > 0 and master.ncols > 0 and not (converged and close_gap) and not (
        best_sse - lower_bound <= 1e-9 * max(best_sse, 1e-300)
    ):
        # the integral master over the generated columns (primal side, Section 5.2 + MIP)
        # HiGHS may overrun a MIP time limit by a fraction (root LP, presolve): 80 % of the rest
        primal_mip(min(0.8 * left(), mip_time_limit) if mip_time_limit is not None else 0.8 * left())
    closing = []
    if converged and final_mip and close_gap:
        pi_sum = dual_const  # Σπ + Σσ (σ <= 0 and every cut row is <= 1 for a partition)
        corr = float(np.minimum(rho_lp, 0.0).sum())
        last_g = None
        for _ in range(3):
            proven = best_sse - lower_bound <= 1e-9 * max(best_sse, 1e-300)
            if proven or left() <= 0:
                break
            gap_full = best_sse - pi_sum - corr + tol
            # HiGHS may overrun its time limit on large MIPs (presolve, root LP): scale the
            # enumerated set with the time left
            budget = max_enumerated if not np.isfinite(left()) else int(min(max_enumerated, 2000 * left()))
            if budget < 500:
                break
            enumerated, enum_rc, g_try = pricer.enumerate_below(pi, gap_full, budget)
            if enumerated is None or (last_g is not None and g_try <= last_g * (1 + 1e-12)):
                break
            last_g = g_try
            # primal: the integral master over the columns of smallest rc, solved to the end
            few = np.argsort(enum_rc, kind="stable")[:primal_columns]
            master.add([enumerated[i] for i in few])
            primal_mip(min(0.4 * left(), mip_time_limit) if mip_time_limit is not None else 0.4 * left())
            # bound: the integral master over every cluster with rc < G'
            if left() < 1.0:
                break
            master.add(enumerated)
            tl = min(0.8 * left(), mip_time_limit) if mip_time_limit is not None else 0.8 * left()
            target = pi_sum + g_try + corr  # no MIP bound above this value can be used
            lab, obj, dual_bound, optimal = master.solve_integral(
                tl if np.isfinite(tl) else 1e9, master.indicator(best_labels), max(best_sse - target, 0.0)
            )
            offer(lab, "mip")
            mip_bound = min(dual_bound, best_sse)
            cand = min(mip_bound, pi_sum + g_try + corr)
            closing.append({"threshold": g_try, "columns": len(enumerated), "mip_optimal": bool(optimal),
                            "mip_bound": mip_bound, "bound": cand, "best": best_sse})
            progress("colgen", None, f"closing: threshold {g_try:.4g}, {len(enumerated)} columns, bound {cand:.6g}, "
                     f"best {best_sse:.6g}")
            if cand > lower_bound:
                lower_bound, bound_from = cand, "closing"
    phase["mip_and_closing"] = time.perf_counter() - tic_end
    # SSE >= 0, and no bound above the best SSE can be proven (rounding in the last digits)
    lower_bound = min(max(lower_bound, 0.0), best_sse)
    proven = best_sse - lower_bound <= 1e-9 * max(best_sse, 1e-300)
    extras = {
        "colgen_rounds": rounds,
        "colgen_columns": master.ncols,
        "colgen_lp_value": lp_value,
        "colgen_converged": converged,
        "colgen_lp_integral": bool(lp_integral and converged),
        "colgen_proven_optimal": bool(proven),
        "colgen_best_from": best_from,
        "colgen_bound_from": bound_from,
        "colgen_knn_bound": float(pi_knn.sum()),
        "colgen_init_sse": init_sse,
        "colgen_srh_sse": heur_best["srh"],
        "colgen_msth_sse": heur_best["msth"],
        "colgen_closing": closing,
        "colgen_cuts": len(master.cuts),
        "colgen_mispriced": mispriced,
        "colgen_smoothing": smoothing,
        "colgen_exact_passes": exact_passes,
        "colgen_seed_nodes": pricer.seed_nodes,
        "colgen_bnb_stats": pricer.stats,
        "colgen_deepened": deepened,
        "colgen_phase_seconds": phase,
        "colgen_history": history,  # (round, seconds, LP value, new columns, bound, best SSE)
        "colgen_seconds": time.perf_counter() - t0,
    }
    return MethodOutput(best_labels, lower_bound=lower_bound, extras=extras)
