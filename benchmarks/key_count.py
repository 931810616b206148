"""The out-of-core verification's exact key count (``publication.streamed_counts``) at census
scale, alone: N records of 10 QIs and a stratum streamed in chunks of 10^6 (group values drawn
so that most combinations are shared by about 3 records), counted, with its wall seconds, the
process's peak resident memory (VmHWM) and the load. The key count is the stage that peaked at
14.6 GB in the first 10^8 census run (``results/census_1e8.md``).

    python benchmarks/key_count.py [--n 1e8]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, machine, md_table  # noqa: E402

QIS = [f"q{j}" for j in range(10)]
CHUNK = 1_000_000


def chunks(n: int):
    import pandas as pd

    rng = np.random.default_rng(0)
    for start in range(0, n, CHUNK):
        g = rng.integers(0, max(n // 3, 1), min(CHUNK, n - start))
        frame = pd.DataFrame({c: (g * (j + 1)).astype(np.float64) / 7.0 for j, c in enumerate(QIS)})
        frame["region"] = (g % 16).astype(np.int64)
        yield frame


def peak_mb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) // 1024
    return -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=float, default=1e8)
    n = int(ap.parse_args().n)
    from microagg.publication.streamed_counts import count_combinations

    load_before = os.getloadavg()[0]
    before = peak_mb()
    t0 = time.perf_counter()
    counted, qi_counts, m = count_combinations(chunks(n), [*QIS, "region"], QIS, 3, n)
    seconds = time.perf_counter() - t0
    row = [
        f"{m:,}",
        f"{counted.combinations:,}",
        f"{len(qi_counts):,}",
        f"{seconds:.1f}",
        peak_mb(),
        before,
        f"{load_before:.2f}, {os.getloadavg()[0]:.2f}",
    ]
    text = (
        f"# The out-of-core key count at {n:,} records\n\n"
        f"_`python benchmarks/key_count.py --n {n:g}` on {machine()['date_utc']} UTC, "
        f"{machine()['cpus']} cores._\n\n"
        + md_table(
            [
                "records",
                "key combinations",
                "QI combinations",
                "seconds",
                "peak MB",
                "MB before",
                "load before, after",
            ],
            [row],
        )
        + "\n"
    )
    (RESULTS / f"key_count_{n:.0e}.md".replace("+", "")).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
