"""Plain MDAV timing at n = 10^4 and 10^5, d = 10, k = 3 (Gaussian data, seeded).

The baseline the accelerated MDAV (benchmarks/mdav_scaling.py) is measured against: this
script always runs the plain O(n²·d/k) loop. Usage: python benchmarks/mdav_timing.py
"""

from __future__ import annotations

import time

import numpy as np
from _common import md_table, update_readme, write_results


def main() -> None:
    from microagg import methods
    from microagg.measures import information_loss

    plain = {"algorithm": "plain"} if "algorithm" in methods.get("mdav").params else {}
    methods.run("mdav", np.random.default_rng(1).normal(size=(300, 10)), 3, **plain)  # compile
    rows, table = [], []
    for n in (10**4, 10**5):
        X = np.random.default_rng(0).normal(size=(n, 10))
        t = time.perf_counter()
        out = methods.run("mdav", X, 3, **plain)
        secs = time.perf_counter() - t
        il = information_loss(X, out.labels, standardize=False)
        rows.append({"n": n, "d": 10, "k": 3, "seconds": secs, "information_loss": il, **plain})
        table.append([n, 10, 3, f"{secs:.2f}", f"{il:.3f}"])
        print(table[-1], flush=True)
    md = "Plain MDAV (numba, one thread), i.i.d. Gaussian data.\n\n" + md_table(
        ["n", "d", "k", "seconds", "IL %"], table
    )
    write_results("mdav_timing", rows, md)
    update_readme("mdav-timing", md + "\n\nProduced by `python benchmarks/mdav_timing.py`.")


if __name__ == "__main__":
    main()
