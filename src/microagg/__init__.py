"""microagg: microaggregation for statistical disclosure control of numeric microdata.

The heavy parts (pandas, scipy, numba) load when first used, so ``import microagg`` and the
command line start at once.
"""

from __future__ import annotations

from . import methods  # callable: microagg.methods() lists the registered names
from .errors import InputError, ParameterError

__version__ = "0.1.0"
__all__ = ["microaggregate", "protect", "Result", "methods", "datasets", "information_loss", "explore", "InputError",
           "ParameterError", "__version__"]

_LAZY = {"microaggregate": ".api", "protect": ".publication", "Result": ".api", "information_loss": ".measures"}


def __getattr__(name):
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    if name in ("datasets", "measures", "scale", "report", "partition", "preprocess", "api", "io", "pipeline",
                "options", "outofcore", "result", "scaling", "strata", "transforms", "representatives", "explore",
                "audit", "disclosure", "manifest", "publication"):  # explore: a callable module, microagg.explore(...) runs the grid
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'microagg' has no attribute {name!r}")
