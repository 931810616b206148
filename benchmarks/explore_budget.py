"""Is explore's one budget honoured, and what runs at 10^4 to 10^6 records? (issue 34)

For each (n, budget): census-like records (the z-scored census resampled with 1 % noise, 13
columns, as benchmarks/mdav_scaling.py makes them) explored with the default grid (k = 3, 4, 5,
10; mdav, vmdav, mdav-mhm, icsm, lsearch) in one call of ``microagg.explore(time_limit=budget)``.
Recorded: the wall seconds of the whole call against the budget (the overshoot), the runs done,
skipped (and why: predicted not to fit, not scalable with the measured exponent, budget spent),
the probe's predicted seconds against the measured ones of the non-interruptible runs, the
seconds spent in audits, and the machine's load.

    python benchmarks/explore_budget.py [--cases 10000:30 100000:120 1000000:300]

Results: benchmarks/results/explore_budget.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, md_table, update_readme, write_results  # noqa: E402
from mdav_scaling import make_data  # noqa: E402

NAME = "explore_budget"


def run_case(n: int, budget: float) -> dict:
    import pandas as pd

    import microagg

    X = make_data("census", n)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = microagg.explore(df, time_limit=budget)
    wall = time.perf_counter() - t0
    runs = result.runs
    mispredicted = [
        (r.method, r.k, r.predicted, r.seconds)
        for r in runs
        if r.done and r.time_limit is None and r.predicted is not None
    ]
    row = {
        "n": n,
        "budget": budget,
        "wall_seconds": round(wall, 2),
        "overshoot_seconds": round(max(wall - budget, 0), 2),
        "runs": len(runs),
        "done": sum(r.done for r in runs),
        "skipped": {
            r.note.split(":")[0].split(" s")[0] if r.note else "": 0
            for r in runs
            if r.status == "skipped"
        },
        "not_scalable": sorted({r.method for r in runs if r.note.startswith("not scalable")}),
        "done_runs": [f"{r.method} k={r.k}" for r in runs if r.done],
        "predicted_vs_measured": [
            {"method": m, "k": k, "predicted": round(p, 2), "seconds": round(s, 2)}
            for m, k, p, s in mispredicted
        ],
        "audit_seconds": round(sum(r.audit_seconds or 0.0 for r in runs), 2),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    for r in runs:
        if r.status == "skipped":
            key = (
                "not scalable"
                if r.note.startswith("not scalable")
                else ("predicted not to fit" if r.note.startswith("predicted") else "budget spent")
            )
            row["skipped"][key] = row["skipped"].get(key, 0) + 1
    row["skipped"] = {
        k: v
        for k, v in row["skipped"].items()
        if k in ("not scalable", "predicted not to fit", "budget spent")
    }
    print(row, flush=True)
    return row


def render() -> None:
    """The README block from the committed results."""
    import json

    doc = json.loads((RESULTS / f"{NAME}.json").read_text())
    body = (RESULTS / f"{NAME}.md").read_text().split("\n\n", 1)[1]
    update_readme(
        "explore-budget",
        f"The one budget, measured ({doc['machine']['date_utc']} UTC, 2 cores):\n\n"
        + body
        + f"\n\nProduced by `python benchmarks/{NAME}.py` (`--render` writes this block).",
    )


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cases", nargs="+", default=["10000:30", "100000:120", "1000000:300"])
    ap.add_argument(
        "--render", action="store_true", help="only write the README block from the results"
    )
    args = ap.parse_args()
    if args.render:
        render()
        return 0
    rows = [run_case(int(c.split(":")[0]), float(c.split(":")[1])) for c in args.cases]
    table = md_table(
        [
            "n",
            "budget s",
            "wall s",
            "overshoot s",
            "runs done / grid",
            "skipped",
            "not scalable",
            "audit s",
            "load before / after",
        ],
        [
            [
                f"{r['n']:,}",
                r["budget"],
                r["wall_seconds"],
                r["overshoot_seconds"],
                f"{r['done']} / {r['runs']}",
                ", ".join(f"{k}: {v}" for k, v in r["skipped"].items()) or "-",
                ", ".join(r["not_scalable"]) or "-",
                r["audit_seconds"],
                f"{r['load_before']} / {r['load_after']}",
            ]
            for r in rows
        ],
    )
    notes = [
        "",
        "",
        "Predicted (probe) against measured seconds of the runs that cannot stop at a deadline:",
        "",
    ]
    for r in rows:
        pairs = (
            "; ".join(
                f"{p['method']} k={p['k']}: {p['predicted']} s predicted, {p['seconds']} s"
                for p in r["predicted_vs_measured"]
            )
            or "(none: small data are not probed)"
        )
        notes.append(f"- n = {r['n']:,}: {pairs}")
    write_results(
        NAME,
        rows,
        "Default grid (k = 3, 4, 5, 10; mdav, vmdav, mdav-mhm, icsm, lsearch) on census-like "
        "records, one `microagg.explore(time_limit=budget)` call each.\n\n"
        + table
        + "\n".join(notes),
    )
    render()
    return 0


if __name__ == "__main__":
    sys.exit(main())
