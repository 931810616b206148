"""Stata .dta: read with pandas (values) and pyreadstat (labels); written by pandas' Stata writer
(version 118) with variable labels, value labels that still apply, the data label and the date
columns' own %t types."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from ..errors import InputError
from ..read_limits import Damaged, ForeignBytes, check_cells
from .formats import Format
from .labelled import LabelledMeta, labels_for
from .typed_frames import need, typed_table

__all__ = ["FORMATS"]


def read(p: Path, *, missing=()):
    import pandas as pd

    pyreadstat = need("pyreadstat", "reading Stata files")
    frame = pd.read_stata(
        p,
        convert_categoricals=False,
        convert_dates=True,
        convert_missing=False,
        preserve_dtypes=True,
    )
    _, m = pyreadstat.read_dta(str(p), metadataonly=True)
    # date columns keep their Stata type (%td days, %tc milliseconds, %tm months, ...): pandas
    # writes every datetime column as %tc unless told
    dates = {
        c: f[1:4]
        for c, f in (m.original_variable_types or {}).items()
        if isinstance(f, str) and f[:3] in ("%tc", "%tC", "%td", "%tw", "%tm", "%tq", "%th", "%ty")
    }
    meta = LabelledMeta(
        column_labels={k: v for k, v in m.column_names_to_labels.items() if v},
        value_labels=m.variable_value_labels,
        file_label=m.file_label or None,
        extended_missing=_extended_missing(p),
        stata_dates=dates,
    )
    return typed_table(frame, "stata", p, meta, missing, meta.value_labels)


def _extended_missing(p: Path) -> list:
    """Columns holding Stata's extended missing values (.a to .z): pandas writes them back as
    '.'."""
    import pandas as pd
    from pandas.io.stata import StataMissingValue

    check = pd.read_stata(p, convert_categoricals=False, convert_dates=False, convert_missing=True)
    return [
        c
        for c in check.columns
        if check[c].dtype == object
        and any(isinstance(v, StataMissingValue) and v.string != "." for v in check[c])
    ]


def write(frame, tmp, meta: LabelledMeta | None, path, published) -> None:
    import warnings

    import pandas as pd
    from pandas.io.stata import InvalidColumnName

    meta = meta or LabelledMeta()
    frame = frame.copy()
    for c in frame.columns:  # Stata has no 64-bit integers: int64 columns that fit go to int32
        if str(frame[c].dtype) == "int64" and len(frame) and frame[c].abs().max() < 2**31 - 1:
            frame[c] = frame[c].astype("int32")
    labels = {
        c: {int(k): v for k, v in m.items()}
        for c, m in labels_for(meta, frame, published).items()
        if all(float(k).is_integer() for k in m)
    }
    dates = {
        c: "tc" if f == "tC" else f
        for c, f in meta.stata_dates.items()
        if c in frame.columns
        and c not in published
        and pd.api.types.is_datetime64_any_dtype(frame[c])
    }
    # a name Stata cannot hold is an error, as for every format (pandas renames the column with a
    # warning listing "name   ->   new name"); other warnings (lost precision) reach the user
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame.to_stata(
            tmp,
            write_index=False,
            version=118,
            convert_dates=dates or None,
            variable_labels=meta.kept(frame, meta.column_labels) or None,
            value_labels=labels or None,
            data_label=meta.file_label,
        )
    renamed = [
        line.split("   ->   ")[0].strip()
        for w in caught
        if issubclass(w.category, InvalidColumnName)
        for line in str(w.message).splitlines()
        if "   ->   " in line
    ]
    if renamed:
        names = ", ".join(map(repr, renamed))
        raise InputError(
            f"cannot write {Path(path).name} as stata: column name(s) {names} "
            "cannot be Stata variable names (at most 32 characters: letters, digits and _, not "
            "starting with a digit, no reserved word): rename them, or write another format"
        )
    for w in caught:
        if not issubclass(w.category, InvalidColumnName):
            warnings.warn(w.message, w.category, stacklevel=2)


def header(p: Path) -> list:
    """The variable names, from the file's header (its data are not read)."""
    pyreadstat = need("pyreadstat", "reading Stata files")
    _, m = pyreadstat.read_dta(str(p), metadataonly=True)
    return [str(c) for c in m.column_names]


#: Stata 13+ formats: (bytes of the variable count K, bytes of the observation count N)
_COUNT_BYTES = {117: (2, 4), 118: (2, 8), 119: (4, 8), 120: (2, 8), 121: (4, 8)}
_OLD_RELEASES = range(104, 116)  # format versions 104 to 115: the first byte of a binary .dta
_MAGIC = b"<stata_dta>"
_HEADER = re.compile(
    rb"<stata_dta><header><release>(\d{3})</release><byteorder>(MSF|LSF)</byteorder><K>"
)


def check_header(f, name: str, size: int) -> None:
    """The rows × variables the header claims fit the file's bytes (every variable takes at least
    one byte in each row) and the limits (``microagg.read_limits``)."""
    head = f.read(256)
    if head.startswith(_MAGIC):
        claims = _xml_header_claims(head)
        if claims is None:  # a format this check does not know: the reader decides
            return
        rows, columns = claims
    elif head and head[0] in _OLD_RELEASES and len(head) >= 10 and head[1] in (1, 2):
        order = ">" if head[1] == 1 else "<"
        columns, rows = (
            struct.unpack(order + "H", head[4:6])[0],
            struct.unpack(order + "I", head[6:10])[0],
        )
    else:
        raise ForeignBytes(head)
    if rows * columns > size:
        raise Damaged(
            f"it claims {rows:,} rows × {columns:,} columns, more than its {size:,} bytes can hold"
        )
    check_cells(name, rows, columns)


def _xml_header_claims(head: bytes) -> tuple[int, int] | None:
    """(rows, variables) of a Stata 13 or later header; None for a release this check does not
    know."""
    m = _HEADER.match(head)
    if m is None:
        raise Damaged("its header is not a Stata 13 or later header")
    release, byteorder = int(m.group(1)), "little" if m.group(2) == b"LSF" else "big"
    if release not in _COUNT_BYTES:
        return None
    pos = m.end()
    k_size, n_size = _COUNT_BYTES[release]
    columns = int.from_bytes(head[pos : pos + k_size], byteorder)
    pos += k_size
    if head[pos : pos + 7] != b"</K><N>":
        raise Damaged("its header is not a Stata 13 or later header")
    pos += 7
    return int.from_bytes(head[pos : pos + n_size], byteorder), columns


FORMATS = (
    Format(
        "stata",
        "Stata",
        (".dta",),
        read,
        write,
        family="labelled",
        rank=30,
        read_by="pandas.read_stata",
        magic=(_MAGIC,),
        check_header=check_header,
        header=header,
    ),
)
