"""Information loss of every registered multivariate method on the bundled data, k = 3, 4, 5, 10.

Writes results/il_table.{md,json} and the README block `il-table`. Iterative methods get
`--time-limit` seconds per cell (default 60) and are anytime, so the budget is part of the
result. Univariate-only methods are left out (they need one column); `individual-ranking`
is shown for reference but is not k-anonymous. Usage:
    python benchmarks/il_table.py [--time-limit S] [--methods a,b] [--datasets census,eia]
"""

from __future__ import annotations

import argparse
import time

from _common import md_table, update_readme, write_results

KS = (3, 4, 5, 10)


def main() -> None:
    import microagg
    from microagg import methods

    ap = argparse.ArgumentParser()
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--methods", default=None)
    ap.add_argument("--datasets", default="census,tarragona,eia")
    ap.add_argument("--no-readme", action="store_true")
    args = ap.parse_args()
    names = (
        args.methods.split(",")
        if args.methods
        else [i.name for i in methods.all_methods() if i.multivariate]
    )
    datasets = args.datasets.split(",")
    rows, table = [], []
    for name in names:
        cells = [f"`{name}`"]
        for ds in datasets:
            df = microagg.datasets.load(ds)
            for k in KS:
                t = time.perf_counter()
                res = microagg.microaggregate(
                    df,
                    k=k,
                    method=name,
                    seed=0,
                    time_limit=args.time_limit,
                    columns=list(df.columns),
                )
                secs = time.perf_counter() - t
                rows.append(
                    {
                        "method": name,
                        "dataset": ds,
                        "k": k,
                        "information_loss": res.information_loss,
                        "seconds": secs,
                        "lower_bound_il": res.lower_bound_il,
                    }
                )
                cells.append(f"{res.information_loss:.2f}")
                print(name, ds, k, round(res.information_loss, 3), round(secs, 2), flush=True)
        cells.append(f"{sum(r['seconds'] for r in rows if r['method'] == name):.0f}")
        table.append(cells)
    headers = ["method"] + [f"{ds} k={k}" for ds in datasets for k in KS] + ["total s"]
    md = (
        "Information loss (IL %, z-scores) per method, data set and k; iterative methods limited"
        f" to {args.time_limit:g} s per cell; seed 0. `individual-ranking` groups each variable"
        " separately and is not k-anonymous.\n\n" + md_table(headers, table)
    )
    write_results("il_table", rows, md)
    if not args.no_readme and args.methods is None:
        update_readme(
            "il-table",
            md + "\n\nProduced by `python benchmarks/il_table.py --time-limit "
            f"{args.time_limit:g}` (results in `benchmarks/results/il_table.md`).",
        )


if __name__ == "__main__":
    main()
