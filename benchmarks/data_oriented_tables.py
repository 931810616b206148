"""Reproduce the layout of Tables 1–4 of the data-oriented paper (Domingo-Ferrer & Mateo-Sanz) on
tarragona.

Run: python benchmarks/data_oriented_tables.py  [--seeds N]
Writes benchmarks/results/data_oriented_tables.md and .json. Every number under "ours" is computed
here; the numbers under "paper" are the published ones, typed in below as the reference (PAPER_*).

Definitions used (the paper's):
- 100·L with L = SSE/SST (expression (5)). Tables 1–2: individual ranking, L per variable on that
  variable alone (scale-free). Tables 3–4: one partition of the records, L on the 13 standardised
  variables (z-scores, as §5.3 says).
- Tables 1–2 run the registered 'individual-ranking' method with univariate = F: fixed-size groups
  of k with the larger group around the modal value ('univariate-fixed', placement='mode'); k-W:
  'kward'; A / M: 'genetic' with criterion 'A' / 'M' (seed 0, from which individual-ranking draws
  one
  seed per column; the spread over seeds 0..N−1 of direct runs is reported separately, the paper
  gives one run).
- Δr, s_Δr: mean and standard deviation of the 78 |r'_ij − r_ij|; ΔW: mean % change of the
  variables' weights on the first principal component; %FPC: % of the variability explained by
  the first principal component (measures.correlation_discrepancy, pc_weight_change,
  fpc_variance_percent).
- PF / Pk-W: 'projected' with univariate 'univariate-fixed' (placement='mode') / 'kward';
  UF: 'md' (Algorithm 2); Uk-W: 'kward' on the unprojected data with criterion pv/sz/fpc/md.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import time
from pathlib import Path

import numpy as np

import microagg
from microagg import measures
from microagg.labels import aggregate, check_partition
from microagg.measures import information_loss
from microagg.methods.kward import projection_scores

registry = importlib.import_module("microagg.methods")

RESULTS = Path(__file__).resolve().parent / "results"
KS = (3, 4)

# ----------------------------------------------------------------------------------------------
# PAPER'S PUBLISHED NUMBERS (Domingo-Ferrer & Mateo-Sanz, IEEE TKDE 14(1), 2002), typed in as the
# reference. Table 1: 100·L per variable V1..V13 for F, k-W, A, M.
PAPER_TABLE1 = {
    3: {
        "F": [7.15, 0.64, 0.52, 1.49, 1.69, 0.48, 1.97, 0.42, 1.29, 1.75, 2.58, 4.15, 5.01],
        "k-W": [7.18, 0.56, 0.78, 1.49, 2.02, 0.59, 1.92, 0.34, 1.29, 1.91, 2.97, 4.75, 4.96],
        "A": [7.14, 0.56, 0.52, 1.49, 1.69, 0.48, 1.93, 0.27, 1.29, 1.75, 2.54, 4.14, 4.98],
        "M": [7.14, 0.58, 0.51, 1.49, 1.69, 0.48, 1.92, 0.27, 1.29, 1.75, 2.56, 4.15, 5.01],
    },
    4: {
        "F": [9.26, 1.01, 1.14, 2.78, 2.11, 0.70, 3.39, 0.59, 2.80, 2.66, 3.20, 5.61, 6.68],
        "k-W": [9.48, 0.95, 1.15, 3.21, 2.11, 0.79, 3.39, 0.56, 2.90, 2.67, 3.18, 5.60, 6.68],
        "A": [9.26, 0.81, 1.14, 2.77, 2.11, 0.70, 3.39, 0.56, 2.79, 2.66, 3.20, 5.60, 6.65],
        "M": [9.26, 0.81, 1.14, 2.78, 2.11, 0.70, 3.39, 0.56, 2.79, 2.66, 3.20, 5.61, 6.68],
    },
}
# Table 2: (Δr, s_Δr, ΔW, %FPC) of individual ranking; original data %FPC = 63.4.
PAPER_TABLE2 = {
    3: {
        "F": (0.0251, 0.0208, 1.7680, 64.3),
        "k-W": (0.0241, 0.0203, 1.7164, 64.3),
        "A": (0.0277, 0.0213, 1.9676, 64.7),
        "M": (0.0269, 0.0213, 1.9481, 64.5),
    },
    4: {
        "F": (0.0237, 0.0193, 1.6013, 63.9),
        "k-W": (0.0254, 0.0206, 1.6322, 63.9),
        "A": (0.0251, 0.0202, 1.6456, 64.0),
        "M": (0.0249, 0.0203, 1.6251, 64.0),
    },
}
PAPER_FPC_ORIGINAL = 63.4
# Table 3: 100·L of multivariate methods (ranges for PV: best – worst variable; "a or b":
# ascending or descending ranking; MD range: choice of the "first" extreme).
PAPER_TABLE3 = {
    "PF(PV)": ("30.11 - 48.48", "34.14 - 57.0"),
    "PF(SZ)": ("28.92", "32.15 or 32.08"),
    "PF(FPC)": ("23.87 or 23.89", "30.62 or 25.99"),
    "Pk-W(PV)": ("31.17 - 53.93", "35.28 - 58.23"),
    "Pk-W(SZ)": ("30.13", "32.56"),
    "Pk-W(FPC)": ("25.35", "31.71"),
    "UF": ("15.60", "19.27"),
    "Uk-W(PV)": ("16.23 - 21.61", "20.46 - 29.45"),
    "Uk-W(SZ)": ("19.16", "24.31"),
    "Uk-W(FPC)": ("15.87", "21.58"),
    "Uk-W(MD)": ("16.01 - 16.75", "21.13 - 21.24"),
}
# Table 4: (Δr, s_Δr, ΔW, %FPC) of multivariate methods (PV: the best variable).
PAPER_TABLE4 = {
    3: {
        "PF(PV)": (0.20, 0.08, 11.7, 81.4),
        "PF(SZ)": (0.24, 0.10, 14.5, 84.3),
        "PF(FPC)": (0.20, 0.09, 13.1, 81.3),
        "Pk-W(PV)": (0.21, 0.09, 12.3, 82.4),
        "Pk-W(SZ)": (0.26, 0.10, 14.1, 86.0),
        "Pk-W(FPC)": (0.22, 0.10, 14.1, 83.0),
        "UF": (0.10, 0.05, 7.1, 71.9),
        "Uk-W(PV)": (0.10, 0.06, 8.0, 72.6),
        "Uk-W(SZ)": (0.13, 0.06, 9.1, 74.7),
        "Uk-W(FPC)": (0.10, 0.06, 8.0, 72.6),
        "Uk-W(MD)": (0.10, 0.05, 7.9, 72.1),
    },
    4: {
        "PF(PV)": (0.26, 0.12, 15.7, 85.8),
        "PF(SZ)": (0.28, 0.11, 15.0, 88.0),
        "PF(FPC)": (0.22, 0.10, 13.4, 82.9),
        "Pk-W(PV)": (0.27, 0.13, 16.6, 86.9),
        "Pk-W(SZ)": (0.19, 0.12, 15.3, 88.9),
        "Pk-W(FPC)": (0.30, 0.12, 16.6, 90.0),
        "UF": (0.12, 0.06, 8.1, 73.7),
        "Uk-W(PV)": (0.13, 0.07, 9.5, 75.1),
        "Uk-W(SZ)": (0.18, 0.07, 10.6, 79.2),
        "Uk-W(FPC)": (0.15, 0.07, 9.9, 76.7),
        "Uk-W(MD)": (0.14, 0.06, 9.5, 75.8),
    },
}
# ----------------------------------------------------------------------------------------------

UNIVARIATE = {  # Table 1 / 2 columns -> (method, params)
    "F": ("univariate-fixed", {"placement": "mode"}),
    "k-W": ("kward", {}),
    "A": ("genetic", {"criterion": "A"}),
    "M": ("genetic", {"criterion": "M"}),
}


def zscores(X):
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)


def fit(name, X, k, seed=0, **params):
    """Validated labels and seconds of one method run."""
    t0 = time.perf_counter()
    out = registry.run(name, X, k, seed=seed, **params)
    seconds = time.perf_counter() - t0
    return check_partition(out.labels, len(X), k, name), seconds


def utility(X, labels):
    """(Δr, s_Δr, ΔW, %FPC, s_Δr with ddof 0) of the microaggregated data."""
    protected = aggregate(X, labels)
    dr, sdr = measures.correlation_discrepancy(X, protected)
    pairs = X.shape[1] * (X.shape[1] - 1) // 2
    sdr_population = sdr * np.sqrt(
        (pairs - 1) / pairs
    )  # measures uses ddof=1; the paper's figures fit ddof=0
    return (
        dr,
        sdr,
        measures.pc_weight_change(X, protected),
        measures.fpc_variance_percent(protected),
        sdr_population,
    )


def table1_2(Z, seeds):
    """Individual ranking on each standardised variable; L per variable; utility of the whole
    file."""
    n, d = Z.shape
    out = {}
    for k in KS:
        il = {col: [] for col in UNIVARIATE}
        il["optimal"] = []
        labels2d, seconds = {}, {}
        ga_spread = {"A": [], "M": []}
        for col, (name, params) in UNIVARIATE.items():  # the registered individual-ranking method
            labels2d[col], seconds[col] = fit(
                "individual-ranking", Z, k, univariate=name, univariate_params=params
            )
        for j in range(d):
            x = Z[:, [j]]
            for col in UNIVARIATE:
                il[col].append(information_loss(x, labels2d[col][:, j], standardize=False))
            il["optimal"].append(
                information_loss(x, fit("univariate-optimal", x, k)[0], standardize=False)
            )
            for col in ("A", "M"):
                vals = [
                    information_loss(
                        x, fit("genetic", x, k, seed=s, criterion=col)[0], standardize=False
                    )
                    for s in range(seeds)
                ]
                ga_spread[col].append((min(vals), float(np.median(vals)), max(vals)))
        util = {col: utility(Z, labels2d[col]) for col in UNIVARIATE}
        out[k] = {"il": il, "utility": util, "seconds": seconds, "ga_spread": ga_spread}
    return out


def multivariate_runs(Z):
    """Every Table 3/4 configuration: name -> list of (label text, IL, utility, seconds)."""
    d = Z.shape[1]
    F = {"univariate": "univariate-fixed", "univariate_params": {"placement": "mode"}}
    KW = {"univariate": "kward"}
    out = {}
    for k in KS:
        rows = {}

        def add(row, label, name, **params):
            lab, sec = fit(name, Z, k, **params)
            rows.setdefault(row, []).append(
                (label, information_loss(Z, lab, standardize=False), utility(Z, lab), sec)
            )

        for row, base in (("PF", F), ("Pk-W", KW)):
            for j in range(d):
                add(f"{row}(PV)", f"V{j + 1}", "projected", projection="pv", variable=j, **base)
            for proj in ("sz", "fpc"):
                for order in ("ascending", "descending"):
                    add(
                        f"{row}({proj.upper()})",
                        order,
                        "projected",
                        projection=proj,
                        order=order,
                        **base,
                    )
        # classical fixed size on the projection ([3, 6, 7]): groups of k in ranking order, the
        # remainder joins the LAST group; not a registered method, computed here for comparison
        for j in range(d):  # both ranking directions: the remainder lands at either end
            add_classic(
                rows, "PF(PV) classic", f"V{j + 1} ascending", Z, k, projection_scores(Z, "pv", j)
            )
            add_classic(
                rows, "PF(PV) classic", f"V{j + 1} descending", Z, k, -projection_scores(Z, "pv", j)
            )
        for proj in ("sz", "fpc"):
            scores = projection_scores(Z, proj)
            add_classic(rows, f"PF({proj.upper()}) classic", "ascending", Z, k, scores)
            add_classic(rows, f"PF({proj.upper()}) classic", "descending", Z, k, -scores)
        add("UF", "grow=centroid, start=best (default)", "md")
        add("UF", "grow=seed, start=r (literal Algorithm 2)", "md", grow="seed", start="r")
        for j in range(d):
            add("Uk-W(PV)", f"V{j + 1}", "kward", criterion="pv", variable=j)
        for crit in ("sz", "fpc", "md"):
            for order in ("ascending", "descending"):
                add(f"Uk-W({crit.upper()})", order, "kward", criterion=crit, order=order)
        for order in ("ascending", "descending"):
            add(
                "Uk-W(MD) grow=centroid",
                order,
                "kward",
                criterion="md",
                order=order,
                grow="centroid",
            )
        out[k] = rows
    return out


def add_classic(rows, row, label, Z, k, scores):
    """Classical fixed-size grouping of the ranked scores: groups of k, the remainder in the last
    group."""
    n = len(Z)
    ranked = np.argsort(scores, kind="stable")
    labels = np.empty(n, dtype=np.int64)
    labels[ranked] = np.minimum(np.arange(n) // k, n // k - 1)
    labels = check_partition(labels, n, k, row)
    rows.setdefault(row, []).append(
        (label, information_loss(Z, labels, standardize=False), utility(Z, labels), 0.0)
    )


def il_text(entries):
    """Table 3 cell: a range (best – worst) over the variants, or one value when they agree to
    0.01."""
    vals = [e[1] for e in entries]
    lo, hi = min(vals), max(vals)
    if round(lo, 2) == round(hi, 2):
        return f"{lo:.2f}"
    if len(entries) == 2 and entries[0][0] in ("ascending", "descending"):
        return f"{vals[0]:.2f} or {vals[1]:.2f}"
    return f"{lo:.2f} - {hi:.2f}"


def timings_eia(seeds_unused=None):
    """Seconds of kward (each criterion) and of the univariate methods on eia, k = 3."""
    E = zscores(microagg.datasets.load("eia").to_numpy(dtype=float))
    rows = []
    for crit in ("md", "fpc", "sz", "pv"):
        lab, sec = fit("kward", E, 3, criterion=crit)
        rows.append((f"kward criterion={crit}", sec, information_loss(E, lab, standardize=False)))
    for name, params in (
        ("kward", {}),
        ("genetic", {"criterion": "A"}),
        ("genetic", {"criterion": "M"}),
        ("univariate-optimal", {}),
    ):
        lab, sec = fit(
            "projected", E, 3, projection="fpc", univariate=name, univariate_params=params
        )
        rows.append(
            (
                f"projected fpc + {name} {params or ''}".strip(),
                sec,
                information_loss(E, lab, standardize=False),
            )
        )
    return E.shape, rows


def notes(uni, multi, d):
    """Where ours differ from the paper and why (the counts are computed, the explanations are
    ours)."""
    exact = {
        k: {
            c: sum(round(uni[k]["il"][c][j], 2) == PAPER_TABLE1[k][c][j] for j in range(d))
            for c in UNIVARIATE
        }
        for k in KS
    }
    within = {
        k: sum(
            uni[k]["ga_spread"][c][j][0] - 0.005 <= PAPER_TABLE1[k][c][j]
            for c in ("A", "M")
            for j in range(d)
        )
        for k in KS
    }
    sdr_ok = sum(
        round(uni[k]["utility"][c][4], 4) == PAPER_TABLE2[k][c][1] for k in KS for c in ("F", "k-W")
    )
    out = ["\n## Where ours differ from the paper, and why\n"]
    out.append(
        "- **Table 1, F and k-W**: equal to the paper at two decimals for"
        f" {exact[3]['F']}+{exact[4]['F']} of 26 (F) and {exact[3]['k-W']}+{exact[4]['k-W']} of 26"
        " (k-W) variable/k cells, so our tarragona file is the paper's. F here is the paper's"
        " 'larger group around the modal value' (placement='mode'); the default placement='best'"
        " is never worse."
    )
    out.append(
        "- **Table 1, A and M (genetic)**: random, the paper reports one run. Our seed-0 values"
        " differ on a few variables; the paper's A/M figure is at or above our best seed (minus"
        f" 0.005) in {within[3]} of 26 cells for k = 3 and {within[4]} of 26 for k = 4. Our A and M"
        " coincide in most runs: the gains come in the first generations (crossover of the"
        " fixed-size string with random strings); a string whose groups all have k values cannot"
        " mutate (every flip breaks the k..2k−1 bounds), so the population fixes on one string and"
        " the convergence test stops early (M typically at generation 2, A after about 10–30)."
    )
    out.append(
        "- **Table 2**: Δr and %FPC equal the paper for F and k-W (same partitions). s_Δr with"
        f" ddof = 0 equals the paper in {sdr_ok} of 4 F/k-W cells, so the paper used the population"
        " standard deviation; `measures.correlation_discrepancy` uses ddof = 1. ΔW"
        " (`measures.pc_weight_change`: mean relative change of the first-PC eigenvector entries,"
        " in %) does not reproduce the paper's ΔW, whose exact formula the paper does not give;"
        " the A/M rows differ also because the partitions differ."
    )
    out.append(
        "- **Table 3**: Uk-W(PV/SZ/FPC), Pk-W(SZ/FPC), UF, PF(SZ) and PF(FPC) equal the paper. The"
        " paper's PF puts the remainder (834 = 208·4 + 2 for k = 4) in the last group of the"
        " ranking — the 'classic' rows, which reproduce both of its k = 4 ascending/descending"
        " figures for SZ and FPC; for k = 3 there is no remainder. Small differences in the PV"
        " ranges (PF, Pk-W) come from ties: several variables have many equal values (e.g. zeros),"
        " and which tied records share a group depends on their order (ours: file order, stable"
        " sort). Uk-W(MD): grow='centroid' gives exactly the paper's k = 4 range; for k = 3 the"
        " paper's range spans up to 2^m choices of the 'first' extreme over the m recursive calls,"
        " ours two consistent choices (ascending / descending), both inside it."
    )
    out.append(
        "- **Table 4**: Δr, s_Δr and %FPC equal the paper wherever our partition is the paper's."
        " Pk-W(SZ) k = 4 has Δr 0.19 in the paper but 0.29 here while s_Δr, %FPC and 100·L all"
        " agree: most likely a misprint. ΔW: see Table 2."
    )
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--seeds", type=int, default=20, help="GA seeds for the spread of A and M (default 20)"
    )
    args = parser.parse_args()
    df = microagg.datasets.load("tarragona")
    Z = zscores(df.to_numpy(dtype=float))
    n, d = Z.shape
    # warm up numba so timings exclude compilation
    for name in ("kward", "univariate-fixed", "genetic", "univariate-optimal"):
        fit(name, Z[:60, [0]], 3)
    fit("kward", Z[:60], 3)
    fit("md", Z[:60], 3)

    t_start = time.perf_counter()
    uni = table1_2(Z, args.seeds)
    multi = multivariate_runs(Z)
    eia_shape, eia_rows = timings_eia()
    total = time.perf_counter() - t_start
    fpc_orig = measures.fpc_variance_percent(Z)

    md = []
    md.append("# Data-oriented microaggregation: the paper's Tables 1–4 on tarragona\n")
    md.append(
        f"Produced by `python benchmarks/data_oriented_tables.py` (tarragona {n}×{d}, k = 3 and 4,"
        f" GA spread over {args.seeds} seeds). **paper** = Domingo-Ferrer & Mateo-Sanz, IEEE TKDE"
        " 14(1) 2002, typed into the script as the published reference; every other number is"
        " computed by the script. Timings on a shared, loaded 2-core machine"
        f" ({platform.processor() or platform.machine()}); whole script {total:.1f} s after numba"
        " warm-up.\n"
    )
    md.append(
        f"%FPC of the original standardised data: ours {fpc_orig:.1f}, paper"
        f" {PAPER_FPC_ORIGINAL}.\n"
    )

    md.append("## Table 1 — 100·L per variable, individual ranking (univariate methods)\n")
    md.append(
        "F = fixed-size, larger group around the mode; k-W = k-Ward; A / M = genetic, average /"
        " maximal fitness criterion, individual-ranking seed 0; opt = optimal univariate partition"
        " (not in the paper; a floor). Each cell: ours / paper.\n"
    )
    for k in KS:
        il = uni[k]["il"]
        md.append(f"\n**k = {k}**\n")
        md.append("| variable | F | k-W | A | M | opt |")
        md.append("|---|---|---|---|---|---|")
        for j in range(d):
            cells = [f"{il[c][j]:.2f} / {PAPER_TABLE1[k][c][j]:.2f}" for c in UNIVARIATE]
            md.append(f"| V{j + 1} | " + " | ".join(cells) + f" | {il['optimal'][j]:.2f} |")
        exact = {
            c: sum(round(il[c][j], 2) == PAPER_TABLE1[k][c][j] for j in range(d))
            for c in UNIVARIATE
        }
        md.append(
            "\nvariables equal to the paper at two decimals: "
            + ", ".join(f"{c} {exact[c]}/{d}" for c in UNIVARIATE)
            + "; seconds for all 13 variables: "
            + ", ".join(f"{c} {uni[k]['seconds'][c]:.3f}" for c in UNIVARIATE)
            + "\n"
        )
    md.append(
        "\n**Genetic methods over seeds 0..%d (min / median / max of 100·L)**\n" % (args.seeds - 1)
    )
    md.append("| variable | A k=3 | M k=3 | paper A, M k=3 | A k=4 | M k=4 | paper A, M k=4 |")
    md.append("|---|---|---|---|---|---|---|")
    for j in range(d):
        cells = []
        for k in KS:
            for c in ("A", "M"):
                lo, med, hi = uni[k]["ga_spread"][c][j]
                cells.append(f"{lo:.2f} / {med:.2f} / {hi:.2f}")
            cells.append(f"{PAPER_TABLE1[k]['A'][j]:.2f}, {PAPER_TABLE1[k]['M'][j]:.2f}")
        md.append(f"| V{j + 1} | " + " | ".join(cells) + " |")

    md.append(
        "\n## Table 2 — impact of individual ranking on correlations and the first principal"
        " component\n"
    )
    md.append(
        "s_Δr: `measures.correlation_discrepancy` (sample std, ddof = 1); s_Δr⁰: the same with ddof"
        " = 0 (population std), which is what the paper's figures fit. A and M: seed 0.\n"
    )
    md.append(
        "| method | k | Δr | s_Δr | s_Δr⁰ | ΔW | %FPC | paper Δr | paper s_Δr | paper ΔW | paper"
        " %FPC |"
    )
    md.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for k in KS:
        for c in UNIVARIATE:
            u = uni[k]["utility"][c]
            p = PAPER_TABLE2[k][c]
            md.append(
                f"| {c} | {k} | {u[0]:.4f} | {u[1]:.4f} | {u[4]:.4f} | {u[2]:.4f} | {u[3]:.1f} | "
                f"{p[0]:.4f} | {p[1]:.4f} | {p[2]:.4f} | {p[3]:.1f} |"
            )

    md.append("\n## Table 3 — 100·L of multivariate methods (13 standardised variables)\n")
    md.append(
        "PV: range best – worst variable; SZ, FPC: ascending or descending ranking (one figure when"
        " both agree); UF: the `md` method, default and literal readings; Uk-W(MD): first extreme"
        " taken in ascending / descending order (default grow='seed'; the grow='centroid' row grows"
        " the end groups by the record nearest to their mean). PF rows use `projected` with"
        " univariate-fixed (larger group around the mode); the 'classic' rows put the remainder in"
        " the last group in ranking order instead, as the fixed-size methods of [3, 6, 7] do"
        " (computed in the script, not a registered method).\n"
    )
    md.append("| method | ours k=3 | paper k=3 | ours k=4 | paper k=4 |")
    md.append("|---|---|---|---|---|")
    table3_rows = list(PAPER_TABLE3)
    for extra, after in (
        ("PF(PV) classic", "PF(FPC)"),
        ("PF(SZ) classic", "PF(PV) classic"),
        ("PF(FPC) classic", "PF(SZ) classic"),
        ("Uk-W(MD) grow=centroid", "Uk-W(MD)"),
    ):
        table3_rows.insert(table3_rows.index(after) + 1, extra)
    for row in table3_rows:
        paper_row = row.split(" ")[0]
        cells = []
        for i, k in enumerate(KS):
            entries = multi[k][row]
            if row == "UF":
                text = " ; ".join(
                    f"{e[1]:.2f} ({e[0].split(' (')[1].rstrip(')')})" for e in entries
                )
            else:
                text = il_text(entries)
            cells += [text, PAPER_TABLE3[paper_row][i]]
        md.append(f"| {row} | " + " | ".join(cells) + " |")

    md.append(
        "\n## Table 4 — impact of multivariate methods on correlations and the first principal"
        " component\n"
    )
    md.append(
        "PV: the variable with the lowest 100·L; SZ, FPC, MD: ascending; UF: the `md` default.\n"
    )
    md.append(
        "| method | k | Δr | s_Δr | ΔW | %FPC | paper Δr | paper s_Δr | paper ΔW | paper %FPC |"
    )
    md.append("|---|---|---|---|---|---|---|---|---|---|")
    for k in KS:
        for row in list(PAPER_TABLE4[k]) + ["Uk-W(MD) grow=centroid"]:
            entries = multi[k][row]
            e = min(entries, key=lambda t: t[1]) if row.endswith("(PV)") else entries[0]
            u, p = e[2], PAPER_TABLE4[k][row.split(" ")[0]]
            md.append(
                f"| {row} | {k} | {u[0]:.2f} | {u[1]:.2f} | {u[2]:.1f} | {u[3]:.1f} | "
                f"{p[0]:.2f} | {p[1]:.2f} | {p[2]:.1f} | {p[3]:.1f} |"
            )

    md.append(f"\n## Speed on eia ({eia_shape[0]}×{eia_shape[1]}, k = 3)\n")
    md.append("| run | seconds | 100·L |")
    md.append("|---|---|---|")
    for label, sec, il in eia_rows:
        md.append(f"| {label} | {sec:.2f} | {il:.3f} |")
    md.append("")

    md.extend(notes(uni, multi, d))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "data_oriented_tables.md").write_text("\n".join(md) + "\n")
    record = {
        "data": "tarragona",
        "n": n,
        "d": d,
        "seeds": args.seeds,
        "fpc_original": fpc_orig,
        "table1": {
            str(k): {c: uni[k]["il"][c] for c in list(UNIVARIATE) + ["optimal"]} for k in KS
        },
        "table1_genetic_spread": {str(k): uni[k]["ga_spread"] for k in KS},
        "table2": {str(k): {c: list(uni[k]["utility"][c]) for c in UNIVARIATE} for k in KS},
        "table3_4": {
            str(k): {
                row: [
                    {
                        "variant": e[0],
                        "il": e[1],
                        "dr": e[2][0],
                        "sdr": e[2][1],
                        "dw": e[2][2],
                        "fpc": e[2][3],
                        "sdr_ddof0": e[2][4],
                        "seconds": e[3],
                    }
                    for e in entries
                ]
                for row, entries in multi[k].items()
            }
            for k in KS
        },
        "eia_timings": [{"run": r[0], "seconds": r[1], "il": r[2]} for r in eia_rows],
        "paper": {
            "table1": PAPER_TABLE1,
            "table2": PAPER_TABLE2,
            "table3": PAPER_TABLE3,
            "table4": PAPER_TABLE4,
            "fpc_original": PAPER_FPC_ORIGINAL,
        },
        "total_seconds": total,
    }
    (RESULTS / "data_oriented_tables.json").write_text(
        json.dumps(record, indent=1, default=float) + "\n"
    )
    print("\n".join(md))


if __name__ == "__main__":
    main()
