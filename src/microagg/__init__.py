"""microagg: microaggregation for statistical disclosure control of numeric microdata."""

from __future__ import annotations

from . import datasets
from .api import Result, microaggregate
from .measures import information_loss
from . import methods  # callable: microagg.methods() lists the registered names

__version__ = "0.1.0"
__all__ = ["microaggregate", "Result", "methods", "datasets", "information_loss", "__version__"]
