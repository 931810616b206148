"""ICSM local search and the tour methods (Mortazavi & Jalili 2015): mdav-mhm, npn-mhm, icsm."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import microagg
from microagg.kernels.icsm_moves import complex_heuristic, simple_heuristic
from microagg.kernels.segments import optimal_cyclic_labels
from microagg.kernels.tours import npn_tour
from microagg.labels import check_partition, group_sizes, relabel, sse
from microagg.measures import information_loss
from microagg.methods import run
from microagg.methods.icsm import GroupPool, icsm_search, perturb
from microagg.methods.tour import regroup


def _standardise(X):
    std = X.std(axis=0)
    return np.ascontiguousarray((X - X.mean(axis=0)) / np.where(std > 0, std, 1.0))


@st.composite
def datasets(draw, min_k=2, max_k=6, max_n=200, max_d=8):
    """(X, k): n in [k, max_n], d in [1, max_d]; small-integer data give ties and duplicated
    rows."""
    k = draw(st.integers(min_k, max_k))
    n = draw(st.integers(k, max(k, max_n)))
    d = draw(st.integers(1, max_d))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["normal", "ties", "clusters"]))
    if kind == "normal":
        X = rng.normal(size=(n, d))
    elif kind == "ties":
        X = rng.integers(-2, 3, size=(n, d)).astype(float)
    else:
        X = rng.normal(size=(max(1, n // 15), d))[
            rng.integers(0, max(1, n // 15), n)
        ] * 5 + rng.normal(size=(n, d))
    return _standardise(X), k


def _brute_cyclic_cut(Xo, k):
    """Minimum SSE over every cut of the cyclic sequence into consecutive groups of k..2k−1."""
    n = len(Xo)
    best = np.inf
    for r in range(1, n + 1):
        for starts in itertools.combinations(range(n), r):
            lengths = [(starts[(i + 1) % r] - starts[i]) % n or n for i in range(r)]
            if min(lengths) < k or max(lengths) > 2 * k - 1:
                continue
            labels = np.empty(n, dtype=np.int64)
            for gid, (s, length) in enumerate(zip(starts, lengths)):
                labels[[(s + t) % n for t in range(length)]] = gid
            best = min(best, sse(Xo, labels))
    return best


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 12),
    st.integers(1, 3),
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
def test_tour2assignment_equals_brute_force_cyclic_cut(k, n, d, seed, ties):
    if n < k:
        n = k
    rng = np.random.default_rng(seed)
    Xo = rng.integers(-2, 3, size=(n, d)).astype(float) if ties else rng.normal(size=(n, d))
    cost, labels = optimal_cyclic_labels(Xo, k)
    brute = _brute_cyclic_cut(Xo, k)
    if n < k:
        return
    assert cost == pytest.approx(brute, rel=1e-9, abs=1e-9)
    assert sse(Xo, labels) == pytest.approx(cost, rel=1e-9, abs=1e-9)
    sizes = group_sizes(relabel(labels))
    assert sizes.min() >= k and (n < k or sizes.max() <= max(2 * k - 1, 1))


@settings(max_examples=25, deadline=None)
@given(datasets(min_k=2))
def test_every_applied_move_keeps_sizes_and_strictly_lowers_sse(data):
    X, k = data
    trace = []
    out = icsm_search(X, k, trace=trace, complex_tries=2)
    labels = check_partition(out.labels, len(X), k)
    assert trace, "the debug hook recorded nothing"
    if len(X) >= 2 * k:
        hi = 2 * k - 1
        for before, after in zip(trace, trace[1:]):
            assert k <= after["min_size"] and after["max_size"] <= hi
            if after["step"] == "tour":  # Tour2Assignment never increases SSE
                assert after["sse"] <= before["sse"] + 1e-9 * max(1.0, before["sse"])
            else:  # migrate / exchange / cycle: strictly lower, by exactly the computed delta
                assert after["sse"] < before["sse"]
                assert after["sse"] - before["sse"] == pytest.approx(
                    after["delta"], rel=1e-6, abs=1e-8
                )
        assert sse(X, labels) <= trace[0]["sse"] + 1e-9


@settings(max_examples=25, deadline=None)
@given(datasets(min_k=2, max_d=5), st.integers(0, 2**32 - 1))
def test_moves_are_exact_from_random_partitions(data, seed):
    """Simple and complex heuristics from a perturbed start: reported deltas equal the SSE
    change."""
    X, k = data
    if len(X) < 2 * k:
        return
    _, labels = regroup(X, perturb(run("mdav", X, k).labels, 10, np.random.default_rng(seed)), k)
    g = int(labels.max()) + 1
    before = sse(X, labels)
    applied, _ = simple_heuristic(X, labels, g, k, 50, 0.0, 0)
    assert sse(X, labels) - before == pytest.approx(applied[:, 3].sum(), rel=1e-6, abs=1e-8)
    sizes = group_sizes(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    before = sse(X, labels)
    cycle, gain = complex_heuristic(X, labels, g, k, 0.0, g, 0)
    if len(cycle):
        assert gain < 0
        assert sse(X, labels) - before == pytest.approx(gain, rel=1e-6, abs=1e-8)
    sizes = group_sizes(labels)
    assert len(sizes) == g and sizes.min() >= k and sizes.max() <= 2 * k - 1


@settings(max_examples=30, deadline=None)
@given(datasets())
def test_tour_methods_give_valid_partitions(data):
    X, k = data
    n = len(X)
    tour = npn_tour(X)
    assert sorted(tour) == list(range(n))
    for name in ("mdav-mhm", "npn-mhm"):
        labels = check_partition(run(name, X, k).labels, n, k, name)
        if n >= 2 * k:
            assert group_sizes(labels).max() <= 2 * k - 1
    # mdav-mhm regroups MDAV's groups: never worse than MDAV
    assert sse(X, run("mdav-mhm", X, k).labels) <= sse(X, run("mdav", X, k).labels) + 1e-9


def test_icsm_is_deterministic_with_seed_and_restarts_help():
    rng = np.random.default_rng(3)
    X = _standardise(rng.normal(size=(150, 4)))
    a = run("icsm", X, 3, seed=7, restarts=4).labels
    b = run("icsm", X, 3, seed=7, restarts=4).labels
    assert np.array_equal(a, b)
    plain = run("icsm", X, 3).labels
    assert sse(X, a) <= sse(X, plain) + 1e-12


def test_icsm_options_and_anytime():
    rng = np.random.default_rng(0)
    X = _standardise(rng.normal(size=(120, 3)))
    mdav_sse = sse(X, run("mdav", X, 4).labels)
    for params in (
        {"time_limit": 0.0},
        {"max_iterations": 1},
        {"init": "npn-mhm"},
        {"restart_from": "init", "restarts": 2},
        {"scope": "local", "restarts": 2},
        {"restart_complex_tries": 3, "restarts": 1},
    ):
        labels = check_partition(run("icsm", X, 4, **params).labels, len(X), 4)
        if "init" not in params:
            assert sse(X, labels) <= mdav_sse + 1e-9
    for bad in ({"pool_size": 0}, {"init": "icsm"}, {"restart_from": "x"}, {"init": "nope"}):
        with pytest.raises(ValueError):
            run("icsm", X, 4, **bad)
    with pytest.raises(ValueError):
        run("npn-mhm", X[:2], 3)


def test_offered_partitions_are_polished_between_restarts():
    """offers (auto's column generation beside): asked before each restart; an offered partition
    is polished by the local search and the restarts go on from the best, so the result is no
    worse than a local optimum from it; malformed offers are ignored, a non-callable refused."""
    rng = np.random.default_rng(5)
    X = _standardise(rng.normal(size=(150, 3)))
    offered = run("tsp-mhm", X, 3).labels
    polished = run("icsm", X, 3, init=offered).labels  # the local search from it, alone
    asked = []

    def offers():
        asked.append(1)
        return [offered, np.zeros(7, dtype=int)] if len(asked) == 1 else []

    out = run("icsm", X, 3, seed=1, restarts=5, offers=offers)
    check_partition(out.labels, len(X), 3)
    assert len(asked) == 5 and out.extras["offers_polished"] == 1
    assert sse(X, out.labels) <= sse(X, polished) * (1 + 1e-12)
    with pytest.raises(microagg.ParameterError, match="callable"):
        run("icsm", X, 3, restarts=1, offers=[offered])


def test_reference_values_on_bundled_data():
    df = microagg.datasets.load("tarragona")
    X = _standardise(df.to_numpy(float))
    assert (
        information_loss(X, run("mdav-mhm", X, 5).labels, standardize=False) < 22.46
    )  # below MDAV
    assert (
        information_loss(X, run("icsm", X, 5).labels, standardize=False) <= 20.69
    )  # paper Table 2


@settings(max_examples=15, deadline=None)
@given(datasets(min_k=2, max_k=5, max_n=80, max_d=4), st.integers(0, 2**32 - 1))
@example(
    data=(
        np.array(
            [
                [1.10582656, 1.23769204, 0.91784128],
                [-1.10650656, -0.9746751, -1.40523496],
                [1.13357006, 0.85194875, 0.36347021],
                [1.31787851, 0.90326645, 0.99169327],
                [1.08157972, 1.12104583, 0.90891822],
                [1.36449178, 1.25147578, 1.42443393],
                [1.01553494, 0.85160865, 0.7972834],
                [-1.37793237, -0.50930637, -0.49816477],
                [1.25310175, 0.85164743, 0.35466863],
                [-0.92075614, -0.80319173, -0.16507042],
                [-0.79174585, -1.09729106, -0.75434249],
                [0.86497432, 0.7623847, 0.62068476],
                [-0.60410633, -1.05845224, -1.12472464],
                [0.21859451, 1.03544687, 1.50183564],
                [-1.36046034, -1.17234933, -0.17553289],
                [-0.32579206, -1.06376498, -1.33818815],
                [-1.0945098, -1.11500414, -0.88529222],
                [0.96667068, 1.03104297, 1.06803095],
                [-0.47257668, -1.12775125, -1.4109943],
                [-0.97948607, -0.89879232, -0.46545278],
                [-0.83817431, -0.60159525, -2.10591732],
                [-1.09905438, -0.13510246, -0.98067591],
                [1.06757021, 1.18908775, 0.3932416],
                [-0.51547731, -0.93638172, -0.32826517],
                [-1.83821831, -1.31055067, -0.27121153],
                [0.5300388, 1.08615281, 0.96837441],
                [1.26742527, 1.05059594, 1.29576783],
                [-0.99886623, -1.08718511, -0.83720268],
                [-0.31126756, -1.04548618, -1.17015479],
                [0.91056857, 0.97246439, 0.9337012],
                [0.94672988, 1.01400637, 1.66456728],
                [0.65716758, 1.12574191, 0.48868835],
                [0.58998549, 0.709461, 0.95715728],
                [-1.34641571, -1.14083607, -0.7515252],
                [-0.31036262, -0.96735365, -0.98240802],
            ]
        ),
        2,
    ),
    seed=2026590,
)  # highspy returned the warm start's x with the optimum's objective (master.solve_integral)
def test_group_pool_recombination_is_a_valid_partition_never_worse_than_its_pooled_ones(data, seed):
    X, k = data
    rng = np.random.default_rng(seed)
    pool = GroupPool(X, window=np.inf)
    start = run("mdav", X, k).labels
    partitions = [start] + [perturb(start, max(1, len(X) // 4), rng, X) for _ in range(3)]
    for lab in partitions:
        pool.offer(lab, sse(X, lab), 0.0)
    value, labels = pool.recombine(start, 30.0)
    labels = check_partition(labels, len(X), k)
    assert value == pytest.approx(sse(X, labels), rel=1e-9, abs=1e-9)
    assert value <= min(sse(X, p) for p in partitions) + 1e-9
    # every group of the result is a pooled group
    for g in np.unique(labels):
        assert np.flatnonzero(labels == g).tobytes() in pool.groups


def test_group_pool_keeps_only_local_optima_within_the_window():
    X = _standardise(np.random.default_rng(1).normal(size=(40, 2)))
    lab = run("mdav", X, 4).labels
    pool = GroupPool(X, window=0.01)
    pool.offer(lab, 102.0, 100.0)  # 2 % above the best: not pooled
    assert len(pool) == 0
    pool.offer(lab, 100.5, 100.0)
    assert len(pool) == len(np.unique(lab))


def test_icsm_recombine_restarts_never_worse_than_the_start():
    X = _standardise(np.random.default_rng(5).normal(size=(150, 3)))
    start = run("mdav", X, 4).labels
    res = run(
        "icsm",
        X,
        4,
        seed=2,
        init=start,
        restarts=30,
        scope="local",
        recombine=1e-9,
        pool_window=0.05,
    )
    labels = check_partition(res.labels, len(X), 4)
    assert sse(X, labels) <= sse(X, start) + 1e-9
    assert res.extras["recombined"]["mips"] >= 1


def test_passes_out_of_budget_keep_a_valid_partition():
    """A pass out of cycles (budget 1) stops at once: the simple scan applies what it found, the
    cyclic search applies no cycle or a complete one; the partition stays one of k..2k−1 groups."""
    X = np.random.default_rng(9).normal(size=(300, 3))
    labels = run("mdav", X, 3).labels.copy()
    g = int(labels.max()) + 1
    before = sse(X, labels)
    applied, _ = simple_heuristic(X, labels, g, 3, 50, 0.0, 1)
    assert sse(X, labels) <= before + 1e-9
    cycle, gain = complex_heuristic(X, labels, g, 3, 0.0, g, 1)
    assert len(cycle) == 0 or gain < 0
    sizes = np.bincount(labels, minlength=g)
    assert sizes.min() >= 3 and sizes.max() <= 5
