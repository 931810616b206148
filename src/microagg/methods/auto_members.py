"""How auto runs its members: each member's row, the best partition and lower bound so far
(``Portfolio``), the member run beside the sequence in a second thread (``Lane``), and the cost
model that skips a constructive member which could not stop within the budget left.

The policy (which members, in which order, with which share of the budget) is ``methods.auto``'s.
"""

from __future__ import annotations

import collections
import threading
import time
import warnings

import numpy as np

from ..errors import InputError, RunWarning
from ..labels import InvalidPartitionError, check_partition, il_percent, sse, sst
from ..progress import silent
from . import BudgetError, run

__all__ = ["Lane", "Portfolio", "LOCAL_SEARCHES", "SECOND_START", "MEMBER_COST"]

#: anytime local searches: first in the portfolio, one gets the whole budget (it stops when
#: converged)
LOCAL_SEARCHES = ("icsm", "lsearch")

#: Below LANE_EARLY_BUDGET seconds (no column generation beside the sequence), the second core
#: runs the local search from this member's partition, beside the local search from MDAV's.
SECOND_START = "tsp-mhm"

#: Beside the lane, ICSM's restarts polish column generation's newest best partition between
#: restarts (their ``offers``): rounded and MIP solutions are rarely local optima. ICSM from
#: colgen-alone's final partition, measured: census k = 3, 10 s 4.7123 -> 4.6848 in 0.35 s;
#: tarragona k = 3, 3 s 14.591 -> 14.524; eia k = 3, 10 s 0.3529 -> 0.3503. The polished
#: partition goes back to colgen's final MIP. The lane keeps the whole budget (ending it 5 %
#: early to polish its final partition cost eia k = 4 at 60 s 0.48302 -> 0.48316, colgen's own
#: result at 57 s), so only the final partitions of runs that end early are polished. Polished:
#: the partitions within this relative SSE of the best so far.
POLISH_WINDOW = 0.02

#: The least time a constructive member takes on n records (it cannot stop sooner), as a multiple
#: of MDAV's time on the same data measured in the run: (ratio at COST_REF_N records, exponent of
#: n / COST_REF_N). A member whose least time exceeds the budget left is skipped. Measured (CPU s,
#: time limit 0.01 s, k = 3, census-like and Gaussian 10-d at 3·10^4 and 10^5 records, the larger
#: ratio of the two kinds, rounded up): vmdav 0.8-0.9, mdav-mhm 1.35-1.6 (its group tour on a
#: KD-tree), tsp-mhm 2.4-3.6 (its first tour), kward 45 at 3·10^4 growing as n^0.8 more (its first
#: Ward pass is O(n²·d)). Once MDAV read the records about once per pair of groups (issue 35),
#: MDAV's time fell and the others' did not: vmdav 0.93 / 3.19 (census-like / Gaussian), mdav-mhm
#: 1.40 / 3.33 at 3·10^4 (uncut: a step that short is never cut), 0.70 / 0.26 and 0.76 / 0.26 at
#: 10^5 (cut at the limit); kept flat in n, an upper bound at both sizes. tsp-mhm and kward refuse
#: by themselves too (their own probes). Below COST_MIN_N records every member takes a second or
#: less.
MEMBER_COST = {
    "mdav": (1.0, 0.0),
    "vmdav": (3.5, 0.0),
    "mdav-mhm": (3.5, 0.0),
    "tsp-mhm": (4.0, 0.3),
    "kward": (45.0, 0.8),
}
COST_REF_N, COST_MIN_N = 30_000, 20_000
#: Under a work budget the same model in work units, deterministic: MDAV's work on n records is
#: MDAV_WORK_PER_RECORD · n (about 25 s for 10^6 records at 30 s limits, benchmarks/results/
#: time_limits.md, at deadline.UNITS_PER_SECOND); a constructive member is charged its model's work
#: after it runs, and skipped when that is more than the work left.
MDAV_WORK_PER_RECORD = 4.0


class _Cancelled(Exception):
    """Raised inside the column-generation thread to stop it."""


class Lane:
    """A member in a second thread beside auto's sequence (``parallel``). Column generation as
    it runs alone, with the whole budget, its final MIP also taking the partitions the sequence
    found (its ``offers``), and telling the sequence its best partition so far, which the local
    search polishes; so that auto is as good as colgen alone and icsm alone with the same time
    limit. Or, at budgets below LANE_EARLY_BUDGET, icsm from SECOND_START's partition. Their
    kernels (numba ``nogil``, HiGHS) release the GIL, so the two threads run on two cores. If
    the sequence fails or is interrupted (Ctrl-C), ``cancel`` makes colgen's next ``offers``
    call raise, so it stops at its next round (the thread is a daemon besides)."""

    def __init__(self, X, k, seed, deadline, params, method="colgen"):
        self.method = method  # colgen; or icsm from another start at small budgets (SECOND_START)
        self.inbox = collections.deque()
        self.cancelled = False
        self.colgen_best = (
            None  # column generation's best partition so far, for the sequence to polish
        )
        self.deadline, self.joined = deadline, False
        self.out, self.error, self.seconds = None, None, 0.0
        self.when_proven = (
            None  # called in this thread once colgen has proved its partition optimal
        )
        self.stopped_early = (
            False  # stop_when_proven ended its deadline before the deadline's own end
        )
        self.thread = threading.Thread(
            target=self._run,
            args=(X, k, seed, deadline, params),
            name=f"microagg-auto-{method}",
            daemon=True,
        )
        self.thread.start()

    def _run(self, X, k, seed, deadline, params):
        tic = time.perf_counter()
        if self.method == "colgen":
            params = dict(params, offers=self.take)
        try:
            self.out = run(
                self.method, X, k, seed=seed, deadline=deadline, progress=silent, **params
            )
        except BaseException as exc:  # handed to the caller's thread by join()
            self.error = exc
        self.seconds = time.perf_counter() - tic
        when_proven = self.when_proven
        if when_proven is not None and self.proven():
            when_proven()

    def proven(self) -> bool:
        """Has column generation ended with its partition proved optimal?"""
        return (
            self.method == "colgen"
            and self.out is not None
            and bool(self.out.extras.get("colgen_proven_optimal"))
        )

    def stop_when_proven(self, deadline) -> None:
        """Stop ``deadline`` once column generation has proved its partition optimal (no search
        can beat it): at once if it already has, else from the lane's thread when it does. The
        callback is set before the check, so a lane ending in between is not missed."""

        def stop():
            self.stopped_early |= deadline.stop()

        self.when_proven = stop
        if self.proven():
            stop()

    def offer(self, labels) -> None:
        self.inbox.append(labels)

    def cancel(self) -> None:
        self.cancelled = True

    def take(self, colgen_best=None) -> list:
        if self.cancelled:
            raise _Cancelled("auto was interrupted")
        if colgen_best is not None:
            self.colgen_best = colgen_best
        taken = []
        while self.inbox:
            taken.append(self.inbox.popleft())
        return taken

    def join(self, state) -> None:
        """Wait for the lane and record its result in ``state`` (in the caller's thread), once."""
        if self.joined:
            return
        self.thread.join()
        self.joined = True
        if isinstance(self.error, InputError):
            raise self.error
        if self.method != "colgen":  # a further search of the sequence's member, in its row
            row = state.row(self.method)
            if self.error is not None:
                state.failed(self.method, self.error, self.seconds, row)
            elif (
                state.record(self.method, self.out, self.seconds, row) is not None
                and row is not None
            ):
                row["beside_from"] = SECOND_START
        elif self.error is not None:
            state.failed("colgen", self.error, self.seconds, None)
        else:
            state.record("colgen", self.out, self.seconds)
            state.row("colgen")["lane"] = "parallel"


def _il(value: float, total_ss: float) -> float:
    return il_percent(value, total_ss)


class Portfolio:
    """The state of one auto run: the members' rows and partitions, the best partition and bound."""

    def __init__(self, X, k, seed, member_params):
        self.X, self.k, self.seed, self.member_params = X, k, seed, member_params
        self.total_ss = sst(X)
        self.rows, self.by_method = [], {}
        self.best_labels, self.best_sse, self.winner = None, np.inf, None
        self.best_bound, self.bound_from = None, None
        self.lane: Lane | None = (
            None  # column generation beside the sequence, told of every new best
        )
        self.start = None  # the caller's partition to continue from (init)
        self.polished, self.polished_last = 0, None  # column generation's partitions polished
        self.mdav_seconds = None  # MDAV's time on X, measured in this run (the members' cost unit)

    def params(self, name, **extra):
        return dict(self.member_params.get(name, {}), **extra)

    def first_params(self, name) -> dict:
        """A member's parameters where the caller's partition (``init``) is its start: the local
        search (which makes any assignment a partition) and, if the partition is valid, column
        generation (unless the caller gave them another init)."""
        params = self.params(name)
        if self.start is not None and "init" not in params:
            if name in LOCAL_SEARCHES:
                params["init"] = self.start
            elif name == "colgen" and "init" in self.by_method:
                params["init"] = [self.start]
        return params

    def run(self, name, share, progress, row=None, **params):
        """Run one member (or a further search of one, reported in its ``row``) and record it."""
        tic = (
            time.perf_counter()
        )  # not share.elapsed(): a further search may get the whole deadline
        try:
            out = run(
                name, self.X, self.k, seed=self.seed, deadline=share, progress=progress, **params
            )
        except (
            BudgetError
        ) as exc:  # it could not stop within its share: skipped, as the cost model does
            if (
                self.best_labels is None
            ):  # nothing to return yet: the portfolio cannot run in this budget
                raise
            if row is None:
                self.rows.append(
                    {"method": name, "status": f"skipped ({str(exc).split(': ', 1)[-1]})"}
                )
            return None
        except InputError:  # the user's error (a bad member parameter, ...): report it
            raise
        except Exception as exc:  # a member's bug must not sink the portfolio: skip it, loudly
            return self.failed(name, exc, time.perf_counter() - tic, row)
        return self.record(name, out, time.perf_counter() - tic, row)

    def failed(self, name, exc, seconds, row):
        status = f"failed: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
        warnings.warn(f"auto: {name} {status}", RunWarning, stacklevel=3)
        if row is None:
            self.rows.append({"method": name, "status": status, "seconds": seconds})
        return None

    def least_seconds(self, name) -> float | None:
        """The least time member ``name`` needs on X (MEMBER_COST, in units of MDAV's measured
        time), or None when no model applies (unlisted, small n, MDAV not timed yet)."""
        n = len(self.X)
        if name not in MEMBER_COST or self.mdav_seconds is None or n < COST_MIN_N:
            return None
        ratio, growth = MEMBER_COST[name]
        return ratio * (n / COST_REF_N) ** growth * self.mdav_seconds

    def least_work(self, name) -> float | None:
        """The work member ``name`` is charged on X under a work budget (MEMBER_COST in units of
        MDAV's modelled work), or None when no model applies (unlisted, small n)."""
        n = len(self.X)
        if name not in MEMBER_COST or n < COST_MIN_N:
            return None
        ratio, growth = MEMBER_COST[name]
        return ratio * (n / COST_REF_N) ** growth * MDAV_WORK_PER_RECORD * n

    def record(self, name, out, seconds, row=None):
        """Check a member's output and keep its partition if it is the best; its figures go to
        a new row, or improve ``row``. Returns the labels, or None if they are not valid."""
        try:
            labels = check_partition(out.labels, len(self.X), self.k, name)
        except InvalidPartitionError as exc:
            return self.failed(name, exc, seconds, row)
        if name == "mdav" and not self.member_params.get("mdav"):
            self.mdav_seconds = seconds
        elif (
            self.mdav_seconds is None
            and out.extras.get("init") == "mdav"
            and out.extras.get("init_seconds")
        ):
            self.mdav_seconds = float(out.extras["init_seconds"])  # lsearch's start
        value = sse(self.X, labels)
        if row is None:
            row = {
                "method": name,
                "sse": value,
                "il": _il(value, self.total_ss),
                "seconds": seconds,
                "status": "ok",
            }
            self.rows.append(row)
            self.by_method[name] = labels
        else:
            row["seconds"] += seconds
            if value < row["sse"]:
                row.update(sse=value, il=_il(value, self.total_ss))
                self.by_method[name] = labels
        if out.lower_bound is not None:
            bound = float(out.lower_bound)
            if row.get("lower_bound") is None or bound > row["lower_bound"]:
                row.update(lower_bound=bound, lower_bound_il=_il(bound, self.total_ss))
            if self.best_bound is None or bound > self.best_bound:
                self.best_bound, self.bound_from = bound, name
        if value < self.best_sse:
            self.best_labels, self.best_sse, self.winner = labels, value, name
            if self.lane is not None:
                self.lane.offer(labels)
        return labels

    def start_beside(self, method, deadline, **extra) -> Lane:
        """Member ``method`` in a second thread from the start, e.g. icsm from another member's
        partition (``init=SECOND_START``); the caller joins it."""
        return Lane(
            self.X, self.k, self.seed, deadline, self.params(method, **extra), method=method
        )

    def start_lane(self, deadline) -> None:
        """Column generation beside the sequence, with the whole budget as it runs alone."""
        self.lane = Lane(self.X, self.k, self.seed, deadline, self.first_params("colgen"))
        if self.best_labels is not None:
            self.lane.offer(self.best_labels)

    def lane_offers(self):
        """The callable ICSM's restarts ask between restarts (its ``offers``): column
        generation's newest best partition, or its final one once the lane has ended, when it
        is new and within POLISH_WINDOW of the best so far."""

        def offers() -> list:
            lane = self.lane
            if lane.thread.is_alive():
                labels = lane.colgen_best
            else:
                labels = lane.out.labels if lane.out is not None else None
            if labels is None or labels is self.polished_last:
                return []
            self.polished_last = labels
            if sse(self.X, labels) > self.best_sse * (1.0 + POLISH_WINDOW):
                return []
            self.polished += 1
            return [labels]

        return offers

    def row(self, name):
        return next((r for r in self.rows if r["method"] == name and r.get("status") == "ok"), None)

    def others(self, but):
        """The other members' partitions, best first."""
        rows = sorted(
            (r for r in self.rows if r.get("status") == "ok" and r["method"] not in but),
            key=lambda r: r["sse"],
        )
        return [r["method"] for r in rows]

    def proven_optimal(self) -> bool:
        return self.best_bound is not None and self.best_sse - self.best_bound <= 1e-9 * max(
            self.best_sse, 1e-300
        )
