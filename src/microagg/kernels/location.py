"""numba kernels for group locations: weighted median, trimmed mean, one-step estimate.

Definitions (and the constants passed in) are documented in ``microagg.representatives``, their
one home; each kernel works on one group's values sorted ascending with their weights.
"""

import numpy as np

from .jit import kernel

MEDIAN, TRIMMED, ONESTEP, LOWER_MEDIAN = 0, 1, 2, 3


@kernel
def _weighted_median(x, w, average):
    """x sorted ascending; sdcMicro's weightedQuantile(probs=0.5) (lower value if not average)."""
    total = 0.0
    for i in range(len(w)):
        total += w[i]
    half = 0.5 * total
    tol = 1e-12 * total
    c = 0.0
    for i in range(len(x)):
        c += w[i]
        if c >= half - tol:
            if average and abs(c - half) <= tol and i + 1 < len(x):
                return 0.5 * (x[i] + x[i + 1])
            return x[i]
    return x[len(x) - 1]


@kernel
def _trimmed_mean(x, w, trim):
    """x sorted ascending; drop whole records from each end while the dropped weight <= trim·W."""
    m = len(x)
    total = 0.0
    for i in range(m):
        total += w[i]
    cut = trim * total + 1e-12 * total
    lo, dropped = 0, 0.0
    while lo < m - 1 and dropped + w[lo] <= cut:
        dropped += w[lo]
        lo += 1
    hi, dropped = m - 1, 0.0
    while hi > lo and dropped + w[hi] <= cut:
        dropped += w[hi]
        hi -= 1
    s, sw = 0.0, 0.0
    for i in range(lo, hi + 1):
        s += w[i] * x[i]
        sw += w[i]
    return s / sw


@kernel
def _onestep(x, w, constant, consistency):
    med = _weighted_median(x, w, True)
    dev = np.abs(x - med)
    order = np.argsort(dev, kind="mergesort")
    mad = consistency * _weighted_median(dev[order], w[order], True)
    lo, hi = med - constant * mad, med + constant * mad
    s, sw = 0.0, 0.0
    for i in range(len(x)):
        v = min(max(x[i], lo), hi)
        s += w[i] * v
        sw += w[i]
    return s / sw


@kernel
def segment_statistic(x, w, starts, stat, trim, constant, consistency):
    """The statistic of each segment x[starts[s]:starts[s+1]] (sorted ascending within segments)."""
    g = len(starts) - 1
    out = np.empty(g)
    for s in range(g):
        a, b = starts[s], starts[s + 1]
        if stat == MEDIAN:
            out[s] = _weighted_median(x[a:b], w[a:b], True)
        elif stat == LOWER_MEDIAN:
            out[s] = _weighted_median(x[a:b], w[a:b], False)
        elif stat == TRIMMED:
            out[s] = _trimmed_mean(x[a:b], w[a:b], trim)
        else:
            out[s] = _onestep(x[a:b], w[a:b], constant, consistency)
    return out
