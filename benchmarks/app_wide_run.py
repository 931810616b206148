"""An app run on wide data: 40 records x d columns through the app's run process (run_handle.RunHandle).

Issue 31: a 40 x 5,000-column run sat in "measures and report" for minutes, because the
measures (correlation matrices, principal axes) and the report's heat maps grow with the square
of the columns. The app now measures and draws the first ``protect_worker.REPORT_COLUMNS``
quasi-identifier
columns (said so in the report). Each row: the run's wall time in the app's process, from Run to
done; the part of it spent in "measures and report"; the report's size. The last rows time the
former, uncapped measures and report in this process (``run_figures`` and ``render_report`` on
every column) for comparison, at widths where that still ends.

    python benchmarks/app_wide_run.py [--widths 500,5000] [--uncapped 250,500]

Results: benchmarks/results/app_wide_run.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, measured_rows, write_results  # noqa: E402

NAME = "app_wide_run"


def wide_frame(d: int):
    import numpy as np
    import pandas as pd

    return pd.DataFrame(
        np.random.default_rng(0).normal(size=(40, d)), columns=[f"c{i}" for i in range(d)]
    )


def app_run(d: int, folder: Path) -> dict:
    from microagg.app import run_handle, runspec

    df = wide_frame(d)
    src = folder / f"wide{d}.csv"
    df.to_csv(src, index=False)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    handle = run_handle.RunHandle(
        runspec.RunSpec.of(str(src), src.name, 3, "mdav", list(df.columns)), folder, d
    )
    measuring = None
    while handle.poll() == "running":
        if measuring is None and handle.stage == "measures and report":
            measuring = time.perf_counter()
        time.sleep(0.02)
    done = time.perf_counter()
    if handle.state != "done":
        raise SystemExit(f"{d} columns: {handle.state}: {handle.error}")
    return {
        "columns": d,
        "how": "app run (capped)",
        "seconds": round(done - t0, 2),
        "measures_and_report_seconds": None if measuring is None else round(done - measuring, 2),
        "report_mb": round(handle.report_path.stat().st_size / 1e6, 2),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def uncapped(d: int) -> dict:
    import microagg
    from microagg.app import figures
    from microagg.report import render_report

    df = wide_frame(d)
    res = microagg.microaggregate(df, k=3, method="mdav")
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    figures.run_figures(res, df)
    report = render_report(res, df, {})
    seconds = time.perf_counter() - t0
    return {
        "columns": d,
        "how": "measures and report on every column (before)",
        "seconds": None,
        "measures_and_report_seconds": round(seconds, 2),
        "report_mb": round(len(report) / 1e6, 2),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="500,5000", help="columns of the app runs")
    ap.add_argument(
        "--uncapped", default="250,500", help="columns of the former, uncapped measures and report"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="microagg-wide-") as folder:
        widths = [int(x) for x in args.widths.split(",") if x]
        rows = measured_rows(widths, lambda d: app_run(d, Path(folder)))
    rows += measured_rows([int(x) for x in args.uncapped.split(",") if x], uncapped)
    table = md_table(
        [
            "records x columns",
            "what",
            "run seconds (Run to done)",
            "measures and report seconds",
            "report MB",
            "load before",
            "load after",
        ],
        [
            [
                f"40 x {r['columns']:,}",
                r["how"],
                "—" if r["seconds"] is None else r["seconds"],
                r["measures_and_report_seconds"],
                r["report_mb"],
                r["load_before"],
                r["load_after"],
            ]
            for r in rows
        ],
    )
    write_results(NAME, rows, table)


if __name__ == "__main__":
    main()
