"""The format registry: each file format is declared once, in its own module of this package.

A format module holds ``FORMATS``, a tuple of :class:`Format` declarations: its name, label,
suffixes, reader, writer (None: read only, and then the format it is written as), the metadata
family it keeps across conversions, its files' first bytes, the check of what its header claims
(``microagg.read_limits``) and, for the out-of-core mode, a chunked reader. ``read`` / ``write``
(``microagg.io``), the supported list in errors and in the command line's help, the bounded
reading, the app's upload and download suffixes and the out-of-core mode all enumerate this
registry, so a new format is one new module (and its tests). Modules are found automatically
(as the method registry finds methods); a format declared elsewhere (a plugin, a test) joins with
:func:`register`. None imports anything heavy at module level.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

__all__ = [
    "Format",
    "FormatError",
    "all_formats",
    "get",
    "of_path",
    "format_of",
    "supported_text",
    "register",
    "unregister",
    "suffix_of",
    "output_suffix",
    "read_suffixes",
]


class FormatError(InputError):
    """A file whose format is not supported, or that cannot be written in the format asked."""


@dataclass(frozen=True)
class Format:
    """One file format.

    read(path, *, missing, **options) -> Table; ``options`` are the read options it accepts
    (``read_options``: "sep", "decimal", "encoding", "sheet"). write(frame, tmp, meta, path,
    published) writes a typed frame (None: the format is read only, and ``written_as`` names the
    format its protected files are written in). write_same(table, published, tmp, path): the
    writer used when the input has this very format (every byte or cell that is not a QI kept).
    ``family``: tables of the same family pass their metadata (labels, formats, ...) to this
    writer. ``library``: read by a third-party library, whose exceptions mean a damaged or
    foreign file; ``read_by``: what groups a file's key variables as the audit counts them.
    chunks(path, columns, rows, numeric) and first_rows(path, rows): the out-of-core reader
    (None: not supported). ``folder``: a folder of such files is one data set. header(path,
    **options): the column names in file order (duplicates included), reading only what names
    them (None: the whole file is read for them). ``reads_written``: its reader takes, for a file
    just written, what the writer says it put in each published column (``read(..., written=)``).

    Bounded reading (``microagg.read_limits``): ``magic`` are the first bytes of its files (a file
    of this format under another suffix is named for what it is; ``magic_means`` says what such
    bytes are when other files start with them too); check_header(f, name, size), given the
    open file, checks its first bytes and that what its header claims fits its ``size`` bytes and
    the limits in force; check_folder(path) does so for a folder data set. ``noun``: what one file
    is called in messages (default: "<label> file"), after ``article``.
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
    read_by: str = ""
    chunks: Callable | None = None
    first_rows: Callable | None = None
    folder: bool = False
    written_as: str | None = None
    magic: tuple = ()
    magic_means: str = ""
    check_header: Callable | None = None
    check_folder: Callable | None = None
    noun: str = ""
    article: str = (
        ""  # before ``noun`` (default by its first letter: "an SPSS file" says otherwise)
    )
    header: Callable | None = None
    reads_written: bool = False

    @property
    def read_only(self) -> bool:
        return self.write is None

    @property
    def file_noun(self) -> str:
        """'Stata file', 'SAS data set': what one file is called."""
        return self.noun or f"{self.label} file"

    @property
    def a_file(self) -> str:
        """'a Stata file', 'an SPSS file', 'a SAS data set'."""
        article = self.article or ("an" if self.file_noun[0].lower() in "aeiou" else "a")
        return f"{article} {self.file_noun}"

    @property
    def read_only_hint(self) -> str:
        """What to choose instead of a read-only format's suffix for an output (from the
        registry)."""
        if not self.read_only:
            return ""
        target = get(self.written_as) if self.written_as else None
        others = [f.suffixes[0] for f in all_formats() if not f.read_only and f is not target]
        choices = ([f"{target.suffixes[0]} ({target.label})"] if target else []) + others
        listed = ", ".join(choices[:-1]) + (" or " if len(choices) > 1 else "") + choices[-1]
        return (
            f"{self.file_noun}s ({', '.join(self.suffixes)}) can be read but not written: "
            f"choose an output ending in {listed}"
        )

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
    _REGISTRY.update(_ranked(found))


def _ranked(found: dict) -> dict:
    return dict(sorted(found.items(), key=lambda item: (item[1].rank, item[0])))


def register(fmt: Format) -> Format:
    """Add a format declared outside this package (a plugin, a test) to the registry."""
    _load()
    taken = {s for f in _REGISTRY.values() for s in f.suffixes} & set(fmt.suffixes)
    if fmt.name in _REGISTRY or taken:
        raise ValueError(
            f"file format {fmt.name!r} or its suffixes {sorted(taken)} are declared already"
        )
    found = dict(_REGISTRY, **{fmt.name: fmt})
    _REGISTRY.clear()
    _REGISTRY.update(_ranked(found))
    return fmt


def unregister(name: str) -> None:
    """Remove a format added by :func:`register`."""
    _load()
    _REGISTRY.pop(name, None)


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


def suffix_of(name) -> tuple[str, Format] | None:
    """(the suffix, the format) a file name ends with (longest suffix first, any case), or None."""
    lower = str(name).lower()
    by_suffix = sorted(
        ((s, fmt) for fmt in all_formats() for s in fmt.suffixes), key=lambda item: -len(item[0])
    )
    return next(((s, fmt) for s, fmt in by_suffix if lower.endswith(s)), None)


def read_suffixes() -> tuple:
    """Every suffix a format is read from, longest first (".csv.gz" before ".gz")."""
    return tuple(sorted((s for fmt in all_formats() for s in fmt.suffixes), key=len, reverse=True))


def output_suffix(input_name) -> str:
    """The suffix a protected copy of ``input_name`` is written with: the input's own when its
    format is written, else the first of the format it is written as (CSV's for an unknown one)."""
    found = suffix_of(input_name)
    if found is None:
        return get("csv").suffixes[0]
    suffix, fmt = found
    if not fmt.read_only:
        return suffix
    return get(fmt.written_as or "csv").suffixes[0]


def of_path(path) -> Format:
    """The format of ``path`` from its suffix (longest suffix first; a folder is a data set of the
    format that reads folders); FormatError listing the supported formats otherwise."""
    p = Path(path)
    if p.is_dir():
        return next(fmt for fmt in all_formats() if fmt.folder)
    found = suffix_of(p.name)
    if found is None:
        raise FormatError(f"unsupported file format: {p.name}; supported: {supported_text()}")
    return found[1]


def format_of(path) -> str:
    """The format name of ``path`` (``of_path``)."""
    return of_path(path).name
