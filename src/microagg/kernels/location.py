"""numba kernels for group locations: weighted median, trimmed mean, one-step estimate.

Definitions (and the constants passed in) are documented in ``microagg.representatives``, their
one home. Each ``segment_*`` kernel is one aggregation's: ``(x, w, starts, params) -> (g,)``, the
statistic of every segment x[starts[s]:starts[s+1]] (values sorted ascending within a segment,
w their weights; ``params`` the aggregation's parameters then its constants, as float64). The
registry (``representatives.AGGREGATIONS``) names the kernel of each aggregation.
"""

import numpy as np

from .jit import kernel


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
def segment_median(x, w, starts, params):
    """The weighted median of each segment (the mean of the two middle values at exactly half)."""
    out = np.empty(len(starts) - 1)
    for s in range(len(out)):
        out[s] = _weighted_median(x[starts[s] : starts[s + 1]], w[starts[s] : starts[s + 1]], True)
    return out


@kernel
def segment_lower_median(x, w, starts, params):
    """The lower weighted median of each segment (the lower value at exactly half)."""
    out = np.empty(len(starts) - 1)
    for s in range(len(out)):
        out[s] = _weighted_median(x[starts[s] : starts[s + 1]], w[starts[s] : starts[s + 1]], False)
    return out


@kernel
def segment_trimmed_mean(x, w, starts, params):
    """The weighted trimmed mean of each segment; params = (trim,)."""
    out = np.empty(len(starts) - 1)
    for s in range(len(out)):
        out[s] = _trimmed_mean(
            x[starts[s] : starts[s + 1]], w[starts[s] : starts[s + 1]], params[0]
        )
    return out


@kernel
def segment_onestep(x, w, starts, params):
    """The one-step Huber-type estimate of each segment; params = (constant, consistency)."""
    out = np.empty(len(starts) - 1)
    for s in range(len(out)):
        a, b = starts[s], starts[s + 1]
        out[s] = _onestep(x[a:b], w[a:b], params[0], params[1])
    return out
