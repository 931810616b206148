"""Information loss, utility and disclosure-risk measures.

All measures take the original and the protected quasi-identifier values as (n, d) arrays in
the same row order (DataFrames are accepted and converted). Measures that need a common scale
standardise BOTH files with the ORIGINAL's mean and population standard deviation, so that a
loss of variance in the protected file shows up instead of being standardised away.
Memory stays O(n·d) (no n×n distance matrix): record linkage uses a KD-tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

import numpy as np

from .errors import InputError

from .partition import gap_percent, group_sizes, il_percent, sse, sst
from .standardize import Standardizer, axes_of_covariance, covariance, zscores

__all__ = [
    "information_loss",
    "correlation_discrepancy",
    "pc_weight_change",
    "fpc_variance_percent",
    "smallest_group",
    "is_k_anonymous",
    "utility_report",
    "il1s",
    "il1s_per_value",
    "eigen_sdcmicro",
    "covariance_discrepancy",
    "eigenvalue_discrepancy",
    "distance_linkage_risk",
    "interval_disclosure_risk",
    "risk_report",
    "category_change_rate",
    "category_distribution_distance",
    "categorical_report",
    "Measure",
    "MEASURES",
    "measure",
    "measures_of",
    "Figure",
    "Audit",
    "audit",
    "Comparison",
    "compare",
    "RunInputs",
]


def _values(A) -> np.ndarray:
    A = A.to_numpy(dtype=np.float64) if hasattr(A, "to_numpy") else np.asarray(A, dtype=np.float64)
    return A[:, None] if A.ndim == 1 else A


def information_loss(X, labels, standardize: bool = True) -> float:
    """IL = 100·SSE/SST in percent, on z-scored columns by default (the standard figure);
    standardize=False: on the values as given (already standardised, or raw units)."""
    X = _values(X)
    Z = zscores(X) if standardize else X
    return il_percent(sse(Z, labels), sst(Z))


def _correlation(X: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        R = np.corrcoef(X, rowvar=False)
    return np.atleast_2d(np.nan_to_num(R, nan=0.0))


def correlation_discrepancy(X, Xp) -> tuple[float, float]:
    """(mean, standard deviation) of |r'_ij − r_ij| over the d(d−1)/2 variable pairs.

    Δr and s_Δr of the data-oriented paper (Domingo-Ferrer & Mateo-Sanz 2002, Tables 2 and 4).
    """
    X, Xp = _values(X), _values(Xp)
    if X.shape[1] < 2:
        return 0.0, 0.0
    iu = np.triu_indices(X.shape[1], 1)
    diff = np.abs(_correlation(Xp)[iu] - _correlation(X)[iu])
    return float(diff.mean()), float(diff.std(ddof=1) if diff.size > 1 else 0.0)


def _first_pc(C: np.ndarray) -> tuple[np.ndarray, float]:
    """Loadings of the first principal component of standardised variables of covariance C, and its share."""
    vals, axes = axes_of_covariance(C, C.shape[0])
    total = vals.sum()
    return axes[:, 0], float(vals[0] / total) if total > 0 else 0.0


def _standardised_covariance(X: np.ndarray) -> np.ndarray:
    return covariance(zscores(X))


def pc_weight_change(X, Xp) -> float:
    """ΔW: mean over variables of the % change of their weight on the first principal component.

    Data-oriented paper, Tables 2 and 4: 100·|w'_j − w_j| / |w_j| averaged over the variables,
    with w, w' the first-PC loadings of the standardised original and protected data (the sign of
    w' is aligned with w, since an eigenvector's sign is arbitrary).
    """
    X, Xp = _values(X), _values(Xp)
    return _weight_change(_first_pc(_standardised_covariance(X))[0], _first_pc(_standardised_covariance(Xp))[0])


def _weight_change(w: np.ndarray, wp: np.ndarray) -> float:
    if np.dot(w, wp) < 0:
        wp = -wp
    nz = np.abs(w) > 1e-12
    return float(np.mean(100.0 * np.abs(wp[nz] - w[nz]) / np.abs(w[nz]))) if nz.any() else 0.0


def fpc_variance_percent(X) -> float:
    """%FPC: percentage of the standardised data's variability explained by the first PC."""
    return 100.0 * _first_pc(_standardised_covariance(_values(X)))[1]


def smallest_group(Xp) -> int:
    """Size of the smallest set of records sharing one combination of published QI values."""
    from .disclosure import identical_rows

    return int(np.bincount(identical_rows(_values(Xp))).min())


def is_k_anonymous(Xp, k: int) -> bool:
    """True when every published combination of QI values is shared by at least k records."""
    return smallest_group(Xp) >= k


def _common_scale(X: np.ndarray, Xp: np.ndarray, scaler=None) -> tuple[np.ndarray, np.ndarray]:
    """Both files on one scale: ``scaler`` (a run's ``Standardizer``) if given, else the original's
    mean and population standard deviation."""
    if X.shape != Xp.shape:
        raise InputError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    if scaler is None:
        scaler = Standardizer.fit(X, warn=False)
    return scaler.transform(X), scaler.transform(Xp)


def il1s(X, Xp) -> float:
    """IL1s as sdcMicro's ``dUtility(method="IL1s")``: the SUM over records and variables of
    |x_ij − x'_ij| / (√2·S_j).

    Yancey, Winkler & Creecy (2002), "Disclosure risk assessment in perturbative microdata
    protection", LNCS 2316, pp. 135–152. S_j is the sample standard deviation (n − 1) of original
    variable j. As in sdcMicro (R's ``sum(na.rm=TRUE)``), a constant variable contributes nothing
    where unchanged (0/0 is dropped) and makes the figure infinite where changed. It grows with
    n·p: ``il1s_per_value`` is the same sum divided by n·p. Checked against sdcMicro 5.8.1 by
    benchmarks/sdcmicro_parity.py.
    """
    X, Xp = _values(X), _values(Xp)
    if X.shape != Xp.shape:
        raise InputError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    S = X.std(axis=0, ddof=1) if len(X) > 1 else np.full(X.shape[1], np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.nansum(np.abs(X - Xp) / (np.sqrt(2.0) * S)))


def il1s_per_value(X, Xp) -> float:
    """microagg's IL1s per value: ``il1s`` / (n·p), the mean of |x_ij − x'_ij| / (√2·S_j), which
    does not grow with the size of the file (constant variables count 0 when unchanged)."""
    X = _values(X)
    return il1s(X, Xp) / X.size if X.size else 0.0


def covariance_discrepancy(X, Xp) -> tuple[float, float]:
    """(mean absolute error, mean variation in %) between the covariance matrices, over i ≤ j.

    Domingo-Ferrer & Torra (2001), "A quantitative comparison of disclosure control methods
    for microdata", in Confidentiality, Disclosure and Data Access, pp. 111–133 (the IL
    measures on V and V'): MAE = mean |v_ij − v'_ij| and mean variation = 100·mean |v_ij −
    v'_ij| / |v_ij| over the d(d+1)/2 entries on and above the diagonal. Both files are first
    standardised with the original's mean and standard deviation (so V is the original's
    correlation matrix and the scale is comparable across variables); entries with v_ij = 0
    are left out of the mean variation.
    """
    Z, Zp = _common_scale(_values(X), _values(Xp))
    return _covariance_figures(covariance(Z), covariance(Zp))


def _covariance_figures(V: np.ndarray, Vp: np.ndarray) -> tuple[float, float]:
    iu = np.triu_indices(V.shape[0])
    V, Vp = V[iu], Vp[iu]
    diff = np.abs(V - Vp)
    nz = np.abs(V) > 1e-12
    return float(diff.mean()), float(100.0 * np.mean(diff[nz] / np.abs(V[nz]))) if nz.any() else 0.0


def eigenvalue_discrepancy(X, Xp) -> float:
    """microagg's relative eigenvalue discrepancy in %: 100·mean_i |λ_i − λ'_i| / λ_i.

    λ (descending) are the eigenvalues of the covariance of the original and λ' of the
    protected data, BOTH standardised with the original's mean and standard deviation (λ are
    then the eigenvalues of the original's correlation matrix, and λ' see the variance the
    protection removed). The mean in percent does not grow with the number of variables.
    Eigenvalues below 1e-12·λ_1 are left out. sdcMicro's ``eigen`` (``eigen_sdcmicro``) differs:
    it standardises each file by its own scale and reports the sum.
    """
    Z, Zp = _common_scale(_values(X), _values(Xp))
    return _eigenvalue_figure(covariance(Z), covariance(Zp))


def _eigenvalue_figure(V: np.ndarray, Vp: np.ndarray) -> float:
    lam = np.sort(np.linalg.eigvalsh(V))[::-1]
    lam_p = np.sort(np.linalg.eigvalsh(Vp))[::-1]
    keep = lam > 1e-12 * max(lam[0], 1e-300)
    if not keep.any():
        return 0.0
    return float(100.0 * np.mean(np.abs(lam[keep] - lam_p[keep]) / lam[keep]))


def eigen_sdcmicro(X, Xp) -> float | None:
    """sdcMicro's ``dUtility(method="eigen")``: Σ_i |e_i − e'_i| / e_i, e (e') the eigenvalues,
    in decreasing order, of the correlation matrix of the original (protected) data, each file
    standardised by its own mean and standard deviation (R: ``eigen(var(scale(x)))``).

    Templ, Kowarik & Meindl (2015), J. Stat. Softw. 67(4). Invariant to the protection's loss of
    variance (only the correlation structure counts). None where sdcMicro returns NA: a constant
    column (its correlation is undefined); None also where the original's correlation matrix is
    singular (a column a linear combination of others, as in the census data): the smallest
    eigenvalue is then rounding noise and sdcMicro's figure a ratio of noises (0.26 in R, 3.37 with
    numpy's LAPACK, on the same census data). Checked against sdcMicro 5.8.1 by
    benchmarks/sdcmicro_parity.py.
    """
    X, Xp = _values(X), _values(Xp)
    if X.shape != Xp.shape:
        raise InputError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    if len(X) < 2 or not X.shape[1]:
        return None
    sd, sdp = X.std(axis=0, ddof=1), Xp.std(axis=0, ddof=1)
    if not (np.all(sd > 0) and np.all(sdp > 0)):
        return None
    e = np.sort(np.linalg.eigvalsh(np.corrcoef(X, rowvar=False).reshape(X.shape[1], X.shape[1])))[::-1]
    ep = np.sort(np.linalg.eigvalsh(np.corrcoef(Xp, rowvar=False).reshape(X.shape[1], X.shape[1])))[::-1]
    if e[-1] <= SINGULAR_EIGEN * e[0]:
        return None  # a column is a linear combination of others: e_min is rounding noise, and so is the ratio
    return float(np.sum(np.abs(e - ep) / e))


#: ``eigen_sdcmicro`` gives no figure when the original's smallest correlation eigenvalue is below
#: this share of its largest (census: 1.4e-16 here, -5.6e-17 in R: the ratio is noise of the LAPACK build)
SINGULAR_EIGEN = 1e-10


#: queries per KD-tree call in ``_bounded_query``: each call's search radius is the largest of its
#: queries' radii, so smaller calls prune more (the tree accepts one radius per call)
BOUNDED_QUERY_CALLS = 32


def _bounded_query(tree, Q, radius, k):
    """``tree.query(Q, k)`` for queries whose k-th neighbour is known to lie within ``radius``
    (one radius per query): the queries sorted by radius, in calls of similar radii, each with its
    largest radius (a little above it: the tree's bound may be exclusive) as the search bound,
    which prunes part of the tree. Distances and neighbours are the unbounded query's, except
    that for k > 1 a neighbour beyond the bound comes back as inf (the caller only asks whether it
    lies within the radius)."""
    n = len(Q)
    dist = np.empty((n, k)) if k > 1 else np.empty(n)
    idx = np.empty((n, k), dtype=np.intp) if k > 1 else np.empty(n, dtype=np.intp)
    order = np.argsort(radius, kind="stable")
    for part in np.array_split(order, min(BOUNDED_QUERY_CALLS, max(n, 1))):
        if len(part):
            bound = float(radius[part[-1]]) * (1.0 + 1e-9) + 1e-100  # the tree squares it: no underflow
            dist[part], idx[part] = tree.query(Q[part], k=k, distance_upper_bound=bound)
    if k == 1:  # a nearest beyond its radius is never expected: the unbounded query then
        lost = np.flatnonzero(~np.isfinite(dist))
        if len(lost):
            dist[lost], idx[lost] = tree.query(Q[lost], k=1)
    return dist, idx


#: above this many records, DBRL links a random sample of this many original records (each against
#: every protected record, so each link is exact): a nearest-neighbour query in 10 dimensions prunes
#: little, and all records would cost minutes at 10^6 (Gaussian 10-d: 17 s at 2·10^5); the share's
#: standard error is then at most 0.5/sqrt(10,000) = 0.5 percentage points (20,000 had taken 7.4 s of
#: the audit of 10^6 Gaussian 10-d records published in groups of 3)
DBRL_MAX_RECORDS = 10_000


def dbrl_sample(n: int) -> np.ndarray | None:
    """The original records DBRL links on n records: None (all) up to DBRL_MAX_RECORDS, else that
    many drawn without replacement by a fixed seed (the same file gets the same figure)."""
    if n <= DBRL_MAX_RECORDS:
        return None
    return np.sort(np.random.default_rng(0).choice(n, DBRL_MAX_RECORDS, replace=False))


def distance_linkage_risk(X, Xp, sample=None) -> float:
    """Distance-based record linkage (DBRL): share (0..1) of original records linked to their own protected record.

    Domingo-Ferrer & Torra (2001), "A quantitative comparison of disclosure control methods
    for microdata" (and Pagliuca & Seri 1999): each original record is linked to the protected
    record at the smallest Euclidean distance, on variables standardised with the original's
    mean and standard deviation; the risk is the share of correct links. Ties: when the own
    record is among the t protected records at the nearest distance (as always happens after
    microaggregation, where a whole group publishes the same values) the link is correct with
    probability 1/t, and 1/t is counted. Distances within 1e-9 (relative) of the nearest count
    as tied. KD-tree (scipy cKDTree): O(n log n) time on low-dimensional data, O(n·d) memory.
    ``sample``: indices of the original records to link (each against every protected record);
    the share is then theirs, an estimate of the whole file's (``dbrl_sample``).
    """
    from .disclosure import identical_rows

    Z, Zp = _common_scale(_values(X), _values(Xp))
    return _linkage(Z, Zp, identical_rows(Zp), sample)


def _linkage(Z: np.ndarray, Zp: np.ndarray, rows: np.ndarray, sample=None) -> float:
    """DBRL on both files' common scale; rows: codes of identical published records (``identical_rows``)."""
    from scipy.spatial import cKDTree

    from .disclosure import distinct_records

    if len(Z) == 0:
        return 0.0
    # the tree holds each distinct published record once, with its count: after microaggregation a
    # group publishes one record, so the tree is k times smaller (6.6 s -> 2.2 s at 3·10^5 x 13, k = 3,
    # the same figure; load 1)
    counts = np.bincount(rows)
    U = distinct_records(Zp, rows)
    tree = cKDTree(U)
    inverse = rows if sample is None else rows[sample]
    if sample is not None:
        Z = Z[sample]
    n = len(Z)
    own = np.sqrt(np.sum((Z - U[inverse]) ** 2, axis=1))
    # the own protected record bounds the search (the nearest is no farther): exact, and it prunes
    # part of the tree (Gaussian 10-d, 5·10^4 records, k = 3: 2.36 s -> 1.33 s, the same figure)
    nearest, at = _bounded_query(tree, Z, own, 1)
    tol = 1e-9 * np.maximum(1.0, nearest)
    hit = own <= nearest + tol
    if not hit.any():
        return 0.0
    # number of protected records tied at the nearest distance: the count of the nearest distinct
    # record, unless another distinct record is tied too (then the counts within the radius)
    ties = counts[at[hit]].astype(np.float64)
    if len(U) > 1:
        second, _ = _bounded_query(tree, Z[hit], nearest[hit] + tol[hit], 2)
        crowded = np.flatnonzero(second[:, 1] <= nearest[hit] + tol[hit])
        for j, near in zip(crowded, tree.query_ball_point(Z[hit][crowded], r=(nearest[hit] + tol[hit])[crowded])):
            ties[j] = counts[near].sum()
    return float(np.sum(1.0 / np.maximum(ties, 1)) / n)


def _inside_rank_intervals(x: np.ndarray, xp: np.ndarray, m: int) -> int:
    """How many x_i lie inside the rank interval of xp_i: the block of ranks xp_i's ties occupy
    (NaNs tie with each other, as numpy sorts them), widened by m ranks on each side. One sort of
    xp, the runs of equal sorted values, and x read in the same order: no per-record scatter of
    ranks (0.17 -> 0.08 s per column of 10^6)."""
    n = len(xp)
    order = np.argsort(xp)  # any order within a run of ties counts the same (quicksort: 3x the stable sort)
    ordered = xp[order]
    same = (ordered[1:] == ordered[:-1]) | (np.isnan(ordered[1:]) & np.isnan(ordered[:-1]))
    new_run = np.concatenate(([True], ~same))
    starts = np.flatnonzero(new_run)
    ends = np.append(starts[1:], n) - 1
    lo = ordered[np.maximum(starts - m, 0)]  # per run of ties
    hi = ordered[np.minimum(ends + m, n - 1)]
    run = np.cumsum(new_run) - 1
    x = x[order]
    return int(np.count_nonzero((x >= lo[run]) & (x <= hi[run])))


def interval_disclosure_risk(X, Xp, p: float = 10.0) -> float:
    """Interval disclosure by rank intervals: share (0..1) of original values inside their protected value's interval.

    Domingo-Ferrer & Torra (2001), "A quantitative comparison of disclosure control methods
    for microdata", and Mateo-Sanz, Sebé & Domingo-Ferrer (2004), "Outlier protection in
    continuous microdata masking", LNCS 3050: each protected variable is ranked and around each
    protected value x'_ij an interval is built whose ranks differ by at most p% of n from the
    value's rank; the risk is the share of original values x_ij that fall inside the interval
    around their own protected value, averaged over all values. Tied protected values (a
    group's common mean) share the whole block of ranks they occupy, and the interval extends
    ⌊p·n/100⌋ ranks below the block's first and above its last rank (the conservative reading:
    it can only raise the risk). p = 10 is the usual choice.
    """
    X, Xp = _values(X), _values(Xp)
    if X.shape != Xp.shape:
        raise InputError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    if not (0 <= p <= 100):
        raise InputError(f"the rank interval percentage p must be in [0, 100], got {p!r}")
    n, d = X.shape
    if n == 0:
        return 0.0
    m = int(np.floor(p * n / 100.0))
    inside = 0
    for j in range(d):
        inside += _inside_rank_intervals(X[:, j], Xp[:, j], m)
    return inside / (n * d)


def risk_report(X, Xp, p: float = 10.0) -> dict:
    """Disclosure-risk figures: DBRL and interval disclosure (both as shares in 0..1), the interval
    percentage p and the smallest group (the "risk" measures of the registry)."""
    return compare(X, Xp, p=p).group("risk")


def utility_report(X, Xp, labels=None, scaler=None, categorical=()) -> dict:
    """The standard figures comparing original and protected QI values (utility / information loss:
    the "utility" measures of the registry).

    ``scaler``: a run's ``Standardizer`` (``Result.scaler``), so that the information loss is the
    run's own (raw units with standardize=False); default: z-scores of the original.
    categorical: names of categorical QI columns (X and Xp are then DataFrames); they are measured
    by ``categorical_report`` (under "categorical") and the other figures use the other columns
    (z-scores of the original: a run's scaler also covers ordinal ranks, so it is not used).
    """
    if categorical:
        import pandas as pd

        categorical = list(categorical)
        if not (isinstance(X, pd.DataFrame) and isinstance(Xp, pd.DataFrame)):
            raise InputError("categorical columns are named: pass the original and protected data as DataFrames")
        rest = [c for c in X.columns if c not in categorical]
        out = utility_report(X[rest], Xp[rest], labels) if rest else {}
        out["categorical"] = categorical_report(X[categorical], Xp[categorical])
        return out
    return compare(X, Xp, scaler=scaler).group("utility")


# --- the registry of measures and the audit --------------------------------------------------------


@dataclass(frozen=True)
class Measure:
    """One figure of an audit: its name (the JSON key), label, unit, reference and how it is
    computed. ``groups``: "run" (a run's own figures: the pipeline's measure stage), "utility" and
    "risk" (original against protected file). ``scale``: the factor a value is shown with (a share
    shown in percent: 100); ``digits``: decimals shown."""

    name: str
    label: str
    unit: str
    reference: str
    compute: Callable
    groups: tuple
    digits: int = 4
    scale: float = 1.0
    aligned: bool = False  # compares each record's original and published values: needs the same row order


MEASURES: dict[str, Measure] = {}


def measure(name: str, label: str, unit: str, reference: str, groups, digits: int = 4, scale: float = 1.0,
            aligned: bool = False):
    """Register a measure (decorator of ``compute(inputs) -> value``; None: not defined for these
    inputs, left out of the audit): the command line, the report and the app enumerate
    ``MEASURES``, so a new measure is one function (and its test). ``aligned``: the measure pairs
    each original record with its published one, so it needs both files in the same row order
    (``evaluate`` of a shuffled output reads it from the run's manifest)."""
    groups = (groups,) if isinstance(groups, str) else tuple(groups)

    def deco(compute):
        if name in MEASURES and MEASURES[name].compute is not compute:
            raise ValueError(f"measure {name!r} registered twice")
        MEASURES[name] = Measure(name, label, unit, reference, compute, groups, digits, scale, aligned)
        return compute

    return deco


def measures_of(group: str) -> list[Measure]:
    """The registered measures of a group, in registration order."""
    _load_registry()
    return [m for m in MEASURES.values() if group in m.groups]


def _plain_value(v):
    """A figure's value as JSON holds it: int, float (finite) or None."""
    import math

    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    v = float(v)
    return v if math.isfinite(v) else None


@dataclass(frozen=True)
class Figure:
    """One measured value of a group of an audit, with its measure's description."""

    measure: Measure
    value: Any
    group: str

    @property
    def name(self) -> str:
        return self.measure.name

    def text(self) -> str:
        """The value as shown: scaled, with its decimals ("—" when unknown)."""
        v = self.value
        if v is None:
            return "—"
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return str(int(v))
        if isinstance(v, (float, np.floating)):
            return f"{float(v) * self.measure.scale:.{self.measure.digits}f}"
        return str(v)


@dataclass(frozen=True)
class Audit:
    """The figures of one run and of its published file, by group ("run", "utility", "risk"): the
    one object the command line's summary and --json, ``evaluate``, the report, the run manifest
    and the app read their figures from. ``warnings``: what a statistician must know about the
    published file (not k-anonymous on a key variable, an informative row order, records at
    high risk, ...); ``context``: what the figures were computed on (the key variables, how the
    file was read back, whether rows were aligned)."""

    figures: tuple = ()
    categories: dict = field(default_factory=dict)  # categorical QI column -> {changed_share, distribution_tvd}
    warnings: tuple = ()
    context: dict = field(default_factory=dict)

    def __getitem__(self, name):
        """The value of the figure ``name`` (a run's figure first)."""
        for f in sorted(self.figures, key=lambda f: f.group != "run"):
            if f.name == name:
                return f.value
        raise KeyError(name)

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def rows(self, group: str) -> list[Figure]:
        return [f for f in self.figures if f.group == group]

    def group(self, group: str) -> dict:
        """name -> value of a group's figures (the JSON object of that group)."""
        return {f.name: f.value for f in self.rows(group)}

    def with_figures(self, other: "Audit") -> "Audit":
        """This audit and another's figures (e.g. a run's and its files' comparison); the other's
        replace this one's of the same group and name."""
        keys = {(f.group, f.name) for f in other.figures}
        return Audit(tuple(f for f in self.figures if (f.group, f.name) not in keys) + other.figures,
                     {**self.categories, **other.categories}, tuple(dict.fromkeys(self.warnings + other.warnings)),
                     {**self.context, **other.context})

    def without(self, group: str, *names) -> "Audit":
        return Audit(tuple(f for f in self.figures if not (f.group == group and f.name in names)), self.categories,
                     self.warnings, self.context)

    def to_dict(self) -> dict:
        """JSON-ready: {group: {name: value}} per group, the categorical QIs' figures, the warnings
        and the context (non-finite numbers as None). ``from_dict`` reads it back."""
        groups: dict = {}
        for f in self.figures:
            groups.setdefault(f.group, {})[f.name] = _plain_value(f.value)
        return {"groups": groups, "categories": {str(c): {k: _plain_value(v) for k, v in m.items()}
                                                 for c, m in self.categories.items()},
                "warnings": list(self.warnings), "context": dict(self.context)}

    @classmethod
    def from_dict(cls, doc: dict) -> "Audit":
        """The audit ``to_dict`` wrote (a run manifest's); a figure whose measure this version does
        not register keeps its name as its label."""
        _load_registry()
        figures = []
        for group, values in (doc.get("groups") or {}).items():
            for name, value in values.items():
                m = MEASURES.get(name) or Measure(name, name, "", "", None, (group,))
                figures.append(Figure(m, value, group))
        return cls(tuple(figures), dict(doc.get("categories") or {}), tuple(doc.get("warnings") or ()),
                   dict(doc.get("context") or {}))


def audit(inputs, group: str, paired_only: bool = False) -> Audit:
    """Every registered measure of ``group`` on ``inputs`` (a ``Comparison`` or ``audit.FileAudit``
    for "utility" and "risk", the pipeline's measure-stage inputs for "run"). Measures that pair
    records (``aligned``) are left out when the inputs' rows are not aligned; ``paired_only``:
    only those (a shuffled file's other figures come from the file as it is: ``audit.combine``)."""
    _load_registry()
    aligned = getattr(inputs, "aligned", True)
    figures = [Figure(m, m.compute(inputs), group) for m in measures_of(group)
               if (aligned or not m.aligned) and (m.aligned or not paired_only)]
    return Audit(tuple(f for f in figures if f.value is not None or f.measure.name in _ALWAYS))


def _load_registry() -> None:
    """The disclosure measures of the file audit are registered by ``microagg.audit``."""
    import importlib

    importlib.import_module(".audit", __package__)


#: run figures listed even when unknown (None): the contract's lower bound and gap
_ALWAYS = ("lower_bound", "lower_bound_il", "gap")


class Comparison:
    """Original against protected continuous QI values (n, d), same rows in the same order, for
    the "utility" and "risk" measures. ``scaler``: a run's ``Standardizer`` (its IL is then the
    run's); ``p``: the rank-interval percentage of interval disclosure; ``published``: the published
    QI columns of every kind (categorical ones included), for the smallest group of identical
    published values."""

    def __init__(self, X, Xp, scaler=None, p: float = 10.0, published=None):
        self.X, self.Xp = _values(X), _values(Xp)
        if self.X.shape != self.Xp.shape:
            raise InputError(f"original and protected values differ in shape: {self.X.shape} and {self.Xp.shape}")
        self.scaler, self.p, self.published = scaler, float(p), published

    # what several measures share, computed once per comparison (an audit at 10^6 x 13 computed
    # the covariances six times and the published key frequencies twice)
    @cached_property
    def scaled(self) -> tuple[np.ndarray, np.ndarray]:
        """Both files on the run's scale (``scaler``), else on the original's z-scores."""
        return self.common if self.scaler is None else _common_scale(self.X, self.Xp, self.scaler)

    @cached_property
    def common(self) -> tuple[np.ndarray, np.ndarray]:
        """Both files on the original's z-scores (mean and population standard deviation)."""
        return _common_scale(self.X, self.Xp)

    @cached_property
    def covariances(self) -> tuple[np.ndarray, np.ndarray]:
        """The covariances of both files on the original's z-scores."""
        Z, Zp = self.common
        return covariance(Z), covariance(Zp)

    @cached_property
    def first_pcs(self) -> tuple[tuple, tuple]:
        """The first principal component (loadings, share) of each file, standardised on its own."""
        return _first_pc(self.covariances[0]), _first_pc(_standardised_covariance(self.Xp))

    @cached_property
    def published_rows(self) -> np.ndarray:
        """Codes of identical published continuous records (``disclosure.identical_rows``)."""
        from .disclosure import identical_rows

        return identical_rows(self.Xp)

    @cached_property
    def published_frequencies(self):
        """Frequencies of the published QI combinations, every kind (``published``)."""
        from .disclosure import key_frequencies

        return key_frequencies(self.published, list(self.published.columns), 1)

    @property
    def sse(self) -> float:
        """Squared distance of the protected values to the originals, on the common scale."""
        Z, Zp = self.scaled
        return float(np.sum((Z - Zp) ** 2))

    @property
    def sst(self) -> float:
        return sst(self.scaled[0])

    def audit(self, *groups) -> Audit:
        result = Audit()
        for g in groups or ("utility", "risk"):
            result = result.with_figures(audit(self, g))
        return result

    def group(self, group: str) -> dict:
        return audit(self, group).group(group)


def compare(X, Xp, scaler=None, p: float = 10.0, published=None) -> Comparison:
    """The comparison of original and protected values the file measures are computed on."""
    return Comparison(X, Xp, scaler, p, published)


@measure("information_loss", "information loss (IL, %)", "%", "100·SSE/SST on z-scores", ("run", "utility"),
         aligned=True)
def _information_loss(inputs):
    """A run's IL, or the IL of a protected file against its original (to the published values,
    which are not always the group means), from ``inputs.sse`` and ``inputs.sst``."""
    return il_percent(inputs.sse, inputs.sst)


@measure("il1s", "IL1s (sdcMicro dUtility: the sum)", "", "Yancey, Winkler & Creecy 2002; sdcMicro dUtility IL1s",
         "utility", aligned=True)
def _il1s(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return il1s(c.X, c.Xp)


@measure("il1s_per_value", "IL1s per value (sum / n·p)", "", "Yancey, Winkler & Creecy 2002", "utility",
         aligned=True)
def _il1s_per_value(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return il1s_per_value(c.X, c.Xp)


@measure("delta_r_mean", "correlation discrepancy Δr (mean)", "", "Domingo-Ferrer & Mateo-Sanz 2002", "utility")
def _delta_r_mean(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return correlation_discrepancy(c.X, c.Xp)[0]


@measure("delta_r_std", "correlation discrepancy Δr (sd)", "", "Domingo-Ferrer & Mateo-Sanz 2002", "utility")
def _delta_r_std(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return correlation_discrepancy(c.X, c.Xp)[1]


@measure("covariance_mae", "covariance discrepancy (MAE)", "", "Domingo-Ferrer & Torra 2001", "utility")
def _covariance_mae(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return _covariance_figures(*c.covariances)[0]


@measure("covariance_variation_percent", "covariance mean variation (%)", "%", "Domingo-Ferrer & Torra 2001",
         "utility", digits=2)
def _covariance_variation(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return _covariance_figures(*c.covariances)[1]


@measure("eigenvalue_discrepancy_percent", "relative eigenvalue discrepancy, common scale (%)", "%",
         "microagg; after Templ, Kowarik & Meindl 2015", "utility", digits=2)
def _eigen(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return _eigenvalue_figure(*c.covariances)


@measure("eigen_sdcmicro", "eigen (sdcMicro dUtility: sum over correlation eigenvalues)", "",
         "Templ, Kowarik & Meindl 2015; sdcMicro dUtility eigen", "utility", digits=6, aligned=True)
def _eigen_sdcmicro(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return eigen_sdcmicro(c.X, c.Xp)


@measure("delta_w", "first-PC weight change ΔW (%)", "%", "Domingo-Ferrer & Mateo-Sanz 2002", "utility", digits=3)
def _delta_w(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    (w, _), (wp, _) = c.first_pcs
    return _weight_change(w, wp)


@measure("fpc_percent_original", "variance on the first PC, original (%FPC)", "%", "Domingo-Ferrer & Mateo-Sanz 2002",
         "utility", digits=2)
def _fpc_original(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return 100.0 * c.first_pcs[0][1]


@measure("fpc_percent_protected", "variance on the first PC, protected (%FPC)", "%",
         "Domingo-Ferrer & Mateo-Sanz 2002", "utility", digits=2)
def _fpc_protected(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return 100.0 * c.first_pcs[1][1]


@measure("record_linkage_dbrl", "distance-based record linkage (DBRL, %)", "share",
         "share of records whose nearest protected record is their own (ties count 1/t); Domingo-Ferrer & Torra "
         "2001", "risk", digits=2, scale=100.0, aligned=True)
def _dbrl(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return _linkage(*c.common, c.published_rows, dbrl_sample(len(c.X)))


@measure("record_linkage_dbrl_records", "DBRL: original records linked", "records",
         f"all records up to {DBRL_MAX_RECORDS:,}; above, a random sample of that many (fixed seed), each linked "
         "against every protected record: the share is an estimate (standard error at most 0.5 points)", "risk",
         aligned=True)
def _dbrl_records(c: Comparison):
    if not c.X.shape[1]:
        return None
    return min(len(c.X), DBRL_MAX_RECORDS)


@measure("interval_disclosure", "interval disclosure (%)", "share",
         "share of original values inside the rank interval of their protected value; Mateo-Sanz, Sebé & "
         "Domingo-Ferrer 2004", "risk", digits=2, scale=100.0, aligned=True)
def _interval(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return interval_disclosure_risk(c.X, c.Xp, c.p)


@measure("interval_disclosure_p", "interval disclosure: rank interval p (%)", "%", "the interval's half-width in "
         "ranks, p% of n", "risk", digits=0, aligned=True)
def _interval_p(c: Comparison):
    return c.p


@measure("smallest_group", "smallest group of identical published QI values", "records",
         "k-anonymity of the published quasi-identifiers", ("utility", "risk"))
def _smallest(c: Comparison):
    if c.published is not None:  # every QI column, categorical ones included, as published
        return c.published_frequencies.smallest
    return smallest_group(c.Xp)


# --- a run's own figures (the pipeline's measure stage) ----------------------------------------


class RunInputs:
    """What a run's figures are computed from: the QI values as the run measured them (Z, the
    z-scores or the embedding), the published values on the same scale (Zp), the labels, the
    proven bound in the method's units with its conversions (whitening: SSE(Z) >= f·SSE(W);
    variable weights: SSE >= SSE_w / max w) and the weighted matrix the method saw."""

    def __init__(self, Z, Zp, labels, published_are_means: bool, bound=None, bound_factor: float = 1.0,
                 weights=None, Zw=None):
        self.Z, self.Zp, self.labels = Z, Zp, labels
        self.published_are_means = published_are_means
        self.proven, self.bound_factor, self.weights, self.Zw = bound, bound_factor, weights, Zw

    @cached_property
    def sse(self) -> float:
        if self.published_are_means:
            return sse(self.Z, self.labels)
        return float(np.sum((self.Z - self.Zp) ** 2))  # weighted means, robust aggregates, categories

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
        return float(self.proven) * self.bound_factor if self.bound_factor != 1.0 else float(self.proven)

    @cached_property
    def lower_bound(self) -> float | None:
        """The bound on the SSE of Z: converted from the whitened and the weighted SSE, at most SSE."""
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
            return np.concatenate([group_sizes(self.labels[:, j]) for j in range(self.labels.shape[1])])
        return group_sizes(self.labels)

    @cached_property
    def weighted_information_loss(self) -> float | None:
        if self.weights is None:
            return None
        w_sse = sse(self.Zw, self.labels) if self.published_are_means else float(
            np.sum(self.weights * (self.Z - self.Zp) ** 2))
        return il_percent(w_sse, sst(self.Zw))


@measure("sse", "SSE", "", "within-group sum of squares to the published values", "run", digits=6)
def _run_sse(r: RunInputs):
    return r.sse


@measure("sst", "SST", "", "total sum of squares", "run", digits=6)
def _run_sst(r: RunInputs):
    return r.sst


@measure("lower_bound", "lower bound on SSE", "", "proven by the method (column generation)", "run", digits=6)
def _run_bound(r: RunInputs):
    return r.lower_bound


@measure("lower_bound_il", "lower bound on IL (%)", "%", "100·bound/SST", "run")
def _run_bound_il(r: RunInputs):
    return None if r.lower_bound is None or r.sst == 0 else il_percent(r.lower_bound, r.sst)


@measure("gap", "gap to the bound (%)", "%", "100·(SSE − bound)/SSE", "run", digits=3)
def _run_gap(r: RunInputs):
    return None if r.lower_bound is None else gap_percent(r.sse, r.lower_bound)


@measure("weighted_information_loss", "weighted IL (%)", "%", "IL of the variable-weighted columns", "run")
def _run_weighted_il(r: RunInputs):
    return r.weighted_information_loss


@measure("groups", "groups", "groups", "", "run")
def _run_groups(r: RunInputs):
    return int(len(r.sizes))


@measure("group_size_min", "smallest group", "records", "every group holds at least k records", "run")
def _run_min(r: RunInputs):
    return int(r.sizes.min())


@measure("group_size_max", "largest group", "records", "", "run")
def _run_max(r: RunInputs):
    return int(r.sizes.max())


# --- categorical quasi-identifiers -------------------------------------------------------------


def category_change_rate(original, protected) -> float:
    """Share (0..1) of records whose category changed (one categorical column, same row order)."""
    import pandas as pd

    a = pd.Series(original).reset_index(drop=True)
    b = pd.Series(protected).reset_index(drop=True)
    if len(a) != len(b):
        raise InputError(f"original and protected columns differ in length: {len(a)} and {len(b)}")
    if len(a) == 0:
        return 0.0
    same = a.astype(object).to_numpy() == b.astype(object).to_numpy()
    return float(1.0 - np.mean(same))


def category_distribution_distance(original, protected) -> float:
    """Total variation distance (0..1) between the category frequencies before and after.

    TVD = ½·Σ_c |p_c − p'_c| over the categories of either column: the largest difference, over
    all sets of categories, between the share of records in the set before and after (0: the
    marginal distribution is preserved; 1: disjoint supports).
    """
    import pandas as pd

    p = pd.Series(original).astype(object).value_counts(normalize=True)
    q = pd.Series(protected).astype(object).value_counts(normalize=True)
    p, q = p.align(q, fill_value=0.0)
    return float(0.5 * np.abs(p.to_numpy() - q.to_numpy()).sum())


def categorical_report(original, protected) -> dict:
    """Per categorical column of the DataFrames: share of changed values, total variation distance of the frequencies."""
    return {
        str(c): {
            "changed_share": category_change_rate(original[c], protected[c]),
            "distribution_tvd": category_distribution_distance(original[c], protected[c]),
        }
        for c in original.columns
    }


# the file audit's disclosure measures register themselves there (it imports this module's names)
_load_registry()
