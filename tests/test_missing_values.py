"""Missing values in continuous quasi-identifiers (issue 54, part 4): a missing value stays
missing, records are grouped on the values they have, group means are over present values and
over at least k of them, and k-anonymity counts a missing value as matching any value; at every
door and through CSV, Parquet and Stata files."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg.cli import main
from microagg.measures.records import key_frequencies
from microagg.missing_values import present_groups, thin_cells

COLUMNS = ["age", "income", "hours"]


def survey(seed: int, n: int, hours_missing: float = 0.3) -> pd.DataFrame:
    """Persons: incomes missing for children (age < 16), hours missing for a share of them."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 90, n).astype(float)
    income = np.round(rng.lognormal(10, 1, n), 2)
    income[age < 16] = np.nan
    hours = rng.integers(5, 60, n).astype(float)
    hours[rng.random(n) < hours_missing] = np.nan
    return pd.DataFrame({"id": np.arange(1, n + 1), "age": age, "income": income, "hours": hours})


def _run(df, k, method="mdav", columns=COLUMNS, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # declared continuous: a few distinct integers would otherwise read as codes (column_rules)
        return microagg.microaggregate(
            df, k=k, method=method, columns=columns, continuous=columns, **options
        )


def _check_published(df: pd.DataFrame, res, k: int, columns=COLUMNS) -> None:
    """Missing stays missing; each published value is its group's mean over the present values,
    over at least k of them; the QIs are k-anonymous with a missing value matching any."""
    out = res.data
    labels = res.labels
    for j, c in enumerate(columns):
        lab = labels[:, j] if labels.ndim == 2 else labels
        present = df[c].notna().to_numpy()
        assert out[c].isna().to_numpy().tolist() == (~present).tolist(), c
        values = df[c].to_numpy(dtype=float)
        for g in np.unique(lab[present]):
            members = present & (lab == g)
            assert members.sum() >= k, (c, g)  # never a mean over fewer than k present values
            np.testing.assert_allclose(
                out[c].to_numpy(dtype=float)[members], values[members].mean(), rtol=1e-9
            )
    if labels.ndim == 1:
        found = key_frequencies(out, columns, k, missing="wildcard")
        assert found.is_k_anonymous
    assert res.audit.context.get("means_below_k_present", 0) == 0  # (absent: nothing missing)
    assert res.audit.context.get("missing_values", 0) == int(df[columns].isna().to_numpy().sum())


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(12, 70),
    k=st.integers(2, 5),
    share=st.sampled_from([0.0, 0.1, 0.5, 0.95]),
)
def test_missing_values_stay_missing_and_means_are_over_k_present_values(seed, n, k, share):
    df = survey(seed, n, share)
    if df[COLUMNS].notna().sum().min() < k:  # a variable present fewer than k times in all
        return
    res = _run(df, k)
    _check_published(df, res, k)
    assert res.data["id"].tolist() == df["id"].tolist()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(6, 60),
    k=st.integers(2, 6),
    d=st.integers(1, 4),
    share=st.floats(0.0, 1.0),
    units=st.integers(1, 3),
)
def test_present_groups_leave_no_group_with_1_to_k_minus_1_present_values(
    seed, n, k, d, share, units
):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    Z[rng.random((n, d)) < share] = np.nan
    present = ~np.isnan(Z)
    unit = np.arange(n) % units
    labels = np.empty(n, dtype=np.int64)
    for u in range(units):  # groups of k records in each unit, a short last one joined to another
        rows = np.flatnonzero(unit == u)
        lab = np.arange(len(rows)) // k
        if len(rows) >= k and len(rows) % k:
            lab[lab == lab.max()] = max(lab.max() - 1, 0)
        labels[rows] = lab + u * n
    merged = present_groups(labels, Z, k, unit)
    for g in np.unique(merged):  # groups of at least k records (as given), each in one unit
        assert len(np.unique(unit[merged == g])) == 1
        assert (merged == g).sum() >= min(np.bincount(labels).min(), k)
    if present.all():  # nothing missing: the partition as it was
        assert np.array_equal(merged, labels)
    # a group with 1..k-1 present values of a column is left only where its whole unit has fewer
    for j in range(d):
        counts = np.bincount(merged, weights=present[:, j])
        for g in np.flatnonzero((counts > 0) & (counts < k)):
            u = unit[merged == g][0]
            assert present[unit == u, j].sum() < k or (merged[unit == u] == g).all()
    short = any(present[unit == u, j].sum() in range(1, k) for u in range(units) for j in range(d))
    if not short:
        assert thin_cells(merged, present, k) == 0


def test_a_variable_with_fewer_than_k_present_values_is_counted_and_said():
    df = survey(3, 40)
    df.loc[df.index[2:], "hours"] = np.nan  # two present values of hours: fewer than k = 3
    df.loc[df.index[:2], "hours"] = [20.0, 40.0]
    res = _run(df, 3)
    assert res.audit.context["means_below_k_present"] == 2
    assert any("fewer than 3 present values" in w for w in res.audit.warnings)
    assert "2 published values are means over fewer than 3 present values" in res.summary()


@pytest.mark.parametrize("method", microagg.methods.names())
def test_every_method_accepts_missing_values(method):
    from microagg.methods import get

    info = get(method)
    df = survey(7, 60)
    univariate = not info.multivariate and not info.per_variable
    columns = ["income"] if univariate else COLUMNS
    res = _run(df, 3, method=method, columns=columns, work=2000)
    _check_published(df, res, 3, columns)


def test_strata_keep_groups_inside_and_means_over_present_values():
    df = survey(11, 90)
    df["region"] = np.arange(90) % 3
    res = _run(df, 3, strata=["region"])
    _check_published(df, res, 3)
    for g in np.unique(res.labels):
        assert df["region"][res.labels == g].nunique() == 1


def test_the_sums_of_squares_are_over_present_values():
    df = survey(5, 50)
    res = _run(df, 3)
    Z = res.standardized
    present = ~np.isnan(Z)
    assert res.sst == pytest.approx(float(present.sum()))  # z-scores over the present values
    Zp = res.scaler.transform(res.data[COLUMNS].to_numpy(dtype=float))
    assert res.sse == pytest.approx(float(np.nansum((Z - Zp) ** 2)))


def test_csv_blank_and_declared_tokens_come_out_as_they_went_in(tmp_path, capsys):
    df = survey(2, 60)
    text = df.to_csv(index=False)  # blank fields for the missing values
    lines = text.splitlines()
    # the hours of one record written with the declared token NA instead of a blank
    at = next(i for i in range(1, len(lines)) if lines[i].endswith(","))
    lines[at] = lines[at] + "NA"
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text("\n".join(lines) + "\n")
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--missing", "NA"]) == 0
    before = [line.split(",") for line in src.read_text().splitlines()]
    after = [line.split(",") for line in out.read_text().splitlines()]
    assert len(before) == len(after) and before[0] == after[0]
    for old, new in zip(before[1:], after[1:], strict=True):
        assert new[0] == old[0]  # the id, byte for byte
        for j in (2, 3):  # income, hours: missing exactly where they were, as they were written
            if old[j] in ("", "NA"):
                assert new[j] == old[j]
            else:
                assert new[j] not in ("", "NA")
    from microagg import io

    back = io.read(out, missing=("NA",)).frame
    published = back[COLUMNS]
    assert key_frequencies(published, COLUMNS, 3, missing="wildcard").is_k_anonymous
    capsys.readouterr()
    assert main(["evaluate", str(src), str(out)]) == 0  # read as the manifest says: NA missing
    said = capsys.readouterr()
    assert "(age, income, hours): 3-anonymous" in said.out and "differ" not in said.err


@pytest.mark.parametrize("suffix", ["parquet", "dta"])
def test_parquet_and_stata_round_trips_keep_missing_values(tmp_path, suffix):
    df = survey(4, 60)
    src, out = tmp_path / f"in.{suffix}", tmp_path / f"out.{suffix}"
    if suffix == "parquet":
        df.to_parquet(src)
    else:
        df.to_stata(src, write_index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = microagg.protect(src, out, k=3, columns=COLUMNS, continuous=COLUMNS)
    back = pd.read_parquet(out) if suffix == "parquet" else pd.read_stata(out)
    assert back[COLUMNS].isna().equals(df[COLUMNS].isna())
    assert back["id"].tolist() == df["id"].tolist()
    assert key_frequencies(back[COLUMNS], COLUMNS, 3, missing="wildcard").is_k_anonymous
    assert res.audit.context["means_below_k_present"] == 0


def test_a_default_cli_protect_of_a_survey_with_missing_values_succeeds(tmp_path, capsys):
    src, out = tmp_path / "survey.csv", tmp_path / "out.csv"
    survey(9, 80).to_csv(src, index=False)
    assert main(["protect", str(src), "-o", str(out), "-k", "3"]) == 0
    said = capsys.readouterr().out
    assert "missing values:" in said and "at least 3 present values" in said
    assert main(["evaluate", str(src), str(out)]) == 0


class _Events:
    def __init__(self):
        self.events = []

    def send(self, event):
        self.events.append(event)


def test_the_app_run_publishes_measures_and_reports_a_survey_with_missing_values(tmp_path):
    from microagg.app import protect_worker, runspec

    src = tmp_path / "survey.csv"
    df = survey(12, 90)
    df.to_csv(src, index=False)
    spec = runspec.RunSpec.of(str(src), src.name, k=3, method="mdav", columns=COLUMNS)
    events = _Events()
    protect_worker.worker(spec, str(tmp_path), 1, events)
    assert events.events[-1][0] == "done", events.events[-1]
    served = protect_worker.published_path(tmp_path, 1, spec)
    back = pd.read_csv(served)
    assert back[COLUMNS].isna().equals(df[COLUMNS].isna())
    report = (tmp_path / "run-1.html").read_text()
    assert report.count("<html") == 1 and "nan" not in report  # figures over complete records


def test_explore_runs_and_audits_a_survey_with_missing_values():
    df = survey(13, 90)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = microagg.explore(
            df, k=[3, 4], methods=["mdav", "kward"], columns=COLUMNS, continuous=COLUMNS
        )
    assert [r.status for r in found.runs] == ["ok"] * 4
    for r in found.runs:
        assert r.figures["risk"]["key_records_below_k"] == 0
        assert r.figures["run"]["sst"] == pytest.approx(df[COLUMNS].notna().to_numpy().sum())


def test_spss_user_missing_codes_in_a_qi_are_missing_and_written_back_as_they_were(tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    df = survey(5, 60)
    df["hours"] = df["hours"].fillna(99)  # 99 = "no work", declared user-missing
    src, out = tmp_path / "in.sav", tmp_path / "out.sav"
    pyreadstat.write_sav(df, src, missing_ranges={"hours": [99]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = microagg.protect(src, out, k=3, columns=COLUMNS, continuous=COLUMNS)
    back, _ = pyreadstat.read_sav(out, user_missing=True)
    assert (back["hours"] == 99).tolist() == (df["hours"] == 99).tolist()
    assert back["income"].isna().tolist() == df["income"].isna().tolist()
    assert res.audit.context["missing_values"] == int((df["hours"] == 99).sum()) + int(
        df["income"].isna().sum()
    )
    assert res.audit.group("risk")["key_records_below_k"] == 0


@pytest.mark.parametrize(
    "options",
    [
        {"distance": "mahalanobis"},
        {"distance": "robust"},
        {"weights": [1.0, 2.0, 3.0]},
        {"standardize": False},
        {"block_size": 40},
    ],
)
def test_run_options_keep_the_missing_values_promise(options):
    df = survey(21, 120)
    _check_published(df, _run(df, 3, **options), 3)


@pytest.mark.parametrize("options", [{"aggregation": "median"}, {"sample_weight": "w"}])
def test_other_representatives_are_over_present_values(options):
    df = survey(22, 90)
    df["w"] = np.random.default_rng(1).uniform(1, 5, len(df))
    res = _run(df, 3, **options)
    assert res.data[COLUMNS].isna().equals(df[COLUMNS].isna())
    w = df["w"].to_numpy() if "sample_weight" in options else np.ones(len(df))
    for c in COLUMNS:
        present = df[c].notna().to_numpy()
        for g in np.unique(res.labels[present]):
            members = present & (res.labels == g)
            assert members.sum() >= 3
            x, got = df[c].to_numpy(float)[members], res.data[c].to_numpy(float)[members]
            if "sample_weight" in options:  # the weighted mean of the present values
                want = np.average(x, weights=w[members])
            else:  # a median of the present values lies among them
                want = got[0] if x.min() <= got[0] <= x.max() else np.nan
            np.testing.assert_allclose(got, want, rtol=1e-9)


def test_polars_and_pyarrow_frames_get_their_missing_values_back_as_nulls():
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    df = survey(3, 60)
    for native in (pl.from_pandas(df), pa.Table.from_pandas(df)):
        out = _run(native, 3).data
        for c in COLUMNS:
            nulls = (
                out[c].null_count() if isinstance(out, pl.DataFrame) else out.column(c).null_count
            )
            assert nulls == int(df[c].isna().sum())
        if isinstance(out, pl.DataFrame):
            assert int(out["income"].is_nan().sum()) == 0  # null, not NaN
