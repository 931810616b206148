"""Local search (`lsearch`) against MDAV on large synthetic data, k = 3: IL and seconds against n.

Data (``make_data``, seeded): a 30-component Gaussian mixture in 8 dimensions, meant to look
like survey microdata rather than i.i.d. noise. Component weights are Dirichlet(1) (some
clusters ten times larger than others), centres uniform in [−4, 4]^8, each component with its
own random covariance (a random rotation of scales drawn from [0.3, 1.5]). Then three columns
are made skewed, exp(0.6·x) (log-normal within a component: incomes, amounts), and two columns
are integers with many ties, round(2·x) clipped to [−6, 6] (ages in bands, counts, codes).
The matrix is z-scored column by column as the pipeline does before any method.

Each n runs MDAV (exact tree kernel) and then `lsearch` with its default parameters, started
from that MDAV partition (``init=labels``), in one process, so the ratios come from one run on
one machine state; lsearch's seconds are MDAV's plus the search's, which is what
``run("lsearch")`` costs (it runs MDAV itself). ``os.getloadavg()`` is recorded with every row.
Results: benchmarks/results/large_local_search.{json,md}, the README
block between the ``large-local-search`` markers and the figure
benchmarks/results/large_local_search.png (matplotlib, the bench extra).

    python benchmarks/large_local_search.py [--sizes 1e4,1e5,1e6] [--merge] [--render]
    python benchmarks/large_local_search.py --sizes 1e5 --partitioned 5000

The second form measures the partitioned mode (MDAV in blocks) with and without the local
search across block boundaries: benchmarks/results/large_local_search_partitioned.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, md_table, update_readme, write_results  # noqa: E402

NAME = "large_local_search"


def make_data(n: int, seed: int = 0) -> np.ndarray:
    """z-scored (n, 8) records from the generator described in the module docstring."""
    rng = np.random.default_rng(seed)
    d, components = 8, 30
    weights = rng.dirichlet(np.ones(components))
    centres = rng.uniform(-4.0, 4.0, size=(components, d))
    comp = rng.choice(components, size=n, p=weights)
    X = np.empty((n, d))
    for c in range(components):
        rows = np.flatnonzero(comp == c)
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        scale = rng.uniform(0.3, 1.5, size=d)
        X[rows] = centres[c] + (rng.normal(size=(len(rows), d)) * scale) @ q.T
    X[:, :3] = np.exp(0.6 * X[:, :3])  # skewed (log-normal) columns
    X[:, 3:5] = np.clip(np.round(2.0 * X[:, 3:5]), -6, 6)  # integer columns with ties
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return np.ascontiguousarray(X)


def measure(n: int, k: int, seed: int) -> dict:
    """MDAV, then lsearch from MDAV's labels, timed in this process; lsearch's seconds are MDAV's
    plus the search's (what ``run('lsearch')`` costs, without computing MDAV twice)."""
    from microagg.labels import group_sizes
    from microagg.measures import information_loss
    from microagg.methods import run

    X = make_data(n, seed)
    t0 = time.perf_counter()
    mdav = run("mdav", X, k).labels
    t_mdav = time.perf_counter() - t0
    load_mdav = os.getloadavg()[0]
    t0 = time.perf_counter()
    out = run("lsearch", X, k, seed=seed, init=mdav)
    t_search = time.perf_counter() - t0
    il_mdav, il_ls = (
        information_loss(X, mdav, standardize=False),
        information_loss(X, out.labels, standardize=False),
    )
    sizes = group_sizes(out.labels)
    return {
        "n": n,
        "k": k,
        "seed": seed,
        "il_mdav": il_mdav,
        "il_lsearch": il_ls,
        "il_change": il_ls / il_mdav - 1.0,
        "seconds_mdav": t_mdav,
        "seconds_lsearch": t_mdav + t_search,
        "time_ratio": (t_mdav + t_search) / t_mdav,
        "rounds": out.extras["rounds"],
        "moves": out.extras["moves"],
        "stopped": out.extras["stopped"],
        "min_group": int(sizes.min()),
        "max_group": int(sizes.max()),
        "load_mdav": round(load_mdav, 2),
        "load_lsearch": round(os.getloadavg()[0], 2),
    }


def write(rows: list[dict], results: bool = True) -> None:
    rows = sorted(rows, key=lambda r: r["n"])
    table = md_table(
        [
            "n",
            "IL MDAV",
            "IL lsearch",
            "IL vs MDAV",
            "s MDAV",
            "s lsearch (incl. MDAV)",
            "time ratio",
            "rounds",
            "load (1 min)",
        ],
        [
            [
                f"{r['n']:,}",
                f"{r['il_mdav']:.4f}",
                f"{r['il_lsearch']:.4f}",
                f"{100 * r['il_change']:+.2f}%",
                f"{r['seconds_mdav']:.1f}",
                f"{r['seconds_lsearch']:.1f}",
                f"{r['time_ratio']:.2f}×",
                r["rounds"],
                f"{r['load_mdav']:.1f} / {r['load_lsearch']:.1f}",
            ]
            for r in rows
        ],
    )
    text = (
        "`lsearch` (default parameters, started from MDAV's labels) against exact MDAV, k = 3, on a"
        " 30-cluster Gaussian mixture in 8-d with three log-normal columns and two integer columns"
        " with ties (generator in `benchmarks/large_local_search.py`). Both timed in one process"
        " per n; lsearch's seconds include MDAV's. Load: 1-minute load average of the 2-core"
        " machine after MDAV / after lsearch.\n\n"
        + table
        + "\n\n![IL and seconds against n](benchmarks/results/large_local_search.png)\n\n"
        "Produced by `python benchmarks/large_local_search.py` (rows in "
        "`benchmarks/results/large_local_search.json`)."
    )
    if results:
        write_results(NAME, rows, table)
    update_readme("large-local-search", text)
    plot(rows)


def plot(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["n"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    a.plot(n, [r["il_mdav"] for r in rows], "o-", label="mdav")
    a.plot(n, [r["il_lsearch"] for r in rows], "s-", label="lsearch")
    a.set(xscale="log", xlabel="records n", ylabel="information loss (%)", title="IL (k = 3)")
    b.plot(n, [r["seconds_mdav"] for r in rows], "o-", label="mdav")
    b.plot(n, [r["seconds_lsearch"] for r in rows], "s-", label="lsearch (incl. mdav)")
    b.set(xscale="log", yscale="log", xlabel="records n", ylabel="wall seconds", title="time")
    for ax in (a, b):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / f"{NAME}.png", dpi=110)


def measure_partitioned(n: int, k: int, seed: int, block_size: int) -> list[dict]:
    """The partitioned mode (MDAV per block, Dask synchronous) with and without the local search
    across block boundaries (``scale._search_across_blocks``), against unpartitioned MDAV."""
    import microagg.blocks as scale
    from microagg.measures import information_loss
    from microagg.methods import run

    X = make_data(n, seed)
    il_mdav = information_loss(X, run("mdav", X, k).labels, standardize=False)
    rows = []
    search = scale._search_across_blocks
    for across in (False, True):
        scale._search_across_blocks = search if across else (lambda Z, labels, *args: labels)
        try:
            t0 = time.perf_counter()
            labels = scale.partitioned_labels(
                X, k, "mdav", block_size=block_size, scheduler="synchronous", seed=seed
            )
            seconds = time.perf_counter() - t0
        finally:
            scale._search_across_blocks = search
        il = information_loss(X, labels, standardize=False)
        rows.append(
            {
                "n": n,
                "k": k,
                "block_size": block_size,
                "search_across_blocks": across,
                "il": il,
                "il_mdav": il_mdav,
                "il_change": il / il_mdav - 1.0,
                "seconds": seconds,
                "load": round(os.getloadavg()[0], 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    table = md_table(
        [
            "n",
            "block size",
            "search across blocks",
            "IL",
            "IL vs unpartitioned MDAV",
            "seconds",
            "load",
        ],
        [
            [
                f"{r['n']:,}",
                f"{r['block_size']:,}",
                "yes" if r["search_across_blocks"] else "no",
                f"{r['il']:.4f}",
                f"{100 * r['il_change']:+.2f}%",
                f"{r['seconds']:.1f}",
                r["load"],
            ]
            for r in rows
        ],
    )
    write_results(f"{NAME}_partitioned", rows, table)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1e4,1e5,1e6")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--merge", action="store_true", help="keep committed rows of other sizes")
    ap.add_argument(
        "--render", action="store_true", help="rewrite the README block and figure from the json"
    )
    ap.add_argument(
        "--partitioned",
        type=int,
        metavar="BLOCK_SIZE",
        help=(
            "instead: the partitioned mode at --sizes (one n) with and without the search across"
            " blocks"
        ),
    )
    args = ap.parse_args()
    if args.partitioned:
        measure_partitioned(int(float(args.sizes)), args.k, args.seed, args.partitioned)
        return
    path = RESULTS / f"{NAME}.json"
    if args.render:
        write(json.loads(path.read_text())["rows"], results=False)
        return
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    rows = []
    if args.merge and path.exists():
        rows = [r for r in json.loads(path.read_text())["rows"] if r["n"] not in sizes]
    from microagg.methods import run

    warm = make_data(2000, 1)  # compile the kernels outside the timings
    run("lsearch", warm, args.k, seed=0)
    for n in sizes:
        row = measure(n, args.k, args.seed)
        print(json.dumps(row), flush=True)
        rows.append(row)
        write(rows)


if __name__ == "__main__":
    main()
