"""The method registry: one place that maps method names to functions and metadata.

Every method is a plain function over a standardised float64 array::

    fit(X: ndarray[n, d], k: int, *, seed=None, time_limit=None, progress=False, **params)
        -> labels (int64[n], or int64[n, d] for per-variable methods) | MethodOutput

Methods never see files, DataFrames or column names. A module in this package registers
its functions with ``@register(...)``; modules are discovered automatically, so a new
method is one new function registered once and nothing else changes.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = ["MethodInfo", "MethodOutput", "register", "get", "names", "all_methods", "run"]


@dataclass
class MethodOutput:
    """What a method may return instead of bare labels: labels plus facts it proved."""

    labels: np.ndarray
    lower_bound: float | None = None  # proven SSE lower bound, in the units of X
    extras: dict[str, Any] = field(default_factory=dict)  # iterations, timings, ...


@dataclass(frozen=True)
class MethodInfo:
    name: str
    func: Callable[..., Any]
    family: str
    paper: str
    complexity: str
    variable_size: bool
    multivariate: bool = True  # False: only d == 1 is accepted
    randomized: bool = False  # True: the result depends on ``seed``
    per_variable: bool = False  # True: labels have shape (n, d)
    summary: str = ""

    @property
    def params(self) -> dict[str, Any]:
        """Method-specific keyword parameters and their defaults."""
        common = {"seed", "time_limit", "progress"}
        sig = inspect.signature(self.func)
        return {
            p.name: p.default
            for p in sig.parameters.values()
            if p.kind is p.KEYWORD_ONLY and p.name not in common
        }


_REGISTRY: dict[str, MethodInfo] = {}
_LOADED = False


def register(
    name: str,
    *,
    family: str,
    paper: str,
    complexity: str,
    variable_size: bool,
    multivariate: bool = True,
    randomized: bool = False,
    per_variable: bool = False,
):
    """Decorator registering ``func`` under ``name``; its docstring's first line is the summary."""

    def deco(func):
        if name in _REGISTRY and _REGISTRY[name].func is not func:
            raise ValueError(f"method {name!r} registered twice")
        summary = (inspect.getdoc(func) or "").split("\n")[0]
        _REGISTRY[name] = MethodInfo(
            name, func, family, paper, complexity, variable_size, multivariate, randomized,
            per_variable, summary,
        )
        return func

    return deco


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    _LOADED = True


def names() -> list[str]:
    """Names of all registered methods, sorted."""
    _load_all()
    return sorted(_REGISTRY)


def all_methods() -> list[MethodInfo]:
    _load_all()
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def get(name: str) -> MethodInfo:
    """The registered method ``name``; ValueError listing the known names otherwise."""
    _load_all()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; known methods: {', '.join(names())}") from None


def run(
    name: str,
    X: np.ndarray,
    k: int,
    *,
    seed: int | None = None,
    time_limit: float | None = None,
    progress: bool = False,
    **params,
) -> MethodOutput:
    """Run method ``name`` on standardised X; reject unknown parameters with a clear error.

    The returned labels are not yet validated: callers check them with
    ``partition.check_partition`` (the pipeline always does).
    """
    info = get(name)
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError("methods take a 2-D array (n records × d attributes)")
    if not info.multivariate and X.shape[1] != 1:
        raise ValueError(
            f"method {name!r} is univariate but the data have {X.shape[1]} quasi-identifier columns; "
            "select one column, or use 'projected' or 'individual-ranking'"
        )
    unknown = sorted(set(params) - set(info.params))
    if unknown:
        known = ", ".join(info.params) or "none"
        raise ValueError(f"method {name!r} has no parameter {', '.join(unknown)} (its parameters: {known})")
    out = info.func(X, int(k), seed=seed, time_limit=time_limit, progress=progress, **params)
    if not isinstance(out, MethodOutput):
        out = MethodOutput(np.asarray(out))
    return out


class _RegistryModule(types.ModuleType):
    """Lets ``microagg.methods()`` list the names while ``microagg.methods.run`` etc. stay usable."""

    def __call__(self) -> list[str]:
        return names()


sys.modules[__name__].__class__ = _RegistryModule
