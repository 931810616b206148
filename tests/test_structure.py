"""The package's shape (issue "Rooms and names"): no import cycle, short modules and functions,
every numba kernel under ``kernels/``. Every import counts, a function's deferred one included."""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "src" / "microagg"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80  # outside kernels/; a docstring counts, the entry points' too


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: pathlib.Path, known: set[str]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(name, path, known) for name, path in modules.items()}
    for (
        name
    ) in graph:  # importing a.b.c runs a/__init__ and a/b/__init__ first: not an edge we count
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    import sys

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def long_modules() -> list[tuple[str, int]]:
    return [
        (n, len(p.read_text().splitlines()))
        for n, p in _modules().items()
        if len(p.read_text().splitlines()) > MAX_MODULE_LINES
    ]


def long_functions() -> list[tuple[str, int]]:
    out = []
    for name, path in _modules().items():
        if ".kernels" in name:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1  # the docstring counts
                if length > MAX_FUNCTION_LINES:
                    out.append((f"{name}.{node.name}", length))
    return out


def numba_outside_kernels() -> list[str]:
    out = []
    for name, path in _modules().items():
        if ".kernels" in name:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for deco in node.decorator_list:
                    text = ast.unparse(deco)
                    if text.split("(")[0] in (
                        "kernel",
                        "njit",
                        "jit",
                        "numba.njit",
                        "numba.jit",
                        "vectorize",
                        "numba.vectorize",
                    ):
                        out.append(f"{name}.{node.name}")
    return out


def shared_names() -> dict[str, list[str]]:
    """File names held by more than one module of the package, each with its modules (issue 58:
    one name per concept, every module's name saying what is in it). ``__init__.py`` and
    ``__main__.py`` are a package's own files, not names."""
    held: dict[str, list[str]] = {}
    for name, path in _modules().items():
        if path.stem not in ("__init__", "__main__"):
            held.setdefault(path.name, []).append(name)
    return {stem: sorted(names) for stem, names in sorted(held.items()) if len(names) > 1}


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]])
def test_ruff_is_clean(command):
    """The linter and formatter configured in pyproject.toml pass on the whole repository."""
    import subprocess
    import sys

    root = PACKAGE.parents[1]
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "."], cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]


def test_the_import_graph_has_no_cycle():
    assert cycles(import_graph()) == []


def test_no_module_is_over_600_lines():
    assert long_modules() == []


def test_no_function_outside_kernels_is_over_80_lines():
    assert long_functions() == []


def test_every_numba_kernel_lives_under_kernels():
    assert numba_outside_kernels() == []


def test_no_two_modules_share_a_name():
    """No two modules of src/microagg have the same file name (issue 58): a module's name says
    what is in it, wherever it is imported from."""
    assert shared_names() == {}


if __name__ == "__main__":
    print("cycles:", *cycles(import_graph()), sep="\n  ")
    print("long modules:", *long_modules(), sep="\n  ")
    print("long functions:", *sorted(long_functions(), key=lambda x: -x[1]), sep="\n  ")
    print("numba outside kernels:", *numba_outside_kernels(), sep="\n  ")
    print("shared names:", *shared_names().items(), sep="\n  ")
