"""Every method with a time limit at 10^5 and 10^6 records: does it finish within the limit plus
its documented overshoot, or refuse at once (issue 35 item 3)?

Each (method, n) runs through the public API (``microaggregate(X, k=3, method=..., time_limit=T)``)
in a fresh subprocess on census-like or Gaussian 10-d data (``mdav_scaling.make_data``; a
univariate method gets its first column), with the kernels compiled beforehand (a warm-up on a
small sample, as for n records, and a first audit on 200 records). A row gives the call's wall
seconds (from the call to its
return, compilation excluded by the warm-up), the reported ``Result.seconds``, and the outcome:
``ok``, ``stopped`` (the method says it stopped at the time limit before its end:
``extras['stopped']``, e.g. MDAV grouping the records it did not reach by median splits),
``refused`` (the one-line error the method gives before any work where it
cannot run within the limit) or ``killed`` (still running after the hard timeout, T × 4 + 600 s).
"within" says whether the call returned within the limit plus the documented overshoot,
max(1 s, 10 %).

    python benchmarks/time_limits.py [--data census] [--sizes 1e5,1e6] [--limit 30] [--methods
    mdav,auto] [--append]
        [--block-size N] [--busy 2]

``--data eia`` runs on the bundled eia file (4,092 records; --sizes ignored); ``--block-size``
runs the partitioned mode; ``--busy N`` holds the cores with N busy-loop processes during each
run (issue 44: every time limit honoured under load, on every path). ``--cli`` (with ``--data
eia``) times the whole command-line call instead, ``microagg protect eia.csv -o OUT -k 3 --method
M --time-limit T`` from its start to its exit: the interpreter, the imports, reading, loading the
compiled kernels (from the on-disk cache, warmed by a first call), the run, the file audit and
writing the output and its manifest; the limit bounds the run alone.

Results: benchmarks/results/time_limits.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, write_results  # noqa: E402

NAME = "time_limits"
K = 3


def child(method: str, n: int, limit: float, data: str, block_size: int | None = None) -> None:
    import warnings

    import numpy as np
    from mdav_scaling import make_data

    warnings.simplefilter("ignore")
    import microagg
    from microagg.errors import InputError

    info = microagg.methods.get(method)
    if data == "eia":
        X = np.ascontiguousarray(
            microagg.datasets.load("eia")[microagg.datasets.benchmark_columns("eia")]
            .select_dtypes("number")
            .to_numpy(dtype=np.float64)
        )
    else:
        X = make_data(data, n)
    if not info.multivariate:
        X = np.ascontiguousarray(X[:, :1])
    microagg.methods.load_kernels(method, X.shape)
    # the audit's one-off first-call costs (imports, compiled kernels: 9-13 s at load 3-4, more at
    # load 15) are taken before too, as the kernels' are: the limit is measured on the run
    microagg.microaggregate(X[:200], k=K, method="mdav", seed=0)
    if block_size is not None:  # the blocks' kernels too (a block's size class)
        microagg.methods.load_kernels(method, (block_size, X.shape[1]))
        microagg.microaggregate(
            X[: 2 * block_size],
            k=K,
            method=method,
            time_limit=limit,
            seed=0,
            block_size=block_size,
            audit=False,
        )
    t = time.perf_counter()
    try:
        res = microagg.microaggregate(
            X,
            k=K,
            method=method,
            time_limit=limit,
            seed=0,
            **({"block_size": block_size} if block_size else {}),
        )
    except InputError as exc:
        print(
            json.dumps({"status": "refused", "wall": time.perf_counter() - t, "message": str(exc)})
        )
        return
    wall = time.perf_counter() - t
    stopped = res.extras.get("stopped")
    stopped = (
        stopped if isinstance(stopped, str) and "time limit" in stopped else None
    )  # not "converged"
    print(
        json.dumps(
            {
                "status": "stopped" if stopped else "ok",
                "wall": wall,
                "reported": res.seconds,
                "il": res.information_loss,
                **({"message": stopped} if stopped else {}),
            }
        )
    )


def cli_command(method: str, limit: float, block_size: int | None) -> list:
    """``microagg protect`` on the shared eia.csv into a scratch folder, with the time limit."""
    import tempfile

    import microagg

    source = os.path.join(
        os.path.dirname(os.path.dirname(microagg.__file__)), "..", "..", "shared", "data", "eia.csv"
    )
    source = os.environ.get("MICROAGG_EIA_CSV", os.path.normpath(source))
    out = os.path.join(tempfile.mkdtemp(prefix="time_limits_"), "out.csv")
    return [
        sys.executable,
        "-m",
        "microagg.cli",
        "protect",
        source,
        "-o",
        out,
        "-k",
        str(K),
        "--method",
        method,
        "--time-limit",
        str(limit),
        "--seed",
        "0",
        "--json",
    ] + (["--block-size", str(block_size)] if block_size else [])


def cli_row(out, wall: float) -> dict:
    """A row from the command line's --json summary: the whole call's wall seconds and the run's."""
    if out.returncode != 0:
        return {
            "status": "failed",
            "wall": wall,
            "message": (out.stderr.strip().splitlines() or [""])[-1][:200],
        }
    summary = json.loads(out.stdout)
    cut = "time limit" in json.dumps(summary["warnings"])
    return {
        "status": "stopped" if cut else "ok",
        "wall": wall,
        "reported": summary["seconds"],
        "il": summary["information_loss"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e5,1e6")
    ap.add_argument("--data", default="census", choices=("census", "gauss", "eia"))
    ap.add_argument(
        "--block-size", type=int, default=None, help="the partitioned mode's block size"
    )
    ap.add_argument(
        "--busy", type=int, default=0, help="busy-loop processes holding the cores during each run"
    )
    ap.add_argument("--limit", type=float, default=30.0)
    ap.add_argument("--methods", default=None)
    ap.add_argument(
        "--append",
        action="store_true",
        help="merge into the existing results (same method and n replaced)",
    )
    ap.add_argument(
        "--rewrite", action="store_true", help="only rewrite the table from the results' JSON"
    )
    ap.add_argument(
        "--cli", action="store_true", help="time the whole command-line call (--data eia)"
    )
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(
            args.child[0],
            int(float(args.child[1])),
            float(args.child[2]),
            args.child[3],
            None if args.child[4] == "none" else int(args.child[4]),
        )
        return
    import microagg

    names = args.methods.split(",") if args.methods else microagg.methods()
    rows = []
    if args.rewrite:
        args.append, names = True, []
    sizes = [4092] if args.data == "eia" else [int(float(s)) for s in args.sizes.split(",")]
    for n in sizes if names else []:
        for name in names:
            before = os.getloadavg()[0]
            hard = args.limit * 4 + 600  # with the kernels' warm-up, which the busy loops slow down
            cmd = [
                sys.executable,
                os.path.abspath(__file__),
                "--child",
                name,
                str(n),
                str(args.limit),
                args.data,
                str(args.block_size or "none"),
            ]
            if args.cli:
                cmd = cli_command(name, args.limit, args.block_size)
            if (
                args.cli or args.busy
            ):  # the kernels' on-disk cache warmed before the busy loops start
                subprocess.run(cmd, capture_output=True, timeout=hard)
            helpers = [
                subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.busy)
            ]
            t = time.perf_counter()
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=hard)
                if args.cli:
                    row = cli_row(out, time.perf_counter() - t)
                else:
                    row = (
                        json.loads(out.stdout.strip().splitlines()[-1])
                        if out.returncode == 0
                        else {
                            "status": "failed",
                            "message": out.stderr.strip().splitlines()[-1][:200],
                        }
                    )
            except subprocess.TimeoutExpired:
                row = {"status": "killed", "wall": time.perf_counter() - t}
            finally:
                for h in helpers:
                    h.kill()
                    h.wait()
            row.update(
                door="cli" if args.cli else "api",
                data=args.data,
                method=name,
                n=n,
                limit=args.limit,
                load_before=round(before, 2),
                load_after=round(os.getloadavg()[0], 2),
                block_size=args.block_size,
                busy=args.busy,
            )
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.append:
        from _common import RESULTS

        old = json.loads((RESULTS / f"{NAME}.json").read_text())["rows"]
        key = lambda r: (
            r.get("data", "census"),
            r["method"],
            r["n"],
            r["limit"],
            r.get("block_size"),  # noqa: E731
            r.get("busy", 0),
            r.get("door", "api"),
        )
        new = {key(r) for r in rows}
        rows = sorted(
            [r for r in old if key(r) not in new] + rows,
            key=lambda r: (r.get("data", "census"), r["n"], r["limit"], r["method"]),
        )

    def within(r):
        seconds = r.get("reported") if r.get("door") == "cli" else r.get("wall")
        return (
            "-"
            if seconds is None
            else ("yes" if seconds <= r["limit"] + max(1.0, 0.1 * r["limit"]) else "NO")
        )

    table = md_table(
        [
            "door",
            "data",
            "method",
            "n",
            "limit s",
            "outcome",
            "wall s",
            "reported s",
            "within",
            "IL %",
            "message",
            "load",
        ],
        [
            [
                r.get("door", "api"),
                r.get("data", "census"),
                r["method"]
                + (f" (blocks of {r['block_size']})" if r.get("block_size") else "")
                + (f", {r['busy']} busy" if r.get("busy") else ""),
                f"{r['n']:,}",
                r["limit"],
                r["status"],
                f"{r['wall']:.1f}" if "wall" in r else "-",
                f"{r['reported']:.1f}" if "reported" in r else "-",
                within(r),
                f"{r['il']:.3f}" if "il" in r else "",
                r.get("message", "")[:90],
                f"{r['load_before']}–{r['load_after']}",
            ]
            for r in rows
        ],
    )
    write_results(
        NAME,
        rows,
        "k = 3, with a time limit (`python benchmarks/time_limits.py`). Door api:"
        " `microaggregate(..., time_limit=T)` in a fresh process with its kernels compiled first;"
        " wall s from the call to its return, reported s `Result.seconds`. Door cli (`--cli`): the"
        " whole `microagg protect eia.csv -o OUT -k 3 --method M --time-limit T` from its start to"
        " its exit (interpreter, imports, reading, loading the cached kernels, the run, the file"
        " audit, writing the output and its manifest); reported s: the run's seconds in its"
        " `--json` summary. Within: the limited part (api: the call; cli: the run) ended within the"
        " limit plus max(1 s, 10 %). `N busy`: N busy-loop processes held the 2 cores during the"
        " run.\n\n" + table,
    )


if __name__ == "__main__":
    main()
