"""The app's private folders and what an error line may say: a session's uploads, results and
reports live in a folder only this user can read (mode 0700), and no line the page shows names
a path inside one (it holds the session id): only the file's own name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: Private folders (the app's, its sessions'): no error line shows a path inside one.
_PRIVATE_ROOTS: set = set()
#: a path in any app's private folder
_PRIVATE_PATH = re.compile(r"""[^\s'"]*microagg-app-[^\s'"]*""")


def private_text(text: str, roots=()) -> str:
    """``text`` with every path inside a private folder (which holds the session id) replaced by
    the file's own name: error lines name the file the user gave, never where the app keeps it."""
    for root in sorted({*map(str, roots), *_PRIVATE_ROOTS}, key=len, reverse=True):
        text = re.sub(re.escape(root) + r"""[^\s'"]*""", lambda m: Path(m.group()).name, text)
    return _PRIVATE_PATH.sub(lambda m: Path(m.group()).name, text)


def one_line(exc: BaseException, roots=()) -> str:
    """The message shown for an error: one line, never a traceback, never a private path.

    A user error (InputError and its family) shows its own first line; anything else is named as
    an internal error with its type, so a bug is recognisable without leaking a traceback.
    """
    from ..errors import InputError

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = private_text(text, roots)
    if isinstance(exc, InputError):
        return text
    return f"internal error ({type(exc).__name__}): {text}"


def private_workdir() -> Path:
    """A folder only this user can read (mode 0700), for uploads, results and reports; no error
    line shows a path inside it (``private_text``)."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="microagg-app-"))
    _PRIVATE_ROOTS.update({str(path), os.path.realpath(path)})
    return path


def cleanup_workdir(path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
