"""Is ``auto`` at least as good as the best of its members run alone with the same time limit?

For each cell (data set, k) and time limit T, runs ``auto`` and every member of its default
portfolio alone, each with ``time_limit=T`` and seed 0, and records the information loss.
Results: benchmarks/results/auto_vs_members.json (+ .md), with the machine's load per row.

    python benchmarks/auto_vs_members.py --data tarragona eia --ks 3 4 --limits 10
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import microagg
from microagg.methods.auto import _default_portfolio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, update_readme  # noqa: E402


def run_cell(name: str, k: int, limit: float) -> dict:
    df = microagg.datasets.load(name)
    members = _default_portfolio(len(df), df.shape[1])
    row = {"data": name, "k": k, "time_limit": limit, "load": os.getloadavg()[0]}
    t = time.perf_counter()
    res = microagg.microaggregate(df, k=k, method="auto", time_limit=limit, seed=0)
    row["auto"] = {"il": res.information_loss, "seconds": time.perf_counter() - t, "winner": res.extras["winner"]}
    row["members"] = {}
    for m in members:
        t = time.perf_counter()
        alone = microagg.microaggregate(df, k=k, method=m, time_limit=limit, seed=0)
        row["members"][m] = {"il": alone.information_loss, "seconds": time.perf_counter() - t}
    best = min(row["members"], key=lambda m: row["members"][m]["il"])
    row["best_member"] = best
    row["auto_not_worse"] = row["auto"]["il"] <= row["members"][best]["il"] * (1 + 1e-9)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["census", "tarragona", "eia"])
    ap.add_argument("--ks", nargs="+", type=int, default=[3, 4, 5, 10])
    ap.add_argument("--limits", nargs="+", type=float, default=[1, 10, 60])
    ap.add_argument("--out", default=str(RESULTS / "auto_vs_members.json"))
    ap.add_argument("--render", action="store_true", help="rewrite the table and the README block from --out")
    args = ap.parse_args()
    if args.render:
        render(json.loads(Path(args.out).read_text()), Path(args.out))
        return
    rows = []
    for limit in args.limits:
        for name in args.data:
            for k in args.ks:
                row = run_cell(name, k, limit)
                rows.append(row)
                print(f"{name} k={k} T={limit:g}: auto {row['auto']['il']:.4f} ({row['auto']['winner']}), best alone "
                      f"{row['best_member']} {row['members'][row['best_member']]['il']:.4f} -> "
                      f"{'ok' if row['auto_not_worse'] else 'WORSE'} (load {row['load']:.1f})", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    render(rows, out)


def render(rows: list, out: Path) -> None:
    """The full table beside the JSON; a summary per time limit in the README."""
    lines = ["| data | k | T (s) | auto IL | winner | best member alone | its IL | auto not worse | load |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b = r["best_member"]
        lines.append(f"| {r['data']} | {r['k']} | {r['time_limit']:g} | {r['auto']['il']:.4f} | {r['auto']['winner']} "
                     f"| {b} | {r['members'][b]['il']:.4f} | {'yes' if r['auto_not_worse'] else 'NO'} "
                     f"| {r['load']:.1f} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    if out.resolve().parent != RESULTS.resolve():
        return
    summary = ["| T (s) | cells where auto ≤ every member alone | worst excess over the best member |",
               "|---|---|---|"]
    for limit in sorted({r["time_limit"] for r in rows}):
        cells = [r for r in rows if r["time_limit"] == limit]
        ok = sum(r["auto_not_worse"] for r in cells)
        excess = max(100 * (r["auto"]["il"] / r["members"][r["best_member"]]["il"] - 1) for r in cells)
        summary.append(f"| {limit:g} | {ok} / {len(cells)} | {max(excess, 0):.3f} % |")
    update_readme("auto-vs-members", "\n".join(summary) + "\n\nProduced by `python benchmarks/auto_vs_members.py` "
                  "(census, tarragona, eia × k = 3, 4, 5, 10, seed 0; every cell, the winners and the machine's load "
                  "in `benchmarks/results/auto_vs_members.md`).")


if __name__ == "__main__":
    main()
