"""Utility and information-loss measures, as pure functions of the original and protected values.

All take the original and the protected quasi-identifier values as (n, d) arrays in the same row
order (DataFrames are accepted and converted). Measures that need a common scale standardise
BOTH files with the ORIGINAL's mean and population standard deviation, so that a loss of
variance in the protected file shows up instead of being standardised away. Their figures in an
audit are registered in ``comparison``; the categorical QIs' changes are ``categorical_report``.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..labels import il_percent, sse, sst
from ..standardize import axes_of_covariance, covariance, zscores
from .records import as_matrix, common_scale, identical_rows

__all__ = [
    "information_loss",
    "correlation_discrepancy",
    "pc_weight_change",
    "fpc_variance_percent",
    "smallest_group",
    "is_k_anonymous",
    "il1s",
    "il1s_per_value",
    "eigen_sdcmicro",
    "covariance_discrepancy",
    "eigenvalue_discrepancy",
    "category_change_rate",
    "category_distribution_distance",
    "categorical_report",
]


def information_loss(X, labels, standardize: bool = True) -> float:
    """IL = 100·SSE/SST in percent, on z-scored columns by default (the standard figure);
    standardize=False: on the values as given (already standardised, or raw units)."""
    X = as_matrix(X)
    Z = zscores(X) if standardize else X
    return il_percent(sse(Z, labels), sst(Z))


def _nan_as_zero(R: np.ndarray) -> np.ndarray:
    """A correlation matrix with the undefined entries (a constant column's) as 0."""
    return np.atleast_2d(np.nan_to_num(R, nan=0.0))


def correlations(X: np.ndarray, Xp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The correlation matrices (``np.corrcoef``, NaN where a column is constant) of both files,
    which Δr and sdcMicro's eigen share (one pass over each file instead of three)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.corrcoef(X, rowvar=False), np.corrcoef(Xp, rowvar=False)


def correlation_discrepancy(X, Xp, known=None) -> tuple[float, float]:
    """(mean, standard deviation) of |r'_ij − r_ij| over the d(d−1)/2 variable pairs.

    Δr and s_Δr of the data-oriented paper (Domingo-Ferrer & Mateo-Sanz 2002, Tables 2 and 4).
    ``known``: ``correlations(X, Xp)`` when computed already.
    """
    X, Xp = as_matrix(X), as_matrix(Xp)
    if X.shape[1] < 2:
        return 0.0, 0.0
    R, Rp = correlations(X, Xp) if known is None else known
    iu = np.triu_indices(X.shape[1], 1)
    diff = np.abs(_nan_as_zero(Rp)[iu] - _nan_as_zero(R)[iu])
    return float(diff.mean()), float(diff.std(ddof=1) if diff.size > 1 else 0.0)


def first_pc(C: np.ndarray) -> tuple[np.ndarray, float]:
    """Loadings of the first principal component of standardised variables of covariance C, and
    its share."""
    vals, axes = axes_of_covariance(C, C.shape[0])
    total = vals.sum()
    return axes[:, 0], float(vals[0] / total) if total > 0 else 0.0


def standardised_covariance(X: np.ndarray) -> np.ndarray:
    return covariance(zscores(X))


def pc_weight_change(X, Xp) -> float:
    """ΔW: mean over variables of the % change of their weight on the first principal component.

    Data-oriented paper, Tables 2 and 4: 100·|w'_j − w_j| / |w_j| averaged over the variables,
    with w, w' the first-PC loadings of the standardised original and protected data (the sign of
    w' is aligned with w, since an eigenvector's sign is arbitrary).
    """
    X, Xp = as_matrix(X), as_matrix(Xp)
    return weight_change(
        first_pc(standardised_covariance(X))[0], first_pc(standardised_covariance(Xp))[0]
    )


def weight_change(w: np.ndarray, wp: np.ndarray) -> float:
    if np.dot(w, wp) < 0:
        wp = -wp
    nz = np.abs(w) > 1e-12
    return float(np.mean(100.0 * np.abs(wp[nz] - w[nz]) / np.abs(w[nz]))) if nz.any() else 0.0


def fpc_variance_percent(X) -> float:
    """%FPC: percentage of the standardised data's variability explained by the first PC."""
    return 100.0 * first_pc(standardised_covariance(as_matrix(X)))[1]


def smallest_group(Xp) -> int:
    """Size of the smallest set of records sharing one combination of published QI values."""
    return int(np.bincount(identical_rows(as_matrix(Xp))).min())


def is_k_anonymous(Xp, k: int) -> bool:
    """True when every published combination of QI values is shared by at least k records."""
    return smallest_group(Xp) >= k


def il1s(X, Xp, sd=None) -> float:
    """IL1s as sdcMicro's ``dUtility(method="IL1s")``: the SUM over records and variables of
    |x_ij − x'_ij| / (√2·S_j).

    Yancey, Winkler & Creecy (2002), "Disclosure risk assessment in perturbative microdata
    protection", LNCS 2316, pp. 135–152. S_j is the sample standard deviation (n − 1) of original
    variable j. As in sdcMicro (R's ``sum(na.rm=TRUE)``), a constant variable contributes nothing
    where unchanged (0/0 is dropped) and makes the figure infinite where changed. It grows with
    n·p: ``il1s_per_value`` is the same sum divided by n·p. Checked against sdcMicro 5.8.1 by
    benchmarks/sdcmicro_parity.py. ``sd``: ``sample_sd(X)`` when computed already.
    """
    X, Xp = as_matrix(X), as_matrix(Xp)
    if X.shape != Xp.shape:
        raise InputError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    S = sample_sd(X) if sd is None else sd
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.nansum(np.abs(X - Xp) / (np.sqrt(2.0) * S)))


def sample_sd(X: np.ndarray) -> np.ndarray:
    """Each column's sample standard deviation (n − 1; NaN below two rows): the scale of IL1s,
    SDID, sdcMicro's eigen and the RMD intervals."""
    return X.std(axis=0, ddof=1) if len(X) > 1 else np.full(X.shape[1], np.nan)


def il1s_per_value(X, Xp) -> float:
    """microagg's IL1s per value: ``il1s`` / (n·p), the mean of |x_ij − x'_ij| / (√2·S_j), which
    does not grow with the size of the file (constant variables count 0 when unchanged)."""
    X = as_matrix(X)
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
    Z, Zp = common_scale(as_matrix(X), as_matrix(Xp))
    return covariance_figures(covariance(Z), covariance(Zp))


def covariance_figures(V: np.ndarray, Vp: np.ndarray) -> tuple[float, float]:
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
    Z, Zp = common_scale(as_matrix(X), as_matrix(Xp))
    return eigenvalue_figure(covariance(Z), covariance(Zp))


def eigenvalue_figure(V: np.ndarray, Vp: np.ndarray) -> float:
    lam = np.sort(np.linalg.eigvalsh(V))[::-1]
    lam_p = np.sort(np.linalg.eigvalsh(Vp))[::-1]
    keep = lam > 1e-12 * max(lam[0], 1e-300)
    if not keep.any():
        return 0.0
    return float(100.0 * np.mean(np.abs(lam[keep] - lam_p[keep]) / lam[keep]))


def eigen_sdcmicro(X, Xp, known=None, sds=None) -> float | None:
    """sdcMicro's ``dUtility(method="eigen")``: Σ_i |e_i − e'_i| / e_i, e (e') the eigenvalues,
    in decreasing order, of the correlation matrix of the original (protected) data, each file
    standardised by its own mean and standard deviation (R: ``eigen(var(scale(x)))``).

    Templ, Kowarik & Meindl (2015), J. Stat. Softw. 67(4). Invariant to the protection's loss of
    variance (only the correlation structure counts). None where sdcMicro returns NA: a constant
    column (its correlation is undefined); None also where the original's correlation matrix is
    singular (a column a linear combination of others, as in the census data): the smallest
    eigenvalue is then rounding noise and sdcMicro's figure a ratio of noises (0.26 in R, 3.37 with
    numpy's LAPACK, on the same census data). Checked against sdcMicro 5.8.1 by
    benchmarks/sdcmicro_parity.py. ``known``, ``sds``: ``correlations(X, Xp)`` and the sample
    standard deviations of both files when computed already.
    """
    X, Xp = as_matrix(X), as_matrix(Xp)
    if X.shape != Xp.shape:
        raise InputError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    if len(X) < 2 or not X.shape[1]:
        return None
    sd, sdp = (sample_sd(X), sample_sd(Xp)) if sds is None else sds
    if not (np.all(sd > 0) and np.all(sdp > 0)):
        return None
    d = X.shape[1]
    R, Rp = correlations(X, Xp) if known is None else known
    e = np.sort(np.linalg.eigvalsh(R.reshape(d, d)))[::-1]
    ep = np.sort(np.linalg.eigvalsh(Rp.reshape(d, d)))[::-1]
    if e[-1] <= SINGULAR_EIGEN * e[0]:
        return None  # a column a linear combination of others: e_min, and the ratio, are noise
    return float(np.sum(np.abs(e - ep) / e))


#: ``eigen_sdcmicro`` gives no figure when the original's smallest correlation eigenvalue is below
#: this share of its largest (census: 1.4e-16 here, -5.6e-17 in R: the ratio is noise of the
#: LAPACK build)
SINGULAR_EIGEN = 1e-10


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
    """Per categorical column of the DataFrames: share of changed values, total variation distance
    of the frequencies."""
    return {
        str(c): {
            "changed_share": category_change_rate(original[c], protected[c]),
            "distribution_tvd": category_distribution_distance(original[c], protected[c]),
        }
        for c in original.columns
    }
