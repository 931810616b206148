"""Wentges dual smoothing in colgen: does pricing at π_s = α·π_centre + (1−α)·π_LP speed up
column generation? Runs colgen (init = mdav + vmdav only, so every run starts from the same
master) with smoothing α in --alphas on the full census at k = 5 and on 200-record subsets at
k = 5 (the l2norm/random criteria of benchmarks/colgen_subsets.py), and reports per run the
rounds, mis-prices, the seconds to LP convergence, the LP value and the best Lagrangian bound
reached, and the seconds at which the bound first came within 1 % of the final LP value.

Usage: python benchmarks/colgen_smoothing.py [--alphas 0,0.5,0.8] [--time-limit-full 150]
       [--time-limit-subset 40]
"""

from __future__ import annotations

import argparse
import time

from _common import md_table, write_results
from colgen_subsets import subset_rows

import microagg

NAME = "colgen_smoothing"


def instances(args):
    census = microagg.datasets.load("census")
    tarragona = microagg.datasets.load("tarragona")
    out = [("census full", census, args.time_limit_full)]
    for name, df, crit, rep in (
        ("census", census, "random", 0),
        ("tarragona", tarragona, "l2norm", 2),
    ):
        raw = df.select_dtypes("number").to_numpy(float)
        sub = df.iloc[subset_rows(raw, 200, crit, rep, 5)].reset_index(drop=True)
        out.append((f"{name} n=200 {crit}#{rep}", sub, args.time_limit_subset))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--alphas", default="0,0.5,0.8")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--time-limit-full", type=float, default=150.0)
    ap.add_argument("--time-limit-subset", type=float, default=40.0)
    args = ap.parse_args()
    rows = []
    for label, df, tl in instances(args):
        for alpha in [float(a) for a in args.alphas.split(",")]:
            t0 = time.perf_counter()
            res = microagg.microaggregate(
                df,
                k=args.k,
                method="colgen",
                time_limit=tl,
                smoothing=alpha,
                columns=list(df.columns),
            )
            seconds = time.perf_counter() - t0
            ex = res.extras
            hist = ex["colgen_history"]
            bounds = [h[4] for h in hist if h[4] is not None]
            lp_final = ex["colgen_lp_value"]
            within = [
                h[1] for h in hist if h[4] is not None and lp_final and h[4] >= lp_final * 0.99
            ]
            conv_s = hist[-1][1] if ex["colgen_converged"] and hist else None
            row = {
                "instance": label,
                "k": args.k,
                "alpha": alpha,
                "time_limit": tl,
                "rounds": ex["colgen_rounds"],
                "mispriced": ex["colgen_mispriced"],
                "converged": ex["colgen_converged"],
                "seconds_to_convergence": conv_s,
                "lp_value": lp_final,
                "best_lagrangian_bound": max(bounds) if bounds else None,
                "seconds_bound_within_1pct_of_lp": within[0] if within else None,
                "final_bound": res.lower_bound,
                "sse": res.sse,
                "gap": res.gap,
                "seconds": seconds,
                "history": hist,
            }
            rows.append(row)
            print(
                f"{label} alpha={alpha}: rounds {row['rounds']} mis {row['mispriced']} conv"
                f" {conv_s} LP {lp_final} bound {row['best_lagrangian_bound']} gap {res.gap}"
                f" {seconds:.1f} s",
                flush=True,
            )

    def f(v, nd=2):
        return "–" if v is None else f"{v:.{nd}f}"

    body = [
        [
            r["instance"],
            r["k"],
            f"{r['alpha']:g}",
            f"{r['time_limit']:g}",
            r["rounds"],
            r["mispriced"],
            f(r["seconds_to_convergence"], 1),
            f(r["lp_value"], 3),
            f(r["best_lagrangian_bound"], 3),
            f(r["seconds_bound_within_1pct_of_lp"], 1),
            f(r["gap"], 3),
            f(r["seconds"], 1),
        ]
        for r in rows
    ]
    text = "\n".join(
        [
            "# Wentges dual smoothing in colgen",
            "",
            (
                "colgen with init = mdav + vmdav, smoothing α (0 = off). 'conv s' = seconds until"
                " the master LP converged (no column prices out), '–' = not within the time limit;"
                " 'LP' = last master LP value; 'best bound' = best proven bound during column"
                " generation (Lagrangian bounds of the exact pricing passes, at least the"
                " k-nearest-neighbour bound; before the closing step); 'bound ≤1% s' = seconds"
                " until that bound first came within 1 % of the final LP value; 'gap' = final"
                " proven gap in % of the SSE. Timings on a shared, loaded 2-core machine."
            ),
            "",
            md_table(
                [
                    "instance",
                    "k",
                    "α",
                    "time limit s",
                    "rounds",
                    "mis-prices",
                    "conv s",
                    "LP",
                    "best bound",
                    "bound ≤1% s",
                    "gap %",
                    "seconds",
                ],
                body,
            ),
        ]
    )
    write_results(NAME, rows, text)


if __name__ == "__main__":
    main()
