"""Pricing for the master problem: columns (clusters of size eta = k..2k−1) of negative reduced
cost rc(C) = w_C − Σ_{i∈C} π_i − (cut duals), and proven bounds on the least rc.

``Pricer`` runs the paper's SolveHeuristicPricing and an alternating centre/members descent,
then an exact method: branch-and-bound in a KD-tree ball (ours), the paper's complete
enumeration, or the paper's pricing ILP (14) with the node-to-node inequalities (12). The numba
kernels are in ``microagg.kernels.pricing`` and ``microagg.kernels.pricing_bnb``; this module
slices their work against the ``Deadline`` (numba cannot read the clock) and turns their
per-seed bounds into per-record ones.
"""

from __future__ import annotations

import itertools
import time

import highspy
import numpy as np
from scipy.spatial import cKDTree

from ...deadline import Deadline
from ...kernels.cycles import budget_cycles
from ...kernels.jit import tree_leaf_size
from ...kernels.pricing import (
    GREEDY_LEAF,
    GREEDY_SCAN_MAX_N,
    alternating_pricing,
    enumeration_pricing,
    greedy_pricing,
)
from ...kernels.pricing_bnb import bnb_pricing
from .master import new_highs, set_time_limit

__all__ = ["ExactResult", "Pricer", "disjoint_families", "knn_sums"]


_RADIUS_FACTOR = 2.0  # see Pricer._balls


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


class ExactResult:
    """Result of one exact pricing call for one size eta.

    cols, rcs: clusters with rc < thr found; lb: lower bound on the rc of every cluster of
    size eta (None: no bound, out of time); rho: per record i, a lower bound on the rc of
    every cluster of size eta containing i (None: only lb); exact: the search was complete
    (no seed cut short), so no cluster with rc < thr was missed; overflow: enumeration buffer
    full."""

    __slots__ = ("cols", "rcs", "lb", "rho", "exact", "overflow")

    def __init__(self, cols, rcs, lb, rho=None, exact=True, overflow=False):
        self.cols, self.rcs, self.lb, self.rho, self.exact, self.overflow = (
            cols,
            rcs,
            lb,
            rho,
            exact,
            overflow,
        )


class _DualRanking:
    """Records by decreasing dual: a cluster's seed is its member of largest dual, ranked first."""

    def __init__(self, pi):
        n = len(pi)
        self.order = np.argsort(-pi, kind="stable")
        self.rank = np.empty(n, dtype=np.int64)
        self.rank[self.order] = np.arange(n)
        self.prefix = np.concatenate([[0.0], np.cumsum(pi[self.order])])

    def next_sum(self, r, t):
        """The sum of the t largest duals ranked after rank r (a bound on the duals of the other
        members of a cluster headed by the record of rank r)."""
        n = len(self.order)
        return self.prefix[np.minimum(r + 1 + t, n)] - self.prefix[r + 1]

    def seed_chunks(self, pi, eta, gpos, chunk=128):
        """The records that may head a cluster of size eta with rc < G, in rank order, by chunks:
        such a cluster T has Σ_T π > SSE(T) − G ≥ −G and Σ_T π ≤ π_s + next(s, eta−1)."""
        order = self.order
        seeds = order[pi[order] + self.next_sum(np.arange(len(order)), eta - 1) + gpos > 0]
        for lo in range(0, len(seeds), chunk):
            yield seeds[lo : lo + chunk]


class _BnbPass:
    """What one branch-and-bound pass has found: the clusters below the threshold (pricing:
    lists, and per-record bounds rho; collect_all: one buffer and a threshold that may drop),
    the least rc found, the nodes used, and whether every seed was processed (``complete``)
    and none cut short (``exact``)."""

    def __init__(self, n, eta, thr):
        self.thr = thr
        self.cols, self.rcs = [], []
        self.cols_arr, self.rcs_arr = np.zeros((0, eta), dtype=np.int64), np.zeros(0)
        self.best = np.inf
        self.rho = np.full(n, float(thr))
        # per record: the least rc of the clusters found below thr
        self.rec_min = np.full(n, np.inf)
        self.complete = True  # every seed processed (searched to the end or cut with a bound)
        self.exact = True  # no seed cut short
        self.used = 0  # nodes spent in this call (collect_all: capped by max_nodes)

    def keep_below_threshold(self, m, r, thr_out, max_cols):
        """collect_all: one shared buffer, keeping what is below the (possibly lowered)
        threshold; over max_cols, the threshold drops to the median rc."""
        self.thr = thr_out
        allc = np.concatenate([self.cols_arr, m]) if len(self.cols_arr) else m
        allr = np.concatenate([self.rcs_arr, r])
        if len(allr) > max_cols:
            self.thr = min(self.thr, np.sort(allr)[max_cols // 2])
        keep = allr < self.thr
        self.cols_arr, self.rcs_arr = allc[keep], allr[keep]

    def result(self, collect_all) -> ExactResult:
        if collect_all:
            cols, rcs = list(self.cols_arr), list(self.rcs_arr)
            return ExactResult(
                cols,
                np.asarray(rcs),
                min(self.best, self.thr) if self.complete else None,
                exact=self.complete,
            )
        if not self.complete:
            return ExactResult(self.cols, np.asarray(self.rcs), None, None, exact=False)
        rho = np.minimum(self.rho, self.rec_min)
        lb = float(min(self.best, self.thr, rho.min(initial=np.inf)))
        return ExactResult(self.cols, np.asarray(self.rcs), lb, rho, exact=self.exact)


class Pricer:
    """Pricing for sizes eta = k..2k−1: heuristics, then an exact method."""

    def __init__(self, X, k, exact_pricing, deadline: Deadline | None, max_nodes, seed_nodes):
        self.X, self.k = X, k
        self.n = len(X)
        self.exact = exact_pricing
        self.deadline = Deadline.of(deadline)  # None: unbounded
        self.max_nodes = max_nodes  # per call when enumerating all columns below a threshold
        self.seed_nodes = seed_nodes  # per seed when pricing (grown when a pass is cut short)
        self.pass_deadline: Deadline | None = (
            None  # after it, a pass only computes root bounds (fast)
        )
        self.stats = {"seeds": 0, "cut_short": 0, "nodes": 0}  # exact pricing (bnb), all passes
        # a seed cut short is searched again with thresholds lowered by retry_unit·eta·4^j
        # (bnb_pricing); the unit is set by the caller from the scale of the SSE
        self.retry_unit = 0.0
        self.max_attempts = 8
        self.node_rate = 20_000.0  # first guess (nodes per second); measured on every slice
        self.tree = cKDTree(X) if exact_pricing == "bnb" else None
        self.greedy_leaf = tree_leaf_size(self.n, GREEDY_LEAF, GREEDY_SCAN_MAX_N)
        self.knn_sum = knn_sums(X, 2 * k - 2)
        self.set_cuts(np.zeros(self.n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0))

    def _measured(self, nodes: int, seconds: float) -> None:
        """Update the branch-and-bound node rate (nodes per second, smoothed)."""
        if nodes >= 1_000 and seconds > 1e-3:
            self.node_rate = 0.5 * self.node_rate + 0.5 * nodes / seconds

    def set_cuts(self, cptr, ccut, cpen):
        self.cuts = (cptr, ccut, cpen)

    def time_left(self) -> float:
        return self.deadline.remaining()

    def heuristic(self, pi, thr, starts):
        """Paper's greedy, then alternating centre/members from ``starts``; lists of clusters."""
        cols, rcs = [], []
        # the alternating descent costs O(starts·n·d) per eta (~1 s at n = 1080, eta = 19):
        # run it on chunks of starts and stop at the deadline (a heuristic may stop anywhere)
        chunk = max(16, 200_000 // max(self.n, 1))
        for eta in range(self.k, 2 * self.k):
            if eta > self.n or self.time_left() <= 0:
                break
            cut_at = budget_cycles(self.deadline.seconds())  # no cluster starts past the time limit
            m, r = greedy_pricing(self.X, pi, eta, thr, *self.cuts, cut_at, self.greedy_leaf)
            cols += list(m)
            rcs += list(r)
            for lo in range(0, len(starts), chunk):
                if self.time_left() <= 0:
                    break
                m, r = alternating_pricing(
                    self.X, pi, eta, starts[lo : lo + chunk], thr, 20, *self.cuts
                )
                cols += list(m)
                rcs += list(r)
        return cols, np.asarray(rcs)

    def exact_eta(self, pi, eta, thr, collect_all=False, max_cols=200_000) -> ExactResult:
        """Exact pricing for size eta at the duals pi (cut penalties from set_cuts)."""
        if eta > self.n:
            return ExactResult([], np.zeros(0), np.inf, np.full(self.n, np.inf))
        if self.exact == "enumeration":
            return self._enumerate(pi, eta, thr, collect_all, max_cols)
        if self.exact == "ilp":
            return self._ilp(pi, eta, thr, collect_all, max_cols)
        return self._bnb(pi, eta, thr, collect_all, max_cols)

    def exact_pass(self, pi, thr):
        """Exact pricing for every size k..2k−1 at the duals pi (cut penalties from set_cuts).
        Returns (clusters with rc < thr, their rcs, rho, exact): rho[i] ≤ rc(C)/|C| for every
        cluster C ∋ i (None when out of time), exact = no seed was cut short."""
        cols, rcs = [], []
        rho = np.full(self.n, np.inf)
        all_exact = True
        for eta in range(self.k, 2 * self.k):
            res = self.exact_eta(pi, eta, thr)
            cols += list(res.cols)
            rcs.append(np.asarray(res.rcs, dtype=np.float64))
            if res.lb is None:
                return cols, np.concatenate(rcs), None, False
            rho = np.minimum(rho, res.rho / eta)
            all_exact &= res.exact
        return cols, np.concatenate(rcs), rho, all_exact

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
        no ball holds i: such clusters have rc ≥ max(thr, 0), see ``_balls``). The pass is
        exact when no seed was cut. Out of time: lb = None. collect_all: every cluster with rc < thr
        (searched to the end; lb = None when that could not be done in time / max_nodes).
        """
        ranking = _DualRanking(pi)
        gpos = max(thr, 0.0)
        found = _BnbPass(self.n, eta, thr)
        for seeds in ranking.seed_chunks(pi, eta, gpos):
            if self.time_left() <= 0:
                found.complete = False
            else:
                nptr, nbr = self._balls(pi, eta, gpos, ranking, seeds)
                self._search_seeds(found, pi, eta, seeds, nptr, nbr, collect_all, max_cols)
            if not found.complete:
                break
        self.last_threshold = found.thr
        return found.result(collect_all)

    def _balls(self, pi, eta, gpos, ranking, seeds):
        """Each seed's candidates, the later-ranked records of its ball, as (nptr, nbr): the
        candidates of seeds[j] are nbr[nptr[j]:nptr[j + 1]].

        A cluster T with rc(T) < G around its largest-dual member s: SSE(T) ≥ ‖x_i − x_s‖²/2
        (two of its points) and Σ_T π ≤ π_s + π_i + next(s, eta−2) (the eta − 2 others rank
        after s), so, with π_i ≤ π_s,
        ‖x_i − x_s‖² < 2·(π_s + π_i + next(s, eta−2) + G) ≤ 2·(2·π_s + next(s, eta−2) + G).
        """
        X, rank = self.X, ranking.rank
        others = pi[seeds] + ranking.next_sum(rank[seeds], eta - 2) + gpos
        radii = np.sqrt(np.maximum(_RADIUS_FACTOR * (pi[seeds] + others), 0.0)) * (1 + 1e-9) + 1e-12
        lists = self.tree.query_ball_point(X[seeds], r=radii, return_sorted=False)
        lengths = np.fromiter((len(a) for a in lists), dtype=np.int64, count=len(lists))
        flat = np.fromiter(
            itertools.chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum())
        )
        owner_pos = np.repeat(np.arange(len(seeds)), lengths)
        owner = seeds[owner_pos]
        d2 = np.einsum("ij,ij->i", X[flat] - X[owner], X[flat] - X[owner])
        keep = (rank[flat] > rank[owner]) & (
            d2 < _RADIUS_FACTOR * (others[owner_pos] + pi[flat]) * (1 + 1e-9) + 1e-12
        )
        counts = np.bincount(owner_pos[keep], minlength=len(seeds))
        return np.concatenate([[0], np.cumsum(counts)]), flat[keep]

    def _search_seeds(self, found, pi, eta, seeds, nptr, nbr, collect_all, max_cols):
        """Branch and bound from the seeds in order, in slices of a node budget (numba cannot
        read the clock: it is checked between slices); what each slice found goes to ``found``."""
        pos = 0
        boost = 1.0
        while pos < len(seeds):
            tl = self.time_left()
            if tl <= 0 or (collect_all and found.used >= self.max_nodes):
                found.complete = False
                return
            budget, seed_budget = self._node_budgets(tl, found.used, boost, collect_all)
            sub = seeds[pos:]
            room = max_cols if collect_all else len(sub)
            tic = time.perf_counter()
            m, r, cnt, done, nodes, thr_out, b, seed_lb, seed_exact, seed_tau = bnb_pricing(
                self.X,
                pi,
                eta,
                sub,
                nptr[pos:] - nptr[pos],
                nbr[nptr[pos] :],
                found.thr,
                collect_all,
                max(room, 1),
                budget,
                seed_budget,
                self.knn_sum,
                self.retry_unit * eta,
                self.max_attempts,
                found.rec_min,
                *self.cuts,
            )
            self._measured(nodes, time.perf_counter() - tic)
            found.used += nodes
            if collect_all and done < len(sub) and len(m):
                # the interrupted seed is searched again from scratch: drop its clusters
                # (each cluster's first member is its seed) so they are not listed twice
                mine = m[:, 0] == sub[done]
                m, r = m[~mine], r[~mine]
            found.best = min(found.best, b)
            if collect_all:
                found.keep_below_threshold(m, r, thr_out, max_cols)
            else:
                found.cols += list(m)
                found.rcs += list(r)
                found.exact &= bool(seed_exact[:done].all())
                self.stats["seeds"] += done
                self.stats["cut_short"] += int(done - seed_exact[:done].sum())
                self.stats["nodes"] += nodes
                floor = np.where(np.isnan(seed_tau[:done]), seed_lb[:done], seed_tau[:done])
                self._bound_records(found, pi, eta, sub, floor, nptr[pos:], nbr)
            pos += done
            # collect_all: one seed larger than the slice: double the slice until it fits
            boost = boost * 2.0 if done == 0 else 1.0

    def _node_budgets(self, tl, used, boost, collect_all):
        """(nodes for this slice, nodes per seed). The slice stops starting seeds after ~0.2 s
        of nodes at the measured node rate; a seed started runs to its own budget, which near
        the pass deadline shrinks to the time left (after it: 1 node, the root bound, so that
        the pass still ends with bounds). Without a deadline: one call (deterministic)."""
        huge = np.iinfo(np.int64).max // 4
        if collect_all:
            seed_budget = huge
            budget = self.max_nodes - used
        else:
            seed_budget = self.seed_nodes
            budget = huge
        if self.deadline.bounded:
            budget = int(min(budget, max(1_000, self.node_rate * min(boost * 0.2, tl))))
            if not collect_all:
                pass_left = tl if self.pass_deadline is None else self.pass_deadline.remaining()
                seed_budget = int(max(1, min(seed_budget, self.node_rate * min(tl, pass_left))))
        return budget, seed_budget

    def _bound_records(self, found, pi, eta, seeds, floor, nptr, nbr):
        """Per-record bounds on the clusters headed by seed s and holding record i: the clusters
        found below the threshold are in ``found.rec_min`` (applied at the end); the others have
        rc ≥ the threshold of the search that completed (seed_tau), or, if none did, ≥ the
        seed's bound (together ``floor``); and rc ≥ the root bound with i forced in."""
        rho = found.rho
        for j in np.flatnonzero(floor < found.thr):
            sj = seeds[j]
            rho[sj] = min(rho[sj], floor[j])
            ball = nbr[nptr[j] : nptr[j + 1]]
            rho[ball] = np.minimum(
                rho[ball], np.maximum(floor[j], self._root_bounds(pi, eta, sj, ball))
            )

    def _root_bounds(self, pi, eta, s, ball):
        """For each candidate i of seed s: a lower bound on rc(T) over the clusters T of size
        eta holding s and i whose other members come from ``ball``: the root bound of
        kernels/pricing.py with i forced in, −π_s + g_i + (the eta − 2 smallest g_j, j ≠ i),
        g_j = ‖x_j − x_s‖²/eta + D_j(eta−2)/(2·eta) − π_j."""
        if len(ball) < eta - 1:
            return np.full(len(ball), np.inf)  # no cluster of size eta
        X = self.X
        diff = X[ball] - X[s]
        g = (
            np.einsum("ij,ij->i", diff, diff) / eta
            + self.knn_sum[ball, eta - 2] / (2.0 * eta)
            - pi[ball]
        )
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
            m, r, cnt, bm, brc, ovf = enumeration_pricing(
                self.X, pi, eta, lo, lo + step, thr, max_cols, *self.cuts
            )
            overflow |= ovf
            if collect_all:
                cols += list(m)
                rcs += list(r)
            if brc < best:
                best, best_members = brc, bm.copy()
        if not collect_all and best < thr:
            cols, rcs = [best_members], [best]  # the paper returns the minimum cluster
        lb = min(best, thr) if complete else None
        return ExactResult(
            cols,
            np.asarray(rcs),
            lb,
            None if lb is None else np.full(self.n, lb),
            complete,
            overflow,
        )

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
        h = new_highs()
        h.addCols(
            ne,
            cost,
            np.zeros(ne),
            np.ones(ne),
            0,
            np.zeros(ne, np.int32),
            np.zeros(0, np.int32),
            np.zeros(0),
        )
        h.changeColsIntegrality(
            ne, np.arange(ne, dtype=np.int32), np.full(ne, highspy.HighsVarType.kInteger)
        )
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
            h.addRows(
                nr,
                np.zeros(nr),
                np.full(nr, highspy.kHighsInf),
                pos,
                np.asarray(starts, np.int32),
                np.concatenate(idx).astype(np.int32),
                np.concatenate(val),
            )
        set_time_limit(h, max(self.time_left(), 0.05))
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
        return ExactResult(
            cols, np.asarray(rcs), rc_lb, None if rc_lb is None else np.full(n, rc_lb), optimal
        )


def disjoint_families(cols, rcs, n, max_families=3):
    """Greedy disjoint selections by increasing rc/size, repeated on what is left."""
    order = np.argsort(
        rcs / np.fromiter((len(c) for c in cols), float, count=len(cols)), kind="stable"
    )
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
