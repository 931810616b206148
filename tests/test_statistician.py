"""What a statistician expects (issue 8): auto, strata merging, variable and sampling weights, risk measures."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg import measures, methods, partition
from microagg.methods.auto import DEFAULT_PORTFOLIO
from microagg.preprocess import InputError

from conftest import brute_force_optimum

# members whose result does not depend on a time limit: rerunning them alone must give the same SSE
DETERMINISTIC = [m for m in ("mdav", "vmdav", "mdav-mhm", "md", "kward", "tsp-mhm") if m in methods.names()]


def make_data(seed, n, d):
    """Gaussian data with some integer columns (ties) and duplicated rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, ::2] = np.round(X[:, ::2] * 2)
    dup = rng.integers(0, n, size=n // 5)
    X[rng.integers(0, n, size=dup.size)] = X[dup]
    return X


def zscores(X):
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)


# ---------------------------------------------------------------------------------------- auto


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(4, 90), d=st.integers(2, 5), k=st.integers(2, 4))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_auto_never_worse_than_its_best_member(seed, n, d, k):
    if n < k:
        return
    X = make_data(seed, n, d)
    Z = zscores(X)
    portfolio = DETERMINISTIC + ["icsm"]
    res = microagg.microaggregate(X, k=k, method="auto", seed=3, time_limit=60, portfolio=portfolio)
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
    partition.check_partition(res.labels, n, k)
    assert res.sse == pytest.approx(partition.sse(Z, res.labels), rel=1e-9, abs=1e-9)


def test_auto_default_portfolio_on_census_beats_mdav_and_reports_members():
    df = microagg.datasets.load("census")
    res = microagg.microaggregate(df, k=3, method="auto", time_limit=4)
    mdav = microagg.microaggregate(df, k=3, method="mdav")
    assert res.information_loss <= mdav.information_loss + 1e-9
    names = [r["method"] for r in res.extras["portfolio"]]
    default = [m for m in DEFAULT_PORTFOLIO if m in methods.names()]
    assert names[0] == "icsm" and names[:len(default)] == default
    assert set(names[len(default):]) <= {"colgen"}  # warm-started with the time left (n <= 5000)
    ok = [r for r in res.extras["portfolio"] if r["status"] == "ok"]
    assert res.information_loss == pytest.approx(min(r["il"] for r in ok))
    assert res.extras["budget_seconds"] <= 4
    assert "auto: winner" in res.summary()


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(12, 80), d=st.integers(2, 4), k=st.integers(2, 4))
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
    """With a time limit the default portfolio keeps improving: ICSM restarts and column
    generation warm-started from the best partition, whose proven bound auto reports."""
    X = make_data(7, 60, 3)
    plain = microagg.microaggregate(X, k=3, method="auto", seed=1, improve=False)
    res = microagg.microaggregate(X, k=3, method="auto", seed=1, time_limit=3)
    assert res.sse <= plain.sse + 1e-9 * max(1.0, plain.sse)
    rows = {r["method"]: r for r in res.extras["portfolio"]}
    assert "colgen" in rows and rows["colgen"]["status"] == "ok"
    assert res.lower_bound is not None and res.lower_bound <= res.sse * (1 + 1e-9)
    assert res.extras["lower_bound_from"] == "colgen"
    assert "colgen" not in {r["method"] for r in plain.extras["portfolio"]}


@pytest.mark.parametrize("budget", [1.0, 3.0])
def test_auto_runs_column_generation_beside_the_sequence(budget):
    """parallel=True: colgen runs in a second thread (from the start at k <= 4 with 2 s or more,
    else once icsm has run), takes in the sequence's partitions, and its row says so; the
    result is the best row's, a valid partition, and no thread is left behind."""
    import threading

    X = make_data(11, 90, 3)
    res = microagg.microaggregate(X, k=3, method="auto", seed=2, time_limit=budget, parallel=True)
    rows = res.extras["portfolio"]
    lane = [r for r in rows if r["method"] == "colgen"]
    assert len(lane) == 1 and lane[0]["status"] == "ok" and lane[0]["lane"] == "parallel"
    assert res.sse <= min(r["sse"] for r in rows if r["status"] == "ok") + 1e-9
    assert res.lower_bound is not None and res.lower_bound <= res.sse * (1 + 1e-9)
    partition.check_partition(res.labels, len(X), 3)
    assert not any(t.name == "microagg-auto-colgen" for t in threading.enumerate())
    seq = microagg.microaggregate(X, k=3, method="auto", seed=2, time_limit=budget, parallel=False)
    assert "lane" not in next(r for r in seq.extras["portfolio"] if r["method"] == "colgen")


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
    partition.check_partition(res.labels, len(X), 3)


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
    partition.check_partition(res.labels, len(X), 4)
    assert not any(t.name.startswith("microagg-auto-") for t in threading.enumerate())
    seq = microagg.microaggregate(X, k=4, method="auto", seed=2, time_limit=1, parallel=False)
    assert "beside_from" not in next(r for r in seq.extras["portfolio"] if r["method"] == "icsm")


def test_interrupted_auto_stops_its_column_generation_thread():
    """Ctrl-C during the sequence (here: raised by the progress callback at mdav) reaches the
    caller at once, and the column-generation thread stops at its next round, long before the
    60 s budget."""
    import threading
    import time

    def interrupt_at_mdav(stage, fraction=None, message=""):
        if stage == "auto: mdav":
            raise KeyboardInterrupt

    X = make_data(13, 300, 3)
    tic = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        microagg.microaggregate(X, k=3, method="auto", seed=2, time_limit=60, parallel=True,
                                progress=interrupt_at_mdav)
    lanes = [t for t in threading.enumerate() if t.name == "microagg-auto-colgen"]
    for t in lanes:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in lanes)
    assert time.monotonic() - tic < 45


def test_auto_outside_the_main_thread_runs_no_second_thread():
    """parallel=None: a caller's worker thread (Dask's threaded blocks, a server) gets the sequence."""
    import threading

    X = make_data(12, 60, 3)
    got = {}
    worker = threading.Thread(target=lambda: got.update(
        res=microagg.microaggregate(X, k=3, method="auto", seed=2, time_limit=2)))
    worker.start()
    worker.join()
    rows = got["res"].extras["portfolio"]
    assert all("lane" not in r for r in rows)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the second thread needs two cores")
def test_auto_in_the_command_lines_thread_runs_its_second_thread():
    """The command line runs each command in a worker thread marked as standing in for the main
    one: auto there runs column generation beside the sequence, as in the main thread."""
    import threading

    from microagg.clock import mark_command_thread

    X = make_data(12, 60, 3)
    got = {}
    worker = threading.Thread(target=lambda: got.update(
        res=microagg.microaggregate(X, k=3, method="auto", seed=2, time_limit=2)))
    mark_command_thread(worker)
    worker.start()
    worker.join()
    rows = {r["method"]: r for r in got["res"].extras["portfolio"]}
    assert rows["colgen"]["lane"] == "parallel"


def test_auto_keeps_the_best_lower_bound_of_its_members():
    X = make_data(5, 10, 2)
    res = microagg.microaggregate(X, k=3, method="auto", portfolio=["mdav", "colgen"], time_limit=60)
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
    res = microagg.microaggregate(X, k=3, method="auto", portfolio=["vmdav", "mdav"],
                                  member_params={"vmdav": {"gamma": 1.0}})
    alone = microagg.microaggregate(X, k=3, method="vmdav", gamma=1.0)
    assert res.extras["portfolio"][0]["sse"] == pytest.approx(alone.sse)
    with pytest.raises(ValueError, match="no parameter"):
        microagg.microaggregate(X, k=3, method="auto", portfolio=["mdav"], member_params={"mdav": {"gama": 1}})


@pytest.mark.parametrize("portfolio,match", [
    (["mdav", "nope"], "unknown method"),
    (["auto"], "auto itself"),
    (["individual-ranking"], "each variable on its own"),
    (["univariate-optimal"], "univariate"),
    ([], "empty"),
    (["mdav", "mdav"], "twice"),
    (3, "list of method names"),
])
def test_auto_bad_portfolio_is_a_clear_error(portfolio, match):
    X = make_data(0, 20, 2)
    with pytest.raises(ValueError, match=match):
        microagg.microaggregate(X, k=3, method="auto", portfolio=portfolio)


def test_auto_member_params_for_a_method_not_in_the_portfolio_is_an_error():
    X = make_data(0, 20, 2)
    with pytest.raises(ValueError, match="not in the portfolio"):
        microagg.microaggregate(X, k=3, method="auto", portfolio=["mdav"], member_params={"vmdav": {"gamma": 1}})


# ---------------------------------------------------------------------------------------- strata


def _strata_frame(seed=0):
    """Three strata far apart on x; 'tiny' (2 records) lies next to 'a'."""
    rng = np.random.default_rng(seed)
    parts = []
    for name, centre, size in (("a", 0.0, 30), ("b", 50.0, 31), ("tiny", 1.0, 2)):
        parts.append(pd.DataFrame({"x": rng.normal(centre, 1, size), "y": rng.normal(0, 1, size),
                                   "region": name}))
    return pd.concat(parts, ignore_index=True)


def test_small_stratum_is_an_error_naming_it():
    df = _strata_frame()
    with pytest.raises(InputError, match=r"tiny \(2 records\).*merge_small_strata"):
        microagg.microaggregate(df, k=3, strata="region")


def test_small_stratum_merged_with_the_nearest_stratum():
    df = _strata_frame()
    res = microagg.microaggregate(df, k=3, strata="region", merge_small_strata=True)
    assert res.extras["merged_strata"] == [{"stratum": "tiny", "size": 2, "merged_into": "a"}]
    merged = df["region"].replace({"tiny": "a"})
    for g in np.unique(res.labels):
        assert merged[res.labels == g].nunique() == 1
    assert "merged into a" in res.summary()


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(6, 120), k=st.integers(2, 4), s=st.integers(1, 6),
       method=st.sampled_from(["mdav", "auto", "individual-ranking"]))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_strata_keep_every_group_inside_one_merged_stratum(seed, n, k, s, method):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(make_data(seed, n, 3), columns=["a", "b", "c"])
    df["s1"] = rng.integers(0, s, n).astype(str)
    df["s2"] = rng.integers(0, 2, n)
    params = {"portfolio": ["mdav", "tsp-mhm"]} if method == "auto" else {}
    res = microagg.microaggregate(df, k=k, method=method, strata=["s1", "s2"], merge_small_strata=True,
                                  columns=["a", "b", "c"], time_limit=5, **params)
    # map every original stratum to the merged stratum it ended in
    final = {}
    for entry in res.extras["strata"]:
        for part in entry["members"]:
            final[part] = entry["stratum"]
    key = "s1=" + df["s1"].astype(str) + ", s2=" + df["s2"].astype(str)
    merged = key.map(final)
    assert merged.notna().all()
    labels = res.labels if res.labels.ndim == 2 else res.labels[:, None]
    for j in range(labels.shape[1]):
        for g in np.unique(labels[:, j]):
            assert merged[labels[:, j] == g].nunique() == 1
        assert partition.group_sizes(labels[:, j]).min() >= k
    assert sum(e["records"] for e in res.extras["strata"]) == n


def test_strata_with_auto_report_each_portfolio():
    df = _strata_frame()
    res = microagg.microaggregate(df, k=3, method="auto", strata="region", merge_small_strata=True,
                                  portfolio=["mdav", "md"])
    assert all("portfolio" in e["extras"] for e in res.extras["strata"])
    assert res.summary().count("auto: winner") == 2


def test_merge_small_strata_needs_strata_and_a_bool():
    df = _strata_frame()
    with pytest.raises(InputError, match="needs strata"):
        microagg.microaggregate(df.drop(columns="region"), k=3, merge_small_strata=True)
    with pytest.raises(InputError, match="true or false"):
        microagg.microaggregate(df, k=3, strata="region", merge_small_strata="yes")


# ---------------------------------------------------------------------------------------- weights


def test_equal_weights_change_nothing_and_a_heavy_weight_protects_its_column():
    df = microagg.datasets.load("census").head(300)
    plain = microagg.microaggregate(df, k=3)
    same = microagg.microaggregate(df, k=3, weights=[2.0] * df.shape[1])
    np.testing.assert_array_equal(plain.labels, same.labels)
    assert same.information_loss == pytest.approx(plain.information_loss)
    w = [1.0] * df.shape[1]
    w[0] = 50.0
    heavy = microagg.microaggregate(df, k=3, weights=w)
    Z = zscores(df.to_numpy(float))
    col0 = lambda lab: partition.sse(Z[:, [0]], lab)  # noqa: E731
    assert col0(heavy.labels) < col0(plain.labels)
    assert heavy.extras["weights"][df.columns[0]] == 50.0
    assert "weighted_information_loss" in heavy.extras
    by_name = microagg.microaggregate(df, k=3, weights={df.columns[0]: 50.0})
    np.testing.assert_array_equal(by_name.labels, heavy.labels)


def test_weighted_bound_is_still_a_bound_on_the_unweighted_sse():
    X = make_data(4, 10, 2)
    res = microagg.microaggregate(X, k=3, method="colgen", weights=[3.0, 1.0], time_limit=30)
    assert res.lower_bound is not None
    assert res.lower_bound <= brute_force_optimum(zscores(X), 3) + 1e-9
    assert res.extras["weighted_lower_bound"] >= res.lower_bound


@pytest.mark.parametrize("weights,match", [
    ([1.0, 2.0], "2 value"),
    ([1.0, -1.0, 1.0], "positive"),
    ([1.0, 0.0, 1.0], "positive"),
    ([1.0, np.nan, 1.0], "positive"),
    ([1.0, np.inf, 1.0], "positive"),
    ("1,2,3", "numbers"),
    (["a", 1, 1], "numbers"),
    ([True, 1, 1], "numbers"),
    ({"nope": 1.0}, "not quasi-identifiers"),
])
def test_bad_variable_weights_are_rejected(weights, match):
    df = pd.DataFrame(make_data(0, 20, 3), columns=["a", "b", "c"])
    with pytest.raises(InputError, match=match):
        microagg.microaggregate(df, k=3, weights=weights)


def test_weights_that_could_not_act_are_rejected_not_ignored():
    df = pd.DataFrame(make_data(0, 20, 3), columns=["a", "b", "c"])
    with pytest.raises(InputError, match="no effect"):
        microagg.microaggregate(df, k=3, method="individual-ranking", weights=[1, 2, 3])
    with pytest.raises(InputError, match="no effect"):
        microagg.microaggregate(df[["a"]], k=3, method="univariate-optimal", weights=[2.0])


def test_sample_weights_give_weighted_group_means():
    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.normal(size=(40, 2)), columns=["a", "b"])  # continuous (integer data with few values: codes)
    df["w"] = rng.uniform(0.5, 4.0, 40)
    res = microagg.microaggregate(df, k=3, sample_weight="w")
    assert res.columns == ["a", "b"]  # the weight column is not a quasi-identifier
    np.testing.assert_array_equal(res.data["w"], df["w"])
    expected = partition.aggregate(df[["a", "b"]].to_numpy(), res.labels, df["w"].to_numpy())
    np.testing.assert_allclose(res.data[["a", "b"]].to_numpy(), expected)
    plain = microagg.microaggregate(df, k=3, columns=["a", "b"])
    np.testing.assert_array_equal(plain.labels, res.labels)  # grouping unchanged
    assert res.sse >= plain.sse - 1e-9  # weighted means are not the SSE-minimising means
    arr = microagg.microaggregate(df[["a", "b"]].to_numpy(), k=3, sample_weight=df["w"].to_numpy())
    np.testing.assert_allclose(arr.data, expected)
    assert res.extras["sample_weight"] == "w"


@pytest.mark.parametrize("kwargs,match", [
    (dict(sample_weight="a", columns=["a", "b"]), "both quasi-identifier and sample weight"),
    (dict(sample_weight="nope"), "unknown sample_weight"),
    (dict(sample_weight="neg"), "positive"),
    (dict(sample_weight="name"), "not numeric"),
    (dict(sample_weight="s", strata="s"), "both sample weight and stratum"),
    (dict(sample_weight=np.ones(5)), "one value per record"),
    (dict(sample_weight=np.r_[np.ones(19), np.nan]), "positive"),
    (dict(sample_weight=np.r_[np.ones(19), 0.0]), "positive"),
])
def test_bad_sample_weights_are_rejected(kwargs, match):
    df = pd.DataFrame(make_data(0, 20, 2), columns=["a", "b"])
    df["neg"] = -1.0
    df["name"] = "x"
    df["s"] = 1.0
    kwargs = dict(kwargs)
    if "columns" not in kwargs:
        kwargs["columns"] = ["a", "b"]
    with pytest.raises(InputError, match=match):
        microagg.microaggregate(df, k=3, **kwargs)


# ---------------------------------------------------------------------------------------- measures


def _dbrl_brute(X, Xp):
    """O(n²) reference for DBRL with 1/t for ties (on the original's standardisation)."""
    mean, std = X.mean(axis=0), np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    Z, Zp = (X - mean) / std, (Xp - mean) / std
    D = np.sqrt(((Z[:, None, :] - Zp[None, :, :]) ** 2).sum(axis=2))
    total = 0.0
    for i in range(len(Z)):
        near = D[i].min()
        tied = np.flatnonzero(D[i] <= near + 1e-9 * max(1.0, near))
        if i in tied:
            total += 1.0 / len(tied)
    return total / len(Z)


def _interval_brute(X, Xp, p):
    n, d = X.shape
    m = int(np.floor(p * n / 100))
    inside = 0
    for j in range(d):
        order = np.sort(Xp[:, j])
        for i in range(n):
            ranks = np.flatnonzero(order == Xp[i, j])
            lo, hi = order[max(ranks[0] - m, 0)], order[min(ranks[-1] + m, n - 1)]
            inside += lo <= X[i, j] <= hi
    return inside / (n * d)


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(3, 80), d=st.integers(1, 4), k=st.integers(2, 3),
       p=st.sampled_from([0.0, 5.0, 10.0, 25.0]))
@settings(max_examples=25, deadline=None)
def test_risk_measures_match_brute_force(seed, n, d, k, p):
    if n < k:
        return
    X = make_data(seed, n, d)
    Xp = microagg.microaggregate(X, k=k).data
    assert measures.distance_linkage_risk(X, Xp) == pytest.approx(_dbrl_brute(X, Xp), abs=1e-12)
    assert measures.interval_disclosure_risk(X, Xp, p) == pytest.approx(_interval_brute(X, Xp, p), abs=1e-12)
    # a k-anonymous release: every record is tied with at least k-1 others
    assert measures.distance_linkage_risk(X, Xp) <= 1.0 / k + 1e-12


def test_dbrl_hand_examples():
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    assert measures.distance_linkage_risk(X, X) == 1.0
    # records 0,1 published as 0.5 (tie of 2): each links correctly with probability 1/2
    Xp = np.array([[0.5], [0.5], [10.0], [11.0]])
    assert measures.distance_linkage_risk(X, Xp) == pytest.approx((0.5 + 0.5 + 1 + 1) / 4)
    # swapped records never link to themselves
    assert measures.distance_linkage_risk(X, X[[1, 0, 3, 2]]) == 0.0


def test_interval_disclosure_hand_example():
    X = np.arange(10.0)[:, None]
    assert measures.interval_disclosure_risk(X, X, 0) == 1.0
    shifted = X + 1.5  # protected values 1.5..10.5; interval ±1 rank (p=10, n=10)
    # record i: interval [i+0.5, i+2.5] clipped at the ends; x_i = i is never inside
    assert measures.interval_disclosure_risk(X, shifted, 10) == 0.0
    # with p = 20 (±2 ranks) the interval [x'_(i-2), x'_(i+2)] = [i-0.5, i+3.5] contains i from i = 2
    assert measures.interval_disclosure_risk(X, shifted, 20) == pytest.approx(8 / 10)
    with pytest.raises(ValueError, match="percentage"):
        measures.interval_disclosure_risk(X, X, 120)


def test_il1s_and_discrepancies_hand_examples():
    X = np.array([[1.0, 2.0], [3.0, 1.0], [5.0, 6.0], [7.0, 3.0]])
    Xp = X.copy()
    Xp[:, 0] = [2.0, 2.0, 6.0, 6.0]
    S = X.std(axis=0, ddof=1)
    expected = np.mean(np.abs(X - Xp) / (np.sqrt(2) * S))
    assert measures.il1s(X, Xp) == pytest.approx(expected)
    assert measures.il1s(X, X) == 0.0
    assert measures.eigenvalue_discrepancy(X, X) == pytest.approx(0.0, abs=1e-9)
    assert measures.covariance_discrepancy(X, X) == pytest.approx((0.0, 0.0), abs=1e-12)
    # shrinking a variable towards its mean shows in the covariance and eigenvalue discrepancies
    assert measures.covariance_discrepancy(X, Xp)[0] > 0
    assert measures.eigenvalue_discrepancy(X, Xp) > 0
    mae, var = measures.covariance_discrepancy(X, Xp)
    Z = (X - X.mean(0)) / X.std(0)
    Zp = (Xp - X.mean(0)) / X.std(0)
    iu = np.triu_indices(2)
    diff = np.abs(np.cov(Z.T, bias=True) - np.cov(Zp.T, bias=True))[iu]
    assert mae == pytest.approx(diff.mean())
    assert var == pytest.approx(100 * np.mean(diff / np.abs(np.cov(Z.T, bias=True)[iu])))
    lam = np.sort(np.linalg.eigvalsh(np.cov(Z.T, bias=True)))[::-1]
    lam_p = np.sort(np.linalg.eigvalsh(np.cov(Zp.T, bias=True)))[::-1]
    assert measures.eigenvalue_discrepancy(X, Xp) == pytest.approx(100 * np.mean(np.abs(lam - lam_p) / lam))


def test_reports_contain_every_measure():
    df = microagg.datasets.load("tarragona")
    res = microagg.microaggregate(df, k=3)
    util = measures.utility_report(df, res.data)
    for key in ("information_loss", "il1s", "delta_r_mean", "covariance_mae", "covariance_variation_percent",
                "eigenvalue_discrepancy_percent", "delta_w"):
        assert np.isfinite(util[key])
    assert util["information_loss"] == pytest.approx(res.information_loss)
    risk = measures.risk_report(df, res.data)
    assert 0 <= risk["record_linkage_dbrl"] <= 1 / 3 + 1e-12
    assert 0 <= risk["interval_disclosure"] <= 1
    assert risk["smallest_group"] >= 3


def test_options_sdcmicro_ignores_are_honoured_or_rejected_here():
    """sdcMicro issues #266 (measure='median' silently gave means) and #267 (strata had no effect with MDAV)."""
    df = _strata_frame()
    with pytest.raises(ValueError, match="no parameter measure"):
        microagg.microaggregate(df, k=3, columns=["x", "y"], measure="median")
    # strata assigned at random: plain MDAV mixes them, MDAV within strata never does
    mixed = pd.DataFrame(make_data(8, 60, 2), columns=["x", "y"])
    mixed["region"] = np.random.default_rng(8).choice(["n", "s"], 60)
    plain = microagg.microaggregate(mixed, k=3, columns=["x", "y"])
    strat = microagg.microaggregate(mixed, k=3, columns=["x", "y"], strata="region")
    regions = mixed["region"].to_numpy()
    assert any(len(set(regions[plain.labels == g])) > 1 for g in np.unique(plain.labels))
    assert all(len(set(regions[strat.labels == g])) == 1 for g in np.unique(strat.labels))
    with pytest.raises(InputError, match="standardize"):
        microagg.microaggregate(df, k=3, columns=["x", "y"], standardize="no")
    with pytest.raises(InputError, match="progress"):
        microagg.microaggregate(df, k=3, columns=["x", "y"], progress="yes")


def test_auto_default_portfolio_scales_its_local_search():
    from microagg.methods.auto import LSEARCH_MIN_N, _default_portfolio

    assert "icsm" in _default_portfolio(1000, 3) and "lsearch" not in _default_portfolio(1000, 3)
    large = _default_portfolio(LSEARCH_MIN_N, 3)
    assert "lsearch" in large and "icsm" not in large and "md" not in large


def test_start_labels_are_cut_per_stratum():
    """init= labels with strata: each stratum's search starts from its own records' labels."""
    df = microagg.datasets.load("census")
    df["half"] = np.arange(len(df)) % 2
    start = microagg.microaggregate(df, k=3, method="mdav", strata="half")
    more = microagg.microaggregate(df, k=3, method="icsm", strata="half", init=start.labels)
    assert more.sse <= start.sse + 1e-9
    halves = df["half"].to_numpy()
    assert all(len(set(halves[more.labels == g])) == 1 for g in np.unique(more.labels))
    with pytest.raises(microagg.ParameterError, match="partitioned mode"):
        microagg.microaggregate(df, k=3, method="icsm", block_size=300, init=start.labels)


def test_auto_continues_from_a_given_partition():
    """init=labels (a committed partition): auto starts its local search and column generation
    from it and returns nothing worse; a partition with undersized groups is repaired by the
    local search; a method name or labels of the wrong length are a ParameterError."""
    X = make_data(15, 120, 3)
    first = microagg.microaggregate(X, k=3, method="mdav")
    start, start_sse = first.labels, first.sse  # SSE of the standardised QIs
    res = microagg.microaggregate(X, k=3, method="auto", seed=0, time_limit=2, init=start)
    rows = {r["method"]: r for r in res.extras["portfolio"]}
    assert rows["init"]["status"] == "ok" and rows["init"]["sse"] == pytest.approx(start_sse)
    assert res.sse <= start_sse * (1 + 1e-12)
    partition.check_partition(res.labels, len(X), 3)
    broken = np.arange(len(X)) % 50  # groups of 2 and 3: not a partition for k = 3
    with pytest.warns(UserWarning, match="30 group.s. with fewer than k = 3 records"):
        res = microagg.microaggregate(X, k=3, method="auto", seed=0, time_limit=1, init=broken)
    partition.check_partition(res.labels, len(X), 3)
    assert "repaired" in next(r for r in res.extras["portfolio"] if r["method"] == "init")["status"]
    with pytest.raises(microagg.ParameterError, match="not a method"):
        microagg.microaggregate(X, k=3, method="auto", init="mdav")
    with pytest.raises(microagg.ParameterError, match="one entry per record"):
        microagg.microaggregate(X, k=3, method="auto", time_limit=1, init=start[:-1])
