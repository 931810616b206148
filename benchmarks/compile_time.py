"""First runs from an empty numba cache: compile seconds per method and per kernel.

Every method runs in a fresh subprocess with ``NUMBA_CACHE_DIR`` set to a new empty folder (what
a fresh install sees), through the public API on the bundled census data (k = 3, a 2 s time
limit), once: the row gives the call's wall seconds, the seconds numba spent compiling
(``numba:compile`` events) and the run's reported ``Result.seconds`` (which must not count the
compilation), and the kernels that cost most to compile (exclusive seconds: a kernel's own
compilation, without the callees it compiled on the way). One more row times
``mdav`` on a 4,000 × 3 Gaussian file through the CLI (``microagg protect``), the issue's first
run. The load average is recorded before and after each row: other jobs on the machine stretch
compile times.

    python benchmarks/compile_time.py [--methods mdav,vmdav] [--json-only]

Results: benchmarks/results/compile_time.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, write_results  # noqa: E402

NAME = "compile_time"
TOP = 4  # kernels listed per row


def child(method: str) -> None:
    """Run ``method`` once on census and print one JSON line: wall, compile and per-kernel
    seconds."""
    from numba.core import event

    spent: dict = {}
    stack: list = []

    class Listener(event.Listener):  # exclusive compile seconds per function
        def on_start(self, ev):
            f = ev.data["dispatcher"].py_func
            stack.append(
                (f"{f.__module__.replace('microagg.', '')}.{f.__qualname__}", time.perf_counter())
            )

        def on_end(self, ev):
            name, t0 = stack.pop()
            dt = time.perf_counter() - t0
            spent[name] = spent.get(name, 0.0) + dt
            if stack:
                spent[stack[-1][0]] = spent.get(stack[-1][0], 0.0) - dt

    event.register("numba:compile", Listener())
    t0 = time.perf_counter()
    import microagg

    info = microagg.methods.get(method)
    df = microagg.datasets.load("census").select_dtypes("number")
    data = df[df.columns[:1]] if not info.multivariate else df
    res = microagg.microaggregate(data, k=3, method=method, seed=0, time_limit=2.0)
    wall = time.perf_counter() - t0
    top = sorted(spent.items(), key=lambda kv: -kv[1])[:TOP]
    print(
        json.dumps(
            {
                "method": method,
                "wall": wall,
                "compile": sum(spent.values()),
                "result_seconds": res.seconds,
                "kernels": len(spent),
                "top": [[k, round(v, 2)] for k, v in top],
            }
        )
    )


def run_row(cmd: list, env: dict) -> tuple:
    before = os.getloadavg()[0]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    return out, wall, before, os.getloadavg()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default=None, help="comma-separated method names (default: all)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    import microagg

    names = args.methods.split(",") if args.methods else microagg.methods()
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix="microagg-numba-cache-") as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            out, wall, before, after = run_row(
                [sys.executable, os.path.abspath(__file__), "--child", name], env
            )
            if out.returncode != 0:
                print(out.stderr[-2000:], file=sys.stderr)
                raise SystemExit(f"{name} failed")
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row.update(
                process_wall=round(wall, 2),
                load_before=round(before, 2),
                load_after=round(after, 2),
            )
            rows.append(row)
            print(json.dumps(row), flush=True)
    with tempfile.TemporaryDirectory(prefix="microagg-numba-cache-") as tmp:
        import numpy as np
        import pandas as pd

        src = os.path.join(tmp, "in.csv")
        pd.DataFrame(
            np.random.default_rng(0).normal(size=(4000, 3)), columns=["a", "b", "c"]
        ).to_csv(src, index=False)
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "cache"))
        cmd = [
            sys.executable,
            "-m",
            "microagg.cli",
            "protect",
            src,
            "-o",
            os.path.join(tmp, "out.csv"),
            "-k",
            "3",
        ]
        for label in ("first CLI protect 4000×3 (empty cache)", "second CLI protect 4000×3"):
            out, wall, before, after = run_row(cmd, env)
            if out.returncode != 0:
                raise SystemExit(out.stderr[-2000:])
            reported = [ln for ln in out.stdout.splitlines() if ln.strip().endswith(" s")]
            rows.append(
                {
                    "method": label,
                    "process_wall": round(wall, 2),
                    "result_seconds": reported[-1] if reported else "",
                    "stderr": out.stderr.strip()[-200:],
                    "load_before": round(before, 2),
                    "load_after": round(after, 2),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    table = md_table(
        [
            "method",
            "process wall s",
            "compile s",
            "reported run s",
            "kernels compiled",
            "costliest kernels (s)",
            "load before",
            "load after",
        ],
        [
            [
                r["method"],
                f"{r['process_wall']:.1f}",
                f"{r['compile']:.1f}" if "compile" in r else "-",
                (
                    f"{r['result_seconds']:.2f}"
                    if isinstance(r["result_seconds"], float)
                    else r["result_seconds"]
                ),
                r.get("kernels", "-"),
                ", ".join(f"{k} {v}" for k, v in r.get("top", [])) or "-",
                r["load_before"],
                r["load_after"],
            ]
            for r in rows
        ],
    )
    write_results(NAME, rows, table)


if __name__ == "__main__":
    main()
