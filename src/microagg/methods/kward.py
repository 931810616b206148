"""k-Ward: Ward's hierarchical clustering adapted to microaggregation (data-oriented paper, §4.1,
§5.2).

Algorithm 1 (k-Ward):
 1. form a group with the "first" k records and one with the "last" k records; every other
    record is a group of its own;
 2. merge by Ward's method (the pair whose union raises SSE least) until every group has >= k
    records, never merging two groups that both have >= k records;
 3. apply the algorithm recursively to every group of 2k or more records.

On univariate data "first" and "last" are the k smallest and k largest values. On multivariate
data (§5.2) they come from a ranking criterion: a projection onto one axis (a variable, the sum of
z-scores or the first principal component) used only to pick the two end groups, or the
maximum-distance criterion (the two most distant records and the k−1 records nearest each).
Ward's merging itself always works on the unprojected data.
"""

from __future__ import annotations

import numpy as np

from ..declarations import Param
from . import MethodOutput, register
from .univariate import labels_from_order

CRITERIA = ("pv", "sz", "fpc", "md")


def stable_order(x: np.ndarray) -> np.ndarray:
    """Ascending order; equal values keep record order, so ties are resolved the same way
    everywhere."""
    return np.argsort(x, kind="stable")


ORDERS = ("ascending", "descending")


def projection_scores(X: np.ndarray, projection: str, variable: int = 0) -> np.ndarray:
    """One score per record: 'pv' a variable, 'sz' the sum of z-scores, 'fpc' the first principal
    component.

    The scores are computed on z-scores of X (X as given by the pipeline is already standardised,
    so this only matters for raw input); 'fpc' is the principal component of the correlation matrix.
    """
    from ..standardize import principal_axes, zscores

    if projection == "pv":
        return X[:, variable].astype(np.float64)
    Z = zscores(X)
    if projection == "sz":
        return Z.sum(axis=1)
    if projection == "fpc":
        return Z @ principal_axes(Z, 1, sign="sum")[1][:, 0]
    raise ValueError(f"projection must be one of 'pv', 'sz', 'fpc', got {projection!r}")


ORDER = Param(
    "order",
    "str",
    "ascending",
    "which end is 'first' (for the projections only ties change)",
    choices=ORDERS,
)
VARIABLE = Param(
    "variable",
    "int",
    0,
    "column index for criterion / projection 'pv'",
    low=0,
    data_bound="columns",
)


def _grow_group(
    Xs: np.ndarray, start: int, k: int, free: np.ndarray, by_centroid: bool
) -> np.ndarray:
    """start and k−1 more free records: the nearest to start, or one by one the nearest to the
    group's mean."""
    free = free.copy()
    free[start] = False
    if not by_centroid:
        d = np.where(free, ((Xs - Xs[start]) ** 2).sum(axis=1), np.inf)
        return np.concatenate([[start], np.argsort(d, kind="stable")[: k - 1]])
    members = [start]
    centre = Xs[start].copy()
    for size in range(1, k):
        b = int(np.argmin(np.where(free, ((Xs - centre) ** 2).sum(axis=1), np.inf)))
        members.append(b)
        free[b] = False
        centre += (Xs[b] - centre) / (size + 1)
    return np.array(members, dtype=np.int64)


def _end_groups(
    Xs: np.ndarray,
    k: int,
    criterion: str,
    order: str,
    variable: int,
    scores=None,
    grow: str = "seed",
) -> np.ndarray:
    """Step 1 on the records Xs: init code 0 for the "first" k, 1 for the "last" k, −1 otherwise."""
    m = len(Xs)
    init = np.full(m, -1, dtype=np.int64)
    if criterion == "md":
        from ..kernels.ward import farthest_pair

        r, s = farthest_pair(Xs)
        first, last = (r, s) if order == "ascending" else (s, r)
        free = np.ones(m, dtype=np.bool_)
        group = _grow_group(Xs, first, k, free, grow == "centroid")
        init[group] = 0
        free[group] = False
        if not free[last]:  # only with ties: the other extreme went to the first group
            last = int(np.argmax(np.where(free, ((Xs - Xs[first]) ** 2).sum(axis=1), -np.inf)))
        init[_grow_group(Xs, last, k, free, grow == "centroid")] = 1
        return init
    if scores is None:
        scores = projection_scores(Xs, criterion, variable)
    ranked = stable_order(scores if order == "ascending" else -scores)
    init[ranked[:k]] = 0
    init[ranked[m - k :]] = 1
    return init


def kward_labels(
    X: np.ndarray,
    k: int,
    criterion: str = "md",
    order: str = "ascending",
    variable: int = 0,
    recompute: bool = False,
    grow: str = "seed",
    deadline=None,
):
    """Labels of Algorithm 1 on X (1-D data: adjacent Ward on the sorted values); also the number of
    passes.

    Past ``deadline`` (a clock.Deadline) no further pass starts after the first: groups still
    waiting to be split are kept whole, which is a valid k-partition with some groups of 2k or more.
    """
    from ..kernels.ward import ward_adjacent_1d, ward_nn_chain

    n, d = X.shape
    scores = None
    if d > 1 and criterion != "md" and not recompute:
        scores = projection_scores(X, criterion, variable)
    labels = np.zeros(n, dtype=np.int64)
    next_label = 0
    passes = 0
    stack = [np.arange(n)]
    univariate = d == 1
    while stack:
        rows = stack.pop()
        m = len(rows)
        if m < 2 * k or (passes > 0 and deadline is not None and deadline.expired()):
            # a final group of k..2k−1 (Proposition 1), or a larger one when time is up
            labels[rows] = next_label
            next_label += 1
            continue
        passes += 1
        if univariate:
            x = X[rows, 0]
            order_ = stable_order(x)
            if order == "descending":
                order_ = order_[::-1]
            sub = labels_from_order(order_, ward_adjacent_1d(np.ascontiguousarray(x[order_]), k))
        else:
            Xs = np.ascontiguousarray(X[rows])
            sub_scores = None if scores is None else scores[rows]
            sub = ward_nn_chain(
                Xs, _end_groups(Xs, k, criterion, order, variable, sub_scores, grow), k
            )
        # groups of k..2k−1 are final; larger ones go back on the stack (step 3). Vectorised: a
        # pass over m records can give ~m/k groups.
        sizes = np.bincount(sub)
        final = sizes < 2 * k
        new_ids = np.full(len(sizes), -1, dtype=np.int64)
        new_ids[final] = next_label + np.arange(int(final.sum()))
        next_label += int(final.sum())
        done = final[sub]
        labels[rows[done]] = new_ids[sub[done]]
        if not done.all():
            big_rows, big_sub = rows[~done], sub[~done]
            by_group = np.argsort(big_sub, kind="stable")
            stack.extend(np.split(big_rows[by_group], np.cumsum(sizes[~final])[:-1]))
    return labels, passes


#: The first Ward pass (over all n records, d > 1) cannot be interrupted; measured (census-like,
#: k = 3, CPU s): 1.2 s at 10^4, 14 s at 3·10^4 (0.95–1.2e-9 s per n²·d), over 200 s at 10^5. The
#: lower bound a time limit must leave (``least_seconds``).
WARD_SECONDS_PER_N2D = 0.7e-9


@register(
    "kward",
    family="hierarchical",
    paper="Domingo-Ferrer & Mateo-Sanz 2002 (data-oriented paper), Algorithm 1 and §5.2",
    complexity=(
        "per Ward pass over m records: O(m log m) (1-D) or O(m²·d) (d > 1) time; O(n·d) memory; "
        "recursion on groups of >= 2k: typically a few passes, worst case O(n/k) passes"
    ),
    variable_size=True,
    least_seconds=lambda n, d, k: 0.0 if d == 1 else WARD_SECONDS_PER_N2D * n * n * d,
    params=(
        Param(
            "criterion",
            "str",
            "md",
            "step 1's end groups: 'pv' column ``variable``, 'sz' sum of z-scores, "
            "'fpc' first principal component, 'md' the two most distant records",
            choices=CRITERIA,
        ),
        ORDER,
        VARIABLE,
        Param(
            "recompute", "bool", False, "recompute the projection on each group in the recursion"
        ),
        Param(
            "grow",
            "str",
            "seed",
            "with 'md': 'seed' the k−1 records nearest the extreme, 'centroid' one by "
            "one the record nearest to the growing group's mean",
            choices=("centroid", "seed"),
        ),
    ),
)
def kward(X, k, *, seed, deadline, progress, criterion, order, variable, recompute, grow):
    """k-Ward (Algorithm 1): Ward merging from the two end groups, never joining two groups of >= k.

    Univariate data (d = 1, §4.1): the end groups are the k smallest and k largest values; Ward
    merges are restricted to groups adjacent in the sorted order, which keeps every group a run of
    consecutive values (Theorem 1, connected groups — the paper states k-Ward's 1-D groups are
    connected; an unrestricted Ward pass can jump over a group of >= k that it may not merge with).
    The criterion is then irrelevant.

    Multivariate data (§5.2): step 1 uses ``criterion`` to define the "first" and "last" k records:
    'pv' the k lowest / highest values of column ``variable``; 'sz' of the sum of z-scores;
    'fpc' of the first principal component; 'md' the maximum-distance criterion (the two most
    distant records and, for each, its k−1 nearest records). With 'md', grow='seed' (default) takes
    the k−1 records nearest the extreme itself (the literal "k−1 data vectors closest to it";
    lower SSE on census k = 3/4/5, eia k = 3/4 and tarragona k = 4); grow='centroid' adds one by
    one the record nearest to the growing group's mean (as the paper's Figure 2 example grows
    groups, "the vector closest to the group"), which reproduces the paper's Uk-W(MD) range for
    k = 4 on tarragona exactly (21.13 / 21.24). ``order`` says which end is "first":
    for the projections it only matters through ties (the two end groups are the same either way);
    for 'md' it decides which extreme takes its k−1 nearest records first when the two
    neighbourhoods overlap (the paper's Uk-W(MD) range). Ward merging uses the unprojected records.

    Recursion (step 3): "the data set to be considered is now restricted to the particular group".
    The maximum-distance criterion is naturally re-evaluated on that group. For the projections,
    recompute=False (default) ranks the group's records by the scores computed once on the whole
    data set; this reading reproduces the paper's Table 3 exactly on tarragona (Uk-W(SZ) 19.16 /
    24.31, Uk-W(FPC) 15.87 / 21.58 for k = 3 / 4). recompute=True recomputes the sum of z-scores
    or the principal component on the group itself (sometimes lower, sometimes higher SSE).

    Implementation: stored-data Ward (means and sizes only, Anderberg's "stored data" approach), a
    heap of adjacent-pair costs in 1-D and a nearest-neighbour chain in d > 1 (exact for Ward with
    the size rule, which keeps the distance reducible). Time per pass over m records O(m log m) in
    1-D, O(m²·d) in d > 1 (plus O(m²·d) for the farthest pair with 'md'); the recursion repeats a
    pass on every group of >= 2k records, so the total is typically O(n²·d) and at worst
    O(n³·d/k) (the paper's expression (8): one group of k split off per pass). Memory O(n·d).
    deadline: once expired no pass after the first starts and groups not yet split stay whole (a
    valid
    partition, some groups of 2k or more); a pass already running is not interrupted.
    """
    progress("kward", None, f"{len(X)} records")
    labels, passes = kward_labels(X, k, criterion, order, variable, recompute, grow, deadline)
    return MethodOutput(labels, extras={"ward_passes": passes})
