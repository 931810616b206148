"""microagg: microaggregation for statistical disclosure control of numeric microdata.

The heavy parts (pandas, scipy, numba) load when first used, so ``import microagg`` and the
command line start at once. Type checkers and IDEs see the public names through the
``TYPE_CHECKING`` imports below (the package ships ``py.typed``).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

from . import methods  # callable: microagg.methods() lists the registered names
from .errors import (
    CompilationWarning,
    DisclosureWarning,
    FormatWarning,
    InputError,
    MicroaggWarning,
    OrderWarning,
    ParameterError,
    RolesWarning,
    RunWarning,
)


def _version() -> str:
    """The installed distribution's version (pyproject.toml's, through the package metadata): one
    source for ``microagg.__version__``, ``microagg --version`` and the run manifest."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("microagg")
    except PackageNotFoundError:  # a source tree on sys.path without an install
        return "0+unknown"


__version__ = _version()
__all__ = [
    "microaggregate",
    "protect",
    "Result",
    "methods",
    "datasets",
    "information_loss",
    "explore",
    "MicroAggregator",
    "InputError",
    "ParameterError",
    "MicroaggWarning",
    "RolesWarning",
    "DisclosureWarning",
    "OrderWarning",
    "FormatWarning",
    "RunWarning",
    "CompilationWarning",
    "__version__",
]

if TYPE_CHECKING:  # what the lazy __getattr__ below returns, for type checkers
    from . import datasets as datasets
    from .api import Result as Result
    from .api import microaggregate as microaggregate
    from .explore import explore as explore
    from .measures import information_loss as information_loss
    from .publication import protect as protect
    from .sklearn import MicroAggregator as MicroAggregator

_LAZY = {
    "microaggregate": ".api",
    "protect": ".publication",
    "Result": ".api",
    "information_loss": ".measures",
    "MicroAggregator": ".sklearn",
}


class _Package(types.ModuleType):
    """``microagg.explore`` is the function ``explore`` (its signature, its docstring), whether
    or not the subpackage of the same name was imported: the import system's binding of the
    subpackage to this name is ignored (its modules stay importable: ``microagg.explore.grid``)."""

    @property
    def explore(self):
        from .explore import explore

        return explore

    @explore.setter
    def explore(self, value) -> None:
        pass


sys.modules[__name__].__class__ = _Package


def __getattr__(name):
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    try:  # a submodule, loaded on first use
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module 'microagg' has no attribute {name!r}")
