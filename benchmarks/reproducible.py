"""Reproducible by default (issue 44): the same input, options and seed give the same bytes at any
load.

Each case runs the command line in a fresh process twice: once as the machine is, once with two
busy-loop processes holding the cores (started here, ended by their ids). What is compared:

* protect (auto, icsm, colgen, lsearch, mf-tsp, the partitioned mode): the output file's SHA-256;
* explore: the labels of every run done in both (``RESULT.labels.npz``; which runs are done
  depends on the time budget, each done run is bounded by work);
* the demo: its table without the seconds column (the IL and bound figures).

The bounds are the ones microagg sets itself (auto's default cap, the demo's, explore's), or a
``--work`` budget where the method would otherwise run until it converges. The units per second
of the reference machine (``deadline.UNITS_PER_SECOND``) are checked from the runs' seconds at the
end (``units_per_second``: work / seconds of the icsm case, quiet).

    python benchmarks/reproducible.py [--data census] [--only "auto --work,demo"] [--no-warm]

(``--only``: those cases are measured again, the other rows stay. ``--no-warm``: without the
first, untimed run of each case, when numba's cache holds every kernel already; a kernel compiled
in a quiet run changes its seconds, not its bytes.)

Results: benchmarks/results/reproducible.{json,md}.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, write_results  # noqa: E402

NAME = "reproducible"
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "src" / "microagg" / "datasets"
#: (case, command words after ``microagg``; INPUT and OUT are filled in, what is compared)
CASES = [
    ("auto (default cap)", "protect INPUT -o OUT -k 3 --method auto --seed 7".split(), "sha256"),
    (
        "auto --work",
        "protect INPUT -o OUT -k 3 --method auto --seed 7 --work 300000".split(),
        "sha256",
    ),
    (
        "icsm --work",
        "protect INPUT -o OUT -k 3 --method icsm --seed 7 --work 100000 --param restarts=1000000".split(),
        "sha256",
    ),
    (
        "colgen --work",
        "protect INPUT -o OUT -k 3 --method colgen --seed 7 --work 200000".split(),
        "sha256",
    ),
    (
        "lsearch --work",
        "protect INPUT -o OUT -k 3 --method lsearch --seed 7 --work 20000".split(),
        "sha256",
    ),
    (
        "mf-tsp --work",
        "protect INPUT -o OUT -k 3 --method mf-tsp --seed 7 --work 50000".split(),
        "sha256",
    ),
    (
        "partitioned icsm --work",
        "protect INPUT -o OUT -k 3 --method icsm --seed 7 --block-size 300 --work 60000".split(),
        "sha256",
    ),
    (
        "partitioned colgen --work",
        "protect INPUT -o OUT -k 3 --method colgen --seed 7 --block-size 300 --work 60000".split(),
        "sha256",
    ),
    (
        "explore",
        "explore INPUT -o OUT.json -k 3,5 --methods mdav,icsm,lsearch --time-limit 40".split(),
        "labels",
    ),
    ("demo", "demo".split(), "table"),
]


def busy(count: int = 2) -> list:
    """Busy-loop processes (ended by the caller, by their ids)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def fingerprint(kind: str, out: Path, stdout: str) -> str:
    if kind == "sha256":
        return hashlib.sha256(out.read_bytes()).hexdigest()
    if kind == "labels":
        import numpy as np

        labels = np.load(out.with_name(out.name.removesuffix(".json") + ".labels.npz"))
        return {
            key: hashlib.sha256(labels[key].tobytes()).hexdigest()[:16]
            for key in sorted(labels.files)
        }
    # the demo's table: every row without its seconds column
    rows = []
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.split("│")][1:-1]
        if len(cells) == 5 and re.fullmatch(r"[0-9.]+", cells[1]):
            rows.append(cells[:3] + cells[4:])
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def run_case(words: list, kind: str, data: Path, folder: Path, tag: str) -> dict:
    out = folder / f"{tag}.csv"
    argv = [
        (
            str(data)
            if w == "INPUT"
            else str(out)
            if w == "OUT"
            else str(folder / f"{tag}.json")
            if w == "OUT.json"
            else w
        )
        for w in words
    ]
    if kind == "labels":
        out = folder / f"{tag}.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "microagg.cli", *argv, *([] if words[0] == "demo" else ["-q"])],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    wall = time.perf_counter() - t
    if done.returncode != 0:
        return {"wall": wall, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return {"wall": wall, "fingerprint": fingerprint(kind, out, done.stdout), "stdout": done.stdout}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="census")
    ap.add_argument("--only", default=None, help="comma-separated case names (default: all)")
    ap.add_argument(
        "--no-warm",
        action="store_true",
        help="no first run of each case (numba's cache filled already: only the seconds differ)",
    )
    args = ap.parse_args()
    data = DATA / f"{args.data}.csv"
    wanted = None if args.only is None else {c.strip() for c in args.only.split(",")}
    rows = []
    load_start, started = os.getloadavg()[0], time.strftime("%H:%M", time.gmtime())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # a first run of every case compiles what it needs (numba's cache): not timed, not compared
        for case, words, kind in CASES:
            if (wanted is None or case in wanted) and not args.no_warm:
                run_case(words, kind, data, folder, "warm")
        for case, words, kind in CASES:
            if wanted is not None and case not in wanted:
                continue
            load_before = os.getloadavg()[0]
            quiet = run_case(words, kind, data, folder, "quiet")
            helpers = busy(2)
            try:
                time.sleep(1.0)
                load_busy = os.getloadavg()[0]
                loaded = run_case(words, kind, data, folder, "busy")
            finally:
                for h in helpers:
                    h.kill()
                    h.wait()
            same = (
                "error" not in quiet
                and "error" not in loaded
                and quiet["fingerprint"] == loaded["fingerprint"]
            )
            if kind == "labels" and "error" not in quiet and "error" not in loaded:
                both = set(quiet["fingerprint"]) & set(loaded["fingerprint"])
                same = all(quiet["fingerprint"][r] == loaded["fingerprint"][r] for r in both)
                detail = (
                    f"{len(both)} runs done in both ({len(quiet['fingerprint'])} quiet, "
                    f"{len(loaded['fingerprint'])} busy), their labels identical: {same}"
                )
            else:
                detail = (
                    quiet.get("error")
                    or loaded.get("error")
                    or (quiet["fingerprint"][:16] if isinstance(quiet["fingerprint"], str) else "")
                )
            row = {
                "case": case,
                "data": args.data,
                "command": " ".join(["microagg", *words]),
                "compared": kind,
                "identical": bool(same),
                "wall_quiet": round(quiet["wall"], 2),
                "wall_busy": round(loaded["wall"], 2),
                "load_before": round(load_before, 2),
                "load_busy": round(load_busy, 2),
                "load_after": round(os.getloadavg()[0], 2),
                "detail": detail,
            }
            rows.append(row)
            print(row, flush=True)
    if wanted is not None:  # the other cases' rows stay as measured before
        import json

        from _common import RESULTS

        old = (
            json.loads((RESULTS / f"{NAME}.json").read_text())["rows"]
            if (RESULTS / f"{NAME}.json").exists()
            else []
        )
        order = [c for c, _, _ in CASES]
        rows = sorted(
            [r for r in old if r["case"] not in wanted] + rows, key=lambda r: order.index(r["case"])
        )
    md = md_table(
        [
            "case",
            "compared",
            "identical",
            "wall quiet (s)",
            "wall with 2 busy (s)",
            "load before / busy / after",
            "detail",
        ],
        [
            [
                r["case"],
                r["compared"],
                "yes" if r["identical"] else "**no**",
                r["wall_quiet"],
                r["wall_busy"],
                f"{r['load_before']} / {r['load_busy']} / {r['load_after']}",
                r["detail"],
            ]
            for r in rows
        ],
    )
    md += (
        "\n\nEach case runs twice in fresh processes: as the machine is, then with two busy-loop"
        " processes on the cores. `sha256`: the output file's bytes; `labels`: explore's kept"
        " partitions of the runs done in both; `table`: the demo's table without its seconds"
        " column. The commands are in the JSON.\n"
    )
    load_end, ended = os.getloadavg()[0], time.strftime("%H:%M", time.gmtime())
    md += (
        f"\n1-minute load average at the start ({started} UTC): {load_start:.2f}; at the end"
        f" ({ended} UTC): {load_end:.2f}."
        + (" Run with --no-warm: no untimed first run.\n" if args.no_warm else "\n")
    )
    write_results(NAME, rows, md)
    import json

    from _common import RESULTS

    saved = json.loads((RESULTS / f"{NAME}.json").read_text())
    saved["load_1min"] = {"start": round(load_start, 2), "end": round(load_end, 2)}
    saved["utc"] = {"start": started, "end": ended}
    (RESULTS / f"{NAME}.json").write_text(json.dumps(saved, indent=2) + "\n")


if __name__ == "__main__":
    main()
