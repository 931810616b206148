"""Where the first ``microagg demo`` spends its time: each of its tasks alone, from an empty cache.

The demo runs its methods as tasks in worker processes (``microagg.demo_runs.demo_tasks``). Here each
task runs in a fresh process of its own, one after another in the order the demo starts them,
all sharing one numba cache folder that is empty at the start (``NUMBA_CACHE_DIR``): a task
loads what an earlier task compiled, as in the demo when the earlier task has finished; the
portfolio runs right after the tasks it waits for (it should compile nothing), the others after
it. Per task: the process's wall and CPU seconds (CPU: less sensitive to the load), the seconds
numba spent compiling (``numba:compile`` events, any thread), the kernels compiled and the
costliest ones (exclusive seconds: a kernel's own compilation, without the callees it compiled
on the way), and the methods' reported seconds. At
the end: the package's kernels compiled for more than one signature (a second specialisation)
and those compiled by more than one task (which the cache should have served). The tasks' sum
over the machine's two cores is the least the demo can take from an empty cache.

    python benchmarks/demo_tasks.py [--src PATH/TO/src] [--results NAME]

``--src`` profiles another source tree (PYTHONPATH), e.g. the main branch's. The 1-minute load
average is recorded before and after each task. Results: benchmarks/results/demo_tasks.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, write_results  # noqa: E402

NAME = "demo_tasks"
TOP = 4  # kernels listed per task


def child(task: str) -> None:
    """Run the demo's task ``task`` on census (k = 3) and print one JSON line."""
    import threading

    from numba.core import event

    compiled = []  # (kernel, signature, exclusive seconds)
    stacks: dict = {}

    class Listener(event.Listener):
        def on_start(self, ev):
            f = ev.data["dispatcher"].py_func
            name = f"{f.__module__.replace('microagg.', '')}.{f.__qualname__}"
            stack = stacks.setdefault(threading.get_ident(), [])
            stack.append([name, str(ev.data["args"]), time.perf_counter(), 0.0])

        def on_end(self, ev):
            stack = stacks[threading.get_ident()]
            name, args, t0, inner = stack.pop()
            spent = time.perf_counter() - t0
            compiled.append((name, args, spent - inner))
            if stack:
                stack[-1][3] += spent

    event.register("numba:compile", Listener())
    from microagg import demo_runs
    from microagg import methods as registry

    tasks, _ = demo_runs.demo_tasks(registry.names())
    t0 = time.perf_counter()
    rows = demo_runs._demo_task(task, tasks[task], "census", 3, None)
    print(
        json.dumps(
            {
                "task": task,
                "methods": tasks[task],
                "task_seconds": time.perf_counter() - t0,
                "compile_seconds": sum(c[2] for c in compiled),
                "method_seconds": {r[0]: r[3] for r in rows},
                "compiled": compiled,
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=None, help="the source tree to profile (PYTHONPATH)")
    ap.add_argument("--results", default=NAME, help="results' name (default %(default)s)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = os.path.abspath(args.src)
    order = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json; from microagg import demo_runs, methods as r; "
            "tasks, needs = demo_runs.demo_tasks(r.names()); "
            "print(json.dumps([list(tasks), sorted(needs['portfolio'])]))",
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    order, portfolio_needs = json.loads(order.stdout)
    # the portfolio right after the tasks it waits for: it should compile nothing
    order = (
        [t for t in order if t in portfolio_needs]
        + ["portfolio"] * ("portfolio" in order)
        + [t for t in order if t not in portfolio_needs and t != "portfolio"]
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="microagg-numba-cache-") as cache:
        env["NUMBA_CACHE_DIR"] = cache
        for task in order:
            before = os.getloadavg()[0]
            cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            out = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--child", task],
                env=env,
                capture_output=True,
                text=True,
            )
            if out.returncode:
                print(out.stderr[-2000:], file=sys.stderr)
                raise SystemExit(f"task {task} failed")
            wall = time.perf_counter() - t0
            cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row.update(
                process_seconds=round(wall, 2),
                process_cpu_seconds=round(
                    cpu_after.ru_utime + cpu_after.ru_stime - cpu.ru_utime - cpu.ru_stime,
                    2,
                ),
                load_before=round(before, 2),
                load_after=round(os.getloadavg()[0], 2),
            )
            rows.append(row)
            print(
                task,
                row["process_seconds"],
                row["process_cpu_seconds"],
                round(row["compile_seconds"], 1),
                flush=True,
            )
    table = [
        [
            r["task"],
            ", ".join(r["methods"]),
            f"{r['process_seconds']:.1f}",
            f"{r['process_cpu_seconds']:.1f}",
            f"{r['compile_seconds']:.1f}",
            len(r["compiled"]),
            ", ".join(
                f"{k.replace('kernels.', '')} {s:.2f}"
                for k, _, s in sorted(r["compiled"], key=lambda c: -c[2])[:TOP]
            )
            or "-",
            ", ".join(f"{m} {s:.2f}" for m, s in r["method_seconds"].items()),
            r["load_before"],
            r["load_after"],
        ]
        for r in rows
    ]
    total = sum(r["process_seconds"] for r in rows)
    total_cpu = sum(r["process_cpu_seconds"] for r in rows)
    signatures: dict = {}
    tasks_of: dict = {}
    for r in rows:
        for kernel, sig, _ in r["compiled"]:
            if kernel.startswith("kernels."):
                signatures.setdefault(kernel, set()).add(sig)
                tasks_of.setdefault(kernel, set()).add(r["task"])
    twice = sorted(k for k, s in signatures.items() if len(s) > 1)
    shared = sorted(k for k, t in tasks_of.items() if len(t) > 1)
    md = md_table(
        [
            "task",
            "methods",
            "process s",
            "process CPU s",
            "compile s",
            "compilations",
            "costliest (s)",
            "methods' reported s",
            "load before",
            "load after",
        ],
        table,
    )
    md += (
        f"\n\nSum of the tasks' processes: {total:.1f} s (over 2 cores: {total / 2:.1f} s);"
        f" of their CPU: {total_cpu:.1f} s."
        f" Tree: {env.get('PYTHONPATH', 'installed')}."
        f"\nPackage kernels compiled for more than one signature: {', '.join(twice) or 'none'}."
        f"\nPackage kernels compiled by more than one task: {', '.join(shared) or 'none'}.\n"
    )
    write_results(args.results, rows, md)


if __name__ == "__main__":
    main()
