"""microagg.deadline: one Deadline per call, shared by one rule among strata, blocks and members."""

from __future__ import annotations

import numpy as np
import pandas as pd

import microagg
from microagg import methods
from microagg.deadline import Deadline


def test_deadline_share_rule():
    parent = Deadline(10.0)
    child = parent.share(1, 4)
    assert 2.0 <= child.remaining() <= 2.5
    assert parent.share(5, 1).end <= parent.end  # never after the parent
    assert not Deadline(None).share(1, 2).bounded
    assert Deadline(0).expired()


def test_deadline_stop():
    parent = Deadline(100.0)
    child = parent.share(1, 2)
    assert parent.stop()  # ended early
    assert parent.expired() and not child.expired()  # a child keeps its own end
    assert not parent.stop() and not Deadline(0).stop()  # already over: nothing ended early
    later = Deadline(1.0)
    later.extend(100.0)
    assert later.remaining() > 100.0
    unbounded = Deadline(None)
    unbounded.extend(5.0)
    assert not unbounded.bounded
    assert unbounded.stop()
    assert unbounded.bounded and unbounded.expired()


def test_strata_share_the_whole_budget(spy_method):
    df = pd.DataFrame({"x": np.arange(60.0), "s": np.repeat(["a", "b", "c"], [10, 20, 30])})
    microagg.microaggregate(df, k=2, method="trial_spy", columns=["x"], strata="s", time_limit=30)
    assert [c["n"] for c in spy_method] == [10, 20, 30]
    # each stratum gets its records' share of what is left (time unused before flows on): at most
    # 30·10/60, 30·20/50, 30·30/30 seconds, and the last one everything that is left
    left = 60
    for call in spy_method:
        assert call["remaining"] <= 30 * call["n"] / left + 1e-6
        left -= call["n"]
    assert spy_method[-1]["remaining"] >= 30 - 5.0


def test_partitioned_blocks_share_the_whole_budget(spy_method):
    X = np.random.default_rng(0).normal(size=(400, 2))
    microagg.microaggregate(
        X, k=2, method="trial_spy", block_size=100, scheduler="synchronous", time_limit=20
    )
    assert sum(c["n"] for c in spy_method) == 400
    # one worker: each block gets its records' share of what is left when it starts
    left = 400
    for call in spy_method:
        assert call["remaining"] <= 20 * call["n"] / left + 1e-6
        left -= call["n"]


def test_auto_members_share_the_budget():
    X = np.random.default_rng(1).normal(size=(60, 3))
    res = microagg.microaggregate(
        X,
        k=3,
        method="auto",
        time_limit=4,
        portfolio=["mdav", "icsm"],
        member_params={"icsm": {"restarts": 10**6}},
    )
    icsm = next(r for r in res.extras["portfolio"] if r["method"] == "icsm")
    assert icsm["status"] == "ok" and res.extras["budget_seconds"] <= 4


def test_a_cap_is_bounded_but_not_a_budget_to_fill_and_its_children_keep_it():
    """A method's default_work (auto: a work budget sized from the input) caps a call without a
    time limit or work budget; auto does not start work that only fills a budget for it (improve),
    as without the cap (no method name in the pipeline: the registry declares the budget)."""
    import pickle

    from microagg.deadline import UNITS_PER_SECOND
    from microagg.methods.auto import DEFAULT_BUDGET, DEFAULT_PASSES

    cap = Deadline(60, cap=True)
    assert cap.bounded and cap.cap and cap.share(1, 2).cap
    assert pickle.loads(pickle.dumps(cap)).cap and not Deadline(None, cap=True).cap
    work_cap = Deadline(work=100, cap=True)
    assert work_cap.limited and not work_cap.bounded and work_cap.cap and work_cap.share(1, 2).cap
    auto_work = methods.get("auto").default_work
    assert methods.get("mdav").default_work is None
    assert auto_work(1000, 5, 3) == DEFAULT_PASSES * 1000  # small data: passes over the records
    assert (
        auto_work(10**7, 5, 3) == DEFAULT_BUDGET * UNITS_PER_SECOND
    )  # large data: the reference seconds


def test_work_is_shared_by_the_time_rule_and_charged_up_the_family():
    """A work budget: children get their weight's part of what is left, charges count in every
    parent, a child expires on its own budget; ``work_fraction`` gives a fixed part of the whole
    (blocks side by side); a time limit that ends a step marks the family as cut."""
    import pickle

    parent = Deadline(work=100)
    assert parent.limited and not parent.bounded and parent.remaining() == float("inf")
    child = parent.share(1, 4)
    assert child.work == 25
    child.charge(25)
    assert child.expired() and not parent.expired() and parent.spent == 25
    assert parent.share(1, 1).work == 75 and parent.share(1, 1, work_fraction=0.5).work == 50
    parent.charge(75)
    assert parent.expired() and not parent.time_cut  # ended by work: reproducible
    assert pickle.loads(pickle.dumps(Deadline(work=10))).work == 10
    clock = Deadline(0.0, work=100)
    kid = clock.share(1, 2)
    assert kid.expired() and clock.time_cut and kid.time_cut
    stopped = Deadline(100.0)
    stopped.stop()
    assert stopped.expired() and not stopped.time_cut  # ended on purpose


def test_a_work_budget_gives_the_same_labels_whatever_the_clock_says(monkeypatch):
    """Bounded by work alone, anytime methods stop at the same step however slow the machine: the
    monotonic clock is made to race (each reading a minute later) and the labels do not change."""
    import itertools
    import time as time_module

    X = np.random.default_rng(5).normal(size=(300, 3))
    work = 20 * len(X)
    quiet = {
        m: microagg.microaggregate(X, k=3, method=m, seed=2, work=work, audit=False)
        for m in ("icsm", "lsearch", "auto", "mf-tsp")
    }
    ticks = itertools.count()
    real = time_module.monotonic
    monkeypatch.setattr(time_module, "monotonic", lambda: real() + 60.0 * next(ticks))
    for m, res in quiet.items():
        again = microagg.microaggregate(X, k=3, method=m, seed=2, work=work, audit=False)
        assert np.array_equal(again.labels, res.labels), m
        assert not again.time_cut


def test_a_time_limit_that_cuts_the_run_says_so():
    X = np.random.default_rng(6).normal(size=(2000, 4))
    res = microagg.microaggregate(
        X, k=3, method="icsm", seed=0, time_limit=1e-4, audit=False, restarts=10**6
    )
    assert res.time_cut and "not reproducible" in res.summary()
    assert "stopped by the time limit: not reproducible" in res.audit.warnings


def test_a_limit_beyond_any_run_is_no_limit():
    """issue 57: ``--time-limit 1e300`` ran auto's improve forever where ``inf`` ends; the docs
    say both mean no limit."""
    from microagg.deadline import BEYOND_ANY_RUN
    from microagg.options.run_options import option

    param = option("time_limit")
    for beyond in (BEYOND_ANY_RUN, 1e300, float("inf")):
        assert not Deadline(beyond).bounded
        assert param.validate(beyond, None) is None
        assert param.parse(repr(beyond), None) is None
    below = BEYOND_ANY_RUN / 2
    assert Deadline(below).bounded and param.validate(below, None) == below


def test_auto_under_1e300_is_auto_without_a_limit():
    df = microagg.datasets.load("census").head(40)
    runs = [
        microagg.microaggregate(df, k=3, method="auto", time_limit=limit, audit=False)
        for limit in (float("inf"), 1e300)
    ]
    assert np.array_equal(runs[0].labels, runs[1].labels)
