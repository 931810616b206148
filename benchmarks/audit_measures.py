"""Time and peak memory of the disclosure audit's measures (microagg.measures.risk) as n grows.

Synthetic survey-like data: 5 categorical keys (2 to 10 levels), sampling weights in [50, 500],
a sensitive column of 8 values, 3 log-normal continuous QIs and their "protected" version
(records sorted on the first QI and averaged in consecutive groups of 3: cheap, and as
k-anonymous as microaggregation). Each measure is timed once per size, then run once more under
tracemalloc for its peak (numpy buffers included), which shows that memory grows like n, not n².

    python benchmarks/audit_measures.py [--sizes 10000 100000 1000000] [--rmd-max 100000]

Results: benchmarks/results/audit_measures.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, write_results  # noqa: E402

from microagg.measures import risk as D  # noqa: E402

NAME = "audit_measures"


def make_data(n: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {f"key{j}": rng.integers(0, levels, n) for j, levels in enumerate((2, 3, 5, 8, 10))}
    )
    df["weight"] = rng.uniform(50, 500, n)
    df["disease"] = rng.integers(0, 8, n)
    X = rng.lognormal(10, 1, size=(n, 3))
    order = np.argsort(X[:, 0], kind="stable")
    groups = np.empty(n, dtype=np.int64)
    groups[order] = np.minimum(np.arange(n) // 3, n // 3 - 1)
    means = np.stack(
        [np.bincount(groups, weights=X[:, j]) / np.bincount(groups) for j in range(3)], axis=1
    )
    return df, X, means[groups]


def measure(fn) -> tuple[float, float]:
    """(seconds, peak MiB): one timed call, then one call under tracemalloc (which slows
    scikit-learn's MinCovDet several times, so it is not timed)."""
    t0 = time.perf_counter()
    fn()
    seconds = time.perf_counter() - t0
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument(
        "--rmd-max", type=int, default=100_000, help="largest n for the MCD-based RMD measure"
    )
    args = ap.parse_args()
    keys = [f"key{j}" for j in range(5)]
    rows = []
    for n in args.sizes:
        df, X, Xp = make_data(n)
        cases = {
            "key_frequencies (5 keys)": lambda: D.key_frequencies(df, keys, 3),
            "individual_risk (weights, approx)": lambda: D.individual_risk(df, keys, "weight"),
            "individual_risk (weights, exact)": lambda: D.individual_risk(
                df, keys, "weight", method="exact"
            ),
            "l_diversity (1 sensitive)": lambda: D.l_diversity(df, keys, ["disease"]),
            "sdid_risk (3 QIs)": lambda: D.sdid_risk(X, Xp),
            "row_order (7 columns)": lambda: D.row_order(df),
            "shuffle_rows": lambda: D.shuffle_rows(df, seed=1),
        }
        if n <= args.rmd_max:
            cases["rmd_interval_risk (3 QIs, MCD)"] = lambda: D.rmd_interval_risk(X, Xp)
        for label, fn in cases.items():
            load = os.getloadavg()[0]
            seconds, peak = measure(fn)
            rows.append(
                {
                    "n": n,
                    "measure": label,
                    "seconds": round(seconds, 3),
                    "peak_mib": round(peak, 1),
                    "load_before": round(load, 2),
                }
            )
            print(rows[-1], flush=True)
    table = md_table(
        ["n", "measure", "seconds", "peak MiB", "load (1 min) before"],
        [
            [f"{r['n']:,}", r["measure"], r["seconds"], r["peak_mib"], r["load_before"]]
            for r in rows
        ],
    )
    write_results(NAME, rows, table)


if __name__ == "__main__":
    main()
