"""Command line: microagg protect | evaluate | methods | demo.

User errors exit with status 2 and one line on stderr, never a traceback. Output files are
written atomically (temporary file in the target folder, then rename) and never over the input.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import math
import os
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from . import datasets, measures
from . import methods as registry
from .api import microaggregate
from .preprocess import InputError, read_table, select_columns
from .report import atomic_write

EXIT_USER_ERROR = 2


class UserError(Exception):
    """An error in what the user asked; reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, status 2
        raise UserError(f"{self.prog}: {message}")


def parse_param(text: str) -> tuple[str, object]:
    """NAME=VALUE with VALUE read as a Python literal (number, bool, list, ...) or else a string."""
    if "=" not in text:
        raise UserError(f"--param expects NAME=VALUE, got {text!r}")
    name, raw = text.split("=", 1)
    name = name.strip().replace("-", "_")
    lowered = raw.strip().lower()
    if lowered in ("true", "false"):
        return name, lowered == "true"
    if lowered in ("none", "null"):
        return name, None
    try:
        return name, ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        return name, raw.strip()


def write_table(df, path: Path, source: Path | None = None) -> None:
    """Write CSV or Parquet (by extension) atomically; refuse to overwrite the input."""
    path = Path(path)
    if source is not None and path.resolve() == Path(source).resolve():
        raise UserError(f"refusing to write the output over the input file {path}")
    if not path.parent.exists():
        raise UserError(f"output folder does not exist: {path.parent}")
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise UserError(f"output must end in .csv or .parquet, got {path.name}")
    if suffix == ".csv":
        atomic_write(path, lambda tmp: df.to_csv(tmp, index=False))
    else:
        atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))


def check_output_path(path: Path, source: Path | None = None) -> Path:
    """Fail before any work if the output cannot be written (wrong suffix, missing folder, = input)."""
    path = Path(path)
    if source is not None and path.resolve() == Path(source).resolve():
        raise UserError(f"refusing to write the output over the input file {path}")
    if path.suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise UserError(f"output must end in .csv or .parquet, got {path.name}")
    if not path.parent.exists():
        raise UserError(f"output folder does not exist: {path.parent}")
    return path


def parse_weights(text: str | None):
    """--weights: "2,1,0.5" (one per QI column, in order) or "AGE=2,INCOME=0.5" (others weigh 1)."""
    if text is None:
        return None
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise UserError(f"--weights has an empty item: {text!r}")
    named = ["=" in t for t in items]
    if any(named) and not all(named):
        raise UserError(f"--weights mixes NAME=VALUE and plain values: {text!r}")

    def number(raw, what):
        try:
            value = float(raw)
        except ValueError:
            raise UserError(f"--weights: {what} is not a number: {raw!r}") from None
        return value

    if all(named):
        pairs = [t.split("=", 1) for t in items]
        names = [a.strip() for a, _ in pairs]
        if len(set(names)) != len(names):
            raise UserError(f"--weights names a column twice: {text!r}")
        return {a.strip(): number(b.strip(), f"the weight of {a.strip()}") for a, b in pairs}
    return [number(t, "a weight") for t in items]


def _to_json(obj):
    """JSON-safe copy: numpy scalars/arrays to Python, non-finite floats to None."""
    if isinstance(obj, dict):
        return {str(k): _to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _to_json(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    return str(obj)


def print_json(obj) -> None:
    print(json.dumps(_to_json(obj), ensure_ascii=False))


@contextlib.contextmanager
def progress_display(enabled: bool, description: str, time_limit: float | None):
    """A rich progress bar on stderr while a method runs: filled by elapsed/time_limit, else a spinner."""
    if not enabled:
        yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    prog = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                    console=Console(file=sys.stderr), transient=True)
    task = prog.add_task(description, total=time_limit)
    stop = threading.Event()

    def tick():
        t0 = time.perf_counter()
        while not stop.wait(0.2):
            if time_limit is not None:
                prog.update(task, completed=min(time.perf_counter() - t0, time_limit))

    thread = threading.Thread(target=tick, daemon=True)
    with prog:
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def result_record(res, output=None, report=None) -> dict:
    """The machine-readable summary of a Result (``--json``)."""
    sizes = np.concatenate(res.group_sizes) if res.per_variable else np.asarray(res.group_sizes)
    return {
        "method": res.method,
        "k": res.k,
        "records": int(len(res.labels)),
        "columns": [str(c) for c in res.columns],
        "params": res.params,
        "information_loss": res.information_loss,
        "sse": res.sse,
        "sst": res.sst,
        "lower_bound": res.lower_bound,
        "lower_bound_il": res.lower_bound_il,
        "gap": res.gap,
        "groups": int(len(sizes)),
        "group_size_min": int(sizes.min()),
        "group_size_max": int(sizes.max()),
        "per_variable": res.per_variable,
        "seconds": res.seconds,
        "extras": res.extras,
        "output": None if output is None else str(output),
        "report": None if report is None else str(report),
    }


def protect_out_of_core_cli(args, params) -> int:
    """--out-of-core: stream a Parquet dataset or CSV through the partitioned mode (scale.py) into a
    new folder of Parquet partitions. The folder appears complete or not at all (written under a
    temporary name in the same parent folder, then renamed)."""
    import shutil

    from .scale import protect_out_of_core

    unsupported = [flag for flag, on in (
        ("--report", args.report), ("--strata", args.strata), ("--weights", args.weights),
        ("--sample-weight", args.sample_weight), ("--merge-small-strata", args.merge_small_strata),
        ("--raw", args.raw), ("--time-limit", args.time_limit)) if on]
    if unsupported:
        raise UserError(f"--out-of-core does not support {', '.join(unsupported)} yet")
    src, out = Path(args.input), Path(args.output)
    if not src.exists():
        raise UserError(f"input file not found: {src}")
    if out.exists():
        raise UserError(f"output folder already exists: {out} (choose a new folder name)")
    if not out.parent.exists():
        raise UserError(f"output folder's parent does not exist: {out.parent}")
    if args.block_size is None:
        raise UserError("--out-of-core needs --block-size (records per block, e.g. 5000)")
    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        summary = protect_out_of_core(src, tmp, k=args.k, method=args.method, columns=columns,
                                      block_size=args.block_size, scheduler=args.scheduler,
                                      seed=args.seed, **params)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp creates 0700; give the usual permissions
        os.rename(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    summary = {k: (v if isinstance(v, (int, float, str, list, bool)) or v is None else str(v))
               for k, v in summary.items() if k != "files"}
    if args.json:
        print(json.dumps({"output": str(out), **summary}))
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
        print(f"written: {out}/")
    return 0


def cmd_protect(args) -> int:
    params = dict(parse_param(p) for p in args.param)
    for name in ("seed", "time_limit", "progress", "weights", "sample_weight", "strata", "columns", "k"):
        if name in params:
            raise UserError(f"--param {name}=... is not a method parameter: use the --{name.replace('_', '-')} option")
    if args.out_of_core:
        return protect_out_of_core_cli(args, params)
    src = Path(args.input)
    out = check_output_path(Path(args.output), src)
    report_path = None
    if args.report is not None:
        from .report import check_report_path

        report_path = check_report_path(args.report)
        if report_path.resolve() in (src.resolve(), out.resolve()):
            raise UserError(f"refusing to write the report over the input or output file {report_path}")
    if not 0 <= args.interval_p <= 100:
        raise UserError(f"--interval-p must be in [0, 100], got {args.interval_p}")
    weights = parse_weights(args.weights)
    strata = [c.strip() for c in args.strata.split(",") if c.strip()] if args.strata else None
    if args.merge_small_strata and not strata:
        raise UserError("--merge-small-strata needs --strata")
    show = not args.quiet
    df = read_table(src)
    partitioned = args.block_size is not None or args.scheduler is not None
    own_bar = args.method == "auto" and not partitioned  # auto draws its own bar over its members
    with contextlib.redirect_stdout(sys.stderr):  # method chatter never pollutes stdout (--json)
        with progress_display(show and not own_bar, f"microagg {args.method}", args.time_limit):
            res = microaggregate(
                df,
                k=args.k,
                method=args.method,
                columns=args.columns,
                seed=args.seed,
                standardize=not args.raw,
                time_limit=args.time_limit,
                strata=strata,
                block_size=args.block_size,
                scheduler=args.scheduler,
                weights=weights,
                sample_weight=args.sample_weight,
                merge_small_strata=args.merge_small_strata,
                progress=show and not partitioned,
                **params,
            )
    report_text = None
    if report_path is not None:
        from .report import render_report

        settings = {"input": str(src), "output": str(out), "seed": args.seed, "time limit (s)": args.time_limit,
                    "strata": ", ".join(strata) if strata else None, "standardised": not args.raw,
                    "block size": args.block_size}
        report_text = render_report(res, df, settings, p=args.interval_p)
    write_table(res.data, out, src)
    if report_text is not None:
        from .report import atomic_write_text

        atomic_write_text(report_path, report_text)
    if args.json:
        print_json(result_record(res, out, report_path))
    else:
        print(res.summary())
        print(f"written: {out}")
        if report_path is not None:
            print(f"report: {report_path}")
    return 0


def cmd_evaluate(args) -> int:
    if not 0 <= args.interval_p <= 100:
        raise UserError(f"--interval-p must be in [0, 100], got {args.interval_p}")
    if args.k is not None and args.k < 1:
        raise UserError(f"-k must be at least 1, got {args.k}")
    orig = read_table(args.original)
    prot = read_table(args.protected)
    if len(orig) != len(prot):
        raise UserError(f"the files have different numbers of rows ({len(orig)} and {len(prot)})")
    cols = select_columns(orig, args.columns)
    missing = [c for c in cols if c not in prot.columns]
    if missing:
        raise UserError(f"column(s) missing from the protected file: {', '.join(map(str, missing))}")
    bad = [c for c in cols if not np.issubdtype(prot[c].dtype, np.number)]
    if bad:
        raise UserError(f"column(s) not numeric in the protected file: {', '.join(map(str, bad))}")
    if args.columns is None:  # default: the numeric columns the protection changed
        changed = [c for c in cols if not np.array_equal(orig[c].to_numpy(), prot[c].to_numpy())]
        cols = changed or cols
    X = orig[cols].to_numpy(np.float64)
    Xp = prot[cols].to_numpy(np.float64)
    if not (np.isfinite(X).all() and np.isfinite(Xp).all()):
        raise UserError("missing or infinite values in the compared columns")
    with progress_display(not args.quiet and not args.json, "evaluating", None):
        report = measures.utility_report(X, Xp)
        risk = measures.risk_report(X, Xp, args.interval_p)
    anonymous = None if args.k is None else bool(report["smallest_group"] >= args.k)
    if args.json:
        print_json({"columns": [str(c) for c in cols], "records": len(X), "utility": report, "risk": risk,
                    "k": args.k, "k_anonymous": anonymous})
        return 0
    print(f"quasi-identifiers: {', '.join(map(str, cols))}")
    print("utility / information loss")
    print(f"  information loss (IL, %):              {report['information_loss']:.4f}")
    print(f"  IL1s (Yancey et al. 2002):             {report['il1s']:.4f}")
    print(f"  correlation discrepancy Δr (mean/sd):  {report['delta_r_mean']:.4f} / {report['delta_r_std']:.4f}")
    print(f"  covariance discrepancy (MAE / var. %): {report['covariance_mae']:.4f} / "
          f"{report['covariance_variation_percent']:.2f}")
    print(f"  relative eigenvalue discrepancy (%):   {report['eigenvalue_discrepancy_percent']:.2f}")
    print(f"  first-PC weight change ΔW (%):         {report['delta_w']:.3f}")
    print(f"  variance on first PC (%FPC):           {report['fpc_percent_original']:.2f} -> "
          f"{report['fpc_percent_protected']:.2f}")
    print("disclosure risk")
    print(f"  distance-based record linkage (%):     {100 * risk['record_linkage_dbrl']:.2f}")
    print(f"  interval disclosure, p = {args.interval_p:g}% (%):  {100 * risk['interval_disclosure']:.2f}")
    print(f"  smallest group of identical QI values: {report['smallest_group']}"
          + ("" if args.k is None else ("  (k-anonymous)" if anonymous else f"  (NOT {args.k}-anonymous)")))
    return 0


def cmd_methods(args) -> int:
    infos = registry.all_methods()
    if args.json:
        print_json({"methods": [
            {"name": i.name, "family": i.family, "paper": i.paper, "complexity": i.complexity,
             "variable_size": i.variable_size, "multivariate": i.multivariate, "randomized": i.randomized,
             "per_variable": i.per_variable, "interruptible": i.interruptible, "summary": i.summary,
             "params": {name: {"kind": p.kind, "default": p.default, "constraint": p.constraint(), "doc": p.doc}
                        for name, p in i.params.items()}}
            for i in infos]})
        return 0
    for info in infos:
        size = "variable" if info.variable_size else "fixed"
        kind = "per-variable" if info.per_variable else ("multivariate" if info.multivariate else "univariate")
        print(f"{info.name:20s} {info.family:12s} {kind:13s} {size:8s} {info.summary}")
        if args.verbose:
            print(f"{'':20s} paper: {info.paper}; {info.complexity}")
            if not info.interruptible:
                print(f"{'':20s} runs to completion: it does not stop at the time limit")
            for p in info.params.values():
                print(f"{'':20s} --param {p.describe()}")
    return 0


#: Demo tasks: families whose methods share numba kernels run as one task in one worker, so no
#: kernel is compiled twice at once (families not listed are tasks of their own).
_DEMO_TASK_OF_FAMILY = {"tour": "local-search", "projection": "univariate", "per-variable": "univariate"}
#: A task starts only once the tasks whose kernels its methods call have finished, so it loads
#: those kernels from numba's on-disk cache instead of compiling them again: icsm, the tour
#: methods and colgen start from MDAV/V-MDAV; auto runs the other methods.
_DEMO_TASK_NEEDS = {"local-search": ("mdav",), "column generation": ("mdav",), "portfolio": ("*",)}
#: Heaviest compilation first (the longest task bounds the wall time); unknown tasks go first.
_DEMO_TASK_COST = ("column generation", "local-search", "mdav", "tsp", "fixed-size", "univariate", "hierarchical",
                   "portfolio")
#: A demo run that compiled numba code is repeated, at most this many times in all (see _demo_task).
_DEMO_MAX_RUNS = 6


def _demo_inputs(info, df):
    """The data a method gets in the demo, and the note on its row."""
    if not info.multivariate:
        return df[df.columns[:1]], f"univariate: column {df.columns[0]} only"
    if info.per_variable:
        return df, "each variable on its own: not k-anonymous"
    return df, ""


def _demo_task(names: list, dataset: str, k: int, time_limit) -> list:
    """Run the methods ``names`` as the demo shows them (one demo task; runs in a worker process).

    Each method first runs once, untimed and to completion, on the first few records. That loads
    its kernels from numba's on-disk cache, or compiles them, which would otherwise be counted
    in its row; run to completion, an anytime method also reaches (and caches) the code paths
    that a time-limited run reaches only when its kernels are already compiled, so the second
    demo after an install does not compile again. A timed run during which numba still
    compiled something is run again, until a run compiles nothing: the row then shows the
    method's own time, not numba's. Returns one row (name, IL %, lower bound IL % or None,
    seconds, note) per method.
    """
    from numba.core import event

    df = datasets.load(dataset)
    compilations = []
    rows = []
    with event.install_timer("numba:compile", compilations.append):
        for name in names:
            data, note = _demo_inputs(registry.get(name), df)
            microaggregate(data.head(max(3 * k, 30)), k=k, method=name, seed=0)
            for _ in range(_DEMO_MAX_RUNS):
                before = len(compilations)
                t = time.perf_counter()
                res = microaggregate(data, k=k, method=name, seed=0, time_limit=time_limit)
                secs = time.perf_counter() - t
                if len(compilations) == before:
                    break
            rows.append((name, res.information_loss, res.lower_bound_il, secs, note))
    return rows


def demo_tasks(names) -> dict:
    """{task: [method names]} and {task: tasks it waits for}, the heaviest tasks first."""
    tasks: dict = {}
    for name in names:
        family = registry.get(name).family
        tasks.setdefault(_DEMO_TASK_OF_FAMILY.get(family, family), []).append(name)
    needs = {}
    for task in tasks:
        wanted = _DEMO_TASK_NEEDS.get(task, ())
        needs[task] = {t for t in tasks if t != task and ("*" in wanted or t in wanted)}
    cost = {t: _DEMO_TASK_COST.index(t) if t in _DEMO_TASK_COST else -1 for t in tasks}
    order = sorted(tasks, key=lambda t: (cost[t], t))
    return {t: tasks[t] for t in order}, needs


def run_demo_tasks(tasks: dict, needs: dict, run, workers: int) -> list:
    """Run ``run(task_methods)`` for every task on ``workers`` processes, each task once the
    tasks in needs[task] are done; a task that others name in _DEMO_TASK_NEEDS starts first,
    then the heaviest first (the order of ``tasks``). Returns the rows of all tasks."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    unblocks = {t: sum(t in _DEMO_TASK_NEEDS.get(u, ()) for u in tasks) for t in tasks}
    pending = sorted(tasks, key=lambda t: -unblocks[t])  # stable: keeps the cost order
    done: set = set()
    rows: list = []
    if workers < 2:  # one core: in this process, in dependency order
        while pending:
            task = next(t for t in pending if needs[t] <= done)
            pending.remove(task)
            rows += run(tasks[task])
            done.add(task)
        return rows
    running: dict = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        while pending or running:
            for task in [t for t in pending if needs[t] <= done][: workers - len(running)]:
                pending.remove(task)
                running[pool.submit(run, tasks[task])] = task
            if not running:
                raise RuntimeError(f"demo tasks wait for each other: {pending}")
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                rows += future.result()
                done.add(running.pop(future))
    return rows


def cmd_demo(args) -> int:
    from functools import partial

    from rich.console import Console
    from rich.table import Table

    df = datasets.load(args.dataset)
    tasks, needs = demo_tasks(registry.names())
    run = partial(_demo_task, dataset=args.dataset, k=args.k, time_limit=args.time_limit)
    workers = min(len(tasks), os.cpu_count() or 1)
    # numba compiles on one thread and a fresh install has nothing cached: the tasks run in
    # parallel worker processes, which write numba's on-disk cache (fast on later runs)
    with Console(stderr=True).status("running every method (the first run also compiles them)"):
        rows = {row[0]: row for row in run_demo_tasks(tasks, needs, run, workers)}
    table = Table(title=f"microagg demo: {args.dataset} ({len(df)}×{df.shape[1]}), k = {args.k}")
    for col in ("method", "IL %", "lower bound %", "seconds", "note"):
        table.add_column(col, justify="left" if col in ("method", "note") else "right")
    for name in registry.names():
        _, il, lb, secs, note = rows[name]
        table.add_row(name, f"{il:.3f}", "" if lb is None else f"{lb:.3f}", f"{secs:.2f}", note)
    Console().print(table)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="microagg", description="Microaggregation of numeric microdata (k-anonymity by group means).")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    sub.required = True

    pr = sub.add_parser("protect", help="microaggregate a CSV or Parquet file")
    pr.add_argument("input")
    pr.add_argument("-o", "--output", required=True, help="output .csv or .parquet (written atomically)")
    pr.add_argument("-k", type=int, required=True, help="minimum group size")
    pr.add_argument("--columns", help="comma-separated quasi-identifier columns (default: all numeric)")
    pr.add_argument("--method", default="mdav", help="method name (see 'microagg methods')")
    pr.add_argument("--seed", type=int, default=0)
    pr.add_argument("--time-limit", type=float, default=None, metavar="SECONDS")
    pr.add_argument("--strata", help="comma-separated categorical columns; groups never cross strata")
    pr.add_argument("--block-size", type=int, default=None, help="partitioned mode: records per block")
    pr.add_argument("--scheduler", default=None, help="partitioned mode: Dask scheduler or cluster address")
    pr.add_argument("--out-of-core", action="store_true",
                    help="stream a Parquet dataset or CSV larger than memory in chunks (needs --block-size); "
                         "OUTPUT is a new folder of Parquet partitions")
    pr.add_argument("--raw", action="store_true", help="do not standardise (run on raw values)")
    pr.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="method parameter")
    pr.add_argument("--merge-small-strata", action="store_true",
                    help="merge a stratum smaller than k into the stratum with the nearest QI centroid")
    pr.add_argument("--weights", metavar="W1,W2,..|COL=W,..",
                    help="variable weights for the distance, one positive number per QI column")
    pr.add_argument("--sample-weight", metavar="COLUMN", help="sampling-weight column for weighted group means")
    pr.add_argument("--report", metavar="REPORT.html", help="write a self-contained HTML report (atomically)")
    pr.add_argument("--interval-p", type=float, default=10.0, metavar="P",
                    help="rank-interval percentage for interval disclosure in the report (default 10)")
    pr.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    pr.add_argument("--json", action="store_true", help="print one JSON object on stdout instead of the summary")
    pr.set_defaults(func=cmd_protect)

    ev = sub.add_parser("evaluate", help="compare an original and a protected file")
    ev.add_argument("original")
    ev.add_argument("protected")
    ev.add_argument("--columns", help="quasi-identifier columns (default: the numeric columns that changed)")
    ev.add_argument("-k", type=int, default=None, help="check k-anonymity of the published QI values")
    ev.add_argument("-p", "--interval-p", type=float, default=10.0, metavar="P",
                    help="rank-interval percentage for interval disclosure (default 10)")
    ev.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    ev.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ev.set_defaults(func=cmd_evaluate)

    me = sub.add_parser("methods", help="list the registered methods")
    me.add_argument("-v", "--verbose", action="store_true")
    me.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    me.set_defaults(func=cmd_methods)

    de = sub.add_parser("demo", help="run every method on a bundled data set")
    de.add_argument("--dataset", default="census", choices=datasets.names())
    de.add_argument("-k", type=int, default=3)
    de.add_argument("--time-limit", type=float, default=1.0, metavar="SECONDS",
                    help="budget for each iterative method (default 1)")
    de.set_defaults(func=cmd_demo)
    return p


def main(argv=None) -> int:
    warnings.showwarning = lambda msg, cat, *a, **kw: print(f"microagg: warning: {msg}", file=sys.stderr)
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except (UserError, InputError, ValueError, FileNotFoundError, PermissionError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"microagg: error: {msg}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("microagg: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into head: not an error of ours
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")
        return 0


if __name__ == "__main__":
    sys.exit(main())
