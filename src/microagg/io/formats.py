"""The format registry: each file format is declared once, in its own module of this package.

A format module holds ``FORMATS``, a tuple of :class:`Format` declarations: its name, label,
suffixes, reader, writer (None: read only), the metadata family it keeps across conversions and,
for the out-of-core mode, a chunked reader. ``read`` / ``write`` (``microagg.io``), the supported
list in errors and in the command line's help, and the out-of-core mode all enumerate this
registry, so a new format is one new module (and its tests). Modules are found automatically
(as the method registry finds methods); none imports anything heavy at module level.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import InputError

__all__ = ["Format", "FormatError", "all_formats", "get", "of_path", "format_of", "supported_text"]


class FormatError(InputError):
    """A file whose format is not supported, or that cannot be written in the format asked."""


@dataclass(frozen=True)
class Format:
    """One file format.

    read(path, *, missing, **options) -> Table; ``options`` are the read options it accepts
    (``read_options``: "sep", "decimal", "encoding", "sheet"). write(frame, tmp, meta, path,
    published) writes a typed frame (None: the format is read only; ``read_only_hint`` says
    what to choose instead). write_same(table, published, tmp, path): the writer used when the
    input has this very format (every byte or cell that is not a QI kept). ``family``: tables of
    the same family pass their metadata (labels, formats, ...) to this writer. ``library``: read
    by a third-party library, whose exceptions mean a damaged or foreign file. chunks(path,
    columns, rows, numeric) and first_rows(path, rows): the out-of-core reader (None: not
    supported). ``folder``: a folder of such files is one data set. header(path, **options): the
    column names in file order (duplicates included), reading only what names them (None: the
    whole file is read for them).
    """

    name: str
    label: str
    suffixes: tuple
    read: Callable
    write: Callable | None
    family: str
    rank: int = 100  # place in the supported list
    note: str = ""  # shown after the suffixes in the supported list
    read_options: tuple = ()
    write_same: Callable | None = None
    library: bool = True
    chunks: Callable | None = None
    first_rows: Callable | None = None
    folder: bool = False
    read_only_hint: str = ""
    magic: tuple = ()  # first bytes of its files (a file of this format with a text suffix is named)
    header: Callable | None = None

    @property
    def read_only(self) -> bool:
        return self.write is None

    def describe(self) -> str:
        """'Stata (.dta)' as the supported list shows it."""
        shown = " ".join(s for s in self.suffixes if not s.endswith(".gz") or s == ".gz")
        extra = "; ".join(t for t in (self.note, "read only" if self.read_only else "") if t)
        return f"{self.label} ({shown}{', ' + extra if extra else ''})"


_REGISTRY: dict[str, Format] = {}


def _load() -> None:
    if _REGISTRY:
        return
    package = __name__.rsplit(".", 1)[0]
    found = {}
    for mod in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if not mod.name.startswith("_"):
            for fmt in getattr(importlib.import_module(f"{package}.{mod.name}"), "FORMATS", ()):
                if fmt.name in found:
                    raise ValueError(f"file format {fmt.name!r} declared twice")
                found[fmt.name] = fmt
    _REGISTRY.update(sorted(found.items(), key=lambda item: (item[1].rank, item[0])))


def all_formats() -> list[Format]:
    """Every declared format, in the order of the supported list."""
    _load()
    return list(_REGISTRY.values())


def get(name: str) -> Format:
    _load()
    return _REGISTRY[name]


def supported_text() -> str:
    """The supported formats, for errors and help texts."""
    return ", ".join(fmt.describe() for fmt in all_formats())


def of_path(path) -> Format:
    """The format of ``path`` from its suffix (longest suffix first; a folder is a data set of the
    format that reads folders); FormatError listing the supported formats otherwise."""
    p = Path(path)
    formats = all_formats()
    if p.is_dir():
        return next(fmt for fmt in formats if fmt.folder)
    name = p.name.lower()
    by_suffix = sorted(((s, fmt) for fmt in formats for s in fmt.suffixes), key=lambda item: -len(item[0]))
    for suffix, fmt in by_suffix:
        if name.endswith(suffix):
            return fmt
    raise FormatError(f"unsupported file format: {p.name}; supported: {supported_text()}")


def format_of(path) -> str:
    """The format name of ``path`` (``of_path``)."""
    return of_path(path).name
