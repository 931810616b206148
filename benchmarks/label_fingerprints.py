"""Fingerprints of every method's output, to show that a change keeps labels, IL and bounds.

Runs each registered method through the public API (``microagg.microaggregate``) on the 12
reference cells (census, tarragona, eia × k = 3, 4, 5, 10) with settings that do not depend on the
clock (no time limit; iteration caps where a method would otherwise run long), and MDAV on the
synthetic rows of the scaling table (census-like and Gaussian, 10^4–10^5). For every run it keeps
the SHA-256 of the labels (relabelled in order of first appearance, so a change of group ids alone
is not a change), IL, SSE and the lower bound where the method proves one.

    python benchmarks/label_fingerprints.py -o /tmp/before.json            # write
    python benchmarks/label_fingerprints.py --compare /tmp/before.json     # run again and compare
    python benchmarks/label_fingerprints.py --methods mdav,vmdav --quick   # a subset

``--compare`` exits 1 when a fingerprint differs and prints each difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CELLS = [(data, k) for data in ("census", "tarragona", "eia") for k in (3, 4, 5, 10)]

# Settings that make each method independent of the clock (and bounded in time on these cells).
SETTINGS: dict[str, dict] = {
    "mdav": {},
    "auto": {"improve": False, "parallel": False},
    "vmdav": {},
    "md": {},
    "kward": {},
    "projected": {},
    "individual-ranking": {},
    "mdav-mhm": {},
    "npn-mhm": {},
    "tsp-mhm": {"n_starts": 3},
    "mf-tsp": {"n_paths": 20},
    "icsm": {"max_iterations": 50},
    "lsearch": {"rounds": 10},
    "colgen": {"max_rounds": 8, "close_gap": False, "final_mip": False, "cuts": False},
}

SCALING_ROWS = [
    ("census", 10_000),
    ("census", 30_000),
    ("census", 100_000),
    ("gauss", 10_000),
    ("gauss", 30_000),
    ("gauss", 100_000),
]


def labels_hash(labels) -> str:
    import numpy as np

    labels = np.asarray(labels)
    flat = labels.reshape(len(labels), -1)
    out = np.empty_like(flat, dtype=np.int64)
    for j in range(flat.shape[1]):  # group ids in order of first appearance, per column
        _, first, inverse = np.unique(flat[:, j], return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first)] = np.arange(len(first))
        out[:, j] = rank[inverse.ravel()]
    return hashlib.sha256(out.tobytes()).hexdigest()[:16]


def fingerprint(res) -> dict:
    return {
        "labels": labels_hash(res.labels),
        "il": round(float(res.information_loss), 10),
        "sse": round(float(res.sse), 8),
        "lower_bound": None if res.lower_bound is None else round(float(res.lower_bound), 6),
    }


def run_cells(methods, quick: bool) -> dict:
    import microagg

    out = {}
    cells = CELLS[:4] if quick else CELLS
    for data, k in cells:
        df = microagg.datasets.load(data)
        for method in methods:
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # the benchmark tables' columns: eia's include its utility id (an identifier the
                # default column rules leave out since issue 33); the audit does not change labels
                res = microagg.microaggregate(
                    df,
                    k=k,
                    method=method,
                    seed=0,
                    columns=list(df.columns),
                    audit=False,
                    **SETTINGS.get(method, {}),
                )
            out[f"{method}/{data}/k{k}"] = fingerprint(res)
            print(
                f"{method:>20} {data:>10} k={k:<3} IL {res.information_loss:9.5f} "
                f"{time.perf_counter() - t0:7.2f} s  {out[f'{method}/{data}/k{k}']['labels']}",
                flush=True,
            )
    return out


def run_scaling(quick: bool) -> dict:
    import numpy as np
    from mdav_scaling import make_data

    import microagg

    out = {}
    for kind, n in SCALING_ROWS:
        if quick and n > 30_000:
            continue
        X = make_data(kind, n)
        t0 = time.perf_counter()
        res = microagg.microaggregate(np.ascontiguousarray(X), k=3, method="mdav", seed=0)
        out[f"mdav/{kind}/n{n}"] = fingerprint(res)
        print(
            f"{'mdav':>20} {kind:>10} n={n:<7} IL {res.information_loss:9.5f} "
            f"{time.perf_counter() - t0:7.2f} s  {out[f'mdav/{kind}/n{n}']['labels']}",
            flush=True,
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-o", "--output", help="write the fingerprints to this JSON file")
    ap.add_argument("--compare", help="compare with the fingerprints in this JSON file")
    ap.add_argument("--methods", help="comma-separated methods (default: every one in SETTINGS)")
    ap.add_argument(
        "--quick", action="store_true", help="census only, and scaling rows up to 3·10^4"
    )
    ap.add_argument("--no-scaling", action="store_true", help="skip the synthetic MDAV rows")
    args = ap.parse_args()
    methods = args.methods.split(",") if args.methods else list(SETTINGS)
    found = run_cells(methods, args.quick)
    if not args.no_scaling:
        found.update(run_scaling(args.quick))
    if args.output:
        with open(args.output, "w") as fh:
            json.dump(found, fh, indent=1, sort_keys=True)
    if args.compare:
        with open(args.compare) as fh:
            before = json.load(fh)
        differ = [key for key in found if key in before and found[key] != before[key]]
        for key in differ:
            print(f"DIFFERS {key}: before {before[key]} after {found[key]}")
        same = sum(1 for key in found if key in before) - len(differ)
        print(
            f"{same} same, {len(differ)} different,"
            f" {sum(1 for key in found if key not in before)} new"
        )
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
