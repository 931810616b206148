"""What the first default call compiles from an empty numba cache, kernel by kernel (issue 56).

The issue's call, ``microaggregate(df, k=5)`` on a pandas DataFrame of 10^5 x 5 Gaussian records,
in a fresh process with ``NUMBA_CACHE_DIR`` a new empty folder (the default path: the tree kernel
with its two-thread variants and its hand-over to brute force), and MDAV's kernel alone on the
same z-scores (``kernels.mdav_labels.mdav_labels``, k = 5) on two lighter paths, each in a fresh
process from an empty cache: one thread (``threads=1``: the tree kernel and brute force, without
the two-thread code) and brute force alone on one thread (``algorithm="brute"``). These two call
the kernel directly because the API's warm-up (``methods.load_kernels``) runs the method's
default parameters, so ``microaggregate(df, k=5, threads=1)`` compiles the default path's
kernels as well. Each row: the numba compilations (``numba:compile`` events:
the package's kernels and numba's own implementations they call), the CPU seconds of the first
call (its compilations) and of the same call again in the process (the run), and each kernel's
exclusive compile seconds (its own compilation, without the callees compiled on the way; wall
seconds, which other jobs on the machine stretch: the CPU seconds are the figure to compare).

    python benchmarks/first_call_kernels.py [--paths default,one-thread,brute] [--records 100000]

Results: benchmarks/results/first_call_kernels.{json,md}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, write_results  # noqa: E402

NAME = "first_call_kernels"
PATHS = {
    "default": {},  # microaggregate(df, k=5)
    "one-thread": {"threads": 1},  # mdav_labels(Z, 5, threads=1)
    "brute": {"algorithm": "brute", "threads": 1},  # mdav_labels(Z, 5, algorithm="brute", ...)
}
TOP = 12  # kernels listed per row


def child(path: str, records: int) -> None:
    """One path's first call and second call; one JSON line on stdout."""
    import numpy as np
    import pandas as pd
    from numba.core import event

    import microagg

    stack, compiled = [], []

    class Timed(event.Listener):
        def on_start(self, ev):
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            name = f"{func.__module__}.{func.__qualname__}" if func is not None else "?"
            stack.append([name, time.perf_counter(), 0.0])

        def on_end(self, ev):
            name, started, inner = stack.pop()
            spent = time.perf_counter() - started
            if stack:
                stack[-1][2] += spent
            compiled.append((name, spent - inner))

    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(records, 5)), columns=[f"x{j}" for j in range(5)])
    options = PATHS[path]
    if options:  # the kernel alone, on z-scores of the same records
        from microagg.kernels.mdav_labels import mdav_labels

        Z = np.ascontiguousarray((df - df.mean()) / df.std(ddof=0), dtype=np.float64)

        def call():
            return mdav_labels(Z, 5, **options)
    else:

        def call():
            return microagg.microaggregate(df, k=5).labels

    with event.install_listener("numba:compile", Timed()):
        cpu, wall = time.process_time(), time.perf_counter()
        first = call()
        first_cpu, first_wall = time.process_time() - cpu, time.perf_counter() - wall
    cpu, wall = time.process_time(), time.perf_counter()
    second = call()
    second_cpu, second_wall = time.process_time() - cpu, time.perf_counter() - wall
    assert np.array_equal(first, second)
    own = [c for c in compiled if c[0].startswith("microagg.")]
    print(
        json.dumps(
            {
                "path": path,
                "options": options,
                "compilations": len(compiled),
                "package_kernels": len(own),
                "numba_implementations": len(compiled) - len(own),
                "first_call_cpu_s": round(first_cpu, 2),
                "first_call_wall_s": round(first_wall, 2),
                "second_call_cpu_s": round(second_cpu, 2),
                "second_call_wall_s": round(second_wall, 2),
                "compile_wall_s": round(sum(s for _, s in compiled), 2),
                "kernels": sorted(
                    ((n.removeprefix("microagg."), round(s, 2)) for n, s in compiled),
                    key=lambda kv: -kv[1],
                ),
                "labels_sha256": hashlib.sha256(
                    np.asarray(first, dtype=np.int64).tobytes()
                ).hexdigest(),
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--records", type=int, default=10**5)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.records)
        return
    rows = []
    for path in args.paths.split(","):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            before = round(os.getloadavg()[0], 2)
            out = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--child", path]
                + ["--records", str(args.records)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row.update(load_before=before, load_after=round(os.getloadavg()[0], 2))
            rows.append(row)
    same = len({r["labels_sha256"] for r in rows[1:]}) <= 1
    table = md_table(
        [
            "path",
            "compilations (package / numba's)",
            "first call CPU s (wall)",
            "second call CPU s (wall)",
            "costliest compilations, exclusive wall s",
            "load before / after",
        ],
        [
            [
                f"{r['path']} {r['options'] or ''}",
                f"{r['compilations']} ({r['package_kernels']} / {r['numba_implementations']})",
                f"{r['first_call_cpu_s']} ({r['first_call_wall_s']})",
                f"{r['second_call_cpu_s']} ({r['second_call_wall_s']})",
                ", ".join(f"{n} {s}" for n, s in r["kernels"][:TOP]),
                f"{r['load_before']} / {r['load_after']}",
            ]
            for r in rows
        ],
    )
    note = (
        f"\n\n`microaggregate(df, k=5)` on {args.records:,} x 5 Gaussian records (default), and"
        " `kernels.mdav_labels.mdav_labels(Z, 5, ...)` on its z-scores (the other paths), each in"
        " a fresh process from an empty numba cache; the kernel paths give the same labels:"
        f" {'yes' if same else 'NO'}. Compile seconds are wall seconds inside the process: other"
        " jobs stretch them (the loads say how busy the machine was); the CPU seconds compare."
    )
    write_results(NAME, rows, table + note)


if __name__ == "__main__":
    main()
