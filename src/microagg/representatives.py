"""Group representatives: the values a group publishes for each quasi-identifier (the one home).

The group is the unit: every record of a group publishes the same vector, so every published
combination of QI values (categorical ones included) occurs at least k times.

Continuous columns, ``aggregation`` (sdcMicro's ``measure``), optionally weighted by the sampling
weights w (with equal weights every statistic is its unweighted textbook version):

* "mean": the (weighted) arithmetic mean; ``partition.group_means`` is its home.
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

Ordinal columns publish the group's weighted median category: the first category (in rank
order) whose cumulative weight reaches half the group's weight; at exactly half the lower
category wins. Nominal columns publish the group's weighted mode; ties go to the category that
comes first in the column's level order (``transforms``: declared categories, else sorted values).
Both are always categories present in the group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .partition import group_means

__all__ = ["AGGREGATIONS", "Aggregation", "DEFAULT_TRIM", "ONESTEP_CONSTANT", "MAD_CONSISTENCY",
           "continuous", "median_category", "mode_category", "publish"]

DEFAULT_TRIM = 0.1
ONESTEP_CONSTANT = 3.0 / 1.486
MAD_CONSISTENCY = 1.4826


@dataclass(frozen=True)
class Aggregation:
    """What a group publishes for a continuous column: ``compute(X, labels, weights, trim)`` gives the
    (g, d) representatives of groups 0..g-1 (weights: sampling weights or None); ``describe(trim)``
    names it in a run's summary. The run option ``aggregation`` (API, command line, app) takes
    the names of ``AGGREGATIONS``: a new aggregation is one entry here (and its test)."""

    name: str
    label: str
    reference: str
    compute: Callable
    describe: Callable[[float], str]


def _per_column(statistic: str):
    def compute(X, labels, weights, trim):
        g = int(labels.max()) + 1 if labels.size else 0
        out = np.empty((g, X.shape[1]))
        for j in range(X.shape[1]):
            out[:, j] = _by_group(X[:, j], labels, weights, statistic, trim)
        return out

    return compute


AGGREGATIONS: dict[str, Aggregation] = {a.name: a for a in (
    Aggregation("mean", "mean", "the (weighted) arithmetic mean", lambda X, labels, w, trim: group_means(X, labels, w),
                lambda trim: "mean"),
    Aggregation("median", "median", "sdcMicro weightedQuantile", _per_column("median"), lambda trim: "median"),
    Aggregation("trimmed", "trimmed mean", "R mean(x, trim=), scipy.stats.trim_mean", _per_column("trimmed"),
                lambda trim: f"{trim:g}-trimmed mean"),
    Aggregation("onestep", "one-step Huber mean", "sdcMicro's onestep", _per_column("onestep"),
                lambda trim: "one-step Huber mean"),
)}


def _by_group(x, labels, weights, statistic: str, trim=0.0) -> np.ndarray:
    """(g,) statistic ("median", "lower_median", "trimmed", "onestep") of x within each group 0..g-1."""
    from .kernels import location  # numba loads on first use

    stat = {"median": location.MEDIAN, "lower_median": location.LOWER_MEDIAN, "trimmed": location.TRIMMED,
            "onestep": location.ONESTEP}[statistic]
    order = np.lexsort((x, labels))
    sorted_labels = labels[order]
    g = int(labels.max()) + 1 if labels.size else 0
    starts = np.searchsorted(sorted_labels, np.arange(g + 1)).astype(np.int64)
    w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=np.float64)
    return location.segment_statistic(np.ascontiguousarray(x[order], dtype=np.float64), np.ascontiguousarray(w[order]),
                              starts, stat, float(trim), ONESTEP_CONSTANT, MAD_CONSISTENCY)


def continuous(X: np.ndarray, labels: np.ndarray, aggregation: str = "mean", trim: float = DEFAULT_TRIM,
               weights: np.ndarray | None = None) -> np.ndarray:
    """(g, d) representatives of the continuous columns X (n, d) for 1-D labels 0..g-1."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    return AGGREGATIONS[aggregation].compute(X, labels, weights, trim)


def publish_continuous(X: np.ndarray, labels: np.ndarray, aggregation: str = "mean", trim: float = DEFAULT_TRIM,
                       weights: np.ndarray | None = None) -> np.ndarray:
    """Each record's continuous values replaced by its group's representative (2-D labels: per column)."""
    labels = np.asarray(labels, dtype=np.int64)
    X = np.asarray(X, dtype=np.float64)
    if labels.ndim == 2:
        out = np.empty_like(X)
        for j in range(X.shape[1]):
            out[:, j] = continuous(X[:, [j]], labels[:, j], aggregation, trim, weights)[labels[:, j], 0]
        return out
    return continuous(X, labels, aggregation, trim, weights)[labels]


def median_category(codes: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """(g,) weighted median category code of each group (lower category at exactly half the weight)."""
    codes = np.asarray(codes, dtype=np.int64)
    return _by_group(codes.astype(np.float64), np.asarray(labels, dtype=np.int64), weights,
                     "lower_median").astype(np.int64)


def mode_category(codes: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
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


def publish(emb, labels: np.ndarray, aggregation: str = "mean", trim: float = DEFAULT_TRIM,
            weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(numeric, codes) a run publishes for ``transforms.Embedding`` emb, one row per record.

    Continuous columns: ``aggregation``; ordinal ranks: the median category; nominal codes: the
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
            numeric[:, j] = continuous(base[:, [j]], col_labels, aggregation, trim, weights)[col_labels, 0]
    if safe:
        numeric = emb.scaler.inverse(numeric)
    for j, c in enumerate(emb.numeric_columns):
        if emb.kinds[c] == "ordinal":  # its rank is its published category code
            numeric[:, j] = codes[:, emb.categorical_columns.index(c)]
    return numeric, codes
