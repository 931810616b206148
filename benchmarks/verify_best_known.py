"""Verify the committed best-known partitions against their certificates (issue 16).

For every certificate ``benchmarks/best_known/<data>_k<k>.json``: the labels file has one integer
label per record of the bundled data set, every group has k..2k−1 records, and the IL recomputed
from the bundled data (z-scored quasi-identifiers, ``microagg.information_loss``) matches the
certificate's IL, SSE and SST; the stored lower bound is at most the SSE and the gap is consistent.
Prints one line per cell and exits non-zero on any mismatch.

    python benchmarks/verify_best_known.py [--dir benchmarks/best_known]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import microagg
from microagg.columns import zscores
from microagg.labels import sst as total_sum_of_squares

STORE = Path(__file__).resolve().parent / "best_known"
REL_TOL = 1e-9


def read_labels(path: Path, n: int) -> np.ndarray:
    lines = path.read_text().split()
    if len(lines) != n:
        raise ValueError(f"{len(lines)} labels for {n} records")
    try:
        return np.array([int(s) for s in lines], dtype=np.int64)
    except ValueError as exc:
        raise ValueError(f"a label is not an integer ({exc})") from None


def close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b), 1e-300)


def check_cell(cert_path: Path, data_cache: dict) -> list[str]:
    """The problems found in one cell (empty: verified)."""
    cert = json.loads(cert_path.read_text())
    data, k = cert["data"], int(cert["k"])
    if cert_path.name != f"{data}_k{k}.json":
        return [f"certificate file name does not match data {data!r}, k={k}"]
    if data not in data_cache:
        data_cache[data] = microagg.datasets.load(data)
    df = data_cache[data]
    labels_path = cert_path.with_suffix(".labels")
    if cert.get("il") is None:
        return [] if not labels_path.exists() else ["labels file without an IL in the certificate"]
    try:
        labels = read_labels(labels_path, len(df))
    except (OSError, ValueError) as exc:
        return [f"{labels_path.name}: {exc}"]
    problems = []
    sizes = np.unique(labels, return_counts=True)[1]
    if sizes.min() < k or sizes.max() > 2 * k - 1:
        problems.append(f"group sizes {sizes.min()}..{sizes.max()} outside {k}..{2 * k - 1}")
    il = microagg.information_loss(df, labels)
    sst = total_sum_of_squares(zscores(df.to_numpy(dtype=np.float64)))
    sse = il * sst / 100.0
    if not close(il, cert["il"]):
        problems.append(f"IL {il!r} recomputed, certificate says {cert['il']!r}")
    if not close(sst, cert["sst"]):
        problems.append(f"SST {sst!r} recomputed, certificate says {cert['sst']!r}")
    if not close(sse, cert["sse"]):
        problems.append(f"SSE {sse!r} recomputed, certificate says {cert['sse']!r}")
    bound = cert.get("lower_bound_sse")
    if bound is not None:
        if bound > sse * (1 + REL_TOL):
            problems.append(f"lower bound {bound!r} above the SSE {sse!r}")
        if not close(100.0 * bound / sst, cert["lower_bound_il"]):
            problems.append(f"bound IL {cert['lower_bound_il']!r} is not 100·bound/SST")
        gap = 100.0 * (sse - bound) / sse
        if cert.get("gap_percent") is None or abs(gap - cert["gap_percent"]) > 1e-6:
            problems.append(f"gap {gap!r} recomputed, certificate says {cert.get('gap_percent')!r}")
    if cert.get("found_by") is None:
        problems.append("no run recorded as the partition's source")
    return problems


def verify(store: Path = STORE, out=sys.stdout) -> int:
    """Check every certificate under ``store``; returns the number of cells with a problem."""
    certs = sorted(store.glob("*.json"))
    if not certs:
        print(f"no certificates under {store}", file=out)
        return 1
    bad, cache = 0, {}
    for path in certs:
        problems = check_cell(path, cache)
        cert = json.loads(path.read_text())
        if problems:
            bad += 1
            print(f"FAIL {path.stem}: " + "; ".join(problems), file=out)
        else:
            bound = cert.get("lower_bound_il")
            print(
                f"ok   {path.stem}: IL {cert['il']:.6f}"
                + (
                    ""
                    if bound is None
                    else f", bound IL {bound:.6f}, gap {cert['gap_percent']:.3f} %"
                ),
                file=out,
            )
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=STORE)
    args = ap.parse_args()
    sys.exit(1 if verify(args.dir) else 0)


if __name__ == "__main__":
    main()
