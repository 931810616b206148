"""microagg: microaggregation for statistical disclosure control of numeric microdata."""

from __future__ import annotations

from . import datasets
from .api import Result, microaggregate
from .measures import information_loss
from .methods import names as _method_names

__version__ = "0.1.0"
__all__ = ["microaggregate", "Result", "methods", "datasets", "information_loss", "__version__"]


def methods() -> list[str]:
    """Names of all registered methods."""
    return _method_names()
