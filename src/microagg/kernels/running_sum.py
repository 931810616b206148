"""The compensated running sum of the remaining records (Neumaier 1974), the centroid MDAV's
kernels keep: updated in the same order in every kernel (the members of each new group in order
of their distance to the group's seed), so all see bit-identical centroids, more accurate than
re-summing the remaining records in floating point."""

from __future__ import annotations

import numpy as np

from .jit import kernel

__all__ = ["running_sum_init", "running_sum_add", "running_mean"]


@kernel
def running_sum_init(X):
    """Compensated column sums of X in row order: (sum, compensation)."""
    d = X.shape[1]
    s = np.zeros(d)
    comp = np.zeros(d)
    for i in range(X.shape[0]):
        running_sum_add(s, comp, X[i], 1.0)
    return s, comp


@kernel(inline="always")
def running_sum_add(s, comp, x, sign):
    """Neumaier-compensated s += sign·x, coordinate-wise (sign is +1 or -1)."""
    for t in range(s.shape[0]):
        v = sign * x[t]
        u = s[t] + v
        if abs(s[t]) >= abs(v):
            comp[t] += (s[t] - u) + v
        else:
            comp[t] += (v - u) + s[t]
        s[t] = u


@kernel
def running_mean(s, comp, m):
    c = np.empty(s.shape[0])
    for t in range(s.shape[0]):
        c[t] = (s[t] + comp[t]) / m
    return c
