"""A hostile tester's pass over the edge between microagg and a statistician's real file:
whatever was not asked to change comes out as it came in, and no column escapes unnoticed."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from microagg.cli import main


def _lines(n, make):
    return "".join(make(i) for i in range(n))


def test_out_of_core_csv_keeps_the_text_of_other_columns(tmp_path):
    """--out-of-core read a CSV with pandas' type guessing: the zip code 00007 came out as the
    integer 7 and the distinct texts NA, null and '' all became one missing value."""
    rng = np.random.default_rng(0)
    notes = ["NA", "null", "", "x"]
    src = tmp_path / "in.csv"
    src.write_text("zip,note,a,b\n" + _lines(40, lambda i: f"{i:05d},{notes[i % 4]},{rng.normal():.3f},"
                                                           f"{rng.normal():.3f}\n"))
    out = tmp_path / "out"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--out-of-core", "--block-size", "10",
                 "--columns", "a,b"]) == 0
    res = pd.read_parquet(out)
    assert res["zip"].tolist() == [f"{i:05d}" for i in range(40)]
    assert res["note"].tolist() == [notes[i % 4] for i in range(40)]
    assert res[["a", "b"]].dtypes.tolist() == [np.float64, np.float64]


def test_out_of_core_default_columns_follow_the_csv_rules(tmp_path, capsys):
    """The default QIs of --out-of-core come from the same column rules as in memory: a code with
    leading zeros is not a QI (it was read as an integer and averaged)."""
    rng = np.random.default_rng(1)
    src = tmp_path / "in.csv"
    src.write_text("zip,a,b\n" + _lines(30, lambda i: f"{(i * 7) % 30 + 1:05d},{rng.normal():.3f},"
                                                      f"{rng.normal():.3f}\n"))
    out = tmp_path / "out"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--out-of-core", "--block-size", "10"]) == 0
    res = pd.read_parquet(out)
    assert res["zip"].tolist() == [f"{(i * 7) % 30 + 1:05d}" for i in range(30)]
    assert "zip" in capsys.readouterr().err  # the warning names it


def test_out_of_core_csv_with_semicolons(tmp_path):
    """A ';'-separated CSV was read as one text column: 'no numeric columns'."""
    rng = np.random.default_rng(2)
    src = tmp_path / "in.csv"
    src.write_text("a;b;c\n" + _lines(30, lambda i: f"{rng.normal():.3f};{rng.normal():.3f};t{i}\n"))
    out = tmp_path / "out"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--out-of-core", "--block-size", "10"]) == 0
    res = pd.read_parquet(out)
    assert list(res.columns) == ["a", "b", "c"] and res["c"].tolist() == [f"t{i}" for i in range(30)]


@pytest.mark.parametrize("cells", [
    ['"1,234"', '"12,500"', '"3,001"', '"45,000"', '"2,100"', '"9,999"'],  # thousands separators
    ["\u22125", "\u221212", "3", "\u22127", "8", "\u22121"],  # the unicode minus sign
    ["1 234", "12 500", "3 001", "45 000", "2 100", "9 999"],  # spaces between thousands
])
def test_numbers_in_another_notation_do_not_escape_silently(tmp_path, capsys, cells):
    """A column of numbers written with thousands separators or a unicode minus was read as text
    and left unprotected with no word but its name in the 'unchanged' list."""
    src = tmp_path / "in.csv"
    src.write_text("income,a,b\n" + "".join(f"{c},{i % 3},{(i * 5) % 7}\n" for i, c in enumerate(cells)))
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 0
    err = capsys.readouterr().err
    assert "warning: column income" in err and "not protected" in err
    assert (tmp_path / "out.csv").read_text().splitlines()[1].startswith(cells[0] + ",")


def test_evaluate_warns_when_the_records_are_not_in_the_same_order(tmp_path, capsys):
    """evaluate compares records row by row: a protected file in another order (sorted, shuffled)
    gave an IL of about 200 % without a word; the columns both files share and that the protection
    does not touch (an id) show the misalignment."""
    rng = np.random.default_rng(3)
    orig = tmp_path / "orig.csv"
    orig.write_text("id,a,b\n" + _lines(30, lambda i: f"p{i:03d},{rng.normal():.3f},{rng.normal():.3f}\n"))
    prot = tmp_path / "prot.csv"
    assert main(["protect", str(orig), "-o", str(prot), "-k", "3", "-q"]) == 0
    lines = prot.read_text().splitlines()
    shuffled = tmp_path / "shuffled.csv"
    shuffled.write_text("\n".join([lines[0]] + lines[1:][::-1]) + "\n")
    capsys.readouterr()
    assert main(["evaluate", str(orig), str(prot), "-q"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["evaluate", str(orig), str(shuffled), "-q"]) == 0
    err = capsys.readouterr().err
    assert "warning: column id differs between the files" in err and "row 1" in err


def test_sample_weight_error_names_the_row_as_every_other_error_does(tmp_path, capsys):
    """Rows are counted from 1 in every error; the sample weight's said 'first at row 0' for the
    first data row and did not show the value."""
    src = tmp_path / "in.csv"
    src.write_text("w,a,b\n-2,1,5\n1,2,4\n1,3,3\n1,4,2\n")
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q", "--columns", "a,b",
                 "--sample-weight", "w"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "first at row 1 (-2" in err
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("raw", [b"\xef\xbb\xbf", b"\xff\xfe", b"\xef\xbb\xbf \r\n"])
def test_a_file_holding_only_a_byte_order_mark_is_empty(tmp_path, capsys, raw):
    """A file of nothing but a BOM (what some editors save for an empty sheet) was an internal
    error (IndexError, exit 1, a traceback) instead of the one-line 'empty' error."""
    src = tmp_path / "in.csv"
    src.write_bytes(raw)
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 2
    assert capsys.readouterr().err == f"microagg: error: input file is empty: {src}\n"


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
    pq.write_table(pa.table({
        "income": pa.array([decimal.Decimal(f"{1000 + 37 * (i * 5 % n)}.25") for i in range(n)], pa.decimal128(12, 2)),
        "age": pa.array([20 + (i * 7) % 50 for i in range(n)], pa.int64()),
        "name": pa.array([f"n{i}" for i in range(n)]),
    }), src)
    out = tmp_path / "out.parquet"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["columns"] == ["income", "age"]
    res = pq.read_table(out)
    assert res.column("name").equals(pq.read_table(src).column("name"))
    published = res.column("income").to_pylist()
    assert len(set(published)) <= n // 3 and all(isinstance(v, float) for v in published)
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--columns", "income"]) == 0


def test_columns_named_on_the_command_line_match_a_header_with_spaces(tmp_path, capsys):
    """A hand-written header 'x, y, g' has the names 'x', ' y', ' g'; --columns x,y strips what it
    is given, so ' y' could not be named at all ('unknown column(s): y')."""
    src = tmp_path / "in.csv"
    src.write_text("x, y, g\n" + "".join(f"{i}, {i * i % 7}, {'ab'[i % 2]}\n" for i in range(8)))
    out = tmp_path / "out.csv"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "x,y", "--strata", "g"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "x, y, g" and [ln.split(",")[2] for ln in lines[1:]] == [f" {'ab'[i % 2]}" for i in range(8)]
    capsys.readouterr()
    assert main(["evaluate", str(src), str(out), "-q", "--columns", "x, y"]) == 0


def test_old_mac_line_endings(tmp_path):
    """Lines ended by a bare carriage return (classic Mac OS, some exports) were one long line:
    'input has no data rows'. Now they are lines, written back with the same endings."""
    src = tmp_path / "in.csv"
    src.write_bytes(b'id,a,b\r"p\r1",1,5\rp2,2,4\rp3,3,3\rp4,4,2\r')
    out = tmp_path / "out.csv"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "a,b"]) == 0
    assert out.read_bytes() == b'id,a,b\r"p\r1",1.5,4.5\rp2,1.5,4.5\rp3,3.5,2.5\rp4,3.5,2.5\r'


def test_stata_daily_dates_stay_daily_dates(tmp_path):
    """A Stata %td (daily) date column was written back as %tc (milliseconds since 1960): the
    variable's type in Stata changed although the column was not a quasi-identifier."""
    import warnings

    pyreadstat = pytest.importorskip("pyreadstat")
    n = 9
    df = pd.DataFrame({"x": np.arange(n) * 1.5, "y": (np.arange(n) * 7 % 5).astype(float),
                       "born": pd.to_datetime([f"2021-02-{i + 1:02d}" for i in range(n)]),
                       "seen": pd.to_datetime([f"2020-01-01 10:{i:02d}" for i in range(n)]),
                       "month": pd.to_datetime([f"2019-{i + 1:02d}-01" for i in range(n)])})
    src = tmp_path / "in.dta"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df.to_stata(src, write_index=False, version=118, convert_dates={"born": "td", "seen": "tc", "month": "tm"})
    out = tmp_path / "out.dta"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q"]) == 0
    types = pyreadstat.read_dta(str(out), metadataonly=True)[1].original_variable_types
    assert (types["born"], types["seen"], types["month"]) == ("%td", "%tc", "%tm")
    a, b = pd.read_stata(src), pd.read_stata(out)
    for c in ("born", "seen", "month"):
        assert a[c].tolist() == b[c].tolist()


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
        assert capsys.readouterr().err == (f"microagg: error: input {folder} is a folder without Parquet files "
                                           "(a folder is read as a Parquet dataset; give a file)\n")


@pytest.mark.parametrize("cell, extra", [("", []), ("NA", ["--missing", "NA"]), ("  ", [])])
def test_a_missing_cell_in_a_categorical_qi_is_an_error(tmp_path, capsys, cell, extra):
    """A blank (or declared-missing) cell of a --categorical column was taken for a category of its
    own, and could be published as the group's mode for records that had a value: a record
    holding 'a' came out blank. A missing value in a QI column is an error."""
    src = tmp_path / "in.csv"
    src.write_text(f"x,y,cat\n1,2,a\n2,3,{cell}\n3,4,b\n4,5,a\n5,6,b\n6,7,a\n")
    out = tmp_path / "out.csv"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "x,y,cat",
                 "--categorical", "cat", *extra]) == 2
    assert capsys.readouterr().err == "microagg: error: missing values in quasi-identifier column(s): cat (1 rows)\n"
    assert not out.exists()


def test_a_tsv_output_is_tab_separated(tmp_path):
    """-o out.tsv from a ';'-separated file wrote ';' into a file named .tsv. The fields keep their
    text; a field holding a tab is quoted."""
    src = tmp_path / "in.csv"
    src.write_bytes(b'id;a;b;note\r\n001;1,5;2;"x;y"\r\n002;2,5;3;t\tu\r\n003;3,5;5;z\r\n004;4,5;7;w\r\n')
    out = tmp_path / "out.tsv"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "a,b"]) == 0
    assert out.read_bytes() == (b'id\ta\tb\tnote\r\n001\t2,0\t2,5\t"x;y"\r\n002\t2,0\t2,5\t"t\tu"\r\n'
                                b'003\t4,0\t6\tz\r\n004\t4,0\t6\tw\r\n')
    back = tmp_path / "back.csv"
    assert main(["protect", str(out), "-o", str(back), "-k", "2", "-q", "--columns", "a,b"]) == 0
    lines = back.read_bytes().split(b"\r\n")  # a .csv output keeps the input's dialect: tabs
    assert lines[0] == b"id\ta\tb\tnote" and lines[2].startswith(b"002\t2,0\t2,5\t") and lines[2].endswith(b'\t"t\tu"')


def test_the_report_is_never_written_over_the_start_partition(tmp_path, capsys):
    """--report was checked against the input and the output only: naming the --init file (an
    input of the run, here init.html) overwrote it with the report."""
    src = tmp_path / "in.csv"
    src.write_text("a,b\n1,2\n3,4\n5,6\n7,8\n")
    init = tmp_path / "init.html"
    init.write_text("0\n0\n1\n1\n")
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q", "--method", "icsm",
                 "--init", str(init), "--report", str(init)]) == 2
    assert capsys.readouterr().err == ("microagg: error: refusing to write the report over another file of this "
                                       f"run: {init}\n")
    assert init.read_text() == "0\n0\n1\n1\n" and not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("suffix", [".xpt", ".sav"])
def test_names_the_output_format_cannot_hold_are_one_error_before_any_work(tmp_path, capsys, monkeypatch, suffix):
    """CSV to SAS transport with a column named 'région': pyreadstat's ReadstatError escaped as an
    internal error (exit 1, a traceback), after the whole computation. Now a dry write of the
    first rows finds it before the method runs: exit 2, one line, nothing written."""
    import microagg.api

    src = tmp_path / "in.csv"
    src.write_text("household income,age,région\n1,2,a\n3,4,b\n5,6,c\n7,8,d\n")
    out = tmp_path / f"out{suffix}"
    ran = []
    monkeypatch.setattr(microagg.api, "microaggregate", lambda *a, **k: ran.append(1))
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "age"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"microagg: error: cannot write out{suffix} as ") and err.count("\n") == 1
    assert not ran and not any(tmp_path.glob("*out*"))


def test_an_interrupt_right_after_the_temporary_file_is_created_removes_it(tmp_path, monkeypatch):
    """atomic_write created its temporary file, then registered it for the Ctrl+C handler: a
    signal between the two (the handler runs in the main thread while the command writes in a
    worker) left the file behind. Creating and registering are now one step for the handler."""
    import tempfile
    import threading

    from microagg import io

    real_mkstemp = tempfile.mkstemp
    seen = {}

    def interrupted_handler():  # what the signal handler does before os._exit
        io.remove_temporaries()
        seen["left"] = sorted(p.name for p in tmp_path.glob(".*.tmp"))

    handler = threading.Thread(target=interrupted_handler)

    def mkstemp(*args, **kwargs):
        made = real_mkstemp(*args, **kwargs)
        handler.start()  # the signal arrives now
        handler.join(0.2)
        return made

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)

    def fill(tmp):
        handler.join()
        Path(tmp).write_text("done")

    io.atomic_write(tmp_path / "out.csv", fill)
    assert seen["left"] == []


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
    assert back["score"].tolist() == [9.0] * 4 and meta.missing_ranges == {"score": [{"lo": 9.0, "hi": 9.0}]}


def test_out_of_core_csv_in_cp1252(tmp_path):
    """The in-memory reader detects cp1252 / latin-1; --out-of-core read every CSV as UTF-8 and
    failed on an accented header ('utf-8' codec can't decode byte 0xe2)."""
    src = tmp_path / "in.csv"
    src.write_bytes("âge;x;région\n".encode("cp1252") + b"".join(
        f"{i};{i * 7 % 5};r\xe9g{i % 2}\n".encode("latin-1") for i in range(12)))
    out = tmp_path / "out"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--out-of-core", "--block-size", "4",
                 "--columns", "âge,x"]) == 0
    res = pd.read_parquet(out)
    assert list(res.columns) == ["âge", "x", "région"]
    assert res["région"].tolist() == [f"rég{i % 2}" for i in range(12)]


@pytest.mark.parametrize("suffix", [".csv", ".dta"])
def test_a_parquet_files_pandas_index_is_a_column_when_converted(tmp_path, suffix):
    """A Parquet file written by pandas with a named index (key) kept it as the frame's index, so a
    conversion to CSV or Stata dropped the column without a word (Parquet to Parquet kept it)."""
    src = tmp_path / "in.parquet"
    pd.DataFrame({"a": np.arange(6) * 1.0, "b": np.arange(6) % 4 * 1.0},
                 index=pd.Index([f"k{i}" for i in range(6)], name="key")).to_parquet(src)
    out = tmp_path / f"out{suffix}"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q"]) == 0
    res = pd.read_csv(out) if suffix == ".csv" else pd.read_stata(out)
    assert list(res.columns) == ["a", "b", "key"] and res["key"].tolist() == [f"k{i}" for i in range(6)]
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
        ("=1+1", "s"), ('=HYPERLINK("http://x")', "s"), ("plain", "s"), ("-2+3", "s")]


def test_a_quote_inside_an_unquoted_field_is_a_character(tmp_path):
    """A quote opens a quoted field only at the field's start (RFC 4180, Python's csv, pandas).
    The reader let a quote anywhere open one, so sizes such as 12" swallowed the following lines:
    4 records were read as 2, and the records inside the 'quoted' text came out unprotected."""
    src = tmp_path / "in.csv"
    src.write_text('a,b,size\n1,2,12"\n3,4,15"\n5,6,12"\n7,8,17"\n')
    out = tmp_path / "out.csv"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--json"]) == 0
    assert out.read_text() == 'a,b,size\n2,3,12"\n2,3,15"\n6,7,12"\n6,7,17"\n'
    conv = tmp_path / "out.parquet"
    assert main(["protect", str(src), "-o", str(conv), "-k", "2", "-q"]) == 0
    assert pd.read_parquet(conv)["size"].tolist() == ['12"', '15"', '12"', '17"']


def test_fields_split_and_unquote_as_pythons_csv_reads_them():
    """The reader's fields are those of Python's csv module: quoted fields (separators, line
    breaks and doubled quotes inside) and unquoted fields with quotes inside them."""
    import csv
    import io as stdio

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from microagg.io.csv import _split_records, _unquote

    quoted = st.text(alphabet='ab,;"\n ', max_size=6)
    plain = st.text(alphabet='ab ;"', max_size=6).filter(lambda t: not t.startswith('"'))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.lists(st.one_of(quoted.map(lambda t: ("q", t)), plain.map(lambda t: ("p", t))),
                             min_size=2, max_size=4), min_size=1, max_size=4))
    def check(rows):
        width = len(rows[0])
        rows = [r[:width] + [("p", "x")] * (width - len(r)) for r in rows]
        text = "".join(",".join('"' + v.replace('"', '""') + '"' if kind == "q" else v for kind, v in r) + "\n"
                       for r in rows)
        records, _ = _split_records(text, ",")
        assert [[_unquote(f) for f in r] for r in records] == list(csv.reader(stdio.StringIO(text)))

    check()


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
    assert main(["protect", str(src), "-o", str(tmp_path / "out.parquet"), "-k", "2", "-q", "--columns", "a,b"]) == 0
    code = pd.read_parquet(tmp_path / "out.parquet")["code"]
    assert pd.api.types.is_integer_dtype(code.dtype)
    assert code.isna().tolist() == [False, False, True, False, False, False]
    assert code.dropna().tolist() == [100, 101, 103, 104, 105]


def test_a_csv_integer_column_with_a_blank_cell_stays_integer_when_converted(tmp_path):
    """CSV to Parquet: an integer column with a blank cell became float64 (100.0)."""
    src = tmp_path / "in.csv"
    src.write_text("a,b,code\n" + "".join(f"{i * 1.5},{i % 4},{'' if i == 2 else i + 100}\n" for i in range(6)))
    out = tmp_path / "out.parquet"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "a,b"]) == 0
    code = pd.read_parquet(out)["code"]
    assert pd.api.types.is_integer_dtype(code.dtype)
    assert code.isna().tolist() == [False, False, True, False, False, False]
    assert code.dropna().tolist() == [100, 101, 103, 104, 105]


def test_the_output_is_never_written_over_the_start_partition(tmp_path, capsys):
    """-o naming the --init file (an input of the run) replaced the partition with the output."""
    src = tmp_path / "in.csv"
    src.write_text("a,b\n1,2\n3,4\n5,6\n7,8\n")
    init = tmp_path / "part.csv"
    init.write_text("0\n0\n1\n1\n")
    assert main(["protect", str(src), "-o", str(init), "-k", "2", "-q", "--method", "icsm", "--init", str(init)]) == 2
    assert capsys.readouterr().err == f"microagg: error: refusing to write the output over the --init file {init}\n"
    assert init.read_text() == "0\n0\n1\n1\n"


@pytest.mark.parametrize("extra, flag", [
    (["--out-of-core", "--block-size", "4", "--labels-out", "{tmp}/labels.txt"], "--labels-out"),
    (["--out-of-core", "--block-size", "4", "--trim", "0.2"], "--trim"),
    (["--interval-p", "5"], "--interval-p"),
])
def test_options_that_would_do_nothing_are_errors(tmp_path, capsys, extra, flag):
    """--labels-out and --trim were silently ignored with --out-of-core (no labels file, exit 0),
    and --interval-p without --report: every option is honoured or rejected."""
    src = tmp_path / "in.csv"
    src.write_text("a,b\n" + "".join(f"{i},{i * 3 % 7}\n" for i in range(12)))
    out = tmp_path / "out"
    args = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("microagg: error: ") and flag in err and err.count("\n") == 1
    assert not out.exists() and not (tmp_path / "labels.txt").exists()


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
    df = pd.DataFrame({"income": np.r_[rng.normal(3000, 400, n - 1).round(), 99999.0],
                       "age": rng.integers(20, 70, n).astype(float), "region": rng.integers(1, 4, n).astype(float)})
    labels = {"region": {1: "north", 2: "centre", 3: "south"}, "income": {99999: "top-coded"}}
    src = tmp_path / f"in.{fmt}"
    if fmt == "dta":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df.astype({"region": np.int8}).to_stata(src, write_index=False, value_labels=labels)
    else:
        pyreadstat.write_sav(df, str(src), variable_value_labels=labels)
    assert main(["protect", str(src), "-o", str(tmp_path / f"out.{fmt}"), "-k", "3", "-q", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["columns"] == ["income", "age"]
    assert "warning: column region" in captured.err and "value label" in captured.err


def test_a_binary_data_file_with_a_text_suffix_is_named(tmp_path, capsys):
    """A Parquet (or Excel, SPSS, Stata) file saved as .csv was decoded as cp1252 text and failed
    on 'line 2 has 2 field(s)': the error now says what the file is."""
    src = tmp_path / "data.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0]}).to_parquet(src)
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 2
    assert capsys.readouterr().err == ("microagg: error: data.csv is a Parquet file, not delimited text: "
                                       "give it its suffix (.parquet)\n")


def test_spss_string_user_missing_values_are_read(tmp_path):
    """An SPSS file declaring a user-missing value on a string variable ('NA') could not be read
    at all: 'cannot read ... Cannot interpret StringDtype as a data type' (numpy's issubdtype on a
    pandas string dtype)."""
    pyreadstat = pytest.importorskip("pyreadstat")
    df = pd.DataFrame({"x": np.arange(9) * 1.5, "y": np.arange(9) % 4 * 1.0,
                       "s": ["a", "b", "NA", "c", "d", "e", "f", "g", "h"]})
    src = tmp_path / "in.sav"
    pyreadstat.write_sav(df, str(src), missing_ranges={"s": ["NA"]})
    out = tmp_path / "out.sav"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q"]) == 0
    back, meta = pyreadstat.read_sav(str(out), user_missing=True)
    assert back["s"].tolist() == df["s"].tolist() and meta.missing_ranges == {"s": [{"lo": "NA", "hi": "NA"}]}


def test_spss_user_missing_values_lost_in_a_conversion_are_told(tmp_path, capsys):
    """SPSS to Stata (or any other format): the user-missing declarations (9 'refused' is missing)
    cannot be kept, so 9 became an ordinary value without a word."""
    pyreadstat = pytest.importorskip("pyreadstat")
    df = pd.DataFrame({"x": np.arange(9) * 1.5, "y": np.arange(9) % 4 * 1.0, "code": [1.0, 2, 9, 1, 2, 1, 2, 1, 2]})
    src = tmp_path / "in.sav"
    pyreadstat.write_sav(df, str(src), missing_ranges={"code": [9]})
    assert main(["protect", str(src), "-o", str(tmp_path / "out.dta"), "-k", "3", "-q", "--columns", "x,y"]) == 0
    err = capsys.readouterr().err
    assert "warning: column(s) code have SPSS user-missing values" in err
    assert main(["protect", str(src), "-o", str(tmp_path / "out.sav"), "-k", "3", "-q", "--columns", "x,y"]) == 0
    assert "user-missing" not in capsys.readouterr().err


def test_a_decimal_comma_that_may_be_a_thousands_separator_is_told(tmp_path, capsys):
    """In a ';' file whose only commas are in numbers such as 12,500, the comma was taken for the
    decimal mark without a word: 12,500 read as 12.5, a thousand times too small if it meant
    twelve thousand five hundred. The guess is now told, with how to override it."""
    src = tmp_path / "in.csv"
    src.write_text("income;age\n12,500;30\n9,750;41\n31,000;25\n18,250;60\n")
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 0
    err = capsys.readouterr().err
    assert "warning: every number with a comma in in.csv has three digits after it (such as '12,500')" in err
    src.write_text("income;age\n12,5;30\n9,75;41\n31,0;25\n18,25;60\n")
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 0
    assert "three digits" not in capsys.readouterr().err


def test_every_warning_is_one_line(tmp_path, capsys, monkeypatch):
    """pandas' Stata writer warned in 11 lines when it renamed columns; the CLI promises one line
    per warning on stderr (a log reader or grep sees the whole warning). A warning of many lines
    (as libraries write them) is one line on stderr."""
    import warnings

    import microagg.api

    real = microagg.api.microaggregate

    def chatty(*args, **kwargs):
        warnings.warn("Not all pandas column names were valid:\n\n    b c   ->   b_c\n\nmore text", UserWarning)
        return real(*args, **kwargs)

    monkeypatch.setattr(microagg.api, "microaggregate", chatty)
    src = tmp_path / "in.csv"
    src.write_text("income,b c\n1,2\n3,4\n5,6\n7,8\n")
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    renamed = [ln for ln in lines if "b c" in ln and "b_c" in ln]
    assert len(renamed) == 1 and renamed[0].startswith("microagg: warning: Not all pandas column names")
    assert all(ln.startswith("microagg: ") for ln in lines)


def test_a_name_stata_cannot_hold_is_one_error_before_any_work(tmp_path, capsys, monkeypatch):
    """Issue 31: a column name the output format cannot hold was renamed with a warning where the
    README promises an error; now a dry write finds it before any work: one line naming them."""
    import microagg.api

    ran = []
    monkeypatch.setattr(microagg.api, "microaggregate", lambda *a, **k: ran.append(1))
    src = tmp_path / "in.csv"
    src.write_text("a very long column name that exceeds thirty two chars,b c\n1,2\n3,4\n5,6\n7,8\n")
    assert main(["protect", str(src), "-o", str(tmp_path / "out.dta"), "-k", "2", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("microagg: error: cannot write out.dta as stata: column name(s) ")
    assert "'b c'" in err and "'a very long column name that exceeds thirty two chars'" in err
    assert not ran and not (tmp_path / "out.dta").exists()


@pytest.mark.parametrize("out_of_core", [False, True])
def test_the_output_is_never_written_inside_the_input_dataset_folder(tmp_path, capsys, out_of_core):
    """A Parquet dataset is a folder: an output inside it (data/out.parquet) added a file to the
    input dataset, which then read back with every record twice."""
    data = tmp_path / "data"
    data.mkdir()
    pd.DataFrame({"a": np.arange(12) * 1.0, "b": np.arange(12) % 5 * 1.0}).to_parquet(data / "part-0.parquet")
    out = data / ("out" if out_of_core else "out.parquet")
    extra = ["--out-of-core", "--block-size", "4"] if out_of_core else []
    assert main(["protect", str(data), "-o", str(out), "-k", "3", "-q", *extra]) == 2
    assert capsys.readouterr().err == f"microagg: error: refusing to write the output inside the input folder {data}\n"
    assert [p.name for p in data.iterdir()] == ["part-0.parquet"]


@pytest.mark.parametrize("option, name", [("--labels-out", "labels.txt"), ("--report", "report.html")])
def test_side_files_are_never_written_inside_the_input_dataset_folder(tmp_path, capsys, option, name):
    """--labels-out / --report inside a Parquet dataset folder put a text file among the data
    files: pyarrow then fails to read the dataset ('Parquet magic bytes not found')."""
    data = tmp_path / "data"
    data.mkdir()
    pd.DataFrame({"a": np.arange(12) * 1.0, "b": np.arange(12) % 5 * 1.0}).to_parquet(data / "part-0.parquet")
    assert main(["protect", str(data), "-o", str(tmp_path / "out.parquet"), "-k", "3", "-q",
                 option, str(data / name)]) == 2
    assert "inside the input folder" in capsys.readouterr().err
    assert [p.name for p in data.iterdir()] == ["part-0.parquet"] and not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("option", ["--strata", "--columns", "--categorical", "--ordinal"])
def test_a_column_named_twice_in_an_option_is_one_error_before_reading(tmp_path, capsys, option):
    """--strata s,s was accepted as if given once; every comma-separated column option now
    rejects a repeated name with exit 2, one line, and writes nothing."""
    src = tmp_path / "in.csv"
    src.write_text("a,b,s\n" + _lines(12, lambda i: f"{i},{i % 5},{'xy'[i % 2]}\n"))
    out = tmp_path / "out.csv"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", option, "a, a"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{option} names a column twice: a" in err
    assert not out.exists()


def test_a_stratum_named_twice_in_the_library_is_a_parameter_error():
    import microagg

    df = pd.DataFrame({"x": np.arange(12.0), "s": ["a", "b"] * 6})
    with pytest.raises(microagg.ParameterError, match="strata names a column twice: s"):
        microagg.microaggregate(df, k=3, strata=["s", "s"])


def test_quoted_decimal_commas_in_a_comma_separated_file(tmp_path, capsys):
    """A ','-separated export with quoted decimal-comma numbers ("1,5") was unreadable: no
    numeric column, and --decimal , was refused as equal to the separator. It is now read
    with --decimal , (the quotes keep the fields apart) and written back quoted; without it,
    the error names the columns and the option."""
    src = tmp_path / "in.csv"
    src.write_text('a,b,c\n"1,5","2,25",x\n"3,5","4,75",y\n"5,0","1,5",z\n"2,5","3,25",w\n')
    out = tmp_path / "out.csv"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "column(s) a, b hold numbers" in err and "--decimal" in err
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--decimal", ","]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "a,b,c" and [line.rsplit(",", 1)[1] for line in lines[1:]] == ["x", "y", "z", "w"]
    res = pd.read_csv(out, decimal=",")
    assert res["a"].mean() == pytest.approx(3.125) and res["b"].mean() == pytest.approx(2.9375)  # means kept
    assert res.groupby(["a", "b"]).size().min() >= 2
