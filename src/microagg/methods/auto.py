"""auto: run a portfolio of registered methods within a time budget and keep the best partition.

The data-oriented paper (Domingo-Ferrer & Mateo-Sanz 2002, §6) finds that no single
microaggregation method is best on every data set and recommends trying several and keeping
the one with the lowest information loss; ``auto`` does that within a time budget.
"""

from __future__ import annotations

import collections
import os
import threading
import time
import warnings

import numpy as np

from ..deadline import Deadline, in_command_thread
from ..errors import InputError, ParameterError
from ..declarations import Param
from ..partition import InvalidPartitionError, check_partition, group_sizes, il_percent, relabel, sse, sst
from ..progress import part, silent
from . import BudgetError, MethodOutput, get, names, register, run
from .starts import check_lengths, check_start

#: The local search first, exactly as it runs alone (from MDAV's partition, with the whole budget:
#: it stops when it converges), so auto is never worse than icsm alone; then the constructive
#: heuristics (milliseconds to seconds), whose partitions the local search continues from. Only
#: the registered ones are used.
DEFAULT_PORTFOLIO = ("icsm", "mdav", "vmdav", "mdav-mhm", "tsp-mhm", "kward", "md")
#: md's exact farthest-pair search grows about cubically (0.5 s at n = 1080, 23 s at n = 4092 on
#: our machine) and cannot be stopped: it is left out of the default portfolio above this size.
MD_MAX_N = 2000
#: With the time left after the members (``improve``), column generation warm-started from the
#: best partition (its groups are the master's first columns and its first incumbent) up to this
#: many records: it proves a lower bound and, on the benchmark data, improves on ICSM's local
#: optima within seconds to minutes (benchmarks/results/time_to_quality.json).
COLGEN_MAX_N = 5000
#: The improving steps after the members: column generation warm-started from the best partition
#: gets its share of the time left, then ICSM restarts from the best partition (perturbation,
#: Mortazavi & Jalili 2015 §5.3) get the rest. Column generation's share depends on k: its pricing
#: grows fast with the group size (up to 2k − 1); measured on the 12 benchmark cells
#: (benchmarks/time_to_quality.py), it beats ICSM restarts within 10–60 s at k <= COLGEN_SMALL_K
#: and not above. Before them the local search continues from the other members' partitions with
#: CONTINUE_SHARE of the time left.
COLGEN_SHARE_SMALL_K, COLGEN_SHARE_LARGE_K, COLGEN_SMALL_K = 0.8, 0.4, 4
CONTINUE_SHARE = 0.1
#: Column generation beside the sequence (``parallel``) starts with it when k <= COLGEN_SMALL_K
#: (where colgen alone beats the local search within seconds) and the budget is at least this
#: many seconds; otherwise once the first member (the local search) has run, so that it runs
#: as it does alone. Measured in fresh processes at 1 s (census k = 5, eia k = 10): a lane
#: started with icsm slows it (IL 7.79–7.85 against 7.72 alone; 2.04–2.06 against 2.02), as both
#: load their compiled kernels at once.
LANE_EARLY_BUDGET = 2.0
#: Beside the lane, ICSM's restarts polish column generation's newest best partition between
#: restarts (their ``offers``): rounded and MIP solutions are rarely local optima. ICSM from
#: colgen-alone's final partition, measured: census k = 3, 10 s 4.7123 -> 4.6848 in 0.35 s;
#: tarragona k = 3, 3 s 14.591 -> 14.524; eia k = 3, 10 s 0.3529 -> 0.3503. The polished
#: partition goes back to colgen's final MIP. The lane keeps the whole budget (ending it 5 %
#: early to polish its final partition cost eia k = 4 at 60 s 0.48302 -> 0.48316, colgen's own
#: result at 57 s), so only the final partitions of runs that end early are polished. Polished:
#: the partitions within this relative SSE of the best so far.
POLISH_WINDOW = 0.02

#: Below LANE_EARLY_BUDGET seconds (no column generation beside the sequence), the second core
#: runs the local search from this member's partition, beside the local search from MDAV's.
SECOND_START = "tsp-mhm"

#: icsm compares every pair of groups (O(n²) per pass); from this many records on the default
#: portfolio uses lsearch, the same exact moves between neighbouring groups only (O(n·K) per sweep)
LSEARCH_MIN_N = 20_000
#: For one quasi-identifier the optimal univariate partition (Hansen & Mukherjee) is exact.
DEFAULT_UNIVARIATE = ("univariate-optimal",)
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
#: by themselves too (their own probes). Below COST_MIN_N records every member takes a second or less.
MEMBER_COST = {"mdav": (1.0, 0.0), "vmdav": (3.5, 0.0), "mdav-mhm": (3.5, 0.0), "tsp-mhm": (4.0, 0.3),
               "kward": (45.0, 0.8)}
COST_REF_N, COST_MIN_N = 30_000, 20_000
#: Under a work budget the same model in work units, deterministic: MDAV's work on n records is
#: MDAV_WORK_PER_RECORD · n (about 25 s for 10^6 records at 30 s limits, benchmarks/results/
#: time_limits.md, at clock.UNITS_PER_SECOND); a constructive member is charged its model's work
#: after it runs, and skipped when that is more than the work left.
MDAV_WORK_PER_RECORD = 4.0
#: Without a time limit or a work budget from the caller, auto's cap is a work budget (the same
#: result at any load, ``default_work``): DEFAULT_PASSES passes over the records, at most what the
#: reference machine does in DEFAULT_BUDGET seconds (``clock.work_budget``).
DEFAULT_BUDGET = 60.0
DEFAULT_PASSES = 200


def default_work(n: int, d: int, k: int) -> float:
    """auto's work cap on n × d data at k (a deterministic function of the input's size)."""
    from ..deadline import work_budget

    return work_budget(n, DEFAULT_PASSES, DEFAULT_BUDGET)

#: Weights of the members in the time rule (``Deadline.share``) when the local search is not
#: first (a portfolio given by the caller): the local search, which improves the best partition
#: for as long as it runs, gets most of the budget; tours and column generation (anytime too)
#: get more than the constructive heuristics. Unlisted members weigh 1.
MEMBER_WEIGHTS = {"icsm": 50.0, "lsearch": 50.0, "colgen": 10.0, "tsp-mhm": 1.0}
#: anytime local searches: first in the portfolio, one gets the whole budget (it stops when converged)
LOCAL_SEARCHES = ("icsm", "lsearch")
#: ICSM restarts: more than any budget allows, the deadline stops them
MANY_RESTARTS = 10**7


def _cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Cancelled(Exception):
    """Raised inside the column-generation thread to stop it."""


class _Lane:
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
        self.colgen_best = None  # column generation's best partition so far, for the sequence to polish
        self.deadline, self.joined = deadline, False
        self.out, self.error, self.seconds = None, None, 0.0
        self.when_proven = None  # called in this thread once colgen has proved its partition optimal
        self.stopped_early = False  # stop_when_proven ended its deadline before the deadline's own end
        self.thread = threading.Thread(target=self._run, args=(X, k, seed, deadline, params),
                                       name=f"microagg-auto-{method}", daemon=True)
        self.thread.start()

    def _run(self, X, k, seed, deadline, params):
        tic = time.perf_counter()
        if self.method == "colgen":
            params = dict(params, offers=self.take)
        try:
            self.out = run(self.method, X, k, seed=seed, deadline=deadline, progress=silent, **params)
        except BaseException as exc:  # handed to the caller's thread by join()
            self.error = exc
        self.seconds = time.perf_counter() - tic
        when_proven = self.when_proven
        if when_proven is not None and self.proven():
            when_proven()

    def proven(self) -> bool:
        """Has column generation ended with its partition proved optimal?"""
        return self.method == "colgen" and self.out is not None and bool(self.out.extras.get("colgen_proven_optimal"))

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
            elif state.record(self.method, self.out, self.seconds, row) is not None and row is not None:
                row["beside_from"] = SECOND_START
        elif self.error is not None:
            state.failed("colgen", self.error, self.seconds, None)
        else:
            state.record("colgen", self.out, self.seconds)
            state.row("colgen")["lane"] = "parallel"


def _default_portfolio(n: int, d: int) -> list[str]:
    from ..kernels.jit import planned_records

    n = planned_records(n)  # a warm-up (methods.load_kernels) picks the members of the real run
    if d == 1:
        wanted = DEFAULT_UNIVARIATE
    else:
        wanted = tuple(m for m in DEFAULT_PORTFOLIO if m != "md" or n <= MD_MAX_N)
        if n >= LSEARCH_MIN_N:
            wanted = tuple("lsearch" if m == "icsm" else m for m in wanted)
    known = set(names())
    return [m for m in wanted if m in known]


def _check_portfolio(portfolio):
    """A list of distinct registered method names (or a comma-separated string), none of them auto or
    per-variable; checked before any data work."""
    if isinstance(portfolio, str):
        portfolio = [p.strip() for p in portfolio.split(",") if p.strip()]
    if not isinstance(portfolio, (list, tuple)) or any(not isinstance(m, str) for m in portfolio):
        raise ValueError(f"must be a list of method names, got {portfolio!r}")
    members = list(portfolio)
    if not members:
        raise ValueError("is empty: name at least one method")
    if len(set(members)) != len(members):
        raise ValueError(f"names a method twice: {members!r}")
    for m in members:
        info = get(m)  # unknown name: ParameterError listing the known ones
        if m == "auto":
            raise ValueError("cannot contain auto itself")
        if info.per_variable:
            raise ValueError(f"cannot contain {m!r}: it groups each variable on its own (not k-anonymous), "
                             "so its IL is not comparable")
    return members


def _check_together(values: dict) -> dict:
    """member_params: {method: {parameter: value}}, each validated against that method's declarations."""
    mp = values["member_params"]
    if mp is None:
        return values
    if not isinstance(mp, dict) or any(not isinstance(v, dict) for v in mp.values()):
        raise ValueError("member_params must be a mapping {method: {parameter: value}}")
    if values["portfolio"] is not None:
        stray = sorted(set(mp) - set(values["portfolio"]))
        if stray:
            raise ValueError(f"member_params names method(s) not in the portfolio: {', '.join(stray)}")
    # validated, but only the parameters given: the others keep auto's choices (e.g. icsm's starts)
    values["member_params"] = {m: {key: v for key, v in get(m).validate(p).items() if key in p} for m, p in mp.items()}
    return values


def _check_init(init):
    """A partition (labels); a method's name belongs in the portfolio."""
    if isinstance(init, str):
        raise ValueError(f"auto continues from a partition (labels), not a method ({init!r}): "
                         "name methods in portfolio=")
    return check_start(init, "auto")


def _check_input(values, n, d, k):
    """Against the data, before any method starts: univariate members need one column."""
    if d != 1:
        for m in values["portfolio"] or ():
            if not get(m).multivariate:
                raise ParameterError(f"auto portfolio cannot contain the univariate method {m!r}: "
                                     f"the data have {d} quasi-identifier columns")


def _il(value: float, total_ss: float) -> float:
    return il_percent(value, total_ss)


class _Portfolio:
    """The state of one auto run: the members' rows and partitions, the best partition and bound."""

    def __init__(self, X, k, seed, member_params):
        self.X, self.k, self.seed, self.member_params = X, k, seed, member_params
        self.total_ss = sst(X)
        self.rows, self.by_method = [], {}
        self.best_labels, self.best_sse, self.winner = None, np.inf, None
        self.best_bound, self.bound_from = None, None
        self.lane: _Lane | None = None  # column generation beside the sequence, told of every new best
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
        tic = time.perf_counter()  # not share.elapsed(): a further search may get the whole deadline
        try:
            out = run(name, self.X, self.k, seed=self.seed, deadline=share, progress=progress, **params)
        except BudgetError as exc:  # it could not stop within its share: skipped, as the cost model does
            if self.best_labels is None:  # nothing to return yet: the portfolio cannot run in this budget
                raise
            if row is None:
                self.rows.append({"method": name, "status": f"skipped ({str(exc).split(': ', 1)[-1]})"})
            return None
        except InputError:  # the user's error (a bad member parameter, ...): report it
            raise
        except Exception as exc:  # a member's bug must not sink the portfolio: skip it, loudly
            return self.failed(name, exc, time.perf_counter() - tic, row)
        return self.record(name, out, time.perf_counter() - tic, row)

    def failed(self, name, exc, seconds, row):
        status = f"failed: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
        warnings.warn(f"auto: {name} {status}", RuntimeWarning, stacklevel=3)
        if row is None:
            self.rows.append({"method": name, "status": status, "seconds": seconds})
        return None

    def least_seconds(self, name) -> float | None:
        """The least time member ``name`` needs on X (MEMBER_COST, in units of MDAV's measured time),
        or None when no model applies (unlisted, small n, MDAV not timed yet)."""
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
        elif self.mdav_seconds is None and out.extras.get("init") == "mdav" and out.extras.get("init_seconds"):
            self.mdav_seconds = float(out.extras["init_seconds"])  # lsearch's start
        value = sse(self.X, labels)
        if row is None:
            row = {"method": name, "sse": value, "il": _il(value, self.total_ss), "seconds": seconds, "status": "ok"}
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

    def start_lane(self, deadline) -> None:
        """Column generation beside the sequence, with the whole budget as it runs alone."""
        self.lane = _Lane(self.X, self.k, self.seed, deadline, self.first_params("colgen"))
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
        rows = sorted((r for r in self.rows if r.get("status") == "ok" and r["method"] not in but),
                      key=lambda r: r["sse"])
        return [r["method"] for r in rows]

    def proven_optimal(self) -> bool:
        return self.best_bound is not None and self.best_sse - self.best_bound <= 1e-9 * max(self.best_sse, 1e-300)


@register(
    "auto",
    family="portfolio",
    paper="Domingo-Ferrer & Mateo-Sanz 2002 (data-oriented paper), §6: try several methods, keep the best",
    complexity="the sum of its members' costs, bounded by the time budget; O(n·d) memory beyond the members'",
    variable_size=True,
    params=(
        Param("portfolio", "object", None, "member methods in run order, a list or comma-separated names "
              "(None: icsm (lsearch from 20,000 records), mdav, vmdav, mdav-mhm, tsp-mhm, kward, md "
              "(n <= 2000); univariate-optimal for one column)", nullable=True, check=_check_portfolio),
        Param("member_params", "object", None, "parameters per member, {method: {parameter: value}}", nullable=True),
        Param("improve", "bool", None, "with the time left after the members, keep improving the best partition "
              "(the local search from the other members' partitions, colgen warm-started from the best when "
              "n <= 5000, ICSM restarts) until the time limit (None: with the default portfolio and a time "
              "limit given by the caller)", nullable=True),
        Param("parallel", "bool", None, "run column generation in a second thread beside the other members, "
              "with the whole budget, instead of after them (None: when improving with column generation, the "
              "process may use two cores or more and auto runs in the main thread or the command line's)",
              nullable=True),
        Param("init", "object", None, "a partition to continue improving (labels, one group id per record, "
              "e.g. a committed one): the local search and column generation start from it, and auto "
              "returns nothing worse", nullable=True, check=_check_init),
    ),
    check_together=_check_together,
    check_input=_check_input,
    default_work=default_work,
)
def auto(X, k, *, seed, deadline, progress, portfolio, member_params, improve, parallel, init):
    """Portfolio: run several registered methods within the time budget and keep the lowest-SSE partition.

    ``portfolio``: method names run in the given order. The default runs icsm first, exactly as
    icsm alone (from MDAV's partition, with the whole budget: it returns when it converges, and
    so auto is never worse than icsm alone with the same time limit), then mdav, vmdav,
    mdav-mhm, tsp-mhm, kward and md (only when n <= 2000: it cannot be stopped and grows fast);
    from 20,000 records on lsearch (the same moves between neighbouring groups, O(n·K) per
    sweep) replaces icsm (O(n²) per pass); for one quasi-identifier, univariate-optimal (exact).
    A portfolio given by the caller runs in its order, each member getting its weight's share of
    what is left, ``deadline.share(w_i, w_i + ... + w_m)`` (MEMBER_WEIGHTS, the local search
    most), unless its first member is a local search (which then gets the whole budget). Time a
    member leaves unused flows to the later ones; once the budget is spent the remaining members
    are skipped, but the first always runs, so there is always a valid partition.

    ``improve`` (default: with the default portfolio, when the caller gave a time limit): the
    time left is not wasted. The local search continues from the other members' partitions,
    best first (different starts end in different local optima); then, for n <= COLGEN_MAX_N,
    column generation warm-started from the best partition and the members' partitions gets
    COLGEN_SHARE_SMALL_K or _LARGE_K of what is left (its lower bound is kept, and a proven optimum ends the run);
    ICSM restarts from the best partition (perturbation, §5.3 of the ICSM paper) get the rest.
    Without a time limit the budget is 60 s and only the first of these steps runs.
    ``parallel`` (default: with two cores or more, in the main thread or the thread that runs a
    command line command, ``clock.in_command_thread``): column generation runs
    in a second thread, as it runs alone and with the whole budget (from the start at k <= 4
    and budgets of LANE_EARLY_BUDGET or more, else once icsm has run), and its final MIP also
    takes the sequence's best partitions (its ``offers``); the sequence's time left then all
    goes to the local search: ICSM restarts, which polish column generation's newest best
    partition between restarts (and the lane's final one if it ends before the time limit).
    So auto is as good as colgen alone too, where colgen after the members had a share of
    what was left (tarragona k = 3 at 3 s: about 1.2 s of 3), and better where a local search
    improves colgen's partitions. Below LANE_EARLY_BUDGET seconds (no lane), the second core
    runs icsm from SECOND_START's partition beside icsm from MDAV's.

    ``init`` (labels, e.g. a committed partition, CLI ``--init``): continue improving it. It is
    the first row (``init``) and so the answer if nothing beats it; the local search starts from
    it instead of MDAV's partition, and column generation takes its groups as first columns.

    ``member_params``: {method: {param: value}} passed to the members. Each member's labels are
    checked (check_partition) and the valid partition with the lowest SSE is returned, so auto
    is never worse than its best member; the largest proven lower bound of any member is kept.
    ``extras["portfolio"]`` lists {method, il, sse, seconds, status} for every member (a
    member's further searches are reported in its row) and ``extras["winner"]`` names the
    method whose run gave the returned partition.
    """
    n, d = X.shape
    default = portfolio is None
    members = _default_portfolio(n, d) if default else portfolio
    for m in members:
        if not get(m).multivariate and d != 1:
            raise ParameterError(f"auto portfolio cannot contain the univariate method {m!r}: "
                                 f"the data have {d} quasi-identifier columns")
    if improve is None:  # a cap (no time limit nor work budget from the caller) is not a budget to fill
        improve = default and deadline.limited and not deadline.cap and d > 1
    if not deadline.limited:
        deadline = Deadline(work=default_work(n, d, k), cap=True)
    budget = deadline.remaining()
    if deadline.work_bounded:  # exchanges between threads happen at times, not at work: one after another
        parallel = False
    state = _Portfolio(X, k, seed, member_params or {})
    if init is not None:
        check_lengths([init], n, "auto")
        # the caller's partition is the first answer (if valid): auto returns nothing worse
        state.start = np.asarray(init, dtype=np.int64)
        small = int((group_sizes(relabel(state.start)) < k).sum())
        if small:  # the local search makes it a partition; column generation does not get it
            warnings.warn(f"auto: the given partition (init) has {small} group(s) with fewer than k = {k} "
                          "records: the local search starts from it and repairs them", UserWarning, stacklevel=2)
            state.rows.append({"method": "init", "status": f"{small} group(s) under k: repaired by the local search",
                               "seconds": 0.0})
        else:
            state.record("init", MethodOutput(state.start), 0.0)
    use_colgen = improve and n <= COLGEN_MAX_N and "colgen" in names() and "colgen" not in members
    if parallel is None:
        parallel = _cores() >= 2 and in_command_thread()
    lane_wanted = use_colgen and parallel
    helper = None  # icsm from SECOND_START's partition beside the sequence, at small budgets
    try:
        if lane_wanted and k <= COLGEN_SMALL_K and budget >= LANE_EARLY_BUDGET:
            state.start_lane(deadline)
        elif (improve and parallel and budget < LANE_EARLY_BUDGET and members[0] == "icsm" and
              SECOND_START in names() and "init" not in state.params("icsm")):
            helper = _Lane(X, k, seed, deadline, state.params("icsm", init=SECOND_START), method="icsm")
        weights = [MEMBER_WEIGHTS.get(m, 1.0) for m in members]
        search = next((m for m in members if m in LOCAL_SEARCHES), None)
        steps = len(members) + (2 if improve else 0)
        for i, name in enumerate(members):
            if state.best_labels is not None and deadline.expired():
                state.rows.append({"method": name, "status": "skipped (budget spent)"})
                continue
            cost = state.least_seconds(name) if state.best_labels is not None else None
            if cost is not None and cost > deadline.remaining():  # it could not stop in time
                state.rows.append({"method": name, "status": f"skipped (needs about {cost:.1f} s, "
                                                             f"{deadline.remaining():.1f} s left)"})
                continue
            work = state.least_work(name) if deadline.work_bounded else None
            if work is not None and state.best_labels is not None and work > deadline.work_left():
                state.rows.append({"method": name, "status": f"skipped (needs about {work:,.0f} work units, "
                                                             f"{deadline.work_left():,.0f} left)"})
                continue
            # a local search first gets the whole budget, as it would alone; it stops when converged
            share = deadline if i == 0 and name in LOCAL_SEARCHES else deadline.share(weights[i], sum(weights[i:]))
            report = part(progress, i / steps, (i + 1) / steps, prefix="auto: ")
            report(name, 0.0, f"best so far: {state.winner or '-'}")
            params = state.first_params(name) if i == 0 or name == "colgen" else state.params(name)
            if name in LOCAL_SEARCHES and i > 0 and "init" not in params and state.winner is not None:
                # from MDAV's partition, as it starts alone, then from the best so far
                starts = [state.by_method["mdav"]] if "mdav" in state.by_method and state.winner != "mdav" else []
                params["init"] = starts + [state.best_labels] if name == "icsm" else state.best_labels
            state.run(name, share, report, **params)
            if work is not None:  # a constructive member's modelled work (it does not count its own)
                deadline.charge(work)
            if lane_wanted and state.lane is None and not deadline.expired():
                state.start_lane(deadline)
        if state.best_labels is None:
            raise InvalidPartitionError("auto: no member of the portfolio returned a valid partition")

        # the local search continues from the other members' partitions, best first
        search_row = state.row(search) if search else None
        others = state.others(but=(search, "mdav", "init")) if search_row else []
        if others and not deadline.expired():
            t = deadline.share(CONTINUE_SHARE) if improve else deadline.share(1, 1)
            progress(f"auto: {search}", len(members) / steps, f"continuing from {', '.join(others)}")
            starts = [state.by_method[m] for m in others]
            init = starts if search == "icsm" else starts[0]
            state.run(search, t, progress=silent, row=search_row, **state.params(search, init=init))
            search_row["continued_from"] = others
        if improve and use_colgen and state.lane is None and not deadline.expired() and not state.proven_optimal():
            t = deadline.share(COLGEN_SHARE_SMALL_K if k <= COLGEN_SMALL_K else COLGEN_SHARE_LARGE_K)
            report = part(progress, (len(members) + 1) / steps, 1.0, prefix="auto: ")
            warm = [state.best_labels] + [state.by_method[m] for m in state.others(but=(state.winner,))[:3]]
            init = warm + list(state.params("colgen").get("init", []))
            state.run("colgen", t, report, row=state.row("colgen"), **state.params("colgen", init=init))
        if improve and search == "icsm" and not deadline.expired() and not state.proven_optimal():
            progress("auto: icsm", None, "restarts from the best partition")
            params = state.params("icsm", init=state.best_labels, restarts=MANY_RESTARTS, restart_from="best")
            restarts = deadline.share(1, 1)
            if state.lane is not None:  # polishing column generation's partitions between restarts
                params["offers"] = state.lane_offers()
                state.lane.stop_when_proven(restarts)  # small inputs: colgen proves optimality in ms
            state.run("icsm", restarts, silent, row=state.row("icsm"), **params)
            if state.polished and state.row("icsm") is not None:
                state.row("icsm")["polished_colgen"] = state.polished
            if state.lane is not None and state.lane.stopped_early and state.row("icsm") is not None:
                state.row("icsm")["restarts_stopped"] = "column generation proved its partition optimal"
        if helper is not None:
            helper.join(state)
        if state.lane is not None and not state.lane.joined:
            progress("auto: colgen", None, "waiting for column generation")
            state.lane.join(state)
    except BaseException:  # interrupted, or no valid partition: the other thread stops at its next round
        if state.lane is not None:
            state.lane.cancel()
        raise
    extras = {"winner": state.winner, "portfolio": state.rows, "budget_seconds": budget}
    if deadline.work_bounded:
        extras["budget_work"] = deadline.work
    if state.bound_from is not None:
        extras["lower_bound_from"] = state.bound_from
    return MethodOutput(state.best_labels, lower_bound=state.best_bound, extras=extras)
