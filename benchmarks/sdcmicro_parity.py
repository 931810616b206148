"""Parity with sdcMicro, proven by sdcMicro (issue 43): sdcMicro 5.8.1's OWN R and C++ code run
on the same data as microagg, figure by figure.

    python benchmarks/sdcmicro_parity.py --sdcmicro-src DIR [--sizes 1e4,3e4] [--build-dir DIR]
    python benchmarks/sdcmicro_parity.py --render     (the docs' blocks from the committed JSON)

DIR is a source snapshot of sdcTools/sdcMicro (e.g. ``git archive`` of its repository). Nothing of
it is copied into the project: at run time its C++ (``src/``) is compiled with Rcpp into one shared
library (``R CMD SHLIB``, cached in --build-dir), its R files are sourced in the DESCRIPTION's
Collate order, and its functions are called by Rscript (R from Debian's r-base-core, with
r-cran-rcpp, r-cran-data.table, r-cran-robustbase; sdcMicro's other imports are only needed by
functions not called here). Its ``data/free1.rda`` (a 4,000-record, 34-column survey) is read by R
and measured too; it is not committed (figures only).

For every case (the bundled census, tarragona, eia and testdata, generated mixed data with missing
key values, and free1), one protected file is made by microagg's MDAV (k = 3) and given to both
sides, so each figure is compared on identical inputs:

* ``dRisk`` (SDID), ``dUtility`` IL1s and eigen: the figures carrying sdcMicro's name
  (``measures.risk.sdid_risk``, ``measures.il1s``, ``measures.eigen_sdcmicro``), to 1e-9;
* ``measure_risk`` with weights (``global_risk_ER``, each record's risk, fk, Fk) and
  ``indivRisk(method="exact")`` against ``measures.risk.individual_risk(missing="wildcard")``;
* ``ldiversity`` (distinct and entropy l per record) against ``measures.risk.l_diversity``;
* ``dRiskRMD`` and ``dUtility(robeigen)``: sdcMicro fits robustbase's randomised MCD (seeded
  here with ``set.seed(1)``); microagg's RMDID figures (scikit-learn's MCD, the robust location,
  the original's scale) carry their own names and are recorded beside them, not compared;
* ``mdav``: sdcMicro's partition (records sharing a published row) against microagg's labels,
  both as SHA-256 of the labels renumbered in order of first appearance, with CPU seconds;
* ``localSuppression`` (default importance) against ``suppression.plan`` on the same keys and k:
  suppressions per key, CPU seconds, and k-anonymity with missing matching any value.

Then the MDAV side by side on ``mdav_scaling.make_data`` census-like and Gaussian 10-d data
(--sizes): CPU seconds of sdcMicro's ``mdav()`` (its C++ ``Mdav``) and of microagg's
``microaggregate(X, k=3, method="mdav", audit=False)`` (warm: kernels compiled first), in one
run, with the load before and after; whether the partitions are the same.

Results: benchmarks/results/sdcmicro_parity.{json,md}. tests/test_sdcmicro_parity.py reads the
JSON as fixtures (no R at test time) and recomputes microagg's side on the committed data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, machine, md_table  # noqa: E402

import microagg  # noqa: E402
from microagg import measures, suppression  # noqa: E402
from microagg.measures import risk as D  # noqa: E402

K = 3
TOLERANCE = 1e-9

# : the cases: data, numeric QIs, categorical keys, sampling weight, sensitive column, k of
# localSuppression
CASES = [
    {"name": "census", "numeric": None, "keys": [], "weight": None, "sensitive": None},
    {"name": "tarragona", "numeric": None, "keys": [], "weight": None, "sensitive": None},
    {"name": "eia", "numeric": None, "keys": [], "weight": None, "sensitive": None},
    {
        "name": "testdata",
        "numeric": ["expend", "income", "savings"],
        "keys": ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"],
        "weight": "sampling_weight",
        "sensitive": "hhcivil",
    },
    {
        "name": "mixed",
        "numeric": ["income", "expenses", "wealth"],
        "keys": ["region", "sex", "agegroup"],
        "weight": "weight",
        "sensitive": "health",
    },
    {
        "name": "free1",
        "numeric": ["INCOME", "MONEY", "ASSETS", "DEBTS"],
        "keys": ["REGION", "SEX", "AGE"],
        "weight": "WEIGHT",
        "sensitive": "EDUC1",
    },
]


def mixed_data(n: int = 3000, seed: int = 43) -> pd.DataFrame:
    """Generated survey-like data: three skewed correlated amounts, three categorical keys (one
    with 2 % missing values), a sampling weight and a sensitive category. Seeded."""
    rng = np.random.default_rng(seed)
    z = rng.multivariate_normal([0, 0, 0], [[1, 0.6, 0.3], [0.6, 1, 0.2], [0.3, 0.2, 1]], size=n)
    region = np.minimum(rng.zipf(1.6, n), 40)
    agegroup = rng.integers(1, 13, n).astype(float)
    agegroup[rng.random(n) < 0.02] = np.nan
    return pd.DataFrame(
        {
            "region": region,
            "sex": rng.integers(1, 3, n),
            "agegroup": agegroup,
            "income": np.round(np.exp(10 + 0.8 * z[:, 0]), 2),
            "expenses": np.round(np.exp(9 + 0.6 * z[:, 1]), 2),
            "wealth": np.round(np.exp(11 + 1.2 * z[:, 2]), 2),
            "weight": np.round(rng.uniform(10, 200, n), 3),
            "health": rng.integers(1, 6, n),
        }
    )


def case_data(case: dict, free1: Path | None) -> pd.DataFrame | None:
    name = case["name"]
    if name == "mixed":
        return mixed_data()
    if name == "free1":
        return None if free1 is None else pd.read_csv(free1)
    path = microagg.datasets.path(name)
    with open(path) as f:  # the numbers as stored (load() makes testdata's codes categorical)
        return pd.read_csv(f)


def numeric_columns(case: dict, df: pd.DataFrame) -> list:
    return (
        list(case["numeric"])
        if case["numeric"]
        else microagg.datasets.benchmark_columns(case["name"])
    )


def protected_by_microagg(
    df: pd.DataFrame, num: list, k: int = K
) -> tuple[pd.DataFrame, np.ndarray]:
    """microagg's MDAV on the numeric columns (all averaged: sdcMicro's mdav averages them too)."""
    res = microagg.microaggregate(df[num], k=k, method="mdav", continuous=num, audit=False)
    return res.data, res.labels


def partition_hash(labels) -> str:
    """SHA-256 of the labels renumbered 0, 1, ... in order of first appearance: equal hashes, same
    partition."""
    codes = pd.factorize(np.asarray(labels))[0].astype("<i4")
    return hashlib.sha256(codes.tobytes()).hexdigest()


def same_up_to_identical_records(
    X: np.ndarray, published_a: np.ndarray, published_b: np.ndarray
) -> bool:
    """Do two protections publish the same (original, published) pairs, as multisets? MDAV's
    partitions may differ only in which of two identical original records joins which group (a
    tie): the file released is then the same. Published values compared to 1e-9 of each column's
    largest magnitude."""
    scale = np.maximum(np.abs(X).max(axis=0), 1.0)

    def pairs(P):
        key = np.hstack([X / scale, np.round(P / scale * 1e9)])
        return key[np.lexsort(key.T[::-1])]

    return bool(np.array_equal(pairs(published_a), pairs(published_b)))


def rows_partition(frame: pd.DataFrame) -> np.ndarray:
    """Records that share every published value form one group (sdcMicro's mdav returns values)."""
    return D.identical_rows(frame.to_numpy(dtype=np.float64))


# --- R
# ---------------------------------------------------------------------------------------------

LOADER = r"""
suppressPackageStartupMessages({library(methods); library(Rcpp); library(data.table); library(robustbase);
  library(MASS); library(cluster)})
sdc_load <- function(src, so) {
  dll <- dyn.load(so)
  r <- getDLLRegisteredRoutines(dll)$.Call
  for (nm in names(r)) assign(nm, r[[nm]], envir = globalenv())
  desc <- read.dcf(file.path(src, "DESCRIPTION"))
  files <- strsplit(gsub("'", "", desc[, "Collate"]), "[[:space:]]+")[[1]]
  for (f in files[nzchar(files)]) {
    tryCatch(sys.source(file.path(src, "R", f), envir = globalenv()),
             error = function(e) message("not loaded: ", f, ": ", conditionMessage(e)))
  }
}
cpu <- function(t0) { t <- proc.time() - t0; sum(t[1:2]) }
num17 <- function(x) sprintf("%.17g", as.numeric(x))
"""

CASE_R = r"""
args <- commandArgs(TRUE)
source(args[1]); sdc_load(args[2], args[3]); dir <- args[4]
spec <- read.dcf(file.path(dir, "spec.dcf"))
field <- function(f) { v <- spec[1, f]; if (is.na(v) || v == "") character(0) else strsplit(v, ",")[[1]] }
d <- read.csv(file.path(dir, "data.csv"), check.names = FALSE)
out <- list()
put <- function(name, value) out[[name]] <<- num17(value)
num <- field("numeric"); keys <- field("keys"); w <- field("weight"); sens <- field("sensitive")
k <- as.integer(field("k"))
x <- d[, num, drop = FALSE]
xm <- read.csv(file.path(dir, "protected.csv"), check.names = FALSE)[, num, drop = FALSE]
t0 <- proc.time(); m <- mdav(x, variables = num, K = k); put("mdav_cpu_s", cpu(t0))
write.csv(m[, num, drop = FALSE], file.path(dir, "sdcmicro_mdav.csv"), row.names = FALSE)
put("dRisk", dRisk(x, xm = xm))
put("IL1s", dUtility(x, xm = xm, method = "IL1s"))
put("eigen", dUtility(x, xm = xm, method = "eigen"))
set.seed(1); put("robeigen", tryCatch(dUtility(x, xm = xm, method = "robeigen"), error = function(e) NA))
set.seed(1); rmd <- tryCatch(dRiskRMD(x, xm = xm), error = function(e) NULL)  # singular MCD: no figure
for (f in c("risk1", "risk2", "wrisk1", "wrisk2")) put(paste0("dRiskRMD_", f), if (is.null(rmd)) NA else rmd[[f]])
if (length(keys)) {
  wv <- if (length(w)) w else NULL
  mr <- measure_risk(d, keyVars = keys, w = wv)
  put("measure_risk_global_risk_ER", mr$global_risk_ER); put("measure_risk_global_risk", mr$global_risk)
  put("measure_risk_global_risk_pct", mr$global_risk_pct)
  fc <- freqCalc(d, keyVars = keys, w = wv)
  ex <- indivRisk(fc, method = "exact", survey = !is.null(wv))
  per <- data.frame(risk = num17(mr$Res[, "risk"]), fk = num17(mr$Res[, "fk"]), Fk = num17(mr$Res[, "Fk"]),
                    exact = num17(ex$rk))
  if (length(sens)) {
    ld <- ldiversity(d, keyVars = keys, ldiv_index = sens)
    per$distinct <- num17(ld[, paste0(sens, "_Distinct_Ldiversity")])
    per$entropy <- num17(ld[, paste0(sens, "_Entropy_Ldiversity")])
  }
  write.csv(per, file.path(dir, "sdcmicro_records.csv"), row.names = FALSE, quote = FALSE)
  t0 <- proc.time(); ls <- localSuppression(d[, keys, drop = FALSE], keyVars = keys, k = k)
  put("localSuppression_cpu_s", cpu(t0))
  before <- colSums(is.na(d[, keys, drop = FALSE])); after <- colSums(is.na(as.data.frame(ls$xAnon)[, keys, drop = FALSE]))
  for (kv in keys) put(paste0("localSuppression_", kv), after[[kv]] - before[[kv]])
  write.csv(as.data.frame(ls$xAnon)[, keys, drop = FALSE], file.path(dir, "sdcmicro_ls.csv"), row.names = FALSE)
}
writeLines(paste(names(out), unlist(out), sep = "\t"), file.path(dir, "results.tsv"))
"""

TIMING_R = r"""
args <- commandArgs(TRUE)
source(args[1]); sdc_load(args[2], args[3]); dir <- args[4]
x <- read.csv(file.path(dir, "X.csv"))
t0 <- proc.time(); m <- mdav(x, variables = colnames(x), K = 3); s <- cpu(t0)
write.csv(m, file.path(dir, "sdcmicro_mdav.csv"), row.names = FALSE)
writeLines(paste("mdav_cpu_s", num17(s), sep = "\t"), file.path(dir, "results.tsv"))
"""


def build(src: Path, build_dir: Path) -> Path:
    """sdcMicro's C++ compiled with Rcpp into one shared library (cached by the sources' hash)."""
    sources = sorted(p for p in (src / "src").rglob("*") if p.is_file())
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    work = build_dir / f"src-{digest}"
    so = (
        work / "sdcMicro.so"
    )  # the name R derives R_init_sdcMicro (the routines' registration) from
    if so.exists():
        return so
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(src / "src", work)
    include = subprocess.run(
        ["Rscript", "-e", 'cat(system.file("include", package="Rcpp"))'],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    objects = sorted(p.name for p in work.iterdir() if p.suffix in (".cpp", ".c"))
    env = {**os.environ, "PKG_CPPFLAGS": f"-I{include}"}
    proc = subprocess.run(
        ["R", "CMD", "SHLIB", "-o", "sdcMicro.so", *objects],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise SystemExit(f"compiling sdcMicro's C++ failed:\n{proc.stderr[-3000:]}")
    return so


def run_r(script: str, loader: Path, src: Path, so: Path, work: Path) -> dict:
    path = work / "run.R"
    path.write_text(script)
    proc = subprocess.run(
        ["Rscript", str(path), str(loader), str(src), str(so), str(work)],
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise SystemExit(f"R failed in {work}:\n{proc.stderr[-3000:]}")
    out = {}
    for line in (work / "results.tsv").read_text().splitlines():
        name, value = line.split("\t")
        out[name] = None if value == "NA" else float(value)  # R's NA: sdcMicro gave no figure
    return out


def write_spec(work: Path, **fields) -> None:
    lines = [
        f"{name}: {','.join(v) if isinstance(v, list) else ('' if v is None else v)}"
        for name, v in fields.items()
    ]
    (work / "spec.dcf").write_text("\n".join(lines) + "\n")


# --- microagg's side
# ----------------------------------------------------------------------------------


def microagg_figures(df: pd.DataFrame, protected: pd.DataFrame, case: dict, num: list) -> dict:
    """microagg's figures that carry sdcMicro's names, on the same inputs (what the tests
    recompute)."""
    X, Xp = df[num].to_numpy(np.float64), protected[num].to_numpy(np.float64)
    out = {
        "dRisk": D.sdid_risk(X, Xp),
        "IL1s": measures.il1s(X, Xp),
        "eigen": measures.eigen_sdcmicro(X, Xp),
    }
    keys = case["keys"]
    if keys:
        w = df[case["weight"]].to_numpy(np.float64) if case["weight"] else None
        approx = D.individual_risk(df, keys, w, missing="wildcard")
        out.update(
            {
                "measure_risk_global_risk_ER": approx.expected_reidentifications,
                "measure_risk_global_risk": approx.global_risk,
                "measure_risk_global_risk_pct": approx.global_risk_percent,
            }
        )
    return out


def exact_sums(sdc_exact: np.ndarray, ours: np.ndarray) -> dict:
    """sdcMicro's indivRisk(method="exact") overflows to NaN for large fk (its series in p^(1-fk));
    the sums are compared over the records where it gives a number."""
    finite = np.isfinite(sdc_exact)
    return {
        "indivRisk_exact_nan_records": int(np.count_nonzero(~finite)),
        "sdcmicro": float(sdc_exact[finite].sum()),
        "microagg": float(np.asarray(ours)[finite].sum()),
    }


def microagg_records(df: pd.DataFrame, case: dict) -> dict:
    keys = case["keys"]
    w = df[case["weight"]].to_numpy(np.float64) if case["weight"] else None
    approx = D.individual_risk(df, keys, w, missing="wildcard")
    exact = D.individual_risk(df, keys, w, method="exact", missing="wildcard")
    out = {"risk": approx.risk, "fk": approx.fk, "Fk": approx.Fk, "exact": exact.risk}
    if case["sensitive"]:
        ld = D.l_diversity(df, keys, [case["sensitive"]])[case["sensitive"]]
        out["distinct"], out["entropy"] = ld.distinct, ld.entropy
    return out


def microagg_rmd(X, Xp) -> dict:
    """microagg's own RMDID figures (their own names: not sdcMicro's, see docs/audit.md)."""
    try:
        r = D.rmd_interval_risk(X, Xp, seed=0)
        own = D.rmd_interval_risk(X, Xp, seed=0, scaling="own")
    except ValueError as exc:
        return {"note": str(exc)}
    return {
        "interval_rmd_risk1": r.risk1,
        "interval_rmd_risk2": r.risk2,
        "rmd_risk1_own_scaling": own.risk1,
        "rmd_risk2_own_scaling": own.risk2,
    }


def run_case(case: dict, df: pd.DataFrame, loader: Path, src: Path, so: Path, tmp: Path) -> dict:
    name = case["name"]
    num = numeric_columns(case, df)
    work = tmp / name
    work.mkdir()
    t = time.process_time()
    protected, labels = protected_by_microagg(df, num)
    microagg_mdav_cpu = time.process_time() - t
    df.to_csv(work / "data.csv", index=False)
    protected[num].to_csv(work / "protected.csv", index=False, float_format="%.17g")
    write_spec(
        work,
        numeric=num,
        keys=case["keys"],
        weight=case["weight"],
        sensitive=case["sensitive"],
        k=str(K),
    )
    sdc = run_r(CASE_R, loader, src, so, work)
    ours = microagg_figures(df, protected, case, num)
    if case["keys"]:
        per = pd.read_csv(work / "sdcmicro_records.csv")
        mine = microagg_records(df, case)
        sums = exact_sums(per["exact"].to_numpy(np.float64), mine["exact"])
        sdc["indivRisk_exact_sum_where_finite"] = sums["sdcmicro"]
        ours["indivRisk_exact_sum_where_finite"] = sums["microagg"]
    compared = {}
    for figure, value in ours.items():
        theirs = sdc.get(figure)
        diff = None if value is None or theirs is None else abs(float(value) - theirs)
        compared[figure] = {
            "sdcmicro": theirs,
            "microagg": value,
            "abs_diff": diff,
            "equal": diff is not None and diff <= TOLERANCE * max(1.0, abs(theirs)),
        }
        if figure == "eigen" and value is None and theirs is not None:
            compared[figure]["equal"] = None
            compared[figure]["note"] = (
                "the original's correlation matrix is singular: sdcMicro's figure divides by "
                "an eigenvalue that is rounding noise; microagg gives none"
            )
    row = {
        "case": name,
        "records": int(len(df)),
        "numeric": num,
        "keys": case["keys"],
        "weight": case["weight"],
        "sensitive": case["sensitive"],
        "k": K,
        "figures": compared,
        "sdcmicro_only": {
            f: sdc[f]
            for f in (
                "robeigen",
                "dRiskRMD_risk1",
                "dRiskRMD_risk2",
                "dRiskRMD_wrisk1",
                "dRiskRMD_wrisk2",
            )
        },
        "microagg_own": microagg_rmd(
            df[num].to_numpy(np.float64), protected[num].to_numpy(np.float64)
        ),
    }
    theirs_mdav = pd.read_csv(work / "sdcmicro_mdav.csv")
    sdc_labels = rows_partition(theirs_mdav)
    row["mdav"] = {
        "sdcmicro_partition_sha256": partition_hash(sdc_labels),
        "microagg_partition_sha256": partition_hash(labels),
        "same_partition": partition_hash(sdc_labels) == partition_hash(labels),
        "same_up_to_identical_records": same_up_to_identical_records(
            df[num].to_numpy(np.float64),
            theirs_mdav[num].to_numpy(np.float64),
            protected[num].to_numpy(np.float64),
        ),
        "identical_original_records": int(df[num].duplicated(keep=False).sum()),
        "sdcmicro_groups": int(sdc_labels.max() + 1),
        "microagg_groups": int(labels.max() + 1),
        "sdcmicro_cpu_s": sdc["mdav_cpu_s"],
        "microagg_cpu_s": microagg_mdav_cpu,
    }
    if case["keys"]:
        row["indivRisk_exact_nan_records"] = sums["indivRisk_exact_nan_records"]
        # largest difference relative to max(1, |sdcMicro's value|), over the records where sdcMicro
        # gives a number
        row["records_max_rel_diff"] = {}
        for c in mine:
            theirs, value = per[c].to_numpy(np.float64), np.asarray(mine[c], np.float64)
            finite = np.isfinite(theirs)
            row["records_max_rel_diff"][c] = float(
                np.max(
                    np.abs(theirs[finite] - value[finite]) / np.maximum(1.0, np.abs(theirs[finite]))
                )
            )
        keys = case["keys"]
        t = time.process_time()
        plan = suppression.plan(df, keys, K)
        cpu = time.process_time() - t
        published = suppression.apply(df, plan)
        theirs_ls = pd.read_csv(work / "sdcmicro_ls.csv")
        row["local_suppression"] = {
            "k": K,
            "importance": list(plan.importance),
            "sdcmicro": {kv: int(sdc[f"localSuppression_{kv}"]) for kv in keys},
            "sdcmicro_total": int(sum(sdc[f"localSuppression_{kv}"] for kv in keys)),
            "sdcmicro_cpu_s": sdc["localSuppression_cpu_s"],
            "sdcmicro_k_anonymous": (
                D.key_frequencies(theirs_ls, keys, K, missing="wildcard").is_k_anonymous
            ),
            "microagg": plan.per_key,
            "microagg_total": plan.total,
            "microagg_cpu_s": cpu,
            "microagg_k_anonymous": (
                D.key_frequencies(published, keys, K, missing="wildcard").is_k_anonymous
            ),
        }
    return row


def timing(kinds, sizes, loader: Path, src: Path, so: Path, tmp: Path) -> list[dict]:
    from mdav_scaling import make_data

    rows = []
    for kind in kinds:
        for n in sizes:
            X = make_data(kind, n)
            work = tmp / f"timing-{kind}-{n}"
            work.mkdir()
            pd.DataFrame(X, columns=[f"v{j}" for j in range(X.shape[1])]).to_csv(
                work / "X.csv", index=False, float_format="%.17g"
            )
            X = pd.read_csv(work / "X.csv").to_numpy(np.float64)  # both sides read the same numbers
            load_before = os.getloadavg()[0]
            sdc = run_r(TIMING_R, loader, src, so, work)
            microagg.methods.load_kernels(
                "mdav", X.shape
            )  # warm: the kernels of this size loaded first
            t = time.process_time()
            res = microagg.microaggregate(X, k=3, method="mdav", audit=False)
            ours = time.process_time() - t
            load_after = os.getloadavg()[0]
            theirs = rows_partition(pd.read_csv(work / "sdcmicro_mdav.csv"))
            rows.append(
                {
                    "data": kind,
                    "n": n,
                    "sdcmicro_cpu_s": sdc["mdav_cpu_s"],
                    "microagg_cpu_s": ours,
                    "ratio": sdc["mdav_cpu_s"] / ours if ours else None,
                    "same_partition": partition_hash(theirs) == partition_hash(res.labels),
                    "sdcmicro_groups": int(theirs.max() + 1),
                    "microagg_groups": int(res.labels.max() + 1),
                    "load_before": round(load_before, 2),
                    "load_after": round(load_after, 2),
                }
            )
            print(rows[-1], flush=True)
    return rows


def markdown(doc: dict) -> str:
    lines = [
        (
            f"sdcMicro {doc['sdcmicro']['version']} (its own R and C++ code, compiled here with"
            f" Rcpp; {doc['sdcmicro']['r']}) against microagg on the same inputs: the protected"
            f" file is microagg's MDAV (k = {K}) for both. Equal: within {TOLERANCE:g} (relative to"
            " max(1, |figure|))."
        ),
        "",
    ]
    rows = []
    for case in doc["cases"]:
        for figure, f in case["figures"].items():
            rows.append(
                [
                    case["case"],
                    figure,
                    f"{f['sdcmicro']:.12g}" if f["sdcmicro"] is not None else "NA",
                    f"{f['microagg']:.12g}" if f["microagg"] is not None else "None",
                    "" if f["abs_diff"] is None else f"{f['abs_diff']:.1e}",
                    "yes" if f["equal"] else ("not comparable" if f["equal"] is None else "NO"),
                ]
            )
    lines += [
        "## Figures carrying sdcMicro's name",
        "",
        md_table(["data", "figure", "sdcMicro", "microagg", "abs diff", "equal"], rows),
        "",
    ]
    rows = [
        [c["case"]]
        + [f"{v:.2e}" for v in c["records_max_rel_diff"].values()]
        + [c["indivRisk_exact_nan_records"]]
        for c in doc["cases"]
        if "records_max_rel_diff" in c
    ]
    names = next(
        (list(c["records_max_rel_diff"]) for c in doc["cases"] if "records_max_rel_diff" in c), []
    )
    lines += [
        (
            "## Per record (measure_risk risk, fk, Fk; indivRisk exact; ldiversity distinct,"
            " entropy): largest difference relative to max(1, |sdcMicro's|)"
        ),
        "",
        (
            'sdcMicro\'s `indivRisk(method="exact")` overflows to NaN for large fk; those records'
            " are left out of the comparison (last column)."
        ),
        "",
        md_table(["data"] + names + ["records where sdcMicro's exact risk is NaN"], rows),
        "",
    ]

    def g(v):
        return "NA" if v is None else f"{v:.6g}"

    rows = [
        [
            c["case"],
            g(c["sdcmicro_only"]["dRiskRMD_risk1"]),
            g(c["sdcmicro_only"]["dRiskRMD_risk2"]),
            g(c["sdcmicro_only"]["robeigen"]),
            *(
                f"{c['microagg_own'].get(x, float('nan')):.6g}"
                for x in ("interval_rmd_risk1", "interval_rmd_risk2", "rmd_risk1_own_scaling")
            ),
        ]
        for c in doc["cases"]
    ]
    lines += [
        (
            "## Robust figures: sdcMicro's (randomised MCD, set.seed(1)) beside microagg's own"
            " (other names)"
        ),
        "",
        md_table(
            [
                "data",
                "dRiskRMD risk1",
                "dRiskRMD risk2",
                "robeigen",
                "microagg interval_rmd_risk1",
                "microagg interval_rmd_risk2",
                "microagg RMDID1, own scaling",
            ],
            rows,
        ),
        "",
    ]
    rows = [
        [
            c["case"],
            c["records"],
            c["mdav"]["sdcmicro_groups"],
            c["mdav"]["microagg_groups"],
            "yes" if c["mdav"]["same_partition"] else "no",
            "yes" if c["mdav"]["same_up_to_identical_records"] else "no",
            c["mdav"]["identical_original_records"],
            f"{c['mdav']['sdcmicro_cpu_s']:.3f}",
            f"{c['mdav']['microagg_cpu_s']:.3f}",
        ]
        for c in doc["cases"]
    ]
    lines += [
        "## MDAV partitions (k = 3)",
        "",
        (
            "sdcMicro's groups are the records sharing a published row (groups whose means coincide"
            " merge). 'Same released file': the same (original record, published record) pairs, as"
            " multisets: partitions may differ only in which of two identical original records"
            " joins which group (a tie)."
        ),
        "",
        md_table(
            [
                "data",
                "n",
                "sdcMicro groups",
                "microagg groups",
                "same partition",
                "same released file",
                "identical original records",
                "sdcMicro CPU s",
                "microagg CPU s (API call)",
            ],
            rows,
        ),
        "",
    ]
    rows = []
    for c in doc["cases"]:
        ls = c.get("local_suppression")
        if ls:
            rows.append(
                [
                    c["case"],
                    ", ".join(c["keys"]),
                    ls["k"],
                    ls["sdcmicro_total"],
                    ls["microagg_total"],
                    ", ".join(f"{k} {v}" for k, v in ls["sdcmicro"].items()),
                    ", ".join(f"{k} {v}" for k, v in ls["microagg"].items()),
                    f"{ls['sdcmicro_cpu_s']:.2f}",
                    f"{ls['microagg_cpu_s']:.2f}",
                    f"{ls['sdcmicro_k_anonymous']} / {ls['microagg_k_anonymous']}",
                ]
            )
    lines += [
        "## Local suppression (default importance: fewer categories more important)",
        "",
        md_table(
            [
                "data",
                "keys",
                "k",
                "sdcMicro suppressions",
                "microagg suppressions",
                "sdcMicro per key",
                "microagg per key",
                "sdcMicro CPU s",
                "microagg CPU s",
                "k-anonymous (sdcMicro / microagg)",
            ],
            rows,
        ),
        "",
    ]
    if doc["mdav_timing"]:
        rows = [
            [
                r["data"],
                r["n"],
                f"{r['sdcmicro_cpu_s']:.2f}",
                f"{r['microagg_cpu_s']:.2f}",
                f"{r['ratio']:.1f}",
                "yes" if r["same_partition"] else "no",
                f"{r['load_before']} / {r['load_after']}",
            ]
            for r in doc["mdav_timing"]
        ]
        lines += [
            (
                "## MDAV side by side (k = 3, CPU seconds in one run; microagg warm: kernels"
                " compiled before)"
            ),
            "",
            md_table(
                [
                    "data",
                    "n",
                    "sdcMicro mdav() CPU s",
                    "microagg CPU s",
                    "sdcMicro ÷ microagg",
                    "same partition",
                    "load before / after",
                ],
                rows,
            ),
            "",
        ]
        dates = sorted({r["measured_utc"] for r in doc["mdav_timing"] if "measured_utc" in r})
        if dates:
            lines += [
                f"(Side by side measured on {', '.join(dates)} UTC and kept with --keep-timing.)",
                "",
            ]
    return "\n".join(lines)


DOCS = Path(__file__).resolve().parent.parent / "docs"


def suppression_table(doc: dict) -> str:
    rows = []
    for c in doc["cases"]:
        ls = c.get("local_suppression")
        if ls:
            rows.append(
                [
                    c["case"],
                    c["records"],
                    ", ".join(c["keys"]),
                    ls["k"],
                    ls["sdcmicro_total"],
                    ls["microagg_total"],
                    f"{ls['sdcmicro_cpu_s']:.2f}",
                    f"{ls['microagg_cpu_s']:.2f}",
                ]
            )
    return md_table(
        [
            "data",
            "records",
            "keys",
            "k",
            "sdcMicro localSuppression: values suppressed",
            "microagg: values suppressed",
            "sdcMicro CPU s",
            "microagg CPU s",
        ],
        rows,
    )


def render(doc: dict) -> None:
    """The docs' blocks from the committed results: the whole report in docs/sdcmicro.md, the
    local-suppression table in docs/local-suppression.md (between their markers)."""
    meta = doc["machine"]
    stamp = (
        f"_From `benchmarks/results/sdcmicro_parity.json` ({meta['date_utc']} UTC, {meta['cpus']}"
        f" cores, load {meta['load_start'][0]} at the start, {meta['load_end'][0]} at the"
        " end)._\n\n"
    )
    for name, marker, text in (
        ("sdcmicro.md", "sdcmicro-parity", markdown(doc)),
        ("local-suppression.md", "suppression-parity", suppression_table(doc)),
    ):
        path = DOCS / name
        body = path.read_text()
        start, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
        if start not in body or end not in body:
            raise SystemExit(f"{path} has no {start} ... {end} block")
        head, rest = body.split(start, 1)
        _, tail = rest.split(end, 1)
        path.write_text(f"{head}{start}\n{stamp}{text.rstrip()}\n{end}{tail}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--render", action="store_true", help="only write the docs' blocks from the committed JSON"
    )
    ap.add_argument("--sdcmicro-src", type=Path, help="source snapshot of sdcTools/sdcMicro")
    ap.add_argument(
        "--build-dir", type=Path, default=Path(tempfile.gettempdir()) / "sdcmicro-build"
    )
    ap.add_argument("--sizes", default="1e4,3e4", help="MDAV side by side: records ('' to skip)")
    ap.add_argument("--kinds", default="census,gauss")
    ap.add_argument(
        "--keep-timing",
        action="store_true",
        help=(
            "with --sizes '': keep the committed MDAV side by "
            "side rows (each row keeps its loads and the date it was measured)"
        ),
    )
    ap.add_argument("--cases", default=",".join(c["name"] for c in CASES))
    args = ap.parse_args(argv)
    if args.render:
        render(json.loads((RESULTS / "sdcmicro_parity.json").read_text()))
        return
    if args.sdcmicro_src is None:
        ap.error("--sdcmicro-src DIR is required (or --render)")
    src = args.sdcmicro_src.resolve()
    if not (src / "DESCRIPTION").is_file() or not (src / "src").is_dir():
        raise SystemExit(f"{src} is not a source snapshot of sdcMicro (no DESCRIPTION or src/)")
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
    wanted = set(args.cases.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        free1 = tmp / "free1.csv"
        subprocess.run(
            [
                "Rscript",
                "-e",
                (
                    f'load("{src / "data" / "free1.rda"}"); '
                    f'write.csv(as.data.frame(free1), "{free1}", row.names=FALSE)'
                ),
            ],
            check=True,
        )
        cases = []
        for case in CASES:
            if case["name"] not in wanted:
                continue
            df = case_data(case, free1)
            t = time.time()
            cases.append(run_case(case, df, loader, src, so, tmp))
            print(f"{case['name']}: {time.time() - t:.1f} s", flush=True)
        sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
        mdav_timing = timing(args.kinds.split(","), sizes, loader, src, so, tmp) if sizes else []
        if not sizes and args.keep_timing and (RESULTS / "sdcmicro_parity.json").exists():
            previous = json.loads((RESULTS / "sdcmicro_parity.json").read_text())
            mdav_timing = [
                {**r, "measured_utc": r.get("measured_utc", previous["machine"]["date_utc"])}
                for r in previous.get("mdav_timing", [])
            ]
    load_end = os.getloadavg()
    doc = {
        "machine": {
            **machine(),
            "load_start": [round(x, 2) for x in load_start],
            "load_end": [round(x, 2) for x in load_end],
        },
        "command": (
            "python benchmarks/sdcmicro_parity.py --sdcmicro-src DIR"
            + (f" --sizes {args.sizes}" if args.sizes != "1e4,3e4" else "")
            + (" --keep-timing" if args.keep_timing else "")
        ),
        "sdcmicro": {"version": version, "r": r_version},
        "tolerance": TOLERANCE,
        "cases": cases,
        "mdav_timing": mdav_timing,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "sdcmicro_parity.json").write_text(json.dumps(doc, indent=1, default=float) + "\n")
    meta = doc["machine"]
    text = markdown(doc)
    (RESULTS / "sdcmicro_parity.md").write_text(
        f"_Produced by `{doc['command']}` on {meta['date_utc']} UTC, {meta['cpus']} cores, load"
        f" average {meta['load_start'][0]} at the start and {meta['load_end'][0]} at the end of the"
        f" run._\n\n{text}\n"
    )
    render(doc)
    print(text)


if __name__ == "__main__":
    main()
