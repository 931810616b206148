"""The labelled family (Stata, SPSS, SAS): its metadata dataclass, shared by their readers and
writers, so that a conversion between them keeps variable and value labels, the file label and
what the target can hold of the rest."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import FormatWarning
from .file_table import Meta
from .typed_frames import integral, is_numeric, need, typed_table

__all__ = ["LabelledMeta", "read_readstat", "labels_for"]


@dataclass
class LabelledMeta(Meta):
    """What Stata, SPSS and SAS files hold beside the data (pyreadstat's metadata_container, the
    fields microagg writes back)."""

    column_labels: dict = field(default_factory=dict)  # variable labels
    value_labels: dict = field(default_factory=dict)  # column -> {code: label}
    file_label: str | None = None  # Stata's data label, SPSS / SAS file label
    table_name: str | None = None  # SAS
    formats: dict = field(default_factory=dict)  # SPSS / SAS display formats
    measure: dict = field(default_factory=dict)  # SPSS: nominal / ordinal / scale
    display_width: dict = field(default_factory=dict)  # SPSS
    missing_ranges: dict = field(default_factory=dict)  # SPSS user-missing values and ranges
    notes: list | None = None  # SPSS
    compressed: bool = False  # SPSS .zsav
    extended_missing: list = field(default_factory=list)  # Stata columns holding .a to .z
    stata_dates: dict = field(default_factory=dict)  # Stata date columns -> their %t type

    def warn_lost(self, target, published: dict) -> None:
        """Stata's extended missing values and SPSS user-missing values a target cannot keep."""
        extended = [c for c in self.extended_missing if c not in published]
        if extended:
            names = ", ".join(map(str, extended))
            warnings.warn(
                f"column(s) {names} hold Stata extended missing values (.a to .z): "
                "they are written as '.' (the Stata writer keeps only the plain missing value)",
                FormatWarning,
                stacklevel=3,
            )
        user_missing = [c for c in self.missing_ranges if c not in published]
        if user_missing and target.name != "spss":
            names = ", ".join(map(str, user_missing))
            warnings.warn(
                f"column(s) {names} have SPSS user-missing values, which "
                f"{target.name} cannot declare: they are written as ordinary values",
                FormatWarning,
                stacklevel=3,
            )

    def kept(self, frame, mapping: dict) -> dict:
        """The entries of ``mapping`` (column -> ...) for columns the frame still holds."""
        return {k: v for k, v in (mapping or {}).items() if k in frame.columns}


def readstat_header(p: Path, fmt: str) -> list:
    """The variable names of an SPSS, SAS transport or SAS file, from its metadata only."""
    pyreadstat = need("pyreadstat", f"reading {p.suffix} files")
    reader = {
        "spss": pyreadstat.read_sav,
        "xpt": pyreadstat.read_xport,
        "sas7bdat": pyreadstat.read_sas7bdat,
    }[fmt]
    _, m = reader(str(p), metadataonly=True)
    return [str(c) for c in m.column_names]


def read_readstat(p: Path, fmt: str, missing=()):
    """An SPSS (.sav, .zsav), SAS transport (.xpt) or SAS data set (.sas7bdat) file."""
    pyreadstat = need("pyreadstat", f"reading {p.suffix} files")
    if fmt == "spss":
        frame, m = pyreadstat.read_sav(str(p), user_missing=True)
    elif fmt == "xpt":
        frame, m = pyreadstat.read_xport(str(p))
    else:
        frame, m = pyreadstat.read_sas7bdat(str(p))
    meta = LabelledMeta(
        column_labels={k: v for k, v in m.column_names_to_labels.items() if v},
        value_labels=getattr(m, "variable_value_labels", {}) or {},
        file_label=getattr(m, "file_label", None) or None,
        table_name=getattr(m, "table_name", None) or None,
        formats=dict(getattr(m, "original_variable_types", {}) or {}),
        measure={
            k: v
            for k, v in (getattr(m, "variable_measure", {}) or {}).items()
            if v in ("nominal", "ordinal", "scale")
        },
        display_width=dict(getattr(m, "variable_display_width", {}) or {}),
        missing_ranges=dict(getattr(m, "missing_ranges", {}) or {}),
        notes=getattr(m, "notes", None),
        compressed=p.name.lower().endswith(".zsav"),
    )
    return typed_table(
        frame, fmt, p, meta, missing, meta.value_labels, meta.missing_ranges, meta.measure
    )


def labels_for(meta: LabelledMeta, frame, published) -> dict:
    """Value labels that still apply: a QI column's published values are group means, so its
    value labels (codes) are dropped when a value is no longer integral (a missing value, as a
    suppressed stratum publishes, keeps them)."""
    labels = {}
    for col, mapping in meta.value_labels.items():
        if col in frame.columns and not (
            col in published
            and is_numeric(published[col])
            and not integral(published[col], missing_ok=True)
        ):
            labels[col] = mapping
    return labels
