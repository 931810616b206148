"""Optimal univariate microaggregation: microagg vs the PyPI package microagg1d, same run.

For n = 10^6 and 10^7 and k = 3, 10 it times `univariate-optimal` and microagg1d's exact
methods (staggered, wilber) and its default ('auto'), and compares their SSE. Data: a skewed
log-normal mixture (like incomes), seeded. Usage: python benchmarks/univariate.py [--quick]
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _common import md_table, update_readme, write_results


def data(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.lognormal(10.0, 1.0, n)
    x[: n // 10] = rng.normal(30000, 5000, n // 10)  # a dense mode, ties-free
    return (x - x.mean()) / x.std()


def timed(fn, *a, **kw):
    t = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t


def main(quick: bool = False) -> None:
    import microagg1d

    from microagg.labels import sse
    from microagg.methods import run

    sizes = [10**5] if quick else [10**6, 10**7]
    # warm up JIT compilation of every contender on small data
    small = data(1000)
    run("univariate-optimal", small[:, None], 3)
    for m in ("staggered", "wilber", "auto"):
        microagg1d.univariate_microaggregation(small, 3, method=m)

    rows, table = [], []
    for n in sizes:
        x = data(n)
        X = x[:, None]
        for k in (3, 10):
            out, t_ours = timed(run, "univariate-optimal", X, k)
            sse_ours = sse(X, out.labels)
            row = {"n": n, "k": k, "microagg_seconds": t_ours, "microagg_sse": sse_ours}
            cells = [f"{n:.0e}", k, f"{t_ours:.2f}"]
            for m in ("staggered", "wilber", "auto"):
                labels, t = timed(microagg1d.univariate_microaggregation, x, k, method=m)
                s = sse(X, labels)
                row[f"microagg1d_{m}_seconds"] = t
                row[f"microagg1d_{m}_sse_excess_percent"] = 100 * (s - sse_ours) / sse_ours
                excess = 100 * (s - sse_ours) / sse_ours
                cells += [f"{t:.2f}", "equal" if abs(excess) < 1e-9 else f"{excess:+.4f}%"]
            rows.append(row)
            table.append(cells)
            print(cells, flush=True)
    headers = [
        "n",
        "k",
        "microagg s",
        "staggered s",
        "staggered SSE vs ours",
        "wilber s",
        "wilber SSE vs ours",
        "auto s",
        "auto SSE vs ours",
    ]
    md = (
        "Optimal univariate microaggregation, seconds (sorting included for both) and SSE of "
        "microagg1d relative to microagg's `univariate-optimal` (positive = microagg1d worse).\n\n"
        + md_table(headers, table)
    )
    write_results("univariate" + ("_quick" if quick else ""), rows, md)
    if not quick:
        update_readme("univariate", md + "\n\nProduced by `python benchmarks/univariate.py`.")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
