"""What a CSV file keeps beside its frame: its dialect and its text with where every field of
every data row starts, from which the writer copies every field that is not a QI cell."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..file_table import Meta, Table
from .dialect import INTEGER
from .fields import distinct_texts, field_texts, object_array, text_buffers


def written_sep(sep: str, path) -> str:
    """The separator a CSV read with ``sep`` is written with to ``path``: a tab for a file named
    .tsv / .tab (gzipped or not), else the input's."""
    name = "" if path is None else str(path).lower().removesuffix(".gz")
    return "\t" if name.endswith((".tsv", ".tab")) else sep


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
    # (rows, columns + 1) int array: field j of row r is text[spans[r, j]:spans[r, j + 1] - 1]
    spans: object
    tails: object  # (rows, 2) int array: [start, end) of what follows each row's last field
    head_end: int  # the header record and the blank lines after it: text[:head_end]
    header_raw: list  # the header's fields as written (quotes included)
    header_term: int  # where the header's line terminator starts
    cr_only: bool = False
    order: object = None  # the records in the order written (None: the file's)
    # columns whose every field is a plain integer (a sign and digits, no leading zero), found as
    # the reader parsed them: still so in any order or head of the records
    plain_integers: frozenset = frozenset()
    missing: tuple = ()  # the tokens read as missing values (``missing``): read back alike
    # column j -> (the writer's Written, what ``as_written`` found): checked once per column
    checked: dict = field(default_factory=dict, repr=False, compare=False)

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
        """Column ``j``'s values: the text of each field (unquoted), row by row (an object
        array)."""
        starts, ends = self.field_bounds(j)
        return field_texts(self, starts, ends)

    def grouped(self, j: int, written=None):
        """Column ``j``'s texts as a pandas Categorical (its categories the distinct texts, in
        order of first appearance): what the read-back check and the audit group records by.
        ``written``: what the writer put in this column (``writer.Written``); when every field
        holds exactly its text, the records are grouped by the writer's codes (no pass hashing
        the fields)."""
        import pandas as pd

        found = None if written is None else self.as_written(j, written)
        if found is None:
            starts, ends = self.field_bounds(j)
            codes, distinct = distinct_texts(self, starts, ends, arrow=True)
        else:
            codes, distinct = found
        if isinstance(distinct, list):
            categories = pd.Index(object_array(distinct), dtype=object)
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

    def as_written(self, j: int, written):
        """(codes, distinct texts) of column ``j``'s fields as ``distinct_texts`` gives them, from
        the writer's codes once every field is found to hold the very bytes of its text; None
        when one does not (then the fields are grouped from their bytes). Checked once per
        column and ``written`` (the reader types the column with it, the key view groups by it)."""
        kept = self.checked.get(j)
        if kept is not None and kept[0] is written:
            return kept[1]
        found = self._as_written(*self.field_bounds(j), written)
        self.checked[j] = (written, found)
        return found

    def _as_written(self, starts, ends, written):
        """(codes, distinct texts) of the fields [starts, ends) as ``distinct_texts`` gives them,
        from the writer's codes once every field is found to hold the very bytes of its text;
        None when one does not (then the fields are grouped from their bytes)."""
        import numpy as np
        import pandas as pd

        from ...kernels import csv_scan

        if self.cr_only or len(written.codes) != len(starts):
            return None
        data, offsets = text_buffers([written.texts])
        text = np.frombuffer(self.text, dtype=np.uint8)
        codes = written.codes.astype(np.int64)
        if not csv_scan.fields_are(text, starts, ends, codes, data, offsets):
            return None
        # one code per distinct text (two values may share one), numbered by first appearance
        encoded = written.texts.dictionary_encode()
        by_text = encoded.indices.to_numpy(zero_copy_only=False)[codes]
        codes, firsts = pd.factorize(by_text)
        return codes.astype(np.int64), encoded.dictionary.take(firsts)

    def source_frame(self, table: Table):
        """For another format: numeric columns typed, every other column the exact text of its
        cells (a column with stray tokens stays text)."""
        import pandas as pd

        frame = table.frame.copy()
        for name in frame.columns:
            if frame[name].dtype == object:
                j = table.header.index(name)
                frame[name] = pd.Series(self.texts(j), dtype=object)
            elif (
                frame[name].dtype.kind == "f" and frame[name].isna().any()
            ):  # integers with blanks: nullable integers
                j = table.header.index(name)
                texts = [t.strip() for t in self.texts(j)]
                if all(not t or INTEGER.fullmatch(t) for t in texts) and not all(
                    not t for t in texts
                ):
                    ints = [int(t) if t else None for t in texts]
                    if all(v is None or -(2**63) <= v < 2**63 for v in ints):
                        frame[name] = pd.array(ints, dtype="Int64")
        return frame

    def read_options(self, path=None) -> dict:
        """How the file written to ``path`` is read back: its separator (``written_sep``: sniffed,
        a file whose published fields hold the decimal comma could read as comma-separated), its
        decimal mark, its encoding when its bytes do not say it (UTF-16 or UTF-32 without a byte
        order mark), and its missing-value tokens."""
        out = {"sep": written_sep(self.dialect.sep, path), "decimal": self.dialect.decimal}
        encoding = self.dialect.encoding.lower().replace("_", "-")
        if not self.dialect.bom and encoding.startswith(("utf-16", "utf-32")):
            out["encoding"] = self.dialect.encoding
        if self.missing:  # a missing QI value is written back as the token it was read from
            out["missing"] = tuple(self.missing)
        return out

    def head(self, rows: int) -> CsvMeta:
        return replace(self, order=self.row_order()[:rows], tails=self.tails[:rows], checked={})

    def reordered(self, order) -> CsvMeta:
        """The records in ``order`` (record ``order[i]`` written at position i); blank lines and
        line endings stay at their positions."""
        return replace(self, order=self.row_order()[order], checked={})
