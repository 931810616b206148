"""The notebook user's first call (issue 56): the first default ``microaggregate`` on 10^5 x 5
Gaussian records from an empty numba cache, its first stderr / warning line, and the same call
after the documented warm-up (``microagg compile``).

Each call runs in a fresh Python process (what a notebook's kernel or a script is), with
``NUMBA_CACHE_DIR`` a new empty folder for the cold run; then ``microagg compile`` fills another
empty folder and the call runs again with it (and once more, warm, for the second call's time).
Every process is timed by wall clock from its start to its end (imports included), and its
stderr is read as it comes: the first line and when it came. The 1-minute load average is
recorded before and after each: the targets (under 10 s cold at load <= 1, under 2 s after the
warm-up) are for a quiet machine.

    python benchmarks/first_call.py [--records 100000] [--columns 5] [--src PATH/TO/src]

Results: benchmarks/results/first_call.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, write_results  # noqa: E402

NAME = "first_call"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CALL = """
import time
started = time.perf_counter()
import numpy as np, microagg
X = np.random.default_rng(0).normal(size=({n}, {d}))
res = microagg.microaggregate(X, k=3)
print(f"IL {{res.information_loss:.4f}} smallest {{int(res.group_sizes.min())}}")
print(f"in the process {{time.perf_counter() - started:.2f}}")
"""


def run(cmd: list[str], env: dict) -> dict:
    """Wall seconds, the first stderr line and its second, the loads, stdout's last line."""
    before = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first, first_at, lines = None, None, 0
    for line in proc.stderr:
        lines += 1
        if first is None and line.strip():
            first, first_at = line.strip(), time.perf_counter() - t0
    out = proc.stdout.read()
    code = proc.wait()
    wall = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"{cmd} failed ({code})")
    return {
        "seconds": round(wall, 2),
        "first_stderr_line": first,
        "first_line_after_s": None if first_at is None else round(first_at, 2),
        "stderr_lines": lines,
        "stdout": next((line for line in out.splitlines() if line.startswith("IL ")), ""),
        # imports and the call, timed inside the process: what a notebook's cell waits for (the
        # process's wall adds the interpreter's start and its exit, 0.4-0.5 s of numba's teardown)
        "in_process_s": next(
            (float(line.split()[-1]) for line in out.splitlines() if line.startswith("in the")),
            None,
        ),
        "load_before": round(before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10**5)
    ap.add_argument("--columns", type=int, default=5)
    ap.add_argument("--src", default=os.path.join(ROOT, "src"))
    args = ap.parse_args()
    call = [sys.executable, "-c", CALL.format(n=args.records, d=args.columns)]
    rows = []
    with tempfile.TemporaryDirectory() as cold, tempfile.TemporaryDirectory() as compiled:
        base = {**os.environ, "PYTHONPATH": args.src, "PYTHONWARNINGS": "default"}
        env = {**base, "NUMBA_CACHE_DIR": cold}
        rows.append({"condition": "first call, empty numba cache", **run(call, env)})
        rows.append({"condition": "second call (its cache)", **run(call, env)})
        env = {**base, "NUMBA_CACHE_DIR": compiled}
        compile_cmd = [sys.executable, "-m", "microagg.cli", "compile", "-q"]
        rows.append({"condition": "microagg compile, empty numba cache", **run(compile_cmd, env)})
        rows.append({"condition": "first call after microagg compile", **run(call, env)})
        rows.append({"condition": "second call after microagg compile", **run(call, env)})
    table = md_table(
        [
            "condition",
            "process wall (s)",
            "imports + call (s)",
            "first stderr line (after s)",
            "load before / after",
            "output",
        ],
        [
            [
                r["condition"],
                r["seconds"],
                "–" if r.get("in_process_s") is None else r["in_process_s"],
                f"{(r['first_stderr_line'] or '(none)')[:90]} ({r['first_line_after_s']})",
                f"{r['load_before']} / {r['load_after']}",
                r["stdout"][:80],
            ]
            for r in rows
        ],
    )
    note = (
        f"\n\nThe default `microaggregate(X, k=3)` on {args.records:,} x {args.columns} Gaussian"
        " records, each in a fresh process. 'process wall': from the process's start to its end;"
        " 'imports + call': timed inside it, from before `import numpy, microagg` to the call's"
        " return (what a notebook cell waits for; the wall adds the interpreter's start and exit)."
        " The machine may be shared: the loads say how busy it was."
    )
    write_results(NAME, rows, table + note)


if __name__ == "__main__":
    main()
