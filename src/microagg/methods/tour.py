"""Tour methods: order the records into a cyclic tour, then cut it optimally (MDAV-MHM, NPN-MHM).

Domingo-Ferrer et al. 2006 map multivariate data to a path and cut it with the optimal univariate
method of Hansen & Mukherjee (MHM). The ICSM paper (Mortazavi & Jalili 2015, §4.2) treats the path
as a cyclic tour and cuts it with Tour2Assignment (Algorithm 5): groups of k..2k−1 consecutive
records, segment costs built incrementally, the best of the 2k−1 rotations wins, which is the
optimal cut of the cycle (``kernels.segments.optimal_cyclic_labels``).
"""

from __future__ import annotations

import numpy as np

from ..declarations import Param
from . import MethodOutput, register


def cut_tour(X: np.ndarray, tour: np.ndarray, k: int) -> tuple[float, np.ndarray]:
    """Tour2Assignment: (SSE, labels per record) of the optimal cut of the cyclic tour."""
    from ..kernels.segments import optimal_cyclic_labels

    cost, by_position = optimal_cyclic_labels(X[tour], k)
    labels = np.empty(len(tour), dtype=np.int64)
    labels[tour] = by_position
    return cost, labels


def regroup(
    X: np.ndarray, labels: np.ndarray, k: int, formation_order: bool = False
) -> tuple[float, np.ndarray]:
    """ICSM Algorithm 2 lines 5–6: the assignment as a tour (each group's records consecutive,
    groups visited nearest point next), then Tour2Assignment. Every group of k..2k−1 records
    stays a feasible segment, so the SSE never increases."""
    from ..kernels.jit import tree_leaf_size
    from ..kernels.tours import TOUR_LEAF_SIZE, TOUR_SCAN_MAX_N, groups_tour

    # drop empty groups (a perturbed assignment may have some), keeping the label order
    _, labels = np.unique(np.asarray(labels, dtype=np.int64), return_inverse=True)
    labels = labels.ravel().astype(np.int64)
    g = int(labels.max()) + 1
    leaf_size = tree_leaf_size(len(X), TOUR_LEAF_SIZE, TOUR_SCAN_MAX_N)
    tour = groups_tour(X, labels, g, formation_order, leaf_size)
    return cut_tour(X, tour, k)


#: npn-mhm's tour, measured (k = 3): census-like 0.31 s at 10^4, 4.2 s at 3·10^4, about 50 s at
#: 10^5 (3.6e-10 s per n²·d, CPU); Gaussian 10-d 33 s at 10^5 (3.3e-10, wall, load 2): the lower
#: bound a time limit must leave (``least_seconds``; 2.5e-10 let a 30 s limit start a 33 s tour)
NPN_SECONDS_PER_N2D = 3.3e-10


#: mdav-mhm's group tour and cut after MDAV take at most about this many times MDAV's own time
#: (measured, one thread, k = 3: census-like 0.31-0.32 at 10^5-3·10^5 records, Gaussian 10-d 1.2,
#: 0.84, 0.75 at 3·10^4, 10^5, 3·10^5): the tour starts only if that fits what the time limit leaves
TOUR_PER_MDAV = 1.25


@register(
    "mdav-mhm",
    family="tour",
    paper="Domingo-Ferrer et al. 2006 (MDAV-MHM); ICSM paper §4.2, Algorithm 5",
    complexity="O(n²·d/k + n·k²·d) time, O(n·d) memory",
    variable_size=True,
    params=(
        Param(
            "order",
            "str",
            "npn",
            "'npn': groups visited nearest point next from the farthest record's "
            "group (ICSM §4.2); 'formation': MDAV's formation order",
            choices=("npn", "formation"),
        ),
    ),
)
def mdav_mhm(X, k, *, seed, deadline, progress, order):
    """MDAV's groups stitched into a tour, cut optimally into groups of k..2k−1 (Tour2Assignment).

    order='npn' (default, ICSM §4.2): start with the group holding the record farthest from the
    centroid; each group is walked nearest point next and the next group is the one holding the
    record nearest to the last record placed. order='formation' visits MDAV's groups in the order
    MDAV formed them (label 0, 1, 2, ...), the literal MDAV-MHM ordering; it alternates between
    opposite extremes of the data, so its tour is longer and its SSE higher on census, tarragona
    and eia, hence not the default. With a time limit, MDAV stops at it as the mdav method does
    (``mdav.within_time``), and the tour starts only if TOUR_PER_MDAV × MDAV's time fits what
    is left (``step_fits``); else MDAV's partition is returned and ``extras['stopped']`` says so.
    """
    import time

    from ..kernels.mdav_labels import mdav_labels
    from . import step_fits, step_seconds
    from .mdav import within_time

    progress("mdav-mhm", None, "MDAV")
    started = time.perf_counter()
    out = within_time(X, mdav_labels(X, k, seconds=step_seconds(deadline)), k, "mdav-mhm's MDAV")
    if "reached" in out.extras or not step_fits(
        deadline, TOUR_PER_MDAV * (time.perf_counter() - started)
    ):
        note = "mdav-mhm reached the time limit before its tour: MDAV's partition is returned"
        out.extras["stopped"] = "; ".join(filter(None, (out.extras.get("stopped"), note)))
        return out
    progress("mdav-mhm", 0.5, "tour and Tour2Assignment")
    return MethodOutput(regroup(X, out.labels, k, order == "formation")[1], extras=out.extras)


@register(
    "npn-mhm",
    family="tour",
    paper="Domingo-Ferrer et al. 2006 (NPN-MHM); ICSM paper §4.2, Algorithm 5",
    complexity="O(n²·d + n·k²·d) time, O(n·d) memory",
    variable_size=True,
    interruptible=False,
    least_seconds=lambda n, d, k: NPN_SECONDS_PER_N2D * n * n * d,
)
def npn_mhm(X, k, *, seed, deadline, progress):
    """Nearest-point-next tour from the record farthest from the centroid, cut optimally
    (Tour2Assignment)."""
    from ..kernels.tours import npn_tour

    progress("npn-mhm", None, "nearest-point-next tour")
    tour = npn_tour(X)
    return cut_tour(X, tour, k)[1]
