"""What reading a file may cost, checked before the memory is taken.

A file says how large it is before it is read: a Stata or SPSS header claims a number of rows,
a Parquet footer its rows and uncompressed sizes, a zip (Excel) its members' sizes, an Excel
sheet the cells it spans. A damaged or hostile file can claim far more than its bytes hold
(a 4 kB ``.dta`` claiming 2^31 rows), and compressed text can inflate a thousand times (a
0.3 MB ``.csv.gz`` holding 300 MB). Every such claim is checked here against

* what the file's own bytes can hold (each format stores a cell in at least one byte): a claim
  beyond it is a damaged or truncated file;
* the limits in force: ``max_bytes`` (the app sets it to its upload limit with :func:`limited`)
  for decompressed bytes and for cells (one byte a cell), and this machine's memory (a cell
  takes 8 bytes in memory), so that a claim that cannot fit is one clear error line, never a
  ``MemoryError``;

and compressed text is inflated in a stream that stops at the limit, never whole. A file whose
first bytes are another format than its suffix says (a PNG named ``.csv``, NUL bytes in text) is
named for what it is. ``microagg.io.read`` calls :func:`check_file` and :func:`text_bytes`;
nothing here imports more than the standard library at module level.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError

__all__ = ["ReadLimitError", "Limits", "limited", "memory_budget", "current", "check_file", "text_bytes", "check_text",
           "memory_bytes"]


class ReadLimitError(InputError):
    """A file claims or holds more than it may: damaged, truncated, or beyond the limits in force."""


@dataclass(frozen=True)
class Limits:
    """``max_bytes``: the most bytes one file may hold once decompressed, and the most cells
    (one byte a cell) it may claim; ``memory``: the memory reading may take (the command line's
    ``--max-memory-mb``: text a quarter of it, cells at their size in memory); None: only this
    machine's memory bounds them."""

    max_bytes: int | None = None
    memory: int | None = None


#: the command line's default memory budget for reading: this share of the machine's memory
DEFAULT_MEMORY_SHARE = 0.5
#: text in memory while it is parsed and kept for a byte-identical write: about this many times its bytes
TEXT_MEMORY_FACTOR = 4


_LIMITS: contextvars.ContextVar = contextvars.ContextVar("microagg_read_limits", default=Limits())


@contextlib.contextmanager
def limited(max_bytes: int | None):
    """Within this block (and the threads started from it with its context, as
    ``asyncio.to_thread`` does), reading a file is bounded by ``max_bytes``."""
    token = _LIMITS.set(Limits(None if max_bytes is None else int(max_bytes)))
    try:
        yield
    finally:
        _LIMITS.reset(token)


@contextlib.contextmanager
def memory_budget(megabytes: float | None):
    """Within this block, reading a file may take at most ``megabytes`` of memory (default:
    DEFAULT_MEMORY_SHARE of this machine's): decompressed text at most a TEXT_MEMORY_FACTOR-th of
    it, claimed cells at their size in memory. The command line reads under it."""
    if megabytes is None:
        memory = memory_bytes()
        budget = None if memory is None else int(memory * DEFAULT_MEMORY_SHARE)
    else:
        budget = int(float(megabytes) * (1 << 20))
    token = _LIMITS.set(Limits(current().max_bytes, budget))
    try:
        yield
    finally:
        _LIMITS.reset(token)


def current() -> Limits:
    return _LIMITS.get()


def memory_bytes() -> int | None:
    """This machine's physical memory, or the container's memory limit when smaller."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        total = None
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and (total is None or int(text) < total):
            total = int(text)
    return total if total and total > 0 else None


_CELL_BYTES = 8  # a cell in memory: a float64, an int64 or a pointer to a Python object
#: an Excel cell as openpyxl's reader holds it before the frame is built (a Python object in a row tuple)
_EXCEL_CELL_BYTES = 64


def _memory() -> tuple[int | None, str]:
    """(the memory reading may take, what sets it): the budget in force, else the machine's."""
    budget = current().memory
    if budget is not None:
        return budget, f"the memory budget of {_size(budget)} (--max-memory-mb)"
    memory = memory_bytes()
    return memory, (f"this machine's {_size(memory)} of memory" if memory is not None else "")


def _byte_cap() -> tuple[int | None, str]:
    """(the most decompressed bytes a file may hold, what sets it)."""
    limit = current().max_bytes
    memory, why = _memory()
    if current().memory is not None:
        memory, why = memory // TEXT_MEMORY_FACTOR, f"a {TEXT_MEMORY_FACTOR}th of {why}"
    if limit is not None and (memory is None or limit <= memory):
        return limit, f"the limit of {_size(limit)}"
    if memory is not None:
        return memory, why
    return None, ""


def _cell_cap(cell_bytes: int = 8) -> tuple[int | None, str]:
    """(the most cells a file may claim, what sets it); ``cell_bytes``: a cell's size in memory
    as the format's reader holds it."""
    limit = current().max_bytes
    memory, why = _memory()
    by_memory = None if memory is None else memory // cell_bytes
    if limit is not None and (by_memory is None or limit <= by_memory):
        return limit, f"the limit of {_size(limit)} (one byte a cell)"
    if by_memory is not None:
        return by_memory, f"{why} ({cell_bytes} bytes a cell)"
    return None, ""


def _size(n: int) -> str:
    """Bytes in the unit a limit is given in: '0.5 MB' (not '512 kB') for --max-upload-mb 0.5."""
    for unit, scale, least in (("GB", 1 << 30, 1 << 30), ("MB", 1 << 20, 1 << 16), ("kB", 1 << 10, 1 << 10)):
        if n >= least:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def _check_cells(name: str, rows: int, columns: int, what: str = "") -> None:
    cap, why = _cell_cap()
    if cap is not None and rows * columns > cap:
        raise ReadLimitError(f"cannot read {name}: it claims {rows:,} rows × {columns:,} columns{what}, "
                             f"more than {why}")


def _check_decompressed(name: str, size: int) -> None:
    cap, why = _byte_cap()
    if cap is not None and size > cap:
        raise ReadLimitError(f"cannot read {name}: it decompresses to {_size(size)}, more than {why}")


def _damaged(name: str, fmt: str, detail: str) -> ReadLimitError:
    return ReadLimitError(f"cannot read {name}: a damaged or truncated {fmt} file ({detail})")


# --- what a file is, by its first bytes --------------------------------------------------------

_SAS7BDAT_MAGIC = bytes.fromhex("000000000000000000000000c2ea8160b31411cfbd92080009c7318c181f1011")
#: (first bytes, what they are, the suffix that format takes here or None)
_MAGIC = (
    (b"PAR1", "a Parquet file", ".parquet"), (b"PK\x03\x04", "a zip archive (an Excel workbook is one)", ".xlsx"),
    (b"$FL2", "an SPSS file", ".sav"), (b"$FL3", "a compressed SPSS file", ".zsav"),
    (b"<stata_dta>", "a Stata file", ".dta"), (b"HEADER RECORD*******LIB", "a SAS transport file", ".xpt"),
    (_SAS7BDAT_MAGIC, "a SAS data set", ".sas7bdat"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", None), (b"\xff\xd8\xff", "a JPEG image", None),
    (b"GIF87a", "a GIF image", None), (b"GIF89a", "a GIF image", None), (b"%PDF-", "a PDF document", None),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office file (.xls, .doc)", None),
    (b"\xfd7zXZ\x00", "xz-compressed data", None), (b"\x28\xb5\x2f\xfd", "zstd-compressed data", None),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", None), (b"\x7fELF", "a program (ELF)", None),
    (b"SQLite format 3\x00", "an SQLite database", None),
)
_BZIP2 = re.compile(rb"BZh[1-9]1AY&SY")
_OLD_STATA = range(104, 116)  # format versions 104 to 115: the first byte of a binary .dta


def _what_is(head: bytes) -> tuple[str, str | None] | None:
    """(what the bytes ``head`` start, its suffix) for a known binary format, else None."""
    for magic, what, suffix in _MAGIC:
        if head.startswith(magic):
            return what, suffix
    if _BZIP2.match(head):
        return "bzip2-compressed data", None
    if head[:2] == b"\x1f\x8b":
        return "gzip-compressed data", None
    return None


def _not_this_format(name: str, head: bytes, fmt: str) -> ReadLimitError:
    """``fmt``: the format with its article ("a Stata")."""
    found = _what_is(head)
    if found is None:
        return ReadLimitError(f"cannot read {name}: it is not {fmt} file (its first bytes are not "
                              f"{fmt.split(' ', 1)[1]}'s)")
    what, suffix = found
    hint = f": give it its suffix ({suffix})" if suffix else ""
    return ReadLimitError(f"cannot read {name}: it is {what}, not {fmt} file{hint}")


# --- delimited text -----------------------------------------------------------------------------

_CHUNK = 1 << 20
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16 (and UTF-32 LE) by their byte order mark


def text_bytes(path, encoding: str | None = None) -> tuple[bytes, bool]:
    """(the bytes of a delimited text file, gzip-decompressed when it is gzip data; whether it
    was). The decompressed size is bounded by the limits in force (inflated in a stream that stops
    there); a file that is another format (a PNG, a Parquet file...) or holds NUL bytes is refused
    with one line."""
    p = Path(path)
    cap, why = _byte_cap()
    size = p.stat().st_size
    if cap is not None and size > cap:
        raise ReadLimitError(f"cannot read {p.name}: it holds {_size(size)}, more than {why}")
    raw = p.read_bytes()
    gz = raw[:2] == b"\x1f\x8b"
    if gz:
        raw = _gunzip(raw, p.name, cap, why)
    check_text(raw, p.name, encoding)
    if not (raw.startswith(_WIDE_BOMS) or (encoding or "").lower().replace("_", "-").startswith(("utf-16", "utf-32"))):
        _check_text_cells(p.name, raw)
    return raw, gz


def check_text(raw: bytes, name: str, encoding: str | None = None) -> None:
    """Refuse bytes (a delimited text file's, or its first ones) that are another format (a PNG,
    a Parquet file...) or hold NUL bytes, with one line."""
    found = _what_is(raw[:64])
    if found is not None:
        what, suffix = found
        hint = f": give it its suffix ({suffix})" if suffix else ""
        raise ReadLimitError(f"{name} is {what}, not delimited text{hint}")
    wide = raw.startswith(_WIDE_BOMS) or (encoding is not None
                                          and encoding.lower().replace("_", "-").startswith(("utf-16", "utf-32")))
    nul = -1 if wide else raw.find(b"\x00")
    if nul >= 0:
        raise ReadLimitError(f"{name} holds NUL bytes (the first at byte {nul:,}): binary data, not delimited "
                             "text (UTF-16 text needs its byte order mark or --encoding)")


#: a delimited text file's cell in memory while it is read and kept for a byte-identical write
_TEXT_CELL_BYTES = 64


def _check_text_cells(name: str, raw: bytes) -> None:
    """The cells a text holds (its lines × the fields of its first line, at its most frequent
    candidate separator), at their size in memory, within the limits: a file of 200 million
    short lines is refused before it is parsed, not after it has taken the machine's memory."""
    end = raw.find(b"\n", 0, 1 << 20)
    first = raw[: end if end >= 0 else min(len(raw), 1 << 20)]
    columns = 1 + max(first.count(sep) for sep in (b",", b";", b"\t", b"|"))
    lines = raw.count(b"\n") + 1
    cap, why = _cell_cap(_TEXT_CELL_BYTES)
    if cap is not None and lines * columns > cap:
        raise ReadLimitError(f"cannot read {name}: its {lines:,} lines × {columns:,} fields are more cells than "
                             f"{why}")


def _gunzip(data: bytes, name: str, cap: int | None, why: str) -> bytes:
    """The gzip members of ``data`` inflated one megabyte at a time, stopping past ``cap``."""
    out, total, lines, columns = [], 0, 0, None
    cell_cap, cell_why = _cell_cap(_TEXT_CELL_BYTES)
    while data:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # a gzip header and trailer
        pending = data
        try:
            while not inflater.eof:
                piece = inflater.decompress(pending, _CHUNK)
                pending = inflater.unconsumed_tail
                total += len(piece)
                if cap is not None and total > cap:
                    raise ReadLimitError(f"cannot read {name}: it decompresses to more than {why}")
                out.append(piece)
                if columns is None and (b"\n" in piece or total > 1 << 20):  # the first line's fields
                    first = b"".join(out)[: 1 << 20].split(b"\n", 1)[0]
                    columns = 1 + max(first.count(sep) for sep in (b",", b";", b"\t", b"|"))
                lines += piece.count(b"\n")
                if cell_cap is not None and columns is not None and lines * columns > cell_cap:
                    raise ReadLimitError(f"cannot read {name}: it decompresses to more than {lines:,} lines × "
                                         f"{columns:,} fields, more cells than {cell_why}")
                if not piece and not pending:
                    raise ReadLimitError(f"cannot read {name}: broken gzip data (it ends before its end marker)")
        except zlib.error as exc:
            raise ReadLimitError(f"cannot read {name}: broken gzip data ({exc})") from None
        data = inflater.unused_data.lstrip(b"\x00")  # the next member; zero padding ends a file
        if data and data[:2] != b"\x1f\x8b":
            raise ReadLimitError(f"cannot read {name}: broken gzip data (bytes after its end are not gzip data)")
    return b"".join(out)


# --- typed formats ------------------------------------------------------------------------------

def check_file(path, fmt: str) -> None:
    """Before a typed file (``fmt`` as ``microagg.io.format_of`` names it) is read: its first
    bytes are that format's, and what its header claims fits its own bytes and the limits."""
    p = Path(path)
    check = _CHECKS.get(fmt)
    if check is None:
        return
    if p.is_dir():  # a Parquet dataset folder: each of its files
        if fmt == "parquet":
            _check_parquet_folder(p)
        return
    try:
        size = p.stat().st_size
        if size == 0:
            raise ReadLimitError(f"cannot read {p.name}: the file is empty")
        with open(p, "rb") as f:
            check(f, p.name, size)
    except struct.error:
        raise _damaged(p.name, _FORMAT_NAMES[fmt], "its header ends too early") from None
    except OSError as exc:
        raise InputError(f"cannot read {p.name}: {exc.strerror or exc}") from None


def _read_exact(f, n: int, name: str, fmt: str) -> bytes:
    data = f.read(n)
    if len(data) < n:
        raise _damaged(name, fmt, "it ends inside its header")
    return data


#: Stata 13+ formats: (bytes of the variable count K, bytes of the observation count N)
_STATA_COUNT_BYTES = {117: (2, 4), 118: (2, 8), 119: (4, 8), 120: (2, 8), 121: (4, 8)}


def _check_stata(f, name: str, size: int) -> None:
    head = f.read(256)
    if head.startswith(b"<stata_dta>"):
        m = re.match(rb"<stata_dta><header><release>(\d{3})</release><byteorder>(MSF|LSF)</byteorder><K>", head)
        if m is None:
            raise _damaged(name, "Stata", "its header is not a Stata 13 or later header")
        release, order = int(m.group(1)), "<" if m.group(2) == b"LSF" else ">"
        if release not in _STATA_COUNT_BYTES:  # a format this check does not know: the reader decides
            return
        pos = m.end()
        k_size, n_size = _STATA_COUNT_BYTES[release]
        columns = int.from_bytes(head[pos:pos + k_size], "little" if order == "<" else "big")
        pos += k_size
        if head[pos:pos + 7] != b"</K><N>":
            raise _damaged(name, "Stata", "its header is not a Stata 13 or later header")
        pos += 7
        rows = int.from_bytes(head[pos:pos + n_size], "little" if order == "<" else "big")
    elif head and head[0] in _OLD_STATA and len(head) >= 10 and head[1] in (1, 2):
        order = ">" if head[1] == 1 else "<"
        columns, rows = struct.unpack(order + "H", head[4:6])[0], struct.unpack(order + "I", head[6:10])[0]
    else:
        raise _not_this_format(name, head, "a Stata")
    if rows * columns > size:  # every variable takes at least one byte in each row
        raise _damaged(name, "Stata", f"it claims {rows:,} rows × {columns:,} columns, more than its "
                                      f"{size:,} bytes can hold")
    _check_cells(name, rows, columns)


def _check_spss(f, name: str, size: int) -> None:
    head = f.read(176)
    if not head.startswith((b"$FL2", b"$FL3")):
        raise _not_this_format(name, head, "an SPSS")
    if len(head) < 176:
        raise _damaged(name, "SPSS", "it ends inside its header")
    order = "<" if struct.unpack("<i", head[64:68])[0] in (2, 3) else ">"
    case_size, compression, _, cases = struct.unpack(order + "4i", head[68:84])
    if compression not in (0, 1, 2):
        raise _damaged(name, "SPSS", "its header is not an SPSS header")
    if case_size <= 0:  # some writers leave the values per case unknown (-1): the reader counts them
        case_size = 1
    if compression == 2:
        data = _zsav_inflated_size(f, name, size, order)
        if cases >= 0 and cases * case_size > data:  # a value takes at least one bytecode byte
            raise _damaged(name, "SPSS", f"it claims {cases:,} cases of {case_size:,} values, more than its "
                                         f"{data:,} decompressed bytes can hold")
    else:
        per_value = 8 if compression == 0 else 1  # uncompressed: 8 bytes; bytecode: at least one
        if cases >= 0 and cases * case_size * per_value > size:
            raise _damaged(name, "SPSS", f"it claims {cases:,} cases of {case_size:,} values, more than its "
                                         f"{size:,} bytes can hold")
    if cases >= 0:
        _check_cells(name, cases, case_size, " (values of 8 bytes)")


def _zsav_inflated_size(f, name: str, size: int, order: str) -> int:
    """The decompressed size of a .zsav's data: the sum of its blocks' sizes (its trailer), after
    walking the dictionary to find the zlib header; checked against the file's size and the limits."""
    pos = 176

    def read(fmt: str):
        nonlocal pos
        n = struct.calcsize(fmt)
        data = f.read(n)
        if len(data) < n:
            raise _damaged(name, "SPSS", "it ends inside its dictionary")
        pos += n
        return struct.unpack(order + fmt, data)

    def skip(n: int):
        nonlocal pos
        if n < 0 or pos + n > size:
            raise _damaged(name, "SPSS", "a dictionary record runs past its end")
        f.seek(n, 1)
        pos += n

    while True:
        (record,) = read("i")
        if record == 2:  # a variable
            _, has_label, missing, _, _ = read("5i")
            skip(8)
            if has_label:
                (length,) = read("i")
                skip((length + 3) // 4 * 4)
            skip(abs(missing) * 8)
        elif record == 3:  # value labels, then the variables they apply to (record type 4)
            (count,) = read("i")
            for _ in range(max(count, 0)):
                skip(8)
                (length,) = struct.unpack("B", f.read(1))
                pos += 1
                skip((length + 1 + 7) // 8 * 8 - 1)
            record4, count = read("2i")
            if record4 != 4:
                raise _damaged(name, "SPSS", "a value-label record is not followed by its variables")
            skip(count * 4)
        elif record == 6:  # documents
            (lines,) = read("i")
            skip(lines * 80)
        elif record == 7:  # extensions
            _, item, count = read("3i")
            skip(item * count)
        elif record == 999:
            read("i")
            break
        else:
            raise _damaged(name, "SPSS", f"an unknown dictionary record ({record})")
    zheader, ztrailer, trailer_length = read("3q")
    if zheader != pos - 24 or ztrailer + trailer_length != size or trailer_length < 24:
        raise _damaged(name, "SPSS", "its compressed data do not end where its zlib header says")
    f.seek(ztrailer)
    trailer = f.read(trailer_length)
    _, _, _, blocks = struct.unpack(order + "qqii", trailer[:24])
    if blocks < 0 or trailer_length != 24 + 24 * blocks:
        raise _damaged(name, "SPSS", "its zlib trailer does not list its blocks")
    inflated = sum(struct.unpack(order + "qqii", trailer[24 + 24 * i: 48 + 24 * i])[2] for i in range(blocks))
    _check_decompressed(name, inflated)
    return inflated


_XPT_LIBRARY = re.compile(rb"HEADER RECORD\*{7}LIB(?:RARY|V8) {0,3}HEADER RECORD!{7}0{30}")


def _check_xpt(f, name: str, size: int) -> None:
    head = f.read(80)
    if not _XPT_LIBRARY.match(head):
        raise _not_this_format(name, head, "a SAS transport")
    if size % 80:
        raise _damaged(name, "SAS transport", f"its {size:,} bytes are not whole 80-byte records")
    import mmap

    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:  # searched in place, not read whole
        _check_xpt_observations(data, name)


def _check_xpt_observations(data: bytes, name: str) -> None:
    """The first member's observations are whole: a file cut inside an observation (even at an
    80-byte boundary) or holding fewer observations than its header says (version 8) is refused."""
    names = _XPT_NAMESTR.search(data)
    observations = _XPT_OBS.search(data)
    if names is None or observations is None:
        raise _damaged(name, "SAS transport", "it has no variable list or no observations header")
    start, entry = names.start() + 80, 140  # the variable descriptions (NAMESTR), 140 bytes each
    lengths = []
    for i in range(int(names.group(1))):
        namestr = data[start + i * entry: start + (i + 1) * entry]
        if len(namestr) < entry:
            raise _damaged(name, "SAS transport", "its variable list ends early")
        lengths.append(struct.unpack(">h", namestr[4:6])[0])
    width = sum(lengths)
    if width <= 0 or min(lengths, default=0) <= 0:
        raise _damaged(name, "SAS transport", "a variable has no width")
    begin = observations.start() + 80
    following = _XPT_MEMBER.search(data, begin)
    end = len(data) if following is None else following.start()
    whole = (end - begin) // width
    rest = data[begin + whole * width: end]
    if rest.strip(b" "):  # after the last whole observation: blank padding only
        raise _damaged(name, "SAS transport", f"its last observation is cut ({len(rest)} of {width} bytes)")
    declared = observations.group(1).strip()
    if declared.isdigit() and whole < int(declared):
        raise _damaged(name, "SAS transport", f"it holds {whole:,} of the {int(declared):,} observations its "
                                              "header announces")


_XPT_NAMESTR = re.compile(rb"HEADER RECORD\*{7}(?:NAMESTR|NAMSTV8) HEADER RECORD!{7}0{6}(\d{4})")
_XPT_OBS = re.compile(rb"HEADER RECORD\*{7}OBS(?:V8)? {3,5}HEADER RECORD!{7}([ 0-9]{0,32})")
_XPT_MEMBER = re.compile(rb"HEADER RECORD\*{7}MEMB(?:ER|V8) {1,2}HEADER RECORD!{7}")


def _check_sas7bdat(f, name: str, size: int) -> None:
    head = f.read(len(_SAS7BDAT_MAGIC))
    if head != _SAS7BDAT_MAGIC:
        raise _not_this_format(name, head, "a SAS")
    import pyreadstat

    try:  # the header and column descriptions only: ReadStat's reading of the page layout
        _, meta = pyreadstat.read_sas7bdat(f.name, metadataonly=True)
    except Exception as exc:  # noqa: BLE001 - pyreadstat's error types for a damaged file
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _damaged(name, "SAS", text) from None
    _check_cells(name, max(int(meta.number_rows or 0), 0), max(int(meta.number_columns or 0), 0))


def _check_parquet(f, name: str, size: int) -> None:
    head = f.read(4)
    if head != b"PAR1":
        raise _not_this_format(name, head + f.read(60), "a Parquet")
    if size < 12:
        raise _damaged(name, "Parquet", "it is shorter than a Parquet footer")
    f.seek(size - 4)
    if f.read(4) != b"PAR1":
        raise _damaged(name, "Parquet", "it does not end with a Parquet footer")
    _check_parquet_footer(f.name, name)


def _check_parquet_footer(path, name: str) -> tuple[int, int]:
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow's many error types for a broken footer
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _damaged(name, "Parquet", text) from None
    inflated = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    _check_decompressed(name, inflated)
    _check_cells(name, meta.num_rows, meta.num_columns)
    return meta.num_rows * meta.num_columns, inflated


def _check_parquet_folder(folder: Path) -> None:
    cells = inflated = 0
    for f in sorted(folder.rglob("*")):
        if f.is_file() and not f.name.startswith((".", "_")):
            with open(f, "rb") as fh:
                if fh.read(4) != b"PAR1":
                    continue
            c, b = _check_parquet_footer(f, f"{folder.name}/{f.relative_to(folder)}")
            cells, inflated = cells + c, inflated + b
    _check_decompressed(folder.name, inflated)
    cap, why = _cell_cap()
    if cap is not None and cells > cap:
        raise ReadLimitError(f"cannot read {folder.name}: its files claim {cells:,} cells, more than {why}")


_ZIP_MEMBERS = 10_000


def _check_excel(f, name: str, size: int) -> None:
    import zipfile

    head = f.read(4)
    if head != b"PK\x03\x04":
        raise _not_this_format(name, head + f.read(60), "an Excel")
    f.seek(0)
    try:
        archive = zipfile.ZipFile(f)
    except zipfile.BadZipFile as exc:
        raise _damaged(name, "Excel", str(exc)) from None
    with archive:
        members = archive.infolist()
        if len(members) > _ZIP_MEMBERS:
            raise _damaged(name, "Excel", f"it holds {len(members):,} files (a workbook holds a few)")
        # zipfile never inflates a member past the size its directory gives (then checks its CRC)
        _check_decompressed(name, sum(m.file_size for m in members))
        for member in members:
            if re.fullmatch(r"xl/worksheets/[^/]+\.xml", member.filename):
                rows, columns = _sheet_extent(archive, member.filename, name)
                cap, why = _cell_cap(_EXCEL_CELL_BYTES)
                if cap is not None and rows * columns > cap:
                    raise ReadLimitError(
                        f"cannot read {name}: its {member.filename[len('xl/worksheets/'):-4]} spans {rows:,} rows × "
                        f"{columns:,} columns, more cells than {why} (blank cells count: the reader fills them)")


# numbers read whole (a sheet claiming 10^9 rows must not read as 10^7): the cap then refuses them
_DIMENSION = re.compile(rb"<(?:\w+:)?dimension\s[^>]*?ref=\"([A-Z]{1,9})(\d{1,30})(?::([A-Z]{1,9})(\d{1,30}))?\"")
_ROW = re.compile(rb"<(?:\w+:)?row\s[^>]*?\br=\"(\d{1,30})\"")
_CELL_COLUMN = re.compile(rb"<(?:\w+:)?c\s[^>]*?\br=\"([A-Z]{1,9})\d")


def _column_number(letters: bytes) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ch - 64
    return n


def _sheet_extent(archive, member: str, name: str) -> tuple[int, int]:
    """(rows, columns) a worksheet spans: its declared dimension or its farthest row and cell,
    whichever is larger (a reader fills the blank cells of that rectangle); one streaming pass
    over its XML by regular expressions (a tenth of an XML parser's time: the reader parses it
    after anyway)."""
    rows, letters, tail = 0, set(), b""
    try:
        with archive.open(member) as stream:
            while True:
                chunk = stream.read(_CHUNK)
                if not chunk:
                    break
                text = tail + chunk
                tail = text[-256:]  # a tag cut between two chunks is read whole with the next one
                for match in _DIMENSION.finditer(text):
                    for column, row in ((match.group(1), match.group(2)), (match.group(3), match.group(4))):
                        if column:
                            letters.add(column)
                            rows = max(rows, int(row))
                found = _ROW.findall(text)
                if found:
                    rows = max(rows, max(map(int, found)))
                letters.update(_CELL_COLUMN.findall(text))
    except (OSError, EOFError) as exc:
        raise _damaged(name, "Excel", f"{member}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - zipfile's CRC and size checks (BadZipFile)
        raise _damaged(name, "Excel", f"{member}: {exc}") from None
    return rows, max(map(_column_number, letters), default=0)


_CHECKS = {"stata": _check_stata, "spss": _check_spss, "xpt": _check_xpt, "sas7bdat": _check_sas7bdat,
           "parquet": _check_parquet, "excel": _check_excel}
_FORMAT_NAMES = {"stata": "Stata", "spss": "SPSS", "xpt": "SAS transport", "sas7bdat": "SAS",
                 "parquet": "Parquet", "excel": "Excel"}
