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
named for what it is. Which bytes begin which format, and what each format's header claims, are
declared by the format (``microagg.io.formats.Format``: ``magic``, ``check_header``); the checks
of the formats' headers live in their modules and report with :class:`Damaged` and
:class:`ForeignBytes`. ``microagg.io.read`` calls :func:`check_file` and :func:`text_bytes`;
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

__all__ = [
    "ReadLimitError",
    "Damaged",
    "ForeignBytes",
    "Limits",
    "limited",
    "memory_budget",
    "current",
    "check_file",
    "text_bytes",
    "check_text",
    "memory_bytes",
    "check_cells",
    "check_decompressed",
    "cell_cap",
    "in_use",
    "process_limit_left",
]


class ReadLimitError(InputError):
    """A file claims or holds more than it may: damaged, truncated, or beyond the limits in
    force."""


class Damaged(Exception):
    """Raised by a format's header check: the file is damaged or truncated (the message says how;
    ``name``: the file of a folder data set it concerns). :func:`check_file` makes it one line."""

    def __init__(self, detail: str, name: str | None = None):
        super().__init__(detail)
        self.name = name


class ForeignBytes(Exception):
    """Raised by a format's header check: the file's first bytes (``head``) are not the format's."""

    def __init__(self, head: bytes):
        super().__init__("not this format's first bytes")
        self.head = head


@dataclass(frozen=True)
class Limits:
    """``max_bytes``: the most bytes one file may hold once decompressed, and the most cells
    (one byte a cell) it may claim; ``memory``: the memory reading may take (the command line's
    ``--max-memory-mb``: text a quarter of it, cells at their size in memory); None: only this
    machine's memory bounds them."""

    max_bytes: int | None = None
    memory: int | None = None
    #: what the process held when the budget was set and at its first check (one list per
    #: ``memory_budget`` block): the call counts what it took in between (its kernels loaded,
    #: say), not what the process held before it (a caller's own data), and a later read of the
    #: same call (the written file read back) is bounded as the first, not by what that first
    #: read took meanwhile
    held: list | None = None


#: the command line's default memory budget for reading: this share of the machine's memory
DEFAULT_MEMORY_SHARE = 0.5
#: what a call takes beyond the memory it held before reading, in times the text's bytes: the
#: text parsed, kept for a byte-identical write, written, read back and audited. Measured on a
#: CSV of one 100 MB field (the CLI, issue 57): 0.17 GB held before the read, 1.20 GB at the
#: peak, 10.3 times; at 4, a 300 MB field under --max-memory-mb 1300 was read and peaked at 2.4 GB
TEXT_MEMORY_FACTOR = 11


_NO_LIMITS = Limits()  # frozen: a shared default cannot be changed
_LIMITS: contextvars.ContextVar = contextvars.ContextVar("microagg_read_limits", default=_NO_LIMITS)


@contextlib.contextmanager
def limited(max_bytes: int | None):
    """Within this block (and the threads started from it with its context, as
    ``asyncio.to_thread`` does), reading a file is bounded by ``max_bytes``."""
    memory, held = current().memory, current().held
    token = _LIMITS.set(Limits(None if max_bytes is None else int(max_bytes), memory, held))
    try:
        yield
    finally:
        _LIMITS.reset(token)


@contextlib.contextmanager
def memory_budget(megabytes: float | None):
    """Within this block, a call may take at most ``megabytes`` of memory (default:
    DEFAULT_MEMORY_SHARE of this machine's), what it took before it reads included: text
    (decompressed) at most a TEXT_MEMORY_FACTOR-th of what is left, claimed cells at their size
    in memory. The command line runs each command under it."""
    if megabytes is None:
        memory = memory_bytes()
        budget = None if memory is None else int(memory * DEFAULT_MEMORY_SHARE)
    else:
        budget = int(float(megabytes) * (1 << 20))
    token = _LIMITS.set(Limits(current().max_bytes, budget, [in_use()]))
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


def in_use() -> int:
    """The bytes this process holds now (resident), 0 where the system does not say."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


def _status_bytes(field: str) -> int:
    """A size of /proc/self/status ("VmSize", "VmData"), 0 where the system does not say."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def process_limit_left() -> int | None:
    """What this process's own limits (``ulimit -v``: address space, ``-d``: data) leave it, or
    None without one: past them an allocation fails (a MemoryError), whatever the machine has."""
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    left = None
    for which, field in ((resource.RLIMIT_AS, "VmSize"), (resource.RLIMIT_DATA, "VmData")):
        soft = resource.getrlimit(which)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            room = max(soft - _status_bytes(field), 0)
            left = room if left is None else min(left, room)
    return left


def _memory() -> tuple[int | None, str]:
    """(the memory the rest of the call may take, what sets it): the budget in force less what
    the process holds already, else the machine's; never more than the process's own limits
    leave it (``ulimit -v``)."""
    budget, held = current().memory, current().held
    if budget is not None:
        if held is None:  # a Limits made by hand: nothing held before
            held = [0, in_use()]
        elif len(held) < 2:
            held.append(in_use())
        memory = max(budget - max(held[1] - held[0], 0), 0)
        why = f"the {_size(memory)} left of the memory budget of {_size(budget)} (--max-memory-mb)"
    else:
        memory = memory_bytes()
        why = f"this machine's {_size(memory)} of memory" if memory is not None else ""
    limit = process_limit_left()
    if limit is not None and (memory is None or limit < memory):
        memory, why = limit, f"the {_size(limit)} this process's memory limit (ulimit) leaves it"
    return memory, why


def _byte_cap() -> tuple[int | None, str]:
    """(the most decompressed bytes a file may hold, what sets it)."""
    limit = current().max_bytes
    memory, why = _memory()
    if memory is not None:
        memory, why = memory // TEXT_MEMORY_FACTOR, f"a {TEXT_MEMORY_FACTOR}th of {why}"
    if limit is not None and (memory is None or limit <= memory):
        return limit, f"the limit of {_size(limit)}"
    if memory is not None:
        return memory, why
    return None, ""


def cell_cap(cell_bytes: int = 8) -> tuple[int | None, str]:
    """(the most cells a file may claim, what sets it); ``cell_bytes``: a cell's size in memory
    as the format's reader holds it (8: a float64, an int64 or a pointer to a Python object)."""
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
    for unit, scale, least in (
        ("GB", 1 << 30, 1 << 30),
        ("MB", 1 << 20, 1 << 16),
        ("kB", 1 << 10, 1 << 10),
    ):
        if n >= least:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def check_cells(name: str, rows: int, columns: int, what: str = "") -> None:
    """The ``rows`` × ``columns`` cells a file (``name``) claims fit the limits in force."""
    cap, why = cell_cap()
    if cap is not None and rows * columns > cap:
        raise ReadLimitError(
            f"cannot read {name}: it claims {rows:,} rows × {columns:,} columns{what}, "
            f"more than {why}"
        )


def check_decompressed(name: str, size: int) -> None:
    """The ``size`` bytes a file (``name``) decompresses to fit the limits in force."""
    cap, why = _byte_cap()
    if cap is not None and size > cap:
        raise ReadLimitError(
            f"cannot read {name}: it decompresses to {_size(size)}, more than {why}"
        )


def _damaged(name: str, fmt, detail: str) -> ReadLimitError:
    return ReadLimitError(f"cannot read {name}: a damaged or truncated {fmt.file_noun} ({detail})")


# --- what a file is, by its first bytes --------------------------------------------------------

#: (first bytes, what they are) of files that are no format read here
_OTHER_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office file (.xls, .doc)"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\x7fELF", "a program (ELF)"),
    (b"SQLite format 3\x00", "an SQLite database"),
)
_BZIP2 = re.compile(rb"BZh[1-9]1AY&SY")


def _formats():
    from .io.formats import all_formats

    return all_formats()


def _what_is(head: bytes) -> tuple[str, str | None] | None:
    """(what the bytes ``head`` start, the suffix its format takes here or None) for a known
    binary format (the registry's, then others), else None."""
    for fmt in _formats():
        if any(head.startswith(magic) for magic in fmt.magic):
            return fmt.magic_means or fmt.a_file, fmt.suffixes[0]
    for magic, what in _OTHER_MAGIC:
        if head.startswith(magic):
            return what, None
    if _BZIP2.match(head):
        return "bzip2-compressed data", None
    if head[:2] == b"\x1f\x8b":
        return "gzip-compressed data", None
    return None


def _not_this_format(name: str, head: bytes, fmt) -> ReadLimitError:
    """``fmt``: the Format the file's suffix names."""
    found = _what_is(head)
    if found is None:
        return ReadLimitError(
            f"cannot read {name}: it is not {fmt.a_file} (its first bytes are not {fmt.label}'s)"
        )
    what, suffix = found
    hint = f": give it its suffix ({suffix})" if suffix else ""
    return ReadLimitError(f"cannot read {name}: it is {what}, not {fmt.a_file}{hint}")


# --- delimited text -----------------------------------------------------------------------------

_CHUNK = 1 << 20
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16 (and UTF-32 LE) by their byte order mark


def text_bytes(
    path, encoding: str | None = None, kind: str = "delimited text"
) -> tuple[bytes, bool]:
    """(the bytes of a text file, gzip-decompressed when it is gzip data; whether it was). The
    decompressed size is bounded by the limits in force (inflated in a stream that stops there);
    a file that is another format (a PNG, a Parquet file...) or holds NUL bytes is refused with
    one line (``kind``: what the file should have been, for that line)."""
    p = Path(path)
    cap, why = _byte_cap()
    size = p.stat().st_size
    if cap is not None and size > cap:
        raise ReadLimitError(f"cannot read {p.name}: it holds {_size(size)}, more than {why}")
    raw = p.read_bytes()
    gz = raw[:2] == b"\x1f\x8b"
    if gz:
        raw = _gunzip(raw, p.name, cap, why)
    check_text(raw, p.name, encoding, kind)
    if not (
        raw.startswith(_WIDE_BOMS)
        or (encoding or "").lower().replace("_", "-").startswith(("utf-16", "utf-32"))
    ):
        _check_text_cells(p.name, raw)
    return raw, gz


def check_text(
    raw: bytes, name: str, encoding: str | None = None, kind: str = "delimited text"
) -> None:
    """Refuse bytes (a text file's, or its first ones) that are another format (a PNG, a Parquet
    file...) or hold NUL bytes, with one line (``kind``: what the file should have been)."""
    found = _what_is(raw[:64])
    if found is not None:
        what, suffix = found
        hint = f": give it its suffix ({suffix})" if suffix else ""
        raise ReadLimitError(f"{name} is {what}, not {kind}{hint}")
    wide = raw.startswith(_WIDE_BOMS) or (
        encoding is not None and encoding.lower().replace("_", "-").startswith(("utf-16", "utf-32"))
    )
    nul = -1 if wide else raw.find(b"\x00")
    if nul >= 0:
        raise ReadLimitError(
            f"{name} holds NUL bytes (the first at byte {nul:,}): binary data, not {kind} "
            "(UTF-16 text needs its byte order mark or --encoding)"
        )


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
    cap, why = cell_cap(_TEXT_CELL_BYTES)
    if cap is not None and lines * columns > cap:
        raise ReadLimitError(
            f"cannot read {name}: its {lines:,} lines × {columns:,} fields are more cells than "
            f"{why}"
        )


def _gunzip(data: bytes, name: str, cap: int | None, why: str) -> bytes:
    """The gzip members of ``data`` inflated one megabyte at a time, stopping past ``cap``."""
    out, total, lines, columns = [], 0, 0, None
    cells_cap, cell_why = cell_cap(_TEXT_CELL_BYTES)
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
                if columns is None and (
                    b"\n" in piece or total > 1 << 20
                ):  # the first line's fields
                    first = b"".join(out)[: 1 << 20].split(b"\n", 1)[0]
                    columns = 1 + max(first.count(sep) for sep in (b",", b";", b"\t", b"|"))
                lines += piece.count(b"\n")
                if cells_cap is not None and columns is not None and lines * columns > cells_cap:
                    raise ReadLimitError(
                        f"cannot read {name}: it decompresses to more than {lines:,} lines × "
                        f"{columns:,} fields, more cells than {cell_why}"
                    )
                if not piece and not pending:
                    raise ReadLimitError(
                        f"cannot read {name}: broken gzip data (it ends before its end marker)"
                    )
        except zlib.error as exc:
            raise ReadLimitError(f"cannot read {name}: broken gzip data ({exc})") from None
        data = inflater.unused_data.lstrip(b"\x00")  # the next member; zero padding ends a file
        if data and data[:2] != b"\x1f\x8b":
            raise ReadLimitError(
                f"cannot read {name}: broken gzip data (bytes after its end are not gzip data)"
            )
    return b"".join(out)


# --- typed formats ------------------------------------------------------------------------------


def check_file(path, fmt) -> None:
    """Before a typed file is read (``fmt``: its Format, or its name as ``microagg.io.format_of``
    gives it): the format's ``check_header`` (its first bytes are that format's, and what its
    header claims fits its own bytes and the limits), or ``check_folder`` for a folder data set."""
    if isinstance(fmt, str):
        from .io.formats import get

        fmt = get(fmt)
    p = Path(path)
    try:
        if p.is_dir():
            if fmt.check_folder is not None:
                fmt.check_folder(p)
            return
        if fmt.check_header is None:
            return
        size = p.stat().st_size
        if size == 0:
            raise ReadLimitError(f"cannot read {p.name}: the file is empty")
        with open(p, "rb") as f:
            fmt.check_header(f, p.name, size)
    except Damaged as exc:
        raise _damaged(exc.name or p.name, fmt, str(exc)) from None
    except ForeignBytes as exc:
        raise _not_this_format(p.name, exc.head, fmt) from None
    except struct.error:
        raise _damaged(p.name, fmt, "its header ends too early") from None
    except OSError as exc:
        raise InputError(f"cannot read {p.name}: {exc.strerror or exc}") from None
