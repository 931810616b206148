"""microagg.clock: one Deadline per call, shared by one rule among strata, blocks and members."""

from __future__ import annotations

import numpy as np
import pandas as pd

import microagg
from microagg import methods
from microagg.clock import Deadline


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
    microagg.microaggregate(df, k=2, method="_spy", columns=["x"], strata="s", time_limit=30)
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
    microagg.microaggregate(X, k=2, method="_spy", block_size=100, scheduler="synchronous", time_limit=20)
    assert sum(c["n"] for c in spy_method) == 400
    # one worker: each block gets its records' share of what is left when it starts
    left = 400
    for call in spy_method:
        assert call["remaining"] <= 20 * call["n"] / left + 1e-6
        left -= call["n"]


def test_auto_members_share_the_budget():
    X = np.random.default_rng(1).normal(size=(60, 3))
    res = microagg.microaggregate(X, k=3, method="auto", time_limit=4, portfolio=["mdav", "icsm"],
                                  member_params={"icsm": {"restarts": 10**6}})
    icsm = next(r for r in res.extras["portfolio"] if r["method"] == "icsm")
    assert icsm["status"] == "ok" and res.extras["budget_seconds"] <= 4


def test_a_cap_is_bounded_but_not_a_budget_to_fill_and_its_children_keep_it():
    """A method's default_budget (auto: 60 s) caps a call without a time limit; auto does not start
    work that only fills a budget for it (improve), as without the cap (no method name in the
    pipeline: the registry declares the budget)."""
    import pickle

    cap = Deadline(60, cap=True)
    assert cap.bounded and cap.cap and cap.share(1, 2).cap
    assert pickle.loads(pickle.dumps(cap)).cap and not Deadline(None, cap=True).cap
    assert methods.get("auto").default_budget == 60.0 and methods.get("mdav").default_budget is None
