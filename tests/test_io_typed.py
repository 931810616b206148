"""microagg.io parquet and excel: typed formats keep dtypes, schema, styles; only QI cells
change."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import assert_k_anonymous, frame_for_formats, protect_table
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from microagg import io
from microagg.cli import main
from microagg.errors import InputError


def test_parquet_decimal_column_is_numeric(tmp_path, capsys):
    """A Parquet decimal column (money: decimal128(12, 2)) came to the pipeline as Python Decimal
    objects: the default selection left it out with no warning (only 'unchanged'), and naming it in
    --columns said it was not numeric."""
    import decimal
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 12
    src = tmp_path / "in.parquet"
    pq.write_table(
        pa.table(
            {
                "income": pa.array(
                    [decimal.Decimal(f"{1000 + 37 * (i * 5 % n)}.25") for i in range(n)],
                    pa.decimal128(12, 2),
                ),
                "age": pa.array([20 + (i * 7) % 50 for i in range(n)], pa.int64()),
                "name": pa.array([f"n{i}" for i in range(n)]),
            }
        ),
        src,
    )
    out = tmp_path / "out.parquet"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["columns"] == ["income", "age"]
    res = pq.read_table(out)
    assert res.column("name").equals(pq.read_table(src).column("name"))
    published = res.column("income").to_pylist()
    assert len(set(published)) <= n // 3 and all(isinstance(v, float) for v in published)
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--columns", "income"]) == 0


def test_a_folder_without_parquet_files_says_so(tmp_path, capsys):
    """A folder is read as a Parquet dataset; an empty folder named data.csv said 'input has no
    data rows', a folder of CSV files spoke of Parquet magic bytes."""
    empty = tmp_path / "data.csv"
    empty.mkdir()
    csvs = tmp_path / "csvs"
    csvs.mkdir()
    (csvs / "a.csv").write_text("a,b\n1,2\n3,4\n")
    for folder in (empty, csvs):
        assert main(["protect", str(folder), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 2
        assert (
            capsys.readouterr().err
            == f"microagg: error: input {folder} is a folder without Parquet files "
            "(a folder is read as a Parquet dataset; give a file)\n"
        )


@pytest.mark.parametrize("suffix", [".csv", ".dta"])
def test_a_parquet_files_pandas_index_is_a_column_when_converted(tmp_path, suffix):
    """A Parquet file written by pandas with a named index (key) kept it as the frame's index, so a
    conversion to CSV or Stata dropped the column without a word (Parquet to Parquet kept it)."""
    src = tmp_path / "in.parquet"
    pd.DataFrame(
        {"a": np.arange(6) * 1.0, "b": np.arange(6) % 4 * 1.0},
        index=pd.Index([f"k{i}" for i in range(6)], name="key"),
    ).to_parquet(src)
    out = tmp_path / f"out{suffix}"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q"]) == 0
    res = pd.read_csv(out) if suffix == ".csv" else pd.read_stata(out)
    assert list(res.columns) == ["a", "b", "key"] and res["key"].tolist() == [
        f"k{i}" for i in range(6)
    ]
    assert main(["protect", str(src), "-o", str(tmp_path / "out.parquet"), "-k", "2", "-q"]) == 0
    back = pd.read_parquet(tmp_path / "out.parquet")
    assert back.index.name == "key" and back.index.tolist() == [f"k{i}" for i in range(6)]


def test_text_starting_with_an_equals_sign_stays_text_in_excel(tmp_path):
    """CSV to Excel: a text cell '=1+1' became a formula (Excel shows 2; '=HYPERLINK(...)' a live
    link): the value changed, and a file could carry formulas its author never wrote."""
    openpyxl = pytest.importorskip("openpyxl")
    src = tmp_path / "in.csv"
    src.write_text('a,b,note\n1,2,=1+1\n3,4,"=HYPERLINK(""http://x"")"\n5,6,plain\n7,8,-2+3\n')
    out = tmp_path / "out.xlsx"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "a,b"]) == 0
    cells = [row[2] for row in openpyxl.load_workbook(out).active.iter_rows(min_row=2)]
    assert [(c.value, c.data_type) for c in cells] == [
        ("=1+1", "s"),
        ('=HYPERLINK("http://x")', "s"),
        ("plain", "s"),
        ("-2+3", "s"),
    ]


def test_an_excel_integer_column_with_a_blank_cell_stays_integer(tmp_path):
    """Excel to CSV: an integer column with one blank cell became floats ('100.0'), and float64 in
    Parquet, because pandas holds a missing value in a float column."""
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["a", "b", "code"])
    for i in range(6):
        ws.append([i * 1.5, i % 4, None if i == 2 else i + 100])
    src = tmp_path / "in.xlsx"
    wb.save(src)
    out = tmp_path / "out.csv"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "a,b"]) == 0
    codes = [line.split(",")[2] for line in out.read_text().splitlines()]
    assert codes == ["code", "100", "101", "", "103", "104", "105"]
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(tmp_path / "out.parquet"),
                "-k",
                "2",
                "-q",
                "--columns",
                "a,b",
            ]
        )
        == 0
    )
    code = pd.read_parquet(tmp_path / "out.parquet")["code"]
    assert pd.api.types.is_integer_dtype(code.dtype)
    assert code.isna().tolist() == [False, False, True, False, False, False]
    assert code.dropna().tolist() == [100, 101, 103, 104, 105]


def test_parquet_keeps_dtypes_and_schema_metadata(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = frame_for_formats()
    arrow = pa.Table.from_pandas(df, preserve_index=False)
    arrow = arrow.replace_schema_metadata({**arrow.schema.metadata, b"survey": b"2024 wave 3"})
    src = tmp_path / "in.parquet"
    pq.write_table(arrow, src)
    table = io.read(src)
    published = protect_table(table, ["age", "income"])
    out = tmp_path / "out.parquet"
    io.write(table, out, published)
    back = pq.read_table(out)
    assert back.schema.metadata[b"survey"] == b"2024 wave 3"
    res = back.to_pandas()
    assert list(res.columns) == list(df.columns)
    for c in ("region", "name"):
        pd.testing.assert_series_equal(res[c], df[c])
    assert res["income"].dtype == np.float64
    assert_k_anonymous(res, ["age", "income"], 3)


def test_parquet_folder_is_read(tmp_path):
    df = frame_for_formats()
    folder = tmp_path / "dataset"
    folder.mkdir()
    df.iloc[:12].to_parquet(folder / "part-0.parquet", index=False)
    df.iloc[12:].to_parquet(folder / "part-1.parquet", index=False)
    table = io.read(folder)
    assert len(table.frame) == len(df)


def test_excel_changes_only_qi_cells_keeping_styles_and_sheets(tmp_path):
    import openpyxl
    from openpyxl.styles import Font

    df = frame_for_formats()
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "data"
    ws.append(list(df.columns) + ["zip"])
    for i, row in enumerate(df.itertuples(index=False)):
        ws.append([int(row.age), float(row.income), int(row.region), row.name, f"{i:05d}"])
    ws["D2"].font = Font(bold=True)
    wb.create_sheet("notes")["A1"] = "read me"
    src = tmp_path / "in.xlsx"
    wb.save(src)
    table = io.read(src)
    assert table.frame["zip"].iloc[3] == "00003"
    published = protect_table(table, ["age", "income"])
    out = tmp_path / "out.xlsx"
    io.write(table, out, published)
    wb2 = openpyxl.load_workbook(out)
    assert wb2.sheetnames == ["data", "notes"] and wb2["notes"]["A1"].value == "read me"
    assert wb2["data"]["D2"].font.bold
    back = pd.read_excel(out, sheet_name="data", dtype={"zip": str})
    assert (back["zip"] == [f"{i:05d}" for i in range(len(df))]).all()
    assert (back["name"] == df["name"]).all() and (back["region"] == df["region"]).all()
    assert_k_anonymous(back, ["age", "income"], 3)


def test_format_conversion_csv_to_parquet(tmp_path):
    src = tmp_path / "in.csv"
    frame_for_formats().to_csv(src, index=False)
    table = io.read(src)
    published = protect_table(table, ["age", "income"])
    io.write(table, tmp_path / "out.parquet", published)
    back = pd.read_parquet(tmp_path / "out.parquet")
    assert (back["name"] == frame_for_formats()["name"]).all()
    assert_k_anonymous(back, ["age", "income"], 3)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_parquet_typed_frames_keep_every_non_qi_column(tmp_path_factory, data):
    n = data.draw(st.integers(6, 20))
    k = data.draw(st.integers(2, 3))
    dtypes = data.draw(
        st.lists(
            st.sampled_from(["int8", "int32", "int64", "float32", "float64", "bool", "str"]),
            min_size=1,
            max_size=4,
        )
    )
    frame = {}
    for j, dt in enumerate(dtypes):
        if dt == "str":
            frame[f"c{j}"] = data.draw(st.lists(st.text(max_size=5), min_size=n, max_size=n))
        elif dt == "bool":
            frame[f"c{j}"] = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
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
    folder = tmp_path_factory.mktemp("pq")
    df.to_parquet(folder / "in.parquet", index=False)
    table = io.read(folder / "in.parquet")
    published = protect_table(table, ["q"], k)
    io.write(table, folder / "out.parquet", published)
    back = pd.read_parquet(folder / "out.parquet")
    for c in df.columns:
        if c != "q":
            pd.testing.assert_series_equal(back[c], df[c])
    assert_k_anonymous(back, ["q"], k)


def test_damaged_typed_files_are_one_line_input_errors(tmp_path):
    for name in ("bad.xlsx", "bad.parquet", "bad.dta", "bad.sav", "bad.xpt"):
        p = tmp_path / name
        p.write_bytes(b"not really a file of this kind")
        with pytest.raises(InputError, match=f"cannot read {name}"):
            io.read(p)


def test_excel_sheet_is_chosen_and_a_missing_sheet_named(tmp_path):
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.title = "cover"
    wb.active["A1"] = "survey 2024"
    ws = wb.create_sheet("data")
    ws.append(["x", "label"])
    for i in range(6):
        ws.append([i * 1.5, f"r{i}"])
    src = tmp_path / "in.xlsx"
    wb.save(src)
    table = io.read(src, sheet="data")
    io.write(table, tmp_path / "out.xlsx", protect_table(table, ["x"]))
    back = openpyxl.load_workbook(tmp_path / "out.xlsx")
    assert back["cover"]["A1"].value == "survey 2024"
    assert [c.value for c in back["data"]["B"]][1:] == [f"r{i}" for i in range(6)]
    with pytest.raises(InputError, match="no sheet 'nope' in in.xlsx; its sheets: cover, data"):
        io.read(src, sheet="nope")
