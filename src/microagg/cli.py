"""Command line: microagg protect | evaluate | methods | demo.

User errors exit with status 2 and one line on stderr, never a traceback. Output files are
written atomically (temporary file in the target folder, then rename) and never over the input.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from . import datasets, measures
from . import methods as registry
from .api import microaggregate
from .preprocess import InputError, read_table, select_columns

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
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        if suffix == ".csv":
            df.to_csv(tmp, index=False)
        else:
            df.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def cmd_protect(args) -> int:
    params = dict(parse_param(p) for p in args.param)
    src = Path(args.input)
    out = Path(args.output)
    if out.resolve() == src.resolve():
        raise UserError(f"refusing to write the output over the input file {out}")
    df = read_table(src)
    res = microaggregate(
        df,
        k=args.k,
        method=args.method,
        columns=args.columns,
        seed=args.seed,
        standardize=not args.raw,
        time_limit=args.time_limit,
        strata=args.strata.split(",") if args.strata else None,
        block_size=args.block_size,
        scheduler=args.scheduler,
        **params,
    )
    write_table(res.data, out, src)
    print(res.summary())
    print(f"written: {out}")
    return 0


def cmd_evaluate(args) -> int:
    orig = read_table(args.original)
    prot = read_table(args.protected)
    if len(orig) != len(prot):
        raise UserError(f"the files have different numbers of rows ({len(orig)} and {len(prot)})")
    cols = select_columns(orig, args.columns)
    missing = [c for c in cols if c not in prot.columns]
    if missing:
        raise UserError(f"column(s) missing from the protected file: {', '.join(map(str, missing))}")
    if args.columns is None:  # default: the numeric columns the protection changed
        changed = [c for c in cols if not np.array_equal(orig[c].to_numpy(), prot[c].to_numpy())]
        cols = changed or cols
    X = orig[cols].to_numpy(np.float64)
    Xp = prot[cols].to_numpy(np.float64)
    if not (np.isfinite(X).all() and np.isfinite(Xp).all()):
        raise UserError("missing or infinite values in the compared columns")
    report = measures.utility_report(X, Xp)
    print(f"quasi-identifiers: {', '.join(map(str, cols))}")
    print(f"information loss (IL, %):            {report['information_loss']:.4f}")
    print(f"correlation discrepancy Δr (mean/sd): {report['delta_r_mean']:.4f} / {report['delta_r_std']:.4f}")
    print(f"first-PC weight change ΔW (%):       {report['delta_w']:.3f}")
    print(f"variance on first PC (%FPC):         {report['fpc_percent_original']:.2f} -> "
          f"{report['fpc_percent_protected']:.2f}")
    print(f"smallest group of identical QI values: {report['smallest_group']}"
          + ("" if args.k is None else ("  (k-anonymous)" if report["smallest_group"] >= args.k
                                         else f"  (NOT {args.k}-anonymous)")))
    return 0


def cmd_methods(args) -> int:
    for info in registry.all_methods():
        size = "variable" if info.variable_size else "fixed"
        kind = "per-variable" if info.per_variable else ("multivariate" if info.multivariate else "univariate")
        print(f"{info.name:20s} {info.family:12s} {kind:13s} {size:8s} {info.summary}")
        if args.verbose:
            print(f"{'':20s} paper: {info.paper}; {info.complexity}")
            if info.params:
                print(f"{'':20s} params: " + ", ".join(f"{k}={v!r}" for k, v in info.params.items()))
    return 0


def cmd_demo(args) -> int:
    from rich.console import Console
    from rich.table import Table

    df = datasets.load(args.dataset)
    table = Table(title=f"microagg demo: {args.dataset} ({len(df)}×{df.shape[1]}), k = {args.k}")
    for col in ("method", "IL %", "lower bound %", "seconds", "note"):
        table.add_column(col, justify="left" if col in ("method", "note") else "right")
    one_column = df.columns[:1]
    for info in registry.all_methods():
        data, note = df, ""
        if not info.multivariate:
            data, note = df[one_column], f"univariate: column {one_column[0]} only"
        elif info.per_variable:
            note = "each variable on its own: not k-anonymous"
        t = time.perf_counter()
        res = microaggregate(data, k=args.k, method=info.name, seed=0, time_limit=args.time_limit)
        secs = time.perf_counter() - t
        lb = "" if res.lower_bound_il is None else f"{res.lower_bound_il:.3f}"
        table.add_row(info.name, f"{res.information_loss:.3f}", lb, f"{secs:.2f}", note)
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
    pr.add_argument("--raw", action="store_true", help="do not standardise (run on raw values)")
    pr.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="method parameter")
    pr.set_defaults(func=cmd_protect)

    ev = sub.add_parser("evaluate", help="compare an original and a protected file")
    ev.add_argument("original")
    ev.add_argument("protected")
    ev.add_argument("--columns", help="quasi-identifier columns (default: the numeric columns that changed)")
    ev.add_argument("-k", type=int, default=None, help="check k-anonymity of the published QI values")
    ev.set_defaults(func=cmd_evaluate)

    me = sub.add_parser("methods", help="list the registered methods")
    me.add_argument("-v", "--verbose", action="store_true")
    me.set_defaults(func=cmd_methods)

    de = sub.add_parser("demo", help="run every method on a bundled data set")
    de.add_argument("--dataset", default="census", choices=datasets.names())
    de.add_argument("-k", type=int, default=3)
    de.add_argument("--time-limit", type=float, default=5.0, metavar="SECONDS",
                    help="budget for iterative methods (default 5)")
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


if __name__ == "__main__":
    sys.exit(main())
