"""The numbers of docs/sdcmicro.md: sdcMicro's calls mapped to microagg, run on testdata.

The tutorials' typical call: microaggregate expend, income and savings with k = 3 within urbrur
strata. Each row's microagg call is the exact Python expression evaluated here (and shown in the
guide); the information loss figures are measured, never typed:

* IL: 100·SSE/SST on z-scores, SSE to the published values (microagg's ``information_loss``);
* IL1s: sdcMicro's ``dUtility(method="IL1s")`` figure (``microagg.measures.il1s``);
* smallest: the smallest number of records sharing one published combination of QI values.

    python benchmarks/sdcmicro_guide.py            # run, write results/sdcmicro_guide.json
    python benchmarks/sdcmicro_guide.py --render   # also rewrite the table in docs/sdcmicro.md

R is not needed (and not run): the left column quotes sdcMicro's documented call.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import microagg
from microagg import measures

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "sdcmicro_guide.json"
GUIDE = HERE.parent / "docs" / "sdcmicro.md"
BEGIN, END = "<!-- sdcmicro-guide:begin -->", "<!-- sdcmicro-guide:end -->"
OUTLIER_BEGIN, OUTLIER_END = "<!-- sdcmicro-outlier:begin -->", "<!-- sdcmicro-outlier:end -->"

NUM = ["expend", "income", "savings"]


def simple_baseline(df, k, strata):
    """sdcMicro's method "simple" (no microagg equivalent): consecutive groups of k in file order
    within each stratum, the last group taking the remainder. Returns the protected frame."""
    out = df.copy()
    for _, rows in df.groupby(strata, observed=True).indices.items():
        q = len(rows) // k
        labels = np.minimum(np.arange(len(rows)) // k, q - 1)
        for c in NUM:
            values = df[c].to_numpy()[rows]
            means = np.bincount(labels, weights=values) / np.bincount(labels)
            out.iloc[rows, out.columns.get_loc(c)] = means[labels]
    return out


# (sdcMicro call, microagg expression); the expression is evaluated with df = testdata
ROWS = [
    (
        (
            'microaggregation(testdata, variables=c("expend","income","savings"), aggr=3,'
            ' strata_variables="urbrur")'
        ),
        'microagg.microaggregate(df, k=3, columns=NUM, strata="urbrur")',
    ),
    (
        '... method="mdav", measure="median"   (sdcMicro ignores measure for mdav)',
        'microagg.microaggregate(df, k=3, columns=NUM, strata="urbrur", aggregation="median")',
    ),
    (
        '... method="mdav", measure="trim", trim=0.2   (ignored for mdav)',
        (
            'microagg.microaggregate(df, k=3, columns=NUM, strata="urbrur", aggregation="trimmed",'
            " trim=0.2)"
        ),
    ),
    (
        '... method="mdav", measure="onestep"   (ignored for mdav)',
        'microagg.microaggregate(df, k=3, columns=NUM, strata="urbrur", aggregation="onestep")',
    ),
    (
        '... method="rmd"',
        'microagg.microaggregate(df, k=3, columns=NUM, strata="urbrur", distance="robust")',
    ),
    (
        '... method="mdav", weights=testdata$household_weights',
        (
            'microagg.microaggregate(df, k=3, columns=NUM, strata="urbrur",'
            ' sample_weight="household_weights")'
        ),
    ),
    (
        '... method="pca"',
        (
            'microagg.microaggregate(df, k=3, columns=NUM, strata="urbrur", method="projected",'
            ' projection="fpc", univariate="univariate-fixed")'
        ),
    ),
    (
        (
            "(microagg's default cut of the same axis: optimal for the projected values, not for"
            " the columns)"
        ),
        (
            'microagg.microaggregate(df, k=3, columns=NUM, strata="urbrur", method="projected",'
            ' projection="fpc")'
        ),
    ),
    (
        '... method="single", varsort=1',
        (
            'microagg.microaggregate(df, k=3, columns=NUM, strata="urbrur", method="projected",'
            ' projection="pv", variable=0, univariate="univariate-fixed")'
        ),
    ),
    (
        '... method="onedims"   /   mafast(testdata, variables=..., by="urbrur", aggr=3)',
        (
            'microagg.microaggregate(df, k=3, columns=NUM, strata="urbrur",'
            ' method="individual-ranking", univariate="univariate-fixed")'
        ),
    ),
    (
        '... method="simple"   (no equivalent: file order, emulated here)',
        'simple_baseline(df, 3, "urbrur")',
    ),
    (
        "(microagg only: V-MDAV)",
        'microagg.microaggregate(df, k=3, columns=NUM, strata="urbrur", method="vmdav")',
    ),
    (
        (
            'microaggrGower(testdata, variables=c("relat","age","expend"),'
            ' dist_var=c("age","sex","income","savings"), by=c("urbrur","roof"))'
        ),
        (
            'microagg.microaggregate(df, k=3, columns=["age", "sex", "relat", "expend", "income",'
            ' "savings"], strata=["urbrur", "roof"], merge_small_strata=True, continuous=["age"])'
        ),
    ),
]


def run() -> list[dict]:
    df = microagg.datasets.load("testdata")
    rows = []
    for r_call, py in ROWS:
        t0 = time.perf_counter()
        res = eval(
            py, {"microagg": microagg, "df": df, "NUM": NUM, "simple_baseline": simple_baseline}
        )
        seconds = time.perf_counter() - t0
        if hasattr(res, "information_loss"):  # a microagg Result
            out, cols = res.data, list(res.columns)
            il = res.information_loss
        else:  # the emulated baseline: IL against the published values on z-scores
            out, cols = res, NUM
            Z = (df[NUM] - df[NUM].mean()) / df[NUM].std(ddof=0)
            Zp = (out[NUM] - df[NUM].mean()) / df[NUM].std(ddof=0)
            il = 100.0 * float(((Z - Zp) ** 2).to_numpy().sum()) / float((Z**2).to_numpy().sum())
        row = {
            "sdcmicro": r_call,
            "microagg": py,
            "information_loss": il,
            "il1s": measures.il1s(df[NUM], out[NUM]),
            "smallest": int(out[cols].astype(str).value_counts().min()),
            "seconds": seconds,
        }
        if hasattr(res, "extras") and "categories" in res.extras:
            row["categories"] = res.extras["categories"]
        rows.append(row)
        print(
            f"IL {il:8.4f}%  IL1s {row['il1s']:.5f}  smallest {row['smallest']}  {seconds:6.2f} s "
            f" {py}"
        )
    return rows


def outlier_check() -> list[dict]:
    """One gross outlier (record 10's income times 1000 the maximum): how much do the groups of
    the other 4579 records move? Adjusted Rand index between their labels with and without it
    (1: same groups)."""
    from sklearn.metrics import adjusted_rand_score

    df = microagg.datasets.load("testdata")
    dirty = df.copy()
    dirty.loc[10, "income"] = df["income"].max() * 1000
    others = np.arange(len(df)) != 10
    rows = []
    for distance in ("euclidean", "mahalanobis", "robust"):
        for method in ("mdav", "vmdav"):
            a = microagg.microaggregate(
                df, k=3, method=method, columns=NUM, distance=distance
            ).labels
            b = microagg.microaggregate(
                dirty, k=3, method=method, columns=NUM, distance=distance
            ).labels
            rows.append(
                {
                    "distance": distance,
                    "method": method,
                    "ari_other_records": float(adjusted_rand_score(a[others], b[others])),
                }
            )
            print(
                f"outlier: {distance:11s} {method:5s} ARI of the other records"
                f" {rows[-1]['ari_other_records']:.4f}"
            )
    return rows


def render_outlier(rows: list[dict]) -> str:
    lines = ["| distance | mdav | vmdav |", "|---|---|---|"]
    for distance in ("euclidean", "mahalanobis", "robust"):
        got = {r["method"]: r["ari_other_records"] for r in rows if r["distance"] == distance}
        lines.append(f"| `{distance}` | {got['mdav']:.4f} | {got['vmdav']:.4f} |")
    return "\n".join(lines)


def render(rows: list[dict]) -> str:
    lines = ["| sdcMicro | microagg | IL % | IL1s | smallest |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| `{r['sdcmicro']}` | `{r['microagg']}` | {r['information_loss']:.4f} |"
            f" {r['il1s']:.5f} | {r['smallest']} |"
        )
    notes = [
        f"- `{c}` in the microaggrGower row: {100 * m['changed_share']:.2f}% of values changed, "
        f"total variation distance of the category frequencies {m['distribution_tvd']:.4f}"
        for r in rows
        for c, m in r.get("categories", {}).items()
    ]
    return "\n".join(lines + ([""] + notes if notes else []))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--render",
        action="store_true",
        help="rewrite the table in docs/sdcmicro.md from the results",
    )
    ap.add_argument("--no-run", action="store_true", help="render from the committed results only")
    args = ap.parse_args()
    if args.no_run:
        saved = json.loads(RESULT.read_text())
        rows, outliers = saved["rows"], saved["outlier"]
    else:
        rows, outliers = run(), outlier_check()
        RESULT.parent.mkdir(exist_ok=True)
        RESULT.write_text(
            json.dumps(
                {
                    "data": "testdata (4580 records)",
                    "k": 3,
                    "strata": "urbrur",
                    "microagg_version": getattr(microagg, "__version__", None),
                    "rows": rows,
                    "outlier": outliers,
                },
                indent=1,
            )
            + "\n"
        )
    if args.render:
        text = GUIDE.read_text()
        for begin, end, block in (
            (BEGIN, END, render(rows)),
            (OUTLIER_BEGIN, OUTLIER_END, render_outlier(outliers)),
        ):
            a, b = text.index(begin) + len(begin), text.index(end)
            text = text[:a] + "\n" + block + "\n" + text[b:]
        GUIDE.write_text(text)


if __name__ == "__main__":
    main()
