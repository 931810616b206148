"""The public API's types, for type checkers and IDEs (``py.typed`` ships with the package).

``MethodParams`` lists every parameter a registered method declares (``microagg methods -v``),
so that ``microaggregate(df, k=3, gama=0.2)`` is an error to pyright and mypy, not only at run
time. ``tests/test_typing.py`` holds it against the method registry: a new parameter that is
not typed here fails a test. The run options' types are generated from ``options.RUN_OPTIONS``
(``options.generated``: ``RunOptions`` and the entry points' ``**options``).
``Distance`` and ``Aggregation`` are declared beside their registries (``whitening``,
``representatives``), so a new whitening or aggregation is typed in its own module. Nothing here
is imported at run time but these names.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    TypedDict,
    Union,
)

from .representatives import AggregationName as Aggregation
from .whitening import WhiteningName as Distance

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = [
    "Columns",
    "DataInput",
    "Distance",
    "Aggregation",
    "MergedStrata",
    "Progress",
    "MethodParams",
]

#: column names: one name, a comma-separated string or a list (positions for a numpy array)
Columns = str | Hashable | Sequence[Hashable]
#: what the API reads: a pandas, polars or pyarrow frame (the same kind comes out), a 1-D or 2-D
#: numpy array, a file path (``microagg.io`` formats) or an ``io.Table``
DataInput = Union["pd.DataFrame", "np.ndarray", str, "Any"]
#: ``options.MERGED_STRATA``
MergedStrata = Literal["recode", "suppress", "refuse"]
#: what a run does when records match fewer than k on the declared keys (options.ON_KEYS_BELOW_K)
OnKeysBelowK = Literal["suppress", "refuse", "report"]
#: ``progress(stage, fraction, message)``
Progress = Callable[[str, float, str], object]


class MethodParams(TypedDict, total=False):
    """Every method's declared parameters (each method takes its own: ``microagg methods -v``)."""

    algorithm: str
    alternating_starts: int
    centroid: str
    close_gap: bool
    complex_tries: int
    criterion: str
    cut_tailing: float
    cuts: bool
    dissolve: bool
    effort: float | None
    exact_pricing: str
    extension: str
    final_mip: bool
    fitness: str
    gamma: float
    grow: str
    improve: bool | None
    init: Any
    keep_state: bool
    max_cut_rounds: int
    max_enumerated: int
    max_iterations: int | None
    max_nodes: int
    max_rounds: int | None
    maxgen: int
    member_params: Mapping[str, Mapping[str, Any]] | None
    min_gain: float
    mip_nodes: int
    mip_time_limit: float | None
    n_paths: int | None
    n_starts: int
    neighbours: int
    offers: Any
    order: str
    parallel: bool | None
    pcross: float
    perturbation: int
    placement: str
    pmut: float
    pool_size: int
    pool_window: float
    population_size: int
    portfolio: Any
    primal_columns: int
    projection: str
    recombine: float
    recompute: bool
    regroup: bool
    restart_complex_tries: int
    restart_from: str
    restarts: int
    resume: Any
    rounds: int | None
    scope: str
    seed_nodes: int
    smoothing: float | None
    start: str
    threads: int | None
    univariate: str
    univariate_params: Mapping[str, Any] | None
    variable: int
    variant: str
