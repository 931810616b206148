"""The run contract (issue 15): declared parameters, one clock, one progress channel, strata with blocks."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg import methods
from microagg.clock import Deadline
from microagg.errors import InputError, ParameterError
from microagg.params import Param
from microagg.partition import check_partition


@pytest.fixture
def spy_method():
    """A registered method that records the deadline and progress it receives (removed afterwards)."""
    calls = []

    @methods.register("_spy", family="test", paper="-", complexity="-", variable_size=False,
                      params=(Param("level", "int", 1, "a test parameter", low=0, high=3),))
    def _spy(X, k, *, seed, deadline, progress, level):
        """Spy."""
        calls.append({"n": len(X), "remaining": deadline.remaining(), "deadline": deadline})
        progress("_spy", 1.0, "done")
        labels = np.arange(len(X)) // k
        labels[labels == labels.max()] = max(labels.max() - 1, 0) if len(X) % k else labels.max()
        return labels

    yield calls
    del methods._REGISTRY["_spy"]


def test_every_method_declares_its_parameters_once():
    for info in methods.all_methods():
        sig = inspect.signature(info.func)
        keywords = [p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
        assert set(keywords) == {"seed", "deadline", "progress", *info.params}, info.name
        assert all(p.default is inspect.Parameter.empty for p in sig.parameters.values()), info.name
        for p in info.params.values():
            assert p.doc and p.describe()
            p.validate(p.default, info.name)  # every default passes its own declaration


@pytest.mark.parametrize("method,params,match", [
    ("vmdav", {"gamma": "abc"}, "gamma must be a number"),
    ("vmdav", {"gamma": float("nan")}, "finite"),
    ("vmdav", {"gamma": -1}, ">= 0"),
    ("vmdav", {"gamma": [1, 2]}, "gamma must be a number"),
    ("vmdav", {"gamma": None}, "got None"),
    ("mdav", {"variant": "fast"}, "one of"),
    ("icsm", {"pool_size": 0}, ">= 1"),
    ("icsm", {"pool_size": 2.5}, "integer"),
    ("icsm", {"init": "icsm"}, "itself"),
    ("genetic", {"pmut": 2}, "<= 1"),
    ("auto", {"portfolio": ["mdav", "nope"]}, "unknown method"),
    ("auto", {"member_params": {"mdav": {"gama": 1}}}, "no parameter"),
    ("projected", {"univariate": "mdav", "univariate_params": {"x": 1}}, "no parameter"),
    ("mdav", {"gamma": 0.2}, "no parameter gamma"),
    ("nope", {}, "unknown method"),
])
def test_bad_parameters_fail_before_any_data_work(monkeypatch, method, params, match):
    def no_work(*args, **kwargs):
        raise AssertionError("the data were touched before the parameters were checked")

    monkeypatch.setattr(microagg.pipeline, "load", no_work)
    with pytest.raises(ParameterError, match=match):
        microagg.microaggregate(np.zeros((10, 2)), k=3, method=method, **params)


@pytest.mark.parametrize("kwargs,match", [
    ({"k": 1}, "k must be an integer >= 2"), ({"k": 2.5}, "k must be an integer"), ({"time_limit": "5"}, "time_limit"),
    ({"time_limit": -1}, "time_limit"), ({"time_limit": math.inf}, "time_limit"), ({"seed": -1}, "seed"),
    ({"columns": 5.5}, "columns"), ({"standardize": "no"}, "standardize"), ({"progress": "yes"}, "progress"),
    ({"block_size": 0}, "block_size"), ({"refine": 0.5}, "refine applies"),
    ({"merge_small_strata": True}, "needs strata"),
])
def test_bad_options_fail_before_the_data_are_read(monkeypatch, kwargs, match):
    monkeypatch.setattr(microagg.pipeline, "load", lambda *a: pytest.fail("data read before the options check"))
    with pytest.raises(ParameterError, match=match):
        microagg.microaggregate(np.zeros((10, 2)), **{"k": 3, **kwargs})


def test_parameter_errors_are_input_errors_and_type_errors():
    assert issubclass(ParameterError, InputError) and issubclass(ParameterError, TypeError)
    assert issubclass(InputError, ValueError)


def test_param_parses_command_line_text_by_its_declaration():
    gamma = methods.get("vmdav").params["gamma"]
    assert gamma.parse("0.5") == 0.5
    for bad in ("abc", "nan", "[1,2]", "inf"):
        with pytest.raises(ParameterError):
            gamma.validate(gamma.parse(bad), "vmdav")
    max_it = methods.get("icsm").params["max_iterations"]
    assert max_it.parse("none") is None and max_it.parse("7") == 7
    assert methods.get("kward").params["recompute"].parse("true") is True


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


def test_auto_stops_its_restarts_once_column_generation_proves_optimality():
    X = np.random.default_rng(0).normal(size=(40, 3))
    res = microagg.microaggregate(X, k=3, method="auto", time_limit=20, parallel=True)
    icsm = next(r for r in res.extras["portfolio"] if r["method"] == "icsm")
    assert icsm["restarts_stopped"] == "column generation proved its partition optimal"
    assert res.lower_bound == pytest.approx(res.sse, rel=1e-9)


def test_load_kernels_runs_a_package_method_once_per_process(monkeypatch, spy_method):
    seen = []
    real_run = methods.run

    def counting_run(name, X, k, **kwargs):
        seen.append((name, X.shape, k))
        return real_run(name, X, k, **kwargs)

    monkeypatch.setattr(methods, "_WARM", set())
    monkeypatch.setattr(methods, "run", counting_run)
    methods.load_kernels("mdav")
    methods.load_kernels("mdav")
    methods.load_kernels("univariate-optimal")
    assert seen == [("mdav", (40, 3), 3), ("univariate-optimal", (40, 1), 3)]
    # a caller's own method is never run behind its back: its one run is the real one
    microagg.microaggregate(np.arange(12.0)[:, None], k=3, method="_spy")
    assert len(spy_method) == 1 and seen[2:] == [("_spy", (12, 1), 3)]
    # a bad input is refused before any loading (one error, no work)
    df = pd.DataFrame({"x": np.arange(12.0)})
    with pytest.raises(InputError, match="unknown strata"):
        microagg.microaggregate(df, k=3, method="icsm", strata="nope")
    assert "icsm" not in methods._WARM and seen[3:] == []


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


@pytest.mark.parametrize("mode", ["plain", "strata", "partitioned", "strata+partitioned"])
def test_progress_reaches_the_callback_on_every_path(mode):
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(300, 3)), columns=list("abc"))
    df["s"] = rng.choice(["n", "s"], size=300)
    calls = []
    kwargs = {"strata": "s"} if "strata" in mode else {}
    if "partitioned" in mode:
        kwargs.update(block_size=60, scheduler="synchronous")
    microagg.microaggregate(df, k=3, method="mdav", columns=list("abc"), progress=lambda *a: calls.append(a),
                            **kwargs)
    assert calls and all(isinstance(c[0], str) for c in calls)
    fractions = [c[1] for c in calls if c[1] is not None]
    assert all(0.0 <= f <= 1.0 for f in fractions)


def test_methods_never_print(capfd):
    X = np.random.default_rng(3).normal(size=(40, 3))
    for name in methods.names():
        info = methods.get(name)
        data = X[:, :1] if not info.multivariate else X
        microagg.microaggregate(data, k=3, method=name, time_limit=1, progress=lambda *a: None)
    out, _ = capfd.readouterr()
    assert out == ""


@pytest.mark.parametrize("standardize", [True, False])
def test_report_information_loss_is_the_runs(standardize):
    from microagg.report import render_report

    df = microagg.datasets.load("tarragona").head(200)
    res = microagg.microaggregate(df, k=3, standardize=standardize)
    html = render_report(res, df)
    shown = f"{res.information_loss:.4f}"
    assert html.count(f">{shown}<") >= 2  # "Information loss" and "Utility" tables agree
    util = microagg.measures.utility_report(df[res.columns], res.data[res.columns], scaler=res.scaler)
    assert util["information_loss"] == pytest.approx(res.information_loss)
    assert res.measured(df[res.columns]) == pytest.approx(res.standardized)


def test_strata_with_blocks_never_cross_strata():
    rng = np.random.default_rng(4)
    df = pd.DataFrame(rng.normal(size=(900, 3)), columns=list("abc"))
    df["region"] = rng.choice(["n", "s", "e", "tiny"], p=[0.4, 0.3, 0.298, 0.002], size=900)
    res = microagg.microaggregate(df, k=3, columns=list("abc"), strata="region", block_size=100,
                                  merge_small_strata=True)
    check_partition(res.labels, 900, 3)
    merged = df["region"].to_numpy().copy()
    for m in res.extras.get("merged_strata", []):
        merged[merged == m["stratum"]] = m["merged_into"]
    for g in np.unique(res.labels):
        assert len(set(merged[res.labels == g])) == 1


def test_out_of_core_with_strata(tmp_path):
    from microagg.outofcore import protect_out_of_core

    rng = np.random.default_rng(5)
    df = pd.DataFrame(rng.normal(size=(2000, 3)), columns=list("abc"))
    df["region"] = rng.choice(["n", "s"], size=2000)
    src = tmp_path / "in.parquet"
    df.to_parquet(src)
    calls = []
    summary = protect_out_of_core(src, tmp_path / "out", k=3, block_size=100, columns=list("abc"),
                                  strata="region", chunk_rows=700, slab_blocks=2, scheduler="synchronous",
                                  progress=lambda *a: calls.append(a), time_limit=60)
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == 2000 and summary["min_group_size"] >= 3
    assert (out["region"] == df["region"]).all()
    keys = out[list("abc")].round(12).astype(str).agg("|".join, axis=1)
    for _, rows in out.groupby(keys):
        assert rows["region"].nunique() == 1 and len(rows) >= 3
    assert any(c[0] == "slabs" for c in calls)


def test_out_of_core_rejects_k_1_before_reading(tmp_path):
    from microagg.outofcore import protect_out_of_core

    with pytest.raises(ParameterError, match="k must be an integer >= 2"):
        protect_out_of_core(tmp_path / "missing.parquet", tmp_path / "out", k=1, block_size=10)


def test_trivial_case_is_answered_once_with_its_exact_bound():
    X = np.random.default_rng(6).normal(size=(5, 2))
    out = methods.run("mdav", X, 3)
    assert out.extras.get("trivial") and np.all(out.labels == 0)
    assert out.lower_bound == pytest.approx(((X - X.mean(axis=0)) ** 2).sum())


def test_missing_tokens_in_the_api():
    df = pd.DataFrame({"a": ["1.5", "2", "-", "4", "5", "6"], "b": [1.0, 2, 3, 4, 5, 6]})
    with pytest.raises(InputError, match=r"numeric except for '-'"):
        microagg.microaggregate(df, k=3)
    with pytest.raises(InputError, match="missing or infinite values in quasi-identifier column.*a"):
        microagg.microaggregate(df, k=3, columns=["a"], missing="-")
    res = microagg.microaggregate(df, k=3, columns=["b"], missing=["-"])
    assert res.data["a"].tolist() == df["a"].tolist()  # a non-QI column keeps its text
    with pytest.raises(ParameterError, match="missing must be text tokens"):
        microagg.microaggregate(df, k=3, columns=["b"], missing=5)
