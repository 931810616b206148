"""The typed public API (issue 46): each signature held against the declarations, as
scikit-learn's common tests hold ``__init__`` against ``_parameter_constraints``; the method
parameters' TypedDict against the registry; pyright on scripts that call the API; the docstrings
documenting every parameter; the version from one source."""

from __future__ import annotations

import inspect
import json
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import microagg
from microagg import methods
from microagg.options import GRID_OPTIONS, POSITIONAL, RUN_OPTIONS, option, signature

ROOT = Path(__file__).resolve().parent.parent
P = inspect.Parameter


def _typed_dict(name: str) -> dict:
    from microagg.options import generated

    return getattr(generated, name).__annotations__


def _unpacked(function) -> str:
    """The annotation of a function's ``**options`` (a string: annotations are postponed)."""
    (var,) = [p for p in inspect.signature(function).parameters.values() if p.kind is P.VAR_KEYWORD]
    assert var.name == "options"
    return var.annotation


def test_microaggregate_signature_is_the_declared_one():
    """Names, order, defaults and kinds: the literal signature (data, the positional options,
    **options) and the one generated from RUN_OPTIONS (options.signature) are the same; the
    keyword-only options and the method's parameters come as **options, typed by the TypedDict
    generated from the table."""
    sig, declared = inspect.signature(microagg.microaggregate), signature()
    assert [(p.name, p.kind, p.default) for p in sig.parameters.values()] == [
        (p.name, p.kind, p.default) for p in declared.parameters.values()
    ]
    assert [p for p in sig.parameters][1 : len(POSITIONAL) + 1] == list(POSITIONAL)
    assert all(sig.parameters[name].annotation is not P.empty for name in sig.parameters)
    assert sig.return_annotation == "Result"
    assert _unpacked(microagg.microaggregate) == "Unpack[MicroaggregateOptions]"
    assert list(_typed_dict("PositionalOptions")) == list(POSITIONAL)
    assert list(_typed_dict("KeywordOptions")) == [
        p.name for p in RUN_OPTIONS if p.name not in POSITIONAL
    ]
    assert list(_typed_dict("RunOptions")) == list(POSITIONAL) + list(_typed_dict("KeywordOptions"))


def test_explore_takes_the_grid_options_typed_and_refuses_another_name():
    sig = inspect.signature(microagg.explore.explore)
    own = [
        "data",
        "k",
        "methods",
        "time_limit",
        "risk",
        "max_risk",
        "method_params",
        "previous",
        "progress",
        "input_info",
    ]
    assert list(sig.parameters) == [*own, "options"]
    assert _unpacked(microagg.explore.explore) == "Unpack[GridOptions]"
    assert list(_typed_dict("GridOptions")) == list(GRID_OPTIONS)
    with pytest.raises(TypeError, match="unexpected keyword argument 'stratta'"):
        microagg.explore([[1.0]], k=[3], stratta="REGION")  # a typo: before any work


def test_every_option_is_documented_where_a_user_reads_it():
    """Each TypedDict field carries its option's meaning as its docstring (IDEs and the API
    reference show it), and the API reference page renders RunOptions and GridOptions."""
    import ast

    from microagg.options import generated

    tree = ast.parse(Path(generated.__file__).read_text())
    documented = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Options"):
            body = node.body
            for field, doc in zip(body, body[1:], strict=False):
                if isinstance(field, ast.AnnAssign) and isinstance(doc, ast.Expr):
                    documented[(node.name, field.target.id)] = " ".join(doc.value.value.split())
    for p in RUN_OPTIONS:
        where = "PositionalOptions" if p.name in POSITIONAL else "KeywordOptions"
        assert documented[(where, p.name)] == " ".join(p.doc.split()), p.name
    assert all(documented[("GridOptions", name)] for name in GRID_OPTIONS)
    page = (ROOT / "docs" / "reference" / "api.md").read_text()
    for name in ("RunOptions", "PositionalOptions", "KeywordOptions", "GridOptions"):
        assert f"::: microagg.options.generated.{name}" in page


def _literal_values(annotation: str) -> tuple:
    return typing.get_args(getattr(microagg.public_types, annotation))


@pytest.mark.parametrize(
    "name, alias",
    [("distance", "Distance"), ("aggregation", "Aggregation"), ("merged_strata", "MergedStrata")],
)
def test_literal_types_list_the_declared_choices(name, alias):
    assert set(_literal_values(alias)) == set(option(name).allowed())


def test_method_params_types_every_registered_parameter():
    declared = {name for info in methods.all_methods() for name in info.params}
    assert set(microagg.public_types.MethodParams.__annotations__) == declared


def _documented(doc: str) -> list[str]:
    """The names in a numpydoc Parameters section ('a, b : type' lines; '**params')."""
    section = doc.split("Parameters\n    ----------\n", 1)[1].split("\n\n    Returns", 1)[0]
    names = []
    for line in section.splitlines():
        if line.startswith("    ") and not line.startswith("        ") and line.strip():
            head = line.strip().split(" : ", 1)[0]
            names += [n.strip().lstrip("*") for n in head.split(",")]
    return names


@pytest.mark.parametrize(
    "function", [microagg.microaggregate, microagg.explore.explore, microagg.protect]
)
def test_the_docstring_documents_every_parameter_in_order(function):
    assert _documented(function.__doc__) == list(inspect.signature(function).parameters)


def test_version_has_one_source():
    from importlib.metadata import version

    assert microagg.__version__ == version("microagg")
    done = subprocess.run(
        [sys.executable, "-m", "microagg.cli", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == f"microagg {microagg.__version__}"


def test_the_package_ships_py_typed():
    assert (ROOT / "src" / "microagg" / "py.typed").exists()
    assert '"microagg" = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()


def _pyright(tmp_path, *files) -> dict:
    exe = shutil.which("pyright")
    if exe is None:
        pytest.skip("pyright is not installed (pip install '.[test]')")
    (tmp_path / "pyrightconfig.json").write_text(
        json.dumps({"extraPaths": [str(ROOT / "src")], "pythonVersion": "3.10"})
    )
    done = subprocess.run(
        [exe, "--outputjson", *map(str, files)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    return json.loads(done.stdout)


def test_pyright_reports_a_misspelt_option(tmp_path):
    report = _pyright(tmp_path, ROOT / "tests" / "typing" / "misspelt_option.py")
    errors = [
        (d["range"]["start"]["line"] + 1, d["message"])
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    lines = sorted({line for line, _ in errors})
    assert lines == [6, 7, 8, 9, 10, 11], errors
    messages = " ".join(m for _, m in errors)
    assert all(re.search(rf'"{word}"', messages) for word in ("colums", "gama", "stratta")), (
        messages
    )


def test_pyright_is_clean_on_the_public_api(tmp_path):
    src = ROOT / "src" / "microagg"
    report = _pyright(
        tmp_path,
        ROOT / "tests" / "typing" / "public_api.py",
        src / "__init__.py",
        src / "public_types.py",
        src / "sklearn.py",
        src / "frames.py",
    )
    errors = [
        f"{d['file']}:{d['range']['start']['line'] + 1}: {d['message']}"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert errors == []


def test_protect_takes_every_run_option_typed():
    """microagg.protect(input, output, *, its own keywords, **options) -> Result: the run options
    (all of them, by keyword) and the method's parameters come as **options, typed by
    ProtectOptions (RunOptions and MethodParams); its own keywords are none of them."""
    from microagg.publication import protect

    sig = inspect.signature(protect)
    assert _unpacked(protect) == "Unpack[ProtectOptions]"
    assert not {p.name for p in RUN_OPTIONS} & set(sig.parameters)
    assert [p.kind for p in sig.parameters.values()][-1] is P.VAR_KEYWORD
    assert sig.return_annotation == "Result"


def test_pyright_reports_a_misspelt_option_read_from_a_run(tmp_path):
    """options.Run is a typed dataclass: reading a misspelt option, or an option as the wrong type,
    is a type error, not an AttributeError at run time."""
    report = _pyright(tmp_path, ROOT / "tests" / "typing" / "misspelt_run_field.py")
    errors = [
        (d["range"]["start"]["line"] + 1, d["message"])
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert sorted({line for line, _ in errors}) == [9, 10], errors
    assert '"colums"' in " ".join(m for line, m in errors if line == 9)
