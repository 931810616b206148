"""A lower bound above the LP's: the Lagrangian bound of the master (9) with the rows of a
region R of records kept integral (ours).

For any duals π (records) and σ <= 0 (subset-row cuts, rows "<= 1"), every partition P into
clusters of k..2k−1 records has
    SSE(P) = Σπ + Σ_S σ_S·(clusters of P holding two records of S) + Σ_{C∈P} rc(C)
           ≥ Σπ + Σσ + Σ_{C∈P} rc(C)
(a triple S lies in at most one cluster). Split P's clusters:
- those that miss R: rc(C) ≥ Σ_{i∈C} ρ'_i, ρ' from a completed exact pricing pass over the
  clusters that avoid R (the plain Lagrangian bound's ρ over every cluster is ≤ ρ'; a triple
  with two records in R is never hit by them); their records lie outside R: together
  ≥ Σ_{i∉R} min(ρ'_i, 0);
- those that meet R are disjoint and cover R, so their total rc is at least
      Δ_R = min Σ_{P'∈Q} f(P') over the partitions Q of R,  f(P') = min{rc(C) : C ∩ R = P'}.
A branch-and-bound from each record of R finds f exactly for every part P' with f(P') < G
(``region_part_pricing``: it keeps the least rc per part, not every cluster). The other parts cost
≥ G each and hold at most 2k − 1 records of R: a partition Q of R using some of them, covering
the records y ⊆ R with them, costs ≥ Σ_{enumerated P'∈Q} f(P') + G·max(1, |y|/(2k − 1)). So Δ_R
is at least the value z of the MIP over the enumerated parts plus that relaxation of the others
(binary u: some are used; y_j ≤ u; cost t ≥ G·u, t ≥ G·Σy/(2k − 1)), and
    SSE(P) ≥ Σπ + Σσ + Σ_{i∉R} min(ρ'_i, 0) + z        (z: HiGHS's proven dual bound).
With R empty this is the plain bound, with R every record and G large the optimum. The plain
bound keeps the LP's fractional covers of R; where a few outlying records share their clusters
fractionally (eia, k = 10) the integral cover of R costs more, and that is what Δ_R adds.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import highspy
import numpy as np

from ...deadline import Deadline
from ...kernels.pricing_bnb import region_part_pricing
from .column_pricing import Pricer
from .master import cut_arrays, new_highs, set_time_limit

__all__ = ["RegionBound", "outlying_records", "region_bound"]

#: the next enumeration threshold, when the cover MIP's best cover takes the parts not enumerated
THRESHOLD_STEP = 1.5
#: growth of the work (enumeration and MIP) per unit of threshold, to skip a deeper threshold that
#: cannot end in the time left (eia, k = 10, 112 records: 17 s at G = 8, 45 s at 12, 1115 s at 18)
GROWTH_PER_UNIT = 1.9
#: branch-and-bound nodes per second, a first guess for the node budget of a call (measured after)
NODE_RATE = 1_000_000.0


@dataclass
class RegionBound:
    """``bound`` = max(``plain``, ``region``): proven lower bounds on the optimal SSE."""

    bound: float
    plain: float  # Σπ + Σσ + Σ_i min(ρ_i, 0): the Lagrangian bound at these duals
    region: float  # Σπ + Σσ + Σ_{i∉R} min(ρ'_i, 0) + delta
    delta: float  # z: the proven lower bound on Δ_R
    region_size: int
    threshold: float  # G: every part P' with f(P') below it was found
    clusters: int  # clusters stored: each lowered the least rc of its part
    parts: int  # their distinct intersections with R
    mip_optimal: bool
    exact_pass: bool  # the ρ and ρ' passes had no seed cut short (valid bounds either way)
    seconds: dict

    def as_dict(self) -> dict:
        return asdict(self)


def outlying_records(Z: np.ndarray, norm: float) -> np.ndarray:
    """The records of z-scored data ``Z`` farther than ``norm`` from its centre (the origin):
    the region of the bound where a few far records share their clusters fractionally."""
    return np.flatnonzero(np.einsum("ij,ij->i", Z, Z) > float(norm) ** 2)


def region_bound(
    X: np.ndarray,
    k: int,
    pi: np.ndarray,
    sigma: np.ndarray,
    cuts: np.ndarray,
    region: np.ndarray,
    threshold: float,
    deadline: Deadline | float | None = None,
    seed_nodes: int = 20_000,
    max_threshold: float = np.inf,
) -> RegionBound | None:
    """The bound of the module docstring at the duals (pi, sigma) of the records and the cuts
    (triples of record ids), for the records ``region``. The enumeration starts at the threshold
    G = ``threshold`` and deepens (G × THRESHOLD_STEP, up to ``max_threshold``) while the MIP's
    best cover takes the relaxation of the parts not enumerated (then a larger G may prove
    more; an optimal cover of enumerated parts only is Δ_R itself) and the deeper enumeration
    may end in the time left; the bound of the last completed threshold is returned. None if
    the deadline passes before the first one is done."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = len(X)
    pi = np.asarray(pi, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    region = np.unique(np.asarray(region, dtype=np.int64))
    deadline = Deadline.of(deadline)
    seconds = {}
    tic = time.perf_counter()
    pricer, rho, exact = _rho_pass(
        X, k, pi, cut_arrays(cuts, n, sigma), deadline, seed_nodes, _retry_unit(pi)
    )
    seconds["rho_pass"] = round(time.perf_counter() - tic, 1)
    if rho is None:
        return None
    base = float(pi.sum() + sigma.sum())
    plain = base + float(np.minimum(rho, 0.0).sum())
    if len(region) == 0:
        return RegionBound(
            plain, plain, plain, 0.0, 0, float(threshold), 0, 0, True, exact, seconds
        )
    tic = time.perf_counter()
    rho_outside, exact_outside = _outside_rho(X, k, pi, sigma, cuts, region, deadline, seed_nodes)
    seconds["outside_rho_pass"] = round(time.perf_counter() - tic, 1)
    if rho_outside is None:
        return None
    exact &= exact_outside
    outside_term = float(np.minimum(rho_outside, 0.0).sum())
    best = None
    g = float(threshold)
    while True:
        found = _cover_at(X, k, pi, pricer, region, g, deadline, seconds)
        if found is None:
            break
        z, optimal, beyond, clusters, parts = found
        value = base + outside_term + z
        best = RegionBound(
            max(plain, value),
            plain,
            value,
            z,
            len(region),
            g,
            clusters,
            parts,
            optimal,
            exact,
            dict(seconds),
        )
        # an optimal cover of enumerated parts only is Δ_R itself; one that takes the relaxation
        # of the parts not enumerated (z may then be below G: negative parts beside it) binds at G
        if (optimal and not beyond) or g >= max_threshold:
            break
        g = _deeper_threshold(g, max_threshold, seconds, deadline)
        if g is None:
            break
    return best


def _cover_at(X, k, pi, pricer: Pricer, region, g: float, deadline: Deadline, seconds: dict):
    """At the threshold G = g: the region's parts with rc < G enumerated, then the MIP's best
    cover of the region by them. Returns (z, optimal, beyond, clusters, parts enumerated), or
    None when the deadline passes first; ``seconds`` records both steps' times."""
    tic = time.perf_counter()
    found = _region_parts(X, k, pi, pricer, region, g, deadline)
    seconds[f"enumeration_{g:g}"] = round(time.perf_counter() - tic, 1)
    if found is None:
        return None
    keys, costs, clusters = found
    tic = time.perf_counter()
    z, optimal, beyond = _cover_bound(keys, costs, len(region), g, 2 * k - 1, deadline)
    seconds[f"mip_{g:g}"] = round(time.perf_counter() - tic, 1)
    if z is None:
        return None
    return z, optimal, beyond, clusters, len(costs)


def _deeper_threshold(g: float, max_threshold: float, seconds: dict, deadline: Deadline):
    """The next threshold (G × THRESHOLD_STEP, at most ``max_threshold``), or None when its
    enumeration and MIP, extrapolated from those at G by GROWTH_PER_UNIT, would not end in the
    time left."""
    deeper = min(g * THRESHOLD_STEP, max_threshold)
    spent = seconds[f"enumeration_{g:g}"] + seconds[f"mip_{g:g}"]
    if spent * GROWTH_PER_UNIT ** (deeper - g) > deadline.remaining():
        return None
    return deeper


def _retry_unit(pi) -> float:
    """Pricer.retry_unit from the scale of the duals of every record."""
    return 1e-3 * float(np.maximum(pi, 0.0).mean())


def _rho_pass(X, k, pi, cuts: tuple, deadline: Deadline, seed_nodes: int, retry_unit: float):
    """A branch-and-bound pricer over X with the cuts (cut_arrays' form), and its exact pass at
    the duals pi: (pricer, rho with rho_i ≤ rc(C)/|C| for every cluster C ∋ i or None when out
    of time, no seed cut short?)."""
    pricer = Pricer(X, k, "bnb", deadline, 5_000_000, seed_nodes)
    pricer.set_cuts(*cuts)
    pricer.retry_unit = retry_unit
    _, _, rho, exact = pricer.exact_pass(pi, 0.0)
    return pricer, rho, exact


def _outside_rho(X, k, pi, sigma, cuts, region, deadline: Deadline, seed_nodes: int):
    """ρ'_i ≤ rc(C)/|C| for every cluster C ∋ i that avoids the region, for the records i outside
    it (an exact pricing pass over them alone, with the cuts such a cluster can hit); (None,
    False) when out of time."""
    outside = np.ones(len(X), dtype=bool)
    outside[region] = False
    m = int(outside.sum())
    if m == 0:
        return np.zeros(0), True
    index = np.full(len(X), -1, dtype=np.int64)
    index[outside] = np.arange(m)
    cuts = np.asarray(cuts, dtype=np.int64).reshape(-1, 3)
    # a cluster that avoids R can hold two records of a triple with at most one in R: that one
    # becomes a dummy record m (never in a cluster), so the cut acts on the other two
    reachable = (~outside[cuts]).sum(axis=1) <= 1
    local = np.where(outside[cuts[reachable]], index[cuts[reachable]], m)
    cptr, ccut, cpen = cut_arrays(local, m + 1, sigma[reachable])
    _, rho, exact = _rho_pass(
        X[outside],
        k,
        pi[outside],
        (cptr[: m + 1], ccut[: cptr[m]], cpen),
        deadline,
        seed_nodes,
        _retry_unit(pi),
    )
    return rho, exact


def _region_parts(X, k, pi, pricer: Pricer, region, threshold, deadline: Deadline):
    """f(P') of the module docstring for every part P' (a cluster's intersection with the
    region, as a bit mask over its records) with f(P') < G: the least rc of the clusters with
    that intersection (kernels/pricing_bnb.region_part_pricing). Each record of the region seeds the
    clusters it meets first (in order of decreasing dual), the later ones are its candidates
    only when a bound allows. Returns (masks, least rcs, clusters stored); None when out of
    time."""
    n = len(X)
    knn_sum, cuts = pricer.knn_sum, pricer.cuts
    position = np.full(n, -1, dtype=np.int64)
    order = region[np.argsort(-pi[region], kind="stable")]
    position[region] = np.arange(len(region))
    words = (len(region) + 62) // 63
    table = (
        np.zeros((1024, words), dtype=np.int64),
        np.full(1024, np.inf),
        np.zeros(1024, dtype=bool),
        0,
    )
    allowed = np.ones(n, dtype=bool)
    stored = 0
    g = float(threshold)
    node_rate = NODE_RATE
    # a cluster T ∋ s, j of size eta with rc(T) < G has (completion bound of kernels/pricing.py
    # from S = {s, j}, dropping its distance terms)
    # ‖x_j − x_s‖²/2 − π_s − π_j + rest[eta] < G, rest[eta] = the sum of the eta − 2 smallest
    # D_t(eta−3)/(2·eta) − π_t (over every record: it does not depend on the seed)
    sizes = range(k, min(2 * k, n + 1))
    rest = {
        eta: (
            np.partition(knn_sum[:, eta - 3] / (2.0 * eta) - pi, eta - 2)[: eta - 2].sum()
            if eta > 2
            else 0.0
        )
        for eta in sizes
    }
    for s in order:
        diff = X - X[s]
        d2 = np.einsum("ij,ij->i", diff, diff)
        for eta in sizes:
            cand = np.flatnonzero((d2 / 2.0 - pi[s] - pi + rest[eta] < g) & allowed)
            cand = cand[cand != s]
            if len(cand) < eta - 1:
                continue
            left = deadline.remaining()
            if left <= 0:
                return None
            # numba cannot read the clock: a node budget worth the time left at the slowest
            # rate seen, and no bound if it runs out
            budget = int(min(max(node_rate * left, 1e5), 2**62))
            tic = time.perf_counter()
            *table, count, nodes, done = region_part_pricing(
                X, pi, eta, s, cand, position, g, budget, knn_sum, *cuts, *table
            )
            spent = time.perf_counter() - tic
            if nodes >= 10_000 and spent > 1e-3:
                node_rate = min(node_rate, nodes / spent)
            if not done:
                return None  # the node budget (the time left) ran out inside the search
            stored += int(count)
        allowed[s] = False
    keys, values, used, _ = table
    return keys[used], values[used], stored


def _cover_bound(
    keys: np.ndarray, costs: np.ndarray, size: int, g: float, largest: int, deadline: Deadline
):
    """Dual bound z of the cover MIP of the module docstring over ``size`` records: the parts
    (bit masks, least rcs), each other part ≥ g and of at most ``largest`` records. Returns
    (z, optimal?, does the best cover found use the parts not enumerated?); (None, False, True)
    when out of time before HiGHS proved a bound."""
    bit = np.arange(size)
    m = len(costs)
    # the (part, record) incidences, one record at a time: O(parts) memory, not O(parts·size)
    col, row = [], []
    for j in bit:
        holding = np.flatnonzero((keys[:, j // 63] >> (j % 63)) & 1)
        col.append(holding)
        row.append(np.full(len(holding), j))
    col, row = np.concatenate(col), np.concatenate(row)
    # columns: the parts, then y_0..y_{size-1} (records covered by the other parts), u, t
    y, u, t = m + np.arange(size), m + size, m + size + 1
    ncol = m + size + 2
    lower = np.zeros(ncol)
    upper = np.concatenate([np.ones(m + size + 1), [highspy.kHighsInf]])
    cost = np.concatenate([costs, np.zeros(size + 1), [1.0]])
    rows_r = [
        np.concatenate([row, bit]),
        np.concatenate([bit, bit]) + size,
        [2 * size, 2 * size],
        np.full(size + 1, 2 * size + 1),
    ]
    cols_r = [
        np.concatenate([col, y]),
        np.concatenate([y, np.full(size, u)]),
        [t, u],
        np.concatenate([[t], y]),
    ]
    vals_r = [
        np.ones(len(col) + size),
        np.concatenate([np.ones(size), -np.ones(size)]),
        [1.0, -g],
        np.concatenate([[1.0], np.full(size, -g / largest)]),
    ]
    rows, cols, vals = (np.concatenate(a) for a in (rows_r, cols_r, vals_r))
    order = np.lexsort((cols, rows))
    rows, cols, vals = rows[order], cols[order].astype(np.int32), vals[order]
    nrow = 2 * size + 2
    starts = np.searchsorted(rows, np.arange(nrow)).astype(np.int32)
    # each record once; y_j <= u; t >= g·u; t >= g·Σy/largest
    row_lo = np.concatenate([np.ones(size), np.full(size, -highspy.kHighsInf), [0.0, 0.0]])
    row_hi = np.concatenate([np.ones(size), np.zeros(size), [highspy.kHighsInf, highspy.kHighsInf]])
    h = new_highs()
    h.addVars(ncol, lower, upper)
    h.changeColsCost(ncol, np.arange(ncol, dtype=np.int32), cost)
    h.addRows(nrow, row_lo, row_hi, len(cols), starts, cols, vals)
    integral = np.concatenate([np.arange(m), [u]]).astype(np.int32)
    h.changeColsIntegrality(
        len(integral), integral, np.full(len(integral), highspy.HighsVarType.kInteger)
    )
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("mip_abs_gap", 1e-9)
    set_time_limit(h, max(deadline.remaining(), 0.05))
    h.run()
    bound = float(h.getInfo().mip_dual_bound)
    if not np.isfinite(bound):
        return None, False, True
    values = h.getSolution().col_value
    beyond = len(values) < ncol or values[u] > 0.5
    return bound, h.getModelStatus() == highspy.HighsModelStatus.kOptimal, beyond
