"""microagg.io stata, spss and sas: labels, formats, measures, user-missing values and dates
kept."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import assert_k_anonymous, frame_for_formats, protect_table
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg import io
from microagg.cli import main
from microagg.errors import InputError


def test_stata_daily_dates_stay_daily_dates(tmp_path):
    """A Stata %td (daily) date column was written back as %tc (milliseconds since 1960): the
    variable's type in Stata changed although the column was not a quasi-identifier."""
    import warnings

    pyreadstat = pytest.importorskip("pyreadstat")
    n = 9
    df = pd.DataFrame(
        {
            "x": np.arange(n) * 1.5,
            "y": (np.arange(n) * 7 % 5).astype(float),
            "born": pd.to_datetime([f"2021-02-{i + 1:02d}" for i in range(n)]),
            "seen": pd.to_datetime([f"2020-01-01 10:{i:02d}" for i in range(n)]),
            "month": pd.to_datetime([f"2019-{i + 1:02d}-01" for i in range(n)]),
        }
    )
    src = tmp_path / "in.dta"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df.to_stata(
            src,
            write_index=False,
            version=118,
            convert_dates={"born": "td", "seen": "tc", "month": "tm"},
        )
    out = tmp_path / "out.dta"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q"]) == 0
    types = pyreadstat.read_dta(str(out), metadataonly=True)[1].original_variable_types
    assert (types["born"], types["seen"], types["month"]) == ("%td", "%tc", "%tm")
    a, b = pd.read_stata(src), pd.read_stata(out)
    for c in ("born", "seen", "month"):
        assert a[c].tolist() == b[c].tolist()


@pytest.mark.parametrize("suffix", [".xpt", ".sav"])
def test_names_the_output_format_cannot_hold_are_one_error_before_any_work(
    tmp_path, capsys, monkeypatch, suffix
):
    """CSV to SAS transport with a column named 'région': pyreadstat's ReadstatError escaped as an
    internal error (exit 1, a traceback), after the whole computation. Now a dry write of the
    first rows finds it before the method runs: exit 2, one line, nothing written."""
    import microagg.api

    src = tmp_path / "in.csv"
    src.write_text("household income,age,région\n1,2,a\n3,4,b\n5,6,c\n7,8,d\n")
    out = tmp_path / f"out{suffix}"
    ran = []
    monkeypatch.setattr(microagg.api, "compute", lambda *a, **k: ran.append(1))
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "age"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"microagg: error: cannot write out{suffix} as ") and err.count("\n") == 1
    assert not ran and not any(tmp_path.glob("*out*"))


def test_a_published_value_on_an_spss_user_missing_code_is_told(tmp_path, capsys):
    """SPSS user-missing values are written back as declared; a group mean that lands on one (the
    mean of 8 and 10 is the code 9, 'don't know') is read by SPSS as missing: the published record
    silently lost its value. Now a warning names the column and the count."""
    pyreadstat = pytest.importorskip("pyreadstat")
    src = tmp_path / "in.sav"
    df = pd.DataFrame({"score": [8.0, 10.0, 8.0, 10.0], "other": [1.0, 2.0, 3.0, 4.0]})
    pyreadstat.write_sav(df, str(src), missing_ranges={"score": [9]})
    out = tmp_path / "out.sav"
    assert main(["protect", str(src), "-o", str(out), "-k", "4", "-q", "--columns", "score"]) == 0
    err = capsys.readouterr().err
    assert "warning: column score: 4 published value(s) fall on its SPSS user-missing values" in err
    back, meta = pyreadstat.read_sav(str(out), user_missing=True)
    assert back["score"].tolist() == [9.0] * 4 and meta.missing_ranges == {
        "score": [{"lo": 9.0, "hi": 9.0}]
    }


@pytest.mark.parametrize("fmt", ["dta", "sav"])
def test_a_column_whose_every_value_is_labelled_is_not_a_default_qi(tmp_path, capsys, fmt):
    """A Stata / SPSS column whose every value has a value label (region: 1 north, 2 centre,
    3 south) holds category codes; the default selection averaged it (1.67 'regions') and dropped
    its labels. Now it is left out with a warning, as identifiers and codes are; a continuous column
    with a label on a special value only (income: 99999 'top-coded') stays a QI."""
    import json
    import warnings

    pyreadstat = pytest.importorskip("pyreadstat")
    rng = np.random.default_rng(5)
    n = 18
    df = pd.DataFrame(
        {
            "income": np.r_[rng.normal(3000, 400, n - 1).round(), 99999.0],
            "age": rng.integers(20, 70, n).astype(float),
            "region": rng.integers(1, 4, n).astype(float),
        }
    )
    labels = {"region": {1: "north", 2: "centre", 3: "south"}, "income": {99999: "top-coded"}}
    src = tmp_path / f"in.{fmt}"
    if fmt == "dta":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df.astype({"region": np.int8}).to_stata(src, write_index=False, value_labels=labels)
    else:
        pyreadstat.write_sav(df, str(src), variable_value_labels=labels)
    assert main(["protect", str(src), "-o", str(tmp_path / f"out.{fmt}"), "-k", "3", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["columns"] == ["income", "age"]
    # one line per rule with its columns (-q would print only the count)
    assert (
        "warning: not protected, category codes (value labels" in captured.err
        and ": region (" in captured.err
    )


def test_spss_string_user_missing_values_are_read(tmp_path):
    """An SPSS file declaring a user-missing value on a string variable ('NA') could not be read
    at all: 'cannot read ... Cannot interpret StringDtype as a data type' (numpy's issubdtype on a
    pandas string dtype)."""
    pyreadstat = pytest.importorskip("pyreadstat")
    df = pd.DataFrame(
        {
            "x": np.arange(9) * 1.5,
            "y": np.arange(9) % 4 * 1.0,
            "s": ["a", "b", "NA", "c", "d", "e", "f", "g", "h"],
        }
    )
    src = tmp_path / "in.sav"
    pyreadstat.write_sav(df, str(src), missing_ranges={"s": ["NA"]})
    out = tmp_path / "out.sav"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q"]) == 0
    back, meta = pyreadstat.read_sav(str(out), user_missing=True)
    assert back["s"].tolist() == df["s"].tolist() and meta.missing_ranges == {
        "s": [{"lo": "NA", "hi": "NA"}]
    }


def test_spss_user_missing_values_lost_in_a_conversion_are_told(tmp_path, capsys):
    """SPSS to Stata (or any other format): the user-missing declarations (9 'refused' is missing)
    cannot be kept, so 9 became an ordinary value without a word."""
    pyreadstat = pytest.importorskip("pyreadstat")
    df = pd.DataFrame(
        {
            "x": np.arange(9) * 1.5,
            "y": np.arange(9) % 4 * 1.0,
            "code": [1.0, 2, 9, 1, 2, 1, 2, 1, 2],
        }
    )
    src = tmp_path / "in.sav"
    pyreadstat.write_sav(df, str(src), missing_ranges={"code": [9]})
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(tmp_path / "out.dta"),
                "-k",
                "3",
                "-q",
                "--columns",
                "x,y",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "warning: column(s) code have SPSS user-missing values" in err
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(tmp_path / "out.sav"),
                "-k",
                "3",
                "-q",
                "--columns",
                "x,y",
            ]
        )
        == 0
    )
    assert "user-missing" not in capsys.readouterr().err


def test_a_name_stata_cannot_hold_is_one_error_before_any_work(tmp_path, capsys, monkeypatch):
    """Issue 31: a column name the output format cannot hold was renamed with a warning where the
    README promises an error; now a dry write finds it before any work: one line naming them."""
    import microagg.api

    ran = []
    monkeypatch.setattr(microagg.api, "compute", lambda *a, **k: ran.append(1))
    src = tmp_path / "in.csv"
    src.write_text(
        "a very long column name that exceeds thirty two chars,b c\n1,2\n3,4\n5,6\n7,8\n"
    )
    assert main(["protect", str(src), "-o", str(tmp_path / "out.dta"), "-k", "2", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "microagg: error: cannot write out.dta as stata: column name(s) "
    )
    assert "'b c'" in err and "'a very long column name that exceeds thirty two chars'" in err
    assert not ran and not (tmp_path / "out.dta").exists()


def test_stata_file_through_the_cli_keeps_labels(tmp_path, capsys):
    import pyreadstat

    rng = np.random.default_rng(2)
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 80, 30).astype(np.int16),
            "income": rng.normal(3000, 500, 30),
            "sex": rng.integers(1, 3, 30).astype(np.int8),
        }
    )
    src, out = tmp_path / "in.dta", tmp_path / "out.dta"
    df.to_stata(
        src,
        write_index=False,
        value_labels={"sex": {1: "male", 2: "female"}},
        variable_labels={"income": "Monthly income"},
    )
    assert (
        main(["protect", str(src), "-o", str(out), "-k", "3", "--columns", "age,income", "-q"]) == 0
    )
    back, meta = pyreadstat.read_dta(str(out))
    assert meta.variable_value_labels["sex"] == {1: "male", 2: "female"}
    assert meta.column_names_to_labels["income"] == "Monthly income"
    assert (back["sex"].to_numpy() == df["sex"].to_numpy()).all()
    assert microagg.measures.smallest_group(back[["age", "income"]]) >= 3


def test_stata_keeps_types_value_labels_and_variable_labels(tmp_path):
    import pyreadstat

    df = frame_for_formats()
    src = tmp_path / "in.dta"
    df.to_stata(
        src,
        write_index=False,
        version=118,
        variable_labels={"age": "Age in years", "region": "Region"},
        value_labels={"region": {1: "north", 2: "centre", 3: "south"}},
        data_label="Test survey",
    )
    table = io.read(src)
    published = protect_table(table, ["age", "income"])
    out = tmp_path / "out.dta"
    io.write(table, out, published)
    back = pd.read_stata(out, convert_categoricals=False)
    assert (
        back["region"].dtype == np.int8
        and (back["region"].to_numpy() == df["region"].to_numpy()).all()
    )
    assert (back["name"] == df["name"]).all()
    _, meta = pyreadstat.read_dta(str(out))
    assert meta.variable_value_labels["region"] == {1: "north", 2: "centre", 3: "south"}
    assert meta.column_names_to_labels["age"] == "Age in years"
    assert meta.file_label == "Test survey"
    assert_k_anonymous(back, ["age", "income"], 3)


@pytest.mark.parametrize("suffix", [".sav", ".zsav"])
def test_spss_keeps_labels_formats_and_user_missing(tmp_path, suffix):
    import pyreadstat

    df = frame_for_formats().astype({"age": float, "region": float})
    df.loc[0, "region"] = 9.0  # user-missing code in a non-QI column: written back as it was
    src = tmp_path / f"in{suffix}"
    pyreadstat.write_sav(
        df,
        str(src),
        column_labels={"age": "Age", "region": "Region"},
        variable_value_labels={
            "region": {1.0: "north", 2.0: "centre", 3.0: "south", 9.0: "refused"}
        },
        missing_ranges={"region": [9.0]},
        variable_measure={"region": "nominal", "age": "scale"},
        compress=suffix == ".zsav",
    )
    table = io.read(src)
    published = protect_table(table, ["age", "income"])
    out = tmp_path / f"out{suffix}"
    io.write(table, out, published)
    back, meta = pyreadstat.read_sav(str(out), user_missing=True)
    assert (back["region"].to_numpy() == df["region"].to_numpy()).all()
    assert (back["name"] == df["name"]).all()
    assert meta.variable_value_labels["region"][9.0] == "refused"
    assert meta.column_names_to_labels["age"] == "Age"
    assert meta.variable_measure["region"] == "nominal"
    assert meta.missing_ranges["region"] == [{"lo": 9.0, "hi": 9.0}]
    assert_k_anonymous(back, ["age", "income"], 3)
    # the user-missing code is missing for the pipeline: as a QI it is an error
    with pytest.raises(InputError, match="region"):
        microagg.microaggregate(table.frame, k=3, columns=["region", "age"])


def test_sas_transport_round_trip_and_sas7bdat_not_written(tmp_path):
    import pyreadstat

    df = frame_for_formats().astype({"age": float, "region": float})
    src = tmp_path / "in.xpt"
    pyreadstat.write_xport(df, str(src), column_labels={"age": "Age"}, table_name="SURVEY")
    table = io.read(src)
    published = protect_table(table, ["age", "income"])
    out = tmp_path / "out.xpt"
    io.write(table, out, published)
    back, meta = pyreadstat.read_xport(str(out))
    assert (back["name"] == df["name"]).all() and (back["region"] == df["region"]).all()
    assert meta.column_names_to_labels["age"] == "Age"
    assert_k_anonymous(back, ["age", "income"], 3)
    with pytest.raises(InputError, match="sas7bdat.*\\.xpt"):
        io.write(table, tmp_path / "out.sas7bdat", published)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from([".dta", ".sav"]))
def test_stata_and_spss_typed_frames_keep_every_non_qi_column(tmp_path_factory, data, suffix):
    import pyreadstat

    n = data.draw(st.integers(6, 16))
    k = data.draw(st.integers(2, 3))
    kinds = (
        ["int8", "int16", "int32", "float32", "float64", "str"]
        if suffix == ".dta"
        else ["float64", "str"]
    )
    dtypes = data.draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=4))
    frame = {}
    for j, dt in enumerate(dtypes):
        if dt == "str":
            frame[f"c{j}"] = data.draw(
                st.lists(
                    st.text(alphabet="abc xyz09", min_size=1, max_size=5), min_size=n, max_size=n
                )
            )
        elif dt.startswith("int"):
            frame[f"c{j}"] = np.array(
                data.draw(st.lists(st.integers(-100, 100), min_size=n, max_size=n)), dtype=dt
            )
        else:
            frame[f"c{j}"] = np.array(
                data.draw(st.lists(st.floats(-1e6, 1e6, width=32), min_size=n, max_size=n)),
                dtype=dt,
            )
    frame["q"] = np.array(data.draw(st.lists(st.floats(-1e6, 1e6), min_size=n, max_size=n)))
    df = pd.DataFrame(frame)
    folder = tmp_path_factory.mktemp("typed")
    src, out = folder / f"in{suffix}", folder / f"out{suffix}"
    if suffix == ".dta":
        df.to_stata(src, write_index=False, version=118)
    else:
        pyreadstat.write_sav(df, str(src))
    table = io.read(src)
    published = protect_table(table, ["q"], k)
    io.write(table, out, published)
    if suffix == ".dta":
        before, after = pd.read_stata(src), pd.read_stata(out)
    else:
        before, after = pyreadstat.read_sav(str(src))[0], pyreadstat.read_sav(str(out))[0]
    for c in df.columns:
        if c != "q":
            pd.testing.assert_series_equal(after[c], before[c])
    assert_k_anonymous(after, ["q"], k)


def test_stata_extended_missing_values_are_not_lost_silently(tmp_path):
    import pyreadstat

    df = pd.DataFrame({"a": [1.0, 2.0, "a", 4.0, 5.0, 6.0], "b": [1.5, 2.0, 3.0, 4.0, 5.0, 6.0]})
    src = tmp_path / "in.dta"
    pyreadstat.write_dta(df, str(src), missing_user_values={"a": ["a"]})
    table = io.read(src)
    with pytest.warns(UserWarning, match=r"column\(s\) a hold Stata extended missing values"):
        io.write(table, tmp_path / "out.dta", protect_table(table, ["b"]))
