"""The API reference (docs/reference/api.md, rendered by mkdocstrings from the docstrings) lists
the whole public API, and the docstrings it renders hold no raw Sphinx role and no link to a
page that does not exist (issue 56)."""

from __future__ import annotations

import importlib
import inspect
import pathlib
import re

import pytest

import microagg

ROOT = pathlib.Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference" / "api.md"
ROLE = re.compile(r":(?:class|func|meth|mod|attr|obj|data|exc):`")
PAGE = re.compile(r"docs/([\w./-]+\.md)")


def _resolve(path: str):
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            obj = inspect.getattr_static(obj, name) if inspect.isclass(obj) else getattr(obj, name)
        return obj
    raise LookupError(path)


def _documented() -> dict:
    paths = re.findall(r"^::: ([\w.]+)", REFERENCE.read_text(), re.M)
    return {path: _resolve(path) for path in paths}


def _public_objects() -> dict:
    """Every public function and class: microagg's names, the callables of its public modules,
    and the classes its calls return."""
    out = {}
    for name in microagg.__all__:
        if name == "__version__":
            continue
        obj = getattr(microagg, name)
        if inspect.ismodule(obj):
            for sub in ("names", "get", "load", "path"):
                if callable(getattr(obj, sub, None)) and sub in getattr(obj, "__all__", [sub]):
                    out[f"{name}.{sub}"] = getattr(obj, sub)
        else:
            out[name] = obj
    from microagg import io
    from microagg.measures import Audit
    from microagg.publication import PublishedFile

    out.update(
        Audit=Audit,
        Exploration=microagg.explore.Exploration,
        PublishedFile=PublishedFile,
        **{"io.read": io.read, "io.write": io.write},
    )
    return out


def test_every_public_function_and_class_is_in_the_reference():
    documented = list(_documented().values())
    missing = [
        name for name, obj in _public_objects().items() if not any(obj is d for d in documented)
    ]
    assert missing == []


@pytest.mark.parametrize("path", sorted(_documented()))
def test_the_reference_s_docstrings_hold_no_sphinx_role_nor_a_missing_page(path):
    obj = _resolve(path)
    docs = [inspect.getdoc(obj) or ""]
    assert docs[0], f"{path} has no docstring"
    if inspect.isclass(obj):
        docs += [
            inspect.getdoc(m) or ""
            for _, m in inspect.getmembers(obj)
            if callable(m) and (getattr(m, "__module__", None) or "").startswith("microagg")
        ]
    text = "\n".join(docs)
    assert not ROLE.search(text), ROLE.search(text)
    for page in PAGE.findall(text):
        assert (ROOT / "docs" / page).is_file(), page


def test_the_site_needs_no_network_for_its_fonts():
    assert re.search(r"^  font: false", (ROOT / "mkdocs.yml").read_text(), re.M)
