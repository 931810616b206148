"""MkDocs hooks: the pages generated from the code at build time, so nothing is typed twice.

* ``index.md`` is README.md (the repository's front page), its ``docs/`` links made relative.
* ``<!-- generated:cli-reference -->`` becomes every command's ``--help``, from the argparse parser
  (``microagg.cli.build_parser``); ``<!-- generated:run-options -->`` the table of the run options
  (``microagg.options.RUN_OPTIONS``): name, flag, what a value must be, default, meaning.
* Figures that benchmark scripts write under ``benchmarks/results/`` are served as ``results/``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent


def on_config(config):
    """The checkout's package is the one documented and run by the tutorials, even where another
    one is installed (MkDocs restores sys.path after loading this module: hence here); the
    tutorials' subprocesses inherit it through PYTHONPATH."""
    src = str(ROOT / "src")
    if sys.path[0] != src:
        sys.path.insert(0, src)
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])])
    return config


def on_files(files, config):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    readme = readme.replace("](docs/", "](")
    files.append(File.generated(config, "index.md", content=readme))
    for png in sorted((ROOT / "benchmarks" / "results").glob("*.png")):
        files.append(File.generated(config, f"results/{png.name}", abs_src_path=str(png)))
    return files


def _cli_reference() -> str:
    from microagg.cli import build_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: one width for every build
    parser = build_parser()
    parts = ["## microagg", "", "```text", parser.format_help().rstrip(), "```", ""]
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in subparsers.choices.items():
        parts += [f"## microagg {name}", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def _cell(text: str) -> str:
    """A table cell's text: pipes escaped, one line, and braces as entities (attr_list would take
    ``{column: [levels]}`` at a cell's end for attributes and drop it)."""
    text = str(text).replace("|", "\\|").replace("\n", " ")
    return text.replace("{", "&#123;").replace("}", "&#125;")


def _run_options() -> str:
    from microagg.options import POSITIONAL, RUN_OPTIONS

    rows = [
        "| option (Python) | flag (command line) | value | default | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for p in RUN_OPTIONS:
        flag = ", ".join(f"`{f}`" for f in p.flags) or "API only"
        name = f"`{p.name}`" + (" (also by position)" if p.name in POSITIONAL else "")
        rows.append(
            f"| {name} | {flag} | {_cell(p.constraint())} | `{p.default!r}` | {_cell(p.doc)} |"
        )
    return "\n".join(rows)


_GENERATED = {"cli-reference": _cli_reference, "run-options": _run_options}


def on_page_markdown(markdown, page, config, files):
    return re.sub(r"<!-- generated:([a-z-]+) -->", lambda m: _GENERATED[m.group(1)](), markdown)
