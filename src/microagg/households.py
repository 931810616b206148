"""Households: a run with a household id (``household``, one column or several) groups so that
every published combination of quasi-identifiers comes from at least k households.

Two levels, nested (the design of issue 54):

1. household-level quasi-identifiers (continuous ones constant within every household, found from
   the data or declared with ``household_level``) are grouped on ONE record per household, in
   groups of at least k households (inside each stratum); each group publishes its households'
   mean, weighted by the household weight (the sampling weight when it is constant within every
   household), and every member publishes its household's group's values;
2. person-level quasi-identifiers are grouped by the run's method inside each household group
   (a stratum of its own), then every group holding fewer than k distinct households is merged
   into its nearest group (centroid distance) of the same household group.

Every person group thus lies inside one household group and holds at least k households: a
published combination (household-level values, person-level values) comes from at least k
households, and a household's members never make a group on their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .measures.risk.household_risk import (
    constant_within,
    household_codes,
    households_matching,
    households_sharing,
)

__all__ = [
    "Households",
    "HouseholdGrouping",
    "household_codes",
    "households_of",
    "group",
    "given_partition",
    "household_level_values",
    "households_per_group",
]


@dataclass(frozen=True)
class Households:
    """The run's households: the id column(s), each record's household code, the household-level
    QI columns and each household's weight (None: unweighted)."""

    columns: list
    codes: np.ndarray
    level: list
    weights: np.ndarray | None

    @property
    def count(self) -> int:
        return int(self.codes.max()) + 1 if len(self.codes) else 0

    def first_records(self) -> np.ndarray:
        """One record per household (its first), in household-code order."""
        first = np.full(self.count, -1, dtype=np.int64)
        order = np.arange(len(self.codes))[::-1]
        first[self.codes[order]] = order
        return first


def households_of(frame, columns, qi_columns, kinds, declared, sample_weights) -> Households:
    """The run's households from the data: codes, household-level QIs (the declared ones checked
    constant within every household, or else every QI found so, of any kind) and the household
    weights (the sampling weights when they are constant within every household)."""
    from .columns import quasi_identifiers

    codes = household_codes(frame, columns)
    candidates = list(declared) if declared else list(qi_columns)
    level = []
    for c in candidates:
        if constant_within(_comparable(frame, c, kinds[c], quasi_identifiers), codes):
            level.append(c)
        elif declared:
            raise InputError(
                f"household_level column {c} is not constant within every household "
                f"({', '.join(map(str, columns))})"
            )
    weights = None
    if sample_weights is not None and constant_within(np.asarray(sample_weights, float), codes):
        weights = np.zeros(int(codes.max()) + 1)
        weights[codes] = sample_weights
    return Households(list(columns), codes, level, weights)


def _comparable(frame, column, kind: str, quasi_identifiers) -> np.ndarray:
    """A QI column's values as floats that are equal where the values are (NaN: missing)."""
    if kind == "continuous":
        return quasi_identifiers(frame, [column], allow_missing=True)[:, 0]
    import pandas as pd

    found = pd.factorize(frame[column], use_na_sentinel=True)[0].astype(np.float64)
    found[found < 0] = np.nan
    return found


@dataclass
class HouseholdGrouping:
    """What the household-aware partition adds to the run's labels: each record's household
    group (the unit its household-level values are published over), and the merges the
    person-level repair made."""

    households: Households
    groups: np.ndarray  # household group per record
    merges: int  # person groups merged because they held fewer than k households
    multiple: int = 1  # household groups hold at least multiple·k households (MULTIPLES)


def households_per_group(labels: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The number of distinct households in each group (labels 0..g-1)."""
    g = int(labels.max()) + 1
    pairs = np.unique(labels.astype(np.int64) * (int(codes.max()) + 1) + codes)
    return np.bincount(pairs // (int(codes.max()) + 1), minlength=g)


# --- the partition -------------------------------------------------------------------------------


#: household groups hold at least m·k households, m tried in turn when there are both household-
#: and person-level QIs, until the SSE rises (the lowest kept): person groups need k households
#: each, so household groups of only k households leave the person-level grouping little to
#: choose (benchmarks/households_il.py)
MULTIPLES = (1, 2, 4, 8, 16)


def group(hh: Households, Z, slices, strata, k: int, run_unit):
    """Labels (person groups) and the household groups of the module docstring. ``Z``: the QI
    matrix (variable weights applied), ``slices``: each QI column's columns of Z, ``strata``:
    ``strata.Strata`` or None, ``run_unit(Z, k, rows)``: the run's method on some records (rows:
    their positions in the file, for the method's per-record parameters), its labels."""
    level = _matrix_columns(slices, hh.level)
    person = _matrix_columns(slices, [c for c in slices if c not in hh.level])
    Z = np.where(np.isnan(Z), 0.0, Z)  # a missing value at the mean (z-score 0) for the distances
    stratum = strata.codes if strata is not None else np.zeros(len(Z), dtype=np.int64)
    first = hh.first_records()
    hh_stratum = stratum[first]
    if (hh_stratum[hh.codes] != stratum).any():
        bad = int(hh.codes[np.flatnonzero(hh_stratum[hh.codes] != stratum)[0]])
        raise InputError(
            f"the household of row {int(first[bad]) + 1} has members in different strata: a "
            "household lies inside one stratum"
        )
    features = _household_features(Z, level, person, hh)
    best = None
    for m in MULTIPLES if level.size and person.size else (1,):
        groups = _household_groups(features, hh, hh_stratum, m * k, k, run_unit)
        labels, merges = _person_groups(Z[:, person], hh, groups, k, run_unit)
        cost = _sse(Z[:, level], groups, hh) + _sse(Z[:, person], labels, None)
        if best is not None and not cost < best[0]:
            break  # the SSE rose: larger household groups cost more on the household level
        best = (cost, labels, HouseholdGrouping(hh, groups, merges, m))
    return best[1], best[2]


#: the weight of a household's composition (its members' mean person-level values and its size,
#: z-scored) beside its household-level QIs when households are grouped: households alike in
#: their members leave the person-level grouping inside a household group closer records (on
#: ``datasets.household_survey(2000)``, six QIs, k = 3: IL 25.3 % without, 21.2 % at 0.5, 21.4 %
#: at 1, 23.4 % at 2)
COMPOSITION_WEIGHT = 0.5


def _household_features(Z, level, person, hh: Households) -> np.ndarray:
    """One row per household: its household-level QIs and, with person-level QIs beside them,
    its composition scaled by COMPOSITION_WEIGHT (no household-level QIs: no columns)."""
    first = hh.first_records()
    if not level.size:
        return np.empty((hh.count, 0))
    if not person.size:
        return np.ascontiguousarray(Z[np.ix_(first, level)])
    size = np.bincount(hh.codes, minlength=hh.count).astype(np.float64)
    means = np.zeros((hh.count, len(person)))
    np.add.at(means, hh.codes, Z[:, person])
    means /= size[:, None]
    spread = size.std()
    size_z = (size - size.mean()) / spread if spread > 0 else np.zeros_like(size)
    composition = COMPOSITION_WEIGHT * np.column_stack([means, size_z])
    return np.ascontiguousarray(np.hstack([Z[np.ix_(first, level)], composition]))


def _household_groups(features, hh: Households, hh_stratum, size: int, k: int, run_unit):
    """Each record's household group: households grouped on ``features`` (one row each) in
    groups of at least ``size`` households inside each stratum (one group per stratum without
    features)."""
    hh_group = np.full(hh.count, -1, dtype=np.int64)
    offset = 0
    for s in np.unique(hh_stratum):
        homes = np.flatnonzero(hh_stratum == s)
        if len(homes) < k:
            raise InputError(
                f"the file holds {len(homes)} household(s), fewer than k = {k}"
                if len(np.unique(hh_stratum)) == 1
                else f"a stratum holds {len(homes)} household(s), fewer than k = {k}: merge "
                "strata (--merge-small-strata) or use coarser ones"
            )
        if features.shape[1] and len(homes) >= 2 * size:
            lab = run_unit(np.ascontiguousarray(features[homes]), size, None)
        else:
            lab = np.zeros(len(homes), dtype=np.int64)
        hh_group[homes] = lab + offset
        offset = int(hh_group[homes].max()) + 1
    return hh_group[hh.codes]


#: units up to this many records also try the household-aware MDAV (O(records² / k) in numpy)
HOUSEHOLD_MDAV_LIMIT = 1000


def _person_groups(Zp, hh: Households, groups, k: int, run_unit):
    """Person groups inside each household group, each of at least k households: the run's
    method with the repair (``_at_least_k_households``), or the household-aware MDAV
    (``_household_mdav``) where it gives the lower SSE (units up to HOUSEHOLD_MDAV_LIMIT)."""
    labels = np.empty(len(Zp), dtype=np.int64)
    offset, merges = 0, 0
    order = np.argsort(groups, kind="stable")
    for rows in np.split(order, np.flatnonzero(np.diff(groups[order])) + 1):
        homes = hh.codes[rows]
        if Zp.shape[1] and len(np.unique(homes)) >= 2 * k:
            Zu = np.ascontiguousarray(Zp[rows])
            lab, merged = (
                _at_least_k_households(Zu, run_unit(Zu, k, rows), homes, k)
                if len(rows) >= 2 * k
                else (np.zeros(len(rows), dtype=np.int64), 0)
            )
            if len(rows) <= HOUSEHOLD_MDAV_LIMIT:
                other = _household_mdav(Zu, homes, k)
                if _sse(Zu, other, None) < _sse(Zu, lab, None):
                    lab, merged = other, 0
            merges += merged
        else:
            lab = np.zeros(len(rows), dtype=np.int64)
        labels[rows] = lab + offset
        offset += int(lab.max()) + 1
    return labels, merges


def _household_mdav(Z, homes, k: int) -> np.ndarray:
    """MDAV (Domingo-Ferrer & Mateo-Sanz 2002) with groups of k records of k DISTINCT
    households: the record farthest from the centroid of those left, then its nearest records
    of other households, one each; when fewer than 2k households are left, those left form the
    last group (with >= k households), or join their nearest groups one by one."""
    n = len(Z)
    labels = np.full(n, -1, dtype=np.int64)
    left = np.ones(n, dtype=bool)
    g = 0
    while len(np.unique(homes[left])) >= 2 * k:
        idx = np.flatnonzero(left)
        centre = Z[idx].mean(axis=0)
        r = idx[np.argmax(((Z[idx] - centre) ** 2).sum(axis=1))]
        near = idx[np.argsort(((Z[idx] - Z[r]) ** 2).sum(axis=1), kind="stable")]
        _, first = np.unique(homes[near], return_index=True)  # each household's nearest record
        members = near[np.sort(first)[:k]]
        labels[members] = g
        left[members] = False
        g += 1
    rest = np.flatnonzero(left)
    if len(np.unique(homes[rest])) >= k or g == 0:
        labels[rest] = g
        return labels
    sums = np.zeros((g, Z.shape[1]))
    np.add.at(sums, labels[~left], Z[~left])
    centroids = sums / np.bincount(labels[~left], minlength=g)[:, None]
    for i in rest:
        labels[i] = int(np.argmin(((centroids - Z[i]) ** 2).sum(axis=1)))
    return labels


def _sse(Z, labels, hh: Households | None) -> float:
    """Within-group sum of squares of Z's records to their group's mean (with ``hh``: the mean
    over one record per household, weighted by the household weights, as published)."""
    if not Z.shape[1]:
        return 0.0
    if hh is None:
        w = np.ones(len(Z))
    else:
        first = hh.first_records()
        w = np.zeros(len(Z))
        w[first] = 1.0 if hh.weights is None else hh.weights
    g = int(labels.max()) + 1
    sums = np.zeros((g, Z.shape[1]))
    np.add.at(sums, labels, Z * w[:, None])
    means = sums / np.bincount(labels, w, minlength=g)[:, None]
    return float(((Z - means[labels]) ** 2).sum())


def _matrix_columns(slices: dict, columns) -> np.ndarray:
    parts = [np.arange(slices[c].start, slices[c].stop) for c in columns]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def _at_least_k_households(Z, labels, codes, k):
    """Merges every group holding fewer than k distinct households into its nearest group
    (squared distance between centroids), fewest households first, until none is left; returns
    the labels (0..g-1) and the number of merges."""
    from .labels import relabel

    labels = relabel(np.asarray(labels, dtype=np.int64))
    g = int(labels.max()) + 1
    sums = np.zeros((g, Z.shape[1]))
    np.add.at(sums, labels, Z)
    sizes = np.bincount(labels, minlength=g).astype(float)
    homes = [set() for _ in range(g)]
    for label, code in zip(labels.tolist(), codes.tolist(), strict=True):
        homes[label].add(code)
    target = np.arange(g)
    live = np.ones(g, dtype=bool)
    merges = 0
    for b in sorted(range(g), key=lambda j: (len(homes[j]), j)):
        if len(homes[b]) >= k or not live[b]:
            continue
        live[b] = False
        if not live.any():  # the unit itself: cannot happen, a unit holds >= k households
            live[b] = True
            break
        centroids = sums / np.maximum(sizes, 1.0)[:, None]
        d = ((centroids - centroids[b]) ** 2).sum(axis=1)
        d[~live] = np.inf
        into = int(np.argmin(d))
        sums[into] += sums[b]
        sizes[into] += sizes[b]
        homes[into] |= homes[b]
        target[b] = into
        merges += 1
    return relabel(_resolve(target, live)[labels]), merges


def _resolve(target: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Each group's live group, following the merges."""
    out = target.copy()
    for j in range(len(out)):
        t = j
        while not live[t]:
            t = target[t]
        out[j] = t
    return out


def given_partition(hh: Households, labels: np.ndarray, k: int) -> HouseholdGrouping:
    """A given partition (an explore run's labels) checked by households: every group holds at
    least k households; the household groups are the groups linked by a shared household (so that
    every group lies inside one)."""
    per = households_per_group(labels, hh.codes)
    if per.min() < k:
        raise InputError(
            f"the given labels hold a group of {int(per.min())} household(s), fewer than k = {k}"
        )
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    g = int(labels.max()) + 1
    links = coo_matrix(
        (np.ones(len(labels)), (labels, hh.codes + g)), shape=(g + hh.count, g + hh.count)
    )
    _, component = connected_components(links, directed=False)
    return HouseholdGrouping(hh, component[labels], 0)


# --- what households publish ---------------------------------------------------------------------


def household_level_values(grouping: HouseholdGrouping, values: dict, categorical=()) -> dict:
    """Each household-level column's published values, given to every member: over the
    households of each household group (one record per household, weighted by the household
    weights when there are some), the mean of a continuous column, the most frequent category
    (the lowest code among ties) of a ``categorical`` one. ``values``: column -> original values
    (floats, NaN missing; category codes for a categorical column)."""
    hh = grouping.households
    first = hh.first_records()
    group_of_home = grouping.groups[first]
    g = int(group_of_home.max()) + 1
    w = np.ones(hh.count) if hh.weights is None else hh.weights
    out = {}
    for c in hh.level:
        x = np.asarray(values[c], dtype=np.float64)[first]
        present = ~np.isnan(x)
        if c in categorical:
            out[c] = _weighted_mode(x, present, group_of_home, w, g)[group_of_home][hh.codes]
            continue
        num = np.bincount(group_of_home[present], (w * x)[present], minlength=g)
        den = np.bincount(group_of_home[present], w[present], minlength=g)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = num / den
        published = mean[group_of_home][hh.codes]
        published[np.isnan(np.asarray(values[c], dtype=np.float64))] = np.nan
        out[c] = published
    return out


def _weighted_mode(x, present, group, w, g) -> np.ndarray:
    """Per group, the code of largest total weight (the lowest among ties)."""
    codes = x[present].astype(np.int64)
    width = int(codes.max()) + 1 if codes.size else 1
    totals = np.zeros((g, width))
    np.add.at(totals, (group[present], codes), w[present])
    return np.argmax(totals, axis=1).astype(np.float64)


# --- k-anonymity by households: counted, reached by suppression, verified -----------------------


def suppress_below_k(frame, suppression, fixed_columns, homes: np.ndarray, k: int, missing=()):
    """After the record-level plan (``suppression.plan``), the records whose key combination
    still comes from fewer than k households have all their keys suppressed: a record with every
    key missing matches its whole published QI group, which holds at least k households, and a
    suppression only adds matches. A key missing in the input (blank, NA or one of the
    ``missing`` tokens) is not suppressed again, so the count is the file's new blanks. Returns
    the suppression with those values added."""
    from dataclasses import replace

    from .measures.records import combination_codes, key_codes
    from .suppression import missing_as_na

    fixed = combination_codes(frame, list(fixed_columns))
    codes = key_codes(missing_as_na(frame, list(suppression.keys), missing), list(suppression.keys))
    codes[suppression.suppressed] = -1
    below = households_matching(codes, fixed, homes) < k
    if not below.any():
        return suppression
    suppressed = suppression.suppressed.copy()
    suppressed[below] |= codes[below] >= 0
    return replace(suppression, suppressed=suppressed)


def check_published(frame, grouped, roles) -> str | None:
    """The file as read back, by households: each household publishes one value of each
    household-level QI, and every published combination of QIs, strata and keys (a blank key
    matching any value, and so does a missing QI value) comes from at least k households.
    ``grouped``: the key variables as the
    reader groups them; ``roles``: ``measures.AuditRoles``. None when it holds, else what fails."""
    from .measures.records import combination_codes

    homes = household_codes(frame, roles.household)
    for c in roles.household_level:
        values = combination_codes(grouped, [c]).astype(np.float64)
        if not constant_within(values, homes):
            return f"a household publishes more than one value of its household-level {c}"
    qis = [c for c in roles.columns if c not in roles.strata]
    keys = [c for c in roles.keys if c not in roles.columns and c not in roles.strata]
    per = households_sharing(grouped, list(roles.strata), qis, keys, homes, roles.k)
    if (per < roles.k).any():
        return (
            f"{int((per < roles.k).sum())} records publish a combination that comes from fewer "
            f"than k = {roles.k} households"
        )
    return None
