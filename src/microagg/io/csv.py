"""CSV / TSV (optionally gzip): the text is kept field by field.

Separator, decimal mark, quoting, encoding (BOM included), line endings, blank lines and the
header (duplicate names included) are read from the file or given; every field that is not a QI
cell is written back with the very characters it had. A QI cell gets its group's published
value in the file's decimal mark: an integer when the column held integers and the value is
integral, else the shortest text that reads back as the same float64. The out-of-core mode
streams the file in chunks of text with the same dialect detection and column rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from .. import read_limits
from ..errors import InputError
from .formats import Format
from .table import Meta, Table
from .typed import is_missing, is_numeric

__all__ = ["FORMATS", "CsvDialect", "CsvMeta", "sniff_csv", "typed_text_frame"]

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
    """A CSV file as read: its dialect and its text (UTF-8, whatever the file's encoding; a file
    with classic Mac line endings holds '\\n' here, written back as '\\r') with where every field
    of every data row starts. Blank lines and line endings belong to positions, not to records:
    ``tails[i]`` is the text after data row i's last field up to the next data row, written after
    the i-th published row whatever record ``order[i]`` is placed there (the shuffle)."""

    dialect: CsvDialect
    text: bytes
    spans: object  # (rows, columns + 1) int array: field j of row r is text[spans[r, j]:spans[r, j + 1] - 1]
    tails: object  # (rows, 2) int array: [start, end) of what follows each row's last field
    head_end: int  # the header record and the blank lines after it: text[:head_end]
    header_raw: list  # the header's fields as written (quotes included)
    header_term: int  # where the header's line terminator starts
    cr_only: bool = False
    order: object = None  # the records in the order written (None: the file's)

    @property
    def rows(self) -> int:
        return len(self.tails)

    def row_order(self):
        import numpy as np

        return np.arange(self.rows, dtype=np.int64) if self.order is None else self.order

    def field_bounds(self, j: int):
        """(starts, ends) of column ``j``'s fields, row by row in the order written."""
        import numpy as np

        if self.order is None and self.rows == len(self.spans):
            return np.ascontiguousarray(self.spans[:, j]), self.spans[:, j + 1] - 1
        rows = self.row_order()
        return self.spans[rows, j], self.spans[rows, j + 1] - 1

    def texts(self, j: int):
        """Column ``j``'s values: the text of each field (unquoted), row by row (an object array)."""
        starts, ends = self.field_bounds(j)
        return _texts(self, starts, ends)

    def grouped(self, j: int):
        """Column ``j``'s texts as a pandas Categorical (its categories the distinct texts):
        what the read-back check and the audit group records by."""
        import pandas as pd

        starts, ends = self.field_bounds(j)
        codes, distinct = _distinct_texts(self, starts, ends, arrow=True)
        if isinstance(distinct, list):
            categories = pd.Index(_objects(distinct), dtype=object)
        else:  # pandas strings over the pyarrow array: no Python string per distinct text
            categories = pd.Index(pd.arrays.ArrowStringArray(distinct))
        try:  # the texts are distinct by construction: pandas need not hash them again to check it
            dtype = pd.CategoricalDtype._from_fastpath(categories, False)
        except AttributeError:  # (a private constructor: a pandas without it checks them)
            dtype = pd.CategoricalDtype(categories, ordered=False)
        try:
            return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)
        except TypeError:  # pandas before 2.1 checks the codes
            return pd.Categorical.from_codes(codes, dtype=dtype)

    def source_frame(self, table: Table):
        """For another format: numeric columns typed, every other column the exact text of its
        cells (a column with stray tokens stays text)."""
        import pandas as pd

        frame = table.frame.copy()
        for name in frame.columns:
            if frame[name].dtype == object:
                j = table.header.index(name)
                frame[name] = pd.Series(self.texts(j), dtype=object)
            elif frame[name].dtype.kind == "f" and frame[name].isna().any():  # integers with blanks: nullable integers
                j = table.header.index(name)
                texts = [t.strip() for t in self.texts(j)]
                if all(not t or _INTEGER.fullmatch(t) for t in texts) and not all(not t for t in texts):
                    ints = [int(t) if t else None for t in texts]
                    if all(v is None or -(2 ** 63) <= v < 2 ** 63 for v in ints):
                        frame[name] = pd.array(ints, dtype="Int64")
        return frame

    def head(self, rows: int) -> "CsvMeta":
        return replace(self, order=self.row_order()[:rows], tails=self.tails[:rows])

    def reordered(self, order) -> "CsvMeta":
        """The records in ``order`` (record ``order[i]`` written at position i); blank lines and
        line endings stay at their positions."""
        return replace(self, order=self.row_order()[order])


_NUMBER = {".": re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*"),
           ",": re.compile(r"\s*[+-]?(?:\d+,?\d*|,\d+)(?:[eE][+-]?\d+)?\s*")}
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_LEADING_ZERO = re.compile(r"\s*[+-]?0\d")


def _decode(raw: bytes, encoding: str | None, name: str):
    """(text, encoding, bom): UTF-8 (with or without BOM), UTF-16 by BOM, else cp1252 / latin-1."""
    if encoding is not None:
        bom = encoding.lower().replace("_", "-") in ("utf-8-sig",)
        try:
            text = raw.decode(encoding)
        except LookupError:
            raise InputError(f"unknown encoding {encoding!r}") from None
        except UnicodeDecodeError as exc:
            raise InputError(f"{name} is not valid {encoding} (byte {exc.start}); "
                             "give the right one with --encoding") from None
        if bom:
            return text, "utf-8", True
        if text.startswith("\ufeff") and encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
            return text[1:], "utf-8", True
        return text, encoding, False
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8"), "utf-8", True
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 by its BOM, written back in the same byte order
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
            return raw[1:i].replace(quote * 2, quote) + raw[i + 1:]
        i += 1
    return raw[1:].replace(quote * 2, quote)  # unclosed (only in a cut-off head)


def _sniff_sep(text: str, quote: str = '"') -> str:
    """The separator among , ; tab | that splits the first lines into the same number (> 1) of fields."""
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
    """',' when the separator is not ',' and numbers in the file use a decimal comma, not a point."""
    if sep == ",":
        return "."
    comma = point = 0
    for values in columns:
        for v in values[:200]:
            if "," in v and _NUMBER[","].fullmatch(v):
                comma += 1
            elif "." in v and _NUMBER["."].fullmatch(v):
                point += 1
    return "," if comma > 0 and point == 0 else "."


def _warn_thousands(columns: list, decimal: str, name: str) -> None:
    """A detected decimal comma may be a thousands separator when every number with a comma has
    exactly three digits after it (12,500): say so, the values would be off by a factor 1000."""
    if decimal != ",":
        return
    seen = [v.strip() for values in columns for v in values[:200] if "," in v and _NUMBER[","].fullmatch(v)]
    if seen and all(_THOUSANDS.fullmatch(v) for v in seen):
        import warnings

        warnings.warn(f"every number with a comma in {name} has three digits after it (such as {seen[0]!r}): "
                      "the comma is read as the decimal mark; if it separates thousands, give --decimal . "
                      "(such columns are then not numbers and not protected)", UserWarning, stacklevel=3)


_THOUSANDS = re.compile(r"[+-]?\d{1,3},\d{3}")


def _text_of(raw: bytes, encoding: str | None, name: str) -> tuple[bytes, str, bool]:
    """(the file's text as UTF-8 bytes without its BOM, its encoding, whether it had a BOM). An
    ASCII file is its own text; a UTF-8 one is checked, not copied; others are transcoded."""
    if encoding is None and raw.isascii():
        return raw, "utf-8", False
    text, enc, bom = _decode(raw, encoding, name)
    if encoding is None and enc == "utf-8":
        return (raw[3:] if bom else raw), enc, bom
    return text.encode("utf-8", "surrogatepass"), enc, bom


def _head_text(buf: bytes) -> str:
    """The first 65,537 characters of the text at most (what the sniffers look at: more than
    65,536 says the text goes on)."""
    head = buf[:65537 * 4]
    for cut in range(4):  # not inside a UTF-8 character
        try:
            return head[:len(head) - cut].decode("utf-8")[:65537]
        except UnicodeDecodeError:
            continue
    return head.decode("utf-8", "replace")[:65537]


def _line_of(buf: bytes, pos: int) -> int:
    return buf.count(b"\n", 0, pos) + 1


def read(p: Path, *, missing=(), sep=None, decimal=None, encoding=None) -> Table:
    import numpy as np

    from . import _csv_scan as csv_scan

    missing = tuple(missing)
    raw, gz = read_limits.text_bytes(p, encoding)  # gzip inflated in a bounded stream; binary data refused
    buf, enc, bom = _text_of(raw, encoding, p.name)
    del raw
    if not buf or (buf.isspace() or len(buf) < 64) and not buf.decode("utf-8", "surrogatepass").strip():
        # also nothing but a BOM (bytes.strip would copy the text)
        raise InputError(f"input file is empty: {p}")
    if sep is not None:
        sep = {"tab": "\t", "\\t": "\t"}.get(sep, sep)
        if len(sep) != 1 or sep in '"\n\r':
            raise InputError(f"--sep must be one character (or 'tab'), got {sep!r}")
        if not sep.isascii():
            raise InputError(f"--sep must be an ASCII character, got {sep!r}")
    cr_only = b"\r" in buf and b"\n" not in buf  # classic Mac OS line endings: read as lines, written back as '\r'
    if cr_only:
        buf = buf.replace(b"\r", b"\n")
    if sep is None:
        sep = _sniff_sep(_head_text(buf))
    data = np.frombuffer(buf, dtype=np.uint8)
    scanned = csv_scan.scan(data, ord(sep), ord('"'))
    if isinstance(scanned, int):
        raise InputError(f"unclosed quote near line {_line_of(buf, scanned)}")
    rec_start, rec_term, rec_first, fstart = scanned
    del scanned  # (the arrays are freed once the spans are taken)
    records = len(rec_term)
    fields = np.diff(rec_first)
    h = int(fields[0])
    header_ends = [int(fstart[k + 1]) - 1 for k in range(h - 1)] + [int(rec_term[0])]
    header_raw = [buf[int(fstart[k]):header_ends[k]].decode("utf-8", "surrogatepass") for k in range(h)]
    if cr_only:
        header_raw = [f.replace("\n", "\r") for f in header_raw]
    header = [_unquote(f) for f in header_raw]
    later = np.arange(1, records)
    blank = (fields[1:] == 1) & (rec_term[1:] == rec_start[1:records])
    bad = (fields[1:] != h) & ~blank
    if bad.any():
        i = int(later[np.argmax(bad)])
        raise InputError(f"line {_line_of(buf, int(rec_start[i]))} of {p.name} has {int(fields[i])} field(s), the "
                         f"header has {h} (separator {sep!r}; set it with --sep)")
    if h == 1:  # one column: a blank line is a record with a blank value (but for a last blank line)
        data_rows = later[:-1] if records > 1 and blank[-1] else later
    else:
        data_rows = later[fields[1:] == h]
    if not len(data_rows):
        raise InputError(f"input has no data rows: {p}")
    kind = rec_start.dtype
    spans = np.empty((len(data_rows), h + 1), dtype=kind)
    firsts = rec_first[data_rows]
    for k in range(h):  # column by column: no (rows x columns) int64 index at once
        spans[:, k] = fstart[firsts + k]
    del firsts
    spans[:, h] = rec_term[data_rows] + 1
    tails = np.empty((len(data_rows), 2), dtype=kind)
    tails[:, 0] = rec_term[data_rows]
    tails[:-1, 1] = rec_start[data_rows[1:]]
    tails[-1, 1] = len(buf)
    head_end, header_term = int(rec_start[data_rows[0]]), int(rec_term[0])
    del rec_start, rec_term, rec_first, fstart, fields
    meta = CsvMeta(CsvDialect(sep=sep, encoding=enc, bom=bom, gzip=gz), buf, spans, tails, head_end, header_raw,
                   header_term, cr_only)
    meta.dialect.newline = _newline_of(buf, header_term, cr_only)
    heads = [_texts(meta, spans[:200, j].copy(), spans[:200, j + 1] - 1) for j in range(h)]  # what the sniffers see
    if decimal is None:
        decimal = _sniff_decimal(heads, sep)
        _warn_thousands(heads, decimal, p.name)
    elif decimal not in (".", ","):
        raise InputError(f"--decimal must be '.' or ',', got {decimal!r}")
    meta.dialect.decimal = decimal
    counts: dict = {}
    for name in header:
        counts[name] = counts.get(name, 0) + 1
    duplicates = [name for name, c in counts.items() if c > 1]
    frame = _typed_frame_of(meta, header, duplicates, decimal, missing)
    return Table(frame=frame, format="csv", path=p, header=header, duplicates=duplicates, meta=meta)


def _newline_of(buf: bytes, header_term: int, cr_only: bool) -> str:
    """The first record's line terminator ('\\n' when there is none)."""
    end = buf[header_term:header_term + 2]
    if end.startswith(b"\r\n"):
        return "\r\n"
    if end.startswith(b"\n"):
        return "\r" if cr_only else "\n"
    return "\n"


def header(p: Path, *, sep=None, decimal=None, encoding=None) -> list:
    """The column names (the first record's fields, unquoted) as ``read`` finds them, from the
    file's first bytes only: as many as hold the separator sniffing's 64 KiB and the whole first
    record (gzip inflated as far as that)."""
    import gzip

    if decimal is not None and decimal not in (".", ","):
        raise InputError(f"--decimal must be '.' or ',', got {decimal!r}")
    if sep is not None:
        sep = {"tab": "\t", "\\t": "\t"}.get(sep, sep)
        if len(sep) != 1 or sep in '"\n\r' or not sep.isascii():
            raise InputError(f"--sep must be one character (or 'tab'), got {sep!r}")
    with open(p, "rb") as f:
        zipped = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if zipped else open
    size = 1 << 18  # 4 bytes for each of the 65,537 characters the sniffer sees at most
    with opener(p, "rb") as stream:
        raw = stream.read(size)
        while True:
            read_limits.check_text(raw, p.name, encoding)
            more = stream.read(size)
            text, _ = _decoded_head(raw, encoding, p.name, complete=not more)
            if not more or _first_record_complete(text, sep):
                break
            raw += more
            size *= 2
    if not text.strip():
        raise InputError(f"input file is empty: {p}")
    if "\r" in text and "\n" not in text:
        text = text.replace("\r", "\n")
    if sep is None:
        sep = _sniff_sep(text[:65537])
    records, _ = _split_records(text, sep, lenient=True)
    return [_unquote(f) for f in records[0]]


def _decoded_head(raw: bytes, encoding, name: str, complete: bool):
    """(the text of a file's first bytes by ``_decode``, a character cut at their end dropped, ...)."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or (encoding or "").lower().replace("_", "-").startswith("utf-16"):
        raw = raw[:len(raw) // 2 * 2]
    elif not complete:
        for cut in range(4):
            try:
                raw[:len(raw) - cut].decode(encoding or "utf-8")
            except (UnicodeDecodeError, LookupError):
                continue
            raw = raw[:len(raw) - cut]
            break
    return _decode(raw, encoding, name)[0], None


def _first_record_complete(text: str, sep) -> bool:
    """The first record ends (a line break outside quotes) within ``text``, with more after it."""
    lines = text.replace("\r", "\n")
    for candidate in ([sep] if sep else list(_SEPARATORS)):
        records, _ = _split_records(lines[:65537 * 4], candidate, lenient=True)
        if len(records) < 2:
            return False
    return len(text) > 65536


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
        head = head[:len(head) // 2 * 2]  # not cut inside a UTF-16 code unit
    elif len(head) == 65536:  # not cut inside a UTF-8 character (its last 1 to 3 bytes)
        for cut in range(4):
            try:
                head[:len(head) - cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            head = head[:len(head) - cut]
            break
    text, encoding, bom = _decode(head, None, Path(path).name)
    if bom:
        encoding = "utf-8-sig" if encoding == "utf-8" else "utf-16"
    return _sniff_sep(text), encoding


def typed_text_frame(frame, decimal: str = ".", missing=()):
    """A frame whose cells are the texts of CSV fields, typed by the column rules of ``read``
    (numbers, integers, codes with leading zeros kept as text, tokens): for readers that stream a
    CSV in chunks and must see the columns as ``read`` sees them."""
    import pandas as pd

    header = [str(c) for c in frame.columns]
    tokens = {t.strip() for t in missing}
    data = {}
    for name, c in zip(header, frame.columns):
        values = ["" if v is None else str(v) for v in frame[c].tolist()]
        data[name] = _typed_column(*_factorized(values), decimal, tokens)
    return pd.DataFrame(data, columns=header)


def _distinct_texts(meta: CsvMeta, starts, ends, flags=None, arrow: bool = False):
    """(codes, distinct values): the values (unquoted text) of the fields [starts, ends) of the
    file's text as the index of each in a list of its distinct values. Unquoted fields are
    encoded by pyarrow from the file's bytes (a Python string per distinct value only)."""
    import numpy as np
    import pandas as pd

    from . import _csv_scan as csv_scan

    buf = meta.text
    array = np.frombuffer(buf, dtype=np.uint8)
    if flags is None:
        flags = csv_scan.text_flags(array, starts, ends, ord(meta.dialect.quotechar))
    if not flags["quoted"] and arrow and not meta.cr_only:  # the texts' bytes hashed, no dictionary of strings
        grouped = csv_scan.group_codes(array, starts, ends)
        if grouped is not None:
            codes, first = grouped
            return codes, csv_scan.strings(array, starts[first], ends[first])
    if not flags["quoted"]:
        encoded = csv_scan.strings(array, starts, ends).dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        if arrow and not meta.cr_only:  # ``arrow``: the distinct texts may stay a pyarrow array
            return codes, encoded.dictionary
        distinct = encoded.dictionary.to_numpy(zero_copy_only=False).tolist()  # (to_pylist: 10x slower)
    else:
        values = [_unquote(buf[a:b].decode("utf-8", "surrogatepass")) for a, b in zip(starts.tolist(), ends.tolist())]
        codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
        distinct = uniques.tolist()
    if meta.cr_only:
        distinct = [v.replace("\n", "\r") for v in distinct]
    return codes, distinct


def _texts(meta: CsvMeta, starts, ends):
    """The values (unquoted text) of the fields [starts, ends): an object array of strings."""
    codes, distinct = _distinct_texts(meta, starts, ends)
    return _objects(distinct)[codes]


def _objects(values: list):
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _typed_frame_of(meta: CsvMeta, header, duplicates, decimal, missing):
    """The pipeline's frame (see ``_typed_column``); a column of plain numbers (no blanks,
    quotes, spaces, tokens, codes with leading zeros) is parsed from the file's bytes at C speed."""
    import numpy as np
    import pandas as pd

    from . import _csv_scan as csv_scan

    tokens = {t.strip() for t in missing}
    data = {}
    array = np.frombuffer(meta.text, dtype=np.uint8)
    for j, name in enumerate(header):
        if name in duplicates:
            continue
        starts, ends = meta.field_bounds(j)
        flags = csv_scan.text_flags(array, starts, ends, ord(meta.dialect.quotechar))
        fast = None
        if (flags["plain"] and not flags["empty"] and not flags["quoted"] and not flags["leading_zero"]
                and (decimal == "," or not flags["comma"])):
            fast = _plain_numbers(csv_scan, array, starts, ends, flags)
        if fast is not None:
            data[name] = pd.Series(fast)
        else:
            codes, distinct = _distinct_texts(meta, starts, ends, flags)
            data[name] = _typed_column(codes, distinct, decimal, tokens)
    return pd.DataFrame(data, columns=[c for c in header if c not in duplicates], copy=False)


def _plain_numbers(csv_scan, array, starts, ends, flags):
    """Every cell a plain number: int64 or float64 values parsed from the bytes as Python's int
    and float read them (pyarrow parses floats exactly so), or None to take the careful path."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not flags["fraction"] and not flags["comma"]:
        return csv_scan.integers(array, starts, ends)
    texts = csv_scan.strings(array, starts, ends)
    if flags["comma"]:  # a decimal comma
        texts = pc.replace_substring(texts, ",", ".")
    try:
        return pc.cast(texts, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, ValueError):
        return None


def _factorized(values: list):
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    return codes, uniques.tolist()


def _typed_column(codes, distinct: list, decimal: str, tokens: set):
    """A column (each row's index in its list of distinct texts) as the pipeline sees it: numeric
    when every non-missing cell is a number under the file's decimal mark (blank cells and
    ``missing`` tokens are missing). Integer columns without missing cells are int64; numbers
    with leading zeros (codes such as 00123) stay text; a column numeric but for a few other
    tokens keeps the numbers as floats and the tokens as text, so the column rules (preprocess)
    can name them. Each distinct text is looked at once."""
    import numpy as np
    import pandas as pd

    number = _NUMBER[decimal]
    rows = len(codes)
    counts = np.bincount(codes, minlength=len(distinct))
    stripped = [v.strip() for v in distinct]
    is_missing = np.array([v == "" or v in tokens for v in stripped], dtype=bool)
    is_number = np.array([not m and bool(number.fullmatch(v)) for v, m in zip(stripped, is_missing)], dtype=bool)
    n_number = int(counts[is_number].sum()) if len(distinct) else 0
    n_missing = int(counts[is_missing].sum()) if len(distinct) else 0
    others = rows - n_number - n_missing

    def as_text():
        return pd.Series(_objects(distinct)[codes], dtype=object)

    if n_number and any(_LEADING_ZERO.match(v) and not re.fullmatch(r"[+-]?0(?:[.,]\d*)?(?:[eE].*)?", v)
                        for v, isnum in zip(stripped, is_number) if isnum):
        return as_text()  # a code such as a zip code: text
    if n_number == 0:
        if n_missing == rows and tokens & set(stripped):
            return pd.Series(np.full(rows, np.nan))
        return as_text()

    def parse(v):
        return float(v.replace(",", ".")) if decimal == "," else float(v)

    if others == 0:
        if not n_missing and all(_INTEGER.fullmatch(v) for v in stripped):
            try:
                ints = [int(v) for v in stripped]
            except ValueError:  # more digits than Python converts (4,300): not a number to protect
                return as_text()
            if all(-(2 ** 63) <= x < 2 ** 63 for x in ints):
                return pd.Series(np.array(ints, dtype=np.int64)[codes])
            return pd.Series(_objects(ints)[codes], dtype=object)  # beyond int64: exact Python integers
        parsed = np.array([np.nan if m else parse(v) for v, m in zip(stripped, is_missing)], dtype=np.float64)
        return pd.Series(parsed[codes], dtype=np.float64)
    # numeric but for some tokens: numbers as floats, the rest as the text it is
    mixed = _objects([np.nan if m else (parse(v) if isnum else distinct[i])
                      for i, (v, m, isnum) in enumerate(zip(stripped, is_missing, is_number))])
    return pd.Series(mixed[codes], dtype=object)


def _format_number(value: float, integer: bool, decimal: str) -> str:
    v = float(value)
    if integer and v.is_integer() and abs(v) < 2.0 ** 63:
        text = str(int(v))
    else:
        text = repr(v)
    return text.replace(".", ",") if decimal == "," else text


def _integer_texts(meta: CsvMeta, j: int) -> bool:
    """Every non-blank field of column ``j`` is an integer (so integral values are written as
    integers)."""
    import numpy as np

    from . import _csv_scan as csv_scan

    starts, ends = meta.field_bounds(j)
    flags = csv_scan.text_flags(np.frombuffer(meta.text, dtype=np.uint8), starts, ends, ord(meta.dialect.quotechar))
    if not flags["quoted"] and not flags["wide_char"]:
        return bool(flags["integers"])
    _, distinct = _distinct_texts(meta, starts, ends, flags)
    return all(_INTEGER.fullmatch(t) for t in distinct if t.strip())


def _published_texts(values, integer: bool, numeric: bool, d: CsvDialect, sep: str):
    """(codes per row, the distinct texts as written (a pyarrow string array, quotes doubled),
    which of them are always quoted): a missing value, as a suppressed stratum publishes, is an
    empty field; a text holding the separator, a quote or a line break is quoted. Numbers are
    formatted by ``_format_number`` (each distinct value once; pyarrow formats the common ones)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    q = d.quotechar
    array = np.asarray(values)
    if numeric and array.dtype.kind in "fiu":
        array = array.astype(np.float64)
        codes, bits = pd.factorize(array.view(np.int64))  # by their bits: -0.0 is not 0.0
        codes[np.isnan(array)] = -1
        texts = _number_texts(bits.view(np.float64), integer, d.decimal)
    else:
        objects = np.asarray(values, dtype=object)
        codes, distinct = pd.factorize(objects)
        if any(isinstance(v, float) and v == 0 for v in distinct.tolist()):  # 0.0 and -0.0 hash alike
            keys = _objects([(type(v).__name__, repr(v)) if not is_missing(v) else None for v in objects.tolist()])
            codes, _ = pd.factorize(keys)
            firsts = np.unique(codes[codes >= 0], return_index=True)[1]
            distinct = pd.Index(objects[np.flatnonzero(codes >= 0)[firsts]], dtype=object)
        listed = [_format_number(v, integer, d.decimal) if numeric else str(v) for v in distinct.tolist()]
        texts = pa.array([t.replace(q, q + q) for t in listed], pa.string())
    texts = pa.concat_arrays([texts, pa.array([""], pa.string())])  # the missing value
    codes = np.where(codes < 0, len(texts) - 1, codes).astype(np.int32)
    needs = [sep, q, "\n", "\r"]
    wrap = np.zeros(len(texts), dtype=bool)
    for piece in needs:
        wrap |= pc_contains(texts, piece)
    return codes, texts, wrap


def pc_contains(texts, piece: str):
    import pyarrow.compute as pc

    return pc.match_substring(texts, piece).to_numpy(zero_copy_only=False)


def _number_texts(numbers, integer: bool, decimal: str):
    """``_format_number`` of every value, as a pyarrow string array: pyarrow formats integers and
    the numbers whose shortest text has no exponent; Python's repr the others (its exponent
    form, 1e-05 or 1e+16, is not pyarrow's)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    finite = np.isfinite(numbers)
    whole = finite & (numbers == np.round(numbers))
    as_integer = whole & integer & (np.abs(numbers) < 2.0 ** 63)
    fixed = finite & ~whole & (np.abs(numbers) >= 1e-4) & (np.abs(numbers) < 1e16)
    texts = pc.cast(pa.array(numbers), pa.string())
    fixed &= ~pc_contains(texts, "e")
    texts = pc.if_else(pa.array(as_integer), pc.cast(pa.array(np.where(as_integer, numbers, 0).astype(np.int64)),
                                                      pa.string()), texts)
    other = np.flatnonzero(~(as_integer | fixed))
    if len(other):
        exceptions = np.full(len(numbers), None, dtype=object)
        exceptions[other] = [_format_number(v, integer, ".") for v in numbers[other].tolist()]
        texts = pc.if_else(pa.array(as_integer | fixed), texts, pa.array(exceptions, pa.string()))
    if decimal == ",":
        texts = pc.replace_substring(texts, ".", ",")
    return texts


def csv_bytes(table: Table, published: dict, gz: bool, sep: str | None = None) -> bytes:
    """The file's bytes with the QI cells replaced; ``sep``: another separator (a field holding
    it is quoted, every other field keeps its text)."""
    import io as stdio

    out = stdio.BytesIO()
    _write_csv(out, table, published, gz, sep)
    return out.getvalue()


def _write_csv(stream, table: Table, published: dict, gz: bool, sep: str | None = None) -> None:
    """Write the file's bytes with the QI cells replaced to ``stream`` (see ``csv_bytes``): the
    input's text, copied field by field at C speed, with each published column's distinct values
    formatted once."""
    import numpy as np

    from . import _csv_scan as csv_scan

    meta = table.meta
    d = meta.dialect
    q = d.quotechar
    sep = d.sep if sep is None else sep
    if not sep.isascii() or len(sep) != 1:
        raise InputError(f"cannot write a CSV file separated by {sep!r}")
    h = len(table.header)
    index = {name: j for j, name in enumerate(table.header) if name not in table.duplicates}
    qcol = np.full(h, -1, dtype=np.int64)
    rows = meta.rows
    codes = np.zeros((len(published), rows), dtype=np.int32)
    columns, wraps, base = [], [], 0
    for c, (name, values) in enumerate(published.items()):
        j = index[name]
        qcol[j] = c
        numeric = is_numeric(values)
        integer = numeric and _integer_texts(meta, j)
        column_codes, texts, wrap = _published_texts(values, integer, numeric, d, sep)
        codes[c] = column_codes + base
        base += len(texts)
        columns.append(texts)
        wraps.append(wrap)
    tbuf, toff = _text_buffers(columns)
    wrap = np.concatenate(wraps or [np.zeros(1, dtype=bool)]).astype(np.uint8)
    if sep == d.sep:
        head = meta.text[:meta.head_end]
    else:  # the header's fields holding the new separator are quoted
        fields = [q + f.replace(q, q + q) + q if sep in f and not f.startswith(q) else f for f in meta.header_raw]
        head = sep.join(fields).encode("utf-8", "surrogatepass") + meta.text[meta.header_term:meta.head_end]
    body = csv_scan.assemble(np.frombuffer(meta.text, dtype=np.uint8), np.frombuffer(head, dtype=np.uint8),
                             meta.spans, meta.row_order(), meta.tails, qcol, codes, tbuf, toff, wrap,
                             ord(d.sep), ord(sep), ord(q))
    if meta.cr_only:
        body = np.where(body == ord("\n"), np.uint8(ord("\r")), body)
    bom = "\ufeff".encode(d.encoding) if d.bom else b""
    if d.encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
        body = body.tobytes().decode("utf-8", "surrogatepass").encode(d.encoding, "surrogatepass")
    if gz:  # the bytes of gzip.compress(data, mtime=0), in a stream (no copy of the data)
        import zlib

        zipped = zlib.compressobj(9, zlib.DEFLATED, 31)
        stream.write(zipped.compress(bom))
        stream.write(zipped.compress(memoryview(body)))
        stream.write(zipped.flush())
        return
    stream.write(bom)
    stream.write(memoryview(body))


def _text_buffers(columns: list):
    """(bytes, offsets) of pyarrow string arrays one after another: text i is
    bytes[offsets[i]:offsets[i + 1]]."""
    import numpy as np
    import pyarrow as pa

    if not columns:
        return np.zeros(1, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    texts = pa.concat_arrays([c.cast(pa.large_string()) for c in columns])
    texts = pa.concat_arrays([texts]) if texts.offset else texts
    _, offsets, data = texts.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[:len(texts) + 1]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None and data.size else np.zeros(1, dtype=np.uint8)
    return data, offsets


def write_same(table: Table, published: dict, tmp, path) -> None:
    """CSV to CSV: the input's bytes with the QI cells replaced. A file named .tsv / .tab is
    tab-separated; any other name keeps the input's separator."""
    name = Path(path).name.lower()
    tabs = name.removesuffix(".gz").endswith((".tsv", ".tab"))
    with open(tmp, "wb") as stream:
        _write_csv(stream, table, published, gz=name.endswith(".gz"), sep="\t" if tabs else None)


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
    reader = pd.read_csv(path, sep=sep, encoding=encoding, chunksize=chunk_rows, usecols=columns,
                         dtype=defaultdict(lambda: str, {c: "float64" for c in numeric}),
                         keep_default_na=False, na_values={c: [""] for c in numeric} or None)
    try:
        yield from reader
    except ValueError as exc:
        raise InputError(f"a quasi-identifier column of {os.path.basename(path)} holds a cell that is "
                         f"not a number ({exc})") from None


def first_rows(path, rows: int = 1000):
    """The first ``rows`` records with their columns typed as ``read`` types them
    (``typed_text_frame``): the column rules apply to them before any pass over the file."""
    try:
        return typed_text_frame(next(chunks(path, None, rows)))
    except (OSError, ValueError, UnicodeDecodeError, StopIteration) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read {Path(path).name}: {text}") from None


FORMATS = (Format("csv", "CSV/TSV", (".csv", ".tsv", ".txt", ".tab", ".csv.gz", ".tsv.gz", ".txt.gz", ".tab.gz"),
                  read, write, family="text", rank=10, note="also .gz", library=False, read_by="the text of its fields",
                  read_options=("sep", "decimal", "encoding"), write_same=write_same, chunks=chunks,
                  first_rows=first_rows, header=header),)
