"""Wide files through `microagg protect` (issue 57): many columns, few records.

The issue's cases: a 280 kB CSV of 12,000 columns x 6 rows (integers 0-99), a 20,000-column
Parquet (here 100 records of normal values to 3 decimals, and 6 records), and a 1 MB CSV of
50,000 columns x 6 rows (digits 0-9); k = 3, every numeric column a quasi-identifier (the
default). Each file is made here from a fixed seed and protected in a fresh process under
``/usr/bin/time -v``: its wall time, its peak resident memory, the load before and after, and the
SHA-256 of the published file and of its manifest without the run's own fields (the time written,
the seconds, the paths), so that two versions of the code can be compared byte for byte.

    python benchmarks/wide_files.py [--cases csv12000,parquet20000,parquet20000x6,csv50000]
                                    [--name wide_files] [--src OTHER/src]

(``--src``: the package's source tree to run, by default this checkout's: another version's, to
compare its bytes and times.)

Results: benchmarks/results/<name>.{json,md}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, measured_rows, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: case -> (file name, records, columns, how the values are made)
CASES = {
    "csv12000": ("wide12000.csv", 6, 12_000, "integers 0-99"),
    "parquet20000": ("wide20000.parquet", 100, 20_000, "normal, 3 decimals"),
    "parquet20000x6": ("wide20000x6.parquet", 6, 20_000, "normal, 3 decimals"),
    "csv50000": ("wide50000.csv", 6, 50_000, "digits 0-9"),
}


def make(case: str, folder: Path) -> Path:
    import numpy as np
    import pandas as pd

    name, rows, columns, how = CASES[case]
    rng = np.random.default_rng(columns + rows)
    if how.startswith("normal"):
        values = rng.normal(size=(rows, columns)).round(3)
    else:
        values = rng.integers(0, 100 if "99" in how else 10, size=(rows, columns))
    frame = pd.DataFrame(values, columns=[f"c{j}" for j in range(columns)])
    path = folder / name
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


def manifest_digest(path: Path, folder: Path) -> str:
    """The manifest's SHA-256 without what differs between two runs of one call: the time it was
    written, the seconds, the folder's path."""

    def scrub(o):
        if isinstance(o, dict):
            return {k: scrub(v) for k, v in o.items() if k not in ("written", "seconds")}
        if isinstance(o, list):
            return [scrub(v) for v in o]
        return o.replace(str(folder), "DIR") if isinstance(o, str) else o

    text = json.dumps(scrub(json.loads(path.read_text())), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run(case: str, folder: Path, code: Path) -> dict:
    src = make(case, folder)
    out = folder / f"out_{src.name}"
    env = dict(os.environ, PYTHONPATH=str(code))
    load = os.getloadavg()[0]
    t = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-m", "microagg.cli", "protect", str(src)]
        + ["-k", "3", "-o", str(out), "-q"],
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.perf_counter() - t
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    _, rows, columns, how = CASES[case]
    row = {
        "case": case,
        "records": rows,
        "columns": columns,
        "values": how,
        "input_bytes": src.stat().st_size,
        "seconds": round(wall, 2),
        "peak_mb": round(int(peak.group(1)) / 1024) if peak else None,
        "exit": done.returncode,
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    if done.returncode == 0:
        row["output_sha256"] = hashlib.sha256(out.read_bytes()).hexdigest()[:16]
        manifest = out.with_name(out.name + ".manifest.json")
        row["manifest_digest"] = manifest_digest(manifest, folder)
    else:
        row["error"] = [line for line in done.stderr.splitlines() if line.strip()][:1]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--name", default="wide_files", help="the results' file name")
    ap.add_argument("--src", default=str(ROOT / "src"), help="the source tree to run")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="microagg-wide-") as tmp:
        cases = [c.strip() for c in args.cases.split(",") if c.strip()]
        rows = measured_rows(cases, lambda case: run(case, Path(tmp), Path(args.src)))
    table = md_table(
        [
            "file",
            "records x columns",
            "input",
            "seconds",
            "peak MB",
            "load before / after",
            "output SHA-256",
            "manifest digest",
        ],
        [
            [
                CASES[r["case"]][0],
                f"{r['records']} x {r['columns']:,}",
                f"{r['input_bytes'] / 1e3:,.0f} kB",
                r["seconds"] if r["exit"] == 0 else f"exit {r['exit']}",
                r["peak_mb"],
                f"{r['load_before']} / {r['load_after']}",
                r.get("output_sha256", "—"),
                r.get("manifest_digest", "—"),
            ]
            for r in rows
        ],
    )
    write_results(args.name, rows, table)


if __name__ == "__main__":
    main()
