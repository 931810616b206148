"""Command-line start-up, the first `microagg protect` of a 4,000 × 3 CSV and the first
`microagg demo` after a fresh install.

Each command runs in a fresh subprocess of the installed ``microagg`` entry point (the one on
PATH, or ``--exe``) and is timed by wall clock, several times for the quick ones (the median is
reported). "First protect" and "first demo" run with an empty numba cache directory
(``NUMBA_CACHE_DIR`` set to a new temporary folder), which is what a fresh install sees: every
kernel the demo uses is compiled once. "Second demo" reuses that cache. The 1-minute load average
is recorded before and after each command: the issue's targets are for a quiet machine. The load
average lags, so each row also gives the cores that other processes kept busy while the command
ran (from /proc/stat's busy time less the command's own CPU time; Linux only, else blank).

    python benchmarks/cli_startup.py [--exe PATH/TO/microagg] [--repeat 5] [--no-readme]
        [--results NAME] [--peer PATH/TO/OTHER/src]

With ``--peer`` every command also runs with another source tree on PYTHONPATH (its own numba
cache folders), right after this tree's run of it: on a shared machine the two see the same
load, and the table gives this tree's time over the peer's.

The demo runs twice more (an empty cache, then warm) with stderr read line by line: when its first
line came and how many lines told that kernels compile (``microagg demo`` says so on a plain
stderr as in a terminal).

Results: benchmarks/results/cli_startup.{json,md} and the block between the ``cli-startup``
markers (this tree's rows; docs/speed.md).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, update_readme, write_results  # noqa: E402

NAME = "cli_startup"


def _busy_seconds() -> float | None:
    """CPU seconds all cores of the machine have spent busy since boot (/proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:]]
    except OSError:
        return None
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def timed(cmd: list[str], env: dict) -> tuple[float, float, float, float | None]:
    """(wall seconds, load before, load after, cores other processes kept busy meanwhile) of one
    run; the command must succeed."""
    before = os.getloadavg()[0]
    busy, own = _busy_seconds(), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after, busy_after = resource.getrusage(resource.RUSAGE_CHILDREN), _busy_seconds()
    others = None
    if busy is not None and busy_after is not None:
        mine = after.ru_utime + after.ru_stime - own.ru_utime - own.ru_stime
        others = max(busy_after - busy - mine, 0.0) / wall
    return wall, before, os.getloadavg()[0], others


def told(cmd: list[str], env: dict) -> tuple[float | None, int]:
    """(seconds until the command's first line on stderr, lines telling that kernels compile) of
    one more run of ``cmd`` with stderr read as it comes (not a terminal: the plain lines)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    first, notices = None, 0
    for line in proc.stderr:
        first = time.perf_counter() - t0 if first is None else first
        notices += "compiling kernels" in line
    if proc.wait():
        raise SystemExit(f"{' '.join(cmd)} failed")
    return first, notices


def _mean_cores(values: list) -> float | None:
    known = [v for v in values if v is not None]
    return round(sum(known) / len(known), 2) if known else None


def _write_gaussian_csv(path: str, n: int, d: int) -> None:
    import numpy as np

    X = np.random.default_rng(0).normal(size=(n, d))
    with open(path, "w") as f:
        f.write(",".join(f"x{j}" for j in range(d)) + "\n")
        for row in X:
            f.write(",".join(f"{v:.6f}" for v in row) + "\n")


def _trees(args) -> list[tuple[str, dict]]:
    """(label, environment) of each tree to time: this one (the environment's PYTHONPATH), and
    with ``--peer SRC`` a peer's source tree on PYTHONPATH (another checkout, e.g. the main
    branch), each command timed for both in turn so that the two share the machine's load."""
    trees = [("this", dict(os.environ))]
    if args.peer:
        trees.append(("peer", dict(os.environ, PYTHONPATH=os.path.abspath(args.peer))))
    return trees


def _row(label: str, tree: str, runs: list) -> dict:
    return {
        "command": label,
        "tree": tree,
        "seconds": round(statistics.median(r[0] for r in runs), 3 if len(runs) > 1 else 2),
        "runs": len(runs),
        "load_before": round(runs[0][1], 2),
        "load_after": round(runs[-1][2], 2),
        "other_cores": _mean_cores([r[3] for r in runs]),
    }


def measure(args, python: str, cache: str) -> list[dict]:
    """Every row, for each tree of ``_trees`` in turn; each tree has its own numba cache folders,
    empty where the row says so."""
    trees = _trees(args)
    rows = []
    quick = {
        "python -c pass": [python, "-c", "pass"],
        "import microagg": [python, "-c", "import microagg"],
        "microagg --help": [args.exe, "--help"],
        "microagg methods": [args.exe, "methods"],
    }
    envs = {t: dict(env, NUMBA_CACHE_DIR=os.path.join(cache, t, "protect")) for t, env in trees}
    for label, cmd in quick.items():
        for tree, _ in trees:
            rows.append(_row(label, tree, [timed(cmd, envs[tree]) for _ in range(args.repeat)]))
    src = os.path.join(cache, "in.csv")
    _write_gaussian_csv(src, 4000, 3)
    protect = [args.exe, "protect", src, "-o", os.path.join(cache, "out.csv"), "-k", "3"]
    for label in (
        "first protect 4,000 × 3 CSV (empty numba cache)",
        "second protect 4,000 × 3 CSV",
    ):
        for tree, _ in trees:
            rows.append(_row(label, tree, [timed(protect, envs[tree])]))
    envs = {t: dict(env, NUMBA_CACHE_DIR=os.path.join(cache, t, "demo")) for t, env in trees}
    for label in ("first demo (empty numba cache)", "second demo"):
        for tree, _ in trees:
            rows.append(_row(label, tree, [timed([args.exe, "demo"], envs[tree])]))
    # what the demo says on a plain stderr, from an empty cache again and then warm
    envs = {t: dict(env, NUMBA_CACHE_DIR=os.path.join(cache, t, "demo-told")) for t, env in trees}
    for label in ("first demo (empty numba cache)", "second demo"):
        for tree, _ in trees:
            first, notices = told([args.exe, "demo"], envs[tree])
            row = next(r for r in rows if r["command"] == label and r["tree"] == tree)
            row["first_stderr_line_seconds"] = None if first is None else round(first, 2)
            row["compile_notices"] = notices
    return rows


def markdown(rows: list[dict]) -> str:
    """The results' table; with a peer, each row's tree and this tree's time over the peer's."""
    peer = {r["command"]: r["seconds"] for r in rows if r["tree"] == "peer"}
    head = ["command", "seconds (median)"]
    if peer:
        head[1:1] = ["tree"]
        head.append("this / peer")
    head += [
        "runs",
        "load before",
        "load after",
        "cores busy with other work",
        "first stderr line s / compile notices (demo, a second run, stderr not a terminal)",
    ]
    table = []
    for r in rows:
        line = [r["command"], f"{r['seconds']:.2f}"]
        if peer:
            line[1:1] = [r["tree"]]
            mine = r["tree"] == "this" and peer.get(r["command"])
            line.append(f"{r['seconds'] / mine:.2f}" if mine else "")
        line += [
            r["runs"],
            r["load_before"],
            r["load_after"],
            "" if r["other_cores"] is None else f"{r['other_cores']:.2f}",
            (
                f"{r['first_stderr_line_seconds']} / {r['compile_notices']}"
                if "compile_notices" in r
                else ""
            ),
        ]
        table.append(line)
    return md_table(head, table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--exe", default=shutil.which("microagg"), help="the microagg entry point to time"
    )
    ap.add_argument(
        "--repeat", type=int, default=5, help="runs of each quick command (median reported)"
    )
    ap.add_argument(
        "--no-readme", action="store_true", help="write the results only, not README's block"
    )
    ap.add_argument(
        "--results",
        default=NAME,
        help="the results' name under benchmarks/results/ (default %(default)s)",
    )
    ap.add_argument(
        "--peer",
        default=None,
        metavar="SRC",
        help="also time a peer's source tree (PYTHONPATH=SRC), each command in turn with this one",
    )
    args = ap.parse_args()
    if not args.exe:
        raise SystemExit("no microagg on PATH: pip install . first, or give --exe")
    python = os.path.join(os.path.dirname(args.exe), "python")
    python = python if os.path.exists(python) else sys.executable
    with tempfile.TemporaryDirectory(prefix="microagg-numba-cache-") as cache:
        rows = measure(args, python, cache)
    table = markdown(rows)
    write_results(args.results, rows, table)
    if args.no_readme:
        return
    # the documentation's block: this tree's rows (the peer's are in the results)
    update_readme(
        "cli-startup",
        f"{markdown([r for r in rows if r['tree'] == 'this'])}\n\n_From `python "
        f"benchmarks/cli_startup.py{' --peer SRC' if args.peer else ''}` "
        f"(benchmarks/results/{NAME}.md), {os.cpu_count()} cores._",
    )
    update_readme("first-demo", first_demo_line(rows))


def first_demo_line(rows: list[dict]) -> str:
    """README's sentence on the first demo, from this tree's rows."""
    ours = {r["command"]: r for r in rows if r["tree"] == "this"}
    first, second = ours["first demo (empty numba cache)"], ours["second demo"]
    return (
        f"The first `microagg demo` compiles the kernels it runs and says so on stderr: "
        f"{first['seconds']:.1f} s from an empty numba cache on a {os.cpu_count()}-core machine at "
        f"load {first['load_before']:.2f}, {second['seconds']:.1f} s once they are cached "
        f"(`python benchmarks/cli_startup.py`, benchmarks/results/{NAME}.md)."
    )


if __name__ == "__main__":
    main()
