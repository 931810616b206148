"""Parquet (pyarrow): a file, or a folder of files read as one data set. Written back with the
same arrays, dtypes, schema and field metadata for every non-QI column. Streamed in record
batches by the out-of-core mode."""

from __future__ import annotations

import glob
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..read_limits import (
    Damaged,
    ForeignBytes,
    ReadLimitError,
    cell_cap,
    check_cells,
    check_decompressed,
)
from .file_table import Meta
from .formats import Format
from .typed_frames import is_numeric, typed_table

__all__ = ["FORMATS", "ParquetMeta", "is_parquet_file"]


_MAGIC = b"PAR1"  # a Parquet file's first and last four bytes


@dataclass
class ParquetMeta(Meta):
    arrow: object = (
        None  # the pyarrow Table as read: schema, field metadata, the arrays of non-QI columns
    )

    def head(self, rows: int) -> ParquetMeta:
        return ParquetMeta(None if self.arrow is None else self.arrow.slice(0, rows))

    def reordered(self, order) -> ParquetMeta:
        import pyarrow as pa

        return self if self.arrow is None else ParquetMeta(self.arrow.take(pa.array(order)))


def is_parquet_file(path: Path) -> bool:
    """A data file of a Parquet dataset folder (by its magic bytes: some writers give no suffix);
    hidden and '_' files (_SUCCESS, _metadata) are not, as pyarrow skips them."""
    if path.name.startswith((".", "_")) or not path.is_file():
        return False
    try:
        with open(path, "rb") as f:
            return f.read(4) == _MAGIC
    except OSError:
        return False


def _check_folder(p: Path) -> None:
    if p.is_dir() and not any(is_parquet_file(f) for f in p.rglob("*")):
        raise InputError(
            f"input {p} is a folder without Parquet files (a folder is read as a Parquet dataset; "
            "give a file)"
        )


def read(p: Path, *, missing=()):
    import pandas as pd
    import pyarrow.parquet as pq

    _check_folder(p)
    arrow = pq.read_table(p)
    frame = arrow.to_pandas()
    named = [n for n in frame.index.names if n is not None]
    if named and not isinstance(
        frame.index, pd.RangeIndex
    ):  # a named pandas index is a column of the file
        frame = frame.reset_index(level=named)
        stored = [c for c in arrow.column_names if c in frame.columns]  # the file's column order
        frame = frame[stored + [c for c in frame.columns if c not in stored]]
    return typed_table(frame, "parquet", p, ParquetMeta(arrow), missing)


def write(frame, tmp, meta: ParquetMeta | None, path, published) -> None:
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    original = None if meta is None else meta.arrow
    if original is None:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp)
        return
    # non-QI columns: the arrays as read; QI columns: the published values, field metadata kept
    schema = original.schema
    fields, arrays = [], []
    for i, f in enumerate(schema):
        if f.name in published:
            arr = pa.Array.from_pandas(frame[f.name])
            if not is_numeric(published[f.name]) or (
                pa.types.is_integer(f.type) and pa.types.is_floating(arr.type)
            ):  # a category, or integers (a key with suppressed values): in the column's own
                # Arrow type when they fit (a safe cast: no fraction cut, no overflow)
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
    table_types = {f.name: f.type for f in fields}
    if b"pandas" in metadata and published:
        pandas_meta = json.loads(metadata[b"pandas"])
        # the schema's types by name, looked up once: ``schema.names`` is a new list at each call
        # (20,000 columns: 157 s in this loop, issue 57); a name twice asks the schema as before
        counts = Counter(schema.names)
        read_types = {f.name: f.type for f in schema if counts[f.name] == 1}
        for col in pandas_meta.get("columns", []):
            kept = col.get("name") in published and table_types.get(col["name"]) == (
                read_types[col["name"]]
                if col["name"] in read_types
                else schema.field(col["name"]).type
                if col["name"] in counts
                else None
            )
            if col.get("name") in published and not kept:
                dtype = str(frame[col["name"]].dtype)
                col["pandas_type"] = dtype if dtype.startswith(("int", "uint")) else "float64"
                col["numpy_type"] = dtype
        metadata[b"pandas"] = json.dumps(pandas_meta).encode()
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=metadata))
    pq.write_table(table, tmp)


def _files(path: str) -> list:
    files = (
        [path]
        if os.path.isfile(path)
        else sorted(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))
    )
    if not files:
        raise InputError(f"no Parquet files found in {path}")
    return files


def chunks(path, columns, chunk_rows: int, numeric=()):
    """The data set's records in order, as DataFrames of at most ``chunk_rows`` records."""
    import pyarrow.parquet as pq

    for f in _files(os.fspath(path)):
        pf = pq.ParquetFile(f)
        for batch in pf.iter_batches(batch_size=chunk_rows, columns=columns):
            yield batch.to_pandas()


def chunks_with_meta(path, chunk_rows: int):
    """(DataFrame, ParquetMeta) of each chunk of the data set's records, in order: the chunk's
    arrow arrays as read, which the writer keeps for every column not published anew."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for f in _files(os.fspath(path)):
        pf = pq.ParquetFile(f)
        for batch in pf.iter_batches(batch_size=chunk_rows):
            yield batch.to_pandas(), ParquetMeta(pa.Table.from_batches([batch]))


def first_rows(path, rows: int = 1000):
    """The first ``rows`` records (typed as the file types them)."""
    import pyarrow.parquet as pq

    files = _files(os.fspath(path))
    try:
        return next(pq.ParquetFile(files[0]).iter_batches(batch_size=rows)).to_pandas()
    except (OSError, ValueError, StopIteration) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read {files[0]}: {text}") from None


def header(p: Path) -> list:
    """The column names as ``read`` gives them, from the schema (a file's footer; a folder's
    files and partitions): a pandas index stored without a name is not a column."""
    import pyarrow.parquet as pq

    _check_folder(p)
    schema = pq.ParquetDataset(p).schema
    unnamed = {
        c
        for c in (schema.pandas_metadata or {}).get("index_columns") or []
        if isinstance(c, str) and c.startswith("__index_level_")
    }
    return [str(n) for n in schema.names if n not in unnamed]


def check_header(f, name: str, size: int) -> None:
    """The footer's rows × columns and uncompressed size fit the limits
    (``microagg.read_limits``)."""
    head = f.read(4)
    if head != _MAGIC:
        raise ForeignBytes(head + f.read(60))
    if size < 12:
        raise Damaged("it is shorter than a Parquet footer")
    f.seek(size - 4)
    if f.read(4) != _MAGIC:
        raise Damaged("it does not end with a Parquet footer")
    _footer_claims(f.name, name)


def _footer_claims(path, name: str) -> tuple[int, int]:
    """(cells, uncompressed bytes) a file's footer claims, each within the limits."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow's many error types for a broken footer
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise Damaged(text, name) from None
    inflated = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    check_decompressed(name, inflated)
    check_cells(name, meta.num_rows, meta.num_columns)
    return meta.num_rows * meta.num_columns, inflated


def check_folder(folder: Path) -> None:
    """The footers of a folder data set's files claim, together, what fits the limits."""
    cells = inflated = 0
    for f in sorted(folder.rglob("*")):
        if is_parquet_file(f):
            c, b = _footer_claims(f, f"{folder.name}/{f.relative_to(folder)}")
            cells, inflated = cells + c, inflated + b
    check_decompressed(folder.name, inflated)
    cap, why = cell_cap()
    if cap is not None and cells > cap:
        raise ReadLimitError(
            f"cannot read {folder.name}: its files claim {cells:,} cells, more than {why}"
        )


FORMATS = (
    Format(
        "parquet",
        "Parquet",
        (".parquet", ".pq"),
        read,
        write,
        family="parquet",
        rank=20,
        note="or a folder",
        folder=True,
        read_by="pyarrow",
        magic=(_MAGIC,),
        check_header=check_header,
        check_folder=check_folder,
        chunks=chunks,
        first_rows=first_rows,
        header=header,
    ),
)
