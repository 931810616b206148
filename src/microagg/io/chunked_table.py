"""A file too large for memory as a table read in chunks: the out-of-core mode's input. Its
records come in order, chunk by chunk, from the format's own chunked reader (CSV: every field's
text; Parquet: pyarrow's record batches), and a Parquet chunk carries its arrow arrays, which the
writer keeps for every column not published anew."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

__all__ = ["ChunkedTable", "open_chunked"]


@dataclass(frozen=True)
class ChunkedTable:
    """A file read in chunks of at most ``chunk_rows`` records (``open_chunked``)."""

    path: Path
    format: str
    chunk_rows: int = 1_000_000

    def chunks(self, columns=None, numeric=()):
        """The records in order, as DataFrames (``columns`` only, when given; ``numeric`` parsed
        as numbers)."""
        from . import chunks

        return chunks(self.path, columns, self.chunk_rows, numeric)

    def chunks_to_write(self):
        """(DataFrame, the chunk's metadata or None) of each chunk, for ``io.write_part``."""
        from . import chunks_to_write

        return chunks_to_write(self.path, self.chunk_rows)

    def first_rows(self, rows: int = 1000):
        """The first records, typed as ``io.read`` types them (the column rules look at them)."""
        from . import first_rows

        return first_rows(self.path, min(self.chunk_rows, rows))


def open_chunked(path, chunk_rows: int = 1_000_000) -> ChunkedTable:
    """The file at ``path`` as a ChunkedTable; one InputError for a missing file or a format
    without a chunked reader."""
    from . import of_path, streamable

    p = Path(path)
    if not p.exists():
        raise InputError(f"input file not found: {p}")
    fmt = of_path(p)
    if fmt.chunks is None:
        raise InputError(
            f"{p.name}: the out-of-core mode reads {', '.join(streamable())} files, not {fmt.label}"
        )
    return ChunkedTable(p, fmt.name, int(chunk_rows))
