"""The univariate genetic algorithm of the data-oriented paper (§4.2, §4.3).

A k-partition of the n sorted values is a bit string: bit i is 1 when a group starts at rank i.
Groups are connected (Theorem 1) and have k..2k−1 values (Proposition 1), so consecutive 1s are
separated by k−1..2k−2 zeros (the last group too: k−1..2k−2 zeros after the last 1).
"""

from __future__ import annotations

import numpy as np

from ..labels import sst as total_sum_of_squares
from .jit import kernel
from .segments import fixed_size_by_rank, path_cut


@kernel
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


@kernel
def _split(xs2, s, a, b, k):
    """Re-cut the segment [a, b) (>= k values) into groups of k..2k−1 of least SSE; sets the 1s in
    s."""
    for i in range(a + 1, b):
        s[i] = 0
    s[a] = 1
    if b - a >= 2 * k:
        _, starts = path_cut(xs2[a:b], k)
        for t in range(starts.shape[0]):
            s[a + starts[t]] = 1


@kernel
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


@kernel
def _random_string(xs2, k, u, s):
    """A uniformly drawn valid string: each group size uniform among the sizes that keep a valid
    rest."""
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


@kernel
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


@kernel
def _crossover(xs2, p1, p2, site, k, c1, c2):
    """One-point crossover after position site, then the corrections that keep both children
    valid."""
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


def genetic_by_rank(
    xs, k, rng, *, pcross, pmut, maxgen, population_size, criterion, fitness, deadline
):
    """Run the GA on sorted values xs; returns (bit string of the best partition, generations, stop
    reason)."""
    n = len(xs)
    xs2 = np.ascontiguousarray(xs[:, None])
    pop = np.zeros((population_size, n), dtype=np.uint8)
    # one string from fixed-size microaggregation with its larger group placed best (§4.3, item 3)
    fixed = fixed_size_by_rank(xs, k)
    pop[0, 0] = 1
    pop[0, 1:][np.diff(fixed) != 0] = 1
    for j in range(1, population_size):
        _random_string(xs2, k, rng.random(n // k + 1), pop[j])
    sst = total_sum_of_squares(xs)

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
        if (
            criterion is not None
            and prev is not None
            and prev > 0
            and 1.0 <= level / prev <= ratio_max
        ):
            reason = "converged"
            break
        prev = level
        if gen > 1:
            # work: a generation evaluates every string's n records (about a thousandth of a
            # local search's record-step each, measured on census)
            deadline.charge(population_size * n / 1000)
        if deadline.expired():
            reason = "time_limit"
            break
        # selection: population_size draws with replacement, probability proportional to fitness
        total = f.sum()
        chosen = rng.choice(
            population_size, size=population_size, p=f / total if total > 0 else None
        )
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
