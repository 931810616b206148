"""The column-generation run's last steps (a part of ``ColumnGeneration``, driver.py): the
integral master over the generated columns (the primal side, Section 5.2 of the column-generation
paper, then a MIP), and after convergence the closing enumeration that proves the optimum (ours;
see the package docstring).
"""

from __future__ import annotations

import time

import numpy as np

from .master import Master, groups

__all__ = ["ClosingSteps"]

# Under a work budget (run option ``work``) the integral masters (the final MIP, the closing)
# are not solved: HiGHS cannot stop them at a deterministic point (a node limit of 1 still took
# 78 s on census k = 3 over 5,166 columns at load 9, the root's cuts and heuristics), so the
# result is the best rounding's partition, the same at any load.


class ClosingSteps:
    """``finish`` and what it calls, on the state of a ``ColumnGeneration`` run (its master,
    pricer, best partition, bounds and duals)."""

    def mip_seconds(self, fraction: float) -> float:
        """``fraction`` of the time left, at most mip_time_limit; inf without a time limit (each
        integral master is then bounded by ``mip_nodes`` alone, the same at any load)."""
        if not self.deadline.bounded:
            return np.inf
        if self.mip_time_limit is not None:
            return min(fraction * self.left(), self.mip_time_limit)
        return fraction * self.left()

    def primal_mip(self, tl: float) -> None:
        """The integral master over the generated columns, warm-started from the best partition,
        within ``tl`` seconds; its solution is offered."""
        master = self.master
        lab, _, _, optimal = master.solve_integral(
            tl if np.isfinite(tl) else 1e9,
            master.indicator(self.best_labels),
            primal=True,
            max_nodes=self.mip_nodes,
        )
        self.offer(lab, "mip")
        self.progress(
            "colgen",
            None,
            f"MIP over {master.ncols} columns: {'optimal' if optimal else 'stopped'} "
            f"({master.last_mip_nodes} nodes), best {self.best_sse:.6g}",
        )

    def restricted_mip(self, columns, tl: float) -> None:
        """The integral master over the best partition's groups and ``columns`` alone, warm-started
        from the best partition, within ``tl`` seconds; its solution is offered."""
        if not np.isfinite(tl):
            tl = 1e9
        sub = Master(self.X)
        sub.add(groups(self.best_labels))
        sub.add(columns)
        lab, _, _, optimal = sub.solve_integral(
            tl, sub.indicator(self.best_labels), primal=True, max_nodes=self.mip_nodes
        )
        self.offer(lab, "restricted mip")
        self.progress(
            "colgen",
            None,
            f"MIP over the best groups and {len(columns)} enumerated clusters: "
            f"{'optimal' if optimal else 'stopped'} ({sub.last_mip_nodes} nodes), "
            f"best {self.best_sse:.6g}",
        )

    def finish(self) -> None:
        """The integral master over the generated columns (primal side, Section 5.2 + MIP), and
        after convergence the closing step."""
        tic = time.perf_counter()
        self.take_offers(enter=True)
        if self.deadline.work_bounded:  # no integral master: see the note above
            self.phase["mip_and_closing"] = time.perf_counter() - tic
            return
        if (
            self.final_mip
            and self.left() > 0
            and self.master.ncols > 0
            and not (self.converged and self.close_gap)
            and not self.proven()
        ):
            # HiGHS may overrun a MIP time limit by a fraction (root LP, presolve): 80 % of the rest
            self.primal_mip(self.mip_seconds(0.8))
        if self.converged and self.final_mip and self.close_gap:
            self.close()
        self.phase["mip_and_closing"] = time.perf_counter() - tic

    def close(self) -> None:
        """Closing (ours): with converged duals π, a partition P costs Σπ + Σσ + Σ_{C∈P} rc(C) at
        least, and every record i contributes rc(C)/|C| ≥ ρ_i; so if P uses a cluster with
        rc ≥ G' it costs ≥ Σπ + Σσ + G' + Σρ. Enumerate all clusters with rc < G' (G' as large
        as max_enumerated allows, at most UB − Σπ − Σσ − Σρ), solve the integral master over
        them: OPT ≥ min(MIP bound, Σπ + Σσ + G' + Σρ); the largest G' proves OPT."""
        master, pricer = self.master, self.pricer
        pi_sum = self.dual_const  # Σπ + Σσ (σ <= 0 and every cut row is <= 1 for a partition)
        corr = float(np.minimum(self.rho_lp, 0.0).sum())
        last_g = None
        for _ in range(3):
            if self.proven() or self.left() <= 0:
                break
            gap_full = self.best_sse - pi_sum - corr + self.tol
            # HiGHS may overrun its time limit on large MIPs (presolve, root LP): scale the
            # enumerated set with the time left
            left = self.left()
            budget = (
                self.max_enumerated
                if not np.isfinite(left)
                else int(min(self.max_enumerated, 2000 * left))
            )
            if budget < 500:
                break
            enumerated, enum_rc, g_try = pricer.enumerate_below(self.pi, gap_full, budget)
            if enumerated is None or (last_g is not None and g_try <= last_g * (1 + 1e-12)):
                break
            last_g = g_try
            # primal, first: the integral master over the best partition's groups and the enumerated
            # clusters only (every cluster of a partition within G' of the bound is among them;
            # small, so HiGHS solves it where the MIP over all columns does not: census k = 5,
            # warm-started from IL 7.3192, the MIP over all 19 000 columns found nothing in 300 s)
            self.restricted_mip(enumerated, self.mip_seconds(0.3))
            # then the integral master over all columns and the enumerated ones of smallest rc
            few = np.argsort(enum_rc, kind="stable")[: self.primal_columns]
            master.add([enumerated[i] for i in few])
            self.primal_mip(self.mip_seconds(0.4))
            # bound: the integral master over every cluster with rc < G'
            if self.left() < 1.0:
                break
            master.add(enumerated)
            tl = self.mip_seconds(0.8)
            target = pi_sum + g_try + corr  # no MIP bound above this value can be used
            lab, obj, dual_bound, optimal = master.solve_integral(
                tl if np.isfinite(tl) else 1e9,
                master.indicator(self.best_labels),
                max(self.best_sse - target, 0.0),
                max_nodes=self.mip_nodes,
            )
            self.offer(lab, "mip")
            mip_bound = min(dual_bound, self.best_sse)
            cand = min(mip_bound, pi_sum + g_try + corr)
            self.closing.append(
                {
                    "threshold": g_try,
                    "columns": len(enumerated),
                    "mip_optimal": bool(optimal),
                    "mip_bound": mip_bound,
                    "bound": cand,
                    "best": self.best_sse,
                }
            )
            self.progress(
                "colgen",
                None,
                f"closing: threshold {g_try:.4g}, {len(enumerated)} columns "
                f"({master.last_mip_nodes} MIP nodes), bound {cand:.6g}, best {self.best_sse:.6g}",
            )
            if cand > self.lower_bound:
                self.lower_bound, self.bound_from = cand, "closing"
