"""The univariate genetic algorithm of the data-oriented paper (§4.2, §4.3).

A k-partition of the n sorted values is a bit string: bit i is 1 when a group starts at rank i.
Groups are connected (Theorem 1) and have k..2k−1 values (Proposition 1), so consecutive 1s are
separated by k−1..2k−2 zeros (the last group too: k−1..2k−2 zeros after the last 1).
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from ..kernels.segments import path_cut
from . import MethodOutput, register
from .univariate import fixed_size_by_rank, labels_from_order, sorted_order


@njit(cache=True, nogil=True)
def _string_sse(xs, s):
    """SSE of the partition encoded by bit string s over sorted values xs (two passes per group)."""
    n = xs.shape[0]
    total = 0.0
    a = 0
    while a < n:
        b = a + 1
        while b < n and s[b] == 0:
            b += 1
        mean = 0.0
        for i in range(a, b):
            mean += xs[i]
        mean /= b - a
        for i in range(a, b):
            diff = xs[i] - mean
            total += diff * diff
        a = b
    return total


@njit(cache=True, nogil=True)
def _split(xs2, s, a, b, k):
    """Re-cut the segment [a, b) (>= k values) into groups of k..2k−1 of least SSE; sets the 1s in s."""
    for i in range(a + 1, b):
        s[i] = 0
    s[a] = 1
    if b - a >= 2 * k:
        _, starts = path_cut(xs2[a:b], k)
        for t in range(starts.shape[0]):
            s[a + starts[t]] = 1


@njit(cache=True, nogil=True)
def _repair(xs2, s, k):
    """Make s encode a valid k-partition with groups of k..2k−1 (§4.2.2 corrections).

    A group shorter than k loses its closing 1 (joins the next group; the last group joins the
    previous one); a group longer than 2k−1 gets new 1s where they give the least SSE. On a string
    that is valid except around the crossover site this changes only that neighbourhood.
    """
    n = s.shape[0]
    s[0] = 1
    prev_start = -1
    cur = 0
    p = 1
    while True:
        while p < n and s[p] == 0:
            p += 1
        size = p - cur
        if p < n and size < k:  # too short: drop the next 1, the group extends to the following one
            s[p] = 0
            continue
        if p == n and size < k:  # last group too short: merge it into the previous group
            s[cur] = 0
            cur = prev_start
            size = n - cur
        if size > 2 * k - 1:
            _split(xs2, s, cur, p, k)
        if p == n:
            break
        # the last start placed inside [cur, p) is the previous group for the next step
        q = p - 1
        while s[q] == 0:
            q -= 1
        prev_start = q
        cur = p
        p += 1


@njit(cache=True, nogil=True)
def _random_string(xs2, k, u, s):
    """A uniformly drawn valid string: each group size uniform among the sizes that keep a valid rest."""
    n = s.shape[0]
    for i in range(n):
        s[i] = 0
    pos = 0
    t = 0
    while pos < n:
        s[pos] = 1
        rest = n - pos
        if rest <= 2 * k - 1:
            break
        hi = min(2 * k - 1, rest - k)  # leave at least k values
        size = k + int(u[t] * (hi - k + 1))
        t += 1
        pos += size


@njit(cache=True, nogil=True)
def _mutate(s, u, pmut, k):
    """Invert each bit with probability pmut unless that breaks the k..2k−1 group sizes (§4.2.2)."""
    n = s.shape[0]
    last_one = 0
    for i in range(1, n):
        if u[i] < pmut:
            nxt = i + 1
            while nxt < n and s[nxt] == 0:
                nxt += 1
            if s[i] == 1:
                if nxt - last_one <= 2 * k - 1:  # the merged group stays below 2k
                    s[i] = 0
            elif i - last_one >= k and nxt - i >= k:  # both halves keep >= k values
                s[i] = 1
        if s[i] == 1:
            last_one = i


@njit(cache=True, nogil=True)
def _crossover(xs2, p1, p2, site, k, c1, c2):
    """One-point crossover after position site, then the corrections that keep both children valid."""
    n = p1.shape[0]
    for i in range(n):
        if i <= site:
            c1[i] = p1[i]
            c2[i] = p2[i]
        else:
            c1[i] = p2[i]
            c2[i] = p1[i]
    _repair(xs2, c1, k)
    _repair(xs2, c2, k)


def genetic_by_rank(xs, k, rng, *, pcross, pmut, maxgen, population_size, criterion, fitness, deadline):
    """Run the GA on sorted values xs; returns (bit string of the best partition, generations, stop reason)."""
    n = len(xs)
    xs2 = np.ascontiguousarray(xs[:, None])
    pop = np.zeros((population_size, n), dtype=np.uint8)
    # one string from fixed-size microaggregation with its larger group placed best (§4.3, item 3)
    fixed = fixed_size_by_rank(xs, k)
    pop[0, 0] = 1
    pop[0, 1:][np.diff(fixed) != 0] = 1
    for j in range(1, population_size):
        _random_string(xs2, k, rng.random(n // k + 1), pop[j])
    sst = float(np.sum((xs - xs.mean()) ** 2))

    def evaluate(strings):
        return np.array([_string_sse(xs, s) for s in strings])

    def fit_of(sse_values):
        if fitness == "ssa":  # SSA = SST − SSE, the quantity to maximise (§2)
            return np.maximum(sst - sse_values, 0.0)
        return 1.0 / np.maximum(sse_values, 1e-300 * max(sst, 1.0))

    sse_values = evaluate(pop)
    best_j = int(np.argmin(sse_values))
    best, best_sse = pop[best_j].copy(), sse_values[best_j]
    prev = None
    ratio_max = 1.0 + 1e-6 / n
    reason = "maxgen"
    gen = 0
    children = np.empty_like(pop)
    for gen in range(1, maxgen + 1):
        f = fit_of(sse_values)
        level = f.mean() if criterion == "A" else f.max()
        if criterion is not None and prev is not None and prev > 0 and 1.0 <= level / prev <= ratio_max:
            reason = "converged"
            break
        prev = level
        if deadline is not None and time.perf_counter() > deadline:
            reason = "time_limit"
            break
        # selection: population_size draws with replacement, probability proportional to fitness
        total = f.sum()
        chosen = rng.choice(population_size, size=population_size, p=f / total if total > 0 else None)
        parents = pop[chosen]
        cross = rng.random(population_size // 2) < pcross
        sites = rng.integers(0, n, size=population_size // 2)
        for j in range(population_size // 2):
            a, b = parents[2 * j], parents[2 * j + 1]
            if cross[j]:
                _crossover(xs2, a, b, int(sites[j]), k, children[2 * j], children[2 * j + 1])
            else:
                children[2 * j], children[2 * j + 1] = a, b
        if population_size % 2:
            children[-1] = parents[-1]
        u = rng.random((population_size, n))
        for j in range(population_size):
            _mutate(children[j], u[j], pmut, k)
        pop, children = children, pop
        sse_values = evaluate(pop)
        j = int(np.argmin(sse_values))
        if sse_values[j] < best_sse:  # the best string found so far is cached (§4.3, item 4)
            best, best_sse = pop[j].copy(), sse_values[j]
    return best, gen, reason


@register(
    "genetic",
    family="univariate",
    paper="Domingo-Ferrer & Mateo-Sanz 2002 (data-oriented paper), §4.2",
    complexity="O(maxgen·population_size·n) time after an O(n log n) sort, O(population_size·n) memory",
    variable_size=True,
    multivariate=False,
    randomized=True,
)
def genetic(X, k, *, seed=None, time_limit=None, progress=False, criterion="A", pcross=0.6, pmut=0.05,
            maxgen=200, population_size=10, fitness="ssa"):
    """Genetic univariate microaggregation (§4.2): bit strings of group starts over the sorted values.

    Encoding (§4.2.1): bit i = 1 when a group starts at the i-th smallest value; valid strings have
    k−1..2k−2 zeros between consecutive 1s and after the last one (connected groups of k..2k−1).
    Each generation: roulette selection of ``population_size`` strings with probability
    proportional to fitness; pairs cross over at a random site with probability ``pcross``; every
    bit is inverted with probability ``pmut`` unless that would make a group smaller than k or
    larger than 2k−1 (§4.2.2). Crossover corrections (§4.2.2): a 1 closer than k positions to the
    previous 1 is cleared; a run of zeros that is too long gets new 1s. The paper does not say
    where those new 1s go; we place them where they give the least SSE for that run (an optimal
    cut of the run into groups of k..2k−1), the lower-SSE reading.

    Fitness: fitness='ssa' (default) is SSA = SST − SSE, the between-groups sum of squares that
    the paper maximises (§2); fitness='inverse-sse' uses 1/SSE, a stronger selection pressure.
    Stopping (§4.3): after ``maxgen`` generations, or when the generation fitness — the average
    (criterion='A') or the maximum (criterion='M') over the population — of two consecutive
    generations has a ratio in [1, 1 + 10⁻⁶/n]. The initial population holds one string of the
    fixed-size partition (groups of k, the larger group placed where it costs least) and random
    valid strings, so the result is never worse than univariate-fixed; the best string ever seen is
    returned. Reproducible with ``seed``; honours ``time_limit`` (returns the best string so far).
    """
    if criterion not in ("A", "M"):
        raise ValueError(f"genetic criterion must be 'A' (average fitness) or 'M' (maximal fitness), got {criterion!r}")
    if fitness not in ("ssa", "inverse-sse"):
        raise ValueError(f"genetic fitness must be 'ssa' or 'inverse-sse', got {fitness!r}")
    for name, value in (("pcross", pcross), ("pmut", pmut)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"genetic {name} must be a probability in [0, 1], got {value!r}")
    for name, value in (("maxgen", maxgen), ("population_size", population_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"genetic {name} must be a positive integer, got {value!r}")
    x = X[:, 0]
    n = len(x)
    if n < 2 * k:
        return np.zeros(n, dtype=np.int64)
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    order = sorted_order(x)
    xs = np.ascontiguousarray(x[order])
    rng = np.random.default_rng(seed)
    best, generations, reason = genetic_by_rank(
        xs, k, rng, pcross=float(pcross), pmut=float(pmut), maxgen=int(maxgen),
        population_size=int(population_size), criterion=criterion, fitness=fitness, deadline=deadline,
    )
    by_rank = np.cumsum(best.astype(np.int64)) - 1
    return MethodOutput(labels_from_order(order, by_rank), extras={"generations": generations, "stopped": reason})
