"""SAS: transport files (.xpt, read and written by pyreadstat with variable labels, table name
and file label) and SAS data sets (.sas7bdat, read only: no open writer exists)."""

from __future__ import annotations

from pathlib import Path

from .formats import Format
from .labelled import LabelledMeta, read_readstat, readstat_header
from .typed import need

__all__ = ["FORMATS"]


def read_xpt(p: Path, *, missing=()):
    return read_readstat(p, "xpt", missing)


def read_sas7bdat(p: Path, *, missing=()):
    return read_readstat(p, "sas7bdat", missing)


def write_xpt(frame, tmp, meta: LabelledMeta | None, path, published) -> None:
    meta = meta or LabelledMeta()
    pyreadstat = need("pyreadstat", "writing SAS transport files")
    pyreadstat.write_xport(frame, tmp, file_label=meta.file_label,
                           column_labels=meta.kept(frame, meta.column_labels) or None,
                           table_name=meta.table_name)


FORMATS = (
    Format("xpt", "SAS transport", (".xpt",), read_xpt, write_xpt, family="labelled", rank=50,
           header=lambda p: readstat_header(p, "xpt")),
    Format("sas7bdat", "SAS data set", (".sas7bdat",), read_sas7bdat, None, family="labelled", rank=51,
           header=lambda p: readstat_header(p, "sas7bdat"),
           read_only_hint="SAS .sas7bdat files can be read but not written: choose an output ending in .xpt "
                          "(SAS transport), .csv, .parquet, .dta, .sav or .xlsx"),
)
