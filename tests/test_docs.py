"""The documentation (issue 46): the public modules' examples run as doctests; the pages the
site's navigation names exist; the generated reference covers every run option and command."""

from __future__ import annotations

import doctest
import re
import warnings
from pathlib import Path

import pytest

import microagg

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_MODULES = [
    "microagg.api",
    "microagg.explore",
    "microagg.sklearn",
    "microagg.frames",
    "microagg.public_types",
]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_docstring_examples_run(name):
    import importlib

    module = importlib.import_module(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = doctest.testmod(
            module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        )
    assert result.failed == 0


def test_the_public_functions_have_examples():
    for function in (microagg.microaggregate, microagg.explore.explore, microagg.MicroAggregator):
        assert ">>> " in function.__doc__, function


def test_every_page_of_the_navigation_exists():
    nav = re.findall(r":\s*([\w/.-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert len(nav) > 20
    missing = [page for page in nav if page != "index.md" and not (ROOT / "docs" / page).exists()]
    assert missing == []


def test_the_generated_reference_lists_every_option_and_command():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install '.[docs]')")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    table, reference = hooks._run_options(), hooks._cli_reference()
    from microagg.options import RUN_OPTIONS

    assert all(f"| `{p.name}`" in table for p in RUN_OPTIONS)
    for command in ("protect", "evaluate", "explore", "methods", "demo", "app"):
        assert f"## microagg {command}" in reference


def test_benchmark_blocks_are_found_in_readme_or_the_docs():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from _common import marked_page
    finally:
        sys.path.pop(0)
    for marker in ("il-table", "explore-budget", "mdav-scaling", "cli-startup", "partitioned-il"):
        assert marked_page(marker).suffix == ".md"
