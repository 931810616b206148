"""Missing values in continuous quasi-identifiers: how records are grouped on the values they have,
and how every published mean is kept over at least k present values.

sdcMicro's MDAV (its C++ ``Mdav``) accepts missing values: two records' squared distance adds, per
variable, the squared difference of the z-scores when both are present, 0 when both are missing,
and a fixed penalty (the variable's squared range over its variance) when one is; a group's centre
and its published mean are taken over the present values, and a missing value stays missing. It
does not look at how many present values a mean is taken over: a group in which one record has an
income publishes that record's exact income.

microagg does the same in two steps, so that every registered method (each takes a complete
float64 matrix) groups records with missing values, and no published mean reveals a value:

1. ``grouping_matrix``: the method sees the z-scores with each missing value placed one range
   beyond its column's largest present value. Two records both missing a variable are at distance
   0 on it, a present and a missing value at least the squared range apart (sdcMicro's penalty,
   give or take the present value's place in the range): records group first with those missing
   the same variables, and then by the values they have. The placed values serve the grouping
   only; they are never published nor measured.
2. ``present_groups``: after the method, a group holding between 1 and k - 1 present values of
   some variable (the method mixed missingness patterns there, as a pattern with fewer than k
   records forces it to) is merged with the group of its stratum that covers that variable best,
   nearest first on the grouping matrix, until each group has for every variable either no
   present value or at least k. Merging keeps every group at least k records (and a group's
   households and strata as they were), so every published mean of a variable is a mean over at
   least k present values. Only a variable with fewer than k present values in a whole stratum
   can defeat this; its groups' cells are counted (``thin_cells``) and the summary says so.

The published mean of a variable is the group's mean over its present values
(``representatives.publish``); the records missing it publish it missing.
"""

from __future__ import annotations

import numpy as np

__all__ = ["grouping_matrix", "present_groups", "thin_cells", "missing_mask"]


def missing_mask(Z: np.ndarray) -> np.ndarray:
    """(n, d) True where a value is missing (NaN)."""
    return np.isnan(np.asarray(Z, dtype=np.float64))


def grouping_matrix(Z: np.ndarray) -> np.ndarray:
    """The matrix a method groups on: ``Z`` (z-scores, missing values NaN) with each missing value
    placed one range beyond the largest present value of its column (a column with no present
    value: 0). ``Z`` itself when nothing is missing."""
    Z = np.asarray(Z, dtype=np.float64)
    missing = np.isnan(Z)
    if not missing.any():
        return Z
    out = Z.copy()
    for j in np.flatnonzero(missing.any(axis=0)):
        present = Z[~missing[:, j], j]
        place = 0.0
        if present.size:
            top, bottom = float(present.max()), float(present.min())
            place = top + max(top - bottom, 1.0)
        out[missing[:, j], j] = place
    return np.ascontiguousarray(out)


def _counts(present: np.ndarray, labels: np.ndarray, g: int) -> np.ndarray:
    """(g, d) present values per group and column."""
    return np.stack(
        [np.bincount(labels, weights=present[:, j], minlength=g) for j in range(present.shape[1])],
        axis=1,
    ).astype(np.int64)


def _thin(counts: np.ndarray, k: int) -> np.ndarray:
    return (counts > 0) & (counts < k)


def present_groups(
    labels: np.ndarray, present: np.ndarray, G: np.ndarray, k: int, units=None
) -> np.ndarray:
    """Labels in which every group holds, for each column of ``present`` (n, d: True where the
    value is present), none or at least k present values: a group with 1..k-1 present values of a
    column is merged with the group of its unit (``units``: a code per record, e.g. the stratum;
    None: one unit) that leaves it the fewest such columns, nearest on ``G`` (the grouping matrix)
    among those. 2-D labels (one partition per column): each column on its own. Groups whose unit
    cannot cover a column stay as they are (``thin_cells`` counts them)."""
    labels = np.asarray(labels, dtype=np.int64)
    present = np.asarray(present, dtype=bool)
    if labels.ndim == 2:
        out = labels.copy()
        for j in range(labels.shape[1]):
            out[:, j] = present_groups(labels[:, j], present[:, [j]], G[:, [j]], k, units)
        return out
    if present.all():
        return labels
    from .partition import relabel

    labels = relabel(labels)
    g = int(labels.max()) + 1
    codes = np.zeros(len(labels), np.int64) if units is None else np.asarray(units, np.int64)
    unit_of = np.zeros(g, np.int64)
    unit_of[labels] = codes
    sizes = np.bincount(labels, minlength=g).astype(np.float64)
    sums = np.stack(
        [np.bincount(labels, weights=G[:, j], minlength=g) for j in range(G.shape[1])], 1
    )
    counts = _counts(present, labels, g)
    alive = np.ones(g, dtype=bool)
    into = np.arange(g)  # each group's merged group
    stuck = np.zeros(g, dtype=bool)
    while True:
        bad = np.flatnonzero(alive & ~stuck & _thin(counts, k).any(axis=1))
        if not bad.size:
            break
        a = int(bad[0])
        others = np.flatnonzero(alive & (unit_of == unit_of[a]))
        others = others[others != a]
        if not others.size:
            stuck[a] = True
            continue
        left = _thin(counts[others] + counts[a], k).sum(axis=1)
        centre = sums[a] / sizes[a]
        far = (((sums[others] / sizes[others, None]) - centre) ** 2).sum(axis=1)
        b = int(others[np.lexsort((others, far, left))[0]])
        alive[a] = False
        into[a] = b
        sizes[b] += sizes[a]
        sums[b] += sums[a]
        counts[b] += counts[a]
        stuck[b] = False
    while True:  # follow merged groups to the group they ended in
        nxt = into[into]
        if np.array_equal(nxt, into):
            break
        into = nxt
    return relabel(into[labels])


def thin_cells(labels: np.ndarray, present: np.ndarray, k: int) -> int:
    """Published cells (record, column) whose value is a mean over 1..k-1 present values: the
    present values of groups holding fewer than k of them in that column."""
    labels = np.asarray(labels, dtype=np.int64)
    present = np.asarray(present, dtype=bool)
    if present.all() or not len(labels):
        return 0
    total = 0
    for j in range(present.shape[1]):
        lab = labels[:, j] if labels.ndim == 2 else labels
        counts = np.bincount(lab, weights=present[:, j]).astype(np.int64)
        total += int(present[:, j][_thin(counts, k)[lab]].sum())
    return total
