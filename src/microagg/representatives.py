"""Group representatives: the values a group publishes for each quasi-identifier (the one home).

The group is the unit: every record of a group publishes the same vector, so every published
combination of QI values (categorical ones included) occurs at least k times.

Continuous columns, ``aggregation`` (sdcMicro's ``measure``), optionally weighted by the sampling
weights w (with equal weights every statistic is its unweighted textbook version):

* "mean": the (weighted) arithmetic mean; ``labels.group_means`` is its home.
* "median": the weighted median of sdcMicro's ``weightedQuantile``: sort the values, take the
  first whose cumulative weight reaches half the total; when it reaches exactly half, the mean
  of that value and the next (so equal weights give the ordinary median).
* "trimmed": the weighted trimmed mean: records are dropped from each end, the most extreme
  first, as long as the weight dropped at that end stays <= trim·W; the rest are averaged with
  their weights. Equal weights drop floor(trim·n) records at each end, as R's
  ``mean(x, trim=)`` and ``scipy.stats.trim_mean`` do. trim in [0, 0.5), default DEFAULT_TRIM.
* "onestep": sdcMicro's one-step Huber-type estimate from the median: values are clipped to
  median ± c·MAD with c = ONESTEP_CONSTANT = 3/1.486 (sdcMicro's constant) and MAD the
  (weighted) median absolute deviation from the (weighted) median times MAD_CONSISTENCY = 1.4826
  (R's ``mad``), then averaged with their weights. A group with MAD 0 publishes its median.

A new aggregation is one ``register(Aggregation(...))`` in one module: its name (the run option
``aggregation``'s choices, in the API, the command line and the app, follow the registry), its
own parameters (each a ``Param`` or a default; every door gives them to the chosen aggregation
through the run option ``aggregation_params``: ``aggregation_params={"trim": 0.2}``,
``--aggregation-params trim=0.2``, never as a new run option; ``trim`` is also a run option of its
own, the trimmed mean's documented spelling), and its kernel: a function
``(x, w, starts, params) -> (g,)`` over groups sorted into segments (``kernels.location``), or a
vectorised ``compute``.

Ordinal columns publish the group's weighted median category: the first category (in rank
order) whose cumulative weight reaches half the group's weight; at exactly half the lower
category wins. Nominal columns publish the group's weighted mode; ties go to the category that
comes first in the column's level order (``embedding``: declared categories, else sorted values).
Both are always categories present in the group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

from .declarations import Param
from .errors import ParameterError
from .labels import group_means

__all__ = [
    "AGGREGATIONS",
    "Aggregation",
    "AggregationName",
    "register",
    "aggregation_arguments",
    "DEFAULT_TRIM",
    "ONESTEP_CONSTANT",
    "MAD_CONSISTENCY",
    "continuous",
    "median_category",
    "mode_category",
    "published_representatives",
]

#: the names of the aggregations registered below, for type checkers (``public_types.Aggregation``,
#: the API's ``aggregation=``): a new aggregation adds its name here too (checked at import)
AggregationName = Literal["mean", "median", "trimmed", "onestep"]

DEFAULT_TRIM = 0.1
ONESTEP_CONSTANT = 3.0 / 1.486
MAD_CONSISTENCY = 1.4826


@dataclass(frozen=True)
class Aggregation:
    """What a group publishes for a continuous column, declared once.

    ``params``: this aggregation's own parameters, each a ``Param`` (a number with its range) or
    its default alone (any number); given through the run option ``aggregation_params``, else
    their defaults. ``constants``: numbers passed to the kernel after them.
    ``kernel``: the segment kernel ``(x, w, starts, params) -> (g,)`` (x sorted ascending
    within each group's segment, w the sampling weights or ones, params float64), either a
    callable or the name of one in ``microagg.kernels.location`` (numba loads on first use).
    ``compute(X, labels, weights) -> (g, d)`` instead: a vectorised aggregation (the mean).
    ``group_means``: with equal weights it publishes the group means themselves (the SSE is
    then the within-group sum of squares). ``describe(arguments)`` names it in a summary.
    """

    name: str
    label: str
    reference: str
    describe: Callable[[Mapping[str, float]], str]
    kernel: str | Callable | None = None
    params: Mapping[str, float | Param] = field(default_factory=dict)
    constants: tuple[float, ...] = ()
    compute: Callable | None = None
    group_means: bool = False

    def declared(self) -> dict[str, Param]:
        """Its parameters as declarations (a bare default: any finite number)."""
        return {
            name: p
            if isinstance(p, Param)
            else Param(name, "float", float(p), f"a parameter of aggregation {self.name!r}")
            for name, p in self.params.items()
        }

    def arguments(self, given: Mapping[str, float | None]) -> dict[str, float]:
        """Its parameters' values: the given ones (not None), else their defaults."""
        return {
            name: float(p.default if given.get(name) is None else given[name])
            for name, p in self.declared().items()
        }

    def check(self, given: Mapping[str, object]) -> dict[str, float]:
        """The given parameters, each checked by its declaration (ParameterError naming the
        aggregation: a parameter it does not take, a value out of its range)."""
        declared = self.declared()
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise ParameterError(
                f"aggregation {self.name!r} has no parameter {', '.join(map(str, unknown))} "
                f"(its parameters: {', '.join(declared) or 'none'})"
            )
        return {
            name: declared[name].validate(value, f"aggregation {self.name!r}")
            for name, value in given.items()
        }

    def segment_kernel(self) -> Callable:
        if callable(self.kernel):
            return self.kernel
        from .kernels import location  # numba loads on first use

        return getattr(location, str(self.kernel))

    def representatives(
        self, X: np.ndarray, labels: np.ndarray, weights, arguments: Mapping[str, float]
    ):
        """(g, d) representatives of groups 0..g-1 of X (n, d)."""
        if self.compute is not None:
            return self.compute(X, labels, weights)
        params = np.array(
            [*(arguments[name] for name in self.params), *self.constants], dtype=np.float64
        )
        kernel = self.segment_kernel()
        g = int(labels.max()) + 1 if labels.size else 0
        out = np.empty((g, X.shape[1]))
        for j in range(X.shape[1]):
            out[:, j] = _by_group(X[:, j], labels, weights, kernel, params)
        return out


#: the registered aggregations by name (the run option ``aggregation``'s choices)
AGGREGATIONS: dict[str, Aggregation] = {}


def register(aggregation: Aggregation) -> Aggregation:
    """Add an aggregation to the registry (its name must be new)."""
    if aggregation.name in AGGREGATIONS:
        raise ValueError(f"aggregation {aggregation.name!r} is already registered")
    if (aggregation.kernel is None) == (aggregation.compute is None):
        raise ValueError(f"aggregation {aggregation.name!r} needs a kernel or a compute, not both")
    AGGREGATIONS[aggregation.name] = aggregation
    return aggregation


register(
    Aggregation(
        "mean",
        "mean",
        "the (weighted) arithmetic mean",
        lambda arguments: "mean",
        compute=group_means,
        group_means=True,
    )
)
register(
    Aggregation(
        "median",
        "median",
        "sdcMicro weightedQuantile",
        lambda arguments: "median",
        kernel="segment_median",
    )
)
register(
    Aggregation(
        "trimmed",
        "trimmed mean",
        "R mean(x, trim=), scipy.stats.trim_mean",
        lambda arguments: f"{arguments['trim']:g}-trimmed mean",
        kernel="segment_trimmed_mean",
        params={
            "trim": Param(
                "trim",
                "float",
                DEFAULT_TRIM,
                "share trimmed at each end",
                low=0.0,
                high=0.5,
                high_open=True,
            )
        },
    )
)
register(
    Aggregation(
        "onestep",
        "one-step Huber mean",
        "sdcMicro's onestep",
        lambda arguments: "one-step Huber mean",
        kernel="segment_onestep",
        constants=(ONESTEP_CONSTANT, MAD_CONSISTENCY),
    )
)


if set(AGGREGATIONS) != set(get_args(AggregationName)):
    raise TypeError(
        "representatives.AggregationName must list the registered aggregations: "
        f"{sorted(AGGREGATIONS)}"
    )


def _by_group(x, labels, weights, kernel: Callable, params: np.ndarray) -> np.ndarray:
    """(g,) the segment kernel's statistic of x within each group 0..g-1."""
    order = np.lexsort((x, labels))
    sorted_labels = labels[order]
    g = int(labels.max()) + 1 if labels.size else 0
    starts = np.searchsorted(sorted_labels, np.arange(g + 1)).astype(np.int64)
    w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=np.float64)
    return kernel(
        np.ascontiguousarray(x[order], dtype=np.float64),
        np.ascontiguousarray(w[order]),
        starts,
        params,
    )


def aggregation_arguments(aggregation: str, options: Mapping[str, object]) -> dict[str, float]:
    """The values of aggregation ``aggregation``'s parameters in a run's ``options``: given in
    ``aggregation_params``, else by a run option of the parameter's name (``trim``), else their
    defaults."""
    chosen = AGGREGATIONS[aggregation]
    own = dict(options.get("aggregation_params") or {})
    given = {name: own.get(name, options.get(name)) for name in chosen.params}
    return chosen.arguments(given)


def continuous(
    X: np.ndarray,
    labels: np.ndarray,
    aggregation: str = "mean",
    arguments: Mapping[str, float | None] | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """(g, d) representatives of the continuous columns X (n, d) for 1-D labels 0..g-1;
    ``arguments``: the aggregation's parameters (missing ones: their defaults)."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    chosen = AGGREGATIONS[aggregation]
    return chosen.representatives(X, labels, weights, chosen.arguments(arguments or {}))


def publish_continuous(
    X: np.ndarray,
    labels: np.ndarray,
    aggregation: str = "mean",
    arguments: Mapping[str, float | None] | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Each record's continuous values replaced by its group's representative (2-D labels: per
    column)."""
    labels = np.asarray(labels, dtype=np.int64)
    X = np.asarray(X, dtype=np.float64)
    if labels.ndim == 2:
        out = np.empty_like(X)
        for j in range(X.shape[1]):
            out[:, j] = continuous(X[:, [j]], labels[:, j], aggregation, arguments, weights)[
                labels[:, j], 0
            ]
        return out
    return continuous(X, labels, aggregation, arguments, weights)[labels]


def median_category(
    codes: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """(g,) weighted median category code of each group (lower category at exactly half the
    weight)."""
    codes = np.asarray(codes, dtype=np.int64)
    from .kernels.location import segment_lower_median

    return _by_group(
        codes.astype(np.float64),
        np.asarray(labels, dtype=np.int64),
        weights,
        segment_lower_median,
        np.empty(0),
    ).astype(np.int64)


def mode_category(
    codes: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """(g,) weighted mode code of each group; ties go to the smallest code (first level)."""
    codes = np.asarray(codes, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    w = np.ones(len(codes)) if weights is None else np.asarray(weights, dtype=np.float64)
    pairs, inverse = np.unique(np.column_stack([labels, codes]), axis=0, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=w, minlength=len(pairs))
    # shares of the group's weight, rounded so that sums of the same weights in another order tie
    totals = np.bincount(labels, weights=w)
    counts = np.round(counts / totals[pairs[:, 0]], 12)
    # per group: the largest count, then the smallest code (np.lexsort: last key is primary)
    best = np.lexsort((pairs[:, 1], -counts, pairs[:, 0]))
    first = np.ones(len(best), dtype=bool)
    first[1:] = pairs[best[1:], 0] != pairs[best[:-1], 0]
    g = int(labels.max()) + 1 if labels.size else 0
    out = np.empty(g, dtype=np.int64)
    out[pairs[best[first], 0]] = pairs[best[first], 1]
    return out


def _over_present(x, labels, aggregation, arguments, weights) -> np.ndarray:
    """Each record's value of one continuous column replaced by its group's representative over
    the group's present values; a missing value (NaN) stays missing."""
    present = ~np.isnan(x)
    if present.all():
        return continuous(x[:, None], labels, aggregation, arguments, weights)[labels, 0]
    out = np.full(len(x), np.nan)
    if not present.any():
        return out
    groups, inside = np.unique(labels[present], return_inverse=True)
    w = None if weights is None else np.asarray(weights)[present]
    values = continuous(x[present][:, None], inside, aggregation, arguments, w)[:, 0]
    out[present] = values[inside]
    return out


def published_representatives(
    emb,
    labels: np.ndarray,
    aggregation: str = "mean",
    arguments: Mapping[str, float | None] | None = None,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(numeric, codes) a run publishes for ``embedding.Embedding`` emb, one row per record.

    Continuous columns: ``aggregation`` over the group's present values (a missing value stays
    missing: ``missing_values``); ordinal ranks: the median category; nominal codes: the
    mode (all weighted by ``weights``). 2-D labels (one partition per column) are accepted for
    continuous columns only.
    """
    labels = np.asarray(labels, dtype=np.int64)
    codes = np.empty_like(emb.codes)
    for j, c in enumerate(emb.categorical_columns):
        col_labels = labels[:, emb.columns.index(c)] if labels.ndim == 2 else labels
        pick = median_category if emb.kinds[c] == "ordinal" else mode_category
        codes[:, j] = pick(emb.codes[:, j], col_labels, weights)[col_labels]
    # every statistic here is affine equivariant: values near the float64 limits are aggregated on
    # their z-scores and mapped back, so that sums never overflow (the Standardizer's ``unit``)
    safe = getattr(emb.scaler, "unit", None) is not None
    base = emb.scaler.transform(emb.numeric) if safe else emb.numeric
    numeric = np.zeros_like(emb.numeric)
    for j, c in enumerate(emb.numeric_columns):
        if emb.kinds[c] == "continuous":
            col_labels = labels[:, emb.columns.index(c)] if labels.ndim == 2 else labels
            numeric[:, j] = _over_present(base[:, j], col_labels, aggregation, arguments, weights)
    if safe:
        numeric = emb.scaler.inverse(numeric)
    for j, c in enumerate(emb.numeric_columns):
        if emb.kinds[c] == "ordinal":  # its rank is its published category code
            numeric[:, j] = codes[:, emb.categorical_columns.index(c)]
    return numeric, codes
