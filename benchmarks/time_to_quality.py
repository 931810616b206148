"""Time to quality: the IL each method reaches within a time limit, and is ``auto`` at least as good
as every member run alone with the same limit? (issue 16, item 3)

Runs mdav, icsm, colgen, auto and the other members of auto's default portfolio on each data set
and k at time limits 1, 3, 10, 30, 60 s (seed 0), one after the other for each (data, k, T) so
that auto and the members alone see the same machine state, recording IL, wall seconds,
colgen's lower bound and the machine's load per run in ``benchmarks/results/time_to_quality.json``
(resumable: runs already in the file are kept; ``--fresh`` drops the stored rows first, ``--redo``
those of the selected data, k and limits). Every
method is run once on a small input before timing, so no run pays numba's cache loading. Draws
one PNG per (data, k) under ``docs/figures/`` (IL against the time limit, log scale; colgen's
proven bound dashed), and the README block ``auto-vs-members``. ``--check`` lists the cells
where auto is worse than a member alone.

    nohup python benchmarks/time_to_quality.py --fresh > /tmp/ttq.log 2>&1 &
    python benchmarks/time_to_quality.py --plot-only --check
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
from _common import update_readme  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "time_to_quality.json"
FIGURES = HERE.parent / "docs" / "figures"
PLOTTED = ("mdav", "icsm", "colgen", "auto")
STYLE = {
    "mdav": ("tab:gray", "s"),
    "icsm": ("tab:blue", "o"),
    "colgen": ("tab:green", "^"),
    "auto": ("tab:red", "D"),
}


def load_rows() -> list[dict]:
    return json.loads(OUT.read_text())["rows"] if OUT.exists() else []


def save_rows(rows: list[dict]) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"rows": rows}, indent=1) + "\n")


def run_one(df, data: str, k: int, method: str, limit: float) -> dict:
    t = time.perf_counter()
    res = microagg.microaggregate(
        df, k=k, method=method, time_limit=limit, seed=0, columns=list(df.columns)
    )
    row = {
        "data": data,
        "k": k,
        "method": method,
        "time_limit": limit,
        "il": res.information_loss,
        "seconds": round(time.perf_counter() - t, 3),
        "load_1min": round(os.getloadavg()[0], 2),
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }
    if res.lower_bound is not None:
        row["bound_il"] = res.lower_bound_il
    if method == "auto":
        row["winner"] = res.extras.get("winner")
    return row


def members(df) -> list[str]:
    return list(dict.fromkeys([*PLOTTED, *_default_portfolio(len(df), df.shape[1])]))


def warm_up() -> None:
    """Load (or compile) every method's numba kernels once, outside the timed runs."""
    df = microagg.datasets.load("census").head(60)
    for method in members(df):
        microagg.microaggregate(df, k=3, method=method, time_limit=0.5, seed=0)


def measure(datas, ks, limits, fresh: bool, redo: bool = False) -> None:
    rows = [] if fresh else load_rows()
    if redo:  # measure the selected cells again (after a change to a method), keep the others
        rows = [
            r
            for r in rows
            if not (r["data"] in datas and r["k"] in ks and r["time_limit"] in limits)
        ]
    warm_up()
    done = {(r["data"], r["k"], r["method"], r["time_limit"]) for r in rows}
    for data in datas:
        df = microagg.datasets.load(data)
        for k in ks:
            for limit in limits:
                for method in members(df):
                    if (data, k, method, limit) in done:
                        continue
                    row = run_one(df, data, k, method, limit)
                    rows.append(row)
                    save_rows(rows)
                    print(
                        f"{data} k={k} T={limit:g} {method}: IL {row['il']:.4f} in"
                        f" {row['seconds']:.1f} s (load {row['load_1min']})",
                        flush=True,
                    )


def check(rows) -> list[str]:
    """Cells (data, k, T) where auto's IL is above a member's alone."""
    out = []
    cells = sorted({(r["data"], r["k"], r["time_limit"]) for r in rows})
    for data, k, limit in cells:
        here = {
            r["method"]: r for r in rows if (r["data"], r["k"], r["time_limit"]) == (data, k, limit)
        }
        if "auto" not in here:
            continue
        auto = here["auto"]["il"]
        worse = [
            f"{m} {r['il']:.4f}"
            for m, r in here.items()
            if m != "auto" and r["il"] < auto * (1 - 1e-9)
        ]
        status = "ok" if not worse else "WORSE than " + ", ".join(worse)
        out.append(
            f"{data} k={k} T={limit:g}: auto {auto:.4f} ({here['auto'].get('winner')}) {status}"
        )
    return out


def render(rows) -> None:
    """The README block: per time limit, the cells where auto is at least as good as every member
    alone, the worst excess, and the runs where it is not."""
    cells = {}
    for r in rows:
        cells.setdefault((r["data"], r["k"], r["time_limit"]), {})[r["method"]] = r
    lines = [
        (
            "| T (s) | cells where auto ≤ every member alone | auto ≤ icsm alone | auto ≤ colgen"
            " alone | worst excess over the best member | load (1 min) |"
        ),
        "|---|---|---|---|---|---|",
    ]
    worse = []
    for limit in sorted({c[2] for c in cells}):
        here = [(key, c) for key, c in cells.items() if key[2] == limit and "auto" in c]
        if not here:
            continue
        ok = icsm_ok = colgen_ok = 0
        excess, loads = 0.0, []
        for (data, k, _), c in here:
            auto = c["auto"]["il"]
            best = min((m for m in c if m != "auto"), key=lambda m: c[m]["il"])
            ok += auto <= c[best]["il"] * (1 + 1e-9)
            icsm_ok += auto <= c.get("icsm", c["auto"])["il"] * (1 + 1e-9)
            colgen_ok += auto <= c.get("colgen", c["auto"])["il"] * (1 + 1e-9)
            excess = max(excess, 100 * (auto - c[best]["il"]) / c[best]["il"])
            loads += [c[m]["load_1min"] for m in c]
            if auto > c[best]["il"] * (1 + 1e-9):
                worse.append(
                    f"{data} k = {k} at {limit:g} s ({best} {c[best]['il']:.5f}, auto {auto:.5f}: "
                    f"+{100 * (auto - c[best]['il']) / c[best]['il']:.4f} %)"
                )
        lines.append(
            f"| {limit:g} | {ok} / {len(here)} | {icsm_ok} / {len(here)} | {colgen_ok} /"
            f" {len(here)} | {excess:.3f} % | {min(loads):.1f}–{max(loads):.1f} |"
        )
    text = "\n".join(lines)
    text += (
        "\n\nauto worse than a member alone: " + "; ".join(worse) + "."
        if worse
        else "\n\nauto is at least as good as every member alone in every run."
    )
    text += (
        "\n\nProduced by `python benchmarks/time_to_quality.py` (census, tarragona, eia × k = 3, 4,"
        " 5, 10, seed 0; auto and each member alone run one after the other per cell and time limit"
        " on the 2-core machine; every run with its load in"
        " `benchmarks/results/time_to_quality.json`)."
    )
    dates = []
    for data in sorted({r["data"] for r in rows}):
        stamps = sorted(r["date_utc"] for r in rows if r["data"] == data)
        dates.append(f"{data} {stamps[0]} to {stamps[-1][-5:]}")
    text += " Measured (UTC): " + "; ".join(dates) + "."
    update_readme("auto-vs-members", text)


def plot(rows) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    FIGURES.mkdir(parents=True, exist_ok=True)
    for data in sorted({r["data"] for r in rows}):
        for k in sorted({r["k"] for r in rows if r["data"] == data}):
            fig, ax = plt.subplots(figsize=(8, 4))
            for method in PLOTTED:
                pts = sorted(
                    (r["time_limit"], r["il"])
                    for r in rows
                    if (r["data"], r["k"], r["method"]) == (data, k, method)
                )
                if pts:
                    color, marker = STYLE[method]
                    ax.plot(*zip(*pts), marker=marker, color=color, label=method)
            bounds = sorted(
                (r["time_limit"], r["bound_il"])
                for r in rows
                if (r["data"], r["k"], r["method"]) == (data, k, "colgen") and "bound_il" in r
            )
            if bounds:
                ax.plot(
                    *zip(*bounds), linestyle="--", color="tab:green", label="colgen lower bound"
                )
            cert = HERE / "best_known" / f"{data}_k{k}.json"
            if (
                cert.exists()
            ):  # the best-known partition and proven bound (benchmarks/best_known.py)
                c = json.loads(cert.read_text())
                ax.axhline(c["il"], color="black", linestyle=":", label=f"best known {c['il']:.3f}")
                if c.get("lower_bound_il") is not None:
                    ax.axhline(
                        c["lower_bound_il"],
                        color="black",
                        linestyle="-.",
                        linewidth=0.8,
                        label=f"best proven bound {c['lower_bound_il']:.3f}",
                    )
            ax.set_xscale("log")
            ax.set_xlabel("time limit (s)")
            ax.set_ylabel("information loss (%)")
            ax.set_title(f"{data}, k = {k}: IL within the time limit (2 shared cores)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
            fig.tight_layout()
            fig.savefig(FIGURES / f"time_to_quality_{data}{'' if k == 3 else f'_k{k}'}.png", dpi=90)
            plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["census", "tarragona", "eia"])
    ap.add_argument("--ks", nargs="+", type=int, default=[3, 4, 5, 10])
    ap.add_argument("--limits", nargs="+", type=float, default=[1, 3, 10, 30, 60])
    ap.add_argument("--fresh", action="store_true", help="drop the stored rows before measuring")
    ap.add_argument(
        "--redo",
        action="store_true",
        help="drop the stored rows of the selected cells before measuring",
    )
    ap.add_argument("--plot-only", action="store_true")
    ap.add_argument(
        "--check", action="store_true", help="print the cells where auto is worse than a member"
    )
    args = ap.parse_args()
    if not args.plot_only:
        measure(args.data, args.ks, args.limits, args.fresh, args.redo)
    rows = load_rows()
    plot(rows)
    render(rows)
    if args.check:
        print("\n".join(check(rows)))


if __name__ == "__main__":
    main()
