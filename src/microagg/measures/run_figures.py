"""A run's own figures (the pipeline's measure stage): what they are computed from
(``RunInputs``) and the "run" measures registered on it. The run's information loss is the
``information_loss`` measure of ``comparison``, registered in both groups."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ..labels import gap_percent, group_sizes, il_percent, sse, sst
from ..onehot import numeric_part, scaled, sq_distance
from .registry import measure

__all__ = ["RunInputs"]


class RunInputs:
    """What a run's figures are computed from: the QI values as the run measured them (Z, the
    z-scores or the embedding), the published values on the same scale (Zp), the labels, the
    proven bound in the method's units with its conversions (whitening: SSE(Z) >= f·SSE(W);
    variable weights: SSE >= SSE_w / max w) and the weighted matrix the method saw."""

    def __init__(
        self,
        Z,
        Zp,
        labels,
        published_are_means: bool,
        bound=None,
        bound_factor: float = 1.0,
        weights=None,
        Zw=None,
    ):
        self.Z, self.Zp, self.labels = Z, Zp, labels
        self.published_are_means = published_are_means
        self.proven, self.bound_factor, self.weights, self.Zw = bound, bound_factor, weights, Zw

    @cached_property
    def missing(self) -> bool:
        """Whether QI values are missing (NaN in Z and, at the same places, in Zp): the sums of
        squares are then over the present values (``missing_values``)."""
        return bool(np.isnan(numeric_part(self.Z)).any())  # codes are never missing

    @cached_property
    def sse(self) -> float:
        if self.missing:  # the published values are the group means over the present values
            return sq_distance(self.Z, self.Zp)
        if self.published_are_means:
            return sse(self.Z, self.labels)
        return sq_distance(self.Z, self.Zp)  # weighted means, robust aggregates, categories

    @cached_property
    def sst(self) -> float:
        return sst(self.Z)

    @cached_property
    def whitened_bound(self) -> float | None:
        """The proven bound on the whitened SSE, when the method saw whitened columns."""
        return None if self.proven is None or self.bound_factor == 1.0 else float(self.proven)

    @cached_property
    def weighted_bound(self) -> float | None:
        """The bound on the weighted SSE (after the whitening conversion), with variable weights."""
        if self.proven is None or self.weights is None:
            return None
        return (
            float(self.proven) * self.bound_factor
            if self.bound_factor != 1.0
            else float(self.proven)
        )

    @cached_property
    def lower_bound(self) -> float | None:
        """The bound on the SSE of Z: converted from the whitened and the weighted SSE, at most
        SSE."""
        if self.proven is None:
            return None
        bound = float(self.proven) * self.bound_factor if self.bound_factor != 1.0 else self.proven
        if self.weights is not None:
            bound = float(bound) / float(self.weights.max())
        return min(float(bound), self.sse)

    @cached_property
    def sizes(self) -> np.ndarray:
        """Every group's size (per-variable labels: the groups of every column)."""
        if self.labels.ndim == 2:
            return np.concatenate(
                [group_sizes(self.labels[:, j]) for j in range(self.labels.shape[1])]
            )
        return group_sizes(self.labels)

    @cached_property
    def weighted_information_loss(self) -> float | None:
        if self.weights is None:
            return None
        if self.missing:  # over the present values (Zw holds the grouping's placed values)
            w_sse = sq_distance(self.Z, self.Zp, self.weights)
            return il_percent(w_sse, sst(scaled(self.Z, self.weights)))
        w_sse = (
            sse(self.Zw, self.labels)
            if self.published_are_means
            else sq_distance(self.Z, self.Zp, self.weights)
        )
        return il_percent(w_sse, sst(self.Zw))


@measure("sse", "SSE", "", "within-group sum of squares to the published values", "run", digits=6)
def _run_sse(r: RunInputs):
    return r.sse


@measure("sst", "SST", "", "total sum of squares", "run", digits=6)
def _run_sst(r: RunInputs):
    return r.sst


@measure(
    "lower_bound",
    "lower bound on SSE",
    "",
    "proven by the method (column generation)",
    "run",
    digits=6,
)
def _run_bound(r: RunInputs):
    return r.lower_bound


@measure("lower_bound_il", "lower bound on IL (%)", "%", "100·bound/SST", "run")
def _run_bound_il(r: RunInputs):
    return None if r.lower_bound is None or r.sst == 0 else il_percent(r.lower_bound, r.sst)


@measure("gap", "gap to the bound (%)", "%", "100·(SSE − bound)/SSE", "run", digits=3)
def _run_gap(r: RunInputs):
    return None if r.lower_bound is None else gap_percent(r.sse, r.lower_bound)


@measure(
    "weighted_information_loss",
    "weighted IL (%)",
    "%",
    "IL of the variable-weighted columns",
    "run",
)
def _run_weighted_il(r: RunInputs):
    return r.weighted_information_loss


@measure("groups", "groups", "groups", "", "run")
def _run_groups(r: RunInputs):
    return int(len(r.sizes))


@measure(
    "group_size_min", "smallest group", "records", "every group holds at least k records", "run"
)
def _run_min(r: RunInputs):
    return int(r.sizes.min())


@measure("group_size_max", "largest group", "records", "", "run")
def _run_max(r: RunInputs):
    return int(r.sizes.max())
