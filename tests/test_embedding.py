"""microagg.embedding: QI kinds, the Gower-type embedding, its whitening; mixed frames end to
end."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import brute_onestep, brute_trimmed, brute_weighted_median_is_minimiser, group_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import mahalanobis

import microagg
from microagg import embedding as transforms
from microagg import representatives as reps
from microagg import whitening
from microagg.cli import main
from microagg.errors import InputError, ParameterError


@st.composite
def mixed_frames(draw):
    n = draw(st.integers(6, 40))
    k = draw(st.integers(2, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cont = rng.normal(size=n) * 10
    if draw(st.booleans()):  # ties
        cont = np.round(cont / 10)
    levels = ["low", "mid", "high", "top"]
    ordinal = pd.Categorical(
        rng.choice(levels, size=n, p=[0.4, 0.3, 0.2, 0.1]), categories=levels, ordered=True
    )
    rare = rng.choice(["a", "b", "c", "z"], size=n, p=[0.6, 0.25, 0.12, 0.03])  # a rare category
    df = pd.DataFrame(
        {
            "x": cont,
            "y": rng.integers(0, 5, size=n).astype(float),
            "grade": ordinal,
            "colour": pd.Categorical(rare),
            "code": rng.integers(1, 4, size=n),  # integer codes declared nominal
            "other": np.arange(n),
            "region": pd.Categorical(rng.choice(["north", "south"], size=n)),
        }
    )
    weights = rng.integers(1, 5, size=n).astype(float) if draw(st.booleans()) else None
    strata = "region" if draw(st.booleans()) else None
    return df, k, weights, strata


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mixed_frames(),
    st.sampled_from(["mdav", "vmdav"]),
    st.sampled_from(list(reps.AGGREGATIONS)),
    st.sampled_from(list(whitening.WHITENINGS)),
)
def test_mixed_frames_k_anonymous_and_representatives(frame, method, aggregation, distance):
    df, k, weights, strata = frame
    before = df.copy()
    cols = ["x", "y", "grade", "colour", "code"]
    # x is named continuous: with ties it holds a few whole numbers, which the column rules would
    # otherwise protect as category codes (issue 33), and its aggregate is checked below
    run = dict(
        k=k,
        method=method,
        columns=cols,
        categorical=["code"],
        continuous=["x"],
        aggregation=aggregation,
        distance=distance,
        sample_weight=weights,
        seed=3,
        strata=strata,
        merge_small_strata=strata is not None,
    )
    res = microagg.microaggregate(df, **run)
    pd.testing.assert_frame_equal(df, before)  # input untouched
    out = res.data
    # valid partition; every published combination occurs >= k times
    assert res.group_sizes.min() >= k
    combos = out[cols].astype(str).value_counts()
    assert combos.min() >= k
    # non-QI columns unchanged; dtypes kept; categories are existing ones
    pd.testing.assert_series_equal(out["other"], df["other"])
    if (
        res.strata is not None and res.strata.merges
    ):  # merged strata are recoded in the stratum column (issue 33)
        assert out[cols + ["region"]].astype(str).value_counts().min() >= k
        assert res.audit["key_records_below_k"] == 0
    else:
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
        assert (
            gw[rank < m].sum() <= gw.sum() / 2 + 1e-9 and gw[rank > m].sum() <= gw.sum() / 2 + 1e-9
        )
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
    res = microagg.microaggregate(
        df, k=3, method="mdav", columns=cols, block_size=1500, aggregation="median"
    )
    assert res.data[cols].astype(str).value_counts().min() >= 3
    assert res.data["roof"].dtype == df["roof"].dtype
    assert set(res.extras["categories"]) == {"sex", "roof"}


def test_robust_distance_is_mahalanobis_with_mcd_covariance():
    from sklearn.covariance import MinCovDet

    rng = np.random.default_rng(0)
    Z = rng.normal(size=(120, 3)) @ np.array([[2, 0.5, 0], [0, 1, 0.4], [0, 0, 0.5]])
    Z[:5] += 30  # a few outliers
    W, lam = whitening.whiten(Z, "robust", seed=7)
    S = MinCovDet(random_state=7).fit(Z).covariance_
    VI = np.linalg.inv(S)
    for a, b in [(0, 1), (3, 50), (10, 119), (60, 61)]:
        assert np.linalg.norm(W[a] - W[b]) == pytest.approx(mahalanobis(Z[a], Z[b], VI), rel=1e-8)
    assert lam == pytest.approx(np.linalg.eigvalsh(S).min())
    Wm, _ = whitening.whiten(Z, "mahalanobis")
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
    df = pd.DataFrame(
        {
            "x": [0.0, 1.0, 2.0, 3.0],
            "o": pd.Categorical(["a", "b", "c", "a"], ordered=True),
            "n": ["u", "v", "u", "w"],
        }
    )
    assert transforms.select_qi(df, None, [], ["n"], [])[0] == [
        "x",
        "n",
    ]  # undeclared categoricals: named only
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


def test_text_qi_must_be_declared():
    df = pd.DataFrame({"x": np.arange(9.0), "t": list("aabbccabc")})
    with pytest.raises(InputError, match="declare it"):
        microagg.microaggregate(df, k=3, columns=["x", "t"])
    res = microagg.microaggregate(df, k=3, columns=["x", "t"], categorical=["t"])
    assert set(res.data["t"]) <= {"a", "b", "c"} and res.data["t"].dtype == df["t"].dtype


def test_array_input_with_a_categorical_position():
    rng = np.random.default_rng(2)
    A = np.column_stack([rng.normal(size=30), rng.integers(0, 3, size=30)])
    res = microagg.microaggregate(A, k=3, categorical=[1])
    assert isinstance(res.data, np.ndarray) and res.data.shape == A.shape
    assert set(res.data[:, 1]) <= set(A[:, 1])
    assert pd.DataFrame(res.data).astype(str).value_counts().min() >= 3


def test_ordinal_levels_declared_by_mapping():
    rng = np.random.default_rng(4)
    df = pd.DataFrame(
        {"x": rng.normal(size=40), "grade": rng.choice(["low", "mid", "high"], size=40)}
    )
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


@pytest.mark.parametrize("cell, extra", [("", []), ("NA", ["--missing", "NA"]), ("  ", [])])
def test_a_missing_cell_in_a_categorical_qi_is_an_error(tmp_path, capsys, cell, extra):
    """A blank (or declared-missing) cell of a --categorical column was taken for a category of its
    own, and could be published as the group's mode for records that had a value: a record
    holding 'a' came out blank. A missing value in a QI column is an error."""
    src = tmp_path / "in.csv"
    src.write_text(f"x,y,cat\n1,2,a\n2,3,{cell}\n3,4,b\n4,5,a\n5,6,b\n6,7,a\n")
    out = tmp_path / "out.csv"
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(out),
                "-k",
                "2",
                "-q",
                "--columns",
                "x,y,cat",
                "--categorical",
                "cat",
                *extra,
            ]
        )
        == 2
    )
    assert (
        capsys.readouterr().err
        == "microagg: error: missing values in quasi-identifier column(s): cat (1 rows)\n"
    )
    assert not out.exists()


def test_a_new_whitening_registered_in_one_place_runs_end_to_end(monkeypatch):
    """A whitening is one registration (here a trial one, the per-column variance): the option
    ``distance`` takes it, the method sees the whitened columns, IL stays on z-scores."""
    monkeypatch.setattr(whitening, "WHITENINGS", dict(whitening.WHITENINGS))
    monkeypatch.setattr(transforms, "WHITENINGS", whitening.WHITENINGS)
    whitening.register(
        whitening.Whitening(
            "trial_diagonal",
            "per-column variance",
            "a test's",
            lambda Z, seed: (Z.mean(axis=0), np.diag(Z.var(axis=0))),
        )
    )
    df = microagg.datasets.load("tarragona").head(90)
    columns = list(df.columns[:3])
    res = microagg.microaggregate(df, k=3, columns=columns, distance="trial_diagonal", audit=False)
    plain = microagg.microaggregate(df, k=3, columns=columns, audit=False)
    # z-scores have unit variance: whitening by their variances only centres them, same groups
    assert np.array_equal(res.labels, plain.labels) and res.information_loss == pytest.approx(
        plain.information_loss
    )
    assert res.publication.distance == "trial_diagonal"
    assert res.extras["distance"] == "trial_diagonal"
    with pytest.raises(ParameterError, match="cannot be combined"):
        microagg.microaggregate(
            df, k=3, columns=columns, distance="trial_diagonal", weights=[1, 2, 3]
        )
    with pytest.raises(ParameterError, match="distance"):
        microagg.microaggregate(df, k=3, columns=columns, distance="chebyshev")
