"""Information loss, utility and disclosure-risk measures."""

from __future__ import annotations

import numpy as np

from .partition import information_loss as _il

__all__ = ["information_loss"]


def information_loss(X, labels, standardize: bool = True) -> float:
    """IL = 100·SSE/SST in percent, on z-scored columns by default."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if standardize:
        std = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(std == 0, 1.0, std)
    return _il(X, labels)
