"""z-scores and principal axes: the one home of standardisation (numpy only).

``Standardizer`` maps quasi-identifier values to z-scores and back; the pipeline, the measures,
the report, the methods and the out-of-core mode all use it. ``Moments`` accumulates the same
statistics over chunks (out of core: the data never sit in memory at once) and gives the
``Standardizer`` and the covariance of the z-scores. ``principal_axes`` / ``axes_of_covariance``
are the one home of principal axes (kward's projection, the blocks' and slabs' cuts, the report's
figures, the %FPC and ΔW measures).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .errors import RolesWarning

__all__ = [
    "Standardizer",
    "Moments",
    "zscores",
    "covariance",
    "principal_axes",
    "axes_of_covariance",
]


@dataclass
class Standardizer:
    """z-scores with the population standard deviation; constant columns get scale 1.

    Numerically safe for any finite input: a column whose magnitude is beyond 1e±150 is first
    divided by its largest absolute value (``unit``), so sums of values near 1e308 do not
    overflow and spreads near 1e-300 are not lost (other columns keep the plain arithmetic, so
    their z-scores are bit for bit what they always were); a column is constant only if all its
    values are equal. standardize=False keeps the raw values (mean 0, scale 1).
    """

    mean: np.ndarray
    scale: np.ndarray
    constant: list
    unit: np.ndarray | None = None  # per-column pre-scale (largest |value|); None: 1

    @classmethod
    def fit(
        cls, X: np.ndarray, names=None, standardize: bool = True, warn: bool = True
    ) -> Standardizer:
        X = np.asarray(X, dtype=np.float64)
        d = X.shape[1]
        if len(X) and np.isnan(X).any():  # missing values: the moments of the present ones
            return cls._fit_present(X, names, standardize, warn)
        constant_mask = (X == X[:1]).all(axis=0) if len(X) else np.ones(d, dtype=bool)
        constant = _constant_names(constant_mask, names, warn)
        if not standardize:
            return cls(np.zeros(d), np.ones(d), constant, None)
        peak = np.abs(X).max(axis=0) if len(X) else np.ones(d)
        if np.all((peak < 1e150) & ((peak > 1e-150) | (peak == 0))):
            std = X.std(axis=0)
            return cls(
                X.mean(axis=0), np.where(constant_mask | (std == 0), 1.0, std), constant, None
            )
        unit = np.where(peak > 0, peak, 1.0)
        U = X / unit
        std_u = U.std(axis=0)
        std_u = np.where(constant_mask | (std_u == 0), 1.0 / unit, std_u)
        return cls(U.mean(axis=0) * unit, std_u * unit, constant, unit)

    @classmethod
    def _fit_present(cls, X: np.ndarray, names, standardize: bool, warn: bool) -> Standardizer:
        """``fit`` over the present (non-NaN) values of each column: a column is constant when its
        present values are all equal (or none is present). Values beyond 1e±150 are pre-scaled as
        in ``fit``."""
        d = X.shape[1]
        present = ~np.isnan(X)
        first = np.array([X[present[:, j], j][0] if present[:, j].any() else 0.0 for j in range(d)])
        constant_mask = ((X == first) | ~present).all(axis=0)
        constant = _constant_names(constant_mask, names, warn)
        if not standardize:
            return cls(np.zeros(d), np.ones(d), constant, None)
        peak = np.where(present.any(axis=0), np.nanmax(np.abs(np.where(present, X, 0.0)), 0), 1.0)
        unit = None
        if not np.all((peak < 1e150) & ((peak > 1e-150) | (peak == 0))):
            unit = np.where(peak > 0, peak, 1.0)
        U = X if unit is None else X / unit
        counts = np.maximum(present.sum(axis=0), 1)
        mean_u = np.where(present, U, 0.0).sum(axis=0) / counts
        std_u = np.sqrt(np.where(present, (U - mean_u) ** 2, 0.0).sum(axis=0) / counts)
        if unit is None:
            return cls(mean_u, np.where(constant_mask | (std_u == 0), 1.0, std_u), constant, None)
        std_u = np.where(constant_mask | (std_u == 0), 1.0 / unit, std_u)
        return cls(mean_u * unit, std_u * unit, constant, unit)

    def transform(self, X: np.ndarray) -> np.ndarray:
        if self.unit is None:
            return (X - self.mean) / self.scale
        u = self.unit
        return (X / u - self.mean / u) / (self.scale / u)

    def inverse(self, Z: np.ndarray) -> np.ndarray:
        if self.unit is None:
            return Z * self.scale + self.mean
        u = self.unit
        return (Z * (self.scale / u) + self.mean / u) * u


def _constant_names(mask: np.ndarray, names, warn: bool) -> list:
    names = list(range(len(mask))) if names is None else list(names)
    constant = [names[j] for j in np.flatnonzero(mask)]
    if constant and warn:
        warnings.warn(
            f"constant quasi-identifier column(s) {', '.join(map(str, constant))}: "
            "they are kept and add nothing to the information loss",
            RolesWarning,
            stacklevel=4,
        )
    return constant


class Moments:
    """Count, means and the matrix of centred cross products of the rows seen so far, merged chunk
    by chunk (Chan, Golub & LeVeque 1979, pairwise update): ``partial_fit`` for data that never
    sit in memory at once. ``standardizer()`` is then the population z-scoring of all rows seen
    and ``zscore_covariance()`` the covariance of their z-scores (the correlation matrix)."""

    def __init__(self, d: int):
        self.n = 0
        self.mean = np.zeros(d)
        self.m2 = np.zeros((d, d))

    def partial_fit(self, X: np.ndarray) -> Moments:
        X = np.asarray(X, dtype=np.float64)
        nb = len(X)
        if nb == 0:
            return self
        mb = X.mean(axis=0)
        Xc = X - mb
        delta = mb - self.mean
        total = self.n + nb
        self.m2 += Xc.T @ Xc + np.outer(delta, delta) * (self.n * nb / total)
        self.mean += delta * (nb / total)
        self.n = total
        return self

    def std(self) -> np.ndarray:
        """Population standard deviations (1 for a constant column, as ``Standardizer``)."""
        std = np.sqrt(np.diag(self.m2) / max(self.n, 1))
        std[std == 0] = 1.0
        return std

    def standardizer(self, names=None, warn: bool = True) -> Standardizer:
        constant = _constant_names(np.diag(self.m2) == 0, names, warn)
        return Standardizer(self.mean.copy(), self.std(), constant, None)

    def zscore_covariance(self) -> np.ndarray:
        std = self.std()
        return self.m2 / max(self.n, 1) / np.outer(std, std)


def zscores(X: np.ndarray) -> np.ndarray:
    """Columns standardised to mean 0 and population standard deviation 1 (constant columns: 0)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    return Standardizer.fit(X, warn=False).transform(X)


def principal_axes(
    Z: np.ndarray, count: int = 1, sign: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues, axes): the ``count`` leading eigenvalues (descending) of the covariance of the
    rows of Z and their unit eigenvectors as columns (d, count) (``axes_of_covariance``).
    Fewer than two rows: the coordinate axes and zero eigenvalues."""
    return axes_of_covariance(covariance(Z), count, sign)


def covariance(Z: np.ndarray) -> np.ndarray:
    """The population covariance (d, d) of the rows of Z (zeros below two rows)."""
    Z = np.asarray(Z, dtype=np.float64)
    d = Z.shape[1]
    return np.atleast_2d(np.cov(Z, rowvar=False, bias=True)) if len(Z) > 1 else np.zeros((d, d))


def axes_of_covariance(
    C: np.ndarray, count: int = 1, sign: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues, axes) of a covariance matrix C (d, d): the ``count`` leading eigenvalues,
    descending, and their unit eigenvectors as columns (d, count).

    sign: None leaves LAPACK's signs; 'sum' makes each axis's loadings sum >= 0; 'largest' makes
    each axis's largest loading positive (reproducible pictures). A non-finite or all-zero C gives
    the coordinate axes and zero eigenvalues.
    """
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    d = C.shape[0]
    count = min(count, d)
    if not np.all(np.isfinite(C)) or not C.any():
        return np.zeros(count), np.eye(d)[:, :count]
    vals, vecs = np.linalg.eigh(C)
    vals, axes = vals[::-1][:count], vecs[:, ::-1][:, :count]
    if sign == "sum":
        axes = axes * np.where(axes.sum(axis=0) < 0, -1.0, 1.0)
    elif sign == "largest":
        top = axes[np.argmax(np.abs(axes), axis=0), np.arange(count)]
        axes = axes * np.where(top < 0, -1.0, 1.0)
    return vals, axes
