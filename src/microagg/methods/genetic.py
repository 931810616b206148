"""genetic: univariate microaggregation by a genetic algorithm (data-oriented paper, §4.2, §4.3);
the algorithm lives in ``kernels/genetic_strings.py``."""

from __future__ import annotations

import numpy as np

from ..declarations import Param
from . import MethodOutput, register
from .univariate import labels_from_order, sorted_order


@register(
    "genetic",
    family="univariate",
    paper="Domingo-Ferrer & Mateo-Sanz 2002 (data-oriented paper), §4.2",
    complexity=(
        "O(maxgen·population_size·n) time after an O(n log n) sort, O(population_size·n) memory"
    ),
    variable_size=True,
    multivariate=False,
    randomized=True,
    categorical=False,
    params=(
        Param(
            "criterion",
            "str",
            "A",
            "stopping rule on the generation fitness: 'A' average, 'M' maximum "
            "(stop when two consecutive generations' ratio is in [1, 1 + 10⁻⁶/n])",
            choices=("A", "M"),
        ),
        Param("pcross", "float", 0.6, "crossover probability", low=0.0, high=1.0),
        Param("pmut", "float", 0.05, "mutation probability per bit", low=0.0, high=1.0),
        Param("maxgen", "int", 200, "maximum number of generations", low=1),
        Param("population_size", "int", 10, "strings per generation", low=1),
        Param(
            "fitness",
            "str",
            "ssa",
            "'ssa': SST − SSE (the paper); 'inverse-sse': 1/SSE, stronger selection",
            choices=("ssa", "inverse-sse"),
        ),
    ),
)
def genetic(
    X, k, *, seed, deadline, progress, criterion, pcross, pmut, maxgen, population_size, fitness
):
    """Genetic univariate microaggregation (§4.2): bit strings of group starts over the sorted
    values.

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
    returned. Reproducible with ``seed``; honours the deadline (returns the best string so far).
    """
    from ..kernels.genetic_strings import genetic_by_rank

    x = X[:, 0]
    order = sorted_order(x)
    xs = np.ascontiguousarray(x[order])
    rng = np.random.default_rng(seed)
    progress("genetic", None, f"{maxgen} generations at most")
    best, generations, reason = genetic_by_rank(
        xs,
        k,
        rng,
        pcross=pcross,
        pmut=pmut,
        maxgen=maxgen,
        population_size=population_size,
        criterion=criterion,
        fitness=fitness,
        deadline=deadline,
    )
    by_rank = np.cumsum(best.astype(np.int64)) - 1
    return MethodOutput(
        labels_from_order(order, by_rank), extras={"generations": generations, "stopped": reason}
    )
