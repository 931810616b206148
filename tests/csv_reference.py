"""The CSV reader and writer as they were before the compiled scan (commit e375696, per-field
Python): the reference the new ones are compared with on awkward files (tests/test_csv_fast.py).
Kept verbatim but for its imports; not part of the package."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from microagg import read_limits
from microagg.errors import InputError
from microagg.io.file_table import Meta, Table
from microagg.io.formats import all_formats
from microagg.io.typed_frames import is_missing, is_numeric

__all__ = ["CsvDialect", "CsvMeta", "read", "csv_bytes"]

_SEPARATORS = (",", ";", "\t", "|")


@dataclass
class CsvDialect:
    """How a delimited text file is written: everything needed to write it back the same way."""

    sep: str = ","
    decimal: str = "."
    encoding: str = "utf-8"
    bom: bool = False
    newline: str = "\n"
    quotechar: str = '"'
    gzip: bool = False


@dataclass
class CsvMeta(Meta):
    """A CSV file as read: its dialect, the raw fields of every record (header first) with each
    record's line terminator, and which records are data rows (blank lines are kept apart)."""

    dialect: CsvDialect
    records: list
    ends: list
    data_rows: list

    def source_frame(self, table: Table):
        """For another format: numeric columns typed, every other column the exact text of its
        cells (a column with stray tokens stays text)."""
        import pandas as pd

        frame = table.frame.copy()
        for name in frame.columns:
            if frame[name].dtype == object:
                j = table.header.index(name)
                frame[name] = pd.Series(
                    [_unquote(self.records[i][j]) for i in self.data_rows], dtype=object
                )
            elif (
                frame[name].dtype.kind == "f" and frame[name].isna().any()
            ):  # integers with blanks: nullable integers
                j = table.header.index(name)
                texts = [_unquote(self.records[i][j]).strip() for i in self.data_rows]
                if all(not t or _INTEGER.fullmatch(t) for t in texts) and not all(
                    not t for t in texts
                ):
                    ints = [int(t) if t else None for t in texts]
                    if all(v is None or -(2**63) <= v < 2**63 for v in ints):
                        frame[name] = pd.array(ints, dtype="Int64")
        return frame

    def head(self, rows: int) -> CsvMeta:
        return replace(self, data_rows=self.data_rows[:rows])


_NUMBER = {
    ".": re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*"),
    ",": re.compile(r"\s*[+-]?(?:\d+,?\d*|,\d+)(?:[eE][+-]?\d+)?\s*"),
}
# under the decimal comma, points between groups of three digits separate thousands (95.250)
_GROUPED = {",": re.compile(r"\s*[+-]?[1-9]\d{0,2}(?:\.\d{3})+(?:,\d*)?(?:[eE][+-]?\d+)?\s*")}
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_LEADING_ZERO = re.compile(r"\s*[+-]?0\d")


def _other_format(raw: bytes, name: str) -> None:
    """A data file of another format (by its first bytes) with a text suffix: say what it is."""
    for fmt in all_formats():
        for magic in fmt.magic:
            if raw.startswith(magic):
                article = "an" if fmt.label[0].lower() in "aeiou" else "a"
                raise InputError(
                    f"{name} is {article} {fmt.label} file, not delimited text: give it its suffix "
                    f"({fmt.suffixes[0]})"
                )


def _decode(raw: bytes, encoding: str | None, name: str):
    """(text, encoding, bom): UTF-8 (with or without BOM), UTF-16 by BOM, else cp1252 / latin-1."""
    if encoding is not None:
        bom = encoding.lower().replace("_", "-") in ("utf-8-sig",)
        try:
            text = raw.decode(encoding)
        except LookupError:
            raise InputError(f"unknown encoding {encoding!r}") from None
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{name} is not valid {encoding} (byte {exc.start}); "
                "give the right one with --encoding"
            ) from None
        if bom:
            return text, "utf-8", True
        if text.startswith("\ufeff") and encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
            return text[1:], "utf-8", True
        return text, encoding, False
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8"), "utf-8", True
    if raw.startswith(
        (b"\xff\xfe", b"\xfe\xff")
    ):  # UTF-16 by its BOM, written back in the same byte order
        enc = "utf-16-le" if raw.startswith(b"\xff\xfe") else "utf-16-be"
        try:
            return raw[2:].decode(enc), enc, True
        except UnicodeDecodeError as exc:
            raise InputError(f"{name} is not valid {enc} (byte {exc.start + 2})") from None
    for enc in ("utf-8", "cp1252", "latin-1"):  # latin-1 decodes any byte: the last resort
        try:
            return raw.decode(enc), enc, False
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte")


def _field_pattern(sep: str, quote: str):
    s, q = re.escape(sep), re.escape(quote)
    # a field: a quoted section ("" inside is one quote), then any text up to the separator; or,
    # when it does not start with a quote, text in which a quote is a plain character (RFC 4180,
    # as Python's csv and pandas read it: 12" is twelve inches, not the start of a quoted field)
    # (nothing at an unclosed quote: the caller reports it)
    return re.compile(rf"{q}(?:[^{q}]|{q}{q})*{q}[^{s}\n]*|(?!{q})[^{s}\n]*|")


def _split_records(text: str, sep: str, quote: str = '"', lenient: bool = False):
    """Raw fields and terminator of every record. Quoted fields may hold separators and line breaks.
    ``lenient``: stop at an unclosed quote instead of failing (sniffing a cut-off head)."""
    field_re = _field_pattern(sep, quote)
    records, ends = [], []
    pos, n = 0, len(text)
    while pos < n:
        nl = text.find("\n", pos)
        stop = n if nl < 0 else nl
        line = text[pos:stop]
        if quote not in line:  # the common case: split the line
            fields = line.split(sep)
            pos = stop + 1 if nl >= 0 else n
            end = "\n" if nl >= 0 else ""
        else:
            fields = []
            while True:
                m = field_re.match(text, pos)
                fields.append(m.group())
                pos = m.end()
                if pos < n and text[pos] == sep:
                    pos += 1
                    continue
                break
            if pos < n and text[pos] == "\n":
                pos, end = pos + 1, "\n"
            elif pos >= n:
                end = ""
            elif lenient:
                break
            else:
                line_no = text.count("\n", 0, pos) + 1
                raise InputError(f"unclosed quote near line {line_no}")
        if end and fields[-1].endswith("\r"):
            fields[-1], end = fields[-1][:-1], "\r\n"
        records.append(fields)
        ends.append(end)
    return records, ends


def _unquote(raw: str, quote: str = '"') -> str:
    """A field's value: a quoted section loses its quotes ("" is one quote) and keeps the text
    after it; a field that does not start with a quote is its text."""
    if not raw.startswith(quote):
        return raw
    i, n = 1, len(raw)
    while i < n:  # the closing quote: the first one not doubled
        if raw[i] == quote:
            if i + 1 < n and raw[i + 1] == quote:
                i += 2
                continue
            return raw[1:i].replace(quote * 2, quote) + raw[i + 1 :]
        i += 1
    return raw[1:].replace(quote * 2, quote)  # unclosed (only in a cut-off head)


def _sniff_sep(text: str, quote: str = '"') -> str:
    """The separator among , ; tab | that splits the first lines into the same number (> 1) of
    fields."""
    head = text[:65536]
    cut = head.rfind("\n")
    head = head if cut < 0 or len(text) <= 65536 else head[:cut]
    best, best_fields = ",", 1
    for sep in _SEPARATORS:
        records, _ = _split_records(head, sep, quote, lenient=True)
        counts = {len(r) for r in records if r != [""]}
        if len(counts) == 1:
            fields = counts.pop()
            if fields > best_fields:
                best, best_fields = sep, fields
    return best


def _sniff_decimal(columns: list, sep: str) -> str:
    """',' when the separator is not ',' and numbers in the file use a decimal comma, not a
    point."""
    if sep == ",":
        return "."
    comma = point = 0
    for values in columns:
        for v in values[:200]:
            if "," in v and _NUMBER[","].fullmatch(v):
                comma += 1
            elif "." in v and _NUMBER["."].fullmatch(v) and not _GROUPED[","].fullmatch(v):
                point += 1
    return "," if comma > 0 and point == 0 else "."


def _warn_thousands(columns: list, decimal: str, name: str) -> None:
    """A detected decimal comma may be a thousands separator when every number with a comma has
    exactly three digits after it (12,500): say so, the values would be off by a factor 1000."""
    if decimal != ",":
        return
    seen = [
        v.strip()
        for values in columns
        for v in values[:200]
        if "," in v and _NUMBER[","].fullmatch(v)
    ]
    if seen and all(_THOUSANDS.fullmatch(v) for v in seen):
        import warnings

        warnings.warn(
            f"every number with a comma in {name} has three digits after it (such as {seen[0]!r}): "
            "the comma is read as the decimal mark; if it separates thousands, give --decimal . "
            "(such columns are then not numbers and not protected)",
            UserWarning,
            stacklevel=3,
        )


_THOUSANDS = re.compile(r"[+-]?\d{1,3},\d{3}")


def read(p: Path, *, missing=(), sep=None, decimal=None, encoding=None) -> Table:
    missing = tuple(missing)
    raw, gz = read_limits.text_bytes(
        p, encoding
    )  # gzip inflated in a bounded stream; binary data refused
    _other_format(raw, p.name)
    text, enc, bom = _decode(raw, encoding, p.name)
    if not text.strip():  # also a file of nothing but a byte order mark
        raise InputError(f"input file is empty: {p}")
    if sep is not None:
        sep = {"tab": "\t", "\\t": "\t"}.get(sep, sep)
        if len(sep) != 1 or sep in '"\n\r':
            raise InputError(f"--sep must be one character (or 'tab'), got {sep!r}")
    cr_only = "\r" in text and "\n" not in text  # classic Mac OS line endings
    lines = text.replace("\r", "\n") if cr_only else text
    if sep is None:
        sep = _sniff_sep(lines)
    if (
        cr_only
    ):  # read as lines; every line break in a field or at an end was, and is written back as, '\r'
        records, ends = _split_records(lines, sep)
        records = [[f.replace("\n", "\r") for f in r] for r in records]
        ends = [e.replace("\n", "\r") for e in ends]
    else:
        records, ends = _split_records(text, sep)
    newline = next((e for e in ends if e), "\n")
    header_raw = records[0]
    h = len(header_raw)
    header = [_unquote(f) for f in header_raw]
    data_rows = []
    for i in range(1, len(records)):
        r = records[i]
        if len(r) == h:
            data_rows.append(i)
        elif r == [""]:
            continue  # a blank line: kept as it is, not a record
        else:
            # a classic Mac OS file's line breaks in fields are '\r' again by now (above)
            brk = "\r" if cr_only else "\n"
            line_no = sum(f.count(brk) for rec in records[:i] for f in rec) + i + 1
            raise InputError(
                f"line {line_no} of {p.name} has {len(r)} field(s), the header has {h} "
                f"(separator {sep!r}; set it with --sep)"
            )
    if h == 1:  # one column: a blank line is a record with a blank value
        data_rows = [
            i for i in range(1, len(records)) if not (i == len(records) - 1 and records[i] == [""])
        ]
    if not data_rows:
        raise InputError(f"input has no data rows: {p}")
    columns = [[_unquote(records[i][j]) for i in data_rows] for j in range(h)]
    if decimal is None:
        decimal = _sniff_decimal(columns, sep)
        _warn_thousands(columns, decimal, p.name)
    elif decimal not in (".", ","):
        raise InputError(f"--decimal must be '.' or ',', got {decimal!r}")
    counts: dict = {}
    for name in header:
        counts[name] = counts.get(name, 0) + 1
    duplicates = [name for name, c in counts.items() if c > 1]
    try:
        frame = _typed_frame(header, columns, duplicates, decimal, missing)
    except InputError as exc:
        raise InputError(f"{p.name}: {exc}") from None
    dialect = CsvDialect(sep=sep, decimal=decimal, encoding=enc, bom=bom, newline=newline, gzip=gz)
    return Table(
        frame=frame,
        format="csv",
        path=p,
        header=header,
        duplicates=duplicates,
        meta=CsvMeta(dialect, records, ends, data_rows),
    )


def sniff_csv(path) -> tuple[str, str]:
    """(separator, encoding) of a (possibly gzipped) CSV file, detected from its first 64 KiB as
    ``read`` detects them (for readers that stream the file in chunks; a UTF-8 BOM is 'utf-8-sig',
    UTF-16 by its BOM 'utf-16')."""
    import gzip

    with open(path, "rb") as f:
        head = f.read(65536)
    if head[:2] == b"\x1f\x8b":
        with gzip.open(path, "rb") as f:
            head = f.read(65536)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        head = head[: len(head) // 2 * 2]  # not cut inside a UTF-16 code unit
    elif len(head) == 65536:  # not cut inside a UTF-8 character (its last 1 to 3 bytes)
        for cut in range(4):
            try:
                head[: len(head) - cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            head = head[: len(head) - cut]
            break
    text, encoding, bom = _decode(head, None, Path(path).name)
    if bom:
        encoding = "utf-8-sig" if encoding == "utf-8" else "utf-16"
    return _sniff_sep(text), encoding


def typed_text_frame(frame, decimal: str = ".", missing=()):
    """A frame whose cells are the texts of CSV fields, typed by the column rules of ``read``
    (numbers, integers, codes with leading zeros kept as text, tokens): for readers that stream a
    CSV in chunks and must see the columns as ``read`` sees them."""
    header = [str(c) for c in frame.columns]
    columns = [["" if v is None else str(v) for v in frame[c].tolist()] for c in frame.columns]
    return _typed_frame(header, columns, [], decimal, tuple(missing))


def _typed_frame(header, columns, duplicates, decimal, missing):
    """The pipeline's frame: a column is numeric when every non-missing cell is a number under the
    file's decimal mark (blank cells and ``missing`` tokens are missing). Integer columns without
    missing cells are int64; numbers with leading zeros (codes such as 00123) stay text; a column
    numeric but for a few other tokens keeps the numbers as floats and the tokens as text, so the
    column rules (preprocess) can name them."""
    import numpy as np
    import pandas as pd

    tokens = {t.strip() for t in missing}
    number = _NUMBER[decimal]
    data = {}
    for name, values in zip(header, columns):
        if name in duplicates:
            continue
        fast = _plain_numbers(values, decimal)
        if fast is not None:
            data[name] = pd.Series(fast)
            continue
        stripped = [v.strip() for v in values]
        is_missing = [v == "" or v in tokens for v in stripped]
        grouped = _GROUPED.get(decimal)
        is_number = [
            not m and bool(number.fullmatch(v) or (grouped and grouped.fullmatch(v)))
            for v, m in zip(stripped, is_missing)
        ]
        if grouped is not None:
            _check_marks(name, stripped, is_number, decimal)
        n_number = sum(is_number)
        others = len(values) - n_number - sum(is_missing)
        if n_number and any(
            _LEADING_ZERO.match(v) and not re.fullmatch(r"[+-]?0(?:[.,]\d*)?(?:[eE].*)?", v)
            for v, isnum in zip(stripped, is_number)
            if isnum
        ):
            data[name] = pd.Series(values, dtype=object)  # a code such as a zip code: text
            continue
        if n_number == 0:
            if all(is_missing) and tokens & set(stripped):
                data[name] = pd.Series(np.full(len(values), np.nan))
            else:
                data[name] = pd.Series(values, dtype=object)
            continue

        def parse(v):
            return float(v.replace(".", "").replace(",", ".")) if decimal == "," else float(v)

        if others == 0:
            if not any(is_missing) and all(_INTEGER.fullmatch(v) for v in stripped):
                ints = [int(v) for v in stripped]
                if all(-(2**63) <= x < 2**63 for x in ints):
                    data[name] = pd.Series(np.array(ints, dtype=np.int64))
                else:  # beyond int64: exact Python integers (the column rules reject them as QIs)
                    data[name] = pd.Series(ints, dtype=object)
                continue
            data[name] = pd.Series(
                [np.nan if m else parse(v) for v, m in zip(stripped, is_missing)], dtype=np.float64
            )
            continue
        # numeric but for some tokens: numbers as floats, the rest as the text it is
        data[name] = pd.Series(
            [
                np.nan if m else (parse(v) if isnum else values[i])
                for i, (v, m, isnum) in enumerate(zip(stripped, is_missing, is_number))
            ],
            dtype=object,
        )
    return pd.DataFrame(data, columns=[c for c in header if c not in duplicates])


def _check_marks(name, stripped, is_number, decimal) -> None:
    """Under the decimal comma, a number with a decimal point (70.5) beside numbers with the comma
    or with points between thousands: the column's marks disagree."""
    other = "." if decimal == "," else ","
    disagreeing = [
        v
        for v, isnum in zip(stripped, is_number)
        if not isnum and other in v and _NUMBER[other].fullmatch(v)
    ]
    agreeing = [
        v for v, isnum in zip(stripped, is_number) if isnum and (decimal in v or other in v)
    ]
    if disagreeing and agreeing:
        raise InputError(
            f"column {name} mixes decimal marks: {agreeing[0][:40]!r} is written with the decimal"
            f" mark {decimal!r}, {disagreeing[0][:40]!r} with {other!r}; write every number of a"
            " column with one mark (or give --decimal)"
        )


_PLAIN = frozenset("0123456789.+-eE")


def _plain_numbers(values, decimal):
    """The common case at C speed: every cell a plain number (no blanks, spaces, tokens, codes
    with leading zeros). Returns int64 or float64 values, or None to take the careful path."""
    import numpy as np

    joined = "\n".join(values)
    chars = set(joined) - {"\n"}
    if not values or not chars <= (_PLAIN | {","} if decimal == "," else _PLAIN) or "" in values:
        return None
    if decimal == "," and chars & set(".eE"):
        return None  # a point: thousands, or a disagreeing mark
    if re.search(r"(?:^|\n)[+-]?0\d", joined):
        return None  # leading zeros: a code, kept as text
    try:
        if not chars & set(".eE,"):
            return np.array(values, dtype=np.int64)
        texts = joined.replace(",", ".").split("\n") if decimal == "," else values
        out = np.array(texts, dtype=np.float64)
    except (ValueError, OverflowError):
        return None
    return out


def _format_number(value: float, integer: bool, decimal: str) -> str:
    v = float(value)
    if integer and v.is_integer() and abs(v) < 2.0**63:
        text = str(int(v))
    else:
        text = repr(v)
    return text.replace(".", ",") if decimal == "," else text


def csv_bytes(table: Table, published: dict, gz: bool, sep: str | None = None) -> bytes:
    """The file's bytes with the QI cells replaced; ``sep``: another separator (a field holding
    it is quoted, every other field keeps its text)."""
    meta = table.meta
    d = meta.dialect
    q = d.quotechar
    records = [list(r) for r in meta.records]
    if sep is not None and sep != d.sep:
        records = [
            [q + f.replace(q, q + q) + q if sep in f and not f.startswith(q) else f for f in r]
            for r in records
        ]
    sep = d.sep if sep is None else sep
    index = {name: j for j, name in enumerate(table.header) if name not in table.duplicates}
    for name, values in published.items():
        j = index[name]
        raw = [meta.records[i][j] for i in meta.data_rows]
        numeric = is_numeric(values)
        integer = numeric and all(
            _INTEGER.fullmatch(_unquote(f)) for f in raw if _unquote(f).strip()
        )
        # (a missing value, as a suppressed stratum publishes, is an empty field)
        for i, f, v in zip(meta.data_rows, raw, values):
            # a categorical QI publishes one of the column's own values (its text); numbers are
            # formatted
            text = (
                ""
                if is_missing(v)
                else _format_number(v, integer, d.decimal)
                if numeric
                else str(v)
            )
            # a number missing in the input too (spaces, a declared token) keeps its text
            read = _unquote(f)
            tokens = {str(t).strip() for t in getattr(meta, "missing", ())}
            if numeric and is_missing(v) and read and (not read.strip() or read.strip() in tokens):
                text = read
            if f.startswith(q) or sep in text or q in text or "\n" in text or "\r" in text:
                text = q + text.replace(q, q + q) + q
            records[i][j] = text
    body = "".join(sep.join(r) + e for r, e in zip(records, meta.ends))
    data = (("\ufeff" if d.bom else "") + body).encode(d.encoding)
    if gz:
        import gzip

        data = gzip.compress(data, mtime=0)
    return data


def write_same(table: Table, published: dict, tmp, path) -> None:
    """CSV to CSV: the input's bytes with the QI cells replaced. A file named .tsv / .tab is
    tab-separated; any other name keeps the input's separator."""
    name = Path(path).name.lower()
    tabs = name.removesuffix(".gz").endswith((".tsv", ".tab"))
    Path(tmp).write_bytes(
        csv_bytes(table, published, gz=name.endswith(".gz"), sep="\t" if tabs else None)
    )


def write(frame, tmp, meta, path, published) -> None:
    """A typed frame (from another format) as a plain CSV file."""
    compression = "gzip" if Path(path).name.lower().endswith(".gz") else None
    frame.to_csv(tmp, index=False, compression=compression)


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
    # the QIs parsed by pandas' C parser (a blank cell is missing); every other column as its text
    reader = pd.read_csv(
        path,
        sep=sep,
        encoding=encoding,
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


def first_rows(path, rows: int = 1000):
    """The first ``rows`` records with their columns typed as ``read`` types them
    (``typed_text_frame``): the column rules apply to them before any pass over the file."""
    try:
        return typed_text_frame(next(chunks(path, None, rows)))
    except (OSError, ValueError, UnicodeDecodeError, StopIteration) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read {Path(path).name}: {text}") from None
