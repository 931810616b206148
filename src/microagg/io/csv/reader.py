"""Reading a CSV file: one compiled scan of its bytes (``microagg.kernels.csv_scan``) finds
every record and field; the header, the data rows' field spans and what follows each row are
kept (``CsvMeta``) and the columns typed (``fields``). The out-of-core mode reads it in chunks."""

from __future__ import annotations

from pathlib import Path

from ... import read_limits
from ...errors import InputError
from ..file_table import Table
from .dialect import (
    given_decimal,
    given_sep,
    head_text,
    line_of,
    sniff_csv,
    sniff_decimal,
    sniff_sep,
    text_of,
    unquote,
    warn_thousands,
)
from .fields import MIXED_MARKS, field_texts, typed_frame_of, typed_text_frame
from .meta import CsvDialect, CsvMeta


def read(p: Path, *, missing=(), sep=None, decimal=None, encoding=None, written=None) -> Table:
    """A CSV file as a Table: its text decoded (``_text``), its separator sniffed unless given,
    its records scanned (``_scanned``), its decimal mark sniffed from the first 200 rows unless
    given, and its columns typed (``fields.typed_frame_of``; ``written``: for a file just
    written, the writer's account of its published columns, checked field by field)."""
    sep, decimal, missing = given_sep(sep), given_decimal(decimal), tuple(missing)
    buf, dialect, cr_only = _text(p, encoding)
    dialect.sep = sep or sniff_sep(head_text(buf))
    meta, header = _scanned(buf, dialect, cr_only, p)
    meta.missing = missing
    if decimal is None:
        spans = meta.spans  # the first 200 rows' texts: what the sniffer sees
        heads = [
            field_texts(meta, spans[:200, j].copy(), spans[:200, j + 1] - 1)
            for j in range(len(header))
        ]
        decimal = sniff_decimal(heads, dialect.sep)
        warn_thousands(heads, decimal, p.name)
    dialect.decimal = decimal
    counts: dict = {}
    for name in header:
        counts[name] = counts.get(name, 0) + 1
    duplicates = [name for name, c in counts.items() if c > 1]
    frame = typed_frame_of(meta, header, duplicates, decimal, missing, written)
    mixed = frame.attrs[MIXED_MARKS]
    frame.attrs[MIXED_MARKS] = {name: f"{p.name}: {why}" for name, why in mixed.items()}
    return Table(frame=frame, format="csv", path=p, header=header, duplicates=duplicates, meta=meta)


def _text(p: Path, encoding: str | None) -> tuple[bytes, CsvDialect, bool]:
    """(the file's text as UTF-8 bytes, its dialect as far as its bytes say, whether its lines end
    in '\r' only: classic Mac OS line endings are read as '\n' and written back as '\r')."""
    raw, gz = read_limits.text_bytes(
        p, encoding
    )  # gzip inflated in a bounded stream; binary data refused
    buf, enc, bom = text_of(raw, encoding, p.name)
    del raw
    if (
        not buf
        or (buf.isspace() or len(buf) < 64)
        and not buf.decode("utf-8", "surrogatepass").strip()
    ):
        # also nothing but a BOM (bytes.strip would copy the text)
        raise InputError(f"input file is empty: {p}")
    cr_only = b"\r" in buf and b"\n" not in buf
    if cr_only:
        buf = buf.replace(b"\r", b"\n")
    return buf, CsvDialect(encoding=enc, bom=bom, gzip=gz), cr_only


def _scanned(buf: bytes, dialect: CsvDialect, cr_only: bool, p: Path) -> tuple[CsvMeta, list]:
    """(the CsvMeta of the text ``buf``, the header's names): one compiled scan finds every record
    and field; every data row must have the header's fields (blank lines are kept apart)."""
    import numpy as np

    from ...kernels import csv_scan

    scanned = csv_scan.scan(np.frombuffer(buf, dtype=np.uint8), ord(dialect.sep), ord('"'))
    if isinstance(scanned, int):
        raise InputError(f"unclosed quote near line {line_of(buf, scanned)}")
    rec_start, rec_term, rec_first, fstart = scanned
    del scanned  # (the arrays are freed once the spans are taken)
    fields = np.diff(rec_first)
    h = int(fields[0])
    header_ends = [int(fstart[k + 1]) - 1 for k in range(h - 1)] + [int(rec_term[0])]
    header_raw = [
        buf[int(fstart[k]) : header_ends[k]].decode("utf-8", "surrogatepass") for k in range(h)
    ]
    if cr_only:
        header_raw = [f.replace("\n", "\r") for f in header_raw]
    data_rows = _data_rows(buf, fields, rec_start, rec_term, dialect.sep, p)
    spans = csv_scan.field_spans(fstart, rec_first, rec_term, data_rows, h)
    tails = np.empty((len(data_rows), 2), dtype=rec_start.dtype)
    tails[:, 0] = rec_term[data_rows]
    tails[:-1, 1] = rec_start[data_rows[1:]]
    tails[-1, 1] = len(buf)
    head_end, header_term = int(rec_start[data_rows[0]]), int(rec_term[0])
    dialect.newline = _newline_of(buf, header_term, cr_only)
    meta = CsvMeta(dialect, buf, spans, tails, head_end, header_raw, header_term, cr_only)
    return meta, [unquote(f) for f in header_raw]


def _data_rows(buf: bytes, fields, rec_start, rec_term, sep: str, p: Path):
    """The records after the header that are data rows: each has the header's number of fields
    (a record of another number is an error, a blank line is not a row); with one column, a blank
    line is a row of one blank value, but for a last blank line."""
    import numpy as np

    records = len(rec_term)
    h = int(fields[0])
    later = np.arange(1, records)
    blank = (fields[1:] == 1) & (rec_term[1:] == rec_start[1:records])
    bad = (fields[1:] != h) & ~blank
    if bad.any():
        i = int(later[np.argmax(bad)])
        line = line_of(buf, int(rec_start[i]))
        raise InputError(
            f"line {line} of {p.name} has {int(fields[i])} field(s), the "
            f"header has {h} (separator {sep!r}; set it with --sep)"
        )
    if h == 1:
        data_rows = later[:-1] if records > 1 and blank[-1] else later
    else:
        data_rows = later[fields[1:] == h]
    if not len(data_rows):
        raise InputError(f"input has no data rows: {p}")
    return data_rows


def _newline_of(buf: bytes, header_term: int, cr_only: bool) -> str:
    """The first record's line terminator ('\\n' when there is none)."""
    end = buf[header_term : header_term + 2]
    if end.startswith(b"\r\n"):
        return "\r\n"
    if end.startswith(b"\n"):
        return "\r" if cr_only else "\n"
    return "\n"


def chunks(path, columns, chunk_rows: int, numeric=()):
    """The file's records in order, as DataFrames of at most ``chunk_rows`` records, read as text,
    every field exactly as written (the separator and encoding detected as ``read`` detects
    them), so the other columns come out as they came in (codes such as 00123, NA, null and
    blanks kept apart); the ``numeric`` columns (the QIs) are parsed as numbers (a blank cell is
    missing, and reported as such; another cell that is not a number an InputError)."""
    import os
    from collections import defaultdict

    import pandas as pd

    sep, encoding = sniff_csv(path)
    decimal = _streamed_decimal(path, sep, encoding)
    # the QIs parsed by pandas' C parser (a blank cell is missing); every other column as its text
    reader = pd.read_csv(
        path,
        sep=sep,
        encoding=encoding,
        decimal=decimal,
        chunksize=chunk_rows,
        usecols=columns,
        dtype=defaultdict(lambda: str, {c: "float64" for c in numeric}),
        keep_default_na=False,
        na_values={c: [""] for c in numeric} or None,
    )
    try:
        yield from reader
    except ValueError as exc:
        raise InputError(
            f"a quasi-identifier column of {os.path.basename(path)} holds a cell that is "
            f"not a number ({exc})"
        ) from None


def _streamed_decimal(path, sep: str, encoding: str) -> str:
    """The decimal mark of a file read in chunks, sniffed from its first 200 rows as ``read``
    sniffs it (a decimal comma in a file separated by ';' or a tab)."""
    import pandas as pd

    if sep == ",":
        return "."
    head = pd.read_csv(
        path, sep=sep, encoding=encoding, nrows=200, dtype=str, keep_default_na=False
    )
    return sniff_decimal([head[c].tolist() for c in head.columns], sep)


def detected_decimal(path) -> str:
    """The decimal mark the out-of-core mode reads ``path`` with (detected, as ``read`` does)."""
    sep, encoding = sniff_csv(path)
    return _streamed_decimal(path, sep, encoding)


def first_rows(path, rows: int = 1000):
    """The first ``rows`` records with their columns typed as ``read`` types them
    (``typed_text_frame``): the column rules apply to them before any pass over the file."""
    try:
        sep, encoding = sniff_csv(path)
        decimal = _streamed_decimal(path, sep, encoding)
        return typed_text_frame(next(chunks(path, None, rows)), decimal)
    except (OSError, ValueError, UnicodeDecodeError, StopIteration) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read {Path(path).name}: {text}") from None
