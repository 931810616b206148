"""epsilon-differential privacy by microaggregation (microagg.privacy.dp): on neighbouring data
sets (one record changed) the insensitive clustering pairs up cluster by cluster with at most one
record changed in each pair and the centroids move by at most the declared sensitivity; the
published values' spread over many seeds is the declared Laplace scale; the release is
reproducible from its seed and stated in the manifest and the summary."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import microagg
from microagg.cli import main
from microagg.errors import ParameterError
from microagg.privacy.dp import insensitive_clusters, ranked_clusters, sensitivity


def _neighbours(seed: int, n: int, d: int):
    """A data set in [0, 10]^d (integers: ties) and its neighbour, one record changed."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 11, (n, d)).astype(float)
    Y = X.copy()
    i = int(rng.integers(n))
    Y[i] = rng.integers(0, 11, d)
    return X, Y, i


def _centroids(X, labels):
    G = labels.max() + 1
    return np.stack([X[labels == g].mean(axis=0) for g in range(G)])


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 60), st.integers(1, 4), st.integers(2, 7))
def test_insensitive_clusters_pair_up_with_one_record_changed(seed, n, d, k):
    X, Y, i = _neighbours(seed, n, d)
    lo, hi = np.zeros(d), np.full(d, 10.0)
    a, b = insensitive_clusters(X, lo, hi, k), insensitive_clusters(Y, lo, hi, k)
    assert a.max() == b.max()  # the same number of clusters, of the same sizes
    assert np.array_equal(np.bincount(a), np.bincount(b))
    for g in range(a.max() + 1):
        A, B = set(np.flatnonzero(a == g)), set(np.flatnonzero(b == g))
        swapped = len(A - B)
        assert swapped == len(B - A) <= 1
        assert swapped + (i in A and i in B) <= 1  # one record changed in the pair, at most
    ranges = hi - lo
    moved = np.abs(_centroids(X, a) - _centroids(Y, b))
    assert (moved <= ranges / min(k, n) + 1e-9).all()  # each cluster's centroid
    assert (moved.sum(axis=0) <= sensitivity("insensitive", n, k, ranges) + 1e-9).all()


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 60), st.integers(2, 7))
def test_individual_ranking_centroids_move_by_at_most_the_sensitivity(seed, n, k):
    X, Y, _ = _neighbours(seed, n, 1)
    a, b = ranked_clusters(X[:, 0], k), ranked_clusters(Y[:, 0], k)
    moved = np.abs(_centroids(X, a) - _centroids(Y, b)).sum()
    assert moved <= sensitivity("individual-ranking", n, k, [10.0])[0] + 1e-9


def _records(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame(
        {
            "id": [f"r{i:03d}" for i in range(n)],
            "age": rng.integers(18, 90, n).astype(float),
            "income": rng.normal(3000, 800, n).round(2),
            "region": rng.choice(["north", "south"], n),
        }
    )


BOUNDS = {"age": (0.0, 100.0), "income": (0.0, 6000.0)}


@pytest.mark.parametrize(
    "method, mechanism", [("mdav", "insensitive"), ("individual-ranking", "individual-ranking")]
)
def test_the_spread_over_seeds_is_the_declared_laplace_scale(method, mechanism):
    df = _records()
    X = np.clip(df[["age", "income"]].to_numpy(float), [0, 0], [100, 6000])
    noise = {"age": [], "income": []}
    declared = None
    for seed in range(60):
        res = microagg.microaggregate(
            df,
            5,
            method=method,
            columns=["age", "income"],
            seed=seed,
            epsilon=1.0,
            dp_mechanism=mechanism,
            bounds=BOUNDS,
            audit=False,
        )
        (model,) = res.method_facts["privacy_models"]
        declared = model["laplace_scale"]
        labels = res.labels if res.labels.ndim == 2 else np.repeat(res.labels[:, None], 2, 1)
        for a, c in enumerate(["age", "income"]):
            lab = labels[:, a]
            first = np.unique(lab, return_index=True)[1]  # one value per cluster
            means = np.bincount(lab, weights=X[:, a]) / np.bincount(lab)
            noise[c].extend(res.data[c].to_numpy()[first] - means[lab[first]])
    for c, drawn in noise.items():
        drawn = np.asarray(drawn)
        assert stats.kstest(drawn, "laplace", args=(0, declared[c])).pvalue > 1e-3
        assert np.mean(np.abs(drawn)) == pytest.approx(declared[c], rel=0.15)


def test_the_release_is_reproducible_and_stated(tmp_path):
    src, out, again = tmp_path / "in.csv", tmp_path / "out.csv", tmp_path / "again.csv"
    df = _records()
    df.to_csv(src, index=False)
    argv = ["protect", str(src), "-k", "5", "--columns", "age,income", "--epsilon", "2"]
    bounds = ["--bounds", "age=0:100,income=0:6000", "--seed", "7", "-q"]
    assert main([*argv[:2], "-o", str(out), *argv[2:], *bounds]) == 0
    assert main([*argv[:2], "-o", str(again), *argv[2:], *bounds]) == 0
    assert out.read_bytes() == again.read_bytes()
    doc = json.loads(out.with_name("out.csv.manifest.json").read_text())
    (model,) = doc["privacy_models"]
    assert model["epsilon"] == 2.0 and model["mechanism"] == "insensitive"
    assert model["bounds"] == {"age": [0.0, 100.0], "income": [0.0, 6000.0]}
    n, k = len(df), 5
    assert model["sensitivity"]["age"] == pytest.approx((n // k) * 100.0 / k)
    assert model["laplace_scale"]["age"] == pytest.approx(model["sensitivity"]["age"] * 2 / 2.0)
    assert "--epsilon 2" in doc["command"] and "--bounds age=0:100,income=0:6000" in doc["command"]
    back = pd.read_csv(out)
    assert back[["id", "region"]].equals(df[["id", "region"]])  # the rest unchanged


def test_the_summary_says_what_holds_and_what_does_not(capsys, tmp_path):
    src = tmp_path / "in.csv"
    _records().to_csv(src, index=False)
    argv = ["protect", str(src), "-o", str(tmp_path / "o.csv"), "-k", "5"]
    assert main([*argv, "--columns", "age,income", "--epsilon", "1"]) == 0
    out = capsys.readouterr().out
    assert "1-differential privacy" in out and "not covered" in out
    assert "read from the data" in out  # no bounds declared: said, with what it costs


def test_bad_combinations_are_one_error_before_any_work(tmp_path):
    missing = tmp_path / "missing.csv"
    with pytest.raises(ParameterError, match="bounds"):
        microagg.microaggregate(missing, 3, bounds={"age": (0, 1)})
    with pytest.raises(ParameterError, match="individual-ranking"):
        microagg.microaggregate(missing, 3, epsilon=1.0, dp_mechanism="individual-ranking")
    with pytest.raises(ParameterError, match="bounds"):
        microagg.microaggregate(missing, 3, epsilon=1.0, bounds={"age": (2, 1)})


def test_the_release_is_reproduced_from_its_manifest(tmp_path, capsys):
    src, first, again = tmp_path / "in.csv", tmp_path / "first.csv", tmp_path / "again.csv"
    _records().to_csv(src, index=False)
    argv = ["protect", str(src), "-k", "5", "--columns", "age,income", "--epsilon", "0.5"]
    assert main([*argv[:2], "-o", str(first), *argv[2:], "--seed", "4", "-q"]) == 0
    manifest = f"{first}.manifest.json"
    assert main(["protect", str(src), "-o", str(again), "--from-manifest", manifest, "-q"]) == 0
    assert again.read_bytes() == first.read_bytes()


def test_an_explore_runs_partition_publishes_the_same_release():
    """The app and --from-explore publish an explore run by its labels: the insensitive groups
    do not depend on them, so the release is the run's."""
    df = _records()
    options = dict(columns=["age", "income"], epsilon=1.0, bounds=BOUNDS, seed=2)
    res = microagg.microaggregate(df, 5, **options)
    again = microagg.microaggregate(df, 5, labels=res.labels, **options)
    assert again.data.equals(res.data)
