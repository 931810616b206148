"""io.read_header: a file's column names as io.read gives them, before (and without) reading its
body, for every format; the same errors as io.read for what names no columns."""

from __future__ import annotations

import gzip
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from test_csv_fast import awkward_files

from microagg import io
from microagg.errors import InputError


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=awkward_files())
def test_csv_header_is_the_header_read_gives(tmp_path, case):
    raw, gz = case
    path = tmp_path / ("in.csv.gz" if gz else "in.csv")
    path.write_bytes(gzip.compress(raw, mtime=0) if gz else raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = io.read(path).header
        except InputError as exc:
            if "empty" in str(exc):
                with pytest.raises(InputError, match="empty"):
                    io.read_header(path)
            return  # an error in the body: the names may still be read
    assert io.read_header(path) == expected


def test_a_csv_header_is_read_without_the_body(tmp_path):
    """The names of a file whose body is broken far from its start (a ragged line after 2 MB):
    read_header never reaches it."""
    body = "".join(f"{i},{i % 7},Reus\n" for i in range(200_000))
    path = tmp_path / "big.csv"
    path.write_text('id,"x, y",city\n' + body + "1,2\n")
    with pytest.raises(InputError, match="field"):
        io.read(path)
    assert io.read_header(path) == ["id", "x, y", "city"]
    zipped = tmp_path / "big.csv.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes()))
    assert io.read_header(zipped) == ["id", "x, y", "city"]


def test_a_long_first_record_with_line_breaks_in_quotes(tmp_path):
    names = [f'"col\n{i}"' for i in range(30_000)]  # a header longer than the first bytes read
    path = tmp_path / "wide.csv"
    path.write_text(";".join(names) + "\n" + ";".join("1" for _ in names) + "\n")
    assert (
        io.read_header(path) == io.read(path).header
    )  # sniffed (as ',': the first 64 KiB hold no whole line)
    assert (
        io.read_header(path, sep=";")
        == [f"col\n{i}" for i in range(30_000)]
        == io.read(path, sep=";").header
    )


@pytest.mark.parametrize("suffix", [".parquet", ".dta", ".sav", ".xpt", ".xlsx"])
def test_typed_formats_header_is_the_header_read_gives(tmp_path, suffix):
    source = tmp_path / "in.csv"
    frame = pd.DataFrame(
        {"id": np.arange(6), "income": np.linspace(1, 2, 6), "region": list("aabbcc")}
    )
    frame.to_csv(source, index=False)
    out = tmp_path / f"out{suffix}"
    io.write(io.read(source), out, {})
    assert io.read_header(out) == io.read(out).header == ["id", "income", "region"]


def test_header_errors_are_reads_errors(tmp_path):
    with pytest.raises(InputError, match="not found"):
        io.read_header(tmp_path / "missing.csv")
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"\xef\xbb\xbf")
    with pytest.raises(InputError, match="empty"):
        io.read_header(empty)
    png = tmp_path / "image.csv"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    with pytest.raises(InputError, match="PNG"):
        io.read_header(png)
    parquet = tmp_path / "x.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(parquet)
    with pytest.raises(InputError, match="--sep"):
        io.read_header(parquet, sep=";")
