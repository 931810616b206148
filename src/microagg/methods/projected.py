"""Univariate methods applied to multivariate data (data-oriented paper, §3.1, §5 and §6).

* ``projected``: the records are projected onto one axis (a variable, the sum of z-scores or the
  first principal component) and a univariate method partitions the projected values; the
  partition is then used for all variables (PF and Pk-W in the paper's §5.3).
* ``individual-ranking``: each variable is microaggregated on its own with a univariate method,
  giving one partition per variable (labels of shape (n, d)).
"""

from __future__ import annotations

import numpy as np

from ..declarations import Param
from ..labels import group_means, relabel, sse
from . import MethodOutput, get, register, run
from .kward import ORDER, VARIABLE, projection_scores, stable_order
from .univariate import labels_from_order

PROJECTIONS = ("pv", "sz", "fpc")


UNIVARIATE = (
    Param(
        "univariate",
        "method",
        "univariate-optimal",
        "the registered method run on each single variable "
        "('univariate-fixed', 'kward', 'genetic', 'univariate-optimal')",
    ),
    Param(
        "univariate_params",
        "object",
        None,
        "parameters of the univariate method, a mapping",
        nullable=True,
    ),
)


def _check_univariate(values: dict) -> dict:
    """The univariate method must give one partition of one variable; its parameters are validated
    against its own declarations."""
    univariate = values["univariate"]
    info = get(univariate)
    if info.per_variable or univariate == "projected":
        raise ValueError(
            "univariate must be a method that gives one partition of a single variable, "
            f"got {univariate!r}"
        )
    params = values["univariate_params"]
    if params is not None and not isinstance(params, dict):
        raise ValueError(
            "univariate_params must be a mapping of the univariate method's parameters, got"
            f" {params!r}"
        )
    values["univariate_params"] = info.validate(dict(params or {}))
    return values


def ties_in_record_order(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The same cut of the ranked scores, with records of equal score taken in record order.

    Univariate methods cut the sorted scores into runs; which of several records with equal scores
    falls on each side of a cut depends on the sort they used, and changes the multivariate loss.
    Re-cutting the stable order into runs of the same sizes gives the same projected SSE and a
    result that does not depend on sort internals. Labels that are not such a cut are returned as
    is.
    """
    labels = relabel(np.asarray(labels))
    sizes = np.bincount(labels)
    means = group_means(scores, labels)[:, 0]
    runs = np.lexsort((sizes, means))
    recut = labels_from_order(stable_order(scores), np.repeat(np.arange(len(sizes)), sizes[runs]))
    before = sse(scores, labels)
    return recut if sse(scores, recut) <= before + 1e-9 * max(1.0, before) else labels


@register(
    "projected",
    family="projection",
    paper="Domingo-Ferrer & Mateo-Sanz 2002 (data-oriented paper), §5 (projected data)",
    complexity=(
        "O(n·d²) projection plus the univariate method on n values (O(n log n) for the defaults)"
    ),
    variable_size=True,
    params=(
        Param(
            "projection",
            "str",
            "fpc",
            "the axis: 'pv' column ``variable``, 'sz' sum of z-scores, 'fpc' first "
            "principal component of the correlation matrix",
            choices=PROJECTIONS,
        ),
        ORDER,
        VARIABLE,
    )
    + UNIVARIATE,
    check_together=_check_univariate,
)
def projected(
    X, k, *, seed, deadline, progress, projection, order, variable, univariate, univariate_params
):
    """Multivariate microaggregation on projected data: rank the records on one axis, cut
    univariately.

    projection: 'pv' column ``variable``; 'sz' the sum of the z-scores of all columns; 'fpc' the
    first principal component of the correlation matrix (signed so that its loadings sum >= 0).
    order='descending' ranks by the negated scores (the paper's second figure for SZ and FPC);
    with the symmetric univariate methods here it changes the groups only through ties or the
    seed. univariate: the registered method run on the projected values — the paper's
    'univariate-fixed' (PF) and 'kward' (Pk-W), or 'genetic', or 'univariate-optimal' (default:
    the least SSE along the chosen axis, Hansen & Mukherjee); univariate_params go to it. The
    projection adds its own information loss to the loss of the grouping (§5); the paper shows
    methods on unprojected data ('md', 'kward' on X) losing much less. Records with equal scores are
    taken in record order at group boundaries (the cut itself is the univariate method's).
    """
    scores = projection_scores(X, projection, variable)
    if order == "descending":
        scores = -scores
    out = run(
        univariate,
        scores[:, None],
        k,
        seed=seed,
        deadline=deadline,
        progress=progress,
        **univariate_params,
    )
    return MethodOutput(ties_in_record_order(scores, out.labels), extras=dict(out.extras))


@register(
    "individual-ranking",
    family="per-variable",
    paper="Domingo-Ferrer & Mateo-Sanz 2002 (data-oriented paper), §3.1, §4.3 and §6",
    complexity=(
        "d runs of the univariate method on n values (O(d·n log n) for the defaults), O(n·d) memory"
    ),
    variable_size=True,
    per_variable=True,
    categorical=False,
    params=UNIVARIATE,
    check_together=_check_univariate,
)
def individual_ranking(X, k, *, seed, deadline, progress, univariate, univariate_params):
    """Individual ranking: each variable grouped on its own (labels (n, d)); NOT k-anonymous, higher
    disclosure risk.

    HIGHER DISCLOSURE RISK (paper §6): the published records are NOT k-anonymous as combinations
    of values, since each variable has its own grouping. Individual ranking preserves more
    information than multivariate microaggregation but causes a higher disclosure risk: an
    intruder can rank the records by any one variable and knows that the true value of a record in
    the i-th group lies between the averages of groups i−1 and i+1; when those averages are close
    the true value is pinned to a narrow interval. Use a multivariate method when the quasi-
    identifiers must be protected jointly.

    univariate: the registered method applied to each column ('univariate-fixed' F, 'kward' k-W,
    'genetic' A / M, or 'univariate-optimal', the default, least SSE per column); univariate_params
    go to it. With a seed, column j gets its own seed drawn from SeedSequence(seed), so a
    randomised univariate method is reproducible; the deadline is shared out over the columns. Equal
    values at a group boundary are taken in record order (as in ``projected``).
    """
    n, d = X.shape
    seeds = (
        [None] * d
        if seed is None
        else [int(s) for s in np.random.SeedSequence(seed).generate_state(d)]
    )
    labels = np.empty((n, d), dtype=np.int64)
    for j in range(d):
        progress("individual-ranking", j / d, f"variable {j + 1} of {d}")
        out = run(
            univariate,
            X[:, [j]],
            k,
            seed=seeds[j],
            deadline=deadline.share(1, d - j),
            **univariate_params,
        )
        labels[:, j] = ties_in_record_order(X[:, j], np.asarray(out.labels).ravel())
    return labels
