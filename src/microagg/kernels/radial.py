"""Radial lists: the records sorted by decreasing distance from an anchor, for the record
farthest from a point near the anchor (triangle inequality), and MDAV's farthest record from its
drifting centroid by two such lists (``farthest_from_centroid``), used by the brute-force and
the KD-tree kernels alike."""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .kdtree_build import _UB_SCALE
from .nearest import sqdist

__all__ = [
    "radial_build",
    "radial_skip_dead",
    "radial_farthest",
    "radial_index",
    "farthest_from_centroid",
]

RADIAL_REBUILD_WORK = (
    32  # rebuild a radial list once scans cost this many list lengths (measured: 8 → 32
)
# cut the farthest-from-centroid time 5.3 s → 3.6 s on 10^6 census-like records; 1024 is worse
# again)
#: the outermost records' list (radial_index); census-like 3·10^6, two threads: one list 88.5 s,
# : prefix 1/128 86.1 s, 1/32 76.4 s, 1/8 71.5 s, 1/4 70.3 s (prefix re-sorted after 8 lengths: 76.0
# s)
RADIAL_PREFIX_SHARE, RADIAL_PREFIX_MIN = 1 / 4, 1024


@kernel
def radial_build(X, members, anchor):
    """Records ``members`` sorted by decreasing distance from ``anchor``: (Xa, idx, rho).

    A farthest query from q near the anchor only scans the records with
    rho + |q − anchor| >= the best distance so far (triangle inequality).
    """
    L = members.shape[0]
    d = X.shape[1]
    rho = np.empty(L)
    for j in range(L):
        rho[j] = -np.sqrt(sqdist(X[members[j]], anchor))
    order = np.argsort(rho)  # decreasing distance
    Xa = np.empty((L, d))
    idx = np.empty(L, dtype=np.int64)
    rs = np.empty(L)
    for j in range(L):
        i = members[order[j]]
        idx[j] = i
        rs[j] = -rho[order[j]]
        for t in range(d):
            Xa[j, t] = X[i, t]
    head = np.zeros(1, dtype=np.int64)  # entries before head[0] are all dead
    return Xa, idx, rs, head


@kernel(inline="always")
def radial_skip_dead(R, alive):
    """Move R's head past its leading run of dead entries (once and for all: MDAV removes the
    outermost records first, so they pile up at the top of the list); returns the new head."""
    idx, head = R[1], R[3]
    j = head[0]
    while j < idx.shape[0] and not alive[idx[j]]:
        j += 1
    head[0] = j
    return j


@kernel
def radial_farthest(R, anchor, alive, q, skip):
    """(index, squared distance, entries scanned) of the alive record farthest from q, the record
    ``skip`` left out (−1: none).

    A leading run of dead entries is skipped once and for all (radial_skip_dead).

    R = radial_build(...) over a superset of the alive records; lowest index on ties.
    """
    Xa, idx, rho, head = R
    delta = np.sqrt(sqdist(q, anchor))
    best_i, best_d, best_r = -1, -1.0, -1.0
    L = idx.shape[0]
    j = radial_skip_dead(R, alive)
    while j < L:
        if (rho[j] + delta) * _UB_SCALE < best_r:
            break
        i = idx[j]
        if alive[i] and i != skip:
            dd = sqdist(Xa[j], q)
            if dd > best_d or (dd == best_d and i < best_i):
                best_d, best_i = dd, i
                best_r = np.sqrt(dd)
        j += 1
    return best_i, best_d, j - head[0]


@kernel
def radial_index(X, members, anchors, c):
    """The radial lists around c over the records ``members``: (tail, prefix). The prefix is a
    copy of the tail's first RADIAL_PREFIX_SHARE (the outermost records, which MDAV takes next)
    and the tail starts after it. anchors[0] is the tail's anchor, anchors[1] the prefix's."""
    tail = radial_build(X, members, c)
    Xa, idx, rho, head = tail
    size = min(idx.shape[0], max(RADIAL_PREFIX_MIN, int(idx.shape[0] * RADIAL_PREFIX_SHARE)))
    prefix = (Xa[:size].copy(), idx[:size].copy(), rho[:size].copy(), np.zeros(1, dtype=np.int64))
    head[0] = size
    for t in range(
        c.shape[0]
    ):  # element-wise: a row assignment compiles numba's shape-error path (1.4 s)
        anchors[0, t] = c[t]
        anchors[1, t] = c[t]
    return tail, prefix


@kernel
def farthest_from_centroid(X, tail, prefix, anchors, work, alive, c, skip):
    """Farthest alive record from the centroid c via two radial lists, the record ``skip`` left
    out (−1: none): (record, tail, prefix).

    The centroid drifts slowly, so few records pass the triangle-inequality test of a list
    around a nearby anchor. The outermost records, where the farthest one lies, are kept in a
    short prefix list, re-sorted around the current centroid once its scans have cost
    RADIAL_REBUILD_WORK times its length: on clustered data the outermost cluster's records are
    nearly equidistant from an old anchor, and a scan of one long list passed over all of them at
    every query. The tail is read only when its outermost record could be farther; it is rebuilt
    (and a new prefix cut) on the same rule. work = [tail scans, prefix scans] since the rebuilds.
    """
    best_i, best_d, scanned = radial_farthest(prefix, anchors[1], alive, c, skip)
    work[1] += scanned
    idx, rho = tail[1], tail[2]
    j = radial_skip_dead(tail, alive)
    if j < idx.shape[0] and (
        best_i < 0 or (rho[j] + np.sqrt(sqdist(c, anchors[0]))) * _UB_SCALE >= np.sqrt(best_d)
    ):
        i, dd, scanned = radial_farthest(tail, anchors[0], alive, c, skip)
        work[0] += scanned
        if dd > best_d or (dd == best_d and i < best_i):
            best_i, best_d = i, dd
    if work[0] > RADIAL_REBUILD_WORK * idx.shape[0] + 1000:
        tail, prefix = radial_index(X, np.nonzero(alive)[0], anchors, c)
        work[:] = 0
    elif work[1] > RADIAL_REBUILD_WORK * prefix[1].shape[0] + 1000:
        members = prefix[1][prefix[3][0] :]
        prefix = radial_build(X, members[alive[members]], c)
        for t in range(c.shape[0]):
            anchors[1, t] = c[t]
        work[1] = 0
    return best_i, tail, prefix
