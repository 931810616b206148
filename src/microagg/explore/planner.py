"""How an exploration spends its one time budget (one ``Deadline``): cheap runs first, by
measured cost.

* cost: above PROBE_SIZES[-1] records every method is first timed on two seeded subsamples
  (``probe_sizes``: n/20 records, 1,600 to 20,000, and a quarter of that; at the smallest k),
  which gives its cost at n by the measured growth exponent; a method that
  cannot stop at a deadline (``interruptible=False``) is run only when its predicted cost fits
  in what is left, and above SCALABLE_N records a method whose cost grows as n^SCALABLE_EXPONENT
  or faster is left out ("not scalable", with its exponent). Below, each method's smallest-k run
  goes first and its seconds order the others.
* an anytime method gets a work budget (``run_work``: the same for every run, sized from the
  records, the budget and the grid's size alone), so that each run done is reproducible at any
  load; what is left of the budget is only its safety cap (a run it cuts is marked);
* runs are planned within 90 % of the budget (``SLACK``), again after every run: the next run is
  the first that fits by its expected cost (its method's last run, or the probes' prediction)
  and its audit's (the first audit's one-off cost, which fills the cache of the original's
  figures, is not expected of the others), so no run that fits is skipped; the slack absorbs the
  last run's overrun (a mis-predicted run that cannot stop, an anytime method's start, an
  audit): ``benchmarks/explore_budget.py`` measures the overshoot. As in
  ``microaggregate``, loading the methods' compiled kernels (compiling them on a first run after
  an install) is outside the budget.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

from ..errors import InputError
from .runs import run_one

#: subsample sizes the methods are timed on before a large grid: n/20 records (at least 1,600, at
#: most 20,000) and a quarter of that; below PROBE_SIZES[-1] records nothing is probed
PROBE_SIZES = (400, 1600)
PROBE_MAX = 20_000
#: from this many records, a method whose measured cost grows as n^SCALABLE_EXPONENT or faster is
#: left out
SCALABLE_N = 20_000
SCALABLE_EXPONENT = 1.7


def probe_sizes(n: int) -> tuple[int, int]:
    """The two subsample sizes a method is timed on for data of n records: the larger, the closer
    the growth measured between them to the method's at scale (400 -> 1,600 records predicted
    mdav-mhm at 0.9 s for 22 s at 10^5; 1,250 -> 5,000 at 5.3 s; the first run of a method then
    corrects the prediction of its others: benchmarks/results/explore_budget.md)."""
    big = int(min(max(n // 20, PROBE_SIZES[1]), PROBE_MAX))
    return big // 4, big


def run_within_budget(runs: list, grid, payload, source, options: dict, deadline, progress) -> None:
    """Make the runs not done yet within the grid's budget: load their methods' compiled kernels
    (outside the budget, as in ``microaggregate``), time the methods on two subsamples when the
    data are large (``probe_costs``), then run the runs cheapest first (``run_grid``)."""
    from .. import methods as registry
    from ..progress import channel

    n = len(source.frame)
    to_run = [m for m in grid.methods if any(not r.done for r in runs if r.method == m)]
    for m in to_run:  # their kernels load outside the budget
        registry.load_kernels(m, (n, len(options["columns"])), progress, deadline)
    with channel(progress, grid.budget, "microagg explore") as report:
        costs = (
            probe_costs(to_run, source, options, grid.method_params, grid.ks[0], deadline, report)
            if n > PROBE_SIZES[-1]
            else {}
        )
        run_grid(
            runs,
            costs,
            payload,
            source,
            options,
            n,
            deadline,
            report,
            {},
            registry.get,
            grid.budget,
        )


def probe_costs(methods, source, options, method_params, k, deadline, report) -> dict:
    """method -> (seconds predicted at n, growth exponent) from timed runs on two seeded subsamples
    of ``probe_sizes(n)`` records (after one untimed run that loads the method's compiled
    kernels)."""
    from ..api import microaggregate
    from ..methods import get as method_info

    n = len(source.frame)
    sizes = probe_sizes(n)
    rng = np.random.default_rng(0)
    rows = [np.sort(rng.choice(n, m, replace=False)) for m in sizes]
    probe_options = {
        name: options[name]
        for name in (
            "columns",
            "categorical",
            "ordinal",
            "continuous",
            "distance",
            "aggregation",
            "aggregation_params",
            "standardize",
            "weights",
            "trim",
            "seed",
            "missing",
        )
        if name in options
    }
    out = {}
    for i, m in enumerate(methods):
        if deadline.expired():
            break
        report(
            "probing costs", i / max(len(methods), 1), f"{m} on {sizes[0]} and {sizes[1]} records"
        )
        info = method_info(m)
        limit = (
            None
            if not info.interruptible
            else max(min(2.0, deadline.remaining() / (4 * len(methods))), 0.05)
        )
        times = []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for j, sub in enumerate([rows[0], *rows]):
                    frame = source.frame.iloc[sub].reset_index(drop=True)
                    t0 = time.perf_counter()
                    microaggregate(
                        frame,
                        k=k,
                        method=m,
                        time_limit=limit,
                        audit=False,
                        **probe_options,
                        **method_params.get(m, {}),
                    )
                    if j:  # the first call loads the kernels
                        times.append(max(time.perf_counter() - t0, 1e-3))
        except (InputError, ValueError) as exc:
            out[m] = (None, None, str(exc).splitlines()[0], sizes)
            continue
        exponent = min(max(math.log(times[1] / times[0]) / math.log(sizes[1] / sizes[0]), 1.0), 3.0)
        out[m] = (times[1] * (n / sizes[1]) ** exponent, exponent, None, sizes)
    return out


def run_grid(
    runs, costs, payload, source, options, n, deadline, report, cache, method_info, budget
) -> None:
    """Run the pending runs, cheapest first, each audited; mark what cannot run."""
    pending = [r for r in runs if not r.done]
    for r in pending:
        cost = costs.get(r.method)
        if cost is not None:
            r.predicted = cost[0]
            if cost[2] is not None:
                r.status, r.note = "failed", cost[2]
            elif n >= SCALABLE_N and cost[1] >= SCALABLE_EXPONENT:
                r.status, r.note = (
                    "skipped",
                    (
                        f"not scalable: its cost grows as n^{cost[1]:.2f} (measured on "
                        f"{cost[3][0]} and {cost[3][1]} records)"
                    ),
                )
    pending = [r for r in pending if r.status == "pending"]
    # every anytime run gets the same work budget, sized from the data and the grid alone: its
    # result does not depend on the load, nor on which runs were done before it
    work = run_work(n, budget, len(runs))
    state = {"audits": [], "measured": {}, "budget": budget, "work": work}
    _plan_and_run(
        pending, runs, options, payload, source, deadline, report, cache, method_info, state
    )


#: the share of the budget kept free when planning runs: it absorbs the last run's overrun (a
#: mis-predicted run that cannot stop, an anytime method's start, an audit)
SLACK = 0.1
#: an anytime run's work budget: RUN_PASSES passes over the records, at most what the reference
#: machine does in its even share of the budget (``deadline.work_budget``)
RUN_PASSES = 200
#: before a second audit is measured, a later audit is expected to take this share of the first
#: (the first fills the cache of the original's figures: measured 9-13 s against 0.15 s after it)
LATER_AUDIT_SHARE = 0.1


def run_work(n: int, budget: float, runs: int) -> float:
    """The work budget of each anytime run of a grid of ``runs`` runs on n records within
    ``budget`` seconds (a function of these alone: the grid's runs are reproducible)."""
    from ..deadline import work_budget

    return work_budget(n, RUN_PASSES, (1.0 - SLACK) * budget / max(int(runs), 1))


def _audit_estimate(audits: list) -> float:
    """A later run's audit seconds: the least measured after the first (which has one-off costs)."""
    if len(audits) > 1:
        return min(audits[1:])
    return LATER_AUDIT_SHARE * audits[0] if audits else 0.0


def _expected(r, state) -> float | None:
    """A run's expected seconds: its method's own last run, else the probes' prediction."""
    known = [v for v in (r.predicted, state["measured"].get(r.method)) if v is not None]
    return (
        (state["measured"][r.method] if r.method in state["measured"] else max(known))
        if known
        else None
    )


def _plan_and_run(
    pending, runs, options, payload, source, deadline, report, cache, method_info, state
):
    """Plan again after every run: the next run is the first, in order (a method not run yet
    first, the non-interruptible ones before the others; then by expected seconds, k, id), whose
    expected cost and audit fit in what is left of the budget less the slack; a run whose cost is
    not known yet fits. Runs that never fit are skipped at the end, with the reason."""
    waiting = list(pending)

    def order(r):
        measured = r.method in state["measured"]
        expected = _expected(r, state)
        return (
            measured,
            method_info(r.method).interruptible if not measured else True,
            math.inf if expected is None and measured else (expected or 0.0),
            r.k,
            r.id,
        )

    while waiting:
        plan = deadline.remaining() - SLACK * state["budget"]
        if plan <= 0:
            break
        audit = _audit_estimate(state["audits"])
        chosen = next(
            (
                r
                for r in sorted(waiting, key=order)
                if _expected(r, state) is None or _expected(r, state) + audit <= plan
            ),
            None,
        )
        if chosen is None:
            break
        waiting.remove(chosen)
        r = chosen
        info = method_info(r.method)
        if info.interruptible:
            # its work budget bounds it; what is left of the budget is the safety cap (a run it cuts
            # is marked not reproducible)
            r.work, r.time_limit = state["work"], max(plan, 0.05)
        finished = sum(1 for p in runs if p.status != "pending")
        report("explore", finished / len(runs), f"run {r.id}: k = {r.k}, {r.method}")
        run_one(r, payload, source, options, cache)
        if r.done:
            if not state["audits"]:  # the first audit's one-off cost is the process's, as compiling
                deadline.extend((1.0 - LATER_AUDIT_SHARE) * (r.audit_seconds or 0.0))
            state["audits"].append(r.audit_seconds or 0.0)
            state["measured"][r.method] = r.seconds
    plan = deadline.remaining() - SLACK * state["budget"]
    audit = _audit_estimate(state["audits"])
    for r in waiting:
        expected = _expected(r, state)
        r.status = "skipped"
        r.note = (
            "the budget was spent"
            if plan <= 0 or expected is None
            else (
                f"expected {expected + audit:.1f} s with its audit, "
                f"{max(plan, 0):.1f} s left to plan"
            )
        )
