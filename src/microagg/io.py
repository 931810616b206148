"""Reading and writing the files statisticians hold, keeping everything that is not protected.

``read(path)`` gives a :class:`Table`: the typed frame the pipeline works on plus what is needed
to write the file back as it came in. ``write(table, path, published)`` writes a copy in which
only the quasi-identifier cells hold new values:

* CSV / TSV (optionally gzip): the text is kept field by field. Separator, decimal mark,
  quoting, encoding (BOM included), line endings, blank lines and the header (duplicate names
  included) are read from the file or given; every field that is not a QI cell is written back
  with the very characters it had. A QI cell gets its group's published value in the file's
  decimal mark: an integer when the column held integers and the value is integral, else the
  shortest text that reads back as the same float64.
* Typed formats (Parquet, Stata, SPSS, SAS transport, Excel): non-QI columns keep their
  dtype and the file's metadata (Parquet schema metadata, Stata/SPSS variable and value
  labels, SPSS formats, measures and user-missing ranges, Excel styles and other sheets). A QI
  column keeps its integer dtype when every published value is integral, else it becomes
  float64.

Writes are atomic (temporary file in the target folder, then one rename) and the temporary
files are registered, so an interrupted run can remove them (:func:`remove_temporaries`).
Nothing heavy is imported at module level (the CLI starts instantly).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from . import read_limits
from .errors import InputError

__all__ = ["Table", "CsvDialect", "read", "write", "format_of", "check_output_path", "check_writable", "atomic_write",
           "atomic_write_text", "remove_temporaries", "SUPPORTED", "FormatError"]


class FormatError(InputError):
    """A file whose format is not supported, or that cannot be written in the format asked."""


#: (suffix, format); longest suffixes first so ".csv.gz" wins over ".gz".
_SUFFIXES = (
    (".csv.gz", "csv"), (".tsv.gz", "csv"), (".txt.gz", "csv"), (".tab.gz", "csv"),
    (".csv", "csv"), (".tsv", "csv"), (".txt", "csv"), (".tab", "csv"),
    (".parquet", "parquet"), (".pq", "parquet"),
    (".dta", "stata"), (".sav", "spss"), (".zsav", "spss"),
    (".sas7bdat", "sas7bdat"), (".xpt", "xpt"), (".xlsx", "excel"),
)
SUPPORTED = ("CSV/TSV (.csv .tsv .txt .tab, also .gz), Parquet (.parquet .pq or a folder), Stata (.dta), "
             "SPSS (.sav .zsav), SAS (.xpt; .sas7bdat read only), Excel (.xlsx)")
_READ_ONLY = {"sas7bdat": "SAS .sas7bdat files can be read but not written: choose an output ending in .xpt "
                          "(SAS transport), .csv, .parquet, .dta, .sav or .xlsx"}
_SEPARATORS = (",", ";", "\t", "|")


def format_of(path, *, must_exist: bool = False) -> str:
    """The format name of ``path`` from its suffix (a folder is a Parquet dataset)."""
    p = Path(path)
    if p.is_dir():
        return "parquet"
    name = p.name.lower()
    for suffix, fmt in _SUFFIXES:
        if name.endswith(suffix):
            return fmt
    raise FormatError(f"unsupported file format: {p.name}; supported: {SUPPORTED}")


# --- atomic writes ----------------------------------------------------------------------------

_TEMPORARIES: set = set()
_TEMP_LOCK = threading.Lock()


def register_temporary(path) -> None:
    """Have ``remove_temporaries`` (the command line's Ctrl+C / SIGTERM handler) remove ``path``
    if the process is interrupted before ``unregister_temporary(path)``."""
    with _TEMP_LOCK:
        _TEMPORARIES.add(str(path))


def unregister_temporary(path) -> None:
    with _TEMP_LOCK:
        _TEMPORARIES.discard(str(path))


def remove_temporaries() -> None:
    """Remove every temporary file or folder an atomic write has not finished (signal handlers)."""
    with _TEMP_LOCK:
        paths = list(_TEMPORARIES)
        _TEMPORARIES.clear()
    for p in paths:
        try:
            if os.path.isdir(p):
                shutil.rmtree(p, ignore_errors=True)
            elif os.path.lexists(p):
                os.unlink(p)
        except OSError:
            pass


def _usual_mode(path, base: int) -> None:
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, base & ~umask)  # mkstemp/mkdtemp create 0600/0700; give the usual permissions


def atomic_write(path, write) -> Path:
    """Write a file atomically: ``write(tmp_path)`` fills a temporary file in the same folder,
    which then replaces ``path`` in one rename, so readers never see a half-written file."""
    path = Path(path)
    with _TEMP_LOCK:  # created and registered in one step: a Ctrl+C handler sees both or neither
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        _TEMPORARIES.add(str(tmp))
    os.close(fd)
    try:
        write(tmp)
        _usual_mode(tmp, 0o666)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        unregister_temporary(tmp)
    return path


def atomic_write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def atomic_folder(path, fill) -> Path:
    """Create the folder ``path`` atomically: ``fill(tmp_dir)`` fills a temporary folder beside it,
    which is then renamed; ``path`` must not exist."""
    path = Path(path)
    with _TEMP_LOCK:  # created and registered in one step (as in atomic_write)
        tmp = tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent)
        _TEMPORARIES.add(str(tmp))
    try:
        fill(Path(tmp))
        _usual_mode(tmp, 0o777)
        os.rename(tmp, path)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
        unregister_temporary(tmp)
    return path


def same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` name the same file (also through a symlink, a hard link or '..')."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_folder(folder: Path, what: str) -> None:
    """The folder a file of this run goes to exists, is a folder and is writable."""
    if not folder.exists():
        raise InputError(f"{what} folder does not exist: {folder}")
    if not folder.is_dir():
        raise InputError(f"{what} folder is not a folder: {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{what} folder is not writable: {folder}")


def check_side_file(path, what: str, *taken) -> Path:
    """A text file written beside the output (labels, ...): a writable file in an existing folder,
    none of the run's other files (``taken``; None entries are ignored)."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"the {what} file is a directory: {path}")
    check_folder(path.parent, what)
    if any(t is not None and same_file(path, Path(t)) for t in taken):
        raise InputError(f"refusing to write the {what} over another file of this run: {path}")
    for t in taken:  # a Parquet dataset folder: a text file among its data files makes it unreadable
        if t is not None and Path(t).is_dir() and Path(t).resolve() in path.resolve().parents:
            raise InputError(f"refusing to write the {what} inside the input folder {t}")
    return path


def check_output_path(path, source=None, *, folder: bool = False) -> Path:
    """Fail before any work if ``path`` cannot be written: unsupported or read-only format, a
    directory, a missing or unwritable folder, or the input itself. ``folder=True``: the output
    is a new folder (out-of-core)."""
    path = Path(path)
    if source is not None and same_file(path, Path(source)):
        raise InputError(f"refusing to write the output over the input file {path}")
    if source is not None and Path(source).is_dir() and Path(source).resolve() in path.resolve().parents:
        raise InputError(f"refusing to write the output inside the input folder {source}")
    check_folder(path.parent, "output")
    if folder:
        if path.exists():
            raise InputError(f"output folder already exists: {path} (choose a new folder name)")
        return path
    if path.is_dir():
        raise InputError(f"output is a directory: {path} (give a file name)")
    fmt = format_of(path)
    if fmt in _READ_ONLY:
        raise FormatError(_READ_ONLY[fmt])
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"output file is not writable: {path}")
    return path


# --- the table --------------------------------------------------------------------------------

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
class Table:
    """A file as read: ``frame`` is what the pipeline uses (one column per distinct name, numeric
    columns typed), the rest is what writing it back needs."""

    frame: object  # pandas DataFrame
    format: str
    path: Path
    header: list  # every column name in file order (duplicates included)
    duplicates: list = field(default_factory=list)  # names that occur more than once (not in frame)
    dialect: CsvDialect | None = None
    records: list | None = None  # CSV: raw fields per record (header first), as in the file
    ends: list | None = None  # CSV: each record's line terminator
    data_rows: list | None = None  # CSV: indices into records of the data rows (blank lines are kept apart)
    original: object = None  # typed formats: the frame exactly as read (dtypes kept)
    meta: dict = field(default_factory=dict)  # typed formats: labels, formats, schema metadata

    def check_columns(self, names, what: str = "quasi-identifier") -> None:
        """A duplicated header name cannot be selected (it is ambiguous): one clear error."""
        dup = [c for c in (names or ()) if c in self.duplicates]
        if dup:
            raise InputError(f"column name(s) {', '.join(map(repr, dup))} occur more than once in the header of "
                             f"{self.path.name}: a duplicated name cannot be a {what} (rename the columns)")


def read(path, *, sep: str | None = None, decimal: str | None = None, encoding: str | None = None,
         missing=(), sheet=None) -> Table:
    """Read ``path`` (format from its suffix) into a :class:`Table`; every problem is an InputError."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"input file not found: {p}")
    fmt = format_of(p)
    if p.is_dir() and not any(_is_parquet_file(f) for f in p.rglob("*")):
        raise InputError(f"input {p} is a folder without Parquet files (a folder is read as a Parquet dataset; "
                         "give a file)")
    if fmt != "csv" and (sep is not None or decimal is not None or encoding is not None):
        raise InputError(f"--sep, --decimal and --encoding apply to CSV files, not to {p.name}")
    if fmt != "excel" and sheet is not None:
        raise InputError(f"--sheet applies to Excel files, not to {p.name}")
    read_limits.check_file(p, fmt)  # the format its suffix says; what its header claims fits
    missing = (missing,) if isinstance(missing, str) else tuple(missing or ())
    if fmt == "csv":
        try:
            return _read_csv(p, sep, decimal, encoding, missing)
        except OSError as exc:
            raise InputError(f"cannot read {p.name}: {exc.strerror or exc}") from None
    try:
        if fmt == "parquet":
            table = _read_parquet(p)
        elif fmt == "stata":
            table = _read_stata(p)
        elif fmt in ("spss", "sas7bdat", "xpt"):
            table = _read_readstat(p, fmt)
        else:
            table = _read_excel(p, sheet)
    except InputError:
        raise
    except MemoryError:
        raise
    except Exception as exc:  # a damaged or foreign file, as the format's library reports it
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read {p.name} as {fmt}: {text}") from None
    if missing:
        table.frame = _declare_missing(table.frame, missing)
    if len(table.frame) == 0:
        raise InputError(f"input has no data rows: {p}")
    return table


def _is_parquet_file(path: Path) -> bool:
    """A data file of a Parquet dataset folder (by its magic bytes: some writers give no suffix);
    hidden and '_' files (_SUCCESS, _metadata) are not, as pyarrow skips them."""
    if path.name.startswith((".", "_")) or not path.is_file():
        return False
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def write(table: Table, path, published: dict) -> Path:
    """Write ``table`` to ``path`` with the QI columns in ``published`` (name -> float64 array, one
    value per data row) replaced; the format comes from the suffix of ``path``."""
    path = Path(path)
    fmt = format_of(path)
    if fmt in _READ_ONLY:
        raise FormatError(_READ_ONLY[fmt])
    if fmt == "csv" and table.format == "csv":
        # a file named .tsv / .tab is tab-separated; any other name keeps the input's separator
        tabs = path.name.lower().removesuffix(".gz").endswith((".tsv", ".tab"))
        data = _csv_bytes(table, published, gz=path.name.lower().endswith(".gz"), sep="\t" if tabs else None)
        return atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))
    if fmt == "excel" and table.format == "excel":
        return atomic_write(path, lambda tmp: _write_excel_in_place(table, published, tmp))
    if table.duplicates:
        raise InputError(f"cannot write {path.name}: column name(s) {', '.join(map(repr, table.duplicates))} occur "
                         f"more than once in {table.path.name}; only a file of the input's format keeps them")
    extended = [c for c in table.meta.get("extended_missing", ()) if c not in published]
    if extended:
        import warnings

        warnings.warn(f"column(s) {', '.join(map(str, extended))} hold Stata extended missing values (.a to .z): "
                      "they are written as '.' (the Stata writer keeps only the plain missing value)",
                      UserWarning, stacklevel=2)
    user_missing = [c for c in (table.meta.get("missing_ranges") or {}) if c not in published]
    if user_missing and fmt != "spss":
        import warnings

        warnings.warn(f"column(s) {', '.join(map(str, user_missing))} have SPSS user-missing values, which {fmt} "
                      "cannot declare: they are written as ordinary values", UserWarning, stacklevel=2)
    source = table.original if table.original is not None else _text_frame(table)
    frame = _published_frame(source, published)
    writers = {"csv": _write_csv_frame, "parquet": _write_parquet, "stata": _write_stata,
               "spss": _write_spss, "xpt": _write_xpt, "excel": _write_excel_frame}
    meta = table.meta if table.format == fmt or (table.format in ("spss", "stata", "xpt", "sas7bdat")
                                                  and fmt in ("spss", "stata", "xpt")) else {}

    def fill(tmp):
        try:
            writers[fmt](frame, tmp, meta, path, published)
        except InputError:
            raise
        except _writer_errors() as exc:  # the data do not fit the format's rules
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"cannot write {path.name} as {fmt}: {text}") from None

    return atomic_write(path, fill)


def _writer_errors() -> tuple:
    """What the writers raise when the data do not fit the format (names, types, sizes)."""
    errors = (ValueError, TypeError, OverflowError)
    try:
        import pyreadstat
    except ImportError:
        return errors
    return errors + (pyreadstat.ReadstatError, pyreadstat.PyreadstatError)


def check_writable(table: Table, path) -> None:
    """Fail before any work if ``table`` cannot be converted to the format of ``path``: a dry
    write of its first rows, by the writer ``write`` uses, into a temporary folder (column names
    the format cannot hold, types it cannot store). A file written in its own format needs none."""
    import dataclasses

    path = Path(path)
    if format_of(path) == table.format:
        return
    rows = 2
    head = dataclasses.replace(table, frame=table.frame.head(rows),
                               original=None if table.original is None else table.original.head(rows),
                               data_rows=None if table.data_rows is None else table.data_rows[:rows])
    with tempfile.TemporaryDirectory(prefix=".microagg-check.") as folder:
        register_temporary(folder)  # removed on Ctrl+C too
        try:
            write(head, Path(folder) / path.name, {})
        finally:
            unregister_temporary(folder)


def _text_frame(table: Table):
    """A CSV table as a frame for another format: numeric columns typed, every other column the
    exact text of its cells (a column with stray tokens stays text)."""
    import pandas as pd

    frame = table.frame.copy()
    for name in frame.columns:
        if frame[name].dtype == object:
            j = table.header.index(name)
            frame[name] = pd.Series([_unquote(table.records[i][j]) for i in table.data_rows], dtype=object)
        elif frame[name].dtype.kind == "f" and frame[name].isna().any():  # integers with blanks: nullable integers
            j = table.header.index(name)
            texts = [_unquote(table.records[i][j]).strip() for i in table.data_rows]
            if all(not t or _INTEGER.fullmatch(t) for t in texts) and not all(not t for t in texts):
                ints = [int(t) if t else None for t in texts]
                if all(v is None or -(2 ** 63) <= v < 2 ** 63 for v in ints):
                    frame[name] = pd.array(ints, dtype="Int64")
    return frame


# --- CSV: text kept field by field ------------------------------------------------------------

_NUMBER = {".": re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*"),
           ",": re.compile(r"\s*[+-]?(?:\d+,?\d*|,\d+)(?:[eE][+-]?\d+)?\s*")}
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_LEADING_ZERO = re.compile(r"\s*[+-]?0\d")


#: Data files of the other formats, by their first bytes, for a file whose suffix says text.
_BINARY_FORMATS = ((b"PAR1", "a Parquet", ".parquet"), (b"PK\x03\x04", "an Excel (zip)", ".xlsx"),
                   (b"$FL2", "an SPSS", ".sav"), (b"$FL3", "an SPSS", ".zsav"), (b"<stata_dta>", "a Stata", ".dta"))


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


def _read_csv(p: Path, sep, decimal, encoding, missing) -> Table:
    raw, gz = read_limits.text_bytes(p, encoding)  # gzip inflated in a bounded stream; binary data refused
    for magic, what, suffix in _BINARY_FORMATS:
        if raw.startswith(magic):
            raise InputError(f"{p.name} is {what} file, not delimited text: give it its suffix ({suffix})")
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
    if cr_only:  # read as lines; every line break in a field or at an end was, and is written back as, '\r'
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
            line_no = sum(f.count("\n") for rec in records[:i] for f in rec) + i + 1
            raise InputError(f"line {line_no} of {p.name} has {len(r)} field(s), the header has {h} "
                             f"(separator {sep!r}; set it with --sep)")
    if h == 1:  # one column: a blank line is a record with a blank value
        data_rows = [i for i in range(1, len(records)) if not (i == len(records) - 1 and records[i] == [""])]
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
    frame = _typed_frame(header, columns, duplicates, decimal, missing)
    dialect = CsvDialect(sep=sep, decimal=decimal, encoding=enc, bom=bom, newline=newline, gzip=gz)
    return Table(frame=frame, format="csv", path=p, header=header, duplicates=duplicates, dialect=dialect,
                 records=records, ends=ends, data_rows=data_rows)


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
        is_number = [not m and bool(number.fullmatch(v)) for v, m in zip(stripped, is_missing)]
        n_number = sum(is_number)
        others = len(values) - n_number - sum(is_missing)
        if n_number and any(_LEADING_ZERO.match(v) and not re.fullmatch(r"[+-]?0(?:[.,]\d*)?(?:[eE].*)?", v)
                            for v, isnum in zip(stripped, is_number) if isnum):
            data[name] = pd.Series(values, dtype=object)  # a code such as a zip code: text
            continue
        if n_number == 0:
            if all(is_missing) and tokens & set(stripped):
                data[name] = pd.Series(np.full(len(values), np.nan))
            else:
                data[name] = pd.Series(values, dtype=object)
            continue

        def parse(v):
            return float(v.replace(",", ".")) if decimal == "," else float(v)

        if others == 0:
            if not any(is_missing) and all(_INTEGER.fullmatch(v) for v in stripped):
                ints = [int(v) for v in stripped]
                if all(-(2 ** 63) <= x < 2 ** 63 for x in ints):
                    data[name] = pd.Series(np.array(ints, dtype=np.int64))
                else:  # beyond int64: exact Python integers (the column rules reject them as QIs)
                    data[name] = pd.Series(ints, dtype=object)
                continue
            data[name] = pd.Series([np.nan if m else parse(v) for v, m in zip(stripped, is_missing)],
                                   dtype=np.float64)
            continue
        # numeric but for some tokens: numbers as floats, the rest as the text it is
        data[name] = pd.Series([np.nan if m else (parse(v) if isnum else values[i])
                                for i, (v, m, isnum) in enumerate(zip(stripped, is_missing, is_number))],
                               dtype=object)
    return pd.DataFrame(data, columns=[c for c in header if c not in duplicates])


_PLAIN = frozenset("0123456789.+-eE")


def _plain_numbers(values, decimal):
    """The common case at C speed: every cell a plain number (no blanks, spaces, tokens, codes
    with leading zeros). Returns int64 or float64 values, or None to take the careful path."""
    import numpy as np

    joined = "\n".join(values)
    chars = set(joined) - {"\n"}
    if not values or not chars <= (_PLAIN | {","} if decimal == "," else _PLAIN) or "" in values:
        return None
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


def _is_numeric(values) -> bool:
    """Published values that are numbers (a continuous or numeric-coded QI), not categories."""
    import numpy as np

    dtype = getattr(values, "dtype", None)
    if dtype is not None and dtype != object:
        return np.issubdtype(dtype, np.number) and not np.issubdtype(dtype, np.bool_)
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
               for v in values)


def _is_missing(v) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _format_number(value: float, integer: bool, decimal: str) -> str:
    v = float(value)
    if integer and v.is_integer() and abs(v) < 2.0 ** 63:
        text = str(int(v))
    else:
        text = repr(v)
    return text.replace(".", ",") if decimal == "," else text


def _csv_bytes(table: Table, published: dict, gz: bool, sep: str | None = None) -> bytes:
    """The file's bytes with the QI cells replaced; ``sep``: another separator (a field holding
    it is quoted, every other field keeps its text)."""
    d = table.dialect
    q = d.quotechar
    records = [list(r) for r in table.records]
    if sep is not None and sep != d.sep:
        records = [[q + f.replace(q, q + q) + q if sep in f and not f.startswith(q) else f for f in r]
                   for r in records]
    sep = d.sep if sep is None else sep
    index = {name: j for j, name in enumerate(table.header) if name not in table.duplicates}
    for name, values in published.items():
        j = index[name]
        raw = [table.records[i][j] for i in table.data_rows]
        numeric = _is_numeric(values)
        integer = numeric and all(_INTEGER.fullmatch(_unquote(f)) for f in raw if _unquote(f).strip())
        for i, f, v in zip(table.data_rows, raw, values):
            # a categorical QI publishes one of the column's own values (its text); numbers are formatted
            text = _format_number(v, integer, d.decimal) if numeric else ("" if _is_missing(v) else str(v))
            if f.startswith(q) or sep in text or q in text or "\n" in text or "\r" in text:
                text = q + text.replace(q, q + q) + q
            records[i][j] = text
    body = "".join(sep.join(r) + e for r, e in zip(records, table.ends))
    data = (("\ufeff" if d.bom else "") + body).encode(d.encoding)
    if gz:
        import gzip

        data = gzip.compress(data, mtime=0)
    return data


def _write_csv_frame(frame, tmp, meta, path, published) -> None:
    compression = "gzip" if path.name.lower().endswith(".gz") else None
    frame.to_csv(tmp, index=False, compression=compression)


# --- typed formats ----------------------------------------------------------------------------

def _need(module: str, what: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"{what} needs the {module} package: pip install 'microagg[formats]' "
                         f"(or pip install {module})") from None


def _typed_table(frame, fmt: str, p: Path, meta: dict) -> Table:
    names = [str(c) for c in frame.columns]
    counts: dict = {}
    for c in names:
        counts[c] = counts.get(c, 0) + 1
    dup = [c for c, k in counts.items() if k > 1]
    pipeline = frame.loc[:, [c not in dup for c in names]] if dup else frame
    view = _pipeline_view(pipeline, meta)
    codes = _coded_columns(view, meta.get("value_labels") or {})
    if codes:  # the column rules (preprocess.select_columns) leave category codes out of the default QIs
        view = view.copy() if view is frame else view
        view.attrs["category_codes"] = codes
    return Table(frame=view, format=fmt, path=p, header=names, duplicates=dup, original=frame, meta=meta)


def _coded_columns(frame, value_labels: dict) -> list:
    """Numeric columns whose every non-missing value has a value label: category codes."""
    import numpy as np
    import pandas as pd

    coded = []
    for col, mapping in value_labels.items():
        if col not in frame.columns or not mapping or not pd.api.types.is_numeric_dtype(frame[col].dtype):
            continue
        values = pd.unique(frame[col].dropna())
        try:
            keys = {float(k) for k in mapping}
        except (TypeError, ValueError):
            continue
        if len(values) and all(float(v) in keys for v in values) and np.isfinite(values.astype(float)).all():
            coded.append(col)
    return coded


def _pipeline_view(frame, meta):
    """The frame the pipeline sees: SPSS user-missing values become missing there (a QI holding
    them is then an error), and decimal columns (Parquet decimal128, read as Python Decimals) are
    float64 numbers there, while the file is written from the original values."""
    ranges = meta.get("missing_ranges") or {}
    user_values = meta.get("missing_user_values") or {}
    decimals = [c for c in frame.columns if _is_decimal_column(frame[c])]
    if not ranges and not user_values and not decimals:
        return frame
    import numpy as np
    import pandas as pd

    view = frame.copy()
    for col in decimals:
        view[col] = np.array([np.nan if v is None else float(v) for v in frame[col]], dtype=np.float64)
    for col, spec in ranges.items():
        if col not in view.columns or not pd.api.types.is_numeric_dtype(view[col].dtype):
            continue  # (numpy's issubdtype fails on pandas' string dtype)
        x = view[col].to_numpy(np.float64, copy=True)
        x[_user_missing(x, spec)] = np.nan
        view[col] = x
    return view


def _user_missing(x, spec):
    """Which of the numbers ``x`` are SPSS user-missing under ``spec`` (pyreadstat's
    missing_ranges of one column: {'lo', 'hi'} ranges or single values)."""
    import numpy as np

    hit = np.zeros(len(x), dtype=bool)
    for r in spec:
        lo, hi = (r["lo"], r["hi"]) if isinstance(r, dict) else (r, r)
        try:
            hit |= (x >= float(lo)) & (x <= float(hi))
        except (TypeError, ValueError):  # a text column's missing values
            continue
    return hit


def _is_decimal_column(col) -> bool:
    """An object column of decimal.Decimal numbers (None for missing)."""
    import decimal

    if col.dtype != object:
        return False
    values = [v for v in col if v is not None]
    return bool(values) and all(isinstance(v, decimal.Decimal) for v in values)


def _declare_missing(frame, missing):
    """Typed formats: text cells equal to a declared missing token become missing."""
    import numpy as np

    tokens = {str(t).strip() for t in missing}
    view = frame.copy()
    for c in view.columns:
        if view[c].dtype == object or str(view[c].dtype).startswith(("str", "string")):
            col = view[c].astype(object)
            hit = col.map(lambda v: isinstance(v, str) and v.strip() in tokens).to_numpy(bool)
            if hit.any():
                view[c] = col.where(~hit, np.nan)
    return view


def _read_parquet(p: Path) -> Table:
    import pandas as pd
    import pyarrow.parquet as pq

    arrow = pq.read_table(p)
    frame = arrow.to_pandas()
    named = [n for n in frame.index.names if n is not None]
    if named and not isinstance(frame.index, pd.RangeIndex):  # a named pandas index is a column of the file
        frame = frame.reset_index(level=named)
        stored = [c for c in arrow.column_names if c in frame.columns]  # the file's column order
        frame = frame[stored + [c for c in frame.columns if c not in stored]]
    return _typed_table(frame, "parquet", p, {"arrow": arrow})


def _read_stata(p: Path) -> Table:
    import pandas as pd

    pyreadstat = _need("pyreadstat", "reading Stata files")
    frame = pd.read_stata(p, convert_categoricals=False, convert_dates=True, convert_missing=False,
                          preserve_dtypes=True)
    _, m = pyreadstat.read_dta(str(p), metadataonly=True)
    # date columns keep their Stata type (%td days, %tc milliseconds, %tm months, ...): pandas
    # writes every datetime column as %tc unless told
    dates = {c: f[1:4] for c, f in (m.original_variable_types or {}).items()
             if isinstance(f, str) and f[:3] in ("%tc", "%tC", "%td", "%tw", "%tm", "%tq", "%th", "%ty")}
    meta = {"column_labels": {k: v for k, v in m.column_names_to_labels.items() if v},
            "value_labels": m.variable_value_labels, "file_label": m.file_label or None,
            "extended_missing": _stata_extended_missing(p), "stata_dates": dates}
    return _typed_table(frame, "stata", p, meta)


def _stata_extended_missing(p: Path) -> list:
    """Columns holding Stata's extended missing values (.a to .z): pandas writes them back as '.'."""
    import pandas as pd
    from pandas.io.stata import StataMissingValue

    check = pd.read_stata(p, convert_categoricals=False, convert_dates=False, convert_missing=True)
    return [c for c in check.columns if check[c].dtype == object
            and any(isinstance(v, StataMissingValue) and v.string != "." for v in check[c])]


def _read_readstat(p: Path, fmt: str) -> Table:
    pyreadstat = _need("pyreadstat", f"reading {p.suffix} files")
    if fmt == "spss":
        frame, m = pyreadstat.read_sav(str(p), user_missing=True)
    elif fmt == "xpt":
        frame, m = pyreadstat.read_xport(str(p))
    else:
        frame, m = pyreadstat.read_sas7bdat(str(p))
    meta = {"column_labels": {k: v for k, v in m.column_names_to_labels.items() if v},
            "value_labels": getattr(m, "variable_value_labels", {}) or {},
            "file_label": getattr(m, "file_label", None) or None,
            "table_name": getattr(m, "table_name", None) or None,
            "formats": dict(getattr(m, "original_variable_types", {}) or {}),
            "measure": {k: v for k, v in (getattr(m, "variable_measure", {}) or {}).items()
                        if v in ("nominal", "ordinal", "scale")},
            "display_width": dict(getattr(m, "variable_display_width", {}) or {}),
            "missing_ranges": dict(getattr(m, "missing_ranges", {}) or {}),
            "notes": getattr(m, "notes", None),
            "compressed": p.name.lower().endswith(".zsav")}
    return _typed_table(frame, fmt, p, meta)


def _read_excel(p: Path, sheet) -> Table:
    import pandas as pd

    openpyxl = _need("openpyxl", "reading Excel files")
    wb = openpyxl.load_workbook(p, read_only=True, data_only=True)
    try:
        if sheet is not None and sheet not in wb.sheetnames:
            raise InputError(f"no sheet {sheet!r} in {p.name}; its sheets: {', '.join(wb.sheetnames)}")
        ws = wb.worksheets[0] if sheet is None else wb[sheet]
        rows = list(ws.iter_rows(values_only=True))
        title = ws.title
    finally:
        wb.close()
    while rows and all(v is None for v in rows[-1]):
        rows.pop()
    if not rows:
        raise InputError(f"input file is empty: {p}")
    header = ["" if v is None else str(v) for v in rows[0]]
    body = [list(r[: len(header)]) + [None] * (len(header) - len(r)) for r in rows[1:]]
    integer = [name for j, name in enumerate(header)
               if all(isinstance(r[j], int) and not isinstance(r[j], bool) for r in body if r[j] is not None)]
    frame = pd.DataFrame(body, columns=header, dtype=object).infer_objects()
    for j, name in enumerate(header):  # integers with blank cells: nullable integers, not floats (100.0)
        if name in integer and any(r[j] is None for r in body) and any(r[j] is not None for r in body) \
                and header.count(name) == 1:
            frame[name] = pd.array([r[j] for r in body], dtype="Int64")
    return _typed_table(frame, "excel", p, {"sheet": title, "integer_columns": integer})


def _integral(values) -> bool:
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    return bool(np.all(np.isfinite(v)) and np.all(v == np.round(v)))


def _published_frame(frame, published: dict):
    """A copy of ``frame`` with the QI columns replaced: the column's integer dtype is kept when
    every published value is integral and fits it, else float64."""
    import numpy as np
    import pandas as pd

    out = frame.copy()
    for name, values in published.items():
        dtype = frame[name].dtype
        if not _is_numeric(values):  # a categorical QI: the group's category, in the column's own dtype
            try:
                out[name] = pd.Series(list(values), index=out.index, dtype=dtype)
            except (TypeError, ValueError):
                out[name] = pd.Series(list(values), index=out.index, dtype=object)
            continue
        values = np.asarray(values, dtype=np.float64)
        if pd.api.types.is_integer_dtype(dtype) and _integral(values):  # numpy or nullable integers
            info = np.iinfo(getattr(dtype, "numpy_dtype", dtype))
            if values.min() >= info.min and values.max() <= info.max:
                out[name] = values.astype(getattr(dtype, "numpy_dtype", dtype))
                continue
        out[name] = values
    return out


def _write_parquet(frame, tmp, meta, path, published) -> None:
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    original = meta.get("arrow")
    if original is None:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp)
        return
    # non-QI columns: the arrays as read; QI columns: the published values, field metadata kept
    schema = original.schema
    fields, arrays = [], []
    for i, f in enumerate(schema):
        if f.name in published:
            arr = pa.Array.from_pandas(frame[f.name])
            if not _is_numeric(published[f.name]):  # a category: in the column's own Arrow type if it fits
                try:
                    arr = arr.cast(f.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                    pass
            fields.append(pa.field(f.name, arr.type, f.nullable, f.metadata))
        else:
            arr = original.column(i)
            fields.append(f)
        arrays.append(arr)
    metadata = dict(schema.metadata or {})
    if b"pandas" in metadata and published:
        pandas_meta = json.loads(metadata[b"pandas"])
        for col in pandas_meta.get("columns", []):
            if col.get("name") in published:
                dtype = str(frame[col["name"]].dtype)
                col["pandas_type"] = dtype if dtype.startswith(("int", "uint")) else "float64"
                col["numpy_type"] = dtype
        metadata[b"pandas"] = json.dumps(pandas_meta).encode()
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=metadata))
    pq.write_table(table, tmp)


def _labels_for(meta, frame, published):
    """Value labels that still apply: a QI column's published values are group means, so its
    value labels (codes) are dropped when a value is no longer integral."""
    labels = {}
    for col, mapping in (meta.get("value_labels") or {}).items():
        if col in frame.columns and not (col in published and _is_numeric(published[col])
                                         and not _integral(published[col])):
            labels[col] = mapping
    return labels


def _write_stata(frame, tmp, meta, path, published) -> None:
    frame = frame.copy()
    for c in frame.columns:  # Stata has no 64-bit integers: int64 columns that fit go to int32
        if str(frame[c].dtype) == "int64" and len(frame) and frame[c].abs().max() < 2 ** 31 - 1:
            frame[c] = frame[c].astype("int32")
    labels = {c: {int(k): v for k, v in m.items()} for c, m in _labels_for(meta, frame, published).items()
              if all(float(k).is_integer() for k in m)}
    # pandas warns of what Stata cannot hold (renamed columns, lost precision): the user sees it
    import pandas as pd

    dates = {c: ("tc" if f == "tC" else f) for c, f in (meta.get("stata_dates") or {}).items()
             if c in frame.columns and c not in published and pd.api.types.is_datetime64_any_dtype(frame[c])}
    frame.to_stata(tmp, write_index=False, version=118, convert_dates=dates or None,
                   variable_labels={k: v for k, v in (meta.get("column_labels") or {}).items()
                                    if k in frame.columns} or None,
                   value_labels=labels or None, data_label=meta.get("file_label"))


def _write_spss(frame, tmp, meta, path, published) -> None:
    import warnings

    import numpy as np

    pyreadstat = _need("pyreadstat", "writing SPSS files")
    for col, spec in (meta.get("missing_ranges") or {}).items():  # kept as declared: a mean may land on one
        if col in published and _is_numeric(published[col]):
            hit = int(_user_missing(np.asarray(published[col], dtype=np.float64), spec).sum())
            if hit:
                warnings.warn(f"column {col}: {hit} published value(s) fall on its SPSS user-missing values, so "
                              "SPSS reads them as missing; change or remove the column's missing values if they "
                              "should count", UserWarning, stacklevel=2)
    formats = {k: v for k, v in (meta.get("formats") or {}).items()
               if k in frame.columns and not (k in published and _is_numeric(published[k])
                                              and not _integral(published[k]))}
    notes = meta.get("notes")
    kwargs = dict(
        column_labels={k: v for k, v in (meta.get("column_labels") or {}).items() if k in frame.columns} or None,
        variable_value_labels=_labels_for(meta, frame, published) or None,
        missing_ranges={k: v for k, v in (meta.get("missing_ranges") or {}).items() if k in frame.columns} or None,
        variable_display_width={k: v for k, v in (meta.get("display_width") or {}).items()
                                if k in frame.columns} or None,
        variable_measure={k: v for k, v in (meta.get("measure") or {}).items() if k in frame.columns} or None,
        variable_format=formats or None,
        file_label=meta.get("file_label"),
        note="\n".join(notes) if isinstance(notes, (list, tuple)) and notes else None,
        compress=path.name.lower().endswith(".zsav"),
    )
    pyreadstat.write_sav(frame, tmp, **kwargs)


def _write_xpt(frame, tmp, meta, path, published) -> None:
    pyreadstat = _need("pyreadstat", "writing SAS transport files")
    pyreadstat.write_xport(frame, tmp, file_label=meta.get("file_label"),
                           column_labels={k: v for k, v in (meta.get("column_labels") or {}).items()
                                          if k in frame.columns} or None,
                           table_name=meta.get("table_name"))


def _write_excel_frame(frame, tmp, meta, path, published) -> None:
    import io as stdio

    import pandas as pd

    openpyxl = _need("openpyxl", "writing Excel files")
    buffer = stdio.BytesIO()  # pandas picks the engine by suffix, and the temporary file's is .tmp
    frame.to_excel(buffer, index=False, engine="openpyxl")
    text = [j + 1 for j, c in enumerate(frame.columns) if not pd.api.types.is_numeric_dtype(frame[c].dtype)]
    if not text:
        Path(tmp).write_bytes(buffer.getvalue())
        return
    buffer.seek(0)
    wb = openpyxl.load_workbook(buffer)
    ws = wb.active
    for j in text:  # openpyxl takes a string starting with '=' for a formula: text stays text
        for (cell,) in ws.iter_rows(min_row=2, min_col=j, max_col=j):
            _keep_text(cell)
    wb.save(tmp)


def _keep_text(cell) -> None:
    """A cell whose value is text starting with '=' holds that text, not a formula."""
    if isinstance(cell.value, str) and cell.value.startswith("=") and cell.data_type == "f":
        cell.data_type = "s"


def _write_excel_in_place(table: Table, published: dict, tmp) -> None:
    """Excel to Excel: the workbook is loaded and only the QI cells of the first (or chosen) sheet
    get new values, so styles, formulas elsewhere and other sheets are kept."""
    openpyxl = _need("openpyxl", "writing Excel files")
    wb = openpyxl.load_workbook(table.path)
    ws = wb[table.meta["sheet"]]
    column_of = {name: j + 1 for j, name in enumerate(table.header) if name not in table.duplicates}
    for name, values in published.items():
        integer = name in table.meta.get("integer_columns", ())
        j = column_of[name]
        numeric = _is_numeric(values)
        for i, v in enumerate(values):
            if not numeric:  # a category: the cell value as it was in the column
                cell = ws.cell(row=i + 2, column=j)
                cell.value = None if _is_missing(v) else v
                _keep_text(cell)
                continue
            v = float(v)
            ws.cell(row=i + 2, column=j).value = int(v) if integer and v.is_integer() else v
    wb.save(tmp)
