"""Running a command: its outcome mapped to an exit status, signals, warnings.

Exit status: 0 done; 2 a user error (one line on stderr, found before any computation, nothing
written); 1 an internal error (a bug: "internal error" and the traceback on stderr); 130 / 143
interrupted by Ctrl-C / SIGTERM (one line, no temporary or partial file left). The command runs
in a worker thread while the main thread waits in short steps, so a signal is handled at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import traceback
import warnings

from ..deadline import mark_command_thread
from ..errors import InputError, command_line_terms
from .common import (
    EXIT_INTERNAL_ERROR,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USER_ERROR,
    UserError,
    memory_mb,
    one_line,
    print_error,
)
from .parser import build_parser


def _run_command(args) -> int:
    """Run the command; map its outcome to an exit status (in the thread that runs it)."""
    try:
        from ..read_limits import memory_budget

        with memory_budget(memory_mb(getattr(args, "max_memory_mb", None))):
            return args.func(args)
    except InputError as exc:  # exactly the user errors: ours, argparse's, the library's family
        return print_error(exc)
    except BrokenPipeError:  # e.g. piped into head: not an error of ours
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")
        return 0
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except Exception as exc:  # a bug of ours: say so, with the traceback
        print(f"microagg: internal error: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return EXIT_INTERNAL_ERROR


def _on_signal(signum, frame):  # noqa: ARG001
    """Ctrl-C / SIGTERM: remove unfinished temporary files, one line, exit at once (even while a
    numba kernel or HiGHS runs in the worker thread)."""
    from ..io import remove_temporaries

    remove_temporaries()
    code, word = (
        (EXIT_SIGINT, "interrupted") if signum == signal.SIGINT else (EXIT_SIGTERM, "terminated")
    )
    with contextlib.suppress(Exception):
        os.write(2, f"\nmicroagg: {word}\n".encode())
    os._exit(code)


def _run_in_worker(args) -> int:
    """The command runs in a worker thread while the main thread waits in short steps, so a signal
    handler runs promptly whatever the worker is doing (numba kernels release the GIL)."""
    box = {"code": EXIT_INTERNAL_ERROR}

    def work():
        box["code"] = _run_command(args)

    worker = threading.Thread(target=work, name="microagg-command", daemon=True)
    mark_command_thread(worker)  # it stands in for the main thread (auto may run its second thread)
    worker.start()
    while worker.is_alive():
        worker.join(0.1)
    return box["code"]


def main(argv=None) -> int:
    """Run the command line; returns the exit status. Warnings are shown (one line each, on
    stderr) when the command ends, and only if it did not fail on a user error, whose one line is
    then all that stderr holds."""
    shown: list = []

    def keep_warning(message, category, filename, lineno, file=None, line=None):
        text = "microagg: warning: " + " ".join(
            str(message).split()
        )  # one line (pandas' may hold many)
        if text not in shown:
            shown.append(text)

    saved_show = warnings.showwarning
    warnings.showwarning = keep_warning
    code = EXIT_INTERNAL_ERROR
    args = None
    try:
        try:
            args = build_parser().parse_args(argv)
        except UserError as exc:
            code = print_error(exc)
            return code
        with command_line_terms():  # messages name options by their flags (--columns)
            code = _run(args)
        return code
    finally:
        warnings.showwarning = saved_show
        if code != EXIT_USER_ERROR:
            _show_warnings(shown, quiet=getattr(args, "quiet", False))


def _run(args) -> int:
    """The command, in a worker thread under our signal handlers when called from the main
    thread (else, as from the app's tests, in this thread)."""
    if threading.current_thread() is not threading.main_thread():
        return _run_command(args)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in handlers:
        signal.signal(s, _on_signal)
    try:
        return _run_in_worker(args)
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)


def _show_warnings(shown: list, quiet: bool) -> None:
    """The run's warnings, one line each; with -q the default-column table is only counted."""
    table = [t for t in shown if t.startswith("microagg: warning: not protected, ")]
    if table and quiet:  # -q: the default-column table's count only
        shown = [t for t in shown if t not in table]
        print(
            f"microagg: {len(table)} warning(s) on columns left out of the default "
            "quasi-identifiers "
            "(run without -q to see them)",
            file=sys.stderr,
        )
    for text in shown:
        print(text, file=sys.stderr)
