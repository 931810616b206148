"""microagg.representatives: what a group publishes (weighted median, trimmed, one-step, median
category, mode)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import brute_onestep, brute_trimmed, brute_weighted_median_is_minimiser
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import microagg
from microagg import representatives as reps
from microagg.declarations import Param

small_groups = st.lists(
    st.floats(-100, 100, allow_nan=False, width=32) | st.sampled_from([0.0, 1.0, 2.0]),
    min_size=1,
    max_size=9,
)


@settings(max_examples=80, deadline=None)
@given(small_groups, st.data())
def test_weighted_median_and_trimmed_match_definitions(values, data):
    x = np.array(values, dtype=np.float64)
    n = len(x)
    iw = np.array(data.draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)), dtype=np.float64)
    labels = np.zeros(n, dtype=np.int64)
    # unweighted: textbook statistics
    assert reps.continuous(x[:, None], labels, "median")[0, 0] == pytest.approx(np.median(x))
    assert reps.continuous(x[:, None], labels, "trimmed", {"trim": 0.2})[0, 0] == pytest.approx(
        stats.trim_mean(x, 0.2)
    )
    assert reps.continuous(x[:, None], labels, "onestep")[0, 0] == pytest.approx(brute_onestep(x))
    # integer weights: the weighted median is the median of the records repeated w times
    m = reps.continuous(x[:, None], labels, "median", weights=iw)[0, 0]
    assert m == pytest.approx(np.median(np.repeat(x, iw.astype(int))))
    assert brute_weighted_median_is_minimiser(x, iw, m)
    for trim in (0.0, 0.1, 0.25, 0.45):
        t = reps.continuous(x[:, None], labels, "trimmed", {"trim": trim}, weights=iw)[0, 0]
        assert t == pytest.approx(brute_trimmed(x, iw, trim))
    # scaling every weight changes nothing
    for agg in ("median", "trimmed", "onestep", "mean"):
        a = reps.continuous(x[:, None], labels, agg, {"trim": 0.2}, weights=iw)[0, 0]
        b = reps.continuous(x[:, None], labels, agg, {"trim": 0.2}, weights=3.5 * iw)[0, 0]
        assert a == pytest.approx(b)


def test_equal_weights_trim_like_r():
    x = np.arange(10.0) ** 2  # floor(0.25·10) = 2 records dropped at each end, as R's mean(trim=)
    labels = np.zeros(10, dtype=np.int64)
    expect = np.mean(np.sort(x)[2:8])
    assert reps.continuous(x[:, None], labels, "trimmed", {"trim": 0.25})[0, 0] == pytest.approx(
        expect
    )
    assert reps.continuous(x[:, None], labels, "trimmed", {"trim": 0.25}, weights=np.full(10, 7.0))[
        0, 0
    ] == pytest.approx(expect)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=12), st.data())
def test_median_category_and_mode(codes, data):
    c = np.array(codes, dtype=np.int64)
    n = len(c)
    w = np.array(data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)), dtype=np.float64)
    labels = np.zeros(n, dtype=np.int64)
    med = reps.median_category(c, labels, w)[0]
    W = w.sum()
    assert med in c
    assert w[c < med].sum() < W / 2 + 1e-9 and w[c > med].sum() <= W / 2 + 1e-9  # a median ...
    lower = [m for m in np.unique(c) if w[c < m].sum() <= W / 2 and w[c > m].sum() <= W / 2]
    assert med == min(lower)  # ... the lower one at a tie
    mode = reps.mode_category(c, labels, w)[0]
    weight = {v: w[c == v].sum() for v in np.unique(c)}
    assert weight[mode] == max(weight.values())
    assert mode == min(v for v in weight if weight[v] == max(weight.values()))  # ties: first level


def test_il_to_published_values_is_at_least_to_means():
    df = microagg.datasets.load("testdata")
    cols = ["expend", "income", "savings"]
    mean = microagg.microaggregate(df, k=5, columns=cols)
    for agg in ("median", "trimmed", "onestep"):
        res = microagg.microaggregate(
            df, k=5, columns=cols, aggregation=agg, trim=0.2 if agg == "trimmed" else None
        )
        np.testing.assert_array_equal(
            res.labels, mean.labels
        )  # the aggregate does not change the groups
        assert res.sse >= mean.sse - 1e-9
        assert res.extras["sse_to_group_means"] == pytest.approx(mean.sse)
        Z = (df[cols] - df[cols].mean()) / df[cols].std(ddof=0)
        Zp = (res.data[cols] - df[cols].mean()) / df[cols].std(ddof=0)
        assert res.sse == pytest.approx(float(((Z - Zp) ** 2).to_numpy().sum()))
        assert "IL is measured to the published values" in res.summary()


def test_bound_converted_to_published_units():
    df = microagg.datasets.load("tarragona").iloc[:12, :3]
    res = microagg.microaggregate(
        df, k=3, method="colgen", distance="mahalanobis", aggregation="median", time_limit=20
    )
    assert res.lower_bound is not None and "whitened_lower_bound" in res.extras
    assert res.lower_bound <= res.sse + 1e-9
    assert res.lower_bound <= res.extras["whitened_lower_bound"] + 1e-9  # scaled by min(λ_min, 1)


def test_weighted_ties_survive_float_sums():
    labels = np.zeros(3, dtype=np.int64)
    # 0.1 + 0.2 != 0.3 in floating point, but the two categories weigh the same
    assert reps.mode_category(np.array([1, 1, 0]), labels, np.array([0.1, 0.2, 0.3]))[0] == 0
    assert reps.mode_category(np.array([0, 0, 1]), labels, np.array([0.1, 0.2, 0.3]))[0] == 0
    # exactly half the weight at the lower category: the lower one is the median category
    assert reps.median_category(np.array([0, 1, 2]), labels, np.array([0.1, 0.2, 0.3]))[0] == 1
    assert (
        reps.median_category(np.array([0, 2]), np.zeros(2, dtype=np.int64), np.array([1.0, 1.0]))[0]
        == 0
    )


# --- the registry: an aggregation declares its parameters and its kernel
# ---------------------------------


def _winsorized_kernel(x, w, starts, params):
    """A trial aggregation's segment kernel: each group's values clipped to the values the
    trimmed mean would keep at its ends (share params[0] of the weight at each end), averaged."""
    out = np.empty(len(starts) - 1)
    for s in range(len(out)):
        v, vw = x[starts[s] : starts[s + 1]], w[starts[s] : starts[s + 1]]
        cut = params[0] * vw.sum() + 1e-12 * vw.sum()
        lo = np.searchsorted(np.cumsum(vw), cut, side="right")
        hi = len(v) - 1 - np.searchsorted(np.cumsum(vw[::-1]), cut, side="right")
        lo, hi = min(lo, len(v) - 1), max(hi, min(lo, len(v) - 1))
        out[s] = np.sum(vw * np.clip(v, v[lo], v[hi])) / vw.sum()
    return out


def _brute_winsorized(x, share):
    x = np.sort(x)
    m = int(np.floor(share * len(x) + 1e-12))
    return np.mean(np.clip(x, x[m], x[len(x) - 1 - m]))


@pytest.fixture
def winsorized(monkeypatch):
    """A winsorised mean registered in one place (this fixture, under a trial name), with its own
    parameter ``fraction`` (no run option of that name); removed after the test."""
    monkeypatch.setattr(reps, "AGGREGATIONS", dict(reps.AGGREGATIONS))
    return reps.register(
        reps.Aggregation(
            "trial_winsorized",
            "winsorised mean",
            "Tukey 1962",
            lambda arguments: f"{arguments['fraction']:g}-winsorised mean",
            kernel=_winsorized_kernel,
            params={
                "fraction": Param(
                    "fraction",
                    "float",
                    0.2,
                    "share clipped at each end",
                    low=0.0,
                    high=0.5,
                    high_open=True,
                )
            },
        )
    )


def _groups_winsorized(res, df, columns, share) -> bool:
    return all(
        res.data[c][res.labels == g].iloc[0]
        == pytest.approx(_brute_winsorized(df[c][res.labels == g].to_numpy(), share))
        for g in np.unique(res.labels)
        for c in columns
    )


def test_a_new_aggregation_registered_in_one_place_runs_end_to_end(winsorized):
    df = microagg.datasets.load("tarragona").head(60)
    columns = list(df.columns[:3])
    res = microagg.microaggregate(
        df,
        k=5,
        columns=columns,
        aggregation="trial_winsorized",
        aggregation_params={"fraction": 0.3},
        audit=False,
    )
    assert res.publication.aggregation == "trial_winsorized"
    assert res.publication.parameters == {"fraction": 0.3}
    assert "0.3-winsorised mean (continuous)" in res.publication.note
    assert _groups_winsorized(res, df, columns, 0.3)
    # IL is measured to the published values (not to group means)
    z = res.scaler.transform(df[columns].to_numpy(dtype=float))
    zp = res.scaler.transform(res.data[columns].to_numpy(dtype=float))
    assert res.sse == pytest.approx(np.sum((z - zp) ** 2))
    default = microagg.microaggregate(
        df, k=5, columns=columns, aggregation="trial_winsorized", audit=False
    )
    assert default.publication.parameters == {"fraction": 0.2}  # the aggregation's own default
    assert _groups_winsorized(default, df, columns, 0.2)


def test_an_aggregation_s_own_parameter_reaches_every_door_as_its_parameter(tmp_path, winsorized):
    """Issue 58: the parameter reaches the API, protect and the command line (the same file)
    through ``aggregation_params`` and its manifest's reproduce command, with no run option of
    its own; given to another aggregation, out of its range or unknown, it is one error."""
    from microagg.cli import main
    from microagg.options.run_options import DECLARED

    assert "fraction" not in DECLARED
    df = microagg.datasets.load("tarragona").head(60)
    columns = list(df.columns[:3])
    src, by_api, by_cli = tmp_path / "in.csv", tmp_path / "api.csv", tmp_path / "cli.csv"
    df.to_csv(src, index=False)
    chosen = {"aggregation": "trial_winsorized", "aggregation_params": {"fraction": 0.3}}
    res = microagg.protect(src, by_api, k=5, columns=columns, **chosen)
    argv = ["protect", str(src), "-o", str(by_cli), "-k", "5", "--columns", ",".join(columns)]
    given = ["--aggregation", "trial_winsorized", "--aggregation-params", "fraction=0.3"]
    assert main([*argv, *given, "-q"]) == 0
    assert by_api.read_bytes() == by_cli.read_bytes()  # every door, one file
    assert res.publication.parameters == {"fraction": 0.3}
    manifest = json.loads(by_cli.with_name("cli.csv.manifest.json").read_text())
    assert "--aggregation-params fraction=0.3" in manifest["command"]  # reproduced with it
    assert manifest["run"]["aggregation"] == {
        "name": "trial_winsorized",
        "parameters": {"fraction": 0.3},
    }
    refused = tmp_path / "refused.csv"  # on the command line: one error line, nothing written
    argv[3] = str(refused)
    assert main([*argv, "--aggregation", "median", "--aggregation-params", "fraction=0.3"]) == 2
    assert not refused.exists()
    for wrong, says in [
        ({"aggregation": "median", "aggregation_params": {"fraction": 0.1}}, "no parameter"),
        ({**chosen, "aggregation_params": {"fraction": 0.5}}, r"fraction must be a number"),
        ({**chosen, "aggregation_params": {"trim": 0.1}}, r"its parameters: fraction"),
        ({**chosen, "trim": 0.1}, r"trim applies to aggregation='trimmed' only"),
    ]:
        with pytest.raises(microagg.errors.ParameterError, match=says):
            microagg.microaggregate(df, k=5, columns=columns, **wrong)


def test_the_trimmed_mean_s_trim_is_its_own_parameter_and_still_a_run_option():
    """``--trim`` (documented, sdcMicro's spelling) and ``aggregation_params`` give the same
    parameter: one file; both with different values is one error."""
    df = microagg.datasets.load("tarragona").head(60)
    columns = list(df.columns[:3])
    by_option = microagg.microaggregate(
        df, k=5, columns=columns, aggregation="trimmed", trim=0.2, audit=False
    )
    own = microagg.microaggregate(
        df,
        k=5,
        columns=columns,
        aggregation="trimmed",
        aggregation_params={"trim": 0.2},
        audit=False,
    )
    assert own.data.equals(by_option.data) and own.publication.parameters == {"trim": 0.2}
    with pytest.raises(microagg.errors.ParameterError, match="differ"):
        microagg.microaggregate(
            df, k=5, aggregation="trimmed", trim=0.1, aggregation_params={"trim": 0.2}
        )


def test_every_aggregation_declares_its_kernel_and_its_parameters():
    from microagg.kernels import location
    from microagg.options import RUN_OPTIONS

    options = {p.name: p for p in RUN_OPTIONS}
    for a in reps.AGGREGATIONS.values():
        assert (a.kernel is None) != (a.compute is None), a.name
        assert a.compute is not None or callable(getattr(location, a.kernel)), a.name
        for name, p in a.declared().items():  # a run option of its name: the same declaration
            if name in options:
                assert (options[name].low, options[name].high) == (p.low, p.high), name
    with pytest.raises(ValueError, match="already registered"):
        reps.register(reps.AGGREGATIONS["mean"])
