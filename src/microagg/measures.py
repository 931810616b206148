"""Information loss, utility and disclosure-risk measures.

All measures take the original and the protected quasi-identifier values as (n, d) arrays in
the same row order (DataFrames are accepted and converted). Measures that need a common scale
standardise BOTH files with the ORIGINAL's mean and population standard deviation, so that a
loss of variance in the protected file shows up instead of being standardised away.
Memory stays O(n·d) (no n×n distance matrix): record linkage uses a KD-tree.
"""

from __future__ import annotations

import numpy as np

from .partition import il_percent, sse, sst
from .scaling import Standardizer, principal_axes, zscores

__all__ = [
    "information_loss",
    "correlation_discrepancy",
    "pc_weight_change",
    "fpc_variance_percent",
    "smallest_group",
    "is_k_anonymous",
    "utility_report",
    "il1s",
    "covariance_discrepancy",
    "eigenvalue_discrepancy",
    "distance_linkage_risk",
    "interval_disclosure_risk",
    "risk_report",
    "category_change_rate",
    "category_distribution_distance",
    "categorical_report",
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


def _first_pc(X: np.ndarray) -> tuple[np.ndarray, float]:
    """Loadings of the first principal component of the standardised variables, and its share."""
    vals, axes = principal_axes(zscores(X), X.shape[1])
    total = vals.sum()
    return axes[:, 0], float(vals[0] / total) if total > 0 else 0.0


def pc_weight_change(X, Xp) -> float:
    """ΔW: mean over variables of the % change of their weight on the first principal component.

    Data-oriented paper, Tables 2 and 4: 100·|w'_j − w_j| / |w_j| averaged over the variables,
    with w, w' the first-PC loadings of the standardised original and protected data (the sign of
    w' is aligned with w, since an eigenvector's sign is arbitrary).
    """
    X, Xp = _values(X), _values(Xp)
    w, _ = _first_pc(X)
    wp, _ = _first_pc(Xp)
    if np.dot(w, wp) < 0:
        wp = -wp
    nz = np.abs(w) > 1e-12
    return float(np.mean(100.0 * np.abs(wp[nz] - w[nz]) / np.abs(w[nz]))) if nz.any() else 0.0


def fpc_variance_percent(X) -> float:
    """%FPC: percentage of the standardised data's variability explained by the first PC."""
    return 100.0 * _first_pc(_values(X))[1]


def smallest_group(Xp) -> int:
    """Size of the smallest set of records sharing one combination of published QI values."""
    Xp = _values(Xp)
    _, counts = np.unique(Xp, axis=0, return_counts=True)
    return int(counts.min())


def is_k_anonymous(Xp, k: int) -> bool:
    """True when every published combination of QI values is shared by at least k records."""
    return smallest_group(Xp) >= k


def _common_scale(X: np.ndarray, Xp: np.ndarray, scaler=None) -> tuple[np.ndarray, np.ndarray]:
    """Both files on one scale: ``scaler`` (a run's ``Standardizer``) if given, else the original's
    mean and population standard deviation."""
    if X.shape != Xp.shape:
        raise ValueError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    if scaler is None:
        scaler = Standardizer.fit(X, warn=False)
    return scaler.transform(X), scaler.transform(Xp)


def il1s(X, Xp) -> float:
    """IL1s: mean over records and variables of |x_ij − x'_ij| / (√2·S_j).

    Yancey, Winkler & Creecy (2002), "Disclosure risk assessment in perturbative microdata
    protection", LNCS 2316, pp. 135–152; the same measure as sdcMicro's ``dUtility(method="IL1s")``.
    S_j is the sample standard deviation (n − 1) of original variable j; constant variables
    (S_j = 0) contribute 0 when unchanged and are otherwise measured in raw units.
    """
    X, Xp = _values(X), _values(Xp)
    if X.shape != Xp.shape:
        raise ValueError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    S = X.std(axis=0, ddof=1) if len(X) > 1 else np.zeros(X.shape[1])
    S = np.where(S > 0, S, 1.0)
    return float(np.mean(np.abs(X - Xp) / (np.sqrt(2.0) * S)))


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
    iu = np.triu_indices(Z.shape[1])
    V = np.atleast_2d(np.cov(Z, rowvar=False, bias=True))[iu]
    Vp = np.atleast_2d(np.cov(Zp, rowvar=False, bias=True))[iu]
    diff = np.abs(V - Vp)
    nz = np.abs(V) > 1e-12
    return float(diff.mean()), float(100.0 * np.mean(diff[nz] / np.abs(V[nz]))) if nz.any() else 0.0


def eigenvalue_discrepancy(X, Xp) -> float:
    """Relative eigenvalue discrepancy in %: 100·mean_i |λ_i − λ'_i| / λ_i.

    The eigenvalues λ (descending) of the covariance matrix of the original and λ' of the
    protected data, both standardised with the original's mean and standard deviation (λ are
    then the eigenvalues of the original's correlation matrix). This is the "eigen" utility
    measure of sdcMicro (Templ, Kowarik & Meindl 2015, J. Stat. Softw. 67(4); ``dUtility(method=
    "eigen")``), which reports the sum Σ|λ_i − λ'_i|/λ_i; we report the mean in percent so that
    it does not grow with the number of variables. Eigenvalues below 1e-12·λ_1 are left out.
    """
    Z, Zp = _common_scale(_values(X), _values(Xp))
    lam = np.sort(np.linalg.eigvalsh(np.atleast_2d(np.cov(Z, rowvar=False, bias=True))))[::-1]
    lam_p = np.sort(np.linalg.eigvalsh(np.atleast_2d(np.cov(Zp, rowvar=False, bias=True))))[::-1]
    keep = lam > 1e-12 * max(lam[0], 1e-300)
    if not keep.any():
        return 0.0
    return float(100.0 * np.mean(np.abs(lam[keep] - lam_p[keep]) / lam[keep]))


def distance_linkage_risk(X, Xp) -> float:
    """Distance-based record linkage (DBRL): share (0..1) of original records linked to their own protected record.

    Domingo-Ferrer & Torra (2001), "A quantitative comparison of disclosure control methods
    for microdata" (and Pagliuca & Seri 1999): each original record is linked to the protected
    record at the smallest Euclidean distance, on variables standardised with the original's
    mean and standard deviation; the risk is the share of correct links. Ties: when the own
    record is among the t protected records at the nearest distance (as always happens after
    microaggregation, where a whole group publishes the same values) the link is correct with
    probability 1/t, and 1/t is counted. Distances within 1e-9 (relative) of the nearest count
    as tied. KD-tree (scipy cKDTree): O(n log n) time on low-dimensional data, O(n·d) memory.
    """
    from scipy.spatial import cKDTree

    Z, Zp = _common_scale(_values(X), _values(Xp))
    n = len(Z)
    if n == 0:
        return 0.0
    tree = cKDTree(Zp)
    nearest, _ = tree.query(Z, k=1)
    own = np.sqrt(np.sum((Z - Zp) ** 2, axis=1))
    tol = 1e-9 * np.maximum(1.0, nearest)
    hit = own <= nearest + tol
    if not hit.any():
        return 0.0
    # number of protected records tied at the nearest distance (counts only: no n×n lists)
    ties = tree.query_ball_point(Z[hit], r=nearest[hit] + tol[hit], return_length=True)
    return float(np.sum(1.0 / np.maximum(ties, 1)) / n)


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
        raise ValueError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    if not (0 <= p <= 100):
        raise ValueError(f"the rank interval percentage p must be in [0, 100], got {p!r}")
    n, d = X.shape
    if n == 0:
        return 0.0
    m = int(np.floor(p * n / 100.0))
    inside = 0
    for j in range(d):
        ordered = np.sort(Xp[:, j])
        first = np.searchsorted(ordered, Xp[:, j], side="left")
        last = np.searchsorted(ordered, Xp[:, j], side="right") - 1
        lo = ordered[np.maximum(first - m, 0)]
        hi = ordered[np.minimum(last + m, n - 1)]
        inside += int(np.count_nonzero((X[:, j] >= lo) & (X[:, j] <= hi)))
    return inside / (n * d)


def risk_report(X, Xp, p: float = 10.0) -> dict:
    """Disclosure-risk figures: DBRL and interval disclosure (both as shares in 0..1)."""
    X, Xp = _values(X), _values(Xp)
    return {
        "record_linkage_dbrl": distance_linkage_risk(X, Xp),
        "interval_disclosure": interval_disclosure_risk(X, Xp, p),
        "interval_disclosure_p": float(p),
        "smallest_group": smallest_group(Xp),
    }


def utility_report(X, Xp, labels=None, scaler=None, categorical=()) -> dict:
    """The standard figures comparing original and protected QI values (utility / information loss).

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
            raise ValueError("categorical columns are named: pass the original and protected data as DataFrames")
        rest = [c for c in X.columns if c not in categorical]
        out = utility_report(X[rest], Xp[rest], labels) if rest else {}
        out["categorical"] = categorical_report(X[categorical], Xp[categorical])
        return out
    X, Xp = _values(X), _values(Xp)
    Z, Zp = _common_scale(X, Xp, scaler)
    total = sst(Z)
    loss = float(np.sum((Z - Zp) ** 2))  # to the published values (not always the group means)
    dr, sdr = correlation_discrepancy(X, Xp)
    cov_mae, cov_var = covariance_discrepancy(X, Xp)
    out = {
        "information_loss": il_percent(loss, total),
        "delta_r_mean": dr,
        "delta_r_std": sdr,
        "delta_w": pc_weight_change(X, Xp),
        "fpc_percent_original": fpc_variance_percent(X),
        "fpc_percent_protected": fpc_variance_percent(Xp),
        "smallest_group": smallest_group(Xp),
        "il1s": il1s(X, Xp),
        "covariance_mae": cov_mae,
        "covariance_variation_percent": cov_var,
        "eigenvalue_discrepancy_percent": eigenvalue_discrepancy(X, Xp),
    }
    return out


# --- categorical quasi-identifiers -------------------------------------------------------------


def category_change_rate(original, protected) -> float:
    """Share (0..1) of records whose category changed (one categorical column, same row order)."""
    import pandas as pd

    a = pd.Series(original).reset_index(drop=True)
    b = pd.Series(protected).reset_index(drop=True)
    if len(a) != len(b):
        raise ValueError(f"original and protected columns differ in length: {len(a)} and {len(b)}")
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
