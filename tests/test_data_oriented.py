"""The data-oriented methods: kward, genetic, projected, individual-ranking (Domingo-Ferrer &
Mateo-Sanz)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg
from microagg.kernels.genetic_strings import _repair, _string_sse
from microagg.kernels.ward import ward_adjacent_1d, ward_nn_chain
from microagg.labels import check_partition, group_sizes, sse
from microagg.measures import information_loss
from microagg.methods.kward import _end_groups

registry = importlib.import_module("microagg.methods")


def _standardise(X):
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)


@st.composite
def datasets(draw, max_d=8):
    """(X, k): n in [k, 200], d in [1, max_d]; integer values from a small range give ties and
    duplicates."""
    k = draw(st.integers(2, 6))  # k >= 2: one check in the registry (issue 15)
    n = draw(st.integers(k, 200))
    d = draw(st.integers(1, max_d))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["normal", "ties", "skewed"]))
    if kind == "normal":
        X = rng.normal(size=(n, d))
    elif kind == "ties":
        X = rng.integers(-2, 3, size=(n, d)).astype(float)
    else:
        X = rng.lognormal(sigma=1.5, size=(n, d))
    return np.ascontiguousarray(_standardise(X)), k


def _valid(labels, n, k):
    """Relabelled labels after checking every group has k..2k−1 records (minimal k-partition)."""
    labels = check_partition(labels, n, k)
    sizes = group_sizes(labels)
    assert sizes.max() <= max(2 * k - 1, n if n < 2 * k else 0)
    return labels


def _connected(x, labels):
    """Theorem 1: sorted by their smallest value, each group's values end where the next begins."""
    spans = sorted((x[labels == g].min(), x[labels == g].max()) for g in np.unique(labels))
    return all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))


# ---------------------------------------------------------------- valid partitions


@settings(max_examples=40, deadline=None)
@given(
    datasets(),
    st.sampled_from(["md", "pv", "sz", "fpc"]),
    st.sampled_from(["ascending", "descending"]),
    st.sampled_from(["seed", "centroid"]),
    st.booleans(),
)
def test_kward_valid(data, criterion, order, grow, recompute):
    X, k = data
    out = registry.run(
        "kward",
        X,
        k,
        criterion=criterion,
        order=order,
        variable=X.shape[1] - 1,
        grow=grow,
        recompute=recompute,
    )
    _valid(out.labels, len(X), k)


@settings(max_examples=30, deadline=None)
@given(datasets(max_d=1), st.sampled_from(["A", "M"]), st.integers(0, 10))
def test_genetic_valid(data, criterion, seed):
    X, k = data
    out = registry.run("genetic", X, k, seed=seed, criterion=criterion, maxgen=20)
    _valid(out.labels, len(X), k)


@settings(max_examples=30, deadline=None)
@given(
    datasets(),
    st.sampled_from(["pv", "sz", "fpc"]),
    st.sampled_from(["univariate-fixed", "kward", "genetic", "univariate-optimal"]),
)
def test_projected_valid(data, projection, univariate):
    X, k = data
    params = {"maxgen": 10} if univariate == "genetic" else None
    out = registry.run(
        "projected",
        X,
        k,
        seed=1,
        projection=projection,
        univariate=univariate,
        univariate_params=params,
    )
    _valid(out.labels, len(X), k)


@settings(max_examples=25, deadline=None)
@given(datasets(), st.sampled_from(["univariate-fixed", "kward", "genetic", "univariate-optimal"]))
def test_individual_ranking_columns_valid(data, univariate):
    X, k = data
    params = {"maxgen": 10} if univariate == "genetic" else None
    labels = np.asarray(
        registry.run(
            "individual-ranking", X, k, seed=3, univariate=univariate, univariate_params=params
        ).labels
    )
    assert labels.shape == X.shape
    for j in range(X.shape[1]):
        col = _valid(labels[:, j], len(X), k)
        assert _connected(X[:, j], col)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**32 - 1), st.integers(1, 120))
def test_genetic_repair_makes_any_string_valid(k, seed, n):
    """The §4.2.2 corrections turn any bit string into one with k−1..2k−2 zeros between 1s."""
    n = max(n, 2 * k)
    rng = np.random.default_rng(seed)
    xs = np.sort(rng.normal(size=n))
    s = (rng.random(n) < rng.random()).astype(np.uint8)
    _repair(np.ascontiguousarray(xs[:, None]), s, k)
    starts = np.flatnonzero(s)
    assert starts[0] == 0
    sizes = np.diff(np.append(starts, n))
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    labels = np.cumsum(s) - 1
    assert _string_sse(xs, s) == pytest.approx(sse(xs, labels), abs=1e-9)


# ---------------------------------------------------------------- univariate optimality and Theorem
# 1


@settings(max_examples=40, deadline=None)
@given(datasets(max_d=1), st.integers(0, 5))
def test_univariate_heuristics_never_beat_optimal(data, seed):
    X, k = data
    optimum = sse(X, registry.run("univariate-optimal", X, k).labels)
    for name, params in [
        ("kward", {}),
        ("genetic", {"seed": seed}),
        ("genetic", {"seed": seed, "criterion": "M"}),
        ("univariate-fixed", {}),
    ]:
        labels = _valid(registry.run(name, X, k, **params).labels, len(X), k)
        assert sse(X, labels) >= optimum - 1e-9, name


@settings(max_examples=40, deadline=None)
@given(datasets(max_d=1))
def test_kward_1d_groups_are_connected(data):
    X, k = data
    labels = _valid(registry.run("kward", X, k).labels, len(X), k)
    assert _connected(X[:, 0], labels)


@settings(max_examples=30, deadline=None)
@given(datasets(max_d=1), st.integers(0, 5))
def test_genetic_not_worse_than_fixed_size(data, seed):
    """The fixed-size string is in the initial population and the best string is cached (§4.3)."""
    X, k = data
    fixed = sse(X, registry.run("univariate-fixed", X, k).labels)
    assert sse(X, registry.run("genetic", X, k, seed=seed).labels) <= fixed + 1e-9


def test_genetic_reproducible_with_seed():
    rng = np.random.default_rng(5)
    X = _standardise(rng.lognormal(sigma=1.2, size=(300, 1)))
    runs = [registry.run("genetic", X, 3, seed=11, criterion=c) for c in ("A", "A", "M", "M")]
    np.testing.assert_array_equal(runs[0].labels, runs[1].labels)
    np.testing.assert_array_equal(runs[2].labels, runs[3].labels)
    assert runs[0].extras == runs[1].extras


def test_genetic_time_limit_returns_valid_partition():
    X = _standardise(np.random.default_rng(0).normal(size=(2000, 1)))
    out = registry.run("genetic", X, 4, seed=0, time_limit=1e-4, criterion="A")
    _valid(out.labels, len(X), 4)
    assert out.extras["stopped"] in ("time_limit", "converged", "maxgen")


# ---------------------------------------------------------------- Ward merging = greedy constrained
# Ward


def _greedy_kward_pass(X, init, k):
    """Plain Algorithm 1 steps 1–2: the globally cheapest allowed pair merges, O(m³)."""
    groups = [list(np.flatnonzero(init == 0)), list(np.flatnonzero(init == 1))]
    groups += [[i] for i in np.flatnonzero(init < 0)]
    while any(len(g) < k for g in groups):
        best = None
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                na, nb = len(groups[a]), len(groups[b])
                if na >= k and nb >= k:
                    continue
                diff = X[groups[a]].mean(axis=0) - X[groups[b]].mean(axis=0)
                cost = na * nb / (na + nb) * float(diff @ diff)
                if best is None or cost < best[0]:
                    best = (cost, a, b)
        _, a, b = best
        groups[a] += groups.pop(b)
    labels = np.empty(len(X), dtype=np.int64)
    for g, members in enumerate(groups):
        labels[members] = g
    return labels


def _same_partition(a, b):
    return {frozenset(np.flatnonzero(a == g)) for g in np.unique(a)} == {
        frozenset(np.flatnonzero(b == g)) for g in np.unique(b)
    }


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 5), st.integers(0, 2**32 - 1), st.integers(2, 6), st.sampled_from(["md", "fpc"])
)
def test_nn_chain_equals_greedy_ward(k, seed, d, criterion):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2 * k, 45))
    X = np.ascontiguousarray(rng.normal(size=(m, d)) * rng.lognormal(size=d))  # continuous: no ties
    init = _end_groups(X, k, criterion, "ascending", 0)
    assert _same_partition(ward_nn_chain(X, init, k), _greedy_kward_pass(X, init, k))


def _greedy_adjacent_pass(xs, k):
    m = len(xs)
    groups = [list(range(k))] + [[i] for i in range(k, m - k)] + [list(range(m - k, m))]
    while any(len(g) < k for g in groups):
        costs = []
        for a in range(len(groups) - 1):
            na, nb = len(groups[a]), len(groups[a + 1])
            if na >= k and nb >= k:
                costs.append(np.inf)
                continue
            diff = xs[groups[a]].mean() - xs[groups[a + 1]].mean()
            costs.append(na * nb / (na + nb) * diff * diff)
        a = int(np.argmin(costs))
        groups[a] += groups.pop(a + 1)
    return np.concatenate([[g] * len(members) for g, members in enumerate(groups)])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_adjacent_ward_equals_greedy(k, seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2 * k, 60))
    xs = np.sort(rng.lognormal(size=m))
    np.testing.assert_array_equal(ward_adjacent_1d(xs, k), _greedy_adjacent_pass(xs, k))


# ---------------------------------------------------------------- published values (tarragona,
# cheap)


@pytest.fixture(scope="module")
def tarragona():
    return _standardise(microagg.datasets.load("tarragona").to_numpy(dtype=float))


def test_kward_reproduces_table3(tarragona):
    """Uk-W(SZ) 19.16 / 24.31, Uk-W(FPC) 15.87 / 21.58, Uk-W(MD) 21.13 - 21.24 (paper's Table 3, k =
    3 / 4)."""
    X = tarragona
    for k, params, ref in [
        (3, {"criterion": "sz"}, 19.16),
        (4, {"criterion": "sz"}, 24.31),
        (3, {"criterion": "fpc"}, 15.87),
        (4, {"criterion": "fpc"}, 21.58),
        (4, {"criterion": "md", "grow": "centroid"}, 21.13),
        (4, {"criterion": "md", "grow": "centroid", "order": "descending"}, 21.24),
    ]:
        labels = registry.run("kward", X, k, **params).labels
        assert information_loss(X, labels, standardize=False) == pytest.approx(ref, abs=0.006)


def test_univariate_kward_reproduces_table1(tarragona):
    """k-W column of Table 1 (k = 3) for V1, V2, V3, V8: 7.18, .56, .78, .34."""
    for j, ref in [(0, 7.18), (1, 0.56), (2, 0.78), (7, 0.34)]:
        x = tarragona[:, [j]]
        labels = registry.run("kward", x, 3).labels
        assert information_loss(x, labels, standardize=False) == pytest.approx(ref, abs=0.006)


# ---------------------------------------------------------------- API and parameters


def test_pipeline_individual_ranking_warns_and_has_2d_labels():
    df = microagg.datasets.load("tarragona").iloc[:200, :4]
    res = microagg.microaggregate(df, k=3, method="individual-ranking", univariate="kward")
    assert res.labels.shape == (200, 4)
    assert "disclosure risk is higher" in res.summary()
    assert "HIGHER DISCLOSURE RISK" in (registry.get("individual-ranking").func.__doc__ or "")


def test_registry_metadata():
    names = set(microagg.methods())
    assert {"kward", "genetic", "projected", "individual-ranking"} <= names
    assert registry.get("individual-ranking").per_variable
    assert registry.get("genetic").randomized and not registry.get("genetic").multivariate


@pytest.mark.parametrize(
    "name, params",
    [
        ("kward", {"criterion": "xx"}),
        ("kward", {"order": "up"}),
        ("kward", {"criterion": "pv", "variable": 9}),
        ("kward", {"grow": "mean"}),
        ("genetic", {"criterion": "B"}),
        ("genetic", {"pcross": 1.5}),
        ("genetic", {"maxgen": 0}),
        ("projected", {"projection": "md"}),
        ("projected", {"univariate": "individual-ranking"}),
        ("projected", {"univariate": "nope"}),
        ("individual-ranking", {"univariate_params": 3}),
    ],
)
def test_bad_parameters_raise_value_error(name, params):
    X = _standardise(np.random.default_rng(0).normal(size=(30, 1 if name == "genetic" else 3)))
    with pytest.raises(ValueError):
        registry.run(name, X, 3, **params)


def test_kward_time_limit_keeps_a_valid_partition():
    X = _standardise(np.random.default_rng(1).normal(size=(400, 3)))
    out = registry.run("kward", X, 3, time_limit=1e-9)
    labels = check_partition(out.labels, len(X), 3)
    assert out.extras["ward_passes"] == 1 and group_sizes(labels).min() >= 3


@settings(max_examples=30, deadline=None)
@given(datasets(), st.sampled_from(["univariate-fixed", "kward", "univariate-optimal"]))
def test_projected_keeps_the_univariate_cut(data, univariate):
    """Re-cutting ties in record order leaves the SSE along the projection unchanged."""
    from microagg.methods.kward import projection_scores

    X, k = data
    scores = projection_scores(X, "pv", 0)
    along_axis = sse(scores, registry.run(univariate, scores[:, None], k).labels)
    labels = registry.run("projected", X, k, projection="pv", univariate=univariate).labels
    assert sse(scores, labels) == pytest.approx(along_axis, rel=1e-9, abs=1e-9)
