"""The neighbourhood local search (lsearch): validity, exact bookkeeping, determinism, deadline."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import brute_force_optimum
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg.labels import group_sizes, relabel, sse
from microagg.methods import run
from microagg.methods.lsearch import neighbourhood_search


def _standardise(X):
    std = X.std(axis=0)
    return np.ascontiguousarray((X - X.mean(axis=0)) / np.where(std > 0, std, 1.0))


@st.composite
def datasets(draw, max_n=150):
    """(X, k): clustered, Gaussian or small-integer data (ties and duplicated rows)."""
    k = draw(st.integers(2, 5))
    n = draw(st.integers(2 * k, max(2 * k, max_n)))
    d = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["normal", "ties", "clusters"]))
    if kind == "normal":
        X = rng.normal(size=(n, d))
    elif kind == "ties":
        X = rng.integers(-2, 3, size=(n, d)).astype(float)
    else:
        c = max(1, n // 12)
        X = rng.normal(size=(c, d))[rng.integers(0, c, n)] * 5 + rng.normal(size=(n, d))
    return _standardise(X), k


def _check_sizes(labels, k):
    sizes = group_sizes(relabel(labels))
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1


@settings(max_examples=40, deadline=None)
@given(datasets())
def test_valid_partition_never_worse_than_mdav(data):
    X, k = data
    start = run("mdav", X, k).labels
    out = run("lsearch", X, k, seed=1)
    _check_sizes(out.labels, k)
    assert sse(X, out.labels) <= sse(X, start) + 1e-9 * max(1.0, sse(X, start))
    assert out.extras["sse"] == pytest.approx(sse(X, out.labels), rel=1e-9, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(datasets(max_n=120))
def test_every_move_delta_is_exact(data):
    """Replays the trace: each move's delta equals the recomputed SSE change, and every group is
    within k..2k−1 between moves (a dissolve is checked once all of its records have left)."""
    X, k = data
    start = run("mdav", X, k).labels
    trace = []
    labels_out, stats = neighbourhood_search(X, k, start, seed=3, trace=trace)
    scale = max(1.0, sse(X, start))
    labels = None
    current = None
    for step in trace:
        kind = step["kind"]
        if kind in ("round", "regroup"):
            if kind == "round" and labels is not None:  # the search renumbers groups between rounds
                assert np.array_equal(relabel(labels), relabel(step["labels"]))
            before = current
            labels = step["labels"].copy()
            current = sse(X, labels)
            if kind == "regroup":
                assert current - before == pytest.approx(step["delta"], abs=1e-9 * scale)
                assert step["delta"] < 0
            _check_sizes(labels, k)
            continue
        a, b = step["a"], step["b"]
        if kind == "exchange":
            labels[a], labels[b] = labels[b], labels[a]
        else:
            labels[a] = b
        after = sse(X, relabel(labels))  # a dissolve leaves an empty group id behind
        assert after - current == pytest.approx(step["delta"], abs=1e-9 * scale)
        if kind != "dissolve":
            assert step["delta"] < 0
            _check_sizes(labels, k)
        current = after
    assert np.array_equal(relabel(labels), labels_out)
    assert current == pytest.approx(stats["sse"], abs=1e-9 * scale)
    _check_sizes(labels_out, k)


def test_moves_happen_and_lower_sse():
    rng = np.random.default_rng(0)
    X = _standardise(
        rng.normal(size=(40, 3))[rng.integers(0, 40, 600)] * 4 + rng.normal(size=(600, 3))
    )
    start = run("mdav", X, 3).labels
    trace = []
    labels, stats = neighbourhood_search(X, 3, start, seed=0, trace=trace)
    kinds = {s["kind"] for s in trace}
    assert {"migrate", "exchange", "regroup"} <= kinds
    assert sse(X, labels) < 0.95 * sse(X, start)


def test_same_seed_same_labels():
    rng = np.random.default_rng(5)
    X = _standardise(
        np.column_stack([rng.lognormal(size=3000), rng.integers(0, 6, 3000), rng.normal(size=3000)])
    )
    a = run("lsearch", X, 3, seed=7).labels
    b = run("lsearch", X, 3, seed=7).labels
    assert np.array_equal(a, b)


def test_tiny_deadline_returns_valid_partition():
    rng = np.random.default_rng(2)
    X = _standardise(rng.normal(size=(5000, 4)))
    start = run("mdav", X, 3).labels
    out = run("lsearch", X, 3, seed=0, time_limit=1e-6, init=start)
    _check_sizes(out.labels, 3)
    assert out.extras["stopped"] == "deadline"
    assert sse(X, out.labels) <= sse(X, start)
    out = run(
        "lsearch", X, 3, seed=0, time_limit=1e-3
    )  # MDAV runs to the end, the search stops at once
    _check_sizes(out.labels, 3)


def test_oversized_start_groups_are_split():
    rng = np.random.default_rng(3)
    X = _standardise(rng.normal(size=(40, 2)))
    start = np.repeat(np.arange(4), 10)  # groups of 10 > 2k − 1
    out = run("lsearch", X, 3, seed=0, init=start)
    _check_sizes(out.labels, 3)
    assert sse(X, out.labels) <= sse(X, start)


@pytest.mark.parametrize("seed", range(6))
def test_never_below_brute_force_optimum(seed):
    rng = np.random.default_rng(seed)
    n, k = (8, 2) if seed % 2 else (9, 3)
    X = _standardise(rng.normal(size=(n, 2)))
    out = run("lsearch", X, k, seed=seed)
    assert sse(X, out.labels) >= brute_force_optimum(X, k) - 1e-9


def test_finds_the_optimum_on_separated_clusters():
    # three tight clusters of 3 records far apart, shuffled: the optimum is the clusters
    rng = np.random.default_rng(4)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    X = np.repeat(centres, 3, axis=0) + 0.01 * rng.normal(size=(9, 2))
    X = _standardise(X[rng.permutation(9)])
    out = run("lsearch", X, 3, seed=0)
    assert sse(X, out.labels) == pytest.approx(brute_force_optimum(X, 3), rel=1e-12, abs=1e-12)


def test_bad_init_rejected():
    from microagg.errors import ParameterError

    with pytest.raises(ParameterError):
        run("lsearch", np.zeros((10, 2)), 2, init="lsearch")
    with pytest.raises(ParameterError):
        run(
            "lsearch", np.random.default_rng(0).normal(size=(10, 2)), 2, init=np.zeros(3, dtype=int)
        )


def test_partitioned_mode_searches_across_blocks(monkeypatch):
    import microagg.blocks as scale

    rng = np.random.default_rng(6)
    X = _standardise(
        rng.normal(size=(30, 3))[rng.integers(0, 30, 2000)] * 3 + rng.normal(size=(2000, 3))
    )
    with_search = scale.partitioned_labels(
        X, 3, "mdav", block_size=300, scheduler="synchronous", seed=0
    )
    monkeypatch.setattr(scale, "_search_across_blocks", lambda Z, labels, *args: labels)
    blocks_only = scale.partitioned_labels(
        X, 3, "mdav", block_size=300, scheduler="synchronous", seed=0
    )
    _check_sizes(with_search, 3)
    assert sse(X, with_search) < sse(X, blocks_only)


def test_lsearch_stops_while_building_its_neighbour_graph(monkeypatch):
    """The record k-NN graph is built in slices with the deadline checked between them: a deadline
    that ends during it returns the start partition, valid, saying it stopped at the deadline; the
    graph built in slices is the one built at once."""
    import microagg.methods.lsearch as ls
    from microagg.kernels.mdav_labels import mdav_labels

    X = np.random.default_rng(4).normal(size=(900, 3))
    whole = ls._record_knn(X, ls.RECORD_NEIGHBOURS)
    monkeypatch.setattr(ls, "KNN_SLICE", 100)
    assert np.array_equal(ls._record_knn(X, ls.RECORD_NEIGHBOURS), whole)

    class EndsAfter:  # a deadline that expires at its third check
        def __init__(self):
            self.checks = 0

        def expired(self):
            self.checks += 1
            return self.checks > 2

    start = mdav_labels(X, 3)
    labels, stats = ls.neighbourhood_search(X, 3, start, deadline=EndsAfter())
    assert stats["stopped"] == "deadline" and stats["rounds"] == 0

    def first_member(lab):  # each record's group named by its first record: the partition itself
        first = {}
        return np.array([first.setdefault(g, i) for i, g in enumerate(lab)])

    assert np.array_equal(first_member(labels), first_member(start))
