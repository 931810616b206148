"""Privacy models by microaggregation on census, tarragona and eia (docs/privacy-models.md):

* t-closeness (Soria-Comas et al., TKDE 2015): information loss against t for each algorithm
  (merge, t-closeness-aware MDAV, t-closeness first, auto), k = 3, the last benchmark column the
  sensitive one, the others the QIs; the largest EMD of the published file beside;
* epsilon-DP (VLDB J 2014 insensitive microaggregation; Information Fusion 2016 individual
  ranking): IL against epsilon for each mechanism, at k = 5, 25 and 100, with the bounds declared
  as each column's range, mean over SEEDS seeds; beside it the baseline of Laplace noise added record
  by record at the same epsilon (each attribute's share epsilon / d, scale d * range / epsilon);
* the attack that knows the method (Nin, Herranz & Torra 2008) against DBRL for MDAV, V-MDAV
  and ICSM at k = 3, 5, 10.

IL is 100 SSE / SST on the original's z-scores, the SSE to the published values. Run:
``PYTHONPATH=src python benchmarks/privacy_models.py`` (about a minute per data set on a quiet
core); it writes results/privacy_models.{json,md} and the block in docs/privacy-models.md.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _common import md_table, update_readme, write_results

import microagg
from microagg.datasets import benchmark_columns

DATA = ("census", "tarragona", "eia")
T_VALUES = (0.05, 0.1, 0.15, 0.2, 0.3)
T_ALGORITHMS = ("merge", "mdav", "first", "auto")
EPSILONS = (0.1, 1.0, 10.0, 100.0)
DP_K = (5, 25, 100)
SEEDS = 5
ATTACK_METHODS = ("mdav", "vmdav", "icsm")
ATTACK_K = (3, 5, 10)


def _il(original: np.ndarray, published: np.ndarray) -> float:
    """100 SSE / SST on the original's z-scores."""
    mean, sd = original.mean(axis=0), original.std(axis=0)
    sd[sd == 0] = 1.0
    Z, Zp = (original - mean) / sd, (published - mean) / sd
    return float(100.0 * ((Z - Zp) ** 2).sum() / ((Z - Z.mean(axis=0)) ** 2).sum())


def t_closeness_rows(name: str) -> list[dict]:
    df = microagg.datasets.load(name)
    columns = benchmark_columns(name)
    sensitive, qis = columns[-1], columns[:-1]
    rows = []
    for t in T_VALUES:
        for algorithm in T_ALGORITHMS:
            start = time.process_time()
            res = microagg.microaggregate(
                df,
                3,
                columns=qis,
                sensitive=sensitive,
                t_closeness=t,
                t_closeness_algorithm=algorithm,
            )
            (model,) = res.method_facts["privacy_models"]
            rows.append(
                {
                    "data": name,
                    "sensitive": sensitive,
                    "t": t,
                    "algorithm": algorithm,
                    "chosen": model["algorithm"],
                    "il": res.information_loss,
                    "largest_emd": res.audit["tcloseness_largest_emd"],
                    "groups": int(res.labels.max()) + 1,
                    "cpu_seconds": time.process_time() - start,
                }
            )
    return rows


def _laplace_baseline(X: np.ndarray, epsilon: float, seed: int) -> np.ndarray:
    """Record-level Laplace noise: each value + Laplace(d * range / epsilon)."""
    ranges = X.max(axis=0) - X.min(axis=0)
    rng = np.random.default_rng(seed)
    return X + rng.laplace(0.0, X.shape[1] * ranges / epsilon, size=X.shape)


def dp_rows(name: str) -> list[dict]:
    df = microagg.datasets.load(name)
    columns = benchmark_columns(name)
    X = df[columns].to_numpy(dtype=float)
    bounds = {c: (float(df[c].min()), float(df[c].max())) for c in columns}
    rows = []
    for epsilon in EPSILONS:
        base = [_il(X, _laplace_baseline(X, epsilon, s)) for s in range(SEEDS)]
        rows.append(
            {
                "data": name,
                "epsilon": epsilon,
                "mechanism": "record-level Laplace",
                "k": None,
                "il": float(np.mean(base)),
            }
        )
        for mechanism, method in (
            ("insensitive", "mdav"),
            ("individual-ranking", "individual-ranking"),
        ):
            for k in DP_K:
                ils = []
                for seed in range(SEEDS):
                    res = microagg.microaggregate(
                        df,
                        k,
                        method=method,
                        columns=columns,
                        seed=seed,
                        epsilon=epsilon,
                        dp_mechanism=mechanism,
                        bounds=bounds,
                        continuous=columns,
                        audit=False,
                    )
                    ils.append(_il(X, res.data[columns].to_numpy(dtype=float)))
                rows.append(
                    {
                        "data": name,
                        "epsilon": epsilon,
                        "mechanism": mechanism,
                        "k": k,
                        "il": float(np.mean(ils)),
                    }
                )
    return rows


def attack_rows(name: str) -> list[dict]:
    df = microagg.datasets.load(name)
    columns = benchmark_columns(name)
    rows = []
    for method in ATTACK_METHODS:
        for k in ATTACK_K:
            res = microagg.microaggregate(df, k, method=method, columns=columns, continuous=columns)
            a = res.audit
            rows.append(
                {
                    "data": name,
                    "method": method,
                    "k": k,
                    "il": res.information_loss,
                    "dbrl": a["record_linkage_dbrl"],
                    "method_aware": a["record_linkage_method_aware"],
                }
            )
    return rows


def _label(row: dict) -> str:
    return row["mechanism"] if row["k"] is None else f"{row['mechanism']} k={row['k']}"


def _tables(t_rows, dp, attack) -> str:
    il_t = {(r["data"], r["t"], r["algorithm"]): r for r in t_rows}
    t_table = md_table(
        ["data (sensitive)", "t", *T_ALGORITHMS, "chosen by auto", "largest EMD (auto)"],
        [
            [f"{d} ({il_t[d, t, 'auto']['sensitive']})", t]
            + [f"{il_t[d, t, a]['il']:.2f}" for a in T_ALGORITHMS]
            + [il_t[d, t, "auto"]["chosen"], f"{il_t[d, t, 'auto']['largest_emd']:.4f}"]
            for d in dict.fromkeys(r["data"] for r in t_rows)
            for t in T_VALUES
        ],
    )
    heads = ["record-level Laplace"] + [
        f"{m} k={k}" for m in ("insensitive", "individual-ranking") for k in DP_K
    ]
    il_dp = {(r["data"], r["epsilon"], _label(r)): r["il"] for r in dp}
    dp_table = md_table(
        ["data", "epsilon", *heads],
        [
            [d, e] + [f"{il_dp[d, e, h]:.4g}" for h in heads]
            for d in dict.fromkeys(r["data"] for r in dp)
            for e in EPSILONS
        ],
    )
    attack_table = md_table(
        ["data", "method", "k", "IL", "DBRL %", "knowing the method %"],
        [
            [
                r["data"],
                r["method"],
                r["k"],
                f"{r['il']:.2f}",
                f"{100 * r['dbrl']:.2f}",
                f"{100 * r['method_aware']:.2f}",
            ]
            for r in attack
        ],
    )
    return (
        "IL (%) against t, k = 3 (the last benchmark column sensitive, the others QIs):\n\n"
        f"{t_table}\n\nIL (%) against epsilon, mean of {SEEDS} seeds (bounds: each column's "
        f"range):\n\n{dp_table}\n\nRecord linkage, DBRL and the intruder who knows the method:"
        f"\n\n{attack_table}\n"
    )


def main(names=DATA) -> None:
    t_rows, dp, attack = [], [], []
    for name in names:
        t_rows += t_closeness_rows(name)
        dp += dp_rows(name)
        attack += attack_rows(name)
        print(f"{name} done", file=sys.stderr)
    text = _tables(t_rows, dp, attack)
    write_results("privacy_models", t_rows + dp + attack, text)
    update_readme("privacy-models", text)


if __name__ == "__main__":
    main(tuple(sys.argv[1:]) or DATA)
