"""microagg.io: files come out as they came in, but for the quasi-identifier cells.

CSV: hypothesis writes awkward CSV text (separators, decimal commas, quotes, embedded
separators and line breaks, NA/null/blank tokens, leading zeros, BOM, CRLF, cp1252); after a
protection run every non-QI field is byte-identical and the QI groups, read back with Python's
csv module (an independent parser), hold at least k records. Typed formats: each is written with
its own library, protected, and read back with that library.
"""

from __future__ import annotations

import csv
import gzip
import io as stdio
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg import io
from microagg.errors import InputError
from microagg.preprocess import quasi_identifiers, select_columns

# --- CSV text kept field by field -------------------------------------------------------------

TOKENS = ["", "NA", "null", "None", "n/a", "00000", "007", "1.10", "1,5", " x ", "-", ".", "a,b", 'say "hi"',
          "two\nlines", "cr\r\nlf", "é€", "|", ";", "\t"]
text_cell = st.one_of(st.sampled_from(TOKENS), st.text(alphabet='ab;,|\t"\n 0é€.', max_size=6))


def serialise(rows, sep, newline, quote_all):
    """CSV text of ``rows`` (lists of values), quoting what must be quoted (and more if asked)."""
    out = []
    for r in rows:
        fields = []
        for i, v in enumerate(r):
            must = any(ch in v for ch in (sep, '"', "\n", "\r"))
            fields.append('"' + v.replace('"', '""') + '"' if must or quote_all[i % len(quote_all)] else v)
        out.append(sep.join(fields))
    return newline.join(out)


@st.composite
def csv_files(draw):
    k = draw(st.integers(2, 3))
    n = draw(st.integers(2 * k, 16))
    sep = draw(st.sampled_from([",", ";", "\t", "|"]))
    decimal = draw(st.sampled_from(["."] if sep == "," else [".", ","]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    n_text = draw(st.integers(1, 3))
    n_qi = draw(st.integers(1, 2))
    names = [f"t{j}" for j in range(n_text)] + [f"q{j}" for j in range(n_qi)]
    if draw(st.booleans()):
        names.append("t0")  # a duplicated header name (never a QI)
    order = draw(st.permutations(range(len(names))))
    header = [names[i] for i in order]
    qi_int = draw(st.lists(st.booleans(), min_size=n_qi, max_size=n_qi))
    rows = []
    for _ in range(n):
        row = {}
        for j, name in enumerate(names):
            if name.startswith("t"):
                row[j] = draw(text_cell)
            else:
                q = int(name[1:])
                if qi_int[q]:
                    row[j] = str(draw(st.integers(-1000, 10 ** 6)))
                else:
                    v = draw(st.floats(-1e6, 1e6, allow_nan=False))
                    row[j] = repr(v).replace(".", decimal)
        rows.append([row[i] for i in order])
    quote_all = draw(st.lists(st.booleans(), min_size=1, max_size=4))
    text = serialise([header] + rows, sep, newline, quote_all)
    if draw(st.booleans()):
        text += newline
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "cp1252"]))
    return text.encode(encoding), k, header, rows, sep, decimal, [f"q{j}" for j in range(n_qi)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(csv_files(), st.booleans())
def test_csv_non_qi_fields_byte_identical_and_groups_k_anonymous(tmp_path_factory, case, gz):
    data, k, header, rows, sep, decimal, qi = case
    folder = tmp_path_factory.mktemp("csv")
    src = folder / ("in.csv.gz" if gz else "in.csv")
    src.write_bytes(gzip.compress(data) if gz else data)
    table = io.read(src, sep=sep, decimal=decimal)
    res = microagg.microaggregate(table.frame, k=k, columns=qi)
    out = folder / ("out.csv.gz" if gz else "out.csv")
    io.write(table, out, {c: res.data[c].to_numpy() for c in qi})
    written = out.read_bytes()
    if gz:
        written = gzip.decompress(written)
    encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else table.meta.dialect.encoding
    assert written.startswith(b"\xef\xbb\xbf") == data.startswith(b"\xef\xbb\xbf")
    # an independent parser reads the output back
    parsed = list(csv.reader(stdio.StringIO(written.decode(encoding), newline=""), delimiter=sep))
    assert parsed[0] == header
    assert len(parsed) == len(rows) + 1
    qi_at = [header.index(c) for c in qi]
    # the output is the input text with only the QI fields replaced (by what the parser read back)
    records, ends = io.csv._split_records(data.decode(encoding), sep)
    rebuilt = []
    for ri, rec in enumerate(records):
        fields = list(rec)
        if ri > 0:
            for j in qi_at:  # a quoted QI field stays quoted
                fields[j] = f'"{parsed[ri][j]}"' if fields[j].startswith('"') else parsed[ri][j]
        rebuilt.append(sep.join(fields) + ends[ri])
    assert written.decode(encoding) == "".join(rebuilt)
    for i, r in enumerate(rows):  # every non-QI value as generated
        for j, v in enumerate(r):
            if j not in qi_at:
                assert parsed[i + 1][j] == v
    # QI cells: numbers in the file's decimal mark, groups of >= k identical tuples
    values = np.array([[float(parsed[i + 1][j].replace(",", ".")) for j in qi_at] for i in range(len(rows))])
    assert np.allclose(values, res.data[qi].to_numpy(), rtol=0, atol=0)
    _, counts = np.unique(values, axis=0, return_counts=True)
    assert counts.min() >= k


def test_csv_everyday_awkward_file_keeps_every_byte(tmp_path):
    text = ('\ufeffzip;country;note;x;x;age;income\r\n'
            '00000;NA;null;1;a;30;1,10\r\n'
            '01234;"NA";"multi\r\nline";2;b;40;2,5\r\n'
            '\r\n'
            '99999;n/a;"q""uote; and sep";;c;50;3,75\r\n'
            '10115;;None;4;d;60;4\r\n')
    src = tmp_path / "in.csv"
    src.write_bytes(text.encode("utf-8"))
    table = io.read(src)
    assert (table.meta.dialect.sep, table.meta.dialect.decimal, table.meta.dialect.bom, table.meta.dialect.newline) == (";", ",", True, "\r\n")
    assert table.duplicates == ["x"]
    with pytest.warns(UserWarning, match="column zip looks like an identifier, a code or a weight"):
        cols = select_columns(table.frame)
    assert cols == ["age", "income"]  # zip (leading zeros) is a code; duplicated x is never a QI
    out = tmp_path / "out.csv"
    io.write(table, out, {"age": np.array([35.0, 35, 55, 55]), "income": np.array([1.8, 1.8, 3.875, 3.875])})
    expected = ('\ufeffzip;country;note;x;x;age;income\r\n'
                '00000;NA;null;1;a;35;1,8\r\n'
                '01234;"NA";"multi\r\nline";2;b;35;1,8\r\n'
                '\r\n'
                '99999;n/a;"q""uote; and sep";;c;55;3,875\r\n'
                '10115;;None;4;d;55;3,875\r\n')
    assert out.read_bytes() == expected.encode("utf-8")


def test_cp1252_and_latin1_files_are_read_and_written_back(tmp_path):
    for encoding, sample in (("cp1252", "Zürich €"), ("latin-1", "Zürich \x81")):
        src = tmp_path / f"{encoding}.csv"
        rows = "".join(f"{sample},{i},{i * 2}\n" for i in range(6))
        src.write_bytes(("city,a,b\n" + rows).encode(encoding))
        table = io.read(src)
        assert table.frame["city"].iloc[0] == sample
        out = tmp_path / f"{encoding}.out.csv"
        io.write(table, out, {"a": np.repeat([1.0, 4.0], 3)})
        lines = out.read_bytes().decode(encoding).splitlines()
        assert lines[1] == f"{sample},1,0" and lines[6] == f"{sample},4,10"


def test_integer_column_published_as_integers_only_when_integral(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("a,b\n1,1.0\n2,2.0\n4,4.0\n5,5.0\n")
    table = io.read(src)
    out = tmp_path / "out.csv"
    io.write(table, out, {"a": np.array([1.5, 1.5, 4.0, 5.0]), "b": np.array([1.0, 1.0, 4.0, 4.0])})
    assert out.read_text() == "a,b\n1.5,1.0\n1.5,1.0\n4,4.0\n5,4.0\n"


def test_big_and_tiny_values_round_trip_exactly(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("a,b\n1e308,1\n-1e308,2\n1.7976931348623157e308,3\n5e-324,4\n")
    table = io.read(src)
    values = np.array([1e308, -1e308, 1.7976931348623157e308, 5e-324])
    io.write(table, tmp_path / "out.csv", {"a": values})
    back = pd.read_csv(tmp_path / "out.csv")["a"].to_numpy()
    assert np.array_equal(back, values)


def test_unsupported_format_and_read_only_format_are_one_line_errors(tmp_path):
    bad = tmp_path / "data.json"
    bad.write_text("{}")
    with pytest.raises(InputError, match=r"unsupported file format: data.json; supported: CSV"):
        io.read(bad)
    with pytest.raises(InputError, match=r"\.xpt"):
        io.check_output_path(tmp_path / "out.sas7bdat")
    with pytest.raises(InputError, match="is a directory"):
        io.check_output_path(tmp_path)
    with pytest.raises(InputError, match="over the input"):
        io.check_output_path(bad, bad)


def test_ragged_row_and_unclosed_quote_are_errors_naming_the_line(tmp_path):
    src = tmp_path / "ragged.csv"
    src.write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(InputError, match="line 3 .* 3 field"):
        io.read(src)
    src.write_text('a,b\n1,"2\n3,4\n')
    with pytest.raises(InputError, match="unclosed quote"):
        io.read(src)


# --- column rules --------------------------------------------------------------------------------

def test_numeric_column_with_stray_tokens_is_an_error_naming_them(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("a,b\n" + "".join(f"{i},{v}\n" for i, v in enumerate(["1", "-", "3", "n/a", "5", "6"])))
    frame = io.read(src).frame
    with pytest.raises(InputError, match=r"column b is numeric except for '-' \(1x\), 'n/a' \(1x\)"):
        select_columns(frame)
    assert select_columns(frame, ["a"]) == ["a"]  # named QIs: b is simply not one
    with pytest.raises(InputError, match=r"column b is not numeric: row 2 holds '-'"):
        select_columns(frame, ["a", "b"])
    declared = io.read(src, missing=("-", "n/a")).frame
    assert declared["b"].isna().sum() == 2
    with pytest.raises(InputError, match=r"missing or infinite values in quasi-identifier column\(s\): b \(2 rows\)"):
        quasi_identifiers(declared, select_columns(declared))


def test_identifier_columns_are_never_default_qis_without_a_warning():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"person_id": rng.permutation(50) + 1000, "row": np.arange(50), "income": rng.normal(size=50),
                       "UTILITYID": rng.integers(0, 500, 50)})
    with pytest.warns(UserWarning) as caught:  # one per column; pytest re-emits those a match= misses
        cols = select_columns(df)
    assert cols == ["income", "UTILITYID"]
    warned = [str(w.message) for w in caught]
    assert any("column person_id looks like an identifier" in m for m in warned)
    assert any("column row looks like" in m for m in warned)  # a running number
    assert select_columns(df, ["person_id", "income"]) == ["person_id", "income"]


def test_category_codes_and_weights_are_never_default_qis_without_a_warning():
    # the household survey: its integer codes (sex, roof, ...) and weights would be averaged
    df = pd.read_csv(microagg.datasets.path("testdata"))
    with pytest.warns(UserWarning) as caught:
        cols = select_columns(df)
    assert cols == ["age", "expend", "income", "savings"]
    warned = " ".join(str(w.message) for w in caught)
    for c in ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"):
        assert f"column {c} looks like" in warned and "distinct integer values: category codes" in warned
    for c in ("sampling_weight", "household_weights"):
        assert f"column {c} looks like an identifier, a code or a weight (its name says survey weight)" in warned
    assert select_columns(df, ["sex", "income"]) == ["sex", "income"]  # named: averaged as asked
    # not codes: fractions, many values, or too few records to tell
    rng = np.random.default_rng(1)
    other = pd.DataFrame({"share": rng.integers(0, 4, 60) / 4.0, "rooms": rng.integers(1, 40, 60),
                          "AFNLWGT": rng.normal(size=60)})
    assert select_columns(other) == ["share", "rooms", "AFNLWGT"]
    assert select_columns(pd.DataFrame({"sex": [1, 2] * 10, "x": np.arange(20.0) ** 2})) == ["sex", "x"]


def test_integers_beyond_2_53_are_an_error_not_a_constant():
    df = pd.DataFrame({"a": np.array([2 ** 60, 2 ** 60 + 1, 2 ** 60 + 2, 7], dtype=np.int64), "b": [1.0, 2, 3, 4]})
    with pytest.raises(InputError, match="beyond 2\\^53"):
        quasi_identifiers(df, ["a", "b"])


# --- typed formats -------------------------------------------------------------------------------

def frame_for_formats(n=24):
    rng = np.random.default_rng(1)
    return pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(np.int32),
        "income": rng.normal(3000, 800, n).round(2),
        "region": rng.integers(1, 4, n).astype(np.int8),
        "name": [f"p{i:03d}" for i in range(n)],
    })


def assert_k_anonymous(frame, cols, k):
    _, counts = np.unique(frame[cols].to_numpy(np.float64), axis=0, return_counts=True)
    assert counts.min() >= k


def protect_table(table, cols, k=3):
    res = microagg.microaggregate(table.frame, k=k, columns=cols)
    return {c: res.data[c].to_numpy() for c in cols}


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


def test_stata_keeps_types_value_labels_and_variable_labels(tmp_path):
    import pyreadstat

    df = frame_for_formats()
    src = tmp_path / "in.dta"
    df.to_stata(src, write_index=False, version=118, variable_labels={"age": "Age in years", "region": "Region"},
                value_labels={"region": {1: "north", 2: "centre", 3: "south"}}, data_label="Test survey")
    table = io.read(src)
    published = protect_table(table, ["age", "income"])
    out = tmp_path / "out.dta"
    io.write(table, out, published)
    back = pd.read_stata(out, convert_categoricals=False)
    assert back["region"].dtype == np.int8 and (back["region"].to_numpy() == df["region"].to_numpy()).all()
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
    pyreadstat.write_sav(df, str(src), column_labels={"age": "Age", "region": "Region"},
                         variable_value_labels={"region": {1.0: "north", 2.0: "centre", 3.0: "south", 9.0: "refused"}},
                         missing_ranges={"region": [9.0]}, variable_measure={"region": "nominal", "age": "scale"},
                         compress=suffix == ".zsav")
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
    dtypes = data.draw(st.lists(st.sampled_from(["int8", "int32", "int64", "float32", "float64", "bool", "str"]),
                                min_size=1, max_size=4))
    frame = {}
    for j, dt in enumerate(dtypes):
        if dt == "str":
            frame[f"c{j}"] = data.draw(st.lists(st.text(max_size=5), min_size=n, max_size=n))
        elif dt == "bool":
            frame[f"c{j}"] = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        elif dt.startswith("int"):
            frame[f"c{j}"] = np.array(data.draw(st.lists(st.integers(-100, 100), min_size=n, max_size=n)), dtype=dt)
        else:
            frame[f"c{j}"] = np.array(data.draw(st.lists(st.floats(-1e6, 1e6, width=32), min_size=n, max_size=n)),
                                      dtype=dt)
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


@pytest.mark.parametrize("suffix", [".parquet", ".dta", ".sav", ".xpt", ".xlsx", ".csv.gz"])
def test_csv_converts_to_every_writable_format_keeping_text_columns(tmp_path, suffix):
    import pyreadstat

    src = tmp_path / "in.csv"
    src.write_text("a,code,c\n" + "".join(f"{i % 4},{'-' if i == 2 else f'{i:03d}'},{i * 1.5}\n" for i in range(9)))
    table = io.read(src)
    published = protect_table(table, ["a", "c"])
    out = tmp_path / f"out{suffix}"
    io.write(table, out, published)
    readers = {".parquet": pd.read_parquet, ".dta": pd.read_stata, ".sav": lambda p: pyreadstat.read_sav(str(p))[0],
               ".xpt": lambda p: pyreadstat.read_xport(str(p))[0], ".csv.gz": lambda p: pd.read_csv(p, dtype={"code": str}),
               ".xlsx": lambda p: pd.read_excel(p, dtype={"code": str})}
    back = readers[suffix](out)
    assert list(back["code"].astype(str)) == ["000", "001", "-", "003", "004", "005", "006", "007", "008"]
    assert_k_anonymous(back, ["a", "c"], 3)


def test_damaged_typed_files_are_one_line_input_errors(tmp_path):
    for name in ("bad.xlsx", "bad.parquet", "bad.dta", "bad.sav", "bad.xpt"):
        p = tmp_path / name
        p.write_bytes(b"not really a file of this kind")
        with pytest.raises(InputError, match=f"cannot read {name}"):
            io.read(p)


@pytest.mark.parametrize("encoding,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_utf16_files_keep_their_byte_order(tmp_path, encoding, bom):
    src = tmp_path / "in.csv"
    src.write_bytes(bom + "name\tv\nÅsa\t1\nÖrjan\t2\nZoë\t4\nXi\t5\n".encode(encoding))
    table = io.read(src)
    io.write(table, tmp_path / "out.csv", {"v": np.array([1.5, 1.5, 4.5, 4.5])})
    assert (tmp_path / "out.csv").read_bytes() == bom + "name\tv\nÅsa\t1.5\nÖrjan\t1.5\nZoë\t4.5\nXi\t4.5\n".encode(encoding)


def test_missing_tokens_in_the_column_rules():
    df = pd.DataFrame({"a": [1, 2, "-", 4, 5.5, 6], "b": np.arange(6.0), "note": ["n/a", "x", "", "NA", "y", "-"]},
                      dtype=object).astype({"b": float})
    with pytest.raises(InputError, match="column a is numeric except for '-'"):
        select_columns(df)
    assert select_columns(df, missing=["-"]) == ["a", "b"]
    with pytest.raises(InputError, match=r"a \(1 rows\)"):
        quasi_identifiers(df, ["a", "b"], missing=["-"])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from([".dta", ".sav"]))
def test_stata_and_spss_typed_frames_keep_every_non_qi_column(tmp_path_factory, data, suffix):
    import pyreadstat

    n = data.draw(st.integers(6, 16))
    k = data.draw(st.integers(2, 3))
    kinds = ["int8", "int16", "int32", "float32", "float64", "str"] if suffix == ".dta" else ["float64", "str"]
    dtypes = data.draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=4))
    frame = {}
    for j, dt in enumerate(dtypes):
        if dt == "str":
            frame[f"c{j}"] = data.draw(st.lists(st.text(alphabet="abc xyz09", min_size=1, max_size=5),
                                                min_size=n, max_size=n))
        elif dt.startswith("int"):
            frame[f"c{j}"] = np.array(data.draw(st.lists(st.integers(-100, 100), min_size=n, max_size=n)), dtype=dt)
        else:
            frame[f"c{j}"] = np.array(data.draw(st.lists(st.floats(-1e6, 1e6, width=32), min_size=n, max_size=n)),
                                      dtype=dt)
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


def test_text_typed_qi_column_is_published_as_numbers(tmp_path):
    df = pd.DataFrame({"code": ["1", "2", "3", "4", "5", "6"], "x": np.arange(6.0)})
    src = tmp_path / "in.parquet"
    df.to_parquet(src, index=False)
    table = io.read(src)
    io.write(table, tmp_path / "out.parquet", protect_table(table, ["code"]))
    back = pd.read_parquet(tmp_path / "out.parquet")
    assert back["code"].dtype == np.float64 and (back["x"] == df["x"]).all()
    assert_k_anonymous(back, ["code"], 3)


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
