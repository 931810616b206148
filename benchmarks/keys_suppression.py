"""Categorical keys beside numeric QIs: suppressed key values, k-anonymity, IL, against sdcMicro.

On three real survey files read from R at run time (never committed):

* sdcMicro's ``free1`` (4,000 records): keys REGION, SEX, AGE in groups, MARSTAT; QIs INCOME,
  MONEY, ASSETS, DEBTS; weight WEIGHT;
* laeken's ``eusilc`` (14,827 records): keys rb090, age in groups, pb220a (missing for 2,720
  children: the input's own gaps), strata db040; QIs eqIncome and the household incomes hy040n,
  hy050n, hy070n, hy090n; weight rb050;
* survey's ``apipop`` (6,194 schools): keys stype, cnum; QIs api00, api99, meals, ell;

each at k = 3, four ways:

* sdcMicro 5.8.1's own ``localSuppression`` on the keys alone (strata as its ``strataVars``), its R
  sourced and its C++ built with ``R CMD SHLIB`` as ``benchmarks/sdcmicro_parity.py`` does;
* microagg ``key_anonymity="keys+qis"`` (the default: keys-alone suppression, then the QI groups
  inside the key classes, ``microagg.key_classes``);
* microagg ``key_anonymity="keys"`` (sdcMicro's semantics: keys and strata alone);
* the old behaviour (the QI groups formed first, then the keys suppressed inside each QI group:
  ``suppression.plan`` with the published QIs fixed), for the IL the new default costs.

Per run: suppressed key values (new blanks; the input's own missing values apart), records below k
on keys + QIs + strata and on keys + strata (a missing key matching any value), IL, CPU seconds.
Then sdcMicro's ``measure_risk`` (its ``freqCalc``, ``addAllNAtoKeys = FALSE``) on each published
file's categorical keys, against microagg's ``reidentification_expected``; and on a generated file
(``tests/fixtures/keys_measure_risk.csv``, many records with every key missing) the figures
``tests/test_key_classes.py`` recomputes without R.

Results: benchmarks/results/keys_suppression.{json,md}; the docs' table (docs/local-suppression.md)
is written from the JSON (``--render``). The machine is shared: the load is recorded beside.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine  # noqa: E402
from sdcmicro_parity import LOADER, build  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "keys_measure_risk.csv"
FIXTURE_FIGURES = ROOT / "tests" / "fixtures" / "keys_measure_risk.json"
DOC = ROOT / "docs" / "local-suppression.md"
K = 3

CASES = [
    {
        "name": "free1",
        "keys": ["REGION", "SEX", "AGEGROUP", "MARSTAT"],
        "qis": ["INCOME", "MONEY", "ASSETS", "DEBTS"],
        "strata": [],
        "weight": "WEIGHT",
    },
    {
        "name": "eusilc",
        "keys": ["rb090", "agegroup", "pb220a"],
        "qis": ["eqIncome", "hy040n", "hy050n", "hy070n", "hy090n"],
        "strata": ["db040"],
        "weight": "rb050",
    },
    {
        "name": "apipop",
        "keys": ["stype", "cnum"],
        "qis": ["api00", "api99", "meals", "ell"],
        "strata": [],
        "weight": None,
    },
]

#: age classes of ten years (sdcMicro's tutorials group ages so)
AGE_BREAKS = [-np.inf, 15, 25, 35, 45, 55, 65, np.inf]

EXPORT_R = r"""
args <- commandArgs(TRUE); dir <- args[1]; src <- args[2]
load(file.path(src, "data", "free1.rda"))
write.csv(as.data.frame(free1), file.path(dir, "free1.csv"), row.names = FALSE)
library(laeken); data(eusilc); write.csv(eusilc, file.path(dir, "eusilc.csv"), row.names = FALSE)
library(survey); data(api); write.csv(apipop, file.path(dir, "apipop.csv"), row.names = FALSE)
"""

SDC_R = r"""
args <- commandArgs(TRUE)
source(args[1]); sdc_load(args[2], args[3]); dir <- args[4]
jobs <- read.csv(file.path(dir, "jobs.csv"), stringsAsFactors = FALSE)
out <- character(0)
put <- function(name, value) out <<- c(out, paste(name, num17(value), sep = "\t"))
field <- function(v) if (is.na(v) || v == "") character(0) else strsplit(v, ",")[[1]]
for (i in seq_len(nrow(jobs))) {
  j <- jobs[i, ]
  d <- read.csv(file.path(dir, j$file), check.names = FALSE, na.strings = "",
                stringsAsFactors = FALSE)
  keys <- field(j$keys); strata <- field(j$strata); w <- field(j$weight)
  if (j$what == "localSuppression") {
    x <- d[, c(keys, strata), drop = FALSE]
    # texts as factors, as createSdcObj makes them (freqCalc's as.numeric turns a text into NA)
    for (v in names(x)) if (is.character(x[[v]])) x[[v]] <- as.factor(x[[v]])
    t0 <- proc.time()
    ls <- if (length(strata)) localSuppression(x, k = as.integer(j$k), keyVars = keys,
                                               strataVars = strata)
          else localSuppression(x, k = as.integer(j$k), keyVars = keys)
    put(paste0(j$id, ":cpu_s"), cpu(t0))
    xa <- as.data.frame(ls$xAnon)
    write.csv(xa[, keys, drop = FALSE], file.path(dir, paste0(j$id, "_xanon.csv")),
              row.names = FALSE)
    before <- colSums(is.na(x[, keys, drop = FALSE])); after <- colSums(is.na(xa[, keys, drop = FALSE]))
    put(paste0(j$id, ":suppressed"), sum(after - before))
  } else {
    mr <- measure_risk(d, keyVars = keys, w = if (length(w)) w else NULL)
    put(paste0(j$id, ":global_risk_ER"), mr$global_risk_ER)
    write.csv(data.frame(fk = num17(mr$Res[, "fk"]), Fk = num17(mr$Res[, "Fk"]),
                         risk = num17(mr$Res[, "risk"])),
              file.path(dir, paste0(j$id, "_risk.csv")), row.names = FALSE, quote = FALSE)
  }
}
writeLines(out, file.path(dir, "results.tsv"))
"""


def load_case(case: dict, tmp: Path) -> pd.DataFrame:
    df = pd.read_csv(tmp / f"{case['name']}.csv")
    if case["name"] == "free1":
        df["AGEGROUP"] = pd.cut(df["AGE"], AGE_BREAKS, right=False, labels=False)
    if case["name"] == "eusilc":
        df["agegroup"] = pd.cut(df["age"], AGE_BREAKS, right=False, labels=False)
    cols = (
        case["keys"] + case["strata"] + case["qis"] + ([case["weight"]] if case["weight"] else [])
    )
    return df[list(dict.fromkeys(cols))].copy()


def below_k(frame: pd.DataFrame, keys: list, fixed: list, k: int, plain: bool = True) -> int:
    """Records matching fewer than k records on the keys (a missing key matching any value)
    within their combination of ``fixed`` columns; ``plain=False``: sdcMicro's freqCalc rule (a
    record missing every key is no match of a complete one)."""
    from microagg.measures.records import combination_codes, key_codes, wildcard_frequencies

    view = frame[keys].replace("", None)
    fk, _ = wildcard_frequencies(
        key_codes(view, keys),
        fixed=combination_codes(frame, fixed),
        all_missing_matches_complete=plain,
    )
    return int(np.count_nonzero(fk < k))


def microagg_runs(case: dict, df: pd.DataFrame) -> tuple[dict, dict]:
    """(figures per way, published frames) of microagg's three ways on one file."""
    import microagg
    from microagg import suppression

    keys, qis, strata, w = case["keys"], case["qis"], case["strata"], case["weight"]
    common = dict(k=K, columns=qis, strata=strata or None, continuous=qis, seed=0)
    if w:
        common["sample_weight"] = w
    rows, frames = {}, {}
    for way in ("keys+qis", "keys", "old"):
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if way == "old":
                res = microagg.microaggregate(df, **common)
                plan = suppression.plan(res.data, keys, K, fixed=qis + strata)
                published = suppression.apply(res.data, plan)
                suppressed, extra = plan.total, {}
            else:
                res = microagg.microaggregate(df, keys=keys, key_anonymity=way, **common)
                published, suppressed = res.data, res.suppression.total
                risk = res.audit.group("risk")
                extra = {
                    "reidentification_expected": risk.get("reidentification_expected"),
                    "categorical_keys": list(res.audit_roles.categorical_keys),
                    "audit_suppressed_key_values": risk.get("suppressed_key_values"),
                }
        seconds = time.process_time() - t0
        new_blanks = int((df[keys].notna().to_numpy() & published[keys].isna().to_numpy()).sum())
        rows[way] = {
            "suppressed": int(suppressed),
            "new_blanks_in_file": new_blanks,
            "input_missing_key_values": int(df[keys].isna().to_numpy().sum()),
            "below_k_keys_qis_strata": below_k(published, keys, qis + strata, K),
            "below_k_keys_qis_strata_freqcalc_rule": below_k(
                published, keys, qis + strata, K, plain=False
            ),
            "below_k_keys_strata": below_k(published, keys, strata, K),
            "information_loss": float(res.information_loss),
            "cpu_s": round(seconds, 3),
            **extra,
        }
        frames[way] = published
    return rows, frames


def fixture_data(n: int = 600, seed: int = 54) -> pd.DataFrame:
    """A survey-shaped keys file with suppressed values, some records missing every key: the
    measure_risk fixture (generated; the tests recompute microagg's figure on it)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "region": rng.integers(1, 9, n).astype(float),
            "sex": rng.integers(1, 3, n).astype(float),
            "agegroup": rng.integers(1, 7, n).astype(float),
            "weight": np.round(rng.uniform(1.0, 400.0, n), 3),
        }
    )
    for key, share in (("region", 0.15), ("sex", 0.05), ("agegroup", 0.1)):
        df.loc[rng.random(n) < share, key] = np.nan
    df.loc[rng.random(n) < 0.08, ["region", "sex", "agegroup"]] = np.nan  # every key missing
    return df


def run_r(script: str, args: list, work: Path) -> dict:
    path = work / "run.R"
    path.write_text(script)
    proc = subprocess.run(["Rscript", str(path), *map(str, args)], capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"R failed:\n{proc.stderr[-3000:]}")
    out = {}
    for line in (work / "results.tsv").read_text().splitlines():
        name, value = line.split("\t")
        out[name] = None if value == "NA" else float(value)
    return out


def measure(src: Path, build_dir: Path) -> dict:
    load_start = os.getloadavg()
    so = build(src, build_dir)
    loader = build_dir / "loader.R"
    loader.write_text(LOADER)
    from microagg.measures.risk import individual_risk

    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "export.R").write_text(EXPORT_R)
        subprocess.run(["Rscript", str(tmp / "export.R"), str(tmp), str(src)], check=True)
        jobs, found = [], {}
        for case in CASES:
            df = load_case(case, tmp)
            df.to_csv(tmp / f"{case['name']}_in.csv", index=False)
            rows, frames = microagg_runs(case, df)
            found[case["name"]] = (case, df, rows)
            jobs.append(
                {
                    "id": f"{case['name']}_ls",
                    "what": "localSuppression",
                    "file": f"{case['name']}_in.csv",
                    "keys": ",".join(case["keys"]),
                    "strata": ",".join(case["strata"]),
                    "weight": "",
                    "k": K,
                }
            )
            for way in ("keys+qis", "keys"):
                name = f"{case['name']}_{way.replace('+', '_')}"
                frames[way].to_csv(tmp / f"{name}.csv", index=False)
                jobs.append(
                    {
                        "id": name,
                        "what": "measure_risk",
                        "file": f"{name}.csv",
                        "keys": ",".join(rows[way]["categorical_keys"]),
                        "strata": "",
                        "weight": case["weight"] or "",
                        "k": K,
                    }
                )
        fixture = fixture_data()
        fixture.to_csv(tmp / "fixture.csv", index=False)
        jobs.append(
            {
                "id": "fixture_weighted",
                "what": "measure_risk",
                "file": "fixture.csv",
                "keys": "region,sex,agegroup",
                "strata": "",
                "weight": "weight",
                "k": K,
            }
        )
        jobs.append({**jobs[-1], "id": "fixture_unweighted", "weight": ""})
        pd.DataFrame(jobs).to_csv(tmp / "jobs.csv", index=False)
        sdc = run_r(SDC_R, [loader, src, so, tmp], tmp)
        for name, (case, df, rows) in found.items():
            xanon = pd.read_csv(tmp / f"{name}_ls_xanon.csv")
            rows["sdcmicro"] = {
                "suppressed": int(sdc[f"{name}_ls:suppressed"]),
                "below_k_keys_strata": below_k(
                    pd.concat([xanon, df[case["strata"]]], axis=1), case["keys"], case["strata"], K
                ),
                "cpu_s": round(sdc[f"{name}_ls:cpu_s"], 3),
            }
            for way in ("keys+qis", "keys"):
                rows[way]["sdcmicro_measure_risk_ER"] = sdc[
                    f"{name}_{way.replace('+', '_')}:global_risk_ER"
                ]
            cases.append(
                {
                    "name": name,
                    **{k: case[k] for k in ("keys", "qis", "strata", "weight")},
                    "records": len(df),
                    "k": K,
                    "runs": rows,
                }
            )
        fixture_figures = {}
        for weighted in (True, False):
            tag = "weighted" if weighted else "unweighted"
            per = pd.read_csv(tmp / f"fixture_{tag}_risk.csv")
            ours = individual_risk(
                fixture,
                ["region", "sex", "agegroup"],
                "weight" if weighted else None,
                missing="wildcard",
            )
            fixture_figures[tag] = {
                "global_risk_ER": sdc[f"fixture_{tag}:global_risk_ER"],
                "fk_sum": float(per["fk"].sum()),
                "Fk_sum": float(per["Fk"].sum()),
                "microagg_at_measurement": ours.expected_reidentifications,
            }
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    fixture.to_csv(FIXTURE, index=False)
    FIXTURE_FIGURES.write_text(
        json.dumps(
            {
                "source": "benchmarks/keys_suppression.py: sdcMicro measure_risk on the fixture",
                "keys": ["region", "sex", "agegroup"],
                "weight": "weight",
                **fixture_figures,
            },
            indent=2,
        )
        + "\n"
    )
    load_end = os.getloadavg()
    version = next(
        line.split(":", 1)[1].strip()
        for line in (src / "DESCRIPTION").read_text().splitlines()
        if line.startswith("Version:")
    )
    return {
        "machine": {
            **machine(),
            "load_start": [round(x, 2) for x in load_start],
            "load_end": [round(x, 2) for x in load_end],
            "shared": True,
        },
        "sdcmicro_version": version,
        "cases": cases,
    }


def markdown(doc: dict) -> str:
    m = doc["machine"]
    lines = [
        f"_From `benchmarks/results/keys_suppression.json` ({m['date_utc']} UTC, {m['cpus']} cores"
        f" shared with other work, load {m['load_start'][0]} at the start, {m['load_end'][0]} at"
        f" the end; sdcMicro {doc['sdcmicro_version']} from its source)._",
        "",
        "| data | records | keys (strata) | way | suppressed key values | records below k on keys"
        " + QIs + strata | on keys + strata | IL % | CPU s | expected re-identifications:"
        " microagg / sdcMicro measure_risk |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    names = {
        "sdcmicro": "sdcMicro localSuppression (keys alone)",
        "keys+qis": "microagg keys+qis (default)",
        "keys": "microagg keys (sdcMicro's semantics)",
        "old": "microagg before (keys inside the QI groups)",
    }
    for case in doc["cases"]:
        keys = ", ".join(case["keys"]) + (
            f" ({', '.join(case['strata'])})" if case["strata"] else ""
        )
        for way in ("sdcmicro", "keys+qis", "keys", "old"):
            r = case["runs"][way]
            il = "" if "information_loss" not in r else f"{r['information_loss']:.2f}"
            on_all = r.get("below_k_keys_qis_strata", "")
            er = ""
            if r.get("reidentification_expected") is not None:
                er = f"{r['reidentification_expected']:.4f} / {r['sdcmicro_measure_risk_ER']:.4f}"
            lines.append(
                f"| {case['name']} | {case['records']} | {keys} | {names[way]} | {r['suppressed']}"
                f" | {on_all} | {r['below_k_keys_strata']} | {il} | {r['cpu_s']} | {er} |"
            )
    return "\n".join(lines) + "\n"


def render(doc: dict) -> None:
    table = markdown(doc)
    (RESULTS / "keys_suppression.md").write_text(table)
    text = DOC.read_text()
    begin, end = "<!-- keys-suppression:begin -->", "<!-- keys-suppression:end -->"
    if begin in text:
        head, rest = text.split(begin, 1)
        text = head + begin + "\n" + table + end + rest.split(end, 1)[1]
        DOC.write_text(text)
    print(table)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--render", action="store_true", help="only write the tables from the JSON")
    ap.add_argument("--sdcmicro-src", type=Path, help="source snapshot of sdcTools/sdcMicro")
    ap.add_argument(
        "--build-dir", type=Path, default=Path(tempfile.gettempdir()) / "sdcmicro-build"
    )
    args = ap.parse_args(argv)
    path = RESULTS / "keys_suppression.json"
    if not args.render:
        if args.sdcmicro_src is None:
            ap.error("--sdcmicro-src DIR is required (or --render)")
        args.build_dir.mkdir(parents=True, exist_ok=True)
        doc = measure(args.sdcmicro_src.resolve(), args.build_dir)
        path.write_text(json.dumps(doc, indent=2) + "\n")
    render(json.loads(path.read_text()))


if __name__ == "__main__":
    main()
