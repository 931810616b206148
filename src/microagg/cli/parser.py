"""The command line's parser: the root (``microagg --version``), then each command declaring its
own flags (``declare`` in its module).

The run options' flags (-k, --method, --columns, --time-limit, --strata, ...) are generated from
their declarations (``microagg.options.RUN_OPTIONS``) and validated by them, all before the data
are read, exactly as the API validates them.
"""

from __future__ import annotations

from . import app, demo, evaluate, explore, methods, protect
from . import compile as compile_command
from .common import Parser

#: the commands, in the order ``microagg --help`` lists them
COMMANDS = (protect, evaluate, explore, methods, demo, compile_command, app)


def build_parser() -> Parser:
    """The root parser and every command's subparser."""
    from .. import __version__

    parser = Parser(
        prog="microagg",
        description="Microaggregation of numeric microdata (k-anonymity by group means).",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"microagg {__version__}",
        help="print the installed version and exit",
    )
    commands = parser.add_subparsers(dest="command", parser_class=Parser, metavar="COMMAND")
    commands.required = True
    for command in COMMANDS:
        command.declare(commands)
    return parser
