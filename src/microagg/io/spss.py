"""SPSS .sav / .zsav: read and written by pyreadstat with variable and value labels, formats,
measures, user-missing values and ranges, display widths and notes. User-missing values are
missing for the pipeline (a QI holding them is an error) and written back as they were."""

from __future__ import annotations

import warnings
from pathlib import Path

from .formats import Format
from .labelled import LabelledMeta, labels_for, read_readstat
from .typed import integral, is_numeric, need, user_missing

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
                warnings.warn(f"column {col}: {hit} published value(s) fall on its SPSS user-missing values, so "
                              "SPSS reads them as missing; change or remove the column's missing values if they "
                              "should count", UserWarning, stacklevel=2)
    formats = {k: v for k, v in meta.kept(frame, meta.formats).items()
               if not (k in published and is_numeric(published[k]) and not integral(published[k]))}
    notes = meta.notes
    pyreadstat.write_sav(
        frame, tmp,
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


FORMATS = (Format("spss", "SPSS", (".sav", ".zsav"), read, write, family="labelled", rank=40,
                  magic=(b"$FL2", b"$FL3"), header=header),)
