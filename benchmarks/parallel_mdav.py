"""MDAV on one thread against its work split over the cores a probe finds idle (the default).

Gaussian n × 10 records (``mdav_scaling.make_data``), k = 3, through
``microaggregate(X, k=3, method="mdav", audit=False, threads=...)``, each run in a fresh process
whose kernels were compiled before (a warm-up process per condition, into the checkout's numba
cache). Conditions, alternating so that they meet the same load: ``threads=1`` (one thread
throughout), ``threads=None`` (the probe decides; the default since issue 56), and ``threads=2``
(split whatever the load). Each row: the run of median wall time, its CPU seconds (all threads), the kernel's
``Result.seconds``, the labels' SHA-256 (the same in every condition), the 1-minute load average
before and after, and the idle cores the probe (``kernels.cores.idle_cores``) saw just before
the call, and numba's threading layer the split ran on. ``--busy 0,2`` (the default) measures
each n twice: on the machine as it is, then with two busy-loop processes started first (one per
core) and stopped after.

    python benchmarks/parallel_mdav.py --n 1e6     # issue 45's figures: idle, then two busy
    python benchmarks/parallel_mdav.py --n 2e5,3e5 --busy 0 --repeat 1

Rows accumulate in results/parallel_mdav.json, keyed by (n, busy processes); the .md table, and
the parallel-mdav block of docs/performance.md, are rewritten from all of them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, md_table, update_readme, write_results  # noqa: E402

CONDITIONS = {"one thread": 1, "default": None, "two threads": 2}
#: --conditions names: the json keeps "default" for the probe
CONDITION_NAMES = {"one": "one thread", "probe": "default", "two": "two threads"}


def child(n: int, threads: int | None) -> None:
    import resource

    from mdav_scaling import make_data

    from microagg import microaggregate
    from microagg.kernels.cores import idle_cores

    X = make_data("gauss", n)
    idle = idle_cores()
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    result = microaggregate(X, k=3, method="mdav", audit=False, threads=threads)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu_seconds = (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)
    labels = result.labels.astype("int64")
    try:
        import numba

        layer = numba.threading_layer()
    except ValueError:  # no parallel region ran in this process
        layer = ""
    print(
        json.dumps(
            {
                "wall": wall,
                "cpu": cpu_seconds,
                "kernel": result.seconds,
                "idle_cores": round(idle, 2),
                "layer": layer,
                "labels_sha256": hashlib.sha256(labels.tobytes()).hexdigest(),
            }
        )
    )


def warm_up(n: int, threads: int | None, env: dict) -> None:
    """Compile (or load) the kernels a run on n records calls, on a sample (``jit.planning``)."""
    code = (
        "import numpy as np; from microagg.kernels.jit import planning; "
        "from microagg.kernels.mdav_labels import mdav_labels; "
        "X = np.random.default_rng(1).normal(size=(3000, 10))\n"
        f"with planning({n}): mdav_labels(X, 3, threads={threads!r})"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def run_child(n: int, threads: int | None, env: dict) -> dict:
    before = os.getloadavg()[0]
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", str(n), repr(threads)],
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row.update(load_before=round(before, 2), load_after=round(os.getloadavg()[0], 2))
    return row


def busy_loops(count: int) -> list:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def measure(n: int, busy: int, repeat: int, env: dict, names: list[str]) -> dict:
    hogs = busy_loops(busy)
    try:
        if hogs:
            time.sleep(2.0)
        for name in names:
            warm_up(n, CONDITIONS[name], env)
        runs = {name: [] for name in names}
        for _ in range(repeat):
            for name in names:
                runs[name].append(run_child(n, CONDITIONS[name], env))
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    row = {"n": n, "busy": busy, "repeat": repeat, "conditions": {}}
    for name, rs in runs.items():
        median = sorted(rs, key=lambda r: r["wall"])[len(rs) // 2]
        row["conditions"][name] = dict(median, walls=[round(r["wall"], 3) for r in rs])
    row["same_labels"] = len({r["labels_sha256"] for rs in runs.values() for r in rs}) == 1
    one = row["conditions"]["one thread"]["wall"]
    for name, key in (("default", "speedup_default"), ("two threads", "speedup_two_threads")):
        if name in runs:
            row[key] = round(one / row["conditions"][name]["wall"], 3)
            # each round's one thread against the same round's condition, run just before or
            # after it: the pairs share the load, where the medians may come from different rounds
            row[key + "_by_round"] = [
                round(a["wall"] / b["wall"], 3) for a, b in zip(runs["one thread"], runs[name])
            ]
    row["loads"] = [
        min(r["load_before"] for rs in runs.values() for r in rs),
        max(r["load_after"] for rs in runs.values() for r in rs),
    ]
    return row


def _seconds(c: dict, name: str) -> str:
    return f"{c[name]['wall']:.2f} / {c[name]['cpu']:.2f}" if name in c else "–"


def _speedup(row: dict, key: str) -> str:
    if key not in row:
        return "–"
    rounds = row.get(key + "_by_round", [])
    by_round = f" ({', '.join(f'{r:.2f}' for r in rounds)})" if len(rounds) > 1 else ""
    return f"{row[key]:.2f}×{by_round}"


def markdown(rows: list[dict]) -> str:
    table = []
    for row in sorted(rows, key=lambda r: (r["busy"], r["n"])):
        c = row["conditions"]
        table.append(
            [
                f"{row['n']:,}",
                row["busy"],
                f"{row['loads'][0]}–{row['loads'][1]}",
                _seconds(c, "one thread"),
                _seconds(c, "default"),
                _seconds(c, "two threads"),
                _speedup(row, "speedup_default"),
                _speedup(row, "speedup_two_threads"),
                " ".join(str(c[name]["idle_cores"]) if name in c else "–" for name in CONDITIONS),
                "yes" if row["same_labels"] else "NO",
                " / ".join(
                    (c[name].get("layer", "") or "–") if name in c else "·" for name in CONDITIONS
                ),
                row.get("measured_utc", ""),
            ]
        )
    intro = (
        "MDAV, Gaussian n × 10, k = 3, `microaggregate(X, k=3, method='mdav', audit=False,"
        " threads=...)`, each run in a fresh process with its kernels compiled before; the run of"
        " median wall time of `repeat`, the conditions alternating. Seconds are wall / CPU (all"
        " threads). Speed-up: one thread's wall over the condition's. Busy: busy-loop processes"
        " started by the script, one per core. Load: the 1-minute load average, lowest before and"
        " highest after the runs; the machine is shared, so a load above the busy processes' count"
        " means other jobs ran too. Idle cores: what the probe saw before the call in each"
        " condition (probe, threads=None: threads on the cores found idle, 1.7 idle cores of 2"
        " make 2; the json keeps the key 'default' for it, and between 2026-11-27 22:30 and 23:30"
        " UTC it was mdav's default). Threading layer: numba's, where a parallel region ran (– none; rows"
        " measured before 2026-11-27 20:30 UTC do not say). Rows measured before 2026-11-27 23:00"
        " UTC ran the earlier split of the tree kernel (a pair's first two queries at once); later"
        " ones answer two pairs' queries at a time (`kernels.mdav_tree._split_pair`); from 2026-12-07"
        " 20:55 UTC on, the two pairs' six queries run in one region, three a thread; from 23:13 UTC"
        " on, the checks of split work against one thread change way only when two in a row agree"
        " (`kernels.mdav_split._split_timed`, `_pair_timed`). With two busy processes the probe finds"
        " no idle core and runs one thread: from 2026-12-08 02:14 UTC on, the call `threads=1`"
        " makes, with the same arguments (before, the same operations in a kernel compiled apart)."
        " One thread's own runs there moved by 36–45 % between rounds (226.4–309.0 s at 02:48 UTC,"
        " 277.0 and 401.2 s at 01:01 UTC): the busy rows' speed-ups are the scheduler's draw, not"
        " the code's. In brackets, rows from 2026-12-08 on: each round's speed-up, one thread's"
        " wall over the same round's run of the condition.\n\n"
    )
    return intro + md_table(
        [
            "n",
            "busy",
            "load",
            "one thread",
            "probe (default)",
            "two threads",
            "probe speed-up",
            "two threads speed-up",
            "idle cores (1 / probe / 2)",
            "same labels",
            "threading layer (1 / probe / 2)",
            "measured",
        ],
        table,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1e6", help="record counts, comma-separated")
    ap.add_argument(
        "--busy",
        default="0,2",
        help="busy-loop processes to start before measuring, comma-separated: one measurement each",
    )
    ap.add_argument(
        "--repeat", type=int, default=3, help="runs of each condition (the median is reported)"
    )
    ap.add_argument(
        "--conditions",
        default="one,probe,two",
        help="conditions to run, comma-separated: one (threads=1), probe (threads=None),"
        " two (threads=2); one thread always runs",
    )
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = ["one thread"] + [
        CONDITION_NAMES[c]
        for c in map(str.strip, args.conditions.split(","))
        if c not in ("", "one")
    ]
    if args.child:
        child(int(args.child[0]), None if args.child[1] == "None" else int(args.child[1]))
        return
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([src, here, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    previous = RESULTS / "parallel_mdav.json"
    rows = json.loads(previous.read_text())["rows"] if previous.exists() else []
    env = dict(os.environ, PYTHONPATH=path)  # the checkout's numba cache: the warm-ups fill it
    for n in [int(float(s)) for s in args.n.split(",")]:
        for busy in [int(b) for b in args.busy.split(",")]:
            row = measure(n, busy, args.repeat, env, names)
            row["measured_utc"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
            rows = [r for r in rows if (r["n"], r["busy"]) != (n, busy)] + [row]
            print(json.dumps({k: v for k, v in row.items() if k != "conditions"}), flush=True)
            write_results("parallel_mdav", rows, markdown(rows))  # each row kept as it comes
    update_readme("parallel-mdav", markdown(rows))  # docs/performance.md's block
    if not all(r["same_labels"] for r in rows):
        raise SystemExit("the labels differ between conditions")


if __name__ == "__main__":
    main()
