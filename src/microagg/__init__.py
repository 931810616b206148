"""microagg: microaggregation for statistical disclosure control of numeric microdata."""

from __future__ import annotations

import importlib

__version__ = "0.1.0"
__all__ = ["microaggregate", "Result", "methods", "datasets", "information_loss", "__version__"]

#: Public names and the module that holds each. They are imported on first use (PEP 562), so
#: ``import microagg`` and the command line start without loading numpy, pandas or numba.
_LAZY = {"microaggregate": ".api", "Result": ".api", "information_loss": ".measures"}
_SUBMODULES = ("methods", "datasets", "io", "api", "measures", "preprocess", "partition", "report", "scale")


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)  # methods: callable, lists the names
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
