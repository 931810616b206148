"""A file format is one declaration (issue "Rooms and names"): a trial format, JSON lines under
the trial name ``trial_jsonl`` and suffix ``.trialjsonl`` (tests/trials.py: a real ``jsonl``
format stays free), declared and registered in this module only, is read and written by the API
and the command line, bounded by ``read_limits`` (its header check, the registry's first bytes),
listed by the command line's help and offered by the app, with no other file of the package
touched."""

from __future__ import annotations

import io as stdio
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg import io, read_limits
from microagg.cli import build_parser, main
from microagg.errors import InputError
from microagg.io.formats import Format
from microagg.io.typed_frames import typed_table

KIND = "trial JSON lines"


def read_jsonl(p: Path, *, missing=()):
    raw, _ = read_limits.text_bytes(p, kind=KIND)  # bounded, gzip inflated, binary data named
    records = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    return typed_table(pd.DataFrame.from_records(records), "trial_jsonl", p, None, missing)


def write_jsonl(frame, tmp, meta, path, published) -> None:
    rows = frame.to_dict("records")
    Path(tmp).write_text(
        "".join(json.dumps(row, default=lambda v: v.item()) + "\n" for row in rows)
    )


def check_jsonl(f, name: str, size: int) -> None:
    """Its lines × the keys of its first record fit the limits (as a header's claims are
    checked)."""
    first = f.readline()
    lines = 1 + sum(1 for line in f if line.strip())
    read_limits.check_cells(name, lines, len(json.loads(first)))


JSONL = Format(
    "trial_jsonl",
    "trial JSON lines",
    (".trialjsonl",),
    read_jsonl,
    write_jsonl,
    family="trial_jsonl",
    rank=70,
    read_by="json.loads",
    check_header=check_jsonl,
    header=lambda p: list(json.loads(p.read_text().split("\n", 1)[0])),
)


@pytest.fixture
def jsonl():
    io.register(JSONL)
    try:
        yield JSONL
    finally:
        io.unregister(JSONL.name)


def _records(path: Path, n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "id": [f"r{i:03d}" for i in range(n)],
            "age": rng.integers(18, 90, n),
            "income": rng.normal(3000, 800, n).round(2),
            "note": ['x, "y"'] * n,
        }
    )
    write_jsonl(frame, path, None, path, {})
    return frame


def _read_lines(path: Path) -> pd.DataFrame:
    return pd.DataFrame.from_records([json.loads(line) for line in path.read_text().splitlines()])


def test_a_registered_format_is_read_and_written_by_the_api_and_the_command_line(tmp_path, jsonl):
    src, by_api, by_cli = (
        tmp_path / "in.trialjsonl",
        tmp_path / "api.trialjsonl",
        tmp_path / "cli.trialjsonl",
    )
    frame = _records(src)
    assert io.format_of(src) == "trial_jsonl" and io.read_header(src) == list(frame.columns)
    microagg.protect(src, by_api, k=3, columns=["age", "income"])
    assert (
        main(["protect", str(src), "-o", str(by_cli), "-k", "3", "--columns", "age,income", "-q"])
        == 0
    )
    assert by_api.read_bytes() == by_cli.read_bytes()  # every door, one file
    out = _read_lines(by_cli)
    assert out[["id", "note"]].equals(frame[["id", "note"]])  # what was not protected, as it came
    assert out.groupby(["age", "income"]).size().min() >= 3
    assert not out["income"].equals(frame["income"])
    to_csv = tmp_path / "out.csv"  # and converted to another format, as any typed format is
    microagg.protect(src, to_csv, k=3, columns=["age", "income"])
    assert pd.read_csv(to_csv)["id"].tolist() == frame["id"].tolist()


def test_read_limits_checks_a_registered_format(tmp_path, jsonl):
    src = tmp_path / "in.trialjsonl"
    _records(src, 1000)
    with (
        read_limits.limited(1000 * 4 - 1),
        pytest.raises(InputError, match="1,000 rows × 4 columns, more than"),
    ):
        io.read(src)
    with read_limits.limited(1 << 17):  # its bytes and its cells within the limit
        assert len(io.read(src).frame) == 1000
    parquet = tmp_path / "data.trialjsonl"
    buffer = stdio.BytesIO()
    pd.DataFrame({"a": [1, 2]}).to_parquet(buffer)
    parquet.write_bytes(buffer.getvalue())  # its own check reads no JSON: the text check names it
    with pytest.raises(
        InputError,
        match=r"is a Parquet file, not trial JSON lines: give it its suffix \(.parquet\)",
    ):
        read_jsonl(parquet)


def test_its_first_bytes_name_it_under_another_suffix(tmp_path, jsonl):
    """A format that declares its first bytes is named when a file of it carries a text suffix."""
    magic = Format(
        "trial_binary",
        "trial binary",
        (".trialbinary",),
        read_jsonl,
        None,
        family="trial_binary",
        rank=80,
        written_as="trial_jsonl",
        magic=(b"MICROAGG-TRIAL1",),
    )
    io.register(magic)
    try:
        fake = tmp_path / "data.csv"
        fake.write_bytes(b"MICROAGG-TRIAL1" + bytes(100))
        with pytest.raises(
            InputError,
            match=r"data.csv is a trial binary file, not delimited text: give it its "
            r"suffix \(.trialbinary\)",
        ):
            io.read(fake)
        assert "ending in .trialjsonl (trial JSON lines)" in magic.read_only_hint
        with pytest.raises(InputError, match="can be read but not written"):
            io.check_output_path(tmp_path / "out.trialbinary")
    finally:
        io.unregister(magic.name)


def test_the_command_line_and_the_app_list_a_registered_format(jsonl):
    from microagg.app import input_data as inputs

    assert "trial JSON lines (.trialjsonl)" in io.supported_text()
    assert "trial JSON lines" in " ".join(build_parser().format_help().split())
    assert ".trialjsonl" in inputs.read_suffixes()
    assert inputs.output_suffix("survey.TRIALJSONL") == ".trialjsonl"  # written back as it came
    table = io.Table(pd.DataFrame(), "trial_jsonl", Path("x.trialjsonl"), [])
    assert io.reader_name(table) == "json.loads"


def test_a_format_is_registered_once():
    with pytest.raises(ValueError, match="declared already"):
        io.register(io.formats()[0])
    clash = Format("trial_other", "trial other", (".csv",), read_jsonl, None, family="trial")
    with pytest.raises(ValueError, match="declared already"):
        io.register(clash)
    assert ".trialjsonl" not in io.read_suffixes()  # the fixture's registration is undone
