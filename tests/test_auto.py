"""The auto portfolio (methods/auto.py)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import brute_force_optimum, make_data, zscores
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg import labels as label_stats
from microagg import methods
from microagg.methods.auto import DEFAULT_PORTFOLIO


def test_auto_stops_its_restarts_once_column_generation_proves_optimality():
    X = np.random.default_rng(0).normal(size=(40, 3))
    res = microagg.microaggregate(X, k=3, method="auto", time_limit=20, parallel=True)
    icsm = next(r for r in res.extras["portfolio"] if r["method"] == "icsm")
    assert icsm["restarts_stopped"] == "column generation proved its partition optimal"
    assert res.lower_bound == pytest.approx(res.sse, rel=1e-9)


# members whose result does not depend on a time limit: rerunning them alone must give the same SSE
DETERMINISTIC = [
    m for m in ("mdav", "vmdav", "mdav-mhm", "md", "kward", "tsp-mhm") if m in methods.names()
]


@given(
    seed=st.integers(0, 2**31 - 1), n=st.integers(4, 90), d=st.integers(2, 5), k=st.integers(2, 4)
)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_auto_never_worse_than_its_best_member(seed, n, d, k):
    if n < k:
        return
    X = make_data(seed, n, d)
    Z = zscores(X)
    portfolio = DETERMINISTIC + ["icsm"]
    # a limit no member reaches on 90 records, however busy the machine: each runs as alone
    res = microagg.microaggregate(
        X, k=k, method="auto", seed=3, time_limit=600, portfolio=portfolio
    )
    rows = res.extras["portfolio"]
    assert [r["method"] for r in rows] == portfolio
    ok = [r for r in rows if r["status"] == "ok"]
    assert ok, rows
    best = min(r["sse"] for r in ok)
    assert res.sse <= best + 1e-9 * max(1.0, best)
    assert res.extras["winner"] == min(ok, key=lambda r: r["sse"])["method"]
    # each deterministic member run on its own gives the figure auto reports, never better than auto
    for name in DETERMINISTIC:
        alone = microagg.microaggregate(X, k=k, method=name, seed=3)
        row = next(r for r in rows if r["method"] == name)
        assert row["sse"] == pytest.approx(alone.sse, rel=1e-9, abs=1e-9)
        assert res.sse <= alone.sse + 1e-9 * max(1.0, alone.sse)
    label_stats.check_partition(res.labels, n, k)
    assert res.sse == pytest.approx(label_stats.sse(Z, res.labels), rel=1e-9, abs=1e-9)


def test_auto_default_portfolio_on_census_beats_mdav_and_reports_members():
    df = microagg.datasets.load("census")
    res = microagg.microaggregate(df, k=3, method="auto", time_limit=4)
    mdav = microagg.microaggregate(df, k=3, method="mdav")
    assert res.information_loss <= mdav.information_loss + 1e-9
    names = [r["method"] for r in res.extras["portfolio"]]
    default = [m for m in DEFAULT_PORTFOLIO if m in methods.names()]
    assert names[0] == "icsm" and names[: len(default)] == default
    assert set(names[len(default) :]) <= {"colgen"}  # warm-started with the time left (n <= 5000)
    ok = [r for r in res.extras["portfolio"] if r["status"] == "ok"]
    assert res.information_loss == pytest.approx(min(r["il"] for r in ok))
    assert res.extras["budget_seconds"] <= 4
    assert "auto: winner" in res.summary()


@given(
    seed=st.integers(0, 2**31 - 1), n=st.integers(12, 80), d=st.integers(2, 4), k=st.integers(2, 4)
)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_auto_is_never_worse_than_icsm_alone(seed, n, d, k):
    """The default portfolio runs icsm first exactly as it runs alone (from MDAV, the same seed;
    without a time limit it runs to convergence), then only keeps better partitions."""
    X = make_data(seed, n, d)
    alone = microagg.microaggregate(X, k=k, method="icsm", seed=5)
    res = microagg.microaggregate(X, k=k, method="auto", seed=5)
    first = res.extras["portfolio"][0]
    assert first["method"] == "icsm"
    assert res.sse <= alone.sse + 1e-9 * max(1.0, alone.sse)


def test_auto_improves_with_the_time_left_and_keeps_colgens_bound():
    """With a budget the default portfolio keeps improving: ICSM restarts and column
    generation warm-started from the best partition, whose proven bound auto reports (a work
    budget: the same steps at any load)."""
    X = make_data(7, 60, 3)
    plain = microagg.microaggregate(X, k=3, method="auto", seed=1, improve=False)
    res = microagg.microaggregate(X, k=3, method="auto", seed=1, work=20_000)
    assert res.sse <= plain.sse + 1e-9 * max(1.0, plain.sse)
    rows = {r["method"]: r for r in res.extras["portfolio"]}
    assert "colgen" in rows and rows["colgen"]["status"] == "ok"
    assert res.lower_bound is not None and res.lower_bound <= res.sse * (1 + 1e-9)
    assert res.extras["lower_bound_from"] == "colgen"
    assert "colgen" not in {r["method"] for r in plain.extras["portfolio"]}


@pytest.mark.parametrize("budget", [1.0, 3.0])
def test_auto_runs_column_generation_beside_the_sequence(budget):
    """parallel=True: colgen runs in a second thread (from the start at k <= 4 with 2 s or more,
    else once icsm has run, if time is left then: at 1 s it depends on the load), takes in the
    sequence's partitions, and its row says so; the result is the best row's, a valid partition,
    and no thread is left behind."""
    import threading

    from microagg.methods.auto import LANE_EARLY_BUDGET

    X = make_data(11, 90, 3)
    res = microagg.microaggregate(X, k=3, method="auto", seed=2, time_limit=budget, parallel=True)
    rows = res.extras["portfolio"]
    lane = [r for r in rows if r.get("lane") == "parallel"]
    assert len(lane) <= 1 and all(r["method"] == "colgen" and r["status"] == "ok" for r in lane)
    if budget >= LANE_EARLY_BUDGET:  # started with the sequence, whatever the load
        assert len(lane) == 1
    assert res.sse <= min(r["sse"] for r in rows if r["status"] == "ok") + 1e-9
    assert res.lower_bound is not None and res.lower_bound <= res.sse * (1 + 1e-9)
    label_stats.check_partition(res.labels, len(X), 3)
    assert not any(t.name == "microagg-auto-colgen" for t in threading.enumerate())
    seq = microagg.microaggregate(X, k=3, method="auto", seed=2, time_limit=budget, parallel=False)
    assert all("lane" not in r for r in seq.extras["portfolio"])


def test_auto_polishes_column_generations_partitions_beside_it():
    """parallel=True: the sequence's local search polishes colgen's best partitions (while it
    runs, and its final one), so auto's result is at least as good as the lane's own."""
    X = make_data(14, 500, 3)
    res = microagg.microaggregate(X, k=3, method="auto", seed=2, time_limit=4, parallel=True)
    rows = {r["method"]: r for r in res.extras["portfolio"]}
    assert rows["colgen"]["lane"] == "parallel"
    if res.gap is None or res.gap > 1e-7:  # a proven optimum needs no polishing
        assert rows["icsm"]["polished_colgen"] >= 1
    assert res.sse <= rows["colgen"]["sse"] * (1 + 1e-12)
    label_stats.check_partition(res.labels, len(X), 3)


def test_auto_runs_a_second_local_search_beside_at_small_budgets():
    """parallel=True below LANE_EARLY_BUDGET: icsm from SECOND_START's partition runs on the
    second core beside icsm from MDAV's; its result goes to icsm's row, and no thread is left."""
    import threading

    from microagg.methods.auto import SECOND_START

    X = make_data(16, 200, 3)
    res = microagg.microaggregate(X, k=4, method="auto", seed=2, time_limit=1, parallel=True)
    rows = {r["method"]: r for r in res.extras["portfolio"]}
    assert rows["icsm"]["beside_from"] == SECOND_START
    assert res.sse <= min(r["sse"] for r in res.extras["portfolio"] if r["status"] == "ok") + 1e-9
    label_stats.check_partition(res.labels, len(X), 4)
    assert not any(t.name.startswith("microagg-auto-") for t in threading.enumerate())
    seq = microagg.microaggregate(X, k=4, method="auto", seed=2, time_limit=1, parallel=False)
    assert "beside_from" not in next(r for r in seq.extras["portfolio"] if r["method"] == "icsm")


def test_interrupted_auto_stops_its_column_generation_thread():
    """Ctrl-C during the sequence (here: raised by the progress callback at mdav) reaches the
    caller at once, and the column-generation thread stops at its next round, long before the
    600 s budget (a thread still running after 120 s would be one that did not stop)."""
    import threading

    def interrupt_at_mdav(stage, fraction=None, message=""):
        if stage == "auto: mdav":
            raise KeyboardInterrupt

    X = make_data(13, 300, 3)
    with pytest.raises(KeyboardInterrupt):
        microagg.microaggregate(
            X, k=3, method="auto", seed=2, time_limit=600, parallel=True, progress=interrupt_at_mdav
        )
    lanes = [t for t in threading.enumerate() if t.name == "microagg-auto-colgen"]
    for t in lanes:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in lanes)


def test_auto_outside_the_main_thread_runs_no_second_thread():
    """parallel=None: a caller's worker thread (Dask's threaded blocks, a server) gets the
    sequence."""
    import threading

    X = make_data(12, 60, 3)
    got = {}
    worker = threading.Thread(
        target=lambda: got.update(
            res=microagg.microaggregate(X, k=3, method="auto", seed=2, time_limit=2)
        )
    )
    worker.start()
    worker.join()
    rows = got["res"].extras["portfolio"]
    assert all("lane" not in r for r in rows)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the second thread needs two cores")
def test_auto_in_the_command_lines_thread_runs_its_second_thread():
    """The command line runs each command in a worker thread marked as standing in for the main
    one: auto there runs column generation beside the sequence, as in the main thread."""
    import threading

    from microagg.deadline import mark_command_thread

    X = make_data(12, 60, 3)
    got = {}
    worker = threading.Thread(
        target=lambda: got.update(  # 3 s: the lane starts with the sequence
            res=microagg.microaggregate(X, k=3, method="auto", seed=2, time_limit=3)
        )
    )
    mark_command_thread(worker)
    worker.start()
    worker.join()
    rows = {r["method"]: r for r in got["res"].extras["portfolio"]}
    assert rows["colgen"]["lane"] == "parallel"


def test_auto_keeps_the_best_lower_bound_of_its_members():
    X = make_data(5, 10, 2)
    res = microagg.microaggregate(X, k=3, method="auto", portfolio=["mdav", "colgen"])
    rows = {r["method"]: r for r in res.extras["portfolio"]}
    assert rows["colgen"].get("lower_bound") is not None
    assert res.lower_bound is not None
    assert res.lower_bound == pytest.approx(min(rows["colgen"]["lower_bound"], res.sse))
    assert res.lower_bound <= brute_force_optimum(zscores(X), 3) + 1e-9
    assert res.extras["lower_bound_from"] == "colgen"


def test_auto_on_one_column_is_the_univariate_optimum():
    x = np.random.default_rng(2).normal(size=(11, 1))
    res = microagg.microaggregate(x, k=3, method="auto")
    assert [r["method"] for r in res.extras["portfolio"]] == ["univariate-optimal"]
    assert res.sse == pytest.approx(brute_force_optimum(zscores(x), 3))


def test_auto_is_reproducible_with_a_seed():
    X = make_data(9, 60, 3)
    a = microagg.microaggregate(X, k=3, method="auto", seed=4, portfolio="mdav,tsp-mhm")
    b = microagg.microaggregate(X, k=3, method="auto", seed=4, portfolio="mdav,tsp-mhm")
    np.testing.assert_array_equal(a.labels, b.labels)


def test_auto_passes_member_params_and_skips_when_the_budget_is_spent():
    X = make_data(1, 40, 3)
    res = microagg.microaggregate(
        X, k=3, method="auto", portfolio=["vmdav", "mdav"], member_params={"vmdav": {"gamma": 1.0}}
    )
    alone = microagg.microaggregate(X, k=3, method="vmdav", gamma=1.0)
    assert res.extras["portfolio"][0]["sse"] == pytest.approx(alone.sse)
    with pytest.raises(ValueError, match="no parameter"):
        microagg.microaggregate(
            X, k=3, method="auto", portfolio=["mdav"], member_params={"mdav": {"gama": 1}}
        )


@pytest.mark.parametrize(
    "portfolio,match",
    [
        (["mdav", "nope"], "unknown method"),
        (["auto"], "auto itself"),
        (["individual-ranking"], "each variable on its own"),
        (["univariate-optimal"], "univariate"),
        ([], "empty"),
        (["mdav", "mdav"], "twice"),
        (3, "list of method names"),
    ],
)
def test_auto_bad_portfolio_is_a_clear_error(portfolio, match):
    X = make_data(0, 20, 2)
    with pytest.raises(ValueError, match=match):
        microagg.microaggregate(X, k=3, method="auto", portfolio=portfolio)


def test_auto_member_params_for_a_method_not_in_the_portfolio_is_an_error():
    X = make_data(0, 20, 2)
    with pytest.raises(ValueError, match="not in the portfolio"):
        microagg.microaggregate(
            X, k=3, method="auto", portfolio=["mdav"], member_params={"vmdav": {"gamma": 1}}
        )


def test_auto_default_portfolio_scales_its_local_search():
    from microagg.methods.auto import LSEARCH_MIN_N, _default_portfolio

    assert "icsm" in _default_portfolio(1000, 3) and "lsearch" not in _default_portfolio(1000, 3)
    large = _default_portfolio(LSEARCH_MIN_N, 3)
    assert "lsearch" in large and "icsm" not in large and "md" not in large


def test_auto_continues_from_a_given_partition():
    """init=labels (a committed partition): auto starts its local search and column generation
    from it and returns nothing worse; a partition with undersized groups is repaired by the
    local search; a method name or labels of the wrong length are a ParameterError."""
    X = make_data(15, 120, 3)
    first = microagg.microaggregate(X, k=3, method="mdav")
    start, start_sse = first.labels, first.sse  # SSE of the standardised QIs
    res = microagg.microaggregate(X, k=3, method="auto", seed=0, work=20_000, init=start)
    rows = {r["method"]: r for r in res.extras["portfolio"]}
    assert rows["init"]["status"] == "ok" and rows["init"]["sse"] == pytest.approx(start_sse)
    assert res.sse <= start_sse * (1 + 1e-12)
    label_stats.check_partition(res.labels, len(X), 3)
    broken = np.arange(len(X)) % 50  # groups of 2 and 3: not a partition for k = 3
    with pytest.warns(UserWarning, match="30 group.s. with fewer than k = 3 records"):
        res = microagg.microaggregate(X, k=3, method="auto", seed=0, work=20_000, init=broken)
    label_stats.check_partition(res.labels, len(X), 3)
    assert "repaired" in next(r for r in res.extras["portfolio"] if r["method"] == "init")["status"]
    with pytest.raises(microagg.ParameterError, match="not a method"):
        microagg.microaggregate(X, k=3, method="auto", init="mdav")
    with pytest.raises(microagg.ParameterError, match="one entry per record"):
        microagg.microaggregate(X, k=3, method="auto", time_limit=1, init=start[:-1])
