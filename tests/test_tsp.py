"""MF-TSP and TSP-MHM: valid partitions, determinism, path kernels, neighbourhood counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg import datasets, microaggregate
from microagg import labels as label_stats
from microagg.kernels.tsp_heuristics import build_paths, nearest_neighbour_path, path_length
from microagg.methods import run
from microagg.methods.tsp import candidate_neighbours, greedy_groups

METHODS = ["mf-tsp", "tsp-mhm"]


@st.composite
def data_and_k(draw):
    """Random data with duplicated rows and tied coordinates (values on a coarse grid)."""
    k = draw(st.integers(2, 6))  # k >= 2: one check in the registry (issue 15)
    n = draw(st.integers(k, 120))
    d = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = rng.integers(-3, 4, size=(n, d)).astype(np.float64)
    dup = rng.random(n) < 0.3  # some rows copy an earlier row exactly
    for i in np.flatnonzero(dup):
        X[i] = X[rng.integers(0, i + 1)]
    return np.ascontiguousarray(X), k


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=40, deadline=None)
@given(case=data_and_k())
def test_valid_partition_with_ties_and_duplicates(method, case):
    X, k = case
    out = run(method, X, k, seed=1)
    labels = label_stats.check_partition(out.labels, len(X), k, method)
    sizes = label_stats.group_sizes(labels)
    assert sizes.max() <= max(2 * k - 1, 1)  # both keep groups within k..2k−1
    assert sizes.sum() == len(X)


@pytest.mark.parametrize("method", METHODS)
def test_deterministic_with_seed(method):
    X = np.random.default_rng(3).normal(size=(150, 4))
    a = run(method, X, 3, seed=7).labels
    b = run(method, X, 3, seed=7).labels
    np.testing.assert_array_equal(a, b)


def test_mf_tsp_subset_of_paths_is_seeded():
    X = np.random.default_rng(4).normal(size=(120, 3))
    a = run("mf-tsp", X, 4, seed=2, n_paths=30)
    b = run("mf-tsp", X, 4, seed=2, n_paths=30)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.extras["paths"] == 30
    label_stats.check_partition(a.labels, len(X), 4)


def test_paths_are_permutations_from_their_start_and_no_longer_than_nearest_neighbour():
    X = np.random.default_rng(5).normal(size=(90, 5))
    neigh = candidate_neighbours(X, 8)
    n = len(X)
    unused = np.zeros((1, 1), dtype=np.int32)
    for closed in (False, True):
        for s in (0, 17, 89):
            path = np.empty(n, dtype=np.int64)
            build_paths(X, neigh, 8, 8, np.array([s]), closed, 0, unused, path)
            assert path[0] == s
            assert sorted(path) == list(range(n))
            nn = np.empty(n, dtype=np.int64)
            w = [np.empty(n, dtype=np.int64) for _ in range(3)]
            nearest_neighbour_path(X, neigh, s, nn, *w)
            assert path_length(X, path, closed) <= path_length(X, nn, closed) + 1e-9


def test_neighbourhood_counts_match_a_brute_force_recount():
    X = np.random.default_rng(6).normal(size=(40, 3))
    n, k = len(X), 4
    neigh = candidate_neighbours(X, 6)
    starts = np.arange(n)
    N = np.zeros((n, n), dtype=np.int32)
    path = np.empty(n, dtype=np.int64)
    assert build_paths(X, neigh, 6, 6, starts, False, k, N, path) == n
    # brute force: keep every path, count pairs within k−1 positions
    brute = np.zeros((n, n), dtype=np.int64)
    unused = np.zeros((1, 1), dtype=np.int32)
    for s in starts:
        build_paths(X, neigh, 6, 6, np.array([s]), False, 0, unused, path)
        place = np.empty(n, dtype=np.int64)
        place[path] = np.arange(n)
        gap = np.abs(place[:, None] - place[None, :])
        brute += (gap >= 1) & (gap <= k - 1)
    np.testing.assert_array_equal(N, brute)


def test_greedy_on_the_papers_toy_example():
    """Table I records with Table V's counts: the first group is the Com8/Com10/Com11 cluster."""
    T = np.array(
        [
            [790, 55],
            [710, 44],
            [730, 32],
            [810, 17],
            [950, 3],
            [510, 25],
            [400, 45],
            [330, 50],
            [510, 5],
            [760, 52],
            [50, 12],
        ],
        dtype=np.float64,
    )
    X = np.ascontiguousarray((T - T.mean(0)) / T.std(0))
    N = np.array(
        [
            [0, 11, 11, 8, 11, 0, 1, 0, 1, 1, 1],
            [11, 0, 10, 2, 10, 3, 2, 0, 4, 1, 1],
            [11, 10, 0, 9, 3, 5, 1, 1, 1, 0, 3],
            [8, 2, 9, 0, 3, 8, 4, 1, 4, 2, 3],
            [11, 10, 3, 3, 0, 6, 2, 1, 6, 1, 2],
            [0, 3, 5, 8, 6, 0, 7, 4, 7, 1, 3],
            [1, 2, 1, 4, 2, 7, 0, 6, 5, 10, 9],
            [0, 0, 1, 1, 1, 4, 6, 0, 10, 11, 8],
            [1, 4, 1, 4, 6, 7, 5, 10, 0, 6, 3],
            [1, 1, 0, 2, 1, 1, 10, 11, 6, 0, 11],
            [1, 1, 3, 3, 2, 3, 9, 8, 3, 11, 0],
        ],
        dtype=np.int32,
    )
    labels, g, g_literal = greedy_groups(X, N, 3)
    assert (g, g_literal) == (3, 2)  # 11 -> 8 -> 5 (line 11 stops here) -> 2 leftovers
    assert set(np.flatnonzero(labels == 0)) == {7, 9, 10}  # Com8, Com10, Com11 (Table VI)
    assert (labels < 0).sum() == 2


def test_census_reference_values():
    """The tightest cells: mf-tsp k=3 within 5% of Table IX's 6.00; tsp-mhm k=10 below MDAV's
    14.16."""
    df = datasets.load("census")
    assert microaggregate(df, k=3, method="mf-tsp", seed=0).information_loss <= 1.05 * 6.00
    assert microaggregate(df, k=10, method="tsp-mhm", seed=0).information_loss < 14.16


def test_time_limit_stops_adding_paths_but_keeps_a_valid_partition():
    X = np.random.default_rng(8).normal(size=(100, 3))
    out = run("mf-tsp", X, 3, seed=0, time_limit=0.0)
    assert 1 <= out.extras["paths"] <= 16  # one batch at most, its paths cut by the cycle counter
    label_stats.check_partition(out.labels, len(X), 3)
    out = run("tsp-mhm", X, 3, seed=0, time_limit=0.0)
    assert out.extras["tours"] == 1
    label_stats.check_partition(out.labels, len(X), 3)


def test_bad_parameters_raise_value_error():
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError):
        run("mf-tsp", X, 3, extension="diagonal")
    with pytest.raises(ValueError):
        run("mf-tsp", X, 3, n_paths=0)
    with pytest.raises(ValueError):
        run("tsp-mhm", X, 3, n_starts=0)
    with pytest.raises(ValueError):
        run("tsp-mhm", X, 3, smoothing=0)


def test_tsp_mhm_refuses_a_first_tour_its_probe_says_cannot_fit(monkeypatch):
    """From PROBE_MIN_N records a time-limited tsp-mhm times its first tour on two samples and
    refuses (BudgetError, before any tour) when the extrapolation does not fit the time left; with
    room, the probe changes nothing in the result (its samples have their own generator)."""
    from microagg import methods
    from microagg.deadline import Deadline
    from microagg.methods import BudgetError, tsp

    X = np.random.default_rng(2).normal(size=(2000, 4))
    free = methods.run("tsp-mhm", X, 3, seed=1, n_starts=2).labels
    monkeypatch.setattr(tsp, "PROBE_MIN_N", 500)
    monkeypatch.setattr(tsp, "PROBE_RECORDS", 400)
    assert np.array_equal(
        methods.run("tsp-mhm", X, 3, seed=1, n_starts=2, time_limit=3600).labels, free
    )
    tsp._refuse_if_first_tour_cannot_fit(X, 3, None, 10, Deadline(None))  # unbounded: no probe
    monkeypatch.setattr(methods, "TOLERATED_OVERSHOOT", 0.0)
    with pytest.raises(BudgetError, match="its first tour needs about"):
        tsp._refuse_if_first_tour_cannot_fit(X, 3, None, 10, Deadline(1e-6))


def test_grouping_past_the_time_limit_goes_along_the_last_path():
    """A clock already out (limit 0, expired on any machine): the greedy grouping gives way to
    groups of k along the given path, the last taking the remainder, and the run is marked cut."""
    from microagg.deadline import Deadline

    X = np.random.default_rng(3).normal(size=(50, 2))
    path = np.random.default_rng(4).permutation(50)
    deadline = Deadline(0.0)
    counts = np.zeros((50, 50), dtype=np.int32)
    labels, g, g_literal = greedy_groups(X, counts, 3, deadline=deadline, order=path)
    assert (g, g_literal) == (16, 16) and deadline.time_cut
    np.testing.assert_array_equal(labels[path], np.minimum(np.arange(50) // 3, 15))
