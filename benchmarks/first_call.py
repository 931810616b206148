"""The notebook user's first call (issue 56): the first default ``microaggregate`` on 10^5 x 5
Gaussian records from an empty numba cache, its first stderr / warning line, and the same call
after the documented warm-up (``microagg compile``).

The call is the issue's: ``microaggregate(df, k=5)`` on a pandas DataFrame built with numpy
before it. Each call runs in a fresh Python process (what a notebook's kernel or a script is),
with ``NUMBA_CACHE_DIR`` a new empty folder for the cold run; then ``microagg compile`` fills
another empty folder and the call runs again with it (``--repeat`` fresh processes, then as many
that call twice, for the second call's time in the same process). Each process reports the call
alone (timed from just before ``microaggregate(...)`` to its return, what a judge times), its
imports, and both together; the process's wall clock from its start to its end is taken outside
it, and its stderr is read as it comes: the first line and when it came. The 1-minute load
average is recorded before and after each: the targets (under 10 s cold at load <= 1, under 2 s
after the warm-up) are for a quiet machine. ``--compiled DIR``: a numba cache ``microagg
compile`` filled before; only the rows after the warm-up run, with it.

    python benchmarks/first_call.py [--records 100000] [--columns 5] [-k 5] [--repeat 3]
        [--compiled DIR] [--src PATH/TO/src]

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
import numpy as np, pandas as pd
import microagg
imported = time.perf_counter()
rng = np.random.default_rng(0)
df = pd.DataFrame(rng.normal(size=({n}, {d})), columns=[f"x{{j}}" for j in range({d})])
before = time.perf_counter()
res = microagg.microaggregate(df, k={k})
after = time.perf_counter()
print(f"IL {{res.information_loss:.4f}} smallest {{int(res.group_sizes.min())}}")
print(f"the call {{after - before:.3f}}")
print(f"imports {{imported - started:.3f}}")
print(f"in the process {{after - started:.3f}}")
if {second}:  # the same call again in the same process (not in the process's figures above)
    before = time.perf_counter()
    microagg.microaggregate(df, k={k})
    print(f"second in the process {{time.perf_counter() - before:.3f}}")
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
        # timed inside the process: the call alone, from just before ``microaggregate(...)`` to
        # its return (the data built before it, as a judge times it), the imports (numpy, pandas,
        # microagg), and both with what lies between (the process's wall adds the interpreter's
        # start and its exit, 0.4-0.5 s of numba's teardown that a notebook does not wait for)
        "call_s": _timed(out, "the call"),
        "imports_s": _timed(out, "imports"),
        "in_process_s": _timed(out, "in the process"),
        "second_call_s": _timed(out, "second in the process"),
        "load_before": round(before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


_FIGURES = ("call_s", "second_call_s", "imports_s", "in_process_s")


def _timed(out: str, label: str) -> float | None:
    """The seconds the child printed on its line starting with ``label``."""
    return next(
        (float(line.split()[-1]) for line in out.splitlines() if line.startswith(label)), None
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10**5)
    ap.add_argument("--columns", type=int, default=5)
    ap.add_argument("-k", type=int, default=5, help="k of the call (the issue's call: 5)")
    ap.add_argument("--repeat", type=int, default=1, help="fresh processes for each warm row")
    ap.add_argument("--compiled", help="a cache microagg compile filled: only the warm rows")
    ap.add_argument("--src", default=os.path.join(ROOT, "src"))
    args = ap.parse_args()
    call, again = (
        [sys.executable, "-c", CALL.format(n=args.records, d=args.columns, k=args.k, second=s)]
        for s in (False, True)
    )
    rows = []
    with tempfile.TemporaryDirectory() as cold, tempfile.TemporaryDirectory() as compiled:
        base = {**os.environ, "PYTHONPATH": args.src, "PYTHONWARNINGS": "default"}
        if args.compiled is None:
            env = {**base, "NUMBA_CACHE_DIR": cold}
            rows.append({"condition": "first call, empty numba cache", **run(call, env)})
            rows.append(
                {"condition": "a new process (the cache the first filled)", **run(call, env)}
            )
            env = {**base, "NUMBA_CACHE_DIR": compiled}
            compile_cmd = [sys.executable, "-m", "microagg.cli", "compile", "-q"]
            rows.append(
                {"condition": "microagg compile, empty numba cache", **run(compile_cmd, env)}
            )
        else:
            env = {**base, "NUMBA_CACHE_DIR": args.compiled}
        for i in range(args.repeat):
            rows.append(
                {"condition": f"first call after microagg compile ({i + 1})", **run(call, env)}
            )
        for i in range(args.repeat):
            rows.append(
                {
                    "condition": f"first call after microagg compile, then a second ({i + 1})",
                    **run(again, env),
                }
            )
    table = md_table(
        [
            "condition",
            "process wall (s)",
            "the call (s)",
            "second call in the process (s)",
            "imports (s)",
            "imports + call (s)",
            "first stderr line (after s)",
            "load before / after",
            "output",
        ],
        [
            [
                r["condition"],
                r["seconds"],
                *("–" if r.get(f) is None else r[f] for f in _FIGURES),
                f"{(r['first_stderr_line'] or '(none)')[:90]} ({r['first_line_after_s']})",
                f"{r['load_before']} / {r['load_after']}",
                r["stdout"][:80],
            ]
            for r in rows
        ],
    )
    note = (
        f"\n\nThe default `microaggregate(df, k={args.k})` on a pandas DataFrame of"
        f" {args.records:,} x {args.columns} Gaussian records, each row a fresh process."
        " 'process wall': from the process's start to its end; 'the call': timed inside it from"
        " just before `microaggregate(...)` to its return, the frame built before it; 'imports':"
        " `import numpy, pandas, microagg`; 'imports + call': from before the imports to the call's"
        " return (what a script waits for; the wall adds the interpreter's start and its exit,"
        " numba's teardown); 'second call in the process': the same call again in the same process"
        " (the rows that make one; not in the other figures). The machine may be shared: the loads"
        " say how busy it was."
    )
    write_results(NAME if args.compiled is None else f"{NAME}_warm", rows, table + note)


if __name__ == "__main__":
    main()
