"""Heterogeneous quasi-identifiers, robust distances and representatives (issue 18)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.spatial.distance import mahalanobis

import microagg
from microagg import representatives as reps
from microagg import transforms
from microagg.errors import InputError, ParameterError
from microagg.measures import categorical_report, category_distribution_distance, utility_report

# --- brute-force definitions (independent of the kernels) ---------------------------------------


def brute_weighted_median_is_minimiser(x, w, m):
    """A weighted median minimises sum w|x - m| (the definition behind every tie rule)."""
    cost = lambda t: float(np.sum(w * np.abs(x - t)))  # noqa: E731
    best = min(cost(t) for t in x)
    return cost(m) <= best + 1e-9 * max(1.0, best)


def brute_trimmed(x, w, trim):
    """Drop whole records from each end while the weight dropped at that end stays <= trim·W."""
    order = np.argsort(x, kind="stable")
    x, w = x[order], w[order]
    keep = np.ones(len(x), dtype=bool)
    cut = trim * w.sum() * (1 + 1e-12)
    dropped = 0.0
    for i in range(len(x) - 1):
        if dropped + w[i] > cut:
            break
        dropped += w[i]
        keep[i] = False
    dropped = 0.0
    for i in range(len(x) - 1, 0, -1):
        if dropped + w[i] > cut or not keep[i - 1] and not keep[i]:
            break
        if keep.sum() == 1:
            break
        dropped += w[i]
        keep[i] = False
    return float(np.sum(w[keep] * x[keep]) / np.sum(w[keep]))


def brute_onestep(x):
    med = np.median(x)
    mad = 1.4826 * np.median(np.abs(x - med))
    c = 3 / 1.486
    return float(np.mean(np.clip(x, med - c * mad, med + c * mad)))


def group_rows(labels):
    return [np.flatnonzero(labels == g) for g in np.unique(labels)]


# --- representatives against the definitions ------------------------------------------------------

small_groups = st.lists(st.floats(-100, 100, allow_nan=False, width=32) | st.sampled_from([0.0, 1.0, 2.0]),
                        min_size=1, max_size=9)


@settings(max_examples=80, deadline=None)
@given(small_groups, st.data())
def test_weighted_median_and_trimmed_match_definitions(values, data):
    x = np.array(values, dtype=np.float64)
    n = len(x)
    iw = np.array(data.draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)), dtype=np.float64)
    labels = np.zeros(n, dtype=np.int64)
    # unweighted: textbook statistics
    assert reps.continuous(x[:, None], labels, "median")[0, 0] == pytest.approx(np.median(x))
    assert reps.continuous(x[:, None], labels, "trimmed", 0.2)[0, 0] == pytest.approx(stats.trim_mean(x, 0.2))
    assert reps.continuous(x[:, None], labels, "onestep")[0, 0] == pytest.approx(brute_onestep(x))
    # integer weights: the weighted median is the median of the records repeated w times
    m = reps.continuous(x[:, None], labels, "median", weights=iw)[0, 0]
    assert m == pytest.approx(np.median(np.repeat(x, iw.astype(int))))
    assert brute_weighted_median_is_minimiser(x, iw, m)
    for trim in (0.0, 0.1, 0.25, 0.45):
        t = reps.continuous(x[:, None], labels, "trimmed", trim, weights=iw)[0, 0]
        assert t == pytest.approx(brute_trimmed(x, iw, trim))
    # scaling every weight changes nothing
    for agg in ("median", "trimmed", "onestep", "mean"):
        a = reps.continuous(x[:, None], labels, agg, 0.2, weights=iw)[0, 0]
        b = reps.continuous(x[:, None], labels, agg, 0.2, weights=3.5 * iw)[0, 0]
        assert a == pytest.approx(b)


def test_equal_weights_trim_like_r():
    x = np.arange(10.0) ** 2  # floor(0.25·10) = 2 records dropped at each end, as R's mean(trim=)
    labels = np.zeros(10, dtype=np.int64)
    expect = np.mean(np.sort(x)[2:8])
    assert reps.continuous(x[:, None], labels, "trimmed", 0.25)[0, 0] == pytest.approx(expect)
    assert reps.continuous(x[:, None], labels, "trimmed", 0.25, weights=np.full(10, 7.0))[0, 0] == pytest.approx(expect)


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


# --- the pipeline on random mixed frames ------------------------------------------------------------


@st.composite
def mixed_frames(draw):
    n = draw(st.integers(6, 40))
    k = draw(st.integers(2, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cont = rng.normal(size=n) * 10
    if draw(st.booleans()):  # ties
        cont = np.round(cont / 10)
    levels = ["low", "mid", "high", "top"]
    ordinal = pd.Categorical(rng.choice(levels, size=n, p=[0.4, 0.3, 0.2, 0.1]), categories=levels, ordered=True)
    rare = rng.choice(["a", "b", "c", "z"], size=n, p=[0.6, 0.25, 0.12, 0.03])  # a rare category
    df = pd.DataFrame({
        "x": cont,
        "y": rng.integers(0, 5, size=n).astype(float),
        "grade": ordinal,
        "colour": pd.Categorical(rare),
        "code": rng.integers(1, 4, size=n),  # integer codes declared nominal
        "other": np.arange(n),
        "region": pd.Categorical(rng.choice(["north", "south"], size=n)),
    })
    weights = rng.integers(1, 5, size=n).astype(float) if draw(st.booleans()) else None
    strata = "region" if draw(st.booleans()) else None
    return df, k, weights, strata


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_frames(), st.sampled_from(["mdav", "vmdav"]), st.sampled_from(list(reps.AGGREGATIONS)),
       st.sampled_from(list(transforms.DISTANCES)))
def test_mixed_frames_k_anonymous_and_representatives(frame, method, aggregation, distance):
    df, k, weights, strata = frame
    before = df.copy()
    cols = ["x", "y", "grade", "colour", "code"]
    run = dict(k=k, method=method, columns=cols, categorical=["code"], aggregation=aggregation, distance=distance,
               sample_weight=weights, seed=3, strata=strata, merge_small_strata=strata is not None)
    res = microagg.microaggregate(df, **run)
    pd.testing.assert_frame_equal(df, before)  # input untouched
    out = res.data
    # valid partition; every published combination occurs >= k times
    assert res.group_sizes.min() >= k
    combos = out[cols].astype(str).value_counts()
    assert combos.min() >= k
    # non-QI columns unchanged; dtypes kept; categories are existing ones
    pd.testing.assert_series_equal(out["other"], df["other"])
    pd.testing.assert_series_equal(out["region"], df["region"])
    assert out["grade"].dtype == df["grade"].dtype and out["colour"].dtype == df["colour"].dtype
    assert out["code"].dtype == df["code"].dtype
    for c in ("grade", "colour", "code"):
        assert set(out[c]) <= set(df[c])
    w = np.ones(len(df)) if weights is None else weights
    for rows in group_rows(res.labels):
        g = df.iloc[rows]
        gw = w[rows]
        # ordinal: a median category of its group (weighted)
        rank = g["grade"].cat.codes.to_numpy()
        pub = out["grade"].cat.codes.to_numpy()[rows]
        assert len(set(pub)) == 1
        m = pub[0]
        assert gw[rank < m].sum() <= gw.sum() / 2 + 1e-9 and gw[rank > m].sum() <= gw.sum() / 2 + 1e-9
        # nominal: a mode of its group
        for c in ("colour", "code"):
            value = out[c].iloc[rows].unique()
            assert len(value) == 1
            counts = pd.Series(gw).groupby(g[c].astype(object).to_numpy()).sum()
            assert counts[value[0]] == counts.max()
        # continuous: the declared aggregate of the group
        x, px = g["x"].to_numpy(), out["x"].to_numpy()[rows]
        assert np.all(px == px[0])
        if aggregation == "mean":
            assert px[0] == pytest.approx(np.average(x, weights=gw))
        elif aggregation == "median":
            assert brute_weighted_median_is_minimiser(x, gw, px[0])
        elif aggregation == "trimmed":
            assert px[0] == pytest.approx(brute_trimmed(x, gw, 0.1))
        elif weights is None:
            assert px[0] == pytest.approx(brute_onestep(x))
    # same seed, same result
    again = microagg.microaggregate(df, **run)
    np.testing.assert_array_equal(again.labels, res.labels)
    pd.testing.assert_frame_equal(again.data, res.data)


def test_partitioned_mode_with_categories():
    df = microagg.datasets.load("testdata")
    cols = ["expend", "income", "savings", "sex", "roof"]
    res = microagg.microaggregate(df, k=3, method="mdav", columns=cols, block_size=1500, aggregation="median")
    assert res.data[cols].astype(str).value_counts().min() >= 3
    assert res.data["roof"].dtype == df["roof"].dtype
    assert set(res.extras["categories"]) == {"sex", "roof"}


# --- IL and the published values --------------------------------------------------------------------


def test_il_to_published_values_is_at_least_to_means():
    df = microagg.datasets.load("testdata")
    cols = ["expend", "income", "savings"]
    mean = microagg.microaggregate(df, k=5, columns=cols)
    for agg in ("median", "trimmed", "onestep"):
        res = microagg.microaggregate(df, k=5, columns=cols, aggregation=agg,
                                      trim=0.2 if agg == "trimmed" else None)
        np.testing.assert_array_equal(res.labels, mean.labels)  # the aggregate does not change the groups
        assert res.sse >= mean.sse - 1e-9
        assert res.extras["sse_to_group_means"] == pytest.approx(mean.sse)
        Z = (df[cols] - df[cols].mean()) / df[cols].std(ddof=0)
        Zp = (res.data[cols] - df[cols].mean()) / df[cols].std(ddof=0)
        assert res.sse == pytest.approx(float(((Z - Zp) ** 2).to_numpy().sum()))
        assert "IL is measured to the published values" in res.summary()


def test_bound_converted_to_published_units():
    df = microagg.datasets.load("tarragona").iloc[:12, :3]
    res = microagg.microaggregate(df, k=3, method="colgen", distance="mahalanobis", aggregation="median",
                                  time_limit=20)
    assert res.lower_bound is not None and "whitened_lower_bound" in res.extras
    assert res.lower_bound <= res.sse + 1e-9
    assert res.lower_bound <= res.extras["whitened_lower_bound"] + 1e-9  # scaled by min(λ_min, 1)


# --- distances ----------------------------------------------------------------------------------------


def test_robust_distance_is_mahalanobis_with_mcd_covariance():
    from sklearn.covariance import MinCovDet

    rng = np.random.default_rng(0)
    Z = rng.normal(size=(120, 3)) @ np.array([[2, 0.5, 0], [0, 1, 0.4], [0, 0, 0.5]])
    Z[:5] += 30  # a few outliers
    W, lam = transforms.whiten(Z, "robust", seed=7)
    S = MinCovDet(random_state=7).fit(Z).covariance_
    VI = np.linalg.inv(S)
    for a, b in [(0, 1), (3, 50), (10, 119), (60, 61)]:
        assert np.linalg.norm(W[a] - W[b]) == pytest.approx(mahalanobis(Z[a], Z[b], VI), rel=1e-8)
    assert lam == pytest.approx(np.linalg.eigvalsh(S).min())
    Wm, _ = transforms.whiten(Z, "mahalanobis")
    VIm = np.linalg.inv(np.cov(Z, rowvar=False, bias=True))
    assert np.linalg.norm(Wm[3] - Wm[50]) == pytest.approx(mahalanobis(Z[3], Z[50], VIm), rel=1e-8)


def test_one_gross_outlier_moves_other_groups_less_under_robust_distance():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(300, 3)) @ np.array([[1, 0.5, 0.2], [0, 1, 0.3], [0, 0, 1]])
    clean = pd.DataFrame(A, columns=list("abc"))
    dirty = clean.copy()
    dirty.loc[0, "a"] = 1e4

    def changed_pairs(distance):
        l0 = microagg.microaggregate(clean, k=3, distance=distance).labels[1:]
        l1 = microagg.microaggregate(dirty, k=3, distance=distance).labels[1:]
        return int(((l0[:, None] == l0[None, :]) != (l1[:, None] == l1[None, :])).sum())

    assert changed_pairs("robust") < 0.6 * changed_pairs("euclidean")


def test_gower_embedding_distances():
    df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "o": pd.Categorical(["a", "b", "c", "a"], ordered=True),
                       "n": ["u", "v", "u", "w"]})
    assert transforms.select_qi(df, None, [], ["n"], [])[0] == ["x", "n"]  # undeclared categoricals: named only
    cols, kinds = transforms.select_qi(df, ["x", "o", "n"], [], ["n"], [])
    assert kinds == {"x": "continuous", "o": "ordinal", "n": "nominal"}
    emb = transforms.embed(df, cols, kinds)
    E = emb.matrix
    sl = emb.column_slices()
    nominal = E[:, sl["n"]]
    assert np.sum((nominal[0] - nominal[1]) ** 2) == pytest.approx(transforms.NOMINAL_WEIGHT)
    assert np.sum((nominal[0] - nominal[2]) ** 2) == 0
    assert E[:, sl["o"]].std() == pytest.approx(1.0)  # ordinal ranks z-scored
    assert E[:, sl["x"]].std() == pytest.approx(1.0)


# --- options and errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad, match", [
    (dict(distance="cosine"), "distance"),
    (dict(aggregation="mode"), "aggregation"),
    (dict(aggregation="trimmed", trim=0.5), "trim"),
    (dict(aggregation="trimmed", trim="x"), "trim"),
    (dict(aggregation="median", trim=0.2), "trim applies"),
    (dict(categorical=["sex"], ordinal=["sex"]), "both"),
])
def test_bad_options_are_parameter_errors(bad, match):
    df = microagg.datasets.load("testdata")
    with pytest.raises(ParameterError, match=match):
        microagg.microaggregate(df, k=3, columns=["expend", "income", "sex"], **bad)


@pytest.mark.parametrize("kwargs, match", [
    (dict(method="individual-ranking", columns=["expend", "sex"]), "cannot take categorical"),
    (dict(columns=["expend"], categorical=["sex"]), "not among the quasi-identifier"),
    (dict(columns=["expend", "income"], distance="robust", weights=[1, 2]), "cannot be combined"),
    (dict(columns=["sex", "roof"], distance="robust"), "needs continuous"),
])
def test_impossible_combinations_rejected(kwargs, match):
    df = microagg.datasets.load("testdata")
    with pytest.raises(InputError, match=match):
        microagg.microaggregate(df, k=3, **kwargs)


def test_text_qi_must_be_declared():
    df = pd.DataFrame({"x": np.arange(9.0), "t": list("aabbccabc")})
    with pytest.raises(InputError, match="declare it"):
        microagg.microaggregate(df, k=3, columns=["x", "t"])
    res = microagg.microaggregate(df, k=3, columns=["x", "t"], categorical=["t"])
    assert set(res.data["t"]) <= {"a", "b", "c"} and res.data["t"].dtype == df["t"].dtype


# --- testdata and the measures -------------------------------------------------------------------------


def test_testdata_loader_dtypes_and_roles():
    df = microagg.datasets.load("testdata")
    roles = microagg.datasets.roles("testdata")
    assert df.shape == (4580, 15)
    for c in ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"):
        assert roles[c] == "nominal"
        assert isinstance(df[c].dtype, pd.CategoricalDtype) and not df[c].dtype.ordered
    assert df["age"].dtype == np.int64 and roles["age"] == "continuous"
    for c in ("expend", "income", "savings"):
        assert df[c].dtype == np.float64 and roles[c] == "continuous"
    assert roles["ori_hid"] == "id" and roles["sampling_weight"] == "weight"
    assert pd.api.types.is_numeric_dtype(df["household_weights"])
    assert set(df["urbrur"].cat.categories) == {1, 2}


def test_category_measures():
    a = pd.Series(["x", "x", "y", "z"])
    b = pd.Series(["x", "y", "y", "y"])
    rep = categorical_report(a.to_frame("c"), b.to_frame("c"))["c"]
    assert rep["changed_share"] == pytest.approx(0.5)
    assert rep["distribution_tvd"] == pytest.approx(0.5 * (0.25 + 0.5 + 0.25))
    assert category_distribution_distance(a, a.sample(frac=1, random_state=0)) == 0.0
    X = pd.DataFrame({"v": [1.0, 2, 3, 4], "c": a})
    Xp = pd.DataFrame({"v": [1.5, 1.5, 3.5, 3.5], "c": b})
    out = utility_report(X, Xp, categorical=["c"])
    assert out["categorical"]["c"]["changed_share"] == pytest.approx(0.5) and "information_loss" in out


def test_cli_flags(tmp_path, capsys):
    from microagg.cli import main

    src = microagg.datasets.path("testdata")
    out = tmp_path / "out.csv"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "--columns", "expend,income,savings,sex,age",
                 "--categorical", "sex", "--ordinal", "age", "--strata", "urbrur", "--distance", "robust",
                 "--aggregation", "trimmed", "--trim", "0.3", "-q"]) == 0
    assert "median category (ordinal)" in capsys.readouterr().out
    got = pd.read_csv(out)
    original = pd.read_csv(src)
    cols = ["expend", "income", "savings", "sex", "age"]
    assert got[cols].astype(str).value_counts().min() >= 3
    assert set(got["sex"]) <= set(original["sex"]) and set(got["age"]) <= set(original["age"])
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "--aggregation", "mode", "-q"]) == 2


def test_report_with_text_categories():
    from microagg.report import render_report

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=60), "y": rng.normal(size=60),
                       "c": rng.choice(["red", "green", "blue"], size=60)})
    res = microagg.microaggregate(df, k=3, columns=["x", "y", "c"], categorical=["c"])
    html = render_report(res, df)
    assert "categorical c" in html and "k-anonymous" in html


def test_array_input_with_a_categorical_position():
    rng = np.random.default_rng(2)
    A = np.column_stack([rng.normal(size=30), rng.integers(0, 3, size=30)])
    res = microagg.microaggregate(A, k=3, categorical=[1])
    assert isinstance(res.data, np.ndarray) and res.data.shape == A.shape
    assert set(res.data[:, 1]) <= set(A[:, 1])
    assert pd.DataFrame(res.data).astype(str).value_counts().min() >= 3


def test_ordinal_levels_declared_by_mapping():
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"x": rng.normal(size=40), "grade": rng.choice(["low", "mid", "high"], size=40)})
    order = ["low", "mid", "high"]
    res = microagg.microaggregate(df, k=4, columns=["x", "grade"], ordinal={"grade": order})
    rank = df["grade"].map(order.index).to_numpy()
    for rows in group_rows(res.labels):
        published = res.data["grade"].iloc[rows].unique()
        assert len(published) == 1
        m = order.index(published[0])
        assert (rank[rows] < m).sum() <= len(rows) / 2 and (rank[rows] > m).sum() <= len(rows) / 2
    with pytest.raises(InputError, match="outside its declared levels"):
        microagg.microaggregate(df, k=4, columns=["x", "grade"], ordinal={"grade": ["low", "mid"]})
    with pytest.raises(ParameterError, match="lowest first"):
        microagg.microaggregate(df, k=4, columns=["x", "grade"], ordinal={"grade": "low"})


def test_weighted_ties_survive_float_sums():
    labels = np.zeros(3, dtype=np.int64)
    # 0.1 + 0.2 != 0.3 in floating point, but the two categories weigh the same
    assert reps.mode_category(np.array([1, 1, 0]), labels, np.array([0.1, 0.2, 0.3]))[0] == 0
    assert reps.mode_category(np.array([0, 0, 1]), labels, np.array([0.1, 0.2, 0.3]))[0] == 0
    # exactly half the weight at the lower category: the lower one is the median category
    assert reps.median_category(np.array([0, 1, 2]), labels, np.array([0.1, 0.2, 0.3]))[0] == 1
    assert reps.median_category(np.array([0, 2]), np.zeros(2, dtype=np.int64), np.array([1.0, 1.0]))[0] == 0
