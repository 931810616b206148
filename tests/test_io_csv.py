"""microagg.io.csv: CSV/TSV files come out as they came in, but for the quasi-identifier cells."""

from __future__ import annotations

import csv
import gzip
import io as stdio

import numpy as np
import pandas as pd
import pytest
from conftest import assert_k_anonymous, protect_table
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg import io
from microagg.cli import main
from microagg.columns import select_columns
from microagg.errors import InputError


@pytest.mark.parametrize("raw", [b"\xef\xbb\xbf", b"\xff\xfe", b"\xef\xbb\xbf \r\n"])
def test_a_file_holding_only_a_byte_order_mark_is_empty(tmp_path, capsys, raw):
    """A file of nothing but a BOM (what some editors save for an empty sheet) was an internal
    error (IndexError, exit 1, a traceback) instead of the one-line 'empty' error."""
    src = tmp_path / "in.csv"
    src.write_bytes(raw)
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 2
    assert capsys.readouterr().err == f"microagg: error: input file is empty: {src}\n"


def test_old_mac_line_endings(tmp_path):
    """Lines ended by a bare carriage return (classic Mac OS, some exports) were one long line:
    'input has no data rows'. Now they are lines, written back with the same endings."""
    src = tmp_path / "in.csv"
    src.write_bytes(b'id,a,b\r"p\r1",1,5\rp2,2,4\rp3,3,3\rp4,4,2\r')
    out = tmp_path / "out.csv"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "a,b"]) == 0
    assert out.read_bytes() == b'id,a,b\r"p\r1",1.5,4.5\rp2,1.5,4.5\rp3,3.5,2.5\rp4,3.5,2.5\r'


def test_a_tsv_output_is_tab_separated(tmp_path):
    """-o out.tsv from a ';'-separated file wrote ';' into a file named .tsv. The fields keep their
    text; a field holding a tab is quoted."""
    src = tmp_path / "in.csv"
    src.write_bytes(
        b'id;a;b;note\r\n001;1,5;2;"x;y"\r\n002;2,5;3;t\tu\r\n003;3,5;5;z\r\n004;4,5;7;w\r\n'
    )
    out = tmp_path / "out.tsv"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "a,b"]) == 0
    assert (
        out.read_bytes() == b'id\ta\tb\tnote\r\n001\t2,0\t2,5\t"x;y"\r\n002\t2,0\t2,5\t"t\tu"\r\n'
        b"003\t4,0\t6\tz\r\n004\t4,0\t6\tw\r\n"
    )
    back = tmp_path / "back.csv"
    assert main(["protect", str(out), "-o", str(back), "-k", "2", "-q", "--columns", "a,b"]) == 0
    lines = back.read_bytes().split(b"\r\n")  # a .csv output keeps the input's dialect: tabs
    assert (
        lines[0] == b"id\ta\tb\tnote"
        and lines[2].startswith(b"002\t2,0\t2,5\t")
        and lines[2].endswith(b'\t"t\tu"')
    )


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

    from microagg.io.csv.dialect import split_records, unquote

    quoted = st.text(alphabet='ab,;"\n ', max_size=6)
    plain = st.text(alphabet='ab ;"', max_size=6).filter(lambda t: not t.startswith('"'))

    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(
            st.lists(
                st.one_of(quoted.map(lambda t: ("q", t)), plain.map(lambda t: ("p", t))),
                min_size=2,
                max_size=4,
            ),
            min_size=1,
            max_size=4,
        )
    )
    def check(rows):
        width = len(rows[0])
        rows = [r[:width] + [("p", "x")] * (width - len(r)) for r in rows]
        text = "".join(
            ",".join('"' + v.replace('"', '""') + '"' if kind == "q" else v for kind, v in r) + "\n"
            for r in rows
        )
        records, _ = split_records(text, ",")
        assert [[unquote(f) for f in r] for r in records] == list(csv.reader(stdio.StringIO(text)))

    check()


def test_a_csv_integer_column_with_a_blank_cell_stays_integer_when_converted(tmp_path):
    """CSV to Parquet: an integer column with a blank cell became float64 (100.0)."""
    src = tmp_path / "in.csv"
    src.write_text(
        "a,b,code\n" + "".join(f"{i * 1.5},{i % 4},{'' if i == 2 else i + 100}\n" for i in range(6))
    )
    out = tmp_path / "out.parquet"
    assert main(["protect", str(src), "-o", str(out), "-k", "2", "-q", "--columns", "a,b"]) == 0
    code = pd.read_parquet(out)["code"]
    assert pd.api.types.is_integer_dtype(code.dtype)
    assert code.isna().tolist() == [False, False, True, False, False, False]
    assert code.dropna().tolist() == [100, 101, 103, 104, 105]


def test_a_binary_data_file_with_a_text_suffix_is_named(tmp_path, capsys):
    """A Parquet (or Excel, SPSS, Stata) file saved as .csv was decoded as cp1252 text and failed
    on 'line 2 has 2 field(s)': the error now says what the file is."""
    src = tmp_path / "data.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0]}).to_parquet(src)
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 2
    assert (
        capsys.readouterr().err
        == "microagg: error: data.csv is a Parquet file, not delimited text: "
        "give it its suffix (.parquet)\n"
    )


def test_a_decimal_comma_that_may_be_a_thousands_separator_is_told(tmp_path, capsys):
    """In a ';' file whose only commas are in numbers such as 12,500, the comma was taken for the
    decimal mark without a word: 12,500 read as 12.5, a thousand times too small if it meant
    twelve thousand five hundred. The guess is now told, with how to override it."""
    src = tmp_path / "in.csv"
    src.write_text("income;age\n12,500;30\n9,750;41\n31,000;25\n18,250;60\n")
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 0
    err = capsys.readouterr().err
    assert (
        "warning: every number with a comma in in.csv has three digits after it (such as '12,500')"
        in err
    )
    src.write_text("income;age\n12,5;30\n9,75;41\n31,0;25\n18,25;60\n")
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 0
    assert "three digits" not in capsys.readouterr().err


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
    assert lines[0] == "a,b,c" and [line.rsplit(",", 1)[1] for line in lines[1:]] == [
        "x",
        "y",
        "z",
        "w",
    ]
    res = pd.read_csv(out, decimal=",")
    assert res["a"].mean() == pytest.approx(3.125) and res["b"].mean() == pytest.approx(
        2.9375
    )  # means kept
    assert res.groupby(["a", "b"]).size().min() >= 2


TOKENS = [
    "",
    "NA",
    "null",
    "None",
    "n/a",
    "00000",
    "007",
    "1.10",
    "1,5",
    " x ",
    "-",
    ".",
    "a,b",
    'say "hi"',
    "two\nlines",
    "cr\r\nlf",
    "é€",
    "|",
    ";",
    "\t",
]


text_cell = st.one_of(st.sampled_from(TOKENS), st.text(alphabet='ab;,|\t"\n 0é€.', max_size=6))


def serialise(rows, sep, newline, quote_all):
    """CSV text of ``rows`` (lists of values), quoting what must be quoted (and more if asked)."""
    out = []
    for r in rows:
        fields = []
        for i, v in enumerate(r):
            must = any(ch in v for ch in (sep, '"', "\n", "\r"))
            fields.append(
                '"' + v.replace('"', '""') + '"' if must or quote_all[i % len(quote_all)] else v
            )
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
                    row[j] = str(draw(st.integers(-1000, 10**6)))
                else:
                    v = draw(st.floats(-1e6, 1e6, allow_nan=False))
                    row[j] = repr(v).replace(".", decimal)
        rows.append([row[i] for i in order])
    quote_all = draw(st.lists(st.booleans(), min_size=1, max_size=4))
    text = serialise([header] + rows, sep, newline, quote_all)
    if draw(st.booleans()):
        text += newline
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "cp1252"]))
    data = text.encode(encoding)
    if encoding == "cp1252":
        # cp1252 bytes that are also valid UTF-8 ("é€€" is the bytes of "退"): no reader can tell
        try:
            ambiguous = data.decode("utf-8") != text
        except UnicodeDecodeError:
            ambiguous = False
        if ambiguous:
            data = text.encode("utf-8")
    return data, k, header, rows, sep, decimal, [f"q{j}" for j in range(n_qi)]


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
    records, ends = io.csv.dialect.split_records(data.decode(encoding), sep)
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
    values = np.array(
        [[float(parsed[i + 1][j].replace(",", ".")) for j in qi_at] for i in range(len(rows))]
    )
    assert np.allclose(values, res.data[qi].to_numpy(), rtol=0, atol=0)
    _, counts = np.unique(values, axis=0, return_counts=True)
    assert counts.min() >= k


def test_csv_everyday_awkward_file_keeps_every_byte(tmp_path):
    text = (
        "\ufeffzip;country;note;x;x;age;income\r\n"
        "00000;NA;null;1;a;30;1,10\r\n"
        '01234;"NA";"multi\r\nline";2;b;40;2,5\r\n'
        "\r\n"
        '99999;n/a;"q""uote; and sep";;c;50;3,75\r\n'
        "10115;;None;4;d;60;4\r\n"
    )
    src = tmp_path / "in.csv"
    src.write_bytes(text.encode("utf-8"))
    table = io.read(src)
    dialect = table.meta.dialect
    assert (dialect.sep, dialect.decimal, dialect.bom, dialect.newline) == (";", ",", True, "\r\n")
    assert table.duplicates == ["x"]
    with pytest.warns(UserWarning, match="not protected, numbers stored as text.*: zip"):
        cols = select_columns(table.frame)
    assert cols == ["age", "income"]  # zip (leading zeros) is a code; duplicated x is never a QI
    out = tmp_path / "out.csv"
    io.write(
        table,
        out,
        {"age": np.array([35.0, 35, 55, 55]), "income": np.array([1.8, 1.8, 3.875, 3.875])},
    )
    expected = (
        "\ufeffzip;country;note;x;x;age;income\r\n"
        "00000;NA;null;1;a;35;1,8\r\n"
        '01234;"NA";"multi\r\nline";2;b;35;1,8\r\n'
        "\r\n"
        '99999;n/a;"q""uote; and sep";;c;55;3,875\r\n'
        "10115;;None;4;d;55;3,875\r\n"
    )
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


def test_ragged_row_and_unclosed_quote_are_errors_naming_the_line(tmp_path):
    src = tmp_path / "ragged.csv"
    src.write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(InputError, match="line 3 .* 3 field"):
        io.read(src)
    src.write_text('a,b\n1,"2\n3,4\n')
    with pytest.raises(InputError, match="unclosed quote"):
        io.read(src)


@pytest.mark.parametrize("suffix", [".parquet", ".dta", ".sav", ".xpt", ".xlsx", ".csv.gz"])
def test_csv_converts_to_every_writable_format_keeping_text_columns(tmp_path, suffix):
    import pyreadstat

    src = tmp_path / "in.csv"
    src.write_text(
        "a,code,c\n"
        + "".join(f"{i % 4},{'-' if i == 2 else f'{i:03d}'},{i * 1.5}\n" for i in range(9))
    )
    table = io.read(src)
    published = protect_table(table, ["a", "c"])
    out = tmp_path / f"out{suffix}"
    io.write(table, out, published)
    readers = {
        ".parquet": pd.read_parquet,
        ".dta": pd.read_stata,
        ".sav": lambda p: pyreadstat.read_sav(str(p))[0],
        ".xpt": lambda p: pyreadstat.read_xport(str(p))[0],
        ".csv.gz": lambda p: pd.read_csv(p, dtype={"code": str}),
        ".xlsx": lambda p: pd.read_excel(p, dtype={"code": str}),
    }
    back = readers[suffix](out)
    assert list(back["code"].astype(str)) == [
        "000",
        "001",
        "-",
        "003",
        "004",
        "005",
        "006",
        "007",
        "008",
    ]
    assert_k_anonymous(back, ["a", "c"], 3)


@pytest.mark.parametrize("encoding,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_utf16_files_keep_their_byte_order(tmp_path, encoding, bom):
    src = tmp_path / "in.csv"
    src.write_bytes(bom + "name\tv\nÅsa\t1\nÖrjan\t2\nZoë\t4\nXi\t5\n".encode(encoding))
    table = io.read(src)
    io.write(table, tmp_path / "out.csv", {"v": np.array([1.5, 1.5, 4.5, 4.5])})
    assert (
        tmp_path / "out.csv"
    ).read_bytes() == bom + "name\tv\nÅsa\t1.5\nÖrjan\t1.5\nZoë\t4.5\nXi\t4.5\n".encode(encoding)


def test_text_typed_qi_column_is_published_as_numbers(tmp_path):
    df = pd.DataFrame({"code": ["1", "2", "3", "4", "5", "6"], "x": np.arange(6.0)})
    src = tmp_path / "in.parquet"
    df.to_parquet(src, index=False)
    table = io.read(src)
    io.write(table, tmp_path / "out.parquet", protect_table(table, ["code"]))
    back = pd.read_parquet(tmp_path / "out.parquet")
    assert back["code"].dtype == np.float64 and (back["x"] == df["x"]).all()
    assert_k_anonymous(back, ["code"], 3)
