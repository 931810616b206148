"""SAS: transport files (.xpt, read and written by pyreadstat with variable labels, table name
and file label) and SAS data sets (.sas7bdat, read only: no open writer exists; a protected
copy is written as a transport file)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from ..read_limits import Damaged, ForeignBytes, check_cells
from .formats import Format
from .labelled import LabelledMeta, read_readstat, readstat_header
from .typed_frames import need

__all__ = ["FORMATS"]


def read_xpt(p: Path, *, missing=()):
    return read_readstat(p, "xpt", missing)


def read_sas7bdat(p: Path, *, missing=()):
    return read_readstat(p, "sas7bdat", missing)


def write_xpt(frame, tmp, meta: LabelledMeta | None, path, published) -> None:
    meta = meta or LabelledMeta()
    pyreadstat = need("pyreadstat", "writing SAS transport files")
    pyreadstat.write_xport(
        frame,
        tmp,
        file_label=meta.file_label,
        column_labels=meta.kept(frame, meta.column_labels) or None,
        table_name=meta.table_name,
    )


_XPT_MAGIC = b"HEADER RECORD*******LIB"
_XPT_LIBRARY = re.compile(rb"HEADER RECORD\*{7}LIB(?:RARY|V8) {0,3}HEADER RECORD!{7}0{30}")
_XPT_NAMESTR = re.compile(rb"HEADER RECORD\*{7}(?:NAMESTR|NAMSTV8) HEADER RECORD!{7}0{6}(\d{4})")
_XPT_OBS = re.compile(rb"HEADER RECORD\*{7}OBS(?:V8)? {3,5}HEADER RECORD!{7}([ 0-9]{0,32})")
_XPT_MEMBER = re.compile(rb"HEADER RECORD\*{7}MEMB(?:ER|V8) {1,2}HEADER RECORD!{7}")
_SAS7BDAT_MAGIC = bytes.fromhex("000000000000000000000000c2ea8160b31411cfbd92080009c7318c181f1011")


def check_xpt(f, name: str, size: int) -> None:
    """A SAS transport file is whole 80-byte records, and its first member's observations are
    whole (``microagg.read_limits``)."""
    head = f.read(80)
    if not _XPT_LIBRARY.match(head):
        raise ForeignBytes(head)
    if size % 80:
        raise Damaged(f"its {size:,} bytes are not whole 80-byte records")
    import mmap

    with mmap.mmap(
        f.fileno(), 0, access=mmap.ACCESS_READ
    ) as data:  # searched in place, not read whole
        _check_xpt_observations(data)


def _check_xpt_observations(data: bytes) -> None:
    """The first member's observations are whole: a file cut inside an observation (even at an
    80-byte boundary) or holding fewer observations than its header says (version 8) is refused."""
    names = _XPT_NAMESTR.search(data)
    observations = _XPT_OBS.search(data)
    if names is None or observations is None:
        raise Damaged("it has no variable list or no observations header")
    start, entry = names.start() + 80, 140  # the variable descriptions (NAMESTR), 140 bytes each
    lengths = []
    for i in range(int(names.group(1))):
        namestr = data[start + i * entry : start + (i + 1) * entry]
        if len(namestr) < entry:
            raise Damaged("its variable list ends early")
        lengths.append(struct.unpack(">h", namestr[4:6])[0])
    width = sum(lengths)
    if width <= 0 or min(lengths, default=0) <= 0:
        raise Damaged("a variable has no width")
    begin = observations.start() + 80
    following = _XPT_MEMBER.search(data, begin)
    end = len(data) if following is None else following.start()
    whole = (end - begin) // width
    rest = data[begin + whole * width : end]
    if rest.strip(b" "):  # after the last whole observation: blank padding only
        raise Damaged(f"its last observation is cut ({len(rest)} of {width} bytes)")
    declared = observations.group(1).strip()
    if declared.isdigit() and whole < int(declared):
        raise Damaged(
            f"it holds {whole:,} of the {int(declared):,} observations its header announces"
        )


def check_sas7bdat(f, name: str, size: int) -> None:
    """The rows × columns a SAS data set's header claims fit the limits
    (``microagg.read_limits``)."""
    head = f.read(len(_SAS7BDAT_MAGIC))
    if head != _SAS7BDAT_MAGIC:
        raise ForeignBytes(head)
    import pyreadstat

    try:  # the header and column descriptions only: ReadStat's reading of the page layout
        _, meta = pyreadstat.read_sas7bdat(f.name, metadataonly=True)
    except Exception as exc:  # noqa: BLE001 - pyreadstat's error types for a damaged file
        raise Damaged(
            str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        ) from None
    check_cells(name, max(int(meta.number_rows or 0), 0), max(int(meta.number_columns or 0), 0))


FORMATS = (
    Format(
        "xpt",
        "SAS transport",
        (".xpt",),
        read_xpt,
        write_xpt,
        family="labelled",
        rank=50,
        read_by="pyreadstat",
        magic=(_XPT_MAGIC,),
        check_header=check_xpt,
        header=lambda p: readstat_header(p, "xpt"),
    ),
    Format(
        "sas7bdat",
        "SAS data set",
        (".sas7bdat",),
        read_sas7bdat,
        None,
        family="labelled",
        rank=51,
        read_by="pyreadstat",
        written_as="xpt",
        magic=(_SAS7BDAT_MAGIC,),
        check_header=check_sas7bdat,
        noun="SAS data set",
        header=lambda p: readstat_header(p, "sas7bdat"),
    ),
)
