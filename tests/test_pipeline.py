"""microaggregate (api.py, the pipeline package): the stages' guarantees: rows and non-QI columns
kept, kinds of
input and output, weights, missing values, clear errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import brute_force_optimum, make_data, zscores

import microagg
from microagg import labels as label_stats
from microagg.cli import main
from microagg.errors import InputError, ParameterError


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
    assert raw.sst == pytest.approx(label_stats.sst(X))


@pytest.mark.parametrize(
    "bad,match",
    [
        (dict(k=1), "k must be an integer >= 2"),
        (dict(k=500), "larger than the number of records"),
        (dict(k=3, columns=["nope"]), "unknown column"),
        (dict(k=3, columns=["name"]), "not numeric"),
        (dict(k=3, seed=-1), "seed"),
        (dict(k=3, time_limit=0), "time_limit"),
    ],
)
def test_bad_arguments_are_clear_errors(bad, match):
    df = pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0) ** 2, "name": list("abcdefghij")})
    before = df.copy()
    with pytest.raises(InputError, match=match):
        microagg.microaggregate(df, **bad)
    pd.testing.assert_frame_equal(df, before)


def test_inf_is_named_with_row_counts_and_nan_is_missing():
    df = pd.DataFrame({"a": [1.0, np.nan, 3, np.nan, 5, 6], "b": [1.0, 2, np.inf, 4, 5, 6]})
    with pytest.raises(
        InputError, match=r"^infinite values in quasi-identifier column\(s\): b \(1 rows\)$"
    ):
        microagg.microaggregate(df, k=2)
    res = microagg.microaggregate(df[["a"]], k=2)  # a missing value is accepted, and stays missing
    assert res.data["a"].isna().tolist() == df["a"].isna().tolist()


def test_zero_rows_is_an_error():
    with pytest.raises(InputError):
        microagg.microaggregate(pd.DataFrame({"a": pd.Series([], dtype=float)}), k=2)


def test_constant_column_is_allowed_with_one_warning():
    df = pd.DataFrame({"a": np.arange(12.0), "c": np.ones(12)})
    with pytest.warns(UserWarning, match="constant") as record:
        res = microagg.microaggregate(df, k=3)
    assert len([w for w in record if "constant" in str(w.message)]) == 1
    assert (res.data["c"] == 1).all()


def test_missing_tokens_in_the_api():
    df = pd.DataFrame({"a": ["1.5", "2", "-", "4", "5", "6"], "b": [1.0, 2, 3, 4, 5, 6]})
    with pytest.raises(InputError, match=r"numeric except for '-'"):
        microagg.microaggregate(df, k=3)
    res = microagg.microaggregate(df, k=3, columns=["a"], missing="-")  # "-": missing, kept so
    assert res.data["a"].isna().tolist() == [False, False, True, False, False, False]
    res = microagg.microaggregate(df, k=3, columns=["b"], missing=["-"])
    assert res.data["a"].tolist() == df["a"].tolist()  # a non-QI column keeps its text
    with pytest.raises(ParameterError, match="missing must be text tokens"):
        microagg.microaggregate(df, k=3, columns=["b"], missing=5)


def test_equal_weights_change_nothing_and_a_heavy_weight_protects_its_column():
    df = microagg.datasets.load("census").head(300)
    plain = microagg.microaggregate(df, k=3)
    same = microagg.microaggregate(df, k=3, weights=[2.0] * df.shape[1])
    np.testing.assert_array_equal(plain.labels, same.labels)
    assert same.information_loss == pytest.approx(plain.information_loss)
    w = [1.0] * df.shape[1]
    w[0] = 50.0
    heavy = microagg.microaggregate(df, k=3, weights=w)
    Z = zscores(df.to_numpy(float))
    col0 = lambda lab: label_stats.sse(Z[:, [0]], lab)  # noqa: E731
    assert col0(heavy.labels) < col0(plain.labels)
    assert heavy.extras["weights"][df.columns[0]] == 50.0
    assert "weighted_information_loss" in heavy.extras
    by_name = microagg.microaggregate(df, k=3, weights={df.columns[0]: 50.0})
    np.testing.assert_array_equal(by_name.labels, heavy.labels)


def test_weighted_bound_is_still_a_bound_on_the_unweighted_sse():
    X = make_data(4, 10, 2)
    res = microagg.microaggregate(X, k=3, method="colgen", weights=[3.0, 1.0], time_limit=30)
    assert res.lower_bound is not None
    assert res.lower_bound <= brute_force_optimum(zscores(X), 3) + 1e-9
    assert res.extras["weighted_lower_bound"] >= res.lower_bound


@pytest.mark.parametrize(
    "weights,match",
    [
        ([1.0, 2.0], "2 value"),
        ([1.0, -1.0, 1.0], "positive"),
        ([1.0, 0.0, 1.0], "positive"),
        ([1.0, np.nan, 1.0], "positive"),
        ([1.0, np.inf, 1.0], "positive"),
        ("1,2,3", "numbers"),
        (["a", 1, 1], "numbers"),
        ([True, 1, 1], "numbers"),
        ({"nope": 1.0}, "not quasi-identifiers"),
    ],
)
def test_bad_variable_weights_are_rejected(weights, match):
    df = pd.DataFrame(make_data(0, 20, 3), columns=["a", "b", "c"])
    with pytest.raises(InputError, match=match):
        microagg.microaggregate(df, k=3, weights=weights)


def test_weights_that_could_not_act_are_rejected_not_ignored():
    df = pd.DataFrame(make_data(0, 20, 3), columns=["a", "b", "c"])
    with pytest.raises(InputError, match="no effect"):
        microagg.microaggregate(df, k=3, method="individual-ranking", weights=[1, 2, 3])
    with pytest.raises(InputError, match="no effect"):
        microagg.microaggregate(df[["a"]], k=3, method="univariate-optimal", weights=[2.0])


def test_sample_weights_give_weighted_group_means():
    rng = np.random.default_rng(3)
    df = pd.DataFrame(
        rng.normal(size=(40, 2)), columns=["a", "b"]
    )  # continuous (integer data with few values: codes)
    df["w"] = rng.uniform(0.5, 4.0, 40)
    res = microagg.microaggregate(df, k=3, sample_weight="w")
    assert res.columns == ["a", "b"]  # the weight column is not a quasi-identifier
    np.testing.assert_array_equal(res.data["w"], df["w"])
    expected = label_stats.aggregate(df[["a", "b"]].to_numpy(), res.labels, df["w"].to_numpy())
    np.testing.assert_allclose(res.data[["a", "b"]].to_numpy(), expected)
    plain = microagg.microaggregate(df, k=3, columns=["a", "b"])
    np.testing.assert_array_equal(plain.labels, res.labels)  # grouping unchanged
    assert res.sse >= plain.sse - 1e-9  # weighted means are not the SSE-minimising means
    arr = microagg.microaggregate(df[["a", "b"]].to_numpy(), k=3, sample_weight=df["w"].to_numpy())
    np.testing.assert_allclose(arr.data, expected)
    assert res.extras["sample_weight"] == "w"


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(sample_weight="a", columns=["a", "b"]), "both quasi-identifier and sample weight"),
        (dict(sample_weight="nope"), "unknown sample_weight"),
        (dict(sample_weight="neg"), "positive"),
        (dict(sample_weight="name"), "not numeric"),
        (dict(sample_weight="s", strata="s"), "both sample weight and stratum"),
        (dict(sample_weight=np.ones(5)), "one value per record"),
        (dict(sample_weight=np.r_[np.ones(19), np.nan]), "positive"),
        (dict(sample_weight=np.r_[np.ones(19), 0.0]), "positive"),
    ],
)
def test_bad_sample_weights_are_rejected(kwargs, match):
    df = pd.DataFrame(make_data(0, 20, 2), columns=["a", "b"])
    df["neg"] = -1.0
    df["name"] = "x"
    df["s"] = 1.0
    kwargs = dict(kwargs)
    if "columns" not in kwargs:
        kwargs["columns"] = ["a", "b"]
    with pytest.raises(InputError, match=match):
        microagg.microaggregate(df, k=3, **kwargs)


def test_sample_weight_error_names_the_row_as_every_other_error_does(tmp_path, capsys):
    """Rows are counted from 1 in every error; the sample weight's said 'first at row 0' for the
    first data row and did not show the value."""
    src = tmp_path / "in.csv"
    src.write_text("w,a,b\n-2,1,5\n1,2,4\n1,3,3\n1,4,2\n")
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(tmp_path / "out.csv"),
                "-k",
                "2",
                "-q",
                "--columns",
                "a,b",
                "--sample-weight",
                "w",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "first at row 1 (-2" in err
    assert not (tmp_path / "out.csv").exists()


# --- the stages and the typed Result
# --------------------------------------------------------------------


def test_microaggregate_is_its_stages():
    """pipeline.load -> check_params_vs_input -> prepare -> group -> publish_values -> measure
    give what microaggregate gives."""
    from microagg import pipeline
    from microagg.deadline import Deadline
    from microagg.options import validate_run

    df = microagg.datasets.load("tarragona").head(150)
    res = microagg.microaggregate(df, k=3, method="mdav", aggregation="median")
    run = validate_run({"k": 3, "method": "mdav", "aggregation": "median"})
    source = pipeline.load(df)
    roles = pipeline.check_params_vs_input(run, source)
    prepared = pipeline.prepare(source, roles, run)
    parted = pipeline.group(source, roles, prepared, run, Deadline(None), lambda *a: None)
    published = pipeline.publish_values(source, roles, prepared, parted, run)
    audit, publication, bound = pipeline.measure(source, roles, prepared, parted, published, run)
    assert np.array_equal(parted.labels, res.labels)
    pd.testing.assert_frame_equal(published.data, res.data)
    assert audit["information_loss"] == res.information_loss and publication == res.publication


def test_the_published_values_nature_travels_with_the_published_stage():
    """Published.values says what was published; measure reads it: values changed after publish
    (here rounded, as a later stage may) are measured as published, not as group means."""
    from dataclasses import replace

    from microagg import pipeline
    from microagg.deadline import Deadline
    from microagg.options import validate_run

    df = microagg.datasets.load("tarragona").head(90)
    stages = {}
    for aggregation in ("mean", "median"):
        run = validate_run({"k": 3, "aggregation": aggregation})
        source = pipeline.load(df)
        roles = pipeline.check_params_vs_input(run, source)
        prepared = pipeline.prepare(source, roles, run)
        parted = pipeline.group(source, roles, prepared, run, Deadline(None), lambda *a: None)
        stages[aggregation] = (
            source,
            roles,
            prepared,
            parted,
            pipeline.publish_values(source, roles, prepared, parted, run),
            run,
        )
    assert stages["mean"][4].values == pipeline.GROUP_MEANS
    assert stages["median"][4].values == "median (continuous)"
    source, roles, prepared, parted, published, run = stages["mean"]
    rounded = replace(
        published, numeric=np.round(published.numeric, -3), values="group means, rounded"
    )
    audit = pipeline.measure(source, roles, prepared, parted, rounded, run)[0]
    Zp = prepared.embedding.embed(rounded.numeric, rounded.codes)
    assert audit["sse"] == pytest.approx(np.sum((prepared.Z - Zp) ** 2))
    assert (
        audit["sse"] > pipeline.measure(source, roles, prepared, parted, published, run)[0]["sse"]
    )


def test_the_result_has_typed_parts_and_extras_is_their_view():
    df = microagg.datasets.load("census").head(200).copy()
    df["region"] = np.where(np.arange(len(df)) < 198, "a", "b")  # stratum b: 2 records < k
    res = microagg.microaggregate(
        df,
        k=3,
        strata="region",
        merge_small_strata=True,
        method="auto",
        portfolio=["mdav", "md"],
        weights={"AGI": 2.0},
    )
    assert res.strata.merges and res.strata.runs[0].records == 200
    assert res.weights.variable["AGI"] == 2.0 and res.weights.variable["FEDTAX"] == 1.0
    assert res.portfolio is None and res.portfolios()[0][1].winner in ("mdav", "md")
    extras = res.extras
    assert extras["merged_strata"] == list(res.strata.merges)
    assert extras["strata"][0]["extras"]["winner"] == res.portfolios()[0][1].winner
    assert extras["weighted_information_loss"] == res.audit["weighted_information_loss"]
    extras["weights"]["AGI"] = 9.0  # a view: the Result does not change
    assert res.weights.variable["AGI"] == 2.0


def test_the_file_audit_is_computed_when_first_read_on_the_data_of_the_call():
    """The default call leaves the file audit to the first read of Result.audit (issue 45): the
    figures are those of audit=False plus the file audit (pipeline.audit), computed on the input
    and output as they were at the call even when the caller then edits them, and a pickled
    Result carries them."""
    import pickle

    from microagg import pipeline
    from microagg.deadline import Deadline
    from microagg.options import validate_run

    df = microagg.datasets.load("census").head(300).copy()
    res = microagg.microaggregate(df, k=3)
    plain = microagg.microaggregate(df, k=3, audit=False)
    assert res.pending_audit is not None and plain.pending_audit is None
    run = validate_run({"k": 3})
    source = pipeline.load(df.copy())
    roles = pipeline.check_params_vs_input(run, source)
    prepared = pipeline.prepare(source, roles, run)
    parted = pipeline.group(source, roles, prepared, run, Deadline(None), lambda *a: None)
    published = pipeline.publish_values(source, roles, prepared, parted, run)
    expected = plain.audit.with_figures(pipeline.audit(source, roles, prepared, published, run))
    df.iloc[:, 0] = 0.0  # the caller edits its input and the output before reading the audit
    res.data.iloc[:, 1] = 0.0
    assert res.audit.to_dict() == expected.to_dict()
    assert res.pending_audit is None and res.audit is res.audit  # computed once
    fresh = microagg.microaggregate(microagg.datasets.load("census").head(300), k=3)
    again = pickle.loads(pickle.dumps(fresh))
    assert again.pending_audit is None and again.audit.to_dict() == expected.to_dict()
    X = np.array(microagg.datasets.load("census").head(300), dtype=float)  # writable
    arr = microagg.microaggregate(X, k=3)
    utility = microagg.microaggregate(X.copy(), k=3).audit.group("utility")
    X[:] = 0.0
    arr.data[:] = 0.0
    assert arr.audit.group("utility") == utility
