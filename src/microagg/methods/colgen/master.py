"""The restricted master problem (9) of the column-generation paper, solved by HiGHS: the LP
grown with addCols and re-solved warm, subset-row cut rows (ours), and the integral master
(a HiGHS MIP over the generated columns).

Every HiGHS object is made by ``new_highs``: HiGHS prints a banner on stdout when the first
``Highs()`` is constructed, before ``output_flag`` can be set, and stdout may carry a JSON
document (``microagg protect --json``).
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

import highspy
import numpy as np
from scipy import sparse

from ...kernels.pricing import column_costs
from ...labels import relabel

__all__ = ["Master", "MasterLPError", "cut_arrays", "groups", "new_highs", "set_time_limit"]

_STDOUT_LOCK = threading.Lock()  # fd 1 is process-wide: one redirection at a time


def _flush_c_stdout() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to load (not POSIX): nothing buffered there
        pass


def new_highs() -> highspy.Highs:
    """A silent, single-threaded ``highspy.Highs``. File descriptor 1 points to os.devnull while
    it is constructed, so the banner HiGHS prints then never reaches stdout."""
    with _STDOUT_LOCK:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, 1)
                h = highspy.Highs()
                _flush_c_stdout()
            finally:
                os.dup2(saved, 1)
                os.close(devnull)
        finally:
            os.close(saved)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    return h


def set_time_limit(h: highspy.Highs, seconds: float) -> None:
    """Let the next h.run() last at most ``seconds``. HiGHS (1.x) compares its time_limit
    with the run time accumulated over ALL runs of the object, so the limit is offset by it."""
    if not np.isfinite(seconds):
        h.setOptionValue("time_limit", highspy.kHighsInf)
    else:
        h.setOptionValue("time_limit", float(h.getRunTime()) + max(float(seconds), 0.0))


#: HiGHS simplex_strategy values: primal (the master's, see Master.__init__) and HiGHS's own choice
PRIMAL_SIMPLEX, HIGHS_CHOICE = 4, 0


class MasterLPError(RuntimeError):
    """HiGHS could not solve the master LP, even from scratch (the run ends with what it has)."""


class Master:
    """The restricted master LP (9): one row per record (Σ_{C∋i} x_C = 1), one column per
    cluster C (cost w_C = SSE of C, eq. (8)), and the subset-row cut rows added so far."""

    def __init__(self, X: np.ndarray):
        self.X = X
        self.n = len(X)
        self.last_mip_nodes = 0  # branch-and-bound nodes of the last integral master
        self.h = new_highs()
        # primal simplex: after addCols the last basis stays primal feasible. The default (dual)
        # simplex stalls on the degenerate early masters: census k = 5, 120 s, it spent 93 s in
        # 14 LPs (43 000 iterations for the last one); primal: 19 s in 46 LPs
        self.h.setOptionValue("simplex_strategy", PRIMAL_SIMPLEX)
        ones = np.ones(self.n)
        self.h.addRows(
            self.n, ones, ones, 0, np.zeros(self.n, np.int32), np.zeros(0, np.int32), np.zeros(0)
        )
        self.keys: set[bytes] = set()
        self.ptr = np.zeros(1, dtype=np.int64)
        self.members = np.zeros(0, dtype=np.int64)
        self.costs = np.zeros(0)
        self.cuts = np.zeros((0, 3), dtype=np.int64)  # subset-row cuts: Σ_{C: |C∩S|>=2} x_C <= 1
        self.cut_keys: set[tuple] = set()

    def _incidence(self, ptr, members):
        ncol = len(ptr) - 1
        return sparse.csr_matrix((np.ones(len(members)), members, ptr), shape=(ncol, self.n))

    def _cut_hits(self, ptr, members, cuts):
        """(column, cut) pairs where the column holds >= 2 records of the cut."""
        if len(cuts) == 0 or len(ptr) <= 1:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        M = sparse.csr_matrix(
            (np.ones(cuts.size), cuts.ravel(), np.arange(0, cuts.size + 1, 3)),
            shape=(len(cuts), self.n),
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
        self.h.addRows(
            len(new),
            np.full(len(new), -highspy.kHighsInf),
            np.ones(len(new)),
            len(cols),
            starts.astype(np.int32),
            cols.astype(np.int32),
            np.ones(len(cols)),
        )
        self.cuts = np.concatenate([self.cuts, new])
        return len(new)

    def cut_arrays(self, sigma):
        """record -> cuts CSR and penalties −σ_S >= 0 for the pricing kernels."""
        return cut_arrays(self.cuts, self.n, sigma)

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
            len(new),
            costs,
            np.zeros(len(new)),
            np.full(len(new), highspy.kHighsInf),
            len(rows),
            cstarts.astype(np.int32),
            rows.astype(np.int32),
            np.ones(len(rows)),
        )
        self.members = np.concatenate([self.members, flat])
        self.ptr = np.concatenate([self.ptr, ptr[1:] + self.ptr[-1]])
        self.costs = np.concatenate([self.costs, costs])
        return len(new)

    def solve(self, time_limit: float = np.inf):
        """(LP value, x, π, σ) of the restricted master; None if stopped by the time limit.

        HiGHS may fail on a warm-started solve ("Solve error": eia, k = 10, round ~30 of a run
        without time limit): the LP is then solved again from scratch, first with the primal
        simplex, then with HiGHS's default; MasterLPError if it still fails."""
        tic = time.perf_counter()
        set_time_limit(self.h, time_limit)
        self.h.run()
        status = self.h.getModelStatus()
        for strategy in (PRIMAL_SIMPLEX, HIGHS_CHOICE):
            if status in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit):
                break
            self.h.clearSolver()  # drop the basis and factorisation the failed solve left
            self.h.setOptionValue("simplex_strategy", strategy)
            set_time_limit(self.h, time_limit - (time.perf_counter() - tic))
            self.h.run()
            status = self.h.getModelStatus()
            self.h.setOptionValue("simplex_strategy", PRIMAL_SIMPLEX)
        if status == highspy.HighsModelStatus.kTimeLimit:
            return None
        if status != highspy.HighsModelStatus.kOptimal:
            raise MasterLPError(
                f"master LP not solved to optimality: {self.h.modelStatusToString(status)}"
            )
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value, dtype=np.float64)
        duals = np.asarray(sol.row_dual, dtype=np.float64)
        sigma = np.minimum(duals[self.n :], 0.0)  # <= rows of a minimisation: σ <= 0
        return float(self.h.getInfo().objective_function_value), x, duals[: self.n], sigma

    def solve_integral(
        self,
        time_limit: float,
        incumbent: np.ndarray | None,
        abs_gap: float = 0.0,
        primal: bool = False,
        max_nodes: int | None = None,
    ):
        """The integral master over the current columns (HiGHS MIP), stopped when the gap to
        its own bound is at most abs_gap, or after ``max_nodes`` branch-and-bound nodes (a
        bound the same at any load; HiGHS with one thread and its fixed random seed is then
        deterministic).

        Returns (labels or None, objective, dual bound, optimal?)."""
        mip = new_highs()
        mip.passModel(self.h.getLp())
        ncol = self.ncols
        if primal:
            # looking for good partitions: cut rows only slow the MIP down; more heuristics
            if len(self.cuts):
                mip.deleteRows(
                    len(self.cuts), np.arange(self.n, self.n + len(self.cuts), dtype=np.int32)
                )
            mip.setOptionValue("mip_heuristic_effort", 0.3)
        mip.changeColsIntegrality(
            ncol, np.arange(ncol, dtype=np.int32), np.full(ncol, highspy.HighsVarType.kInteger)
        )
        set_time_limit(mip, max(float(time_limit), 0.05))
        mip.setOptionValue("mip_rel_gap", 1e-9)
        mip.setOptionValue("mip_abs_gap", float(abs_gap))
        mip.setOptionValue("random_seed", 0)
        if max_nodes is not None:
            mip.setOptionValue("mip_max_nodes", int(max_nodes))
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
        if (
            incumbent is not None
            and info.primal_solution_status >= 2
            and self.costs @ np.asarray(mip.getSolution().col_value)
            > info.objective_function_value + 1e-9 * max(1.0, abs(info.objective_function_value))
        ):
            # highspy 1.16: after setSolution, a MIP that presolve solves whole reports the optimum
            # but hands back the warm start's x (tests/test_icsm.py, GroupPool); solved again
            # without presolve, x is the optimum's
            mip.clearSolver()
            mip.setOptionValue("presolve", "off")
            mip.run()
            info = mip.getInfo()
        status = mip.getModelStatus()
        self.last_mip_nodes = int(info.mip_node_count)  # (progress lines, benchmarks)
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
            mem = self.members[self.ptr[c] : self.ptr[c + 1]]
            if (labels[mem] >= 0).any():
                return None
            labels[mem] = g
        return None if (labels < 0).any() else labels

    def indicator(self, labels: np.ndarray) -> np.ndarray:
        """x with 1 on the columns of the partition ``labels`` (all must be in the master)."""
        x = np.zeros(self.ncols)
        index = {
            self.members[self.ptr[c] : self.ptr[c + 1]].tobytes(): c for c in range(self.ncols)
        }
        for mem in groups(labels):
            x[index[np.sort(mem).tobytes()]] = 1.0
        return x


def groups(labels: np.ndarray) -> list[np.ndarray]:
    """The record ids of each group of ``labels`` (the master's columns for a partition)."""
    labels = relabel(labels)
    order = np.argsort(labels, kind="stable")
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    return np.split(order, cuts)


def cut_arrays(cuts: np.ndarray, n: int, sigma: np.ndarray):
    """The pricing kernels' view of subset-row cuts (triples of record ids, one row each): a
    record -> cuts CSR (cptr, ccut) and the penalties −σ_S >= 0 of their duals σ <= 0."""
    cuts = np.asarray(cuts, dtype=np.int64).reshape(-1, 3)
    nc = len(cuts)
    if nc == 0:
        return np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0)
    rec = cuts.ravel()
    cut = np.repeat(np.arange(nc), 3)
    order = np.argsort(rec, kind="stable")
    cptr = np.concatenate([[0], np.cumsum(np.bincount(rec, minlength=n))]).astype(np.int64)
    return cptr, cut[order].astype(np.int64), np.maximum(-np.asarray(sigma, dtype=np.float64), 0.0)
