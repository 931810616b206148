"""The stages' results, one dataclass each (``Source``, ``Roles``, ``Prepared``,
``Grouped``, ``Published``), ``PublishedValues`` (what a run option's own stage is given and
returns) and ``GROUP_MEANS``, the nature of the published values the run's SSE shortcut needs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Source:
    """The input as a frame; ``kind`` / ``shape`` say how to give the data back; ``table``: the file
    read, when the input was one (its duplicated header names are not in the frame)."""

    frame: object
    kind: str  # "frame", "array" or "native" (a polars, pyarrow, ... frame: microagg.frames)
    shape: tuple | None
    table: object = None
    native: object = None  # the caller's frame of another library than pandas


@dataclass(frozen=True)
class Roles:
    """The run's columns once checked against the data."""

    columns: list
    kinds: dict
    strata: list
    sample_weight_column: str | None
    weights: np.ndarray | None  # one variable weight per QI column
    sample_weights: np.ndarray | None  # one sampling weight per record
    k: int
    n: int
    keys: list = ()  # other published key variables (the audit's)
    sensitive: list = ()  # sensitive columns (the audit's l-diversity)
    household: list = ()  # household id column(s) (the shuffle keeps households together)
    households: object = None  # households.Households: codes, household-level QIs, weights
    left_out: tuple = ()  # (column, why) of the numeric columns the default rules left out


@dataclass
class Prepared:
    """The matrices of the run: ``Z`` the QI values as the run measures them (z-scores, or the
    embedding with categorical QIs), ``matrix`` what the method sees (whitened, weighted)."""

    embedding: object  # embedding.Embedding
    Z: np.ndarray
    matrix: np.ndarray
    bound_factor: float  # SSE(Z) >= bound_factor · SSE(whitened)
    weights: np.ndarray | None  # variable weights, one per column of Z


@dataclass
class Grouped:
    labels: np.ndarray
    lower_bound: float | None  # proven on the method's matrix (summed over strata)
    method_facts: dict  # the method's own report (no strata)
    strata: object = None  # result.StrataReport
    stratum_codes: object = None  # strata.Strata: each record's stratum, before and after merging
    households: object = None  # households.HouseholdGrouping (a run with a household id)
    values: object = None  # the values a "grouped" stage fixed (e.g. noisy centroids)
    key_classes: object = None  # key_classes.KeyClasses: the groups formed inside them (keys+qis)


@dataclass(frozen=True)
class Grouping:
    """What a run option's own stage at the pipeline's "grouped" point is given and returns
    (``dataclasses.replace``): the original frame, the roles, the QIs' values as the run
    measures them (``Z``; ``matrix``: as the method sees them, the distances to group by), the
    partition (``labels``), every run option by name, the privacy models stated so far
    (``models``: one dict each, recorded in the manifest and said in the summary) and the
    published continuous values when a stage fixes them (``values``: an object with
    ``continuous``, column -> one value per record, and ``nature``, as PublishedValues; None:
    the group representatives)."""

    frame: object
    roles: Roles
    Z: np.ndarray
    labels: np.ndarray
    options: dict
    per_variable: bool
    models: tuple = ()
    values: object = None
    matrix: np.ndarray | None = None  # what the method sees (whitened, weighted; None: Z)


#: ``Published.values`` when every QI publishes its group's (unweighted) mean: the run's SSE is
#: then the within-group sum of squares
GROUP_MEANS = "group means"


@dataclass(frozen=True)
class PublishedValues:
    """The published QI values at the pipeline's "published" point, where a run option's own stage
    acts (``declarations.Param.stage``; ``dataclasses.replace`` gives it back changed): each
    continuous QI's values in original units, one per record (a copy), and their nature in words
    (GROUP_MEANS, "median (continuous)", ...; the audit reads it: other than GROUP_MEANS, IL is
    measured to the published values). Categorical QIs publish categories, not changed here."""

    continuous: dict  # column -> np.ndarray of float
    nature: str


@dataclass
class Published:
    """What the run publishes. ``values`` says what the published QI values are: GROUP_MEANS,
    or else their nature in words ("median (continuous), mode (nominal)", ...); a stage that
    changes them after ``publish_values`` (rounding, ...) says so here, and ``measure`` reads it."""

    numeric: np.ndarray  # continuous values and ordinal ranks, one row per record
    codes: np.ndarray  # category codes of the categorical columns
    data: object  # the protected data, the input's kind
    changed: list = None  # the columns whose values are published anew: the QIs and recoded strata
    suppression: object = (
        None  # suppression.Suppression: the key values set missing (None: no keys)
    )
    values: str = GROUP_MEANS
    staged: str | None = None  # ``values`` when a run option's own stage made them so (its note)
