"""``microagg compile``: compile every kernel once after an install (``microagg.compiling``)."""

from __future__ import annotations

import sys

from .common import stdout_to_stderr


def declare(commands) -> None:
    """The compile command and its flags."""
    co = commands.add_parser(
        "compile",
        help="compile every kernel once after an install (a first call then runs as a second)",
        description=(
            "Compile every numba kernel microagg runs, for every method and size, into numba's"
            " on-disk cache (NUMBA_CACHE_DIR, else beside the package): run once after an install,"
            " so that the first call of a notebook or a script does not compile. Run again, it"
            " loads the cached kernels and compiles nothing."
        ),
    )
    co.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    co.set_defaults(func=run)


def run(args) -> int:
    """microagg compile: every step of ``compiling.tasks()``, then one line on stdout."""
    from numba.core import config

    from ..compiling import compile_all
    from ..progress import channel

    # a bar on a terminal, a line a step in a pipe or a log (nothing with --quiet)
    with stdout_to_stderr(), channel(not args.quiet, None, "microagg compile") as report:
        done = compile_all(report)
    where = config.CACHE_DIR or "beside the package (__pycache__)"
    print(
        f"microagg compile: {done['kernels']} kernels compiled in {done['seconds']:.1f} s"
        f" ({done['steps']} steps); numba's cache: {where}",
        file=sys.stdout,
        flush=True,
    )
    return 0
