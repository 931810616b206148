"""Whitening of the continuous quasi-identifiers, registered once: what the run option
``distance`` selects.

Every method groups records by the squared Euclidean distance of the matrix it is given (the
kernels hard-code it, with mean centroids). A ``Whitening`` changes that matrix, not the metric:
the continuous columns are mapped to W = (Z - location) V Λ^{-1/2}, from the eigendecomposition
S = V Λ V^T of a covariance S, so that the Euclidean distance of W is the Mahalanobis distance of
Z under S, and every Euclidean method gains it. The registry is keyed by the option's values,
named after the distance the methods then measure:

* "euclidean": the identity (no covariance): the z-scores as they are, the standard IL scale.
* "mahalanobis": the covariance of the z-scored continuous columns.
* "robust": the Minimum Covariance Determinant estimate (scikit-learn's ``MinCovDet``;
  Rousseeuw & Van Driessen 1999), as sdcMicro's method "rmd".

Metrics other than a Mahalanobis one (L1, Chebyshev, Gower with medians as centroids) would
need the kernels' distance and centroid changed, and are not offered. A new whitening is one
``register(Whitening(...))`` in one module: the option's choices (API, command line, app)
follow the registry. Information loss is always measured on the z-scores, not on W.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from .errors import InputError, ParameterError

__all__ = ["Whitening", "WHITENINGS", "WhiteningName", "register", "whiten"]

#: the names of the whitenings registered below, for type checkers (``public_types.Distance``, the
#: API's ``distance=``): a new whitening adds its name here too (checked when this module is
#: imported)
WhiteningName = Literal["euclidean", "mahalanobis", "robust"]


@dataclass(frozen=True)
class Whitening:
    """One whitening of the continuous QIs: ``covariance(Z, seed) -> (location, S)`` gives the
    location and covariance they are whitened by (None: the identity, the z-scores as they are).
    ``name`` is a value of the run option ``distance``."""

    name: str
    label: str
    reference: str
    covariance: Callable | None

    @property
    def identity(self) -> bool:
        """The method sees the z-scores as they are."""
        return self.covariance is None


#: the registered whitenings by name (the run option ``distance``'s choices)
WHITENINGS: dict[str, Whitening] = {}


def register(whitening: Whitening) -> Whitening:
    """Add a whitening to the registry (its name must be new)."""
    if whitening.name in WHITENINGS:
        raise ValueError(f"whitening {whitening.name!r} is already registered")
    WHITENINGS[whitening.name] = whitening
    return whitening


def _sample_covariance(Z: np.ndarray, seed):
    return Z.mean(axis=0), np.atleast_2d(np.cov(Z, rowvar=False, bias=True))


def _mcd_covariance(Z: np.ndarray, seed):
    from sklearn.covariance import MinCovDet

    with warnings.catch_warnings():  # rank-deficient data: handled by dropping null directions
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        mcd = MinCovDet(random_state=0 if seed is None else int(seed)).fit(Z)
    return mcd.location_, np.atleast_2d(mcd.covariance_)


register(
    Whitening(
        "euclidean", "Euclidean on z-scores (no whitening)", "the standard IL figure's scale", None
    )
)
register(
    Whitening(
        "mahalanobis",
        "Mahalanobis",
        "whitened by the covariance of the z-scores",
        _sample_covariance,
    )
)
register(
    Whitening(
        "robust",
        "robust Mahalanobis (MCD)",
        "Rousseeuw & Van Driessen 1999; sdcMicro's rmd",
        _mcd_covariance,
    )
)


if set(WHITENINGS) != set(get_args(WhiteningName)):
    raise TypeError(
        f"whitening.WhiteningName must list the registered whitenings: {sorted(WHITENINGS)}"
    )


def whiten(
    Z: np.ndarray, distance: str, seed: int | None = 0, fit_rows=None
) -> tuple[np.ndarray, float]:
    """(W, smallest kept eigenvalue): rows of Z whitened so that ||W_a - W_b|| is their
    Mahalanobis distance.

    ``distance``: a registered whitening with a covariance ("mahalanobis": the covariance of Z;
    "robust": the MCD covariance, ``random_state=seed``, 0 when seed is None so that runs
    repeat). W = (Z - location) V Λ^{-1/2} from the eigendecomposition S = V Λ V^T; directions
    with eigenvalue <= 1e-12·λ_max (collinear or constant columns) are dropped. The eigenvalue
    returned converts SSE bounds: SSE(Z) >= λ_min · SSE(W). fit_rows: estimate the location and
    covariance on these rows only (every row is whitened).
    """
    Z = np.asarray(Z, dtype=np.float64)
    if distance not in WHITENINGS or WHITENINGS[distance].identity:
        whitened = ", ".join(d for d in WHITENINGS if not WHITENINGS[d].identity)
        raise ParameterError(f"distance must be one of {whitened} to whiten, got {distance!r}")
    location, S = WHITENINGS[distance].covariance(Z if fit_rows is None else Z[fit_rows], seed)
    vals, vecs = np.linalg.eigh(S)
    top = max(float(vals.max()), 0.0)
    keep = vals > 1e-12 * top if top > 0 else np.zeros(len(vals), dtype=bool)
    if not keep.any():
        raise InputError(
            f"distance={distance!r}: the covariance of the continuous quasi-identifiers is zero"
        )
    T = vecs[:, keep] / np.sqrt(vals[keep])
    return np.ascontiguousarray((Z - location) @ T), float(vals[keep].min())
