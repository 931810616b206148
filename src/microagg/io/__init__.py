"""Reading and writing the files statisticians hold, keeping everything that is not protected.

``read(path)`` gives a :class:`Table`: the typed frame the pipeline works on plus what is needed
to write the file back as it came in (its format family's metadata dataclass). ``write(table,
path, published)`` writes a copy in which only the quasi-identifier cells hold new values: in the
input's own format every other byte (CSV) or cell (Excel) is kept; in another format non-QI
columns keep their dtype and the metadata the target can hold.

Each format is one module of this package declaring ``FORMATS`` (``microagg.io.formats``): CSV
(the ``csv`` package: dialect sniffing, reading, writing), Parquet (``parquet``),
Stata (``stata``), SPSS (``spss``), SAS (``sas``), Excel (``excel``); a format declared elsewhere
joins with :func:`register`. Writes are atomic and an interrupted run leaves nothing
(``microagg.io.files``).
Nothing heavy is imported at module level (the CLI starts instantly).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .. import read_limits
from ..errors import InputError
from .chunked_table import ChunkedTable, open_chunked
from .file_table import Table
from .files import (
    StagedFile,
    atomic_folder,
    atomic_write,
    atomic_write_text,
    check_folder,
    check_output_path,
    check_side_file,
    register_temporary,
    remove_temporaries,
    same_file,
    stage_file,
    stage_folder,
    unregister_temporary,
)
from .formats import (
    Format,
    FormatError,
    all_formats,
    format_of,
    of_path,
    output_suffix,
    read_suffixes,
    register,
    supported_text,
    unregister,
)
from .formats import get as get_format

__all__ = [
    "Table",
    "Format",
    "read",
    "write",
    "write_staged",
    "StagedFile",
    "stage_folder",
    "format_of",
    "formats",
    "supported_text",
    "check_output_path",
    "check_writable",
    "check_side_file",
    "check_folder",
    "same_file",
    "atomic_write",
    "atomic_write_text",
    "atomic_folder",
    "remove_temporaries",
    "register_temporary",
    "unregister_temporary",
    "FormatError",
    "chunks",
    "ChunkedTable",
    "open_chunked",
    "chunks_to_write",
    "write_part",
    "first_rows",
    "SUPPORTED",
    "key_view",
    "reader_name",
    "published_view",
    "read_header",
    "register",
    "unregister",
    "read_suffixes",
    "output_suffix",
]

#: option name -> the command-line flag that sets it (for "applies to ... files" errors)
_OPTION_FLAGS = {
    "sep": "--sep",
    "decimal": "--decimal",
    "encoding": "--encoding",
    "sheet": "--sheet",
}


def formats() -> list[Format]:
    """Every supported format (the registry)."""
    return all_formats()


def __getattr__(name):
    if name == "SUPPORTED":  # the supported list, generated from the registry
        return supported_text()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _check_read_options(p: Path, fmt, options: dict) -> None:
    """A reader's option given for a format that does not take it: one line naming the formats
    that do."""
    stray = [
        name
        for name, value in options.items()
        if value is not None and name not in fmt.read_options
    ]
    if stray:
        takers = [f.label for f in all_formats() if set(stray) & set(f.read_options)]
        flags = ", ".join(_OPTION_FLAGS[name] for name in stray)
        raise InputError(
            f"{flags} appl{'ies' if len(stray) == 1 else 'y'} to {' and '.join(takers)} files, "
            f"not to {p.name}"
        )


def read(
    path,
    *,
    sep: str | None = None,
    decimal: str | None = None,
    encoding: str | None = None,
    missing=(),
    sheet=None,
    format: str | None = None,
    written: dict | None = None,
) -> Table:
    """Read ``path`` into a ``Table`` with its format's own library (``docs/files.md``); every
    problem, an option the format does not take among them, is one ``InputError`` line.

    Parameters
    ----------
    path : str or path
        The file (CSV, Parquet, Stata, SPSS, SAS, Excel, ...).
    sep, decimal, encoding : str, optional
        A CSV's dialect: field separator, decimal mark, text encoding (detected by default).
    missing : sequence of str, optional
        Text tokens that mean a missing value.
    sheet : str, optional
        An Excel workbook's sheet (default: the first).
    format : str, optional
        The format's name, when the suffix does not say it.
    written : dict, optional
        A file just written: what its writer put in each published column (checked, not parsed).

    Returns
    -------
    Table
        ``frame``, a pandas DataFrame, and what writing the file back needs.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"input file not found: {p}")
    fmt = of_path(p) if format is None else get_format(format)
    options = {"sep": sep, "decimal": decimal, "encoding": encoding, "sheet": sheet}
    if format is not None and not p.name.lower().endswith(fmt.suffixes) and not p.is_dir():
        # a file of this format under another name (a temporary file): some libraries (openpyxl)
        # go by the suffix, so it is read through a link named with the format's suffix
        with tempfile.TemporaryDirectory(prefix=".microagg-read.") as folder:
            register_temporary(folder)
            try:
                link = Path(folder) / f"data{fmt.suffixes[0]}"
                os.symlink(p.resolve(), link)
                return _read_file(link, fmt, options, missing, written)
            finally:
                unregister_temporary(folder)
    return _read_file(p, fmt, options, missing, written)


def _read_file(p: Path, fmt, options: dict, missing, written) -> Table:
    """``read`` of a file whose name carries its format's suffix."""
    _check_read_options(p, fmt, options)
    read_limits.check_file(p, fmt)  # the format its suffix says; what its header claims fits
    missing = (missing,) if isinstance(missing, str) else tuple(missing or ())
    given = {name: options[name] for name in fmt.read_options if options[name] is not None}
    if written is not None and fmt.reads_written:
        given["written"] = written
    try:
        table = fmt.read(p, missing=missing, **given)
    except (InputError, MemoryError):
        raise
    except Exception as exc:
        if fmt.library:  # a damaged or foreign file, as the format's library reports it
            raise InputError(f"cannot read {p.name} as {fmt.name}: {_one_line(exc)}") from None
        if isinstance(exc, OSError):
            raise InputError(f"cannot read {p.name}: {exc.strerror or _one_line(exc)}") from None
        raise
    return _with_rows(table, p)


def _with_rows(table: Table, p: Path) -> Table:
    """``table`` when it holds data rows; else one true line: every column name duplicated (the
    reader kept none), or no data rows."""
    if len(table.frame) == 0 and len(table.frame.columns) == 0 and table.duplicates:
        raise InputError(
            f"every column name of {p.name} occurs more than once "
            f"({', '.join(map(repr, table.duplicates))[:200]}): give each column its own name"
        )
    if len(table.frame) == 0:
        raise InputError(f"input has no data rows: {p}")
    return table


def read_header(
    path,
    *,
    sep: str | None = None,
    decimal: str | None = None,
    encoding: str | None = None,
    missing=(),
    sheet=None,
    format: str | None = None,
) -> list[str]:
    """The column names of ``path`` in file order (duplicates included), as :func:`read` would
    give them in ``Table.header``, reading only what names them: a CSV file's first bytes, a
    Parquet footer, a Stata / SPSS / SAS header, an Excel sheet's first row. Takes
    :func:`read`'s options (``missing`` plays no part in the names); the same errors for a
    missing file, an option the format does not take, a file that is not its format."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"input file not found: {p}")
    fmt = of_path(p) if format is None else get_format(format)
    options = {"sep": sep, "decimal": decimal, "encoding": encoding, "sheet": sheet}
    stray = [
        name
        for name, value in options.items()
        if value is not None and name not in fmt.read_options
    ]
    if (
        stray
        or fmt.header is None
        or (format is not None and not p.name.lower().endswith(fmt.suffixes))
    ):
        return read(
            p,
            sep=sep,
            decimal=decimal,
            encoding=encoding,
            missing=missing,
            sheet=sheet,
            format=format,
        ).header
    read_limits.check_file(p, fmt)
    given = {name: options[name] for name in fmt.read_options if options[name] is not None}
    try:
        return fmt.header(p, **given)
    except (InputError, MemoryError):
        raise
    except Exception as exc:
        if isinstance(exc, OSError) and not fmt.library:
            raise InputError(f"cannot read {p.name}: {exc.strerror or _one_line(exc)}") from None
        raise InputError(f"cannot read {p.name} as {fmt.name}: {_one_line(exc)}") from None


def write(table: Table, path, published: dict, *, order=None, kept=()) -> Path:
    """Write ``table`` to ``path`` with the columns in ``published`` replaced, atomically.

    Parameters
    ----------
    table : Table
        The file as ``read`` returned it (every other column is written as it came in).
    path : str or path
        The file to write; its suffix names the format.
    published : dict
        Column name -> its published values, one per data row (e.g. a ``Result``'s QI columns:
        ``{c: res.data[c] for c in res.changed_columns}``).
    order : array of int, optional
        Publish the records in this order (a permutation of the rows: the record at position i
        of the output is the input's record ``order[i]``; None: the input's order).
    kept : sequence of str, optional
        Published columns that are not QIs (keys with suppressed values, recoded strata): a
        writer that keeps the input's bytes keeps the text of each of their values that did not
        change (a CSV's '37,50' stays '37,50', not '37,5').

    Returns
    -------
    Path
        The path written.
    """
    return write_staged(table, path, published, order=order, kept=kept).land()


def write_staged(table: Table, path, published: dict, *, order=None, kept=()) -> StagedFile:
    """``write``, with the file left as a temporary beside ``path`` (``StagedFile``): a
    publication reads it back, verifies and audits it, then lands it (``StagedFile.land``) or
    discards it. Its ``written`` is what a writer that keeps the input's bytes says it put in
    each published column (CSV: ``csv.writer.Written`` by name, for ``key_view``), else None."""
    path = Path(path)
    fmt = of_path(path)
    if fmt.read_only:
        raise FormatError(fmt.read_only_hint)
    in_place = (
        fmt.name == table.format and fmt.write_same is not None
    )  # every byte / cell not a QI kept
    if order is not None:
        import numpy as np

        order = np.asarray(order, dtype=np.int64)
        table, published = _reordered(table, published, order)
        in_place = in_place and not (table.meta is not None and table.meta.positional)
    if in_place:
        return stage_file(
            path, lambda tmp: fmt.write_same(table, published, tmp, path, kept), fmt.name
        )
    if table.duplicates:
        names = ", ".join(map(repr, table.duplicates))
        raise InputError(
            f"cannot write {path.name}: column name(s) {names} occur "
            f"more than once in {table.path.name}; only a file of the input's format keeps them"
        )
    if table.meta is not None:
        table.meta.warn_lost(fmt, published)
    from .typed_frames import published_frame

    frame = published_frame(table.source_frame(), published, table.frame)
    meta = table.meta if get_format(table.format).family == fmt.family else None

    return stage_file(path, _format_writer(fmt, frame, meta, path, published), fmt.name)


def _format_writer(fmt, frame, meta, path: Path, published: dict):
    """``fill(tmp)``: the format's writer of ``frame`` into a temporary; data that do not fit the
    format's rules (names, types, sizes) are one InputError naming the file."""

    def fill(tmp):
        try:
            fmt.write(frame, tmp, meta, path, published)
        except InputError:
            raise
        except _writer_errors() as exc:
            raise InputError(f"cannot write {path.name} as {fmt.name}: {_one_line(exc)}") from None

    return fill


def _reordered(table: Table, published: dict, order) -> tuple[Table, dict]:
    """The table and published values with the records in ``order`` (the shuffle): the frames and
    the metadata's records (``Meta.reordered``: the CSV records, whose blank lines and line
    endings stay where they were, belonging to positions; the Parquet arrays). An Excel workbook
    is written anew (``Meta.positional``: its formulas refer to cells by position, so moving rows
    in place would change what they compute)."""
    import dataclasses

    import numpy as np

    n = len(table.frame)
    if sorted(order.tolist()) != list(range(n)):
        raise ValueError("order must be a permutation of the records")
    published = {c: np.asarray(v)[order] for c, v in published.items()}
    frame = table.frame.iloc[order].reset_index(drop=True)
    frame.attrs = dict(table.frame.attrs)
    original = None if table.original is None else table.original.iloc[order].reset_index(drop=True)
    meta = None if table.meta is None else table.meta.reordered(order)
    return dataclasses.replace(table, frame=frame, original=original, meta=meta), published


def key_view(table: Table, columns, written=None):
    """The columns of a file as its reader groups them, one row per record: for CSV the text of
    each field (unquoted; a categorical of the distinct texts, grouped without hashing them
    again), for the typed formats the values their library reads (``original``). ``written``:
    for a file just written, what the writer put in each published column
    (``StagedFile.written``): a column whose every field holds its text is grouped by the
    writer's codes."""
    import pandas as pd

    meta = table.meta
    if meta is not None and hasattr(meta, "grouped"):
        index = {name: j for j, name in enumerate(table.header)}
        given = written or {}
        return pd.DataFrame(
            {c: meta.grouped(index[c], given.get(c)) for c in columns}, columns=list(columns)
        )
    frame = table.original if table.original is not None else table.frame
    view = frame[list(columns)].reset_index(drop=True)
    ranges = getattr(meta, "missing_ranges", None) or {}
    if any(c in ranges for c in columns):  # an SPSS user-missing code is missing, as SPSS reads it
        import numpy as np

        from .typed_frames import user_missing

        view = view.copy()
        for c in columns:
            if c in ranges and pd.api.types.is_numeric_dtype(view[c].dtype):
                x = view[c].to_numpy(dtype=np.float64, na_value=np.nan, copy=True)
                x[user_missing(x, ranges[c])] = np.nan
                view[c] = x
    return view


def published_view(table: Table):
    """A protected file's frame for the audit: the pipeline's view, except that values declared
    SPSS user-missing are the numbers the file holds (a group mean may land on a missing code:
    the writer warns, and the audit measures the value published)."""
    ranges = getattr(table.meta, "missing_ranges", None) or {}
    if table.original is None or not ranges:
        return table.frame
    frame = table.frame.copy()
    for c in ranges:
        if c in frame.columns and c in table.original.columns:
            frame[c] = table.original[c].to_numpy()
    return frame


def reader_name(table: Table) -> str:
    """Which reader grouped a file's key variables (for the audit's context): its format's
    ``read_by``, else the format's name."""
    return get_format(table.format).read_by or table.format


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
    path = Path(path)
    if format_of(path) == table.format:
        return
    nested = nested_columns(table.source_frame())
    if nested and format_of(path) != "parquet":
        raise InputError(
            f"cannot write {path.name} as {format_of(path)}: column(s) "
            f"{', '.join(map(repr, nested))[:200]} hold nested values (lists, maps or records), "
            "which only Parquet stores; write a .parquet file, or drop them"
        )
    with tempfile.TemporaryDirectory(prefix=".microagg-check.") as folder:
        register_temporary(folder)  # removed on Ctrl+C too
        try:
            write(table.head(2), Path(folder) / path.name, {})
        finally:
            unregister_temporary(folder)


def nested_columns(frame, looked_at: int = 1000) -> list:
    """The columns of ``frame`` holding nested values (lists, arrays, maps, records), by their
    first ``looked_at`` values present (a nested column holds nothing else)."""
    import numpy as np

    nested = []
    for name in frame.columns:
        column = frame[name]
        if column.dtype != object:
            continue
        head = column.dropna().iloc[:looked_at].tolist()
        if any(isinstance(v, (list, tuple, dict, set, np.ndarray)) for v in head):
            nested.append(name)
    return nested


def chunks(path, columns, chunk_rows: int, numeric=()):
    """The records of a file too large for memory, in order, as DataFrames of at most
    ``chunk_rows`` records (the format's chunked reader); ``numeric`` columns parsed as numbers."""
    fmt = of_path(path)
    if fmt.chunks is None:
        raise InputError(
            f"{Path(path).name}: the out-of-core mode reads {', '.join(streamable())} files, "
            f"not {fmt.label}"
        )
    return fmt.chunks(path, columns, chunk_rows, numeric)


def chunks_to_write(path, chunk_rows: int):
    """(DataFrame, the chunk's metadata or None) of each chunk of a file read in chunks: a
    Parquet data set's chunks carry their arrow arrays (``parquet.ParquetMeta``), so that
    ``write_part`` keeps every column not published anew as it was read; a CSV's chunks none."""
    if of_path(path).name == "parquet":
        from .parquet import chunks_with_meta

        yield from chunks_with_meta(path, chunk_rows)
        return
    for frame in chunks(path, None, chunk_rows):
        yield frame, None


def write_part(frame, meta, path, published: dict) -> Path:
    """One part of a folder (the out-of-core mode's Parquet partitions) written atomically with
    its format's writer, the one ``write`` uses: the columns in ``published`` from ``frame``,
    every other column from ``meta`` (the chunk as read) when given."""
    path = Path(path)
    return atomic_write(path, _format_writer(of_path(path), frame, meta, path, published))


def first_rows(path, rows: int = 1000):
    """The first ``rows`` records of a file read in chunks, typed as ``read`` types them."""
    fmt = of_path(path)
    if fmt.first_rows is None:
        raise InputError(
            f"{Path(path).name}: the out-of-core mode reads {', '.join(streamable())} files, "
            f"not {fmt.label}"
        )
    return fmt.first_rows(path, rows)


def streamable() -> list[str]:
    """Labels of the formats the out-of-core mode can read in chunks."""
    return [fmt.label for fmt in all_formats() if fmt.chunks is not None]
