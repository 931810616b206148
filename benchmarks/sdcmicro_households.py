"""Household risk, proven by sdcMicro (issue 54): sdcMicro's own ``measure_risk(..., hid=)`` (its R
files sourced, its C++ built with ``R CMD SHLIB``, as ``sdcmicro_parity.py`` does) on generated
EU-SILC-shaped surveys (``microagg.datasets.household_survey``), beside microagg's registered
figures ``household_risk_expected`` / ``household_risk_percent`` and its per-record household risk
(``measures.risk.household_risk.hierarchical_risk`` of the individual risk).

    python benchmarks/sdcmicro_households.py --sdcmicro-src DIR [--build-dir DIR]

Cases: the survey as generated (keys db040, rb090 and an age group, weights db090, household id
db030), the same with every 7th age group blank (a suppressed key matching any value), and one
with weights near 1 (high risks).
Results: benchmarks/results/sdcmicro_households.{json,md}; tests/test_households.py reads the JSON
(sdcMicro's figures, no R at test time) and recomputes microagg's side on the same generated data.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, machine  # noqa: E402
from sdcmicro_parity import LOADER, build  # noqa: E402

#: the generated surveys measured (tests/test_households.py builds the same ones)
CASES = [
    {"name": "survey", "households": 600, "seed": 54, "blank_every": None, "weight_divisor": 1},
    {
        "name": "survey with blank age groups",
        "households": 600,
        "seed": 55,
        "blank_every": 7,
        "weight_divisor": 1,
    },
    {  # weights near 1 to 10: high risks, where 1 - prod(1 - r) differs most from the sum
        "name": "survey with small weights",
        "households": 400,
        "seed": 56,
        "blank_every": 11,
        "weight_divisor": 100,
    },
]
KEYS = ["db040", "rb090", "agegroup"]

HIER_R = r"""
args <- commandArgs(TRUE)
source(args[1]); sdc_load(args[2], args[3]); dir <- args[4]
d <- read.csv(file.path(dir, "data.csv"), check.names = FALSE, stringsAsFactors = FALSE)
mr <- measure_risk(d, keyVars = c("db040", "rb090", "agegroup"), w = "db090", hid = "db030")
writeLines(c(sprintf("hier_risk_ER\t%.17g", mr$hier_risk_ER),
             sprintf("hier_risk_pct\t%.17g", mr$hier_risk_pct),
             sprintf("global_risk_ER\t%.17g", mr$global_risk_ER)), file.path(dir, "results.tsv"))
write.csv(data.frame(risk = sprintf("%.17g", mr$Res[, "risk"]),
                     hier_risk = sprintf("%.17g", mr$Res[, "hier_risk"])),
          file.path(dir, "records.csv"), row.names = FALSE, quote = FALSE)
"""


def case_data(case: dict) -> pd.DataFrame:
    """The generated survey of a case with its age group key (blank every n-th record if asked)."""
    from microagg.datasets import household_survey

    df = household_survey(case["households"], seed=case["seed"])
    group = (df["age"] // 15).astype("float64")
    if case["blank_every"]:
        group.iloc[:: case["blank_every"]] = np.nan
    df["agegroup"] = group.astype("Int64")
    df["db090"] = np.maximum(df["db090"] / case["weight_divisor"], 1.0)
    return df


def microagg_side(df: pd.DataFrame) -> dict:
    """microagg's registered household figures on the survey as published (the file audit)."""
    from microagg.measures import AuditRoles, audit_files

    roles = AuditRoles(
        ("hy010",),
        {"hy010": "continuous"},
        3,
        keys=tuple(KEYS),
        sample_weight="db090",
        household=("db030",),
    )
    audit = audit_files(df, df, roles)
    risk = audit.group("risk")
    return {
        "household_risk_expected": risk["household_risk_expected"],
        "household_risk_percent": risk["household_risk_percent"],
        "reidentification_expected": risk["reidentification_expected"],
    }


def run_case(case: dict, loader: Path, src: Path, so: Path, tmp: Path) -> dict:
    work = tmp / case["name"].replace(" ", "_")
    work.mkdir()
    df = case_data(case)
    df.to_csv(work / "data.csv", index=False)
    (work / "run.R").write_text(HIER_R)
    proc = subprocess.run(
        ["Rscript", str(work / "run.R"), str(loader), str(src), str(so), str(work)],
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise SystemExit(f"R failed:\n{proc.stderr[-3000:]}")
    theirs = {
        name: float(value)
        for name, value in (
            line.split("\t") for line in (work / "results.tsv").read_text().splitlines()
        )
    }
    records = pd.read_csv(work / "records.csv")
    ours = microagg_side(df)
    return {
        **case,
        "records": len(df),
        "households": int(df["db030"].nunique()),
        "sdcmicro": theirs,
        "sdcmicro_hier_risk": records["hier_risk"].tolist(),
        "microagg": ours,
    }


def markdown(doc: dict) -> str:
    lines = [
        f"_Produced by `python benchmarks/sdcmicro_households.py` on {doc['machine']['date_utc']}"
        f" UTC (sdcMicro {doc['sdcmicro_version']}, {doc['r_version']})._",
        "",
        "| case | records | households | sdcMicro hier_risk_ER | microagg household_risk_expected"
        " | sdcMicro hier_risk_pct | microagg household_risk_percent |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in doc["cases"]:
        lines.append(
            f"| {c['name']} | {c['records']} | {c['households']} | "
            f"{c['sdcmicro']['hier_risk_ER']:.10g} | "
            f"{c['microagg']['household_risk_expected']:.10g} | "
            f"{c['sdcmicro']['hier_risk_pct']:.10g} | "
            f"{c['microagg']['household_risk_percent']:.10g} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sdcmicro-src", type=Path, required=True)
    ap.add_argument(
        "--build-dir", type=Path, default=Path(tempfile.gettempdir()) / "sdcmicro-build"
    )
    args = ap.parse_args(argv)
    src = args.sdcmicro_src.resolve()
    args.build_dir.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    so = build(src, args.build_dir)
    loader = args.build_dir / "loader.R"
    loader.write_text(LOADER)
    version = next(
        line.split(":", 1)[1].strip()
        for line in (src / "DESCRIPTION").read_text().splitlines()
        if line.startswith("Version:")
    )
    r_version = subprocess.run(
        ["Rscript", "-e", "cat(R.version.string)"], capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        cases = [run_case(case, loader, src, so, Path(tmp)) for case in CASES]
    doc = {
        "machine": {
            **machine(),
            "load_start": [round(x, 2) for x in load_start],
            "load_end": [round(x, 2) for x in os.getloadavg()],
        },
        "sdcmicro_version": version,
        "r_version": r_version,
        "keys": KEYS,
        "weight": "db090",
        "household": "db030",
        "cases": cases,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "sdcmicro_households.json").write_text(json.dumps(doc, indent=1) + "\n")
    (RESULTS / "sdcmicro_households.md").write_text(markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
