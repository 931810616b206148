"""The region bound (colgen/region.py): a proven lower bound at any duals, the plain Lagrangian
bound with an empty region, the optimum itself with every record in the region."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_colgen import brute_force_optimum

from microagg.kernels.pricing import column_rcs
from microagg.kernels.pricing_bnb import region_part_pricing
from microagg.methods.colgen import knn_sums
from microagg.methods.colgen.master import cut_arrays
from microagg.methods.colgen.region import region_bound


def _instance(seed, n, k, d=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[: max(1, n // 5)] *= 6.0  # a few outlying records, as in eia
    return np.ascontiguousarray(X)


def _knn_duals(X, k):
    return knn_sums(X, 2 * k - 2)[:, k - 1] / (2.0 * k)


def _three_far_outliers():
    """Nine records near the origin and three far apart (records 9, 10, 11)."""
    rng = np.random.default_rng(5)
    return np.vstack([rng.normal(size=(9, 2)), [[12.0, 0.0], [0.0, 12.0], [-12.0, 0.0]]])


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 3), st.integers(6, 11), st.booleans(), st.booleans())
def test_bound_never_above_the_optimum(seed, k, n, random_duals, with_cuts):
    """Valid at any duals π and σ <= 0 (here random ones too), any region and threshold."""
    X = _instance(seed, n, k)
    rng = np.random.default_rng(seed + 1)
    pi = _knn_duals(X, k) * (rng.uniform(0.5, 2.0, n) if random_duals else 1.0)
    cuts = (
        np.array([rng.choice(n, 3, replace=False) for _ in range(4)])
        if with_cuts
        else np.zeros((0, 3), int)
    )
    sigma = -rng.uniform(0.0, 1.0, len(cuts))
    region = np.flatnonzero(rng.random(n) < 0.5)
    threshold = float(rng.choice([0.1, 1.0, 10.0, 1e9]))
    res = region_bound(X, k, pi, sigma, cuts, region, threshold)
    opt = brute_force_optimum(X, k)
    assert res.bound <= opt * (1 + 1e-9) + 1e-9
    assert res.bound == max(res.plain, res.region)
    assert res.region_size == len(region)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 3), st.integers(8, 14))
def test_records_outside_pay_at_least_their_plain_share(seed, k, n):
    """The records outside R are bounded over the clusters that avoid R only: their term is at
    least the plain bound's Σ_{i∉R} min(ρ_i, 0), ρ over every cluster."""
    from microagg.methods.colgen.column_pricing import Pricer

    X = _instance(seed, n, k)
    pi = _knn_duals(X, k) * np.random.default_rng(seed).uniform(0.8, 1.6, n)
    region = np.arange(max(1, n // 5))  # the outlying records
    res = region_bound(X, k, pi, np.zeros(0), np.zeros((0, 3), int), region, 1e9)
    rho = Pricer(X, k, "bnb", None, 5_000_000, 10**9).exact_pass(pi, 0.0)[2]  # no cuts
    outside_term = res.region - res.delta - pi.sum()
    assert outside_term >= np.minimum(rho, 0.0)[len(region) :].sum() - 1e-9


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_whole_region_gives_the_optimum_and_empty_the_plain_bound(seed):
    k, n = 3, 10
    X = _instance(seed, n, k)
    pi = _knn_duals(X, k)
    no_cuts = np.zeros((0, 3), int)
    opt = brute_force_optimum(X, k)
    whole = region_bound(X, k, pi, np.zeros(0), no_cuts, np.arange(n), 1e9)
    assert whole.region == pytest.approx(opt, rel=1e-9)
    assert whole.mip_optimal
    empty = region_bound(X, k, pi, np.zeros(0), no_cuts, np.zeros(0, int), 1e9)
    assert empty.bound == empty.plain == empty.region
    # the knn duals are feasible (every rc >= 0): the plain bound is Σπ
    assert empty.plain == pytest.approx(pi.sum(), rel=1e-12)
    assert empty.plain <= whole.region


def test_region_of_outliers_raises_the_bound():
    """Two far records that no cluster can keep apart cheaply: their integral cover costs more
    than the fractional one, and the region bound proves it (above the plain bound)."""
    k, X = 3, _three_far_outliers()
    pi = _knn_duals(X, k)
    res = region_bound(X, k, pi, np.zeros(0), np.zeros((0, 3), int), [9, 10, 11], 1e9)
    assert res.region > res.plain
    assert res.bound <= brute_force_optimum(X, k) * (1 + 1e-9)


def test_out_of_time_is_no_bound():
    X = _instance(0, 12, 3)
    assert (
        region_bound(
            X, 3, _knn_duals(X, 3), np.zeros(0), np.zeros((0, 3), int), [0, 1], 1e9, deadline=0.0
        )
        is None
    )


def test_threshold_deepens_while_it_binds_up_to_its_maximum():
    k, X = 3, _three_far_outliers()
    pi, no_cuts = _knn_duals(X, k), np.zeros((0, 3), int)
    deep = region_bound(X, k, pi, np.zeros(0), no_cuts, [9, 10, 11], 0.01)
    assert deep.threshold > 0.01 and deep.delta < deep.threshold  # deepened until Δ_R was found
    capped = region_bound(X, k, pi, np.zeros(0), no_cuts, [9, 10, 11], 0.01, max_threshold=0.015)
    assert capped.threshold == pytest.approx(0.015) and capped.delta >= 0.015 - 1e-12
    assert capped.bound <= deep.bound + 1e-9


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 5), st.integers(7, 11), st.booleans())
def test_region_part_pricing_finds_the_least_rc_of_every_part(seed, eta, n, with_cuts):
    """Per intersection with the region (a bit mask), the least rc of the clusters of size eta
    holding the seed, against every such subset: every part below the threshold, exactly."""
    X = _instance(seed, n, 3)
    rng = np.random.default_rng(seed + 7)
    pi = _knn_duals(X, 3) * rng.uniform(0.5, 2.0, n)
    cuts = (
        np.array([rng.choice(n, 3, replace=False) for _ in range(3)])
        if with_cuts
        else np.zeros((0, 3), int)
    )
    sigma = -rng.uniform(0.0, 1.0, len(cuts))
    region = np.flatnonzero(rng.random(n) < 0.5)
    s = 0
    region = np.union1d(region, [s])
    position = np.full(n, -1, dtype=np.int64)
    position[region] = np.arange(len(region))
    cand = np.arange(1, n)
    cptr, ccut, cpen = cut_arrays(cuts, n, sigma)
    expected = {}
    for rest in itertools.combinations(cand, eta - 1):
        members = np.array((s, *rest))
        rc = column_rcs(X, pi, np.array([0, eta]), members, cptr, ccut, cpen)[0]
        mask = sum(1 << int(position[i]) for i in members if position[i] >= 0)
        expected[mask] = min(expected.get(mask, np.inf), rc)
    least = np.sort([*expected.values(), np.inf])
    thr = float(least[len(least) // 2 - 1 : len(least) // 2 + 1].mean())  # halfway: no rounding tie
    table = (np.zeros((4, 1), dtype=np.int64), np.full(4, np.inf), np.zeros(4, dtype=bool), 0)
    keys, vals, used, filled, stored, _, done = region_part_pricing(
        X, pi, eta, s, cand, position, thr, 10**9, knn_sums(X, eta), cptr, ccut, cpen, *table
    )
    assert done and filled == used.sum() and stored >= filled
    found = dict(zip(keys[used, 0].tolist(), vals[used].tolist()))
    assert found == pytest.approx(
        {m: v for m, v in expected.items() if v < thr}, rel=1e-9, abs=1e-9
    )


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.05, 2.0))
def test_deepening_reaches_the_cover_of_every_part(seed, threshold):
    """Deepened from a small G until the best cover needs no part left out, the bound is the one
    with every part enumerated (G huge), also when parts of negative rc sit beside the
    relaxation of the others and keep the cover's value below G (duals above feasible ones)."""
    k, n = 3, 11
    X = _instance(seed, n, k)
    pi = _knn_duals(X, k) * np.random.default_rng(seed).uniform(1.0, 1.6, n)
    region = np.arange(4)
    no_cuts = np.zeros((0, 3), int)
    deepened = region_bound(X, k, pi, np.zeros(0), no_cuts, region, threshold)
    every_part = region_bound(X, k, pi, np.zeros(0), no_cuts, region, 1e9)
    assert deepened.region == pytest.approx(every_part.region, rel=1e-9, abs=1e-9)
