"""Command line: microagg protect | evaluate | methods | demo | app.

Exit status: 0 done; 2 a user error (one line on stderr, found before any computation, nothing
written); 1 an internal error (a bug: "internal error" and the traceback on stderr); 130 / 143
interrupted by Ctrl-C / SIGTERM (one line, no temporary or partial file left). Output files are
written atomically (temporary file in the target folder, then rename) and never over the input.
stdout carries only the summary or, with --json, exactly one JSON document: the computation runs
with file descriptor 1 pointed at stderr, so chatter from C libraries (HiGHS) cannot reach it.

The run options' flags (-k, --method, --columns, --time-limit, --strata, ...) are generated from
their declarations (``microagg.options.RUN_OPTIONS``) and validated by them, all before the data
are read, exactly as the API validates them. Nothing heavy is imported at module level:
``microagg --help`` answers at once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import traceback
import warnings
from pathlib import Path

from .clock import mark_command_thread
from .errors import InputError
from .params import Param

EXIT_INTERNAL_ERROR = 1
EXIT_USER_ERROR = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

#: the rank-interval percentage of interval disclosure (evaluate, and protect's report)
INTERVAL_P = Param("interval_p", "float", 10.0, "rank-interval percentage for interval disclosure", low=0.0,
                   high=100.0, flags=("--interval-p",), metavar="P")


class UserError(InputError):
    """An error in what the user asked; reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, status 2
        raise UserError(f"{self.prog}: {message}")


# --- option parsing (all before any work) ------------------------------------------------------

def parse_param(text: str) -> tuple[str, str]:
    """NAME=VALUE -> (name, raw text); the value is typed by the method's declaration."""
    from .options import RUN_OPTIONS

    if "=" not in text:
        raise UserError(f"--param expects NAME=VALUE, got {text!r}")
    name, raw = text.split("=", 1)
    name = name.strip().replace("-", "_")
    if not name:
        raise UserError(f"--param expects NAME=VALUE, got {text!r}")
    declared = {p.name: p for p in RUN_OPTIONS}
    if name in declared or name == "deadline":
        flag = declared[name].flags[0] if name in declared and declared[name].flags else None
        raise UserError(f"--param {name}=... is not a method parameter"
                        + (f": use the {flag} option" if flag else ""))
    return name, raw.strip()


def method_params(method: str, texts) -> dict:
    """The --param values for ``method``, each parsed and validated by the method's declaration
    (``microagg.methods.get(method).params[name]``): wrong type, NaN or out of range is a
    ParameterError here, before any data are read."""
    from . import methods as registry

    info = registry.get(method)
    raw: dict = {}
    for text in texts:
        name, value = parse_param(text)
        if name in raw:
            raise UserError(f"--param {name} is given twice")
        raw[name] = value
    values = {name: info.params[name].parse(text, method) if name in info.params else text
              for name, text in raw.items()}
    info.validate(values)  # unknown names, types, ranges, choices: one ParameterError
    return values


def parse_weights(text: str | None):
    """--weights: "2,1,0.5" (one per QI column, in order) or "AGI=2,INCOME=0.5" (others weigh 1)."""
    from .errors import ParameterError
    from .options import parse_weights as parse

    try:
        return None if text is None else parse(text)
    except ParameterError as exc:
        raise UserError(str(exc)) from None


def as_in_header(names, header) -> list | None:
    """Column names from the command line (stripped when parsed) as the file spells them: a
    hand-written header 'x, y' holds the name ' y', so a name matching no column exactly takes
    the one column whose name it is once stripped."""
    if not names:
        return names
    out = []
    for name in names:
        if name not in header:
            near = [h for h in dict.fromkeys(header) if isinstance(h, str) and h.strip() == name]
            if len(near) == 1:
                name = near[0]
        out.append(name)
    return out


def read_start_labels(path: str):
    """--init: the partition to start from, one integer group label per line in record order
    (what --labels-out writes)."""
    import numpy as np

    src = Path(path)
    if not src.is_file():
        raise UserError(f"--init file not found: {src}")
    labels = []
    for number, line in enumerate(src.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        text = line.strip()
        try:
            labels.append(int(text))
        except ValueError:
            raise UserError(f"--init {src}: line {number} is not an integer group label: {text[:40]!r}") from None
    if not labels:
        raise UserError(f"--init {src} is empty")
    return np.asarray(labels, dtype=np.int64)


def labels_text(labels) -> str:
    """One line per record: its group label (per-variable methods: one label per column, comma-separated)."""
    if labels.ndim == 1:
        return "\n".join(map(str, labels.tolist())) + "\n"
    return "\n".join(",".join(map(str, row)) for row in labels.tolist()) + "\n"


def _interval_p(args, default=None):
    """--interval-p, validated by its declaration (errors name the flag)."""
    from dataclasses import replace

    if args.interval_p is None:
        return default
    shown = replace(INTERVAL_P, name="--interval-p")
    return shown.validate(shown.parse(args.interval_p, None), None)


def _read_options(args) -> dict:
    """The reader's options: the CSV dialect, the Excel sheet and the missing-value tokens."""
    return {"sep": args.sep, "decimal": args.decimal, "encoding": args.encoding, "sheet": args.sheet,
            "missing": tuple(t for t in (args.missing or "").split(",") if t.strip())}


# --- output ----------------------------------------------------------------------------------

def _to_json(obj):
    """JSON-safe copy: numpy scalars/arrays to Python, non-finite floats to None."""
    import math

    import numpy as np

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
    import json

    print(json.dumps(_to_json(obj), ensure_ascii=False))


def result_record(res, output=None, report=None, unchanged=()) -> dict:
    """The machine-readable summary of a Result (``--json``): the run's audit figures and facts."""
    return {
        "method": res.method,
        "k": res.k,
        "records": int(len(res.labels)),
        "columns": [str(c) for c in res.columns],
        "unchanged_columns": [str(c) for c in unchanged],
        "params": res.params,
        **res.audit.group("run"),
        "per_variable": res.per_variable,
        "seconds": res.seconds,
        "extras": res.extras,
        "output": None if output is None else str(output),
        "report": None if report is None else str(report),
    }


@contextlib.contextmanager
def stdout_to_stderr():
    """Point file descriptor 1 (and sys.stdout) at stderr while third-party code runs: C libraries
    such as HiGHS print their banners on fd 1, which must carry only our summary or JSON."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no fd 1 (closed): nothing to protect
        saved = None
    if saved is not None:
        os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


@contextlib.contextmanager
def progress_bar(enabled: bool, time_limit, description: str):
    """The one progress channel of the run: a bar on stderr (microagg.progress) when stderr is a
    terminal, or nothing (a log file or a pipe gets no bar)."""
    if not enabled or not _isatty(sys.stderr):
        from .progress import compile_notice

        yield compile_notice() if enabled else None  # no bar: one line if kernels compile
        return
    from .progress import stderr_bar

    with stderr_bar(time_limit, description) as callback:
        yield callback


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# --- protect ---------------------------------------------------------------------------------

def protect_out_of_core_cli(args, options: dict, params: dict) -> int:
    """--out-of-core: stream a Parquet dataset or CSV through the partitioned mode into a new
    folder of Parquet partitions (outofcore.py). Every check runs before the first pass over the
    data; the folder appears complete or not at all."""
    from . import io
    from .outofcore import check_out_of_core, protect_out_of_core

    unsupported = [flag for flag, on in (
        ("--report", args.report), ("--sep", args.sep), ("--decimal", args.decimal), ("--encoding", args.encoding),
        ("--sheet", args.sheet), ("--labels-out", args.labels_out)) if on]
    if unsupported:
        raise UserError(f"--out-of-core does not support {', '.join(unsupported)} yet")
    check_out_of_core(options, cli=True)
    src, out = Path(args.input), Path(args.output)
    if not src.exists():
        raise UserError(f"input file not found: {src}")
    io.check_output_path(out, src, folder=True)
    box = {}

    def fill(tmp):
        with stdout_to_stderr(), progress_bar(not args.quiet, options.get("time_limit"),
                                              f"microagg {options.get('method', 'mdav')}") as bar:
            box["summary"] = protect_out_of_core(src, tmp, progress=bar, **options, **params)

    io.atomic_folder(out, fill)
    summary = {k: (v if isinstance(v, (int, float, str, list, bool)) or v is None else str(v))
               for k, v in box["summary"].items() if k != "files"}
    if args.json:
        print_json({"output": str(out), **summary})
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
        print(f"written: {out}/")
    return 0


def _protect_paths(args, src: Path):
    """(output, report, labels file): each checked before any work (format, folder, writable, not
    the input or another file of the run)."""
    from . import io

    out = io.check_output_path(Path(args.output), src)
    if args.init is not None and io.same_file(out, Path(args.init)):
        raise UserError(f"refusing to write the output over the --init file {out}")
    report_path = None
    if args.report is not None:
        from .report import check_report_path

        report_path = io.check_side_file(check_report_path(args.report), "report", src, out, args.init)
    labels_out = None if args.labels_out is None else io.check_side_file(args.labels_out, "labels", src, out,
                                                                            report_path, args.init)
    return out, report_path, labels_out


def _start_partition(args, options: dict, params: dict):
    """--init: the labels to start from (read here), for a method that takes a start partition."""
    if args.init is None:
        return None
    from . import methods as registry

    method = options.get("method", "mdav")
    if "init" not in registry.get(method).params:
        takes = ", ".join(m for m in registry.names() if "init" in registry.get(m).params)
        raise UserError(f"method {method} takes no start partition; --init works with {takes}")
    if "init" in params:
        raise UserError("give the start partition once: --init FILE or --param init=...")
    if args.out_of_core or options.get("block_size") is not None or options.get("scheduler") is not None:
        raise UserError("--init cannot be combined with --out-of-core or --block-size: blocks are cut afresh")
    return read_start_labels(args.init)


def _as_in_file(options: dict, table) -> dict:
    """The column names of the options as the file's header spells them (``as_in_header``); a
    duplicated header name named in an option is an error."""
    header = table.header
    out = dict(options)
    for name in ("columns", "strata", "categorical"):
        if out.get(name):
            out[name] = as_in_header(out[name], header)
    if out.get("ordinal"):
        out["ordinal"] = dict(zip(as_in_header(list(out["ordinal"]), header), out["ordinal"].values()))
    if isinstance(out.get("sample_weight"), str):
        out["sample_weight"] = as_in_header([out["sample_weight"]], header)[0]
    if isinstance(out.get("weights"), dict):
        out["weights"] = dict(zip(as_in_header(list(out["weights"]), header), out["weights"].values()))
    table.check_columns(out.get("columns"))
    table.check_columns(out.get("strata"), "stratum")
    table.check_columns([out["sample_weight"]] if isinstance(out.get("sample_weight"), str) else [], "sample weight")
    table.check_columns((out.get("categorical") or []) + list(out.get("ordinal") or []))
    return out


def cmd_protect(args) -> int:
    from . import io
    from .options import from_arguments, validate_run

    options = from_arguments(args)
    params = method_params(options.get("method", "mdav"), args.param)
    run = validate_run(options, params, cli=True)  # every option and parameter, before the data are read
    interval_p = _interval_p(args)
    if interval_p is not None and args.report is None:
        raise UserError("--interval-p sets the report's interval disclosure: it needs --report")
    start = _start_partition(args, options, params)
    if args.out_of_core:
        return protect_out_of_core_cli(args, options, params)
    src = Path(args.input)
    if not src.exists():
        raise UserError(f"input file not found: {src}")
    io.format_of(src)
    out, report_path, labels_out = _protect_paths(args, src)
    table = io.read(src, **_read_options(args))
    io.check_writable(table, out)
    options = _as_in_file(options, table)
    if start is not None:
        if len(start) != len(table.frame):
            raise UserError(f"--init {args.init} has {len(start)} labels for {len(table.frame)} records")
        params["init"] = start
    res, report_text = _protect(args, table, options, params, run, report_path, out, interval_p)
    io.write(table, out, {c: res.data[c].to_numpy() for c in res.columns})
    if report_text is not None:
        io.atomic_write_text(report_path, report_text)
    if labels_out is not None:
        io.atomic_write_text(labels_out, labels_text(res.labels))
    _print_protected(args, res, table, out, report_path, labels_out)
    return 0


def _protect(args, table, options, params, run, report_path, out, interval_p):
    """The run (the API's microaggregate on the table read) and its report, with stdout kept clean."""
    from .api import microaggregate

    with stdout_to_stderr(), progress_bar(not args.quiet, run.time_limit, f"microagg {run.method}") as callback:
        res = microaggregate(table, **options, progress=callback if callback is not None else False, **params)
        report_text = None
        if report_path is not None:
            from .report import render_report

            settings = {"input": str(table.path), "output": str(out), "seed": run.seed,
                        "time limit (s)": run.time_limit,
                        "strata": ", ".join(map(str, run.strata)) if run.strata else None,
                        "standardised": run.standardize, "block size": run.block_size}
            report_text = render_report(res, table.frame, settings, p=10.0 if interval_p is None else interval_p)
    return res, report_text


def _print_protected(args, res, table, out, report_path, labels_out) -> None:
    unchanged = [c for c in table.header if c not in set(res.columns)]
    if args.json:
        print_json(result_record(res, out, report_path, unchanged))
        return
    print(res.summary())
    print(f"protected (quasi-identifiers): {', '.join(map(str, res.columns))}")
    if unchanged:
        print(f"unchanged: {', '.join(map(str, unchanged))}")
    print(f"written: {out}")
    if report_path is not None:
        print(f"report: {report_path}")
    if labels_out is not None:
        print(f"labels: {labels_out}")


# --- evaluate --------------------------------------------------------------------------------

def _warn_unaligned(orig, prot, qis) -> None:
    """evaluate compares records row by row: a column both files hold that is not a QI (an id, a
    category) and differs shows that the protected file's records are in another order."""
    import numpy as np
    import pandas as pd

    for c in orig.columns:
        if c in qis or c not in prot.columns:
            continue
        a, b = orig[c], prot[c]
        if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
            x, y = a.to_numpy(np.float64, na_value=np.nan), b.to_numpy(np.float64, na_value=np.nan)
            differ = (x != y) & ~(np.isnan(x) & np.isnan(y))
        else:
            differ = a.astype(str).to_numpy() != b.astype(str).to_numpy()
        if differ.any():
            warnings.warn(f"column {c} differs between the files ({int(differ.sum())} rows, first at row "
                          f"{int(np.flatnonzero(differ)[0]) + 1}): the measures compare records row by row, so both "
                          "files must hold the same records in the same order", UserWarning, stacklevel=2)
            return


def cmd_evaluate(args) -> int:
    import numpy as np

    from . import io, measures
    from .params import column_names
    from .preprocess import quasi_identifiers, select_columns

    interval_p = _interval_p(args, default=10.0)
    if args.k is not None and args.k < 1:
        raise UserError(f"-k must be at least 1, got {args.k}")
    options = _read_options(args)
    orig_table = io.read(args.original, **options)
    prot_table = io.read(args.protected, **options)
    orig, prot = orig_table.frame, prot_table.frame
    if len(orig) != len(prot):
        raise UserError(f"the files have different numbers of rows ({len(orig)} and {len(prot)})")
    columns = as_in_header(column_names(args.columns, "--columns"), orig_table.header)
    orig_table.check_columns(columns)
    cols = select_columns(orig, columns)
    missing = [c for c in cols if c not in prot.columns]
    if missing:
        raise UserError(f"column(s) missing from the protected file: {', '.join(map(str, missing))}")
    if args.columns is None:  # default: the numeric columns the protection changed
        changed = [c for c in cols if not np.array_equal(orig[c].to_numpy(), prot[c].to_numpy())]
        cols = changed or cols
    _warn_unaligned(orig, prot, cols)
    X = quasi_identifiers(orig, cols)
    try:
        Xp = quasi_identifiers(prot, cols)
    except InputError as exc:
        raise UserError(f"protected file: {exc}") from None
    with stdout_to_stderr(), progress_bar(not args.quiet and not args.json, None, "evaluating"):
        audit = measures.compare(X, Xp, p=interval_p).audit("utility", "risk")
    anonymous = None if args.k is None else bool(audit["smallest_group"] >= args.k)
    if args.json:
        print_json({"columns": [str(c) for c in cols], "records": len(X), "utility": audit.group("utility"),
                    "risk": audit.group("risk"), "k": args.k, "k_anonymous": anonymous})
        return 0
    print(f"quasi-identifiers: {', '.join(map(str, cols))}")
    for title, group in (("utility / information loss", "utility"), ("disclosure risk", "risk")):
        print(title)
        for figure in audit.rows(group):
            if group == "utility" and figure.name == "smallest_group":
                continue  # listed once, with the risk figures
            note = ""
            if figure.name == "smallest_group" and args.k is not None:
                note = "  (k-anonymous)" if anonymous else f"  (NOT {args.k}-anonymous)"
            print(f"  {figure.measure.label + ':':45s} {figure.text()}{note}")
    return 0


def cmd_methods(args) -> int:
    from . import methods as registry

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


def cmd_demo(args) -> int:
    from dataclasses import replace

    from . import datasets
    from .demo import run_demo
    from .options import option

    if args.dataset not in datasets.names():
        raise UserError(f"unknown data set {args.dataset!r}; bundled: {', '.join(datasets.names())}")
    replace(option("k"), name="-k").validate(args.k, None)
    replace(option("time_limit"), name="--time-limit").validate(args.time_limit, None)
    run_demo(args.dataset, args.k, args.time_limit, quiet_stdout=stdout_to_stderr)
    return 0


def cmd_app(args) -> int:
    """microagg app: the local web app (microagg.app), imported only when asked for."""
    import importlib.util

    if importlib.util.find_spec("shiny") is None:
        print('microagg: error: the app needs its extra: pip install "microagg[app]"', file=sys.stderr)
        return EXIT_USER_ERROR
    from .app import serve

    return serve(args.file, host=args.host, port=args.port, open_browser=not args.no_browser,
                 allow_remote=args.allow_remote, max_upload_mb=args.max_upload_mb, token=args.token)


def _add_read_options(p, missing: bool = True) -> None:
    p.add_argument("--sep", help="CSV field separator (default: detected among , ; tab |); 'tab' for a tab")
    p.add_argument("--decimal", choices=(".", ","), help="CSV decimal mark (default: detected)")
    p.add_argument("--encoding", help="CSV text encoding (default: UTF-8 with or without BOM, else cp1252/latin-1)")
    p.add_argument("--sheet", help="Excel: the worksheet to read (default: the first)")
    if missing:
        p.add_argument("--missing", metavar="TOKEN,...",
                       help="text tokens that mean 'missing' (e.g. '-,.,n/a'); a missing value in a "
                            "quasi-identifier is still an error, other columns are written unchanged")


def build_parser() -> argparse.ArgumentParser:
    from . import io
    from .options import add_arguments

    p = _Parser(prog="microagg", description="Microaggregation of numeric microdata (k-anonymity by group means).")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    sub.required = True

    pr = sub.add_parser("protect", help=f"microaggregate a data file ({io.supported_text()})")
    pr.add_argument("input")
    pr.add_argument("-o", "--output", required=True,
                    help="output file; its suffix sets the format (the input's format and CSV dialect when "
                         "the suffixes match); written atomically, never over the input")
    add_arguments(pr, required=("k",))  # the run options, from their declarations
    pr.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="method parameter")
    pr.add_argument("--out-of-core", action="store_true",
                    help="stream a Parquet dataset or CSV larger than memory in chunks (needs --block-size); "
                         "OUTPUT is a new folder of Parquet partitions")
    pr.add_argument("--report", metavar="REPORT.html", help="write a self-contained HTML report (atomically)")
    pr.add_argument("--labels-out", metavar="FILE", help="write each record's group label, one per line "
                    "(atomically): the partition, to check or to continue from with --init")
    pr.add_argument("--init", metavar="FILE", help="start from this partition (one group label per line, as "
                    "--labels-out writes): icsm, lsearch and colgen continue improving it")
    pr.add_argument("--interval-p", default=None, metavar="P",
                    help="rank-interval percentage for interval disclosure in the report (default 10)")
    _add_read_options(pr, missing=False)  # --missing is a run option
    pr.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    pr.add_argument("--json", action="store_true", help="print one JSON object on stdout instead of the summary")
    pr.set_defaults(func=cmd_protect)

    ev = sub.add_parser("evaluate", help="compare an original and a protected file")
    ev.add_argument("original")
    ev.add_argument("protected")
    ev.add_argument("--columns", help="quasi-identifier columns (default: the numeric columns that changed)")
    ev.add_argument("-k", type=int, default=None, help="check k-anonymity of the published QI values")
    ev.add_argument("-p", "--interval-p", default=None, metavar="P",
                    help="rank-interval percentage for interval disclosure (default 10)")
    _add_read_options(ev)
    ev.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    ev.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ev.set_defaults(func=cmd_evaluate)

    me = sub.add_parser("methods", help="list the registered methods")
    me.add_argument("-v", "--verbose", action="store_true")
    me.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    me.set_defaults(func=cmd_methods)

    de = sub.add_parser("demo", help="run every method on a bundled data set")
    de.add_argument("--dataset", default="census", help="census, tarragona or eia (default census)")
    de.add_argument("-k", type=int, default=3)
    de.add_argument("--time-limit", type=float, default=1.0, metavar="SECONDS",
                    help="budget for each iterative method (default 1)")
    de.set_defaults(func=cmd_demo)

    ap = sub.add_parser("app", help="open the point-and-click web app in the browser")
    ap.add_argument("file", nargs="?", help="a data file to load at start")
    ap.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    ap.add_argument("--no-browser", action="store_true", help="do not open the browser")
    ap.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)")
    ap.add_argument("--allow-remote", action="store_true", help="allow a --host other machines can reach")
    ap.add_argument("--max-upload-mb", type=float, default=2048.0, metavar="N",
                    help="upload limit of a page, all its uploads together; also what an upload may decompress to "
                         "(default 2048)")
    ap.add_argument("--token", help="the token the page needs (default: $MICROAGG_APP_TOKEN, else a random one); "
                                    "other users of this machine can see a command line: prefer the variable")
    ap.set_defaults(func=cmd_app)
    return p


# --- running a command: errors, signals ------------------------------------------------------

def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _run_command(args) -> int:
    """Run the command; map its outcome to an exit status (in the thread that runs it)."""
    try:
        return args.func(args)
    except InputError as exc:  # exactly the user errors: ours, argparse's, the library's family
        print(f"microagg: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:  # e.g. piped into head: not an error of ours
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")
        return 0
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except Exception as exc:  # a bug of ours: say so, with the traceback
        print(f"microagg: internal error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return EXIT_INTERNAL_ERROR


def _on_signal(signum, frame):  # noqa: ARG001
    """Ctrl-C / SIGTERM: remove unfinished temporary files, one line, exit at once (even while a
    numba kernel or HiGHS runs in the worker thread)."""
    from .io import remove_temporaries

    remove_temporaries()
    code, word = (EXIT_SIGINT, "interrupted") if signum == signal.SIGINT else (EXIT_SIGTERM, "terminated")
    with contextlib.suppress(Exception):
        os.write(2, f"\nmicroagg: {word}\n".encode())
    os._exit(code)


def _run_in_worker(args) -> int:
    """The command runs in a worker thread while the main thread waits in short steps, so a signal
    handler runs promptly whatever the worker is doing (numba kernels release the GIL)."""
    box = {"code": EXIT_INTERNAL_ERROR}

    def work():
        box["code"] = _run_command(args)

    worker = threading.Thread(target=work, name="microagg-command", daemon=True)
    mark_command_thread(worker)  # it stands in for the main thread (auto may run its second thread)
    worker.start()
    while worker.is_alive():
        worker.join(0.1)
    return box["code"]


def main(argv=None) -> int:
    """Run the command line; returns the exit status. Warnings are shown (one line each, on
    stderr) when the command ends, and only if it did not fail on a user error, whose one line is
    then all that stderr holds."""
    shown: list = []

    def keep_warning(message, category, filename, lineno, file=None, line=None):
        text = "microagg: warning: " + " ".join(str(message).split())  # one line (pandas' may hold many)
        if text not in shown:
            shown.append(text)

    saved_show = warnings.showwarning
    warnings.showwarning = keep_warning
    code = EXIT_INTERNAL_ERROR
    try:
        try:
            args = build_parser().parse_args(argv)
        except UserError as exc:
            print(f"microagg: error: {_one_line(exc)}", file=sys.stderr)
            code = EXIT_USER_ERROR
            return code
        if threading.current_thread() is not threading.main_thread():
            code = _run_command(args)
            return code
        handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        for s in handlers:
            signal.signal(s, _on_signal)
        try:
            code = _run_in_worker(args)
            return code
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
    finally:
        warnings.showwarning = saved_show
        if code != EXIT_USER_ERROR:
            for text in shown:
                print(text, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
