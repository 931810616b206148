"""What the default call costs (issue 45): ``microaggregate(X, k=3)`` against ``audit=False``, the
file audit when ``Result.audit`` is read, univariate-optimal at 10^6 against microagg1d, and
10^6 × 13 census-like through the default call (wall, CPU, peak RSS).

Every measurement runs in a fresh subprocess (``--child``) after the library is imported, the
data made and the kernels warmed on a small call (compilation is ``compile_time.py``'s and
``cli_startup.py``'s subject). Parts:

* ``call``: census-like and Gaussian 10-d (``mdav_scaling.make_data``), MDAV k = 3. In one
  process, ``--repeat`` times alternating, ``microaggregate(X, k=3, audit=False)`` and the default
  ``microaggregate(X, k=3)``; the median wall and CPU (``time.process_time``: every thread of the
  process) of each, their ratio, then the time of the first read of ``res.audit`` (the file audit,
  computed then). Quiet and busy (two busy-loop processes, one per core, started by the script),
  with the default threads and with one thread forced (NUMBA_NUM_THREADS, OMP_NUM_THREADS,
  OPENBLAS_NUM_THREADS = 1); the default and one-thread processes alternate so that both meet
  the same load.
* ``univariate``: 10^6 records (``univariate.data``), k = 3: the default call with
  ``method="univariate-optimal"``, ``audit=False``, and microagg1d's exact methods (staggered,
  wilber), best of ``--repeat``, in one process.
* ``row_order``: the audit's row-order signals on 10^6 × 14 values, every row against the sample.
* ``big``: 10^6 × 13 census-like through the default call, one process: wall, CPU and the peak
  RSS of the process (``ru_maxrss``, data included), then the first read of ``res.audit``.

The 1-minute load average is recorded before and after each part.

    python benchmarks/default_call.py [--parts call,univariate,big,row_order] [--sizes 3e4,1e5]
    [--kinds gauss,census]
                                      [--repeat 3] [--loads quiet,busy]

Results: benchmarks/results/default_call.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, write_results  # noqa: E402

NAME = "default_call"
K = 3
ONE_THREAD = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def child_call(kind: str, n: int, repeat: int) -> dict:
    from mdav_scaling import make_data

    from microagg import microaggregate

    X = make_data(kind, n)
    microaggregate(X[:3000], k=K).audit  # the audit's imports (sklearn) loaded
    microaggregate(X, k=K, audit=False)  # the kernels this size calls, compiled or loaded
    plain, default = [], []
    for _ in range(repeat):
        _, w, c = _timed(lambda: microaggregate(X, k=K, audit=False))
        plain.append((w, c))
        res, w, c = _timed(lambda: microaggregate(X, k=K))
        default.append((w, c))
    _, aw, ac = _timed(lambda: res.audit)
    med = lambda rows, i: statistics.median(r[i] for r in rows)  # noqa: E731
    return {
        "audit_false_wall": med(plain, 0),
        "audit_false_cpu": med(plain, 1),
        "default_wall": med(default, 0),
        "default_cpu": med(default, 1),
        "audit_read_wall": aw,
        "audit_read_cpu": ac,
        "figures": len(res.audit.figures),
        # each default call against the audit=False call just before it: the pair met the same load
        "paired_cpu_ratio": statistics.median(d[1] / p[1] for p, d in zip(plain, default)),
    }


def child_univariate(repeat: int) -> dict:
    import microagg1d
    from univariate import data

    from microagg import microaggregate
    from microagg.labels import sse

    x = data(10**6)
    small = data(1000)
    microaggregate(small, k=K, method="univariate-optimal").audit
    for m in ("staggered", "wilber"):
        microagg1d.univariate_microaggregation(small, K, method=m)
    out = {}
    best = lambda f: min(_timed(f)[1:] for _ in range(repeat))  # noqa: E731  (wall, cpu) of the best wall
    out["default_wall"], out["default_cpu"] = best(
        lambda: microaggregate(x, k=K, method="univariate-optimal")
    )
    out["audit_false_wall"], out["audit_false_cpu"] = best(
        lambda: microaggregate(x, k=K, method="univariate-optimal", audit=False)
    )
    res = microaggregate(x, k=K, method="univariate-optimal")
    for m in ("staggered", "wilber"):
        out[f"{m}_wall"], out[f"{m}_cpu"] = best(
            lambda: microagg1d.univariate_microaggregation(x, K, method=m)
        )
        labels = microagg1d.univariate_microaggregation(x, K, method=m)
        out[f"{m}_same_sse"] = bool(abs(sse(x[:, None], labels) - res.sse) <= 1e-9 * res.sse)
    return out


def child_big() -> dict:
    import resource

    from mdav_scaling import make_data

    from microagg import microaggregate

    X = make_data("census", 10**6)
    microaggregate(X[:3000], k=K).audit  # the audit's imports (sklearn) loaded
    from microagg.methods import load_kernels

    load_kernels("mdav", X.shape)  # the kernels of 10^6 records, as the call loads them first
    res, w, c = _timed(lambda: microaggregate(X, k=K))
    rss_call = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _, aw, ac = _timed(lambda: res.audit)
    rss_audit = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "default_wall": w,
        "default_cpu": c,
        "peak_rss_mb": rss_call,
        "audit_read_wall": aw,
        "audit_read_cpu": ac,
        "peak_rss_mb_after_audit": rss_audit,
        "seconds_reported": res.seconds,
    }


def child_row_order() -> dict:
    """The row-order signals of 10^6 × 13 census-like values, every row against the audit's
    sample."""
    import numpy as np
    import pandas as pd
    from mdav_scaling import make_data

    from microagg.measures import risk as D
    from microagg.measures.file_audit import ROW_ORDER_SAMPLE

    frame = pd.DataFrame(make_data("census", 10**6))
    frame[13] = np.arange(len(frame))  # an id column: the row-number check, on every row in both
    D.row_order(frame.head(1000))
    exact, w_exact, c_exact = _timed(lambda: D.row_order(frame))
    sampled, w_sampled, c_sampled = _timed(lambda: D.row_order(frame, sample=ROW_ORDER_SAMPLE))
    return {
        "exact_wall": w_exact,
        "exact_cpu": c_exact,
        "sampled_wall": w_sampled,
        "sampled_cpu": c_sampled,
        "sample": ROW_ORDER_SAMPLE,
        "same_flags": (
            [s.informative for s in exact.signals] == [s.informative for s in sampled.signals]
        ),
        "largest_rho_difference": max(
            abs(a.spearman - b.spearman) for a, b in zip(exact.signals, sampled.signals)
        ),
    }


def run_child(spec: dict, env_extra: dict | None = None) -> dict:
    env = {**os.environ, **(env_extra or {})}
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join([here, env.get("PYTHONPATH", "")])
    before = _load()
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row.update(spec)
    row["load_before"], row["load_after"] = before, _load()
    print(row, flush=True)
    return row


def busy_loops(count: int):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="call,univariate,big,row_order")
    ap.add_argument("--sizes", default="3e4,1e5")
    ap.add_argument("--kinds", default="gauss,census")
    ap.add_argument("--loads", default="quiet,busy")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child")
    ap.add_argument(
        "--render", action="store_true", help="rewrite the .md from the committed .json (no runs)"
    )
    args = ap.parse_args()
    if args.render:
        from _common import RESULTS

        doc = json.loads((RESULTS / f"{NAME}.json").read_text())
        m = doc["machine"]
        (RESULTS / f"{NAME}.md").write_text(
            f"_Produced by `python benchmarks/default_call.py` on {m['date_utc']} UTC, {m['cpus']}"
            f" cores, load average {m['load_average_1min']} at the end of the run._\n\n"
            + markdown(doc["rows"]).rstrip()
            + "\n"
        )
        return
    if args.child:
        spec = json.loads(args.child)
        part = spec["part"]
        out = (
            child_call(spec["kind"], spec["n"], spec["repeat"])
            if part == "call"
            else (
                child_univariate(spec["repeat"])
                if part == "univariate"
                else child_row_order()
                if part == "row_order"
                else child_big()
            )
        )
        print(json.dumps(out))
        return
    parts = args.parts.split(",")
    rows = []
    if "call" in parts:
        for load in args.loads.split(","):
            hogs = busy_loops(2) if load == "busy" else []
            try:
                for kind in args.kinds.split(","):
                    for n in [int(float(s)) for s in args.sizes.split(",")]:
                        for threads in ("default", "one thread"):
                            spec = {
                                "part": "call",
                                "kind": kind,
                                "n": n,
                                "repeat": args.repeat,
                                "load": load,
                                "threads": threads,
                            }
                            rows.append(
                                run_child(spec, ONE_THREAD if threads == "one thread" else None)
                            )
            finally:
                for h in hogs:
                    h.kill()
                    h.wait()
    if "univariate" in parts:
        rows.append(run_child({"part": "univariate", "repeat": args.repeat, "load": "quiet"}))
    if "big" in parts:
        rows.append(run_child({"part": "big", "load": "quiet"}))
    if "row_order" in parts:
        rows.append(run_child({"part": "row_order", "load": "quiet"}))
    from _common import RESULTS

    old = RESULTS / f"{NAME}.json"  # the parts not run this time keep their committed rows
    kept = (
        [r for r in json.loads(old.read_text())["rows"] if r["part"] not in parts]
        if old.exists()
        else []
    )
    rows = kept + rows
    write_results(NAME, rows, markdown(rows))


def markdown(rows: list) -> str:
    out = []
    calls = [r for r in rows if r["part"] == "call"]
    if calls:
        table = []
        by = {(r["load"], r["kind"], r["n"], r["threads"]): r for r in calls}
        for (load, kind, n, threads), r in by.items():
            if threads != "default":
                continue
            one = by.get((load, kind, n, "one thread"))
            table.append(
                [
                    load,
                    kind,
                    f"{n:,}",
                    f"{r['audit_false_wall']:.2f} / {r['audit_false_cpu']:.2f}",
                    f"{r['default_wall']:.2f} / {r['default_cpu']:.2f}",
                    f"{r['default_wall'] / r['audit_false_wall']:.2f}× / "
                    f"{r['default_cpu'] / r['audit_false_cpu']:.2f}×"
                    + (
                        f" (paired {r['paired_cpu_ratio']:.2f}×)" if "paired_cpu_ratio" in r else ""
                    ),
                    (
                        ""
                        if one is None
                        else (
                            f"{one['default_wall']:.2f}"
                            f" ({r['default_wall'] / one['default_wall']:.2f}×)"
                        )
                    ),
                    (
                        f"{r['audit_read_wall']:.2f} / {r['audit_read_cpu']:.2f} "
                        f"({r['audit_read_cpu'] / r['audit_false_cpu']:.0%} of the call's CPU)"
                    ),
                    "" if one is None else f"{one['audit_read_wall']:.2f}",
                    f"{r['load_before']}–{r['load_after']}"
                    + ("" if one is None else f", {one['load_before']}–{one['load_after']}"),
                ]
            )
        out.append(
            "MDAV k = 3 through the public API, each condition in a fresh process, median of the"
            " repeats (`python benchmarks/default_call.py`). Wall / CPU seconds. Default:"
            " `microaggregate(X, k=3)`, whose file audit is computed when `res.audit` is first"
            " read; audit=False: the same call without it. One thread: NUMBA_NUM_THREADS ="
            " OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = 1. Busy: two busy-loop processes. Loads:"
            " 1-minute averages before–after (default threads, one thread). Wall times at these"
            " loads (other engineers' jobs) are partly waiting: compare the CPU figures; 'paired':"
            " the median over the repeats of each default call's CPU over that of the audit=False"
            " call just before it.\n\n"
            + md_table(
                [
                    "load",
                    "data",
                    "n",
                    "audit=False s",
                    "default s",
                    "default ÷ audit=False (wall / CPU)",
                    "default, one thread s (default ÷ one thread)",
                    "first read of res.audit s",
                    "same, one thread s",
                    "load",
                ],
                table,
            )
        )
    for r in rows:
        if r["part"] == "univariate":
            out.append(
                "univariate-optimal, 10^6 records, k = 3, best wall of the repeats in one process "
                f"(load {r['load_before']}–{r['load_after']}):\n\n"
                + md_table(
                    [
                        "wall / CPU s:",
                        "default call",
                        "audit=False",
                        "microagg1d staggered",
                        "microagg1d wilber",
                        "same SSE (staggered, wilber)",
                    ],
                    [
                        [
                            "",
                            *(
                                f"{r[f'{c}_wall']:.2f} / {r[f'{c}_cpu']:.2f}"
                                for c in ("default", "audit_false", "staggered", "wilber")
                            ),
                            f"{r['staggered_same_sse']}, {r['wilber_same_sse']}",
                        ]
                    ],
                )
            )
        if r["part"] == "row_order":
            out.append(
                "Row-order signals of 10^6 × 14 columns (census-like and an id), every row against"
                f" the audit's sample of {r['sample']:,} (load"
                f" {r['load_before']}–{r['load_after']}):\n\n"
                + md_table(
                    [
                        "every row s (wall / CPU)",
                        "sampled s (wall / CPU)",
                        "same flags",
                        "largest absolute rho difference",
                    ],
                    [
                        [
                            f"{r['exact_wall']:.2f} / {r['exact_cpu']:.2f}",
                            f"{r['sampled_wall']:.2f} / {r['sampled_cpu']:.2f}",
                            r["same_flags"],
                            f"{r['largest_rho_difference']:.4f}",
                        ]
                    ],
                )
            )
        if r["part"] == "big":
            out.append(
                "10^6 × 13 census-like, MDAV k = 3, the default call in a fresh process "
                f"(load {r['load_before']}–{r['load_after']}):\n\n"
                + md_table(
                    [
                        "wall s",
                        "CPU s",
                        "peak RSS MB",
                        "first read of res.audit s (wall / CPU)",
                        "peak RSS after the audit MB",
                    ],
                    [
                        [
                            f"{r['default_wall']:.1f}",
                            f"{r['default_cpu']:.1f}",
                            f"{r['peak_rss_mb']:.0f}",
                            f"{r['audit_read_wall']:.1f} / {r['audit_read_cpu']:.1f}",
                            f"{r['peak_rss_mb_after_audit']:.0f}",
                        ]
                    ],
                )
            )
    return "\n\n".join(out)


if __name__ == "__main__":
    main()
