"""The command line's front door (issue 46): --version, no command or an unknown one, one
'microagg:' prefix on every error, help generated from the declarations that says what a flag does.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import microagg
from microagg.cli import build_parser


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "microagg.cli", *args], capture_output=True, text=True
    )


def test_version():
    done = _run("--version")
    assert (
        done.returncode == 0
        and done.stdout == f"microagg {microagg.__version__}\n"
        and done.stderr == ""
    )


@pytest.mark.parametrize(
    "args, needle",
    [
        ((), "no command given: microagg COMMAND, one of protect, evaluate, explore"),
        (
            ("report",),
            (
                "no command 'report': the HTML report is written by 'microagg protect IN -o OUT"
                " --report"
            ),
        ),
        (
            ("bogus",),
            "no command 'bogus': the commands are protect, evaluate, explore, methods, demo,"
            " compile, app",
        ),
        (("protect",), "protect: the following arguments are required: input, -o/--output"),
        (
            ("protect", "in.csv", "-o", "out.csv"),
            "protect: the following arguments are required: -k",
        ),
        (("methods", "--bogus"), "unrecognized arguments: --bogus"),
    ],
)
def test_every_error_is_one_line_with_one_prefix(args, needle, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "microagg.cli", *args], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("microagg: error: ")
    assert done.stderr.count("microagg:") == 1 and needle in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_protect_help_is_generated_from_the_options_and_true_about_k():
    from microagg.options import RUN_OPTIONS

    protect = build_parser()._subparsers._group_actions[0].choices["protect"]
    helps = {a.dest: a.help for a in protect._actions}
    assert "required, unless --from-explore" in helps["k"] and "default 3" not in helps["k"]
    for p in RUN_OPTIONS:
        if p.flags:
            assert p.doc in helps[p.name], p.name  # the declaration's meaning, not a second text
