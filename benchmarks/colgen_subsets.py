"""Column generation on subsets of census and tarragona: the design of Tables 3–4 of the
column-generation paper.

Subsets of 30, 40, 50, 100 and 200 records, extracted by four criteria, 5 subsets each:
  consecutive  records s..s+n−1 of the file, for 5 evenly spaced starts s = j·(N−n)/4;
  random       n records drawn without replacement (numpy default_rng(seed = 1000·j + n));
  l2norm       records sorted by the L2 norm of their raw values, the same 5 windows;
  centroid     records sorted by the L2 distance of their raw values to the overall centroid,
               the same 5 windows.
The paper does not say how the orders are computed nor whether data are standardised; we
order on raw values (on z-scores the two last criteria would coincide: the centroid is 0) and
standardise each subset on its own (z-scores of the subset), exactly as microaggregate() does
with the subset as input. Gaps as in the paper (15): GAP_H = 100·(SSE_H − SSE_CG)/SSE_H for
H = MDAV, V-MDAV, MSTH (best RoundingMSTHeuristic), SRH (best SimpleRoundingHeuristic); and
the gap to our lower bound, 100·(SSE_CG − LB)/SSE_CG. "Ex" counts the paper's exact solutions
(the master LP is integral at convergence), "Opt" those proven optimal (gap ≤ 1e-6 %).

Usage: python benchmarks/colgen_subsets.py [--ks 3,4,5] [--reps 5] [--sizes 30,40,50,100,200]
       [--time-limit 20] [--time-limit-200 45] [--resume] [--render]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _common import RESULTS, md_table, update_readme, write_results

import microagg

NAME = "colgen_subsets"
CRITERIA = ("consecutive", "random", "l2norm", "centroid")


def subset_rows(raw: np.ndarray, n: int, criterion: str, rep: int, reps: int) -> np.ndarray:
    N = len(raw)
    start = int(round(rep * (N - n) / max(reps - 1, 1)))
    if criterion == "consecutive":
        return np.arange(start, start + n)
    if criterion == "random":
        return np.sort(np.random.default_rng(1000 * rep + n).choice(N, n, replace=False))
    if criterion == "l2norm":
        key = np.linalg.norm(raw, axis=1)
    else:
        key = np.linalg.norm(raw - raw.mean(axis=0), axis=1)
    order = np.argsort(key, kind="stable")
    return np.sort(order[start : start + n])


def gap(h, v):
    return 100.0 * (h - v) / h if h > 0 else 0.0


def run_instance(df, rows, k, time_limit):
    sub = df.iloc[rows].reset_index(drop=True)
    t0 = time.perf_counter()
    res = microagg.microaggregate(
        sub, k=k, method="colgen", time_limit=time_limit, columns=list(sub.columns)
    )
    seconds = time.perf_counter() - t0
    ex = res.extras
    out = {
        "sse": res.sse,
        "lower_bound": res.lower_bound,
        "gap_lb": res.gap,
        "il": res.information_loss,
        "sse_mdav": ex["colgen_init_sse"]["mdav"],
        "sse_vmdav": ex["colgen_init_sse"]["vmdav"],
        "sse_msth": ex["colgen_msth_sse"],
        "sse_srh": ex["colgen_srh_sse"],
        "lp_value": ex["colgen_lp_value"],
        "converged": ex["colgen_converged"],
        "lp_integral": ex["colgen_lp_integral"],
        "proven_optimal": bool(res.gap is not None and res.gap <= 1e-6),
        "rounds": ex["colgen_rounds"],
        "columns": ex["colgen_columns"],
        "seconds": seconds,
    }
    for h in ("mdav", "vmdav", "msth", "srh"):
        v = out[f"sse_{h}"]
        out[f"gap_{h}"] = gap(v, res.sse) if np.isfinite(v) else None
    return out


def mean(vals):
    vals = [v for v in vals if v is not None]
    return float(np.mean(vals)) if vals else None


def fmt(v, nd=2):
    return "–" if v is None else f"{v:.{nd}f}"


def tables(rows, args):
    groups = {}
    for r in rows:
        groups.setdefault((r["data"], r["n"], r["k"], r["criterion"]), []).append(r)
    body = []
    for (data, n, k, crit), rs in sorted(
        groups.items(), key=lambda t: (t[0][0], t[0][2], t[0][1], CRITERIA.index(t[0][3]))
    ):
        body.append(
            [
                data,
                n,
                k,
                crit,
                len(rs),
                fmt(mean([r["gap_mdav"] for r in rs])),
                fmt(mean([r["gap_vmdav"] for r in rs])),
                fmt(mean([r["gap_msth"] for r in rs])),
                fmt(mean([r["gap_srh"] for r in rs])),
                fmt(mean([r["gap_lb"] for r in rs]), 3),
                fmt(mean([r["seconds"] for r in rs]), 1),
                sum(r["lp_integral"] for r in rs),
                sum(r["proven_optimal"] for r in rs),
            ]
        )
    per = {}
    for r in rows:
        per.setdefault((r["n"], r["k"]), []).append(r)
    summary = []
    for (n, k), rs in sorted(per.items(), key=lambda t: (t[0][1], t[0][0])):
        summary.append(
            [
                n,
                k,
                len(rs),
                fmt(mean([r["gap_mdav"] for r in rs])),
                fmt(mean([r["gap_vmdav"] for r in rs])),
                fmt(mean([r["gap_lb"] for r in rs]), 3),
                (
                    fmt(max(r["gap_lb"] for r in rs if r["gap_lb"] is not None), 3)
                    if any(r["gap_lb"] is not None for r in rs)
                    else "–"
                ),
                sum(r["gap_lb"] is None for r in rs),
                fmt(mean([r["seconds"] for r in rs]), 1),
                sum(r["lp_integral"] for r in rs),
                sum(r["proven_optimal"] for r in rs),
            ]
        )
    summary_table = md_table(
        [
            "n",
            "k",
            "instances",
            "MDAV gap",
            "V-MDAV gap",
            "avg LB gap",
            "max LB gap",
            "no bound",
            "seconds",
            "Ex",
            "Opt",
        ],
        summary,
    )
    reps_per_k = {}
    for r in rows:
        reps_per_k.setdefault(r["k"], set()).add(r["rep"])
    reps_text = "; ".join(f"{len(v)} for k = {k}" for k, v in sorted(reps_per_k.items()))
    text = [
        "# Column generation on census / tarragona subsets (design of Tables 3–4)",
        "",
        (
            f"Time limit per instance: {args.time_limit:g} s ({args.time_limit_200:g} s for 200"
            f" records); subsets per (data, size, criterion): {reps_text}. Timings on a shared,"
            " loaded 2-core machine (several engineers' jobs running). Gaps in percent: GAP_H ="
            " 100·(SSE_H − SSE_CG)/SSE_H (paper eq. 15), 'LB gap' = 100·(SSE_CG − lower"
            " bound)/SSE_CG, our proven gap. Ex = master LP integral at convergence (the paper's"
            " 'Ex'); Opt = proven optimal (LB gap ≤ 1e-6 %). Each subset is standardised on its"
            " own."
        ),
        "",
        "## Summary per size and k (both data sets, all criteria)",
        "",
        summary_table,
        "",
        "## Per data set, size, k and criterion (averages over the subsets)",
        "",
        md_table(
            [
                "data",
                "n",
                "k",
                "criterion",
                "inst.",
                "MDAV",
                "V-MDAV",
                "MSTH",
                "SRH",
                "LB gap",
                "s",
                "Ex",
                "Opt",
            ],
            body,
        ),
    ]
    return "\n".join(text), summary_table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ks", default="3,4,5")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", default="30,40,50,100,200")
    ap.add_argument("--data", default="census,tarragona")
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--time-limit-200", type=float, default=45.0)
    ap.add_argument(
        "--resume", action="store_true", help="keep the rows of an earlier run and skip them"
    )
    ap.add_argument(
        "--render",
        action="store_true",
        help="rewrite the README block from results/colgen_subsets.json",
    )
    args = ap.parse_args()
    if args.render:
        rows = json.loads((RESULTS / f"{NAME}.json").read_text())["rows"]
        args.time_limit = max(
            r["time_limit"] for r in rows if r["n"] < 200
        )  # the limits of the run
        args.time_limit_200 = max(r["time_limit"] for r in rows if r["n"] >= 200)
        write(rows, args, results=False)
        return
    ks = [int(v) for v in args.ks.split(",")]
    sizes = [int(v) for v in args.sizes.split(",")]
    rows = []
    path = RESULTS / f"{NAME}.json"
    if args.resume and path.exists():
        rows = json.loads(path.read_text())["rows"]
    done = {(r["data"], r["n"], r["k"], r["criterion"], r["rep"]) for r in rows}
    frames = {d: microagg.datasets.load(d) for d in args.data.split(",")}
    for k in ks:
        for n in sizes:
            for data, df in frames.items():
                raw = df.select_dtypes("number").to_numpy(float)
                for crit in CRITERIA:
                    for rep in range(args.reps):
                        if (data, n, k, crit, rep) in done:
                            continue
                        idx = subset_rows(raw, n, crit, rep, 5)
                        tl = args.time_limit_200 if n >= 200 else args.time_limit
                        r = run_instance(df, idx, k, tl)
                        r.update(
                            {
                                "data": data,
                                "n": n,
                                "k": k,
                                "criterion": crit,
                                "rep": rep,
                                "time_limit": tl,
                            }
                        )
                        rows.append(r)
                        print(
                            f"{data} n={n} k={k} {crit} #{rep}: SSE {r['sse']:.5g} LB"
                            f" {r['lower_bound']} gap {fmt(r['gap_lb'], 3)}% MDAV"
                            f" {fmt(r['gap_mdav'])}% {r['seconds']:.1f} s",
                            flush=True,
                        )
                        _save(rows, args)
    write(rows, args)


def write(rows, args, results=True):
    """results/colgen_subsets.{json,md} (unless results=False: --render) and the README block."""
    text, summary = tables(rows, args)
    if results:
        write_results(NAME, rows, text)
    update_readme(
        "colgen-subsets",
        "On subsets of 30–200 records of census and tarragona (the paper's Tables 3–4 design: four"
        " extraction criteria, 5 subsets each), gaps in percent: MDAV and V-MDAV against colgen"
        " (paper eq. 15), and colgen against its proven lower bound; Ex = LP integral at"
        f" convergence, Opt = proven optimal. Time limit {args.time_limit:g} s"
        f" ({args.time_limit_200:g} s at 200 records).\n\n"
        + summary
        + "\n\nProduced by `python benchmarks/colgen_subsets.py` (per criterion and data set in "
        "`benchmarks/results/colgen_subsets.md`).",
    )


def _save(rows, args):
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{NAME}.json").write_text(
        json.dumps({"machine": None, "partial": True, "rows": rows}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
