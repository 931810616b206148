"""Foundation: reference values, partition core, univariate methods, the pipeline's guarantees."""

import numpy as np
import pandas as pd
import pytest
from conftest import brute_force_optimum
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg
from microagg import methods, partition
from microagg.kernels.segments import optimal_cyclic_labels, optimal_path_labels
from microagg.preprocess import InputError

REFERENCE_MDAV_IL = {  # DESIGN.md; checked against the ICSM paper's Table 2 and other literature
    ("census", 3): 5.69, ("census", 4): 7.49, ("census", 5): 9.09, ("census", 10): 14.16,
    ("tarragona", 3): 16.93, ("tarragona", 4): 19.55, ("tarragona", 5): 22.46, ("tarragona", 10): 33.19,
    ("eia", 3): 0.48, ("eia", 4): 0.67, ("eia", 5): 1.67, ("eia", 10): 3.84,
}


@pytest.mark.parametrize("name,k", sorted(REFERENCE_MDAV_IL))
def test_mdav_reproduces_reference_information_loss(name, k):
    res = microagg.microaggregate(microagg.datasets.load(name), k=k, method="mdav")
    assert round(res.information_loss, 2) == REFERENCE_MDAV_IL[(name, k)]
    assert res.group_sizes.min() >= k


def test_bundled_datasets_shapes():
    shapes = {"census": (1080, 13), "tarragona": (834, 13), "eia": (4092, 11)}
    for name, shape in shapes.items():
        df = microagg.datasets.load(name)
        assert df.shape == shape
        assert df.notna().all().all()


# --- partition core -------------------------------------------------------------------------

@given(st.integers(0, 10_000), st.integers(2, 5), st.integers(1, 6))
@settings(max_examples=30, deadline=None)
def test_sse_plus_between_groups_equals_sst(seed, k, d):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, d))
    labels = rng.integers(0, 6, size=40)
    labels = partition.relabel(labels)
    C = partition.centroids(X, labels)
    sizes = partition.group_sizes(labels)
    between = float(np.sum(sizes[:, None] * (C - X.mean(axis=0)) ** 2))
    assert np.isclose(partition.sse(X, labels) + between, partition.sst(X))


def test_check_partition_rejects_small_groups_and_unassigned():
    with pytest.raises(partition.InvalidPartitionError):
        partition.check_partition(np.array([0, 0, 1]), 3, 2)
    with pytest.raises(partition.InvalidPartitionError):
        partition.check_partition(np.array([0, 0, -1]), 3, 2)
    with pytest.raises(partition.InvalidPartitionError):
        partition.check_partition(np.array([0, 0]), 3, 2)
    np.testing.assert_array_equal(partition.check_partition(np.array([7, 7, 3, 3]), 4, 2), [0, 0, 1, 1])


def test_aggregate_with_sample_weights():
    X = np.array([[0.0], [10.0], [4.0], [4.0]])
    out = partition.aggregate(X, np.array([0, 0, 1, 1]), weights=np.array([3.0, 1.0, 1.0, 1.0]))
    np.testing.assert_allclose(out[:, 0], [2.5, 2.5, 4.0, 4.0])


# --- univariate methods ---------------------------------------------------------------------

@given(st.lists(st.integers(-5, 5), min_size=2, max_size=9), st.integers(2, 4))
@settings(max_examples=60, deadline=None)
def test_univariate_optimal_equals_brute_force(values, k):
    x = np.array(values, dtype=float)
    if len(x) < k:
        return
    labels = methods.run("univariate-optimal", x[:, None], k).labels
    labels = partition.check_partition(labels, len(x), k)
    assert partition.group_sizes(labels).max() <= 2 * k - 1
    assert partition.sse(x, labels) == pytest.approx(brute_force_optimum(x[:, None], k), abs=1e-9)


@given(st.integers(0, 10_000), st.integers(2, 6), st.integers(6, 300))
@settings(max_examples=40, deadline=None)
def test_univariate_fixed_is_fixed_size_and_never_beats_optimal(seed, k, n):
    if n < k:
        return
    x = np.random.default_rng(seed).lognormal(size=n).round(1)
    fixed = partition.check_partition(methods.run("univariate-fixed", x[:, None], k).labels, n, k)
    sizes = np.sort(partition.group_sizes(fixed))
    assert (sizes[:-1] == k).all() and k <= sizes[-1] <= 2 * k - 1
    opt = methods.run("univariate-optimal", x[:, None], k).labels
    assert partition.sse(x, fixed) >= partition.sse(x, opt) - 1e-9
    # groups are intervals of the sorted values (ties may straddle a boundary)
    lo = np.array([x[fixed == g].min() for g in range(len(sizes))])
    hi = np.array([x[fixed == g].max() for g in range(len(sizes))])
    by_lo = np.lexsort((hi, lo))
    assert (hi[by_lo][:-1] <= lo[by_lo][1:]).all()


def test_univariate_methods_reject_multivariate_data():
    with pytest.raises(ValueError, match="univariate"):
        microagg.microaggregate(np.random.default_rng(0).normal(size=(20, 2)), k=3, method="univariate-optimal")


@given(st.integers(0, 10_000), st.integers(2, 3), st.integers(2, 10), st.integers(1, 3))
@settings(max_examples=25, deadline=None)
def test_path_and_cyclic_cuts_are_optimal(seed, k, n, d):
    if n < k:
        return
    X = np.random.default_rng(seed).integers(0, 4, size=(n, d)).astype(float)

    def best_path(Y):
        # every consecutive cut with sizes k..2k-1
        best = np.inf
        def rec(i, acc):
            nonlocal best
            if i == len(Y):
                best = min(best, acc)
            for s in range(k, 2 * k):
                if i + s <= len(Y):
                    G = Y[i:i + s]
                    rec(i + s, acc + float(np.sum((G - G.mean(axis=0)) ** 2)))
        rec(0, 0.0)
        return best

    cost, labels = optimal_path_labels(X, k)
    if np.isfinite(best_path(X)):
        assert cost == pytest.approx(best_path(X), abs=1e-9)
        assert partition.sse(X, labels) == pytest.approx(cost, abs=1e-9)
    ccost, clabels = optimal_cyclic_labels(X, k)
    brute = min(best_path(np.roll(X, -r, axis=0)) for r in range(n))
    assert ccost == pytest.approx(brute, abs=1e-9)
    assert partition.sse(X, clabels) == pytest.approx(ccost, abs=1e-9)


# --- the pipeline's guarantees ----------------------------------------------------------------

def test_rows_order_and_non_qi_columns_unchanged():
    df = microagg.datasets.load("tarragona").head(200).copy()
    df.insert(0, "id", np.arange(200)[::-1])
    df["region"] = np.where(np.arange(200) % 2, "north", "south")
    res = microagg.microaggregate(df, k=4, columns=["SALES", "LABOR.COSTS", "NET.PROFIT"])
    out = res.data
    assert list(out.columns) == list(df.columns)
    pd.testing.assert_index_equal(out.index, df.index)
    for c in df.columns:
        if c not in res.columns:
            pd.testing.assert_series_equal(out[c], df[c])
    for g in np.unique(res.labels):
        rows = res.labels == g
        for c in res.columns:
            assert np.allclose(out.loc[rows, c], df.loc[rows, c].mean())
    assert microagg.measures.is_k_anonymous(out[res.columns], 4)


def test_array_in_array_out_and_information_loss_consistent():
    X = np.random.default_rng(3).normal(size=(100, 4)) * [1, 10, 100, 1000]
    res = microagg.microaggregate(X, k=3)
    assert isinstance(res.data, np.ndarray) and res.data.shape == X.shape
    assert res.information_loss == pytest.approx(microagg.information_loss(X, res.labels))
    assert res.sse == pytest.approx(res.information_loss * res.sst / 100)
    assert res.lower_bound is None and res.gap is None


def test_standardize_false_runs_on_raw_units():
    X = np.random.default_rng(4).normal(size=(60, 2)) * [1, 1000]
    raw = microagg.microaggregate(X, k=3, standardize=False)
    assert raw.sst == pytest.approx(partition.sst(X))


def test_strata_keep_groups_inside_one_stratum():
    df = microagg.datasets.load("census").head(300).copy()
    df["sex"] = np.where(np.arange(300) % 3 == 0, "f", "m")
    res = microagg.microaggregate(df, k=3, strata="sex")
    for g in np.unique(res.labels):
        assert df.loc[res.labels == g, "sex"].nunique() == 1
    assert "sex" not in res.columns


def test_every_registered_method_is_listed():
    names = microagg.methods()
    for required in ("mdav", "vmdav", "md", "univariate-optimal", "univariate-fixed"):
        assert required in names
    assert names == sorted(names)


def test_unknown_method_and_parameter_are_errors():
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match="unknown method"):
        microagg.microaggregate(X, k=3, method="nope")
    with pytest.raises(ValueError, match="no parameter"):
        microagg.microaggregate(X, k=3, method="mdav", gama=0.2)


@pytest.mark.parametrize("bad,match", [
    (dict(k=1), "k must be an integer >= 2"),
    (dict(k=500), "larger than the number of records"),
    (dict(k=3, columns=["nope"]), "unknown column"),
    (dict(k=3, columns=["name"]), "not numeric"),
    (dict(k=3, seed=-1), "seed"),
    (dict(k=3, time_limit=0), "time_limit"),
])
def test_bad_arguments_are_clear_errors(bad, match):
    df = pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0) ** 2, "name": list("abcdefghij")})
    before = df.copy()
    with pytest.raises(InputError, match=match):
        microagg.microaggregate(df, **bad)
    pd.testing.assert_frame_equal(df, before)


def test_nan_and_inf_are_named_with_row_counts():
    df = pd.DataFrame({"a": [1.0, np.nan, 3, np.nan, 5, 6], "b": [1.0, 2, np.inf, 4, 5, 6]})
    with pytest.raises(InputError, match=r"a \(2 rows\).*b \(1 rows\)"):
        microagg.microaggregate(df, k=2)


def test_zero_rows_is_an_error():
    with pytest.raises(InputError):
        microagg.microaggregate(pd.DataFrame({"a": pd.Series([], dtype=float)}), k=2)


def test_constant_column_is_allowed_with_one_warning():
    df = pd.DataFrame({"a": np.arange(12.0), "c": np.ones(12)})
    with pytest.warns(UserWarning, match="constant") as record:
        res = microagg.microaggregate(df, k=3)
    assert len([w for w in record if "constant" in str(w.message)]) == 1
    assert (res.data["c"] == 1).all()
