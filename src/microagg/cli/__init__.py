"""Command line: microagg protect | evaluate | explore | methods | demo | app.

One module per command (``protect``, ``evaluate``, ``explore``, ``methods``, ``demo``, ``app``),
each declaring its own flags; ``parser`` builds the whole parser from them, ``running`` runs a
command and maps its outcome to an exit status, ``common`` holds what they share.

Exit status: 0 done; 2 a user error (one line on stderr, found before any computation, nothing
written); 1 an internal error (a bug: "internal error" and the traceback on stderr); 130 / 143
interrupted by Ctrl-C / SIGTERM (one line, no temporary or partial file left). Output files are
written atomically (temporary file in the target folder, then rename) and never over the input.
stdout carries only the summary or, with --json, exactly one JSON document: the computation runs
with file descriptor 1 pointed at stderr, so chatter from C libraries (HiGHS) cannot reach it.

Nothing heavy is imported at module level: ``microagg --help`` answers at once.
"""

from __future__ import annotations

from .common import (
    EXIT_INTERNAL_ERROR,
    EXIT_KEYS_BELOW_K,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USER_ERROR,
    UserError,
    progress_bar,
    stdout_to_stderr,
)
from .parser import build_parser
from .running import main

__all__ = [
    "main",
    "build_parser",
    "UserError",
    "progress_bar",
    "stdout_to_stderr",
    "EXIT_INTERNAL_ERROR",
    "EXIT_USER_ERROR",
    "EXIT_KEYS_BELOW_K",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
]
