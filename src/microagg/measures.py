"""Information loss, utility and disclosure-risk measures.

All measures take the original and the protected quasi-identifier values as (n, d) arrays in
the same row order (DataFrames are accepted and converted).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .partition import information_loss as _il

__all__ = [
    "information_loss",
    "correlation_discrepancy",
    "pc_weight_change",
    "fpc_variance_percent",
    "smallest_group",
    "is_k_anonymous",
    "utility_report",
]


def _values(A) -> np.ndarray:
    A = A.to_numpy(dtype=np.float64) if isinstance(A, pd.DataFrame) else np.asarray(A, dtype=np.float64)
    return A[:, None] if A.ndim == 1 else A


def _zscores(X: np.ndarray) -> np.ndarray:
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std == 0, 1.0, std)


def information_loss(X, labels, standardize: bool = True) -> float:
    """IL = 100·SSE/SST in percent, on z-scored columns by default (the standard figure)."""
    X = _values(X)
    return _il(_zscores(X) if standardize else X, labels)


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
    vals, vecs = np.linalg.eigh(_correlation(X))
    w = vecs[:, -1]
    return w, float(vals[-1] / vals.sum()) if vals.sum() > 0 else 0.0


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


def utility_report(X, Xp, labels=None) -> dict:
    """The standard figures comparing original and protected QI values."""
    X, Xp = _values(X), _values(Xp)
    Z = _zscores(X)
    sst = float(np.sum(Z**2))
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    Zp = (Xp - mean) / np.where(std == 0, 1.0, std)
    sse = float(np.sum((Z - Zp) ** 2))
    dr, sdr = correlation_discrepancy(X, Xp)
    out = {
        "information_loss": 0.0 if sst == 0 else 100.0 * sse / sst,
        "delta_r_mean": dr,
        "delta_r_std": sdr,
        "delta_w": pc_weight_change(X, Xp),
        "fpc_percent_original": fpc_variance_percent(X),
        "fpc_percent_protected": fpc_variance_percent(Xp),
        "smallest_group": smallest_group(Xp),
    }
    return out
