"""Optimal cuts of an ordered sequence of records into consecutive groups of k..2k-1.

Used by optimal univariate microaggregation (Hansen & Mukherjee 2003: shortest path over
the sorted values) and by the tour methods (ICSM paper, Algorithm 5 Tour2Assignment,
where the sequence is a cyclic tour). Segment costs are the SSE of the segment, built
incrementally from each start with the Welford update ΔSSE = c/(c+1)·|x − mean|², which
stays accurate where prefix sums of squares would cancel. Time O(n·k·d), memory O(n).
"""

from __future__ import annotations

import numpy as np

from .jit import kernel


@kernel
def path_cut(Xo, k):
    """Optimal cut of the rows of Xo, in order, into consecutive groups of k..2k-1.

    Returns (cost, starts) where starts are the first positions of the groups.
    Xo has at least k rows. Ties prefer the smaller group ending a prefix, so the
    result is deterministic.
    """
    n, d = Xo.shape
    best = np.full(n + 1, np.inf)
    back = np.zeros(n + 1, dtype=np.int64)
    best[0] = 0.0
    mean = np.empty(d)
    for i in range(n):
        if best[i] == np.inf:
            continue
        cost = 0.0
        for t in range(d):
            mean[t] = Xo[i, t]
        for s in range(2, min(2 * k - 1, n - i) + 1):
            x = Xo[i + s - 1]
            c = s - 1
            dist = 0.0
            for t in range(d):
                diff = x[t] - mean[t]
                dist += diff * diff
                mean[t] += diff / s
            cost += c / s * dist
            if s >= k:
                v = best[i] + cost
                if v < best[i + s]:
                    best[i + s] = v
                    back[i + s] = i
        if k == 1:
            v = best[i]
            if v < best[i + 1]:
                best[i + 1] = v
                back[i + 1] = i
    # recover group starts
    count = 0
    j = n
    while j > 0:
        count += 1
        j = back[j]
    starts = np.empty(count, dtype=np.int64)
    j = n
    while j > 0:
        count -= 1
        starts[count] = back[j]
        j = back[j]
    return best[n], starts


def starts_to_labels(starts: np.ndarray, n: int) -> np.ndarray:
    """Group id per position from group start positions."""
    marks = np.zeros(n, dtype=np.int64)
    marks[starts[1:]] = 1
    return np.cumsum(marks)


def optimal_path_labels(Xo: np.ndarray, k: int) -> tuple[float, np.ndarray]:
    """(SSE, labels by position) of the optimal consecutive cut of Xo."""
    Xo = np.ascontiguousarray(Xo, dtype=np.float64)
    if Xo.ndim == 1:
        Xo = Xo[:, None]
    cost, starts = path_cut(Xo, k)
    return float(cost), starts_to_labels(starts, len(Xo))


def optimal_cyclic_labels(Xo: np.ndarray, k: int) -> tuple[float, np.ndarray]:
    """Tour2Assignment (ICSM Algorithm 5): optimal cut of a cyclic tour into groups of k..2k-1.

    Every cut of a cycle into groups of at most 2k-1 has a group boundary among any 2k-1
    consecutive positions, so the best of the path cuts starting at rotations 0..2k-2 is
    optimal for the cycle. Returns (SSE, labels by tour position).
    """
    Xo = np.ascontiguousarray(Xo, dtype=np.float64)
    if Xo.ndim == 1:
        Xo = Xo[:, None]
    n = len(Xo)
    best_cost, best_labels = np.inf, None
    for r in range(min(2 * k - 1, n)):
        cost, labels = optimal_path_labels(np.roll(Xo, -r, axis=0), k)
        if cost < best_cost:
            best_cost, best_labels = cost, np.roll(labels, r)
    return best_cost, best_labels


def fixed_size_by_rank(xs: np.ndarray, k: int, placement: str = "best") -> np.ndarray:
    """Group ids by rank for sorted values xs: groups of k, one group of k + (n mod k).

    placement='best' puts the larger group where it gives the lowest SSE (the data-oriented
    paper places it "around the modal value" as the option that reduces information loss most;
    trying every position realises that intent exactly). placement='mode' puts it at the
    group-aligned window of k + r values with the smallest range, the densest spot.
    """
    n = len(xs)
    q, r = divmod(n, k)
    if q == 0:
        return np.zeros(n, dtype=np.int64)
    # SSE of each candidate: larger group is group j, covering ranks [j*k, j*k+k+r)
    csum = np.concatenate([[0.0], np.cumsum(xs)])
    csq = np.concatenate([[0.0], np.cumsum(xs * xs)])

    def seg_sse(a, b):
        s = csum[b] - csum[a]
        return csq[b] - csq[a] - s * s / (b - a)

    j = np.arange(q)
    # groups before j start at multiples of k, groups after j are shifted by r
    small_start = np.arange(q) * k
    before = seg_sse(small_start, small_start + k)  # group i < j at [i*k, i*k+k)
    after = seg_sse(small_start + r, small_start + r + k)  # group i > j at [i*k+r, i*k+r+k)
    cb = np.concatenate([[0.0], np.cumsum(before)])
    ca = np.concatenate([[0.0], np.cumsum(after)])
    big = seg_sse(j * k, j * k + k + r)
    total = cb[j] + big + (ca[q] - ca[j + 1])
    if placement == "best":
        jbest = int(np.argmin(total))
    elif placement == "mode":
        jbest = int(np.argmin(xs[j * k + k + r - 1] - xs[j * k]))
    else:
        raise ValueError(f"unknown placement {placement!r}")
    ranks = np.arange(n)
    ids = np.where(
        ranks < jbest * k, ranks // k, np.where(ranks < jbest * k + k + r, jbest, (ranks - r) // k)
    )
    return ids.astype(np.int64)
