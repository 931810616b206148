"""Distances between records, registered once: the run option ``distance`` (API, command line,
app) takes the names of ``DISTANCES``, and ``transforms.method_matrix`` whitens the continuous
QIs by the registered covariance, so a new distance is one entry here (and its test).

"euclidean": the z-scores as they are (the standard IL figure's scale). "mahalanobis": whitened
by the covariance of the z-scored continuous columns. "robust": whitened by the Minimum
Covariance Determinant estimate (scikit-learn's ``MinCovDet``; Rousseeuw & Van Driessen 1999),
as sdcMicro's method "rmd". Whitening makes the Euclidean distance of the method's matrix the
Mahalanobis distance, so every Euclidean method gains it (``transforms.whiten``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Distance", "DISTANCES"]


@dataclass(frozen=True)
class Distance:
    """A distance between records for the continuous QIs: ``covariance(Z, seed) -> (location, S)``
    gives the covariance the columns are whitened by (None: euclidean, the z-scores as they are).
    The run option ``distance`` (API, command line, app) takes the names of ``DISTANCES``: a new
    distance is one entry here (and its test)."""

    name: str
    label: str
    reference: str
    covariance: Callable | None


def _sample_covariance(Z: np.ndarray, seed):
    return Z.mean(axis=0), np.atleast_2d(np.cov(Z, rowvar=False, bias=True))


def _mcd_covariance(Z: np.ndarray, seed):
    from sklearn.covariance import MinCovDet

    with warnings.catch_warnings():  # rank-deficient data: handled by dropping null directions
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        mcd = MinCovDet(random_state=0 if seed is None else int(seed)).fit(Z)
    return mcd.location_, np.atleast_2d(mcd.covariance_)


DISTANCES: dict[str, Distance] = {d.name: d for d in (
    Distance("euclidean", "Euclidean on z-scores", "the standard IL figure's scale", None),
    Distance("mahalanobis", "Mahalanobis", "whitened by the covariance of the z-scores", _sample_covariance),
    Distance("robust", "robust Mahalanobis (MCD)", "Rousseeuw & Van Driessen 1999; sdcMicro's rmd",
             _mcd_covariance),
)}
