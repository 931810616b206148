"""Files this run writes: atomic writes, the temporaries an interrupt removes, and the checks of
output paths made before any work.

Writes are atomic (temporary file in the target folder, then one rename) and the temporary
files are registered, so an interrupted run can remove them (:func:`remove_temporaries`). A place
that cannot be written is found before any work by trying it (a probe file created and removed),
so running as a user who may write anywhere, or on a read-only mount, gives the same one line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = [
    "register_temporary",
    "unregister_temporary",
    "remove_temporaries",
    "atomic_write",
    "atomic_write_text",
    "StagedFile",
    "stage_file",
    "stage_folder",
    "atomic_folder",
    "same_file",
    "check_folder",
    "check_side_file",
    "check_output_path",
]

_TEMPORARIES: set = set()
_TEMP_LOCK = threading.Lock()


def register_temporary(path) -> None:
    """Have ``remove_temporaries`` (the command line's Ctrl+C / SIGTERM handler) remove ``path``
    if the process is interrupted before ``unregister_temporary(path)``."""
    with _TEMP_LOCK:
        _TEMPORARIES.add(str(path))


def unregister_temporary(path) -> None:
    with _TEMP_LOCK:
        _TEMPORARIES.discard(str(path))


def remove_temporaries() -> None:
    """Remove every temporary file or folder an atomic write has not finished (signal handlers)."""
    with _TEMP_LOCK:
        paths = list(_TEMPORARIES)
        _TEMPORARIES.clear()
    for p in paths:
        try:
            if os.path.isdir(p):
                shutil.rmtree(p, ignore_errors=True)
            elif os.path.lexists(p):
                os.unlink(p)
        except OSError:
            pass


def _usual_mode(path, base: int) -> None:
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, base & ~umask)  # mkstemp/mkdtemp create 0600/0700; give the usual permissions


@dataclass(frozen=True)
class StagedFile:
    """A file written in full as a temporary beside its target, not yet in place: ``land`` renames
    it into place in one step, ``discard`` removes it (a publication reads it back, verifies and
    audits it in between). ``written``: what a writer that keeps the input's bytes says it put in
    each published column (CSV: ``csv.writer.Written`` by name), else None."""

    path: Path
    temporary: Path
    format: str | None = None
    written: Any = None

    def land(self) -> Path:
        """Rename the temporary into place (one rename: readers never see half a file; a folder
        only where none is)."""
        try:
            if os.path.isdir(self.temporary):
                _usual_mode(self.temporary, 0o777)
                os.rename(self.temporary, self.path)
            else:
                _usual_mode(self.temporary, 0o666)
                os.replace(self.temporary, self.path)
        except OSError as exc:
            raise InputError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        finally:
            self.discard()
        return self.path

    def discard(self) -> None:
        """Remove the temporary if it is still there (after a failure; nothing once landed)."""
        if os.path.isdir(self.temporary) and not os.path.islink(self.temporary):
            shutil.rmtree(self.temporary, ignore_errors=True)
        elif os.path.lexists(self.temporary):
            with contextlib.suppress(OSError):
                os.unlink(self.temporary)
        unregister_temporary(self.temporary)


def stage_file(path, write, format: str | None = None) -> StagedFile:
    """``write(tmp_path)`` fills a temporary file in ``path``'s folder: the file staged, not in
    place (``StagedFile.land``). What ``write`` returns is the staged file's ``written``. A
    place that cannot be written (permissions, a full disk, a read-only mount) is one
    InputError, and a failed write leaves no temporary."""
    path = Path(path)
    try:
        with (
            _TEMP_LOCK
        ):  # created and registered in one step: a Ctrl+C handler sees both or neither
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            _TEMPORARIES.add(str(tmp))
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    return _filled(StagedFile(path, Path(tmp), format), write)


def stage_folder(path, fill, format: str | None = None) -> StagedFile:
    """``fill(tmp_dir)`` fills a temporary folder beside ``path``: the folder staged, not in place
    (``StagedFile.land`` renames it; ``path`` must not exist then). What ``fill`` returns is the
    staged folder's ``written``; a failed fill leaves no temporary."""
    path = Path(path)
    try:
        with _TEMP_LOCK:  # created and registered in one step (as in stage_file)
            tmp = tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent)
            _TEMPORARIES.add(str(tmp))
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return _filled(StagedFile(path, Path(tmp), format), fill)


def _filled(staged: StagedFile, fill) -> StagedFile:
    """The staged temporary filled by ``fill(temporary)`` (its return: ``written``); if it
    fails, the temporary goes (a place that cannot be written: one InputError)."""
    try:
        written = fill(staged.temporary)
    except OSError as exc:
        staged.discard()
        raise InputError(f"cannot write {staged.path}: {exc.strerror or exc}") from None
    except BaseException:
        staged.discard()
        raise
    return StagedFile(staged.path, staged.temporary, staged.format, written)


def atomic_write(path, write) -> Path:
    """Write a file atomically: ``write(tmp_path)`` fills a temporary file in the same folder,
    which then replaces ``path`` in one rename, so readers never see a half-written file. A
    place that cannot be written (permissions, a full disk, a read-only mount) is one InputError."""
    return stage_file(path, write).land()


def atomic_write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def atomic_folder(path, fill) -> Path:
    """Create the folder ``path`` atomically: ``fill(tmp_dir)`` fills a temporary folder beside it,
    which is then renamed; ``path`` must not exist."""
    return stage_folder(path, fill).land()


def same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` name the same file (also through a symlink, a hard link or '..')."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_folder(folder: Path, what: str) -> None:
    """The folder a file of this run goes to exists, is a folder and can be written: a probe file
    is created in it and removed (os.access alone says yes to root on a read-only mount)."""
    if not folder.exists():
        raise InputError(f"{what} folder does not exist: {folder}")
    if not folder.is_dir():
        raise InputError(f"{what} folder is not a folder: {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{what} folder is not writable: {folder}")
    try:
        with _TEMP_LOCK:
            fd, probe = tempfile.mkstemp(prefix=".microagg-probe.", dir=folder)
            _TEMPORARIES.add(probe)
        os.close(fd)
        os.unlink(probe)
        unregister_temporary(probe)
    except OSError as exc:
        raise InputError(
            f"{what} folder is not writable: {folder} ({exc.strerror or exc})"
        ) from None


def check_side_file(path, what: str, *taken) -> Path:
    """A text file written beside the output (labels, ...): a writable file in an existing folder,
    none of the run's other files (``taken``; None entries are ignored)."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"the {what} file is a directory: {path}")
    check_folder(path.parent, what)
    if any(t is not None and same_file(path, Path(t)) for t in taken):
        raise InputError(f"refusing to write the {what} over another file of this run: {path}")
    for (
        t
    ) in taken:  # a Parquet dataset folder: a text file among its data files makes it unreadable
        if t is not None and Path(t).is_dir() and Path(t).resolve() in path.resolve().parents:
            raise InputError(f"refusing to write the {what} inside the input folder {t}")
    return path


def check_output_path(path, source=None, *, folder: bool = False) -> Path:
    """Fail before any work if ``path`` cannot be written: unsupported or read-only format, a
    directory, a missing or unwritable folder, or the input itself. ``folder=True``: the output
    is a new folder (out-of-core)."""
    path = Path(path)
    if source is not None and same_file(path, Path(source)):
        raise InputError(f"refusing to write the output over the input file {path}")
    if (
        source is not None
        and Path(source).is_dir()
        and Path(source).resolve() in path.resolve().parents
    ):
        raise InputError(f"refusing to write the output inside the input folder {source}")
    check_folder(path.parent, "output")
    if folder:
        if path.exists():
            raise InputError(f"output folder already exists: {path} (choose a new folder name)")
        return path
    if path.is_dir():
        raise InputError(f"output is a directory: {path} (give a file name)")
    from .formats import FormatError, of_path

    fmt = of_path(path)
    if fmt.read_only:
        raise FormatError(fmt.read_only_hint)
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"output file is not writable: {path}")
    return path
