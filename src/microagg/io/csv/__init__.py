"""CSV / TSV (optionally gzip): the text is kept field by field.

Separator, decimal mark, quoting, encoding (BOM included), line endings, blank lines and the
header (duplicate names included) are read from the file or given; every field that is not a QI
cell is written back with the very characters it had. A QI cell gets its group's published
value in the file's decimal mark: an integer when the column held integers and the value is
integral, else the shortest text that reads back as the same float64. The out-of-core mode
streams the file in chunks of text with the same dialect detection and column rules.

The parts: ``dialect`` (encoding, separator and decimal mark found from the bytes; the header
from the first bytes), ``reader`` (one compiled scan of the text into field spans), ``fields``
(columns grouped and typed from the bytes), ``meta`` (what is kept to write the file back) and
``writer``; the byte-level passes are the numba kernels of ``microagg.kernels.csv_scan``.
"""

from __future__ import annotations

from ..formats import Format
from .dialect import header, sniff_csv
from .fields import typed_text_frame
from .meta import CsvDialect, CsvMeta
from .reader import chunks, first_rows, read
from .writer import csv_bytes, write, write_same

__all__ = ["FORMATS", "CsvDialect", "CsvMeta", "sniff_csv", "typed_text_frame", "csv_bytes"]

FORMATS = (
    Format(
        "csv",
        "CSV/TSV",
        (".csv", ".tsv", ".txt", ".tab", ".csv.gz", ".tsv.gz", ".txt.gz", ".tab.gz"),
        read,
        write,
        family="text",
        rank=10,
        note="also .gz",
        library=False,
        read_by="the text of its fields",
        read_options=("sep", "decimal", "encoding"),
        write_same=write_same,
        chunks=chunks,
        first_rows=first_rows,
        header=header,
        reads_written=True,
    ),
)
