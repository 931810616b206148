"""auto: run a portfolio of registered methods within a time budget and keep the best partition.

The data-oriented paper (Domingo-Ferrer & Mateo-Sanz 2002, §6) finds that no single
microaggregation method is best on every data set and recommends trying several and keeping
the one with the lowest information loss; ``auto`` does that within a time budget.

Its steps read as the portfolio runs: ``_plan`` (members, budget, whether to improve and use a
second core), ``_run_members``, the improving steps (``_search_from_the_others``,
``_colgen_from_the_best``, ``_icsm_restarts``), ``_join_beside`` and ``_best``. How a member is
run and recorded, and the second thread, are in ``methods.auto_members``.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numpy as np

from ..deadline import Deadline, in_command_thread
from ..declarations import Param
from ..errors import ParameterError, RunWarning
from ..labels import InvalidPartitionError, group_sizes, relabel
from ..progress import part, silent
from . import MethodOutput, get, names, register
from .auto_members import LOCAL_SEARCHES, SECOND_START, Lane, Portfolio
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

#: icsm compares every pair of groups (O(n²) per pass); from this many records on the default
#: portfolio uses lsearch, the same exact moves between neighbouring groups only (O(n·K) per sweep)
LSEARCH_MIN_N = 20_000
#: For one quasi-identifier the optimal univariate partition (Hansen & Mukherjee) is exact.
DEFAULT_UNIVARIATE = ("univariate-optimal",)
#: Without a time limit or a work budget from the caller, auto's cap is a work budget (the same
#: result at any load, ``default_work``): DEFAULT_PASSES passes over the records, at most what the
#: reference machine does in DEFAULT_BUDGET seconds (``deadline.work_budget``).
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
#: ICSM restarts: more than any budget allows, the deadline stops them
MANY_RESTARTS = 10**7


def _cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


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
    """A list of distinct registered method names (or a comma-separated string), none of them
    auto or per-variable; checked before any data work."""
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
            raise ValueError(
                f"cannot contain {m!r}: it groups each variable on its own (not k-anonymous), "
                "so its IL is not comparable"
            )
    return members


def _check_together(values: dict) -> dict:
    """member_params: {method: {parameter: value}}, each validated against that method's
    declarations."""
    mp = values["member_params"]
    if mp is None:
        return values
    if not isinstance(mp, dict) or any(not isinstance(v, dict) for v in mp.values()):
        raise ValueError("member_params must be a mapping {method: {parameter: value}}")
    if values["portfolio"] is not None:
        stray = sorted(set(mp) - set(values["portfolio"]))
        if stray:
            raise ValueError(
                f"member_params names method(s) not in the portfolio: {', '.join(stray)}"
            )
    # validated, but only the parameters given: the others keep auto's choices (e.g. icsm's starts)
    values["member_params"] = {
        m: {key: v for key, v in get(m).validate(p).items() if key in p} for m, p in mp.items()
    }
    return values


def _check_init(init):
    """A partition (labels); a method's name belongs in the portfolio."""
    if isinstance(init, str):
        raise ValueError(
            f"auto continues from a partition (labels), not a method ({init!r}): "
            "name methods in portfolio="
        )
    return check_start(init, "auto")


def _check_input(values, n, d, k):
    """Against the data, before any method starts: univariate members need one column."""
    if d != 1:
        for m in values["portfolio"] or ():
            if not get(m).multivariate:
                raise ParameterError(
                    f"auto portfolio cannot contain the univariate method {m!r}: "
                    f"the data have {d} quasi-identifier columns"
                )


@register(
    "auto",
    family="portfolio",
    paper=(
        "Domingo-Ferrer & Mateo-Sanz 2002 (data-oriented paper), §6: try several methods, "
        "keep the best"
    ),
    complexity=(
        "the sum of its members' costs, bounded by the time budget; O(n·d) memory beyond "
        "the members'"
    ),
    variable_size=True,
    params=(
        Param(
            "portfolio",
            "object",
            None,
            "member methods in run order, a list or comma-separated names (None: icsm (lsearch "
            "from 20,000 records), mdav, vmdav, mdav-mhm, tsp-mhm, kward, md (n <= 2000); "
            "univariate-optimal for one column)",
            nullable=True,
            check=_check_portfolio,
        ),
        Param(
            "member_params",
            "object",
            None,
            "parameters per member, {method: {parameter: value}}",
            nullable=True,
        ),
        Param(
            "improve",
            "bool",
            None,
            "with the time left after the members, keep improving the best partition (the local "
            "search from the other members' partitions, colgen warm-started from the best when "
            "n <= 5000, ICSM restarts) until the time limit (None: with the default portfolio and "
            "a time limit given by the caller)",
            nullable=True,
        ),
        Param(
            "parallel",
            "bool",
            None,
            "run column generation in a second thread beside the other members, with the whole "
            "budget, instead of after them (None: when improving with column generation, the "
            "process may use two cores or more and auto runs in the main thread or the command "
            "line's)",
            nullable=True,
        ),
        Param(
            "init",
            "object",
            None,
            "a partition to continue improving (labels, one group id per record, e.g. a committed "
            "one): the local search and column generation start from it, and auto returns "
            "nothing worse",
            nullable=True,
            check=_check_init,
        ),
    ),
    check_together=_check_together,
    check_input=_check_input,
    default_work=default_work,
)
def auto(X, k, *, seed, deadline, progress, portfolio, member_params, improve, parallel, init):
    """Portfolio: run several registered methods within the time budget and keep the lowest-SSE
    partition.

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
    COLGEN_SHARE_SMALL_K or _LARGE_K of what is left (its lower bound is kept, and a proven
    optimum ends the run); ICSM restarts from the best partition (perturbation, §5.3 of the
    ICSM paper) get the rest.
    Without a time limit the budget is 60 s and only the first of these steps runs.
    ``parallel`` (default: with two cores or more, in the main thread or the thread that runs a
    command line command, ``deadline.in_command_thread``): column generation runs
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
    plan = _plan(X, k, deadline, portfolio, improve, parallel)
    state = Portfolio(X, k, seed, member_params or {})
    if init is not None:
        _start_from(state, init)
    helper = None  # icsm from SECOND_START's partition beside the sequence, at small budgets
    try:
        helper = _start_beside(state, plan)
        _run_members(state, plan, progress)
        if state.best_labels is None:
            raise InvalidPartitionError(
                "auto: no member of the portfolio returned a valid partition"
            )
        _search_from_the_others(state, plan, progress)
        if plan.improve:
            _colgen_from_the_best(state, plan, progress)
            _icsm_restarts(state, plan, progress)
        _join_beside(state, helper, progress)
    except BaseException:
        # interrupted, or no valid partition: the other thread stops at its next round
        if state.lane is not None:
            state.lane.cancel()
        raise
    return _best(state, plan)


# ----------------------------------------------------------------------------- auto's steps


@dataclass
class _Plan:
    """What auto decides before any member runs."""

    members: list  # in run order
    improve: bool  # the improving steps after the members
    parallel: bool  # a second thread beside the sequence
    deadline: Deadline  # the caller's, or auto's work cap (default_work)
    budget: float  # seconds (or work) left at the start
    use_colgen: bool  # column generation improves the best partition

    @property
    def lane_wanted(self) -> bool:
        """Column generation in a second thread, beside the sequence."""
        return self.use_colgen and self.parallel

    @property
    def search(self) -> str | None:
        """The portfolio's local search, the one that continues from the other members."""
        return next((m for m in self.members if m in LOCAL_SEARCHES), None)

    @property
    def steps(self) -> int:
        return len(self.members) + (2 if self.improve else 0)


def _plan(X, k, deadline, portfolio, improve, parallel) -> _Plan:
    """The members, the budget (without a time limit or work budget from the caller, auto's cap
    is a work budget, ``default_work``), and whether to improve and run a second thread."""
    n, d = X.shape
    default = portfolio is None
    members = _default_portfolio(n, d) if default else portfolio
    for m in members:
        if not get(m).multivariate and d != 1:
            raise ParameterError(
                f"auto portfolio cannot contain the univariate method {m!r}: "
                f"the data have {d} quasi-identifier columns"
            )
    if improve is None:
        # a cap (no time limit nor work budget from the caller) is not a budget to fill
        improve = default and deadline.limited and not deadline.cap and d > 1
    if not deadline.limited:
        deadline = Deadline(work=default_work(n, d, k), cap=True)
    budget = deadline.remaining()
    if deadline.work_bounded:
        # exchanges between threads happen at times, not at work: one after another
        parallel = False
    use_colgen = improve and n <= COLGEN_MAX_N and "colgen" in names() and "colgen" not in members
    if parallel is None:
        parallel = _cores() >= 2 and in_command_thread()
    return _Plan(members, improve, parallel, deadline, budget, use_colgen)


def _start_from(state: Portfolio, init) -> None:
    """The caller's partition is the first answer (if valid): auto returns nothing worse."""
    n, k = state.X.shape[0], state.k
    check_lengths([init], n, "auto")
    state.start = np.asarray(init, dtype=np.int64)
    small = int((group_sizes(relabel(state.start)) < k).sum())
    if small:  # the local search makes it a partition; column generation does not get it
        warnings.warn(
            f"auto: the given partition (init) has {small} group(s) with fewer than k = {k} "
            "records: the local search starts from it and repairs them",
            RunWarning,
            stacklevel=3,
        )
        state.rows.append(
            {
                "method": "init",
                "status": f"{small} group(s) under k: repaired by the local search",
                "seconds": 0.0,
            }
        )
    else:
        state.record("init", MethodOutput(state.start), 0.0)


def _start_beside(state: Portfolio, plan: _Plan) -> Lane | None:
    """The second core's work from the start: column generation at k <= COLGEN_SMALL_K with a
    budget of LANE_EARLY_BUDGET or more (else it starts once the first member has run); below
    that budget, icsm from SECOND_START's partition (returned, to be joined)."""
    if plan.lane_wanted and state.k <= COLGEN_SMALL_K and plan.budget >= LANE_EARLY_BUDGET:
        state.start_lane(plan.deadline)
    elif (
        plan.improve
        and plan.parallel
        and plan.budget < LANE_EARLY_BUDGET
        and plan.members[0] == "icsm"
        and SECOND_START in names()
        and "init" not in state.params("icsm")
    ):
        return state.start_beside("icsm", plan.deadline, init=SECOND_START)
    return None


def _run_members(state: Portfolio, plan: _Plan, progress) -> None:
    """The members in order, each with its weight's share of the budget left (a local search
    first: the whole budget), skipping those that could not stop within it."""
    deadline = plan.deadline
    weights = [MEMBER_WEIGHTS.get(m, 1.0) for m in plan.members]
    for i, name in enumerate(plan.members):
        work = state.least_work(name) if deadline.work_bounded else None
        skipped = _why_skipped(state, name, deadline, work)
        if skipped:
            state.rows.append({"method": name, "status": skipped})
            continue
        # a local search first gets the whole budget, as it would alone; it stops when converged
        share = (
            deadline
            if i == 0 and name in LOCAL_SEARCHES
            else deadline.share(weights[i], sum(weights[i:]))
        )
        report = part(progress, i / plan.steps, (i + 1) / plan.steps, prefix="auto: ")
        report(name, 0.0, f"best so far: {state.winner or '-'}")
        state.run(name, share, report, **_member_params(state, i, name))
        if work is not None:  # a constructive member's modelled work (it does not count its own)
            deadline.charge(work)
        if plan.lane_wanted and state.lane is None and not deadline.expired():
            state.start_lane(deadline)


def _why_skipped(state: Portfolio, name: str, deadline: Deadline, work: float | None) -> str | None:
    """Why member ``name`` is not run (once there is a partition to return): the budget is spent,
    or its least time or work (the cost model, MEMBER_COST) exceeds what is left."""
    if state.best_labels is None:
        return None  # the first member always runs
    if deadline.expired():
        return "skipped (budget spent)"
    cost = state.least_seconds(name)
    if cost is not None and cost > deadline.remaining():  # it could not stop in time
        return f"skipped (needs about {cost:.1f} s, {deadline.remaining():.1f} s left)"
    if work is not None and work > deadline.work_left():
        return f"skipped (needs about {work:,.0f} work units, {deadline.work_left():,.0f} left)"
    return None


def _member_params(state: Portfolio, i: int, name: str) -> dict:
    """Member ``name``'s parameters as the ``i``-th member: a later local search starts from
    MDAV's partition, as it does alone, and from the best so far."""
    params = state.first_params(name) if i == 0 or name == "colgen" else state.params(name)
    if name in LOCAL_SEARCHES and i > 0 and "init" not in params and state.winner is not None:
        starts = (
            [state.by_method["mdav"]]
            if "mdav" in state.by_method and state.winner != "mdav"
            else []
        )
        params["init"] = starts + [state.best_labels] if name == "icsm" else state.best_labels
    return params


def _search_from_the_others(state: Portfolio, plan: _Plan, progress) -> None:
    """The local search continues from the other members' partitions, best first (different
    starts end in different local optima)."""
    search, deadline = plan.search, plan.deadline
    search_row = state.row(search) if search else None
    others = state.others(but=(search, "mdav", "init")) if search_row else []
    if not others or deadline.expired():
        return
    t = deadline.share(CONTINUE_SHARE) if plan.improve else deadline.share(1, 1)
    progress(
        f"auto: {search}", len(plan.members) / plan.steps, f"continuing from {', '.join(others)}"
    )
    starts = [state.by_method[m] for m in others]
    init = starts if search == "icsm" else starts[0]
    state.run(search, t, progress=silent, row=search_row, **state.params(search, init=init))
    search_row["continued_from"] = others


def _colgen_from_the_best(state: Portfolio, plan: _Plan, progress) -> None:
    """Column generation warm-started from the best partition and three more of the members'
    (unless it runs beside the sequence), with its share of the time left."""
    deadline, k = plan.deadline, state.k
    if (
        not plan.use_colgen
        or state.lane is not None
        or deadline.expired()
        or state.proven_optimal()
    ):
        return
    t = deadline.share(COLGEN_SHARE_SMALL_K if k <= COLGEN_SMALL_K else COLGEN_SHARE_LARGE_K)
    report = part(progress, (len(plan.members) + 1) / plan.steps, 1.0, prefix="auto: ")
    warm = [state.best_labels] + [state.by_method[m] for m in state.others(but=(state.winner,))[:3]]
    init = warm + list(state.params("colgen").get("init", []))
    state.run("colgen", t, report, row=state.row("colgen"), **state.params("colgen", init=init))


def _icsm_restarts(state: Portfolio, plan: _Plan, progress) -> None:
    """ICSM restarts from the best partition (perturbation, Mortazavi & Jalili 2015 §5.3) until
    the time limit, polishing column generation's partitions between restarts when it runs
    beside; they stop once column generation has proved its partition optimal."""
    if plan.search != "icsm" or plan.deadline.expired() or state.proven_optimal():
        return
    progress("auto: icsm", None, "restarts from the best partition")
    params = state.params(
        "icsm", init=state.best_labels, restarts=MANY_RESTARTS, restart_from="best"
    )
    restarts = plan.deadline.share(1, 1)
    if state.lane is not None:  # polishing column generation's partitions between restarts
        params["offers"] = state.lane_offers()
        state.lane.stop_when_proven(restarts)  # small inputs: colgen proves optimality in ms
    state.run("icsm", restarts, silent, row=state.row("icsm"), **params)
    row = state.row("icsm")
    if state.polished and row is not None:
        row["polished_colgen"] = state.polished
    if state.lane is not None and state.lane.stopped_early and row is not None:
        row["restarts_stopped"] = "column generation proved its partition optimal"


def _join_beside(state: Portfolio, helper: Lane | None, progress) -> None:
    """Wait for the second thread's work and record its result."""
    if helper is not None:
        helper.join(state)
    if state.lane is not None and not state.lane.joined:
        progress("auto: colgen", None, "waiting for column generation")
        state.lane.join(state)


def _best(state: Portfolio, plan: _Plan) -> MethodOutput:
    """The lowest-SSE valid partition, the largest proven lower bound, and every member's row."""
    extras = {"winner": state.winner, "portfolio": state.rows, "budget_seconds": plan.budget}
    if plan.deadline.work_bounded:
        extras["budget_work"] = plan.deadline.work
    if state.bound_from is not None:
        extras["lower_bound_from"] = state.bound_from
    return MethodOutput(state.best_labels, lower_bound=state.best_bound, extras=extras)
