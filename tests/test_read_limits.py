"""Bounded reading (microagg.read_limits): header claims checked against the file's own bytes and
the limits before memory is taken, compressed text inflated in a bounded stream, files named for
what they are. Each case is one InputError line in the library and exit 2 with one line in the
CLI."""

from __future__ import annotations

import gzip
import io as stdio
import struct
import tracemalloc
import zipfile

import numpy as np
import pandas as pd
import pytest

from microagg import io, read_limits
from microagg.cli import main
from microagg.errors import InputError

MB = 1 << 20


def _frame(n=60):
    return pd.DataFrame(
        {"a": np.arange(n, dtype=float), "b": np.arange(n) * 2.5, "c": np.arange(n) % 7}
    )


def _cli_error(capsys, path, tmp_path) -> str:
    """The one line `microagg protect` prints for ``path`` (exit status 2)."""
    assert main(["protect", str(path), "-o", str(tmp_path / "out.csv"), "-k", "3", "-q"]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and err.startswith("microagg: error: ") and "Traceback" not in err
    ), err
    assert not (tmp_path / "out.csv").exists()
    return err


# ---------------------------------------------------------------------------- compressed text
def test_a_gzip_bomb_is_refused_without_inflating_it(tmp_path):
    """300 MB of text in a 0.3 MB .csv.gz: refused at the limit, and the memory taken on the way
    stays near the limit (the stream stops there), far below the 300 MB it would inflate to."""
    bomb = tmp_path / "bomb.csv.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(b"a,b\n")
        block = b"1,2\n" * (MB // 4)
        for _ in range(300):
            f.write(block)
    assert bomb.stat().st_size < 0.5 * MB
    tracemalloc.start()
    try:
        with (
            read_limits.limited(5 * MB),
            pytest.raises(InputError, match="decompresses to more than the limit of 5 MB"),
        ):
            io.read(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 30 * MB, peak


def test_gzip_members_padding_and_damage(tmp_path):
    """Inflated as the gzip module does: several members, zero padding after the last; a cut or
    trailing garbage is a broken file."""
    first, second = b"a,b\n1,2\n", b"3,4\n5,6\n"
    path = tmp_path / "two.csv.gz"
    path.write_bytes(gzip.compress(first) + gzip.compress(second) + b"\x00" * 100)
    raw, gz = read_limits.text_bytes(path)
    assert gz and raw == first + second == gzip.decompress(
        gzip.compress(first) + gzip.compress(second)
    )
    assert io.read(path).frame["a"].tolist() == [1, 3, 5]
    whole = gzip.compress(b"a,b\n" + b"1,2\n" * 1000)
    for bad in (whole[:-12], whole + b"garbage"):
        path.write_bytes(bad)
        with pytest.raises(InputError, match="broken gzip data"):
            io.read(path)


def test_text_that_is_not_text_is_named(tmp_path):
    png = tmp_path / "picture.csv"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    with pytest.raises(InputError, match="picture.csv is a PNG image, not delimited text"):
        io.read(png)
    nul = tmp_path / "nul.csv"
    nul.write_bytes(b"a,b\n1,2\n3,\x004\n")
    with pytest.raises(InputError, match="NUL bytes .the first at byte 10.: binary data"):
        io.read(nul)
    packed = tmp_path / "packed.csv.gz"  # a gzip of a PDF: named after inflating
    packed.write_bytes(gzip.compress(b"%PDF-1.7\n" + b"x" * 100))
    with pytest.raises(InputError, match="packed.csv.gz is a PDF document, not delimited text"):
        io.read(packed)
    wide = tmp_path / "wide.csv"  # UTF-16 with its byte order mark: NUL bytes are its text
    wide.write_bytes("a,b\n1,2\n3,4\n".encode("utf-16"))
    assert io.read(wide).frame["b"].tolist() == [2, 4]


def test_plain_text_over_the_limit_is_refused_before_reading(tmp_path):
    big = tmp_path / "big.csv"
    _frame(20000).to_csv(big, index=False)
    with (
        read_limits.limited(big.stat().st_size - 1),
        pytest.raises(InputError, match="it holds .*more than the limit"),
    ):
        io.read(big)
    with read_limits.limited(big.stat().st_size):
        assert len(io.read(big).frame) == 20000


# ---------------------------------------------------------------------------- header claims
def _dta_claiming(src, rows: int):
    raw = bytearray(src.read_bytes())
    at = raw.index(b"<N>") + 3
    raw[at : at + 8] = struct.pack("<Q", rows)
    return bytes(raw)


def test_a_stata_header_claiming_2_31_rows_is_one_line_in_the_library_and_the_cli(tmp_path, capsys):
    ok = tmp_path / "ok.dta"
    _frame().to_stata(ok, write_index=False, version=118)
    big = tmp_path / "big.dta"
    big.write_bytes(_dta_claiming(ok, 2**31))
    with pytest.raises(
        InputError,
        match=r"damaged or truncated Stata file \(it claims 2,147,483,648 rows × 3 "
        r"columns, more than its [\d,]+ bytes can hold\)",
    ):
        io.read(big)
    assert "2,147,483,648 rows" in _cli_error(capsys, big, tmp_path)
    old = tmp_path / "old.dta"  # the binary header of format 114
    _frame().to_stata(old, write_index=False, version=114)
    assert len(io.read(old).frame) == 60
    raw = bytearray(old.read_bytes())
    raw[6:10] = struct.pack("<I", 2**31)
    old.write_bytes(raw)
    with pytest.raises(InputError, match="2,147,483,648 rows × 3 columns"):
        io.read(old)


@pytest.mark.parametrize("version", [117, 118, 119])
def test_stata_versions_claims_are_read_where_each_puts_them(tmp_path, version):
    ok = tmp_path / "ok.dta"
    _frame().to_stata(ok, write_index=False, version=version)
    assert len(io.read(ok).frame) == 60
    raw = bytearray(ok.read_bytes())
    at = raw.index(b"<N>") + 3
    raw[at : at + (4 if version == 117 else 8)] = (2**31 - 1).to_bytes(
        4 if version == 117 else 8, "little"
    )
    ok.write_bytes(raw)
    with pytest.raises(InputError, match="2,147,483,647 rows × 3 columns"):
        io.read(ok)


def test_an_empty_typed_file_is_named_empty(tmp_path):
    for name in ("e.dta", "e.sav", "e.xpt", "e.parquet", "e.xlsx", "e.sas7bdat"):
        (tmp_path / name).write_bytes(b"")
        with pytest.raises(InputError, match=f"cannot read {name}: the file is empty"):
            io.read(tmp_path / name)


def test_a_claim_beyond_the_limit_is_refused_before_memory_is_taken(tmp_path):
    ok = tmp_path / "ok.dta"
    _frame(1000).to_stata(ok, write_index=False, version=118)
    with (
        read_limits.limited(2999),
        pytest.raises(InputError, match="1,000 rows × 3 columns, more than the limit"),
    ):
        io.read(ok)
    with read_limits.limited(3000):
        assert len(io.read(ok).frame) == 1000


def test_spss_case_counts_and_zsav_blocks(tmp_path, capsys):
    pyreadstat = pytest.importorskip("pyreadstat")
    for suffix, options in (
        (".sav", {}),
        (".sav", {"row_compress": True}),
        (".zsav", {"compress": True}),
    ):
        ok = tmp_path / f"ok{suffix}"
        pyreadstat.write_sav(_frame(), str(ok), **options)
        assert len(io.read(ok).frame) == 60
        raw = bytearray(ok.read_bytes())
        raw[80:84] = struct.pack("<i", 2**31 - 1)
        big = tmp_path / f"big{suffix}"
        big.write_bytes(raw)
        with pytest.raises(InputError, match="claims 2,147,483,647 cases of 3 values"):
            io.read(big)
    assert "2,147,483,647 cases" in _cli_error(capsys, big, tmp_path)
    unknown = tmp_path / "unknown.sav"  # some writers leave the values per case unknown (-1)
    raw = bytearray((tmp_path / "ok.sav").read_bytes())
    raw[68:72] = struct.pack("<i", -1)
    unknown.write_bytes(raw)
    read_limits.check_file(unknown, "spss")
    zsav = tmp_path / "ok.zsav"
    cut = tmp_path / "cut.zsav"
    cut.write_bytes(zsav.read_bytes()[:-10])
    with pytest.raises(InputError, match="damaged or truncated SPSS file"):
        io.read(cut)
    wide = tmp_path / "wide.zsav"  # 200,000 cases of zeros: 1.6 MB of bytecodes in a small file
    pyreadstat.write_sav(
        pd.DataFrame(np.zeros((200_000, 8)), columns=[f"v{i}" for i in range(8)]),
        str(wide),
        compress=True,
    )
    assert wide.stat().st_size < 0.2 * MB
    with read_limits.limited(MB), pytest.raises(InputError, match="more than the limit of 1 MB"):
        io.read(wide)


def test_a_truncated_sas_transport_file_is_refused_in_the_cli(tmp_path, capsys):
    """A truncated .xpt was protected without a word (21 of 60 rows): cut anywhere, it is
    refused."""
    pyreadstat = pytest.importorskip("pyreadstat")
    # inside a record; at a record boundary inside an observation; at a record boundary that is an
    # observation's (30 observations of 24 bytes): only version 8 says how many observations it
    # holds
    for version, cuts in ((8, (700, 800, 720)), (5, (700, 800))):
        ok = tmp_path / f"v{version}.xpt"
        pyreadstat.write_xport(_frame(), str(ok), file_format_version=version)
        assert len(io.read(ok).frame) == 60
        raw = ok.read_bytes()
        for cut in cuts:
            bad = tmp_path / f"cut{version}-{cut}.xpt"
            bad.write_bytes(raw[: len(raw) - cut])
            with pytest.raises(InputError, match="damaged or truncated SAS transport file"):
                io.read(bad)
    err = _cli_error(capsys, tmp_path / "cut8-700.xpt", tmp_path)
    assert "not whole 80-byte records" in err


def test_parquet_footer_claims(tmp_path):
    zeros = tmp_path / "zeros.parquet"
    pd.DataFrame(np.zeros((500_000, 4))).rename(columns=str).to_parquet(zeros)
    assert zeros.stat().st_size < 0.2 * MB  # 2 million cells, 16 MB of values
    with (
        read_limits.limited(MB),
        pytest.raises(
            InputError,
            match="500,000 rows × 4 columns, more than the limit of " r"1 MB \(one byte a cell\)",
        ),
    ):
        io.read(zeros)
    folder = tmp_path / "dataset"
    folder.mkdir()
    for i in range(3):
        pd.DataFrame(np.zeros((100_000, 4))).rename(columns=str).to_parquet(
            folder / f"part-{i}.parquet"
        )
    with (
        read_limits.limited(MB),
        pytest.raises(InputError, match="cannot read dataset: its files claim 1,200,000 cells"),
    ):
        io.read(folder)
    fake = tmp_path / "fake.parquet"
    fake.write_bytes(b"a,b\n1,2\n")
    with pytest.raises(InputError, match="cannot read fake.parquet: it is not a Parquet file"):
        io.read(fake)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(zeros.read_bytes()[:-5])
    with pytest.raises(InputError, match="damaged or truncated Parquet file"):
        io.read(cut)


def test_excel_members_and_sheet_extents(tmp_path, capsys):
    openpyxl = pytest.importorskip("openpyxl")
    sparse = (
        tmp_path / "sparse.xlsx"
    )  # 5 kB spanning 2^20 x 2^14 cells: the reader fills every blank
    wb = openpyxl.Workbook()
    wb.active["A1"], wb.active["B1"], wb.active["A2"], wb.active["B2"] = "a", "b", 1, 2
    wb.active.cell(row=1048576, column=16384).value = 5
    wb.save(sparse)
    assert sparse.stat().st_size < 10_000
    assert "spans 1,048,576 rows × 16,384 columns" in _cli_error(capsys, sparse, tmp_path)
    ok = tmp_path / "ok.xlsx"
    _frame().to_excel(ok, index=False)
    assert len(io.read(ok).frame) == 60
    wb = openpyxl.load_workbook(ok)
    wb.active["Z5000"] = 1.0  # a stray cell: 5,000 rows × 26 columns to fill
    far = tmp_path / "far.xlsx"
    wb.save(far)
    with (
        read_limits.limited(5000 * 26 - 1),
        pytest.raises(InputError, match="its sheet1 spans 5,000 rows × 26 columns"),
    ):
        io.read(far)
    with read_limits.limited(5000 * 26):
        assert len(io.read(far).frame) == 4999
    bomb = tmp_path / "bomb.xlsx"  # a member inflating to 200 MB beside the workbook's own
    with zipfile.ZipFile(ok) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item))
        with dst.open("xl/media/padding.bin", "w", force_zip64=True) as member:
            for _ in range(200):
                member.write(bytes(MB))
    with (
        read_limits.limited(50 * MB),
        pytest.raises(InputError, match="decompresses to 200 MB, more than"),
    ):
        io.read(bomb)
    fake = tmp_path / "fake.xlsx"
    fake.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    with pytest.raises(
        InputError, match="cannot read fake.xlsx: it is a PNG image, not an Excel file"
    ):
        io.read(fake)


def test_typed_files_whose_content_is_another_format(tmp_path):
    buffer = stdio.BytesIO()
    _frame().to_parquet(buffer)
    for name, article in (
        ("data.dta", "a Stata"),
        ("data.sav", "an SPSS"),
        ("data.xpt", "a SAS transport"),
    ):
        path = tmp_path / name
        path.write_bytes(buffer.getvalue())
        with pytest.raises(
            InputError,
            match=f"it is a Parquet file, not {article} file: give it its suffix " r"\(.parquet\)",
        ):
            io.read(path)
