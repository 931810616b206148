"""The table a file is read into: the frame the pipeline uses plus what writing it back needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

__all__ = ["Table", "Meta"]


class Meta:
    """Base of the per-family metadata dataclasses (``CsvMeta``, ``ParquetMeta``, ``LabelledMeta``,
    ``ExcelMeta``): what a format family keeps beside the frame."""

    #: a file of this family refers to its cells by position (an Excel formula): a shuffled copy
    #: is written anew, not in place
    positional = False

    def source_frame(self, table: Table):
        """The typed frame a writer of another format starts from (the frame as read)."""
        return table.original

    def warn_lost(self, target, published: dict) -> None:
        """Warn of what ``target`` (a Format) cannot keep of this metadata (nothing by default)."""

    def head(self, rows: int) -> Meta:
        """The metadata of the first ``rows`` data rows (a dry write of the head of a table)."""
        return self

    def reordered(self, order) -> Meta:
        """The metadata of the records in ``order`` (the shuffle: record ``order[i]`` at position
        i); by default it holds nothing per record."""
        return self

    def read_options(self, path=None) -> dict:
        """The read options that read a file written in this same format to ``path`` back as
        this one was read (the read-back check: a CSV's separator and decimal mark, the Excel
        sheet protected)."""
        return {}


@dataclass
class Table:
    """A file as read: ``frame`` is what the pipeline uses (one column per distinct name, numeric
    columns typed), the rest is what writing it back needs."""

    frame: object  # pandas DataFrame
    format: str
    path: Path
    header: list  # every column name in file order (duplicates included)
    duplicates: list = field(default_factory=list)  # names that occur more than once (not in frame)
    original: object = None  # typed formats: the frame exactly as read (dtypes kept)
    meta: Meta | None = None  # the format family's metadata dataclass

    def check_columns(self, names, what: str = "quasi-identifier") -> None:
        """A duplicated header name cannot be selected (it is ambiguous): one clear error."""
        dup = [c for c in names or () if c in self.duplicates]
        if dup:
            raise InputError(
                f"column name(s) {', '.join(map(repr, dup))} occur more than once in the header of "
                f"{self.path.name}: a duplicated name cannot be a {what} (rename the columns)"
            )

    def source_frame(self):
        """The typed frame writers of another format start from."""
        return self.meta.source_frame(self) if self.meta is not None else self.original

    def head(self, rows: int) -> Table:
        """The table of its first ``rows`` data rows."""
        import dataclasses

        return dataclasses.replace(
            self,
            frame=self.frame.head(rows),
            original=None if self.original is None else self.original.head(rows),
            meta=None if self.meta is None else self.meta.head(rows),
        )
