"""What every command shares: the parser's one-line errors, the exit statuses, the read options'
flags, and the output channels (stdout for the summary or one JSON document, stderr for the rest).

Nothing heavy is imported here: ``microagg --help`` answers at once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from ..declarations import Param
from ..errors import InputError

EXIT_INTERNAL_ERROR = 1
EXIT_USER_ERROR = 2
EXIT_KEYS_BELOW_K = (
    3  # --on-keys-below-k report: the file is written, but not k-anonymous on its keys
)
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

#: the rank-interval percentage of interval disclosure (evaluate, and protect's report)
INTERVAL_P = Param(
    "interval_p",
    "float",
    10.0,
    "rank-interval percentage for interval disclosure",
    low=0.0,
    high=100.0,
    flags=("--interval-p",),
    metavar="P",
)


class UserError(InputError):
    """An error in what the user asked; reported in one line, exit status 2."""


#: what a command that does not exist probably meant
NOT_A_COMMAND = {
    "report": (
        "the HTML report is written by 'microagg protect IN -o OUT --report REPORT.html' (or "
        "'microagg explore IN --report MAP.html')"
    ),
    "version": "'microagg --version' prints the version",
}


class Parser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line, raised (main prints it once, with the one
    ``microagg: error:`` prefix, and exits 2): a subcommand's name its errors, the unknown or
    missing command a line listing the commands."""

    def error(self, message):
        words = self.prog.split()[1:]  # "microagg protect" -> ["protect"]
        if not words:
            commands = ", ".join(command_names(self))
            if "required: COMMAND" in message:
                message = f"no command given: microagg COMMAND, one of {commands} (microagg --help)"
            elif message.startswith("argument COMMAND: invalid choice:"):
                given = message.split("invalid choice:", 1)[1].split("(", 1)[0].strip().strip("'")
                hint = NOT_A_COMMAND.get(given)
                message = (
                    f"no command {given!r}: "
                    + (f"{hint}; " if hint else "")
                    + f"the commands are {commands}"
                )
        raise UserError(f"{words[0]}: {message}" if words else message)


def command_names(parser) -> list[str]:
    """The commands a parser holds, in the order declared."""
    return [
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]


#: the longest error line printed (a message quoting a 10 MB field is cut, saying so)
MAX_ERROR_CHARS = 600


def one_line(exc: BaseException) -> str:
    """An error as the one line the command line prints."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    if len(line) > MAX_ERROR_CHARS:
        line = f"{line[: MAX_ERROR_CHARS - 40]}... ({len(line):,} characters in all)"
    return line


def print_error(exc: BaseException) -> int:
    """The one-line error exit: ``microagg: error: ...`` on stderr; returns the exit status 2."""
    print(f"microagg: error: {one_line(exc)}", file=sys.stderr)
    return EXIT_USER_ERROR


# --- flags several commands share -------------------------------------------------------------


def parse_param(text: str) -> tuple[str, str]:
    """NAME=VALUE -> (name, raw text); the value is typed by the method's declaration."""
    from ..options import RUN_OPTIONS

    if "=" not in text:
        raise UserError(f"--param expects NAME=VALUE, got {text!r}")
    name, raw = text.split("=", 1)
    name = name.strip().replace("-", "_")
    if not name:
        raise UserError(f"--param expects NAME=VALUE, got {text!r}")
    declared = {p.name: p for p in RUN_OPTIONS}
    if name in declared or name == "deadline":
        flag = declared[name].flags[0] if name in declared and declared[name].flags else None
        raise UserError(
            f"--param {name}=... is not a method parameter"
            + (f": use the {flag} option" if flag else "")
        )
    return name, raw.strip()


def interval_p(args, default=None):
    """--interval-p, validated by its declaration (errors name the flag)."""
    from dataclasses import replace

    if args.interval_p is None:
        return default
    shown = replace(INTERVAL_P, name="--interval-p")
    return shown.validate(shown.parse(args.interval_p, None), None)


def read_options(args) -> dict:
    """The reader's options: the CSV dialect, the Excel sheet and the missing-value tokens."""
    return {
        "sep": args.sep,
        "decimal": args.decimal,
        "encoding": args.encoding,
        "sheet": args.sheet,
        "missing": tuple(t for t in (args.missing or "").split(",") if t.strip()),
    }


def add_read_options(p, missing: bool = True) -> None:
    """The reader's flags: the CSV dialect, the Excel sheet, the memory budget (and --missing)."""
    p.add_argument(
        "--sep", help="CSV field separator (default: detected among , ; tab |); 'tab' for a tab"
    )
    p.add_argument("--decimal", choices=(".", ","), help="CSV decimal mark (default: detected)")
    p.add_argument(
        "--encoding",
        help="CSV text encoding (default: UTF-8 with or without BOM, else cp1252/latin-1)",
    )
    p.add_argument("--sheet", help="Excel: the worksheet to read (default: the first)")
    p.add_argument(
        "--max-memory-mb",
        metavar="MB",
        help=(
            "the memory the whole call may take, what the process holds included: "
            "decompressed text at most an 11th of what is left, the cells a "
            "file claims at their size in memory (default: half of this machine's memory)"
        ),
    )
    if missing:
        p.add_argument(
            "--missing",
            metavar="TOKEN,...",
            help=(
                "text tokens that mean 'missing' (e.g. '-,.,n/a'); a missing value in a "
                "quasi-identifier is still an error, other columns are written unchanged"
            ),
        )


def positive_number(text: str, flag: str, unit: str) -> float:
    """A flag's finite number > 0 (one line naming the flag otherwise)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{flag} must be a number of {unit}, got {str(text)[:40]!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"{flag} must be a number > 0, got {str(text)[:40]!r}")
    return value


def memory_mb(text) -> float | None:
    """--max-memory-mb: a number of megabytes > 0 (None: the default)."""
    return None if text is None else positive_number(text, "--max-memory-mb", "megabytes")


# --- output ----------------------------------------------------------------------------------


def print_json(obj) -> None:
    """One JSON document on stdout (``manifest.json_safe``: numpy values as Python, non-finite
    floats as null)."""
    import json

    from ..manifest import json_safe

    print(json.dumps(json_safe(obj), ensure_ascii=False))


@contextlib.contextmanager
def stdout_to_stderr():
    """Point file descriptor 1 (and sys.stdout) at stderr while third-party code runs: C libraries
    such as HiGHS print their banners on fd 1, which must carry only our summary or JSON."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no fd 1 (closed): nothing to protect
        saved = None
    if saved is not None:
        os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


@contextlib.contextmanager
def progress_bar(enabled: bool, time_limit, description: str):
    """The one progress channel of the run: a bar on stderr (microagg.progress) when stderr is a
    terminal, or nothing (a log file or a pipe gets no bar)."""
    if not enabled or not isatty(sys.stderr):
        from ..progress import compile_notice

        yield compile_notice() if enabled else None  # no bar: one line if kernels compile
        return
    from ..progress import stderr_bar

    with stderr_bar(time_limit, description) as callback:
        yield callback


def isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
