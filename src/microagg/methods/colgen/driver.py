"""The column-generation driver (MicroaggregationHeuristicMP, Section 5 of the column-generation
paper, with our bound, cuts and closing step; see the package docstring).

``ColumnGeneration`` holds the state of one run (master, pricer, best partition, bounds,
history, phase timings); ``run`` goes through its steps: initial partitions, the
column-generation loop (master LP, rounding, pricing, cuts), then the integral master over the
generated columns and the closing enumeration that proves the optimum (``ClosingSteps``,
closing.py).
"""

from __future__ import annotations

import time

import numpy as np

from ...deadline import Deadline
from ...kernels.colgen_rounding import mst_rounding, separate_subset_rows, simple_rounding
from ...kernels.mdav_labels import split_oversized
from ...kernels.pricing import column_rcs
from ...labels import check_partition, group_sizes, relabel, sse
from .. import MethodOutput
from ..starts import start_labels
from .closing import ClosingSteps
from .column_pricing import Pricer, disjoint_families
from .master import Master, MasterLPError, groups

__all__ = ["ColumnGeneration"]

#: partitions offered meanwhile (``offers``) kept for the final MIP: the latest, the best
MAX_OFFERED = 20

#: A pricing round's work per record and unit of k (it grows with the clusters' size, up to 2k − 1):
#: measured on census and eia at k = 3 and 5 against a pass of the local search, 15-37 times a
#: record-step (benchmarks/reproducible.py calibrates; docs/reproducibility.md)
COLGEN_ROUND_WEIGHT = 6


class ColumnGeneration(ClosingSteps):
    """One column-generation run on standardised X; ``run()`` returns its MethodOutput."""

    def __init__(
        self,
        X,
        k,
        *,
        seed,
        deadline: Deadline,
        progress,
        init_methods,
        exact_pricing,
        max_rounds,
        close_gap,
        final_mip,
        mip_time_limit,
        max_enumerated,
        primal_columns,
        max_nodes,
        seed_nodes,
        alternating_starts,
        cuts,
        max_cut_rounds,
        cut_tailing=0.0,
        smoothing=0.0,
        resume=None,
        keep_state=False,
        offers=None,
        mip_nodes=None,
    ):
        self.t0 = time.perf_counter()
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.n = len(self.X)
        self.k = k
        self.seed = seed
        self.deadline = deadline  # the whole run's
        self.time_limit = deadline.seconds()  # the budget at the start (None: unbounded)
        # the deadline of the current step (the loop ends before the MIP's reserve)
        self.clock = deadline
        self.progress = progress
        self.init_methods = init_methods
        self.exact_pricing = exact_pricing
        self.max_rounds = max_rounds
        self.close_gap = close_gap
        self.final_mip = final_mip
        self.mip_time_limit = mip_time_limit
        self.mip_nodes = mip_nodes
        self.max_enumerated = max_enumerated
        self.primal_columns = primal_columns
        self.max_nodes = max_nodes
        self.seed_nodes = int(seed_nodes)
        self.alternating_starts = alternating_starts
        self.cuts = cuts and exact_pricing != "ilp"  # the pricing ILP (14) has no cut duals
        self.max_cut_rounds = max_cut_rounds
        self.cut_tailing = cut_tailing
        self.smoothing = smoothing
        self.resume = resume
        self.keep_state = keep_state
        self.offers = offers
        self.init_incumbent()
        self.init_bounds()
        self.init_loop()

    def init_incumbent(self) -> None:
        """The best partition found (none yet), and where from."""
        self.offered: list[np.ndarray] = []  # partitions offered meanwhile, entered before the MIP
        self.best_labels, self.best_sse, self.best_from = None, np.inf, None
        self.init_sse: dict[str, float] = {}
        # the paper's heuristics as they are (Tables 3–4)
        self.heur_best = {"srh": np.inf, "msth": np.inf}

    def init_bounds(self) -> None:
        """The lower bound (none yet) and what the closing step needs of the duals."""
        self.lower_bound = 0.0
        self.bound_from = None
        self.lagrangian_found = False
        self.bound_round = None  # the round of the last completed exact pass
        self.centre = None  # (π, σ) of the best Lagrangian bound so far: the smoothing centre
        self.centre_bound = -np.inf
        self.rho_lp = None  # per-record rc bounds of the last exact pass at the LP duals
        self.dual_const = 0.0  # Σπ + Σσ: the LP value of the current duals
        self.closing: list[dict] = []

    def init_loop(self) -> None:
        """The column-generation loop's state, counters, history and phase timings."""
        self.master: Master | None = None
        self.pricer: Pricer | None = None
        self.rounds = 0
        self.converged = False
        self.lp_value = None
        self.lp_integral = False
        self.pi = None  # duals of the last master LP
        self.prev_lp = None
        self.lp_failure = None  # HiGHS's message when the master LP could not be solved
        self.cut_rounds = 0
        self.tailing_cut_rounds = 0  # of which added before convergence (cut_tailing)
        self.deepened = 0
        self.mispriced = 0
        self.last_exact_round, self.last_exact_end, self.last_exact_seconds = 0, self.t0, None
        self.exact_passes = {"complete": 0, "exact": 0, "started": 0}
        self.history: list[tuple] = []  # (round, seconds, LP value, new columns, bound, best SSE)
        self.phase = {
            "init": 0.0,
            "lp": 0.0,
            "rounding": 0.0,
            "heuristic_pricing": 0.0,
            "exact_pricing": 0.0,
            "mip_and_closing": 0.0,
        }

    # ----------------------------------------------------------------------------------
    # the steps

    def run(self) -> MethodOutput:
        partitions = self.initial_partitions()
        self.start(partitions)
        self.generate_columns()
        self.finish()
        return self.output()

    def left(self) -> float:
        """Seconds left for the current step (inf when unbounded)."""
        return self.clock.remaining()

    def initial_partitions(self) -> list[np.ndarray]:
        """MicroaggregationHeuristicMP steps 1–4: mdav, vmdav and the ``init`` methods, each
        within 30 % of the time left, their oversized groups split."""
        X, k, n = self.X, self.k, self.n
        partitions = []
        given = 0
        for init in self.init_methods:
            if isinstance(init, str):
                name = init
            else:
                given += 1
                name = f"init labels {given}"
            self.progress("colgen", None, f"initial partition: {name}")
            lab = start_labels(
                X,
                k,
                init,
                owner="colgen",
                seed=self.seed,
                deadline=self.deadline,
                share=0.3,
                progress=self.progress,
            )
            lab = check_partition(lab, n, k, name)
            self.init_sse[name] = sse(X, lab)
            lab = split_oversized(X, lab, k)
            val = sse(X, lab)
            partitions.append(lab)
            if val < self.best_sse:
                self.best_labels, self.best_sse, self.best_from = lab, val, name
        self.phase["init"] = time.perf_counter() - self.t0
        return partitions

    def start(self, partitions) -> None:
        """The master over the initial groups, the pricer, and the k-nearest-neighbour bound."""
        X, k, n = self.X, self.k, self.n
        self.master = Master(X)
        for lab in partitions:
            self.master.add(groups(lab))
        self.pricer = Pricer(X, k, self.exact_pricing, self.clock, self.max_nodes, self.seed_nodes)
        if self.resume is not None:  # an earlier run's columns and cuts: the LP goes on from there
            ptr, members = np.asarray(self.resume["ptr"]), np.asarray(self.resume["members"])
            self.master.add(np.split(members, ptr[1:-1]))
            self.master.add_cuts(np.asarray(self.resume["cuts"]).reshape(-1, 3))
            self.pricer.seed_nodes = max(self.pricer.seed_nodes, int(self.resume["seed_nodes"]))
        # a dual solution feasible from the start (kernels/pricing.py): π_i = D_i(k−1)/(2k) gives
        # every
        # cluster rc ≥ 0, so Σπ is a lower bound before any LP is solved. A resumed smoothing centre
        # only steers the pricing: its bound is not proven by this run
        self.pi_knn = self.pricer.knn_sum[:, k - 1] / (2.0 * k)
        self.lower_bound = float(self.pi_knn.sum())
        self.bound_from = "knn"
        self.centre, self.centre_bound = (self.pi_knn, np.zeros(0)), self.lower_bound
        if self.resume is not None and "centre_pi" in self.resume:
            self.centre = (
                np.asarray(self.resume["centre_pi"], dtype=np.float64),
                np.asarray(self.resume["centre_sigma"], dtype=np.float64),
            )
            self.centre_bound = float(self.resume["centre_bound"])
        self.pricer.retry_unit = 1e-3 * self.best_sse / n  # 0.1 % of the mean SSE per record
        self.tol = 1e-9 * max(self.best_sse / n, 1e-12)
        self.thr = -self.tol

    def offer(self, lab, source) -> None:
        """A candidate partition (labels, or None): oversized groups split, its groups added to
        the master, kept if it is the best so far."""
        if lab is None or (lab < 0).any():
            return
        X, k = self.X, self.k
        if source in self.heur_best:  # the paper's heuristic as it is (Tables 3–4 report it)
            self.heur_best[source] = min(self.heur_best[source], sse(X, lab))
        lab = split_oversized(X, lab, k)
        val = sse(X, lab)
        self.master.add(groups(lab))
        if val < self.best_sse - 1e-12 * max(self.best_sse, 1.0):
            self.best_labels, self.best_sse, self.best_from = relabel(lab), val, source

    def take_offers(self, enter: bool) -> None:
        """The partitions another search found meanwhile (``offers``, asked every round and told
        colgen's best partition so far, which that search may improve in turn): kept
        (the latest MAX_OFFERED), and entered as initial partitions when ``enter`` (before the
        final MIP). Not during the loop, so that the LP's path is colgen's own: auto's lane with
        them entered every round / before the final MIP / colgen alone, 10 s: census k = 3
        4.7209 / 4.7129 / 4.7159, eia k = 3 0.3523 / 0.3500 / 0.3510 (a near-optimal
        partition's groups make the master LP degenerate at it); at 3 s every round was
        better (tarragona k = 3 14.584 / 14.612 / 14.611)."""
        if self.offers is None:
            return
        for lab in self.offers(self.best_labels):
            lab = relabel(np.asarray(lab))
            if len(lab) == self.n and group_sizes(lab).min() >= self.k:
                self.offered = (self.offered + [lab])[-MAX_OFFERED:]
        if enter:
            for lab in self.offered:
                self.offer(lab, "offered")
            self.offered = []

    def proven(self) -> bool:
        """The best partition is proven optimal (its SSE equals the bound, to 1e-9 relative)."""
        return self.best_sse - self.lower_bound <= 1e-9 * max(self.best_sse, 1e-300)

    # ----------------------------------------------------------------------------------
    # the column-generation loop

    def generate_columns(self) -> None:
        """Master LP, rounding and pricing until no column prices out (converged), the round
        limit, or the time left less the final MIP's reserve."""
        self.keep_mip_reserve()
        longest = 0.0  # the longest round so far: its heuristic pricing cannot be interrupted
        while self.clock.room_for(longest) and not self.round_limit_reached():
            self.take_offers(enter=False)
            round_start = time.perf_counter()
            solved = self.solve_master()
            if solved is None:
                break
            self.rounds += 1
            self.clock.charge(COLGEN_ROUND_WEIGHT * self.k * self.n)  # work: one pricing round
            lp_value, x, pi, sigma = solved
            self.take_lp(lp_value, x, pi, sigma)
            self.round_lp(x)
            cols, rcs, rho, pass_exact = self.price_round(pi, sigma)
            self.log_round(lp_value, len(cols))
            if not cols:
                if rho is None:  # the pricing pass ran out of its share of the time
                    self.clock.clock_ended_step()
                    break
                if not pass_exact:
                    # no column found, but some seeds were cut short: search deeper
                    self.pricer.seed_nodes *= 4
                    self.deepened += 1
                    continue
                # the LP over all columns is solved: strengthen it with subset-row cuts
                if self.add_cuts(x):
                    continue
                self.converged = True
                break
            if self.tailing_off() and self.add_cuts(x):
                self.tailing_cut_rounds += 1
            self.add_columns(cols, rcs, lp_value)
            longest = max(longest, time.perf_counter() - round_start)
        self.clock = self.deadline
        self.pricer.deadline = self.deadline

    def keep_mip_reserve(self) -> None:
        """A run stopped by the time limit before convergence keeps some time for the integral
        master over the generated columns (the primal side): the loop ends that much earlier."""
        if self.deadline.bounded and self.final_mip:
            reserve = min(0.1 * float(self.time_limit), self.mip_time_limit or np.inf)
            left = self.deadline.remaining()
            self.clock = self.deadline.share(max(left - reserve, 0.0), left)
            self.pricer.deadline = self.clock

    def round_limit_reached(self) -> bool:
        return self.max_rounds is not None and self.rounds >= self.max_rounds

    def solve_master(self):
        """The master LP within the time left: (value, x, π, σ), or None when HiGHS could not
        solve it (the run ends as if out of time: its bound and partitions stand)."""
        tic = time.perf_counter()
        try:
            solved = self.master.solve(self.left())
        except MasterLPError as exc:
            self.lp_failure = str(exc)
            self.progress("colgen", None, f"{exc}: column generation stops here")
            solved = None
        self.phase["lp"] += time.perf_counter() - tic
        return solved

    def take_lp(self, lp_value, x, pi, sigma) -> None:
        """The master LP's value and duals, and whether its solution x is integral."""
        self.lp_value, self.pi = lp_value, pi
        self.dual_const = float(pi.sum() + sigma.sum())
        frac = np.abs(x - np.round(x)).max() if len(x) else 0.0
        self.lp_integral = frac < 1e-6

    def log_round(self, lp_value, new_columns: int) -> None:
        """The round in the history and the progress."""
        seconds = time.perf_counter() - self.t0
        self.history.append(
            (self.rounds, seconds, lp_value, new_columns, self.lower_bound, self.best_sse)
        )
        self.progress(
            "colgen",
            None,
            f"round {self.rounds}: LP {lp_value:.6g}, bound {self.lower_bound:.6g}, "
            f"best {self.best_sse:.6g}",
        )

    def add_columns(self, cols, rcs, lp_value) -> None:
        """The round's columns in the master: 3 disjoint families of them, or 50 while the LP
        value stalls (a degenerate master needs many columns before its value moves: census,
        k = 10, 120 s, 3 families per round: no LP progress in 24 rounds; all columns: it moves
        after 17 rounds)."""
        tic = time.perf_counter()
        prev = self.prev_lp
        stalled = prev is not None and lp_value >= prev - 1e-9 * abs(prev)
        self.master.add(disjoint_families(cols, rcs, self.n, max_families=50 if stalled else 3))
        self.prev_lp = lp_value
        self.phase["lp"] += time.perf_counter() - tic

    def round_lp(self, x) -> None:
        """The LP solution's partition when it is integral, else SimpleRoundingHeuristic and
        RoundingMSTHeuristic (maxcl = k+1..2k−1) on it (Section 5.2); each result is offered."""
        X, k, master = self.X, self.k, self.master
        tic = time.perf_counter()
        if self.lp_integral:
            self.offer(master.labels_from(x), "lp")
        else:
            order = np.lexsort((master.costs / np.diff(master.ptr), -x))
            self.offer(simple_rounding(X, k, master.ptr, master.members, order), "srh")
            for maxcl in range(k + 1, 2 * k):
                if self.left() <= 0:
                    break
                # offer() may have added columns since the LP was solved: they have x = 0
                x_all = np.zeros(master.ncols)
                x_all[: len(x)] = x
                self.offer(mst_rounding(X, k, master.ptr, master.members, x_all, maxcl), "msth")
        self.phase["rounding"] += time.perf_counter() - tic

    def price_round(self, pi, sigma):
        """One round's pricing at the LP duals (π, σ): heuristics first; columns already in the
        master (rc ≈ 0 within the LP tolerances) are not new. With smoothing (Wentges), price at
        π_s = α·π_centre + (1−α)·π_LP and keep the columns negative at π_LP; none = a mis-price,
        and the round prices again at π_LP (so "no column" still means LP optimality).
        Returns (columns, rc, rho, exact) as ``price_at``; rho only from a pass at the LP duals."""
        rho, pass_exact = None, False
        smoothed = self.smoothing > 0
        if smoothed:
            alpha = self.smoothing
            c_pi, c_sigma = self.centre
            c_sigma = np.concatenate(
                [c_sigma, np.zeros(len(sigma) - len(c_sigma))]
            )  # new cuts: σ = 0
            s_pi = alpha * c_pi + (1.0 - alpha) * pi
            s_sigma = alpha * c_sigma + (1.0 - alpha) * sigma
            cols, rcs, s_rho, _ = self.price_at(s_pi, s_sigma, None)
            if s_rho is not None:
                self.record_bound(s_pi, s_sigma, s_rho)
            if cols:  # reduced costs at the LP duals decide which columns are useful
                rc_lp = self.reduced_costs(cols, pi, self.master.cut_arrays(sigma))
                keep = np.flatnonzero(rc_lp < self.thr)
                cols, rcs = [cols[i] for i in keep], rc_lp[keep]
            if not cols:
                self.mispriced += 1
                smoothed = False
        if not smoothed:
            cols, rcs, rho, pass_exact = self.price_at(pi, sigma, None)
            if rho is not None:
                self.record_bound(pi, sigma, rho)
                self.rho_lp = rho
        return cols, rcs, rho, pass_exact

    def exact_due(self) -> bool:
        """A periodic exact pass (for the bound) before the heuristics stop finding columns:
        every 25 rounds, or once the time since the last one is 4 times its duration (and at
        least 10 % of the time limit), or with 25 % of the time left and no pricing bound yet.
        It searches deep for 5 % of the time left, then takes root bounds (see price_at)."""
        if self.rounds - self.last_exact_round >= 25:
            return True
        if not self.deadline.bounded:
            return False
        since = time.perf_counter() - self.last_exact_end
        if self.last_exact_seconds is not None and since >= max(
            4.0 * self.last_exact_seconds, 0.1 * float(self.time_limit)
        ):
            return True
        return not self.lagrangian_found and self.left() < 0.25 * float(self.time_limit)

    def price_at(self, p_pi, p_sigma, force_exact):
        """Columns with rc < thr at the duals (p_pi, p_sigma): heuristics, then the exact pass
        when they find nothing new (force_exact=None) or when force_exact. Returns (columns,
        rc, rho, exact): rho[i] ≤ rc(C)/|C| for every cluster C ∋ i (None when no exact pass
        was completed), exact = no seed of the exact pass was cut short."""
        X, k, master, pricer = self.X, self.k, self.master, self.pricer
        pricer.set_cuts(*master.cut_arrays(p_sigma))
        pos = np.flatnonzero(p_pi > 0)
        starts = X[pos[np.argsort(-p_pi[pos], kind="stable")][: self.alternating_starts]]
        tic = time.perf_counter()
        cols, rcs = pricer.heuristic(p_pi, self.thr, starts)
        fresh = [i for i, c in enumerate(cols) if not master.has(c)]
        cols, rcs = [cols[i] for i in fresh], rcs[fresh]
        self.phase["heuristic_pricing"] += time.perf_counter() - tic
        run_exact = (len(cols) == 0 or self.exact_due()) if force_exact is None else force_exact
        if not run_exact or self.left() <= 0:
            return cols, rcs, None, False
        tic = time.perf_counter()
        if self.clock.bounded:
            # deep search until the pass deadline, root bounds after it (~0.03 s per size at
            # n = 1080): a pass needed for columns may use the time left, a periodic one 5 %
            left = self.left()
            reserve = max(0.1 * left, 0.03 * k)
            allowance = left - reserve if len(cols) == 0 else 0.05 * left
            pricer.pass_deadline = self.clock.share(max(allowance, 0.0), left)
        self.last_exact_round = self.rounds
        self.exact_passes["started"] += 1
        pcols, prcs, rho, all_exact = pricer.exact_pass(p_pi, self.thr)
        fresh = [i for i, c in enumerate(pcols) if not master.has(c)]
        cols += [pcols[i] for i in fresh]
        rcs = np.concatenate([rcs, prcs[fresh]])
        if rho is None:
            self.phase["exact_pricing"] += time.perf_counter() - tic
            return cols, rcs, None, False
        self.last_exact_end = time.perf_counter()
        self.phase["exact_pricing"] += self.last_exact_end - tic
        self.last_exact_seconds = self.last_exact_end - tic
        self.exact_passes["complete"] += 1
        self.exact_passes["exact"] += int(all_exact)
        return cols, rcs, rho, all_exact

    def record_bound(self, p_pi, p_sigma, rho) -> None:
        """Lagrangian bound at any duals (π, σ <= 0) from a completed exact pass:
        SSE(P) = Σπ + Σ_S σ_S·(Σ_{C: |C∩S|>=2} x_C) + Σ_{C∈P} rc(C) ≥ Σπ + Σσ + Σ_i ρ_i, as every
        cut row is ≤ 1 and record i lies in one cluster C of P, rc(C) = Σ_{i∈C} rc(C)/|C|.
        A better bound moves the smoothing centre there."""
        self.lagrangian_found = True
        self.bound_round = self.rounds
        lag = float(p_pi.sum() + p_sigma.sum()) + float(np.minimum(rho, 0.0).sum())
        if lag > self.lower_bound:
            self.lower_bound, self.bound_from = lag, "lagrangian"
        if lag > self.centre_bound:
            self.centre, self.centre_bound = (p_pi.copy(), p_sigma.copy()), lag

    def reduced_costs(self, cols, p_pi, cut_arrays) -> np.ndarray:
        cptr, ccut, cpen = cut_arrays
        sizes = np.fromiter((len(c) for c in cols), dtype=np.int64, count=len(cols))
        flat = np.concatenate(cols).astype(np.int64)
        cptr_c = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return column_rcs(self.X, p_pi, cptr_c, flat, cptr, ccut, cpen)

    def tailing_off(self) -> bool:
        """``cut_tailing``: this round's exact pass left the LP within cut_tailing·LP of the best
        bound."""
        return (
            self.cut_tailing > 0
            and self.bound_round == self.rounds
            and self.lp_value - self.lower_bound <= self.cut_tailing * abs(self.lp_value)
        )

    def add_cuts(self, x) -> bool:
        """Violated subset-row cuts on triples at the LP solution x (ours), the n/4 most violated;
        True when some were added (column generation then resumes)."""
        master = self.master
        if not (
            self.cuts
            and not self.lp_integral
            and not self.proven()
            and self.cut_rounds < self.max_cut_rounds
        ):
            return False
        sup = np.flatnonzero(x > 1e-9)
        sptr = np.concatenate([[0], np.cumsum(np.diff(master.ptr)[sup])]).astype(np.int64)
        smem = np.concatenate([master.members[master.ptr[c] : master.ptr[c + 1]] for c in sup])
        triples, lhs = separate_subset_rows(self.n, sptr, smem, x[sup], 1e-4)
        if len(triples):
            best_first = np.argsort(-lhs, kind="stable")[: max(self.n // 4, 10)]
            if master.add_cuts(triples[best_first]) > 0:
                self.cut_rounds += 1
                return True
        return False

    # ----------------------------------------------------------------------------------
    # the end: integral master and closing (ClosingSteps, closing.py); the output

    def output(self) -> MethodOutput:
        # SSE >= 0, and no bound above the best SSE can be proven (rounding in the last digits)
        self.lower_bound = min(max(self.lower_bound, 0.0), self.best_sse)
        extras = {
            "colgen_rounds": self.rounds,
            "colgen_columns": self.master.ncols,
            "colgen_lp_value": self.lp_value,
            "colgen_converged": self.converged,
            "colgen_lp_failure": self.lp_failure,
            "colgen_lp_integral": bool(self.lp_integral and self.converged),
            "colgen_proven_optimal": bool(self.proven()),
            "colgen_best_from": self.best_from,
            "colgen_bound_from": self.bound_from,
            "colgen_knn_bound": float(self.pi_knn.sum()),
            "colgen_init_sse": self.init_sse,
            "colgen_srh_sse": self.heur_best["srh"],
            "colgen_msth_sse": self.heur_best["msth"],
            "colgen_closing": self.closing,
            "colgen_cuts": len(self.master.cuts),
            "colgen_cut_rounds": {
                "all": self.cut_rounds,
                "before_convergence": self.tailing_cut_rounds,
            },
            "colgen_mispriced": self.mispriced,
            "colgen_smoothing": self.smoothing,
            "colgen_exact_passes": self.exact_passes,
            "colgen_seed_nodes": self.pricer.seed_nodes,
            "colgen_bnb_stats": self.pricer.stats,
            "colgen_deepened": self.deepened,
            "colgen_phase_seconds": self.phase,
            "colgen_history": (
                self.history
            ),  # (round, seconds, LP value, new columns, bound, best SSE)
            "colgen_seconds": time.perf_counter() - self.t0,
        }
        if self.keep_state:
            master = self.master
            extras["colgen_state"] = {
                "n": self.n,
                "k": self.k,
                "ptr": master.ptr.copy(),
                "members": master.members.copy(),
                "cuts": master.cuts.copy(),
                "seed_nodes": int(self.pricer.seed_nodes),
                "centre_pi": self.centre[0].copy(),
                "centre_sigma": self.centre[1].copy(),
                "centre_bound": float(self.centre_bound),
            }
        return MethodOutput(self.best_labels, lower_bound=self.lower_bound, extras=extras)
