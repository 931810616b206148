"""Reproduce Tables 2 and 4 of the ICSM paper (Mortazavi & Jalili 2015) on the bundled data.

Table 2: information loss of MDAV and of ICSM started from MDAV (k = 3, 5, 10), iterations and
seconds. Two ICSM configurations are run: the paper's settings (``complex_tries=1``: one G_s per
ComplexHeuristic call) and the package default. Table 4: the best IL with restarts (k = 3, 4, 5,
10), here an iterated local search (perturbation restarts from the best partition so far, §5.3)
under a per-cell time limit. The paper's published figures are typed in below as labelled
references; every other number is measured by this script.

    python benchmarks/icsm_tables.py [--tables 2,4] [--datasets tarragona,census,eia]
                                     [--time-limit SECONDS] [--eia-time-limit SECONDS] [--seed S]
                                     [--ks 3,4,5,10] [--suffix _extra]

Writes benchmarks/results/icsm_table2.{md,json} and icsm_table4.{md,json} (rewritten after
every cell, so a partial run still leaves its results).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

import microagg
from microagg.labels import check_partition
from microagg.measures import information_loss
from microagg.methods import run

RESULTS = Path(__file__).resolve().parent / "results"

# Published figures (Mortazavi & Jalili 2015), typed in as references.
PAPER_TABLE2 = {  # (data, k): (IL_MDAV, IL_ICSM, iterations, seconds ICSM)
    ("tarragona", 3): (16.93, 14.81, 174, 1),
    ("tarragona", 5): (22.46, 20.69, 238, 1),
    ("tarragona", 10): (33.19, 30.7, 127, 1),
    ("census", 3): (5.69, 4.85, 203, 2),
    ("census", 5): (9.09, 7.78, 205, 2),
    ("census", 10): (14.16, 11.93, 210, 3),
    ("eia", 3): (0.48, 0.36, 29, 6),
    ("eia", 5): (1.67, 0.78, 39, 8),
    ("eia", 10): (3.84, 2.24, 142, 26),
}
PAPER_TABLE4 = {  # (data, k): (best IL of ICSM with restarts, best IL of LS [Laszlo & Mukherjee 2015])
    ("tarragona", 3): (14.54, 14.68),
    ("tarragona", 4): (17.18, 17.23),
    ("tarragona", 5): (20.25, 20.3),
    ("tarragona", 10): (30.34, 30.23),
    ("census", 3): (4.75, 4.85),
    ("census", 4): (6.21, 6.66),
    ("census", 5): (7.5, 7.86),
    ("census", 10): (11.74, 11.94),
    ("eia", 3): (0.35, 0.45),
    ("eia", 4): (0.49, 0.58),
    ("eia", 5): (0.74, 1.2),
    ("eia", 10): (1.95, 2.45),
}

MACHINE_NOTE = (
    "Timings were taken on a shared, heavily loaded 2-core machine (several other engineers' jobs "
    "running at the same time); the paper used a Core i7 2.5 GHz and reports the best of 10 runs. "
    "Seconds include everything after loading the data (numba kernels were already compiled)."
)


def standardised(name: str) -> np.ndarray:
    X = microagg.datasets.load(name).to_numpy(dtype=float)
    std = X.std(axis=0)
    return np.ascontiguousarray((X - X.mean(axis=0)) / np.where(std > 0, std, 1.0))


def timed(name, X, k, **params):
    t = time.perf_counter()
    out = run(name, X, k, **params)
    seconds = time.perf_counter() - t
    labels = check_partition(out.labels, len(X), k, name)
    return information_loss(X, labels, standardize=False), seconds, out.extras


def write(stem: str, rows: list[dict], markdown: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS / f".{stem}.json.tmp"
    tmp.write_text(
        json.dumps({"machine": platform.platform(), "note": MACHINE_NOTE, "rows": rows}, indent=1)
    )
    os.replace(tmp, RESULTS / f"{stem}.json")
    tmp = RESULTS / f".{stem}.md.tmp"
    tmp.write_text(markdown)
    os.replace(tmp, RESULTS / f"{stem}.md")


def mark(ours: float, paper: float) -> str:
    """✓ when our figure, rounded like the paper's (2 decimals), is at or below it."""
    return "✓" if round(ours, 2) <= paper + 1e-9 else "✗"


def table2(datasets, time_limit):
    rows = []
    configs = [("paper", {"complex_tries": 1}), ("default", {})]
    for data in datasets:
        X = standardised(data)
        for k in (3, 5, 10):
            il_mdav, t_mdav, _ = timed("mdav", X, k)
            row = {"data": data, "k": k, "il_mdav": il_mdav, "seconds_mdav": t_mdav}
            for tag, params in configs:
                il, sec, extras = timed("icsm", X, k, time_limit=time_limit, **params)
                row.update(
                    {
                        f"il_icsm_{tag}": il,
                        f"iterations_{tag}": extras["iterations"],
                        f"seconds_{tag}": sec,
                    }
                )
            p = PAPER_TABLE2[(data, k)]
            row.update(
                {
                    "paper_il_mdav": p[0],
                    "paper_il_icsm": p[1],
                    "paper_iterations": p[2],
                    "paper_seconds": p[3],
                }
            )
            rows.append(row)
            print(
                f"table 2 {data} k={k}: MDAV {il_mdav:.3f}, ICSM paper-settings"
                f" {row['il_icsm_paper']:.3f} ({row['seconds_paper']:.1f} s), default"
                f" {row['il_icsm_default']:.3f} ({row['seconds_default']:.1f} s)",
                flush=True,
            )
            lines = [
                "# ICSM paper, Table 2: ICSM started from MDAV",
                "",
                (
                    "IL = 100·SSE/SST on z-scores. `paper settings`: complex_tries=1 (one G_s per"
                    " ComplexHeuristic call, as in Algorithm 4); `default`: the package default of"
                    " `icsm` (complex_tries=5: when G_s gives no negative cycle, the groups of"
                    " next-lowest Score are tried). ✓ = at or below the paper's IL_ICSM (rounded"
                    f" to 2 decimals like the paper). Per-run time limit: {time_limit} s."
                ),
                "",
                (
                    "| data | k | IL MDAV (ours / paper) | IL ICSM paper settings | iter. | s | IL"
                    " ICSM default | iter. | s | paper IL ICSM | paper iter. | paper s |"
                ),
                "|---|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for r in rows:
                lines.append(
                    f"| {r['data']} | {r['k']} | {r['il_mdav']:.2f} / {r['paper_il_mdav']} |"
                    f" {r['il_icsm_paper']:.3f} {mark(r['il_icsm_paper'], r['paper_il_icsm'])} |"
                    f" {r['iterations_paper']} | {r['seconds_paper']:.1f} |"
                    f" {r['il_icsm_default']:.3f} {mark(r['il_icsm_default'], r['paper_il_icsm'])}"
                    f" | {r['iterations_default']} | {r['seconds_default']:.1f} |"
                    f" {r['paper_il_icsm']} | {r['paper_iterations']} | {r['paper_seconds']} |"
                )
            lines += [
                "",
                (
                    "Iterations count the rounds that changed the assignment (SimpleHeuristic"
                    " passes with at least one move, and negative cycles applied)."
                ),
                "",
                MACHINE_NOTE,
                "",
            ]
            write("icsm_table2", rows, "\n".join(lines))
    return rows


def table4(datasets, time_limit, eia_time_limit, seed, ks=(3, 4, 5, 10), stem="icsm_table4"):
    rows = []
    for data in datasets:
        X = standardised(data)
        limit = eia_time_limit if data == "eia" else time_limit
        for k in ks:
            il, sec, extras = timed("icsm", X, k, seed=seed, restarts=10**9, time_limit=limit)
            p_icsm, p_ls = PAPER_TABLE4[(data, k)]
            row = {
                "data": data,
                "k": k,
                "il_icsm_restarts": il,
                "seconds": sec,
                "time_limit": limit,
                "restarts_done": extras["restarts_done"],
                "il_first_run": (
                    100.0 * extras["sse_first_run"] / float(np.sum((X - X.mean(axis=0)) ** 2))
                ),
                "paper_il_icsm": p_icsm,
                "paper_il_ls": p_ls,
                "seed": seed,
            }
            rows.append(row)
            print(
                f"table 4 {data} k={k}: {il:.3f} after {extras['restarts_done']} restarts,"
                f" {sec:.0f} s",
                flush=True,
            )
            lines = [
                "# ICSM paper, Table 4: best IL with restarts",
                "",
                (
                    "Ours: `icsm` from MDAV (default parameters) with perturbation restarts (§5.3;"
                    " 20 random records moved to random groups, restarting from the best partition"
                    " so far: an iterated local search; restarts regroup only at convergence and"
                    f" use complex_tries=1), seed {seed}, stopped by the per-cell time limit"
                    f" ({time_limit} s; eia {eia_time_limit} s). The paper ran 1600 restarts from"
                    " perturbed MDAV starts. ✓ = at or below the best published figure (min of"
                    " ICSM and LS), rounded to 2 decimals like the paper."
                ),
                "",
                "| data | k | IL ours | restarts | s | paper ICSM | paper LS | best published |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for r in rows:
                best = min(r["paper_il_icsm"], r["paper_il_ls"])
                lines.append(
                    f"| {r['data']} | {r['k']} | {r['il_icsm_restarts']:.3f}"
                    f" {mark(r['il_icsm_restarts'], best)} | {r['restarts_done']} |"
                    f" {r['seconds']:.0f} | {r['paper_il_icsm']} | {r['paper_il_ls']} | {best} |"
                )
            lines += ["", MACHINE_NOTE, ""]
            write(stem, rows, "\n".join(lines))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", default="2,4")
    ap.add_argument("--datasets", default="tarragona,census,eia")
    ap.add_argument(
        "--time-limit", type=float, default=180.0, help="seconds per cell (tarragona, census)"
    )
    ap.add_argument(
        "--eia-time-limit", type=float, default=360.0, help="seconds per Table 4 cell on eia"
    )
    ap.add_argument(
        "--table2-time-limit", type=float, default=600.0, help="seconds per Table 2 ICSM run"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ks", default="3,4,5,10", help="Table 4 values of k")
    ap.add_argument(
        "--suffix", default="", help="Table 4 results go to icsm_table4<suffix>.{md,json}"
    )
    args = ap.parse_args()
    datasets = args.datasets.split(",")
    tables = args.tables.split(",")
    # compile the kernels once so that the timings do not include numba compilation
    warm = standardised("tarragona")[:60]
    run("icsm", warm, 3, restarts=1, seed=0)
    if "2" in tables:
        table2(datasets, args.table2_time_limit)
    if "4" in tables:
        ks = tuple(int(k) for k in args.ks.split(","))
        table4(
            datasets,
            args.time_limit,
            args.eia_time_limit,
            args.seed,
            ks,
            "icsm_table4" + args.suffix,
        )


if __name__ == "__main__":
    main()
