"""md: multivariate fixed-size microaggregation on unprojected data (data-oriented paper,
Algorithm 2); kernels in ``kernels/maxdist_groups.py``."""

from __future__ import annotations

from ..declarations import Param
from . import register

TREE_MIN_N = 2000  # algorithm='auto' uses the trees from this many records on


#: md runs to completion, all at once; measured (census-like, 13 attributes, k = 3): 1.1 s CPU
#: (2.2 s wall, load 3.6) at 10^4, 4.8 s CPU at 3·10^4, 28.6 s wall at 10^5 at load 2.9 and 44.7 s
#: at load 3.9. A time limit must leave its time on a shared machine (``least_seconds``: it is one
#: uninterruptible step), MD_SECONDS_PER_D·d·(n/10^4)^1.35.
MD_SECONDS_PER_D = 0.15


@register(
    "md",
    family="fixed-size",
    paper="Domingo-Ferrer & Mateo-Sanz 2002 (data-oriented paper), Algorithm 2",
    complexity="O(n²·d/k) time worst case (trees: far less on real data), O(n·d) memory",
    variable_size=False,
    interruptible=False,
    least_seconds=lambda n, d, k: MD_SECONDS_PER_D * d * (n / 1e4) ** 1.35,
    params=(
        Param(
            "grow",
            "str",
            "centroid",
            "'centroid': add the record nearest to the group's running centroid; "
            "'seed': the k−1 records nearest to x_r",
            choices=("centroid", "seed"),
        ),
        Param(
            "start",
            "str",
            "best",
            "'best': form both orders of x_r, x_s and keep the pair of groups with "
            "lower SSE; 'r': always start from the lower-indexed end",
            choices=("best", "r"),
        ),
        Param(
            "algorithm",
            "str",
            "auto",
            "'plain' full scans, 'tree' trees with deletions (same labels), "
            "'auto' the trees from 2000 records on",
            choices=("auto", "plain", "tree"),
        ),
    ),
)
def md(X, k, *, seed, deadline, progress, grow, start, algorithm):
    """Multivariate fixed-size microaggregation around the two most distant records (Algorithm 2).

    Each round takes the two most distant remaining records x_r, x_s and forms a group of k around
    each. The paper says "the k−1 vectors closest to x_r" but its Figure 2 example grows the group
    by "the vector closest to the group"; grow='centroid' (default) adds the record nearest to the
    group's running centroid, grow='seed' the k−1 nearest to x_r. Which of x_r, x_s goes first
    changes the groups (Figure 2): start='best' (default) forms both orders and keeps the pair of
    groups with lower SSE; start='r' always starts from the lower-indexed end. grow='centroid' gave
    lower IL than 'seed' in 6 of 9 cells (census, tarragona, eia × k = 3, 5, 10; 'seed' wins at
    k = 10 on census and tarragona), so it is the default; try both on your data. When fewer than 3k
    records
    remain, 2k..3k−1 give one more group of k plus a last group, k..2k−1 give the last group, so
    groups have k..2k−1 records (the paper's step 4, fewer than k leftovers, then cannot occur).
    algorithm='tree' answers every nearest / farthest query from trees with deletions and the
    farthest pair from a heap (same labels as 'plain', the full scans); 'auto' uses the trees
    from 2000 records on. Runs to completion (one kernel call): it does not watch the deadline.
    """
    from ..kernels.jit import planned_records
    from ..kernels.maxdist_groups import md_kernel

    progress("md", None, f"{len(X)} records")
    use_tree = algorithm == "tree" or (
        algorithm == "auto" and planned_records(len(X)) >= TREE_MIN_N
    )
    return md_kernel(X, k, grow == "centroid", start == "best", use_tree)
