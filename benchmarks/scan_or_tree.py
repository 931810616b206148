"""Where a kernel's scan of the records is as fast as its KD-tree queries (warm, one thread).

Three kernels query a KD-tree with deletions and take ``leaf_size=None`` to scan instead (the
same answers; ``kernels.jit.tree_leaf_size``): ICSM's group tour (``tours.groups_tour``), lsearch's
(``neighbourhood.group_tour``) and column generation's greedy pricing
(``pricing.greedy_pricing``). Below each kernel's ``*_SCAN_MAX_N`` the scan runs, so a first run
on small data (``microagg demo``) does not compile the tree's kernels. Per size: the best of
``--repeat`` warm calls of each form on Gaussian 6-d records (k = 3: a random partition into
groups of 3; greedy pricing at eta = 3 and 5 with gamma-distributed duals), and whether both forms
returned the same result. The 1-minute load average is recorded before and after.

    python benchmarks/scan_or_tree.py [--sizes 1080 1500 3000 5000 10000] [--repeat 5]

Results: benchmarks/results/scan_or_tree.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, write_results  # noqa: E402

NAME = "scan_or_tree"
LEAF = 32  # the three kernels' leaf size (GREEDY_LEAF, TOUR_LEAF_SIZE, mdav's LEAF_SIZE)


def best_of(call, repeat: int):
    """(least seconds over ``repeat`` calls, the last result)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t0)
    return min(times), out


def cases(n: int, rng):
    """(kernel, call taking the leaf size) for n Gaussian records."""
    from microagg.kernels.neighbourhood import build_state, group_tour
    from microagg.kernels.pricing import greedy_pricing
    from microagg.kernels.tours import groups_tour

    k = 3
    X = np.ascontiguousarray(rng.normal(size=(n, 6)))
    labels = rng.permutation(np.minimum(np.arange(n) // k, n // k - 1)).astype(np.int64)
    g = int(labels.max()) + 1
    sizes, sums, slots, _ = build_state(X, labels, g, k)
    nbr = rng.integers(-1, g, size=(g, 4))
    pi = rng.gamma(1.0, 1.0, size=n)
    cuts = (np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0))
    yield "tours.groups_tour", lambda leaf: groups_tour(X, labels, g, False, leaf)
    yield "neighbourhood.group_tour", lambda leaf: group_tour(X, sizes, sums, slots, nbr, 0, leaf)
    for eta in (3, 5):
        yield (
            f"pricing.greedy_pricing eta {eta}",
            lambda leaf, eta=eta: greedy_pricing(X, pi, eta, 1e9, *cuts, 0, leaf),
        )


def same(a, b) -> bool:
    if isinstance(a, tuple):
        return all(np.array_equal(x, y) for x, y in zip(a, b))
    return bool(np.array_equal(a, b))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1080, 1500, 3000, 5000, 10000])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for n in args.sizes:
        for kernel, call in cases(n, rng):
            before = os.getloadavg()[0]
            call(LEAF), call(None)  # compile or load both forms first
            tree_s, tree = best_of(lambda: call(LEAF), args.repeat)
            scan_s, scan = best_of(lambda: call(None), args.repeat)
            rows.append(
                {
                    "kernel": kernel,
                    "n": n,
                    "tree_ms": round(tree_s * 1e3, 3),
                    "scan_ms": round(scan_s * 1e3, 3),
                    "same": same(tree, scan),
                    "load_before": round(before, 2),
                    "load_after": round(os.getloadavg()[0], 2),
                }
            )
            print(rows[-1], flush=True)
    table = md_table(
        ["kernel", "n", "tree ms", "scan ms", "scan / tree", "same result", "load before", "after"],
        [
            [
                r["kernel"],
                f"{r['n']:,}",
                f"{r['tree_ms']:.2f}",
                f"{r['scan_ms']:.2f}",
                f"{r['scan_ms'] / r['tree_ms']:.2f}",
                "yes" if r["same"] else "NO",
                r["load_before"],
                r["load_after"],
            ]
            for r in rows
        ],
    )
    write_results(NAME, rows, table)


if __name__ == "__main__":
    main()
