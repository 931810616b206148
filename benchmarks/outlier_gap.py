"""Where does a cell's gap come from? Column generation on the records of its outlying groups.

Takes the committed best-known partition of a cell (``benchmarks/best_known/``), keeps its groups
that hold a record farther than ``--norm`` from the centre of the z-scored data, and runs colgen on
those records alone (their own k, the kept groups as warm start and first incumbent). The kept
records are whole groups of the partition, so:

- a better partition of them is a better partition of the cell (the other groups unchanged);
- the subset's gap between that partition and colgen's proven bound shows how much of the cell's
  gap lies in the outliers, on a problem small enough to run colgen to the end on.

Written for eia k = 10 (issue 16), whose gap stays at 3.6 %, above the 2 % target.

    python benchmarks/outlier_gap.py --data eia --k 10 --norm 10 --seconds 900

Results: ``benchmarks/results/outlier_gap.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import microagg
from microagg.columns import zscores
from microagg.deadline import Deadline
from microagg.labels import relabel, sse, sst
from microagg.methods import run
from microagg.methods.colgen.region import outlying_records

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, write_results  # noqa: E402
from best_known import load_cell  # noqa: E402


def outlying_groups(X: np.ndarray, labels: np.ndarray, norm: float) -> np.ndarray:
    """The records of the groups that hold a record farther than ``norm`` from the origin (the
    centre of z-scored data)."""
    return np.flatnonzero(np.isin(labels, np.unique(labels[outlying_records(X, norm)])))


def measure(
    data: str, k: int, norm: float, seconds: float, mip_time_limit: float, seed: int
) -> dict:
    labels, cert = load_cell(data, k)
    if labels is None:
        raise SystemExit(f"no committed partition for {data} k={k}")
    X = zscores(microagg.datasets.load(data).to_numpy(dtype=np.float64))
    subset = outlying_groups(X, labels, norm)
    XS, start = X[subset], relabel(labels[subset])
    start_sse = sse(XS, start)
    tic = time.perf_counter()
    out = run(
        "colgen",
        XS,
        k,
        seed=seed,
        deadline=Deadline(seconds),
        init=[start],
        mip_time_limit=mip_time_limit,
    )
    elapsed = time.perf_counter() - tic
    best = sse(XS, out.labels)
    ex = out.extras
    return {
        "data": data,
        "k": k,
        "norm": norm,
        "seconds": seconds,
        "mip_time_limit": mip_time_limit,
        "seed": seed,
        "records": len(subset),
        "of_records": len(X),
        "groups": int(start.max()) + 1,
        "subset_sse_share_of_cell": start_sse / sse(X, labels),
        "start_sse": start_sse,
        "best_sse": best,
        "bound_sse": out.lower_bound,
        "subset_gap_percent": 100.0 * (best - out.lower_bound) / best,
        "cell_sse": cert["sse"],
        "cell_bound_sse": cert.get("lower_bound_sse"),
        "cell_gap_percent": cert.get("gap_percent"),
        "cell_gap_share_in_subset": (
            None
            if cert.get("lower_bound_sse") is None
            else (best - out.lower_bound) / (cert["sse"] - cert["lower_bound_sse"])
        ),
        "lp_value": ex.get("colgen_lp_value"),
        "converged": ex.get("colgen_converged"),
        "proven_optimal": ex.get("colgen_proven_optimal"),
        "rounds": ex.get("colgen_rounds"),
        "cuts": ex.get("colgen_cuts"),
        "bound_from": ex.get("colgen_bound_from"),
        "phase_seconds": {
            p: round(v, 1) for p, v in (ex.get("colgen_phase_seconds") or {}).items()
        },
        "elapsed": round(elapsed, 1),
        "cell_sst": sst(X),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="eia")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument(
        "--norm",
        type=float,
        nargs="+",
        default=[15.0, 10.0],
        help="distances from the centre that make a record an outlier (one run each)",
    )
    ap.add_argument("--seconds", type=float, default=900.0)
    ap.add_argument("--mip-time-limit", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rows = [measure(a.data, a.k, norm, a.seconds, a.mip_time_limit, a.seed) for norm in a.norm]
    table = md_table(
        [
            "data",
            "k",
            "norm >",
            "outlying groups (records)",
            "their share of the cell's SSE",
            "partition SSE",
            "colgen best",
            "colgen bound",
            "gap on them",
            "cell gap",
            "colgen",
            "seconds",
        ],
        [
            [
                r["data"],
                r["k"],
                f"{r['norm']:g}",
                f"{r['groups']} ({r['records']} of {r['of_records']})",
                f"{100 * r['subset_sse_share_of_cell']:.1f} %",
                f"{r['start_sse']:.3f}",
                f"{r['best_sse']:.3f}",
                f"{r['bound_sse']:.3f}",
                f"{r['subset_gap_percent']:.2f} %",
                "–" if r["cell_gap_percent"] is None else f"{r['cell_gap_percent']:.2f} %",
                (
                    f"{r['rounds']} rounds, {r['cuts']} cuts,"
                    f" {'converged' if r['converged'] else 'not converged'}"
                ),
                r["elapsed"],
            ]
            for r in rows
        ],
    )
    r = rows[0]
    note = (
        "\nOutlying groups: those holding a record farther than the norm from the centre of the"
        " z-scored data. Their records are whole groups of the committed partition, so a lower SSE"
        f" on them would lower the cell's. colgen: `--seconds {r['seconds']:g} --mip-time-limit"
        f" {r['mip_time_limit']:g}`, seed {r['seed']}, the committed groups as warm start. Phase"
        " seconds: " + "; ".join(f"norm {x['norm']:g}: {x['phase_seconds']}" for x in rows) + ".\n"
    )
    write_results("outlier_gap", rows, table + note)


if __name__ == "__main__":
    main()
