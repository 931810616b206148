"""Missing values in microaggregation: sdcMicro's ``mdav`` (its R and C++, built from its source as
``sdcmicro_parity.py`` builds it) against microagg's MDAV on the same files with missing values.

For each file: the published values that are means over fewer than k present values (a value that
occurs fewer than k times among the present values of its column: a mean over m present values
occurs at least m times), how many of those are the record's own original value, and IL over the
present values on one scale (microagg's z-scores of the present values). microagg is run with and
without its ``present_groups`` step (``missing_values``).

    python benchmarks/missing_values.py --sdcmicro-src /work/sdcmicro-src
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from _common import md_table, write_results
from sdcmicro_parity import LOADER, build

MDAV_R = r"""
args <- commandArgs(trailingOnly = TRUE)
source(args[1]); sdc_load(args[2], args[3])
d <- read.csv(file.path(args[4], "in.csv"))
v <- strsplit(readLines(file.path(args[4], "columns.txt")), ",")[[1]]
k <- as.integer(readLines(file.path(args[4], "k.txt")))
out <- mdav(d, variables = v, K = k)
write.csv(out[, v], file.path(args[4], "out.csv"), row.names = FALSE, na = "")
"""


def files() -> list[tuple[str, pd.DataFrame]]:
    """Generated files: six lognormal variables each missing at random (64 patterns), and a survey
    with incomes missing for children and hours missing for 30 % of records."""
    rng = np.random.default_rng(7)
    n = 3000
    six = pd.DataFrame(
        np.round(rng.lognormal(8, 1, (n, 6)), 2), columns=[f"v{j}" for j in range(6)]
    )
    six[rng.random((n, 6)) < 0.2] = np.nan
    rng = np.random.default_rng(2026)
    n = 5000
    age = rng.integers(0, 90, n).astype(float)
    income = np.round(rng.lognormal(10, 1, n), 2)
    income[age < 16] = np.nan
    hours = rng.integers(5, 60, n).astype(float)
    hours[rng.random(n) < 0.3] = np.nan
    survey = pd.DataFrame({"age": age, "income": income, "hours": hours})
    return [("six variables, 20 % missing each (3,000)", six), ("survey (5,000)", survey)]


def thin(published: pd.DataFrame, original: pd.DataFrame, k: int) -> tuple[int, int]:
    """(values occurring fewer than k times among their column's present values, of them equal to
    the record's own original value)."""
    count = own = 0
    for c in published.columns:
        p = published[c]
        present = p.notna()
        freq = p[present].map(p[present].value_counts())
        few = (freq < k).to_numpy()
        count += int(few.sum())
        same = np.isclose(p[present], original[c][present], rtol=1e-9, atol=1e-9)
        own += int((few & same).sum())
    return count, own


def il_present(res, published: pd.DataFrame) -> float:
    Z = res.standardized
    Zp = res.scaler.transform(published.to_numpy(dtype=float))
    return 100 * float(np.nansum((Z - Zp) ** 2) / np.nansum((Z - np.nanmean(Z, 0)) ** 2))


def main(argv=None) -> None:
    import subprocess

    import microagg
    from microagg import pipeline

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sdcmicro-src", type=Path, required=True)
    ap.add_argument(
        "--build-dir", type=Path, default=Path(tempfile.gettempdir()) / "sdcmicro-build"
    )
    ap.add_argument("-k", type=int, default=3)
    args = ap.parse_args(argv)
    src = args.sdcmicro_src.resolve()
    args.build_dir.mkdir(parents=True, exist_ok=True)
    so = build(src, args.build_dir)
    loader = args.build_dir / "loader.R"
    loader.write_text(LOADER)
    rows = []
    for name, df in files():
        columns = list(df.columns)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            df.to_csv(work / "in.csv", index=False, na_rep="")
            (work / "columns.txt").write_text(",".join(columns))
            (work / "k.txt").write_text(str(args.k))
            (work / "run.R").write_text(MDAV_R)
            subprocess.run(
                ["Rscript", str(work / "run.R"), str(loader), str(src), str(so), str(work)],
                check=True,
                capture_output=True,
            )
            sdc = pd.read_csv(work / "out.csv")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = microagg.microaggregate(df, k=args.k, method="mdav", continuous=columns)
            keep = pipeline.cover_missing
            pipeline.cover_missing = lambda prepared, partitioned, roles: partitioned
            try:
                raw = microagg.microaggregate(df, k=args.k, method="mdav", continuous=columns)
            finally:
                pipeline.cover_missing = keep
        for who, published in (
            ("sdcMicro mdav", sdc),
            ("microagg mdav, no present_groups", raw.data[columns]),
            ("microagg mdav", res.data[columns]),
        ):
            few, own = thin(published, df, args.k)
            kept = bool((published.isna() == df.isna()).all().all())
            rows.append(
                {
                    "file": name,
                    "run": who,
                    "missing_kept": kept,
                    "means_below_k_present": few,
                    "own_values": own,
                    "il_present_percent": round(il_present(res, published), 3),
                }
            )
    table = md_table(
        ["file", "run", "missing kept", f"means over < {args.k} present", "own values", "IL %"],
        [list(r.values()) for r in rows],
    )
    write_results("missing_values", rows, table)


if __name__ == "__main__":
    main()
