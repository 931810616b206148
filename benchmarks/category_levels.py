"""Many category levels (issue 57): what a nominal QI of thousands of levels costs.

Two parts.

``--part kernels``: at n records (default 10^4) of a numeric x and a nominal c of L levels,
MDAV (k = 3) on the dense one-hot embedding (``kernels.mdav_labels.mdav_labels``, the kernel the default
run chose before: brute force up to 10^4 records) against the codes' kernel
(``kernels.mdav_onehot``), both compiled first, and whether their labels agree: where the
codes pay off (``onehot.WIDE_ONEHOT``).

``--part cli``: the whole command line call ``microagg protect FILE -o OUT -k 3 --columns x,c
--categorical c`` in a fresh process (read, run, write, read back, audit, manifest), its wall
time and the child's peak resident memory, on the issue's file (10^4 records, ~6,300 levels)
and on 10^5 records of 10^4 levels; ``--checkout SRC`` runs the same calls on another source
tree (e.g. the code before the change) for the before / after figures. The numba cache is warmed
by one call first.

    python benchmarks/category_levels.py --part kernels
    python benchmarks/category_levels.py --part cli --sizes 1e4:1e4,1e5:1e4
    python benchmarks/category_levels.py --part cli --sizes 1e4:1e4 --checkout /path/src --label before
    python benchmarks/category_levels.py --part table   # the table and docs block, nothing run

Rows accumulate in results/category_levels.json (keyed by part, size, label); the .md table is
rewritten from all of them, with the 1-minute load average beside each row (the machine may be
shared: say so when quoting), and so is the category-levels block of docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, md_table, update_readme, write_results  # noqa: E402

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def levels_frame(n: int, levels: int, seed: int = 0):
    """The issue's file: x normal, c one of ``levels`` labels drawn uniformly."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"x": rng.normal(size=n), "c": ["L%05d" % i for i in rng.integers(0, levels, n)]}
    )


def kernels(n: int, widths: list[int]) -> list[dict]:
    import numpy as np

    from microagg.embedding import embed
    from microagg.kernels.mdav_labels import mdav_labels
    from microagg.kernels.mdav_onehot import mdav_onehot_kernel

    kinds = {"x": "continuous", "c": "nominal"}

    def both(df):
        dense = embed(df, ["x", "c"], kinds, compact=False).matrix
        codes = embed(df, ["x", "c"], kinds, compact=True).matrix
        t = time.perf_counter()
        a = mdav_labels(dense, 3, True, "auto")
        t_dense = time.perf_counter() - t
        t = time.perf_counter()
        b = mdav_onehot_kernel(codes.numeric, codes.codes, codes.units**2, codes.sizes, 3, True, 0)
        return t_dense, time.perf_counter() - t, bool(np.array_equal(a, b)), dense.shape[1]

    both(levels_frame(200, 8))  # compiled (or loaded) before timing
    rows = []
    for levels in widths:
        df = levels_frame(n, levels)
        t_dense, t_codes, same, width = both(df)
        rows.append(
            {
                "part": "kernels",
                "n": n,
                "levels": int(df["c"].nunique()),
                "onehot_columns": width - 1,
                "dense_s": round(t_dense, 3),
                "codes_s": round(t_codes, 3),
                "same_labels": same,
                "load": round(os.getloadavg()[0], 2),
            }
        )
        print(rows[-1], flush=True)
    return rows


def _call(path: str, src: str, cache: str) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds and peak MB of the child, exit status) of one protect call."""
    env = dict(os.environ, PYTHONPATH=src, NUMBA_CACHE_DIR=cache)
    out = path + ".out.csv"
    argv = [sys.executable, "-m", "microagg.cli", "protect", path, "-o", out, "-k", "3"]
    argv += ["--columns", "x,c", "--categorical", "c", "-q"]
    t = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    err = child.stderr.read().decode(errors="replace").strip()
    code = os.waitstatus_to_exitcode(status)
    if code:
        print(f"exit {code}: {err[-500:]}", file=sys.stderr)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code


def cli(sizes: list[tuple[int, int]], src: str, label: str) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(tmp, "numba")
        warm = os.path.join(tmp, "warm.csv")
        levels_frame(500, 200).to_csv(warm, index=False)
        _call(warm, src, cache)  # kernels compiled / loaded from the cache before timing
        for n, levels in sizes:
            path = os.path.join(tmp, f"lev_{n}_{levels}.csv")
            frame = levels_frame(n, levels)
            frame.to_csv(path, index=False)
            before = os.getloadavg()[0]
            wall, cpu, peak, code = _call(path, src, cache)
            rows.append(
                {
                    "part": "cli",
                    "label": label,
                    "n": n,
                    "levels": int(frame["c"].nunique()),
                    "wall_s": round(wall, 1),
                    "cpu_s": round(cpu, 1),
                    "peak_mb": round(peak),
                    "exit": code,
                    "load_before": round(before, 2),
                    "load_after": round(os.getloadavg()[0], 2),
                }
            )
            print(rows[-1], flush=True)
    return rows


def _table(rows: list[dict]) -> str:
    k = [r for r in rows if r["part"] == "kernels"]
    c = [r for r in rows if r["part"] == "cli"]
    out = []
    if k:
        out.append("MDAV (k = 3, classic) on x and a nominal c of L levels, kernel seconds:\n")
        out.append(
            md_table(
                ["n", "levels", "dense one-hot (s)", "codes (s)", "same labels", "load"],
                [
                    [r["n"], r["levels"], r["dense_s"], r["codes_s"], r["same_labels"], r["load"]]
                    for r in k
                ],
            )
        )
    if c:
        out.append("\n`microagg protect FILE -k 3 --columns x,c --categorical c`, whole call:\n")
        out.append(
            md_table(
                [
                    "code",
                    "n",
                    "levels",
                    "wall / CPU (s)",
                    "peak (MB)",
                    "exit",
                    "load before / after",
                ],
                [
                    [
                        r["label"],
                        r["n"],
                        r["levels"],
                        f"{r['wall_s']} / {r.get('cpu_s', '–')}",
                        r["peak_mb"],
                        r["exit"],
                        f"{r['load_before']} / {r['load_after']}",
                    ]
                    for r in c
                ],
            )
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("kernels", "cli", "table"), required=True)
    ap.add_argument("--n", type=float, default=1e4, help="records (kernels)")
    ap.add_argument("--widths", default="4,8,16,32,64,128,256", help="levels (kernels)")
    ap.add_argument("--sizes", default="1e4:1e4,1e5:1e4", help="records:levels,... (cli)")
    ap.add_argument("--checkout", default=SRC, help="the source tree to run (cli)")
    ap.add_argument("--label", default="codes", help="the row's name for that tree (cli)")
    args = ap.parse_args()
    path = RESULTS / "category_levels.json"
    old = json.loads(path.read_text())["rows"] if path.exists() else []
    if args.part == "table":  # the table and the docs block again, from the rows kept
        new = []
    elif args.part == "kernels":
        new = kernels(int(args.n), [int(w) for w in args.widths.split(",")])
    else:
        pairs = [tuple(int(float(v)) for v in s.split(":")) for s in args.sizes.split(",")]
        new = cli(pairs, os.path.abspath(args.checkout), args.label)

    def key(r):
        return (r["part"], r["n"], r.get("levels"), r.get("label"))

    fresh = {key(r) for r in new}
    rows = [r for r in old if key(r) not in fresh] + new
    write_results("category_levels", rows, _table(rows))
    update_readme("category-levels", _table(rows))


if __name__ == "__main__":
    main()
