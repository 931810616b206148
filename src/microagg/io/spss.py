"""SPSS .sav / .zsav: read and written by pyreadstat with variable and value labels, formats,
measures, user-missing values and ranges, display widths and notes. User-missing values are
missing for the pipeline (a continuous QI keeps them missing; a categorical QI holding them is
an error) and written back as they were."""

from __future__ import annotations

import struct
import warnings
from pathlib import Path

from ..errors import FormatWarning
from ..read_limits import Damaged, ForeignBytes, check_cells, check_decompressed
from .formats import Format
from .labelled import LabelledMeta, labels_for, read_readstat
from .typed_frames import integral, is_numeric, need, user_missing

__all__ = ["FORMATS"]


def read(p: Path, *, missing=()):
    return read_readstat(p, "spss", missing)


def write(frame, tmp, meta: LabelledMeta | None, path, published) -> None:
    import numpy as np

    meta = meta or LabelledMeta()
    pyreadstat = need("pyreadstat", "writing SPSS files")
    for col, spec in meta.missing_ranges.items():  # kept as declared: a mean may land on one
        if col in published and is_numeric(published[col]):
            hit = int(user_missing(np.asarray(published[col], dtype=np.float64), spec).sum())
            if hit:
                warnings.warn(
                    f"column {col}: {hit} published value(s) fall on its SPSS "
                    "user-missing values, so SPSS reads them as missing; change or remove "
                    "the column's missing values if they should count",
                    FormatWarning,
                    stacklevel=2,
                )
    formats = {
        k: v
        for k, v in meta.kept(frame, meta.formats).items()
        if not (k in published and is_numeric(published[k]) and not integral(published[k]))
    }
    notes = meta.notes
    pyreadstat.write_sav(
        frame,
        tmp,
        column_labels=meta.kept(frame, meta.column_labels) or None,
        variable_value_labels=labels_for(meta, frame, published) or None,
        missing_ranges=meta.kept(frame, meta.missing_ranges) or None,
        variable_display_width=meta.kept(frame, meta.display_width) or None,
        variable_measure=meta.kept(frame, meta.measure) or None,
        variable_format=formats or None,
        file_label=meta.file_label,
        note="\n".join(notes) if isinstance(notes, (list, tuple)) and notes else None,
        compress=Path(path).name.lower().endswith(".zsav"),
    )


def header(p: Path) -> list:
    """The variable names, from the file's dictionary (its cases are not read)."""
    from .labelled import readstat_header

    return readstat_header(p, "spss")


_MAGIC = (b"$FL2", b"$FL3")  # $FL3: the data compressed by zlib (.zsav)


def check_header(f, name: str, size: int) -> None:
    """The cases × values the header claims fit the file's bytes (uncompressed, a value takes 8
    bytes; bytecode-compressed at least one; zlib-compressed, one of the decompressed bytes its
    trailer lists) and the limits (``microagg.read_limits``)."""
    head = f.read(176)
    if not head.startswith(_MAGIC):
        raise ForeignBytes(head)
    if len(head) < 176:
        raise Damaged("it ends inside its header")
    order = "<" if struct.unpack("<i", head[64:68])[0] in (2, 3) else ">"
    case_size, compression, _, cases = struct.unpack(order + "4i", head[68:84])
    if compression not in (0, 1, 2):
        raise Damaged("its header is not an SPSS header")
    if (
        case_size <= 0
    ):  # some writers leave the values per case unknown (-1): the reader counts them
        case_size = 1
    if compression == 2:
        data, what = _zsav_inflated_size(f, name, size, order), "decompressed bytes"
        per_value = 1
    else:
        data, what = size, "bytes"
        per_value = 8 if compression == 0 else 1
    if cases >= 0 and cases * case_size * per_value > data:
        raise Damaged(
            f"it claims {cases:,} cases of {case_size:,} values, more than its {data:,} "
            f"{what} can hold"
        )
    if cases >= 0:
        check_cells(name, cases, case_size, " (values of 8 bytes)")


def _zsav_inflated_size(f, name: str, size: int, order: str) -> int:
    """The decompressed size of a .zsav's data: the sum of its blocks' sizes (its trailer), after
    walking the dictionary to find the zlib header; checked against the file's size and the
    limits."""
    dictionary = _Dictionary(f, size, order)
    dictionary.walk()
    zheader, ztrailer, trailer_length = dictionary.read("3q")
    if zheader != dictionary.pos - 24 or ztrailer + trailer_length != size or trailer_length < 24:
        raise Damaged("its compressed data do not end where its zlib header says")
    f.seek(ztrailer)
    trailer = f.read(trailer_length)
    _, _, _, blocks = struct.unpack(order + "qqii", trailer[:24])
    if blocks < 0 or trailer_length != 24 + 24 * blocks:
        raise Damaged("its zlib trailer does not list its blocks")
    inflated = sum(
        struct.unpack(order + "qqii", trailer[24 + 24 * i : 48 + 24 * i])[2] for i in range(blocks)
    )
    check_decompressed(name, inflated)
    return inflated


class _Dictionary:
    """A walk over an SPSS file's dictionary records (after its 176-byte header) to their end."""

    def __init__(self, f, size: int, order: str):
        self.f, self.size, self.order, self.pos = f, size, order, 176

    def read(self, fmt: str):
        n = struct.calcsize(fmt)
        data = self.f.read(n)
        if len(data) < n:
            raise Damaged("it ends inside its dictionary")
        self.pos += n
        return struct.unpack(self.order + fmt, data)

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > self.size:
            raise Damaged("a dictionary record runs past its end")
        self.f.seek(n, 1)
        self.pos += n

    def walk(self) -> None:
        """Past every record up to the dictionary's end (record type 999)."""
        while True:
            (record,) = self.read("i")
            if record == 2:  # a variable
                _, has_label, missing, _, _ = self.read("5i")
                self.skip(8)
                if has_label:
                    (length,) = self.read("i")
                    self.skip((length + 3) // 4 * 4)
                self.skip(abs(missing) * 8)
            elif record == 3:  # value labels, then the variables they apply to (record type 4)
                self._value_labels()
            elif record == 6:  # documents
                (lines,) = self.read("i")
                self.skip(lines * 80)
            elif record == 7:  # extensions
                _, item, count = self.read("3i")
                self.skip(item * count)
            elif record == 999:
                self.read("i")
                return
            else:
                raise Damaged(f"an unknown dictionary record ({record})")

    def _value_labels(self) -> None:
        (count,) = self.read("i")
        for _ in range(max(count, 0)):
            self.skip(8)
            (length,) = struct.unpack("B", self.f.read(1))
            self.pos += 1
            self.skip((length + 1 + 7) // 8 * 8 - 1)
        record4, count = self.read("2i")
        if record4 != 4:
            raise Damaged("a value-label record is not followed by its variables")
        self.skip(count * 4)


FORMATS = (
    Format(
        "spss",
        "SPSS",
        (".sav", ".zsav"),
        read,
        write,
        family="labelled",
        rank=40,
        read_by="pyreadstat",
        magic=_MAGIC,
        article="an",
        check_header=check_header,
        header=header,
    ),
)
