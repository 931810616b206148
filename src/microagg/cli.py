"""Command line: microagg protect | evaluate | methods | demo.

Exit status: 0 done; 2 a user error (one line on stderr, found before any computation, nothing
written); 1 an internal error (a bug: "internal error" and the traceback on stderr); 130 / 143
interrupted by Ctrl-C / SIGTERM (one line, no temporary or partial file left). Output files are
written atomically (temporary file in the target folder, then rename) and never over the input.
stdout carries only the summary or, with --json, exactly one JSON document: the computation runs
with file descriptor 1 pointed at stderr, so chatter from C libraries (HiGHS) cannot reach it.

Nothing heavy is imported at module level: ``microagg --help`` answers at once.
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

EXIT_INTERNAL_ERROR = 1
EXIT_USER_ERROR = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

#: Run options that are not method parameters: --param NAME=... names the option instead.
_OPTIONS = ("seed", "time_limit", "progress", "weights", "sample_weight", "strata", "columns", "k", "deadline")


class UserError(InputError):
    """An error in what the user asked; reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, status 2
        raise UserError(f"{self.prog}: {message}")


# --- option parsing (all before any work) ------------------------------------------------------

def parse_param(text: str) -> tuple[str, str]:
    """NAME=VALUE -> (name, raw text); the value is typed by the method's declaration."""
    if "=" not in text:
        raise UserError(f"--param expects NAME=VALUE, got {text!r}")
    name, raw = text.split("=", 1)
    name = name.strip().replace("-", "_")
    if not name:
        raise UserError(f"--param expects NAME=VALUE, got {text!r}")
    if name in _OPTIONS:
        raise UserError(f"--param {name}=... is not a method parameter: use the --{name.replace('_', '-')} option")
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


def _names(text: str | None, option: str) -> list | None:
    """The column names of a comma-separated option; a name given twice is an error (exit 2)."""
    from .preprocess import given_twice

    names = [c.strip() for c in text.split(",") if c.strip()] if text else None
    twice = given_twice(names or ())
    if twice:
        raise UserError(f"{option} names a column twice: {', '.join(twice)}")
    return names


def as_in_header(names, header) -> list | None:
    """Column names from the command line (stripped by ``_names``) as the file spells them: a
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


def _check_time_limit(value) -> None:
    import math

    if value is not None and not (math.isfinite(value) and value > 0):
        raise UserError(f"--time-limit must be a positive number of seconds, got {value}")


def _check_interval_p(value) -> None:
    if value is not None and not 0 <= value <= 100:  # also False for NaN
        raise UserError(f"--interval-p must be in [0, 100], got {value}")


def _read_options(args) -> dict:
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
    """The machine-readable summary of a Result (``--json``)."""
    import numpy as np

    sizes = np.concatenate(res.group_sizes) if res.per_variable else np.asarray(res.group_sizes)
    return {
        "method": res.method,
        "k": res.k,
        "records": int(len(res.labels)),
        "columns": [str(c) for c in res.columns],
        "unchanged_columns": [str(c) for c in unchanged],
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


# --- commands --------------------------------------------------------------------------------

def _out_of_core_sample(src: Path, rows: int = 1000):
    """The first rows of a Parquet dataset or CSV, to apply the column rules before any pass."""
    import glob

    if src.is_dir() or src.suffix.lower() in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        files = [str(src)] if src.is_file() else sorted(glob.glob(str(src / "**" / "*.parquet"), recursive=True))
        if not files:
            raise UserError(f"no Parquet files found in {src}")
        try:
            return next(pq.ParquetFile(files[0]).iter_batches(batch_size=rows)).to_pandas()
        except (OSError, ValueError, StopIteration) as exc:
            raise UserError(f"cannot read {files[0]}: {_one_line(exc)}") from None
    from .scale import first_rows

    try:
        return first_rows(src, rows)  # typed by the same column rules as in memory (codes such as 00123 stay text)
    except (OSError, ValueError, UnicodeDecodeError, StopIteration) as exc:
        raise UserError(f"cannot read {src.name}: {_one_line(exc)}") from None


def protect_out_of_core_cli(args, params) -> int:
    """--out-of-core: stream a Parquet dataset or CSV through the partitioned mode (scale.py) into a
    new folder of Parquet partitions. Every check runs before the first pass over the data; the
    folder appears complete or not at all."""
    from . import io

    unsupported = [flag for flag, on in (
        ("--report", args.report), ("--weights", args.weights), ("--sample-weight", args.sample_weight),
        ("--raw", args.raw), ("--sep", args.sep), ("--decimal", args.decimal), ("--encoding", args.encoding),
        ("--missing", args.missing), ("--sheet", args.sheet), ("--labels-out", args.labels_out),
        ("--trim", args.trim is not None)) if on]
    if unsupported:
        raise UserError(f"--out-of-core does not support {', '.join(unsupported)} yet")
    if args.k < 2:
        raise UserError(f"k must be at least 2, got {args.k}")
    if args.block_size is None:
        raise UserError("--out-of-core needs --block-size (records per block, e.g. 5000)")
    src, out = Path(args.input), Path(args.output)
    if not src.exists():
        raise UserError(f"input file not found: {src}")
    if io.format_of(src) not in ("csv", "parquet"):
        raise UserError(f"--out-of-core reads CSV or Parquet, not {src.name}")
    io.check_output_path(out, src, folder=True)
    strata = _names(args.strata, "--strata")
    if args.merge_small_strata and not strata:
        raise UserError("--merge-small-strata needs --strata")
    from .preprocess import select_columns

    sample = _out_of_core_sample(src)
    unknown = [c for c in strata or () if c not in sample.columns]
    if unknown:
        raise UserError(f"unknown strata column(s): {', '.join(unknown)}")
    columns = select_columns(sample, _names(args.columns, "--columns"), exclude=strata or ())
    from .scale import protect_out_of_core

    box = {}

    def fill(tmp):
        with stdout_to_stderr(), progress_bar(not args.quiet, args.time_limit, f"microagg {args.method}") as bar:
            box["summary"] = protect_out_of_core(src, tmp, k=args.k, method=args.method, columns=columns,
                                                 block_size=args.block_size, scheduler=args.scheduler,
                                                 seed=args.seed, time_limit=args.time_limit, progress=bar,
                                                 strata=strata, merge_small_strata=args.merge_small_strata,
                                                 **params)

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


def cmd_protect(args) -> int:
    from . import io

    _check_time_limit(args.time_limit)
    _check_interval_p(args.interval_p)
    if args.interval_p is not None and args.report is None:
        raise UserError("--interval-p sets the report's interval disclosure: it needs --report")
    if args.seed is not None and args.seed < 0:
        raise UserError(f"--seed must be a non-negative integer, got {args.seed}")
    if args.block_size is not None and args.block_size < 1:
        raise UserError(f"--block-size must be a positive number of records, got {args.block_size}")
    params = method_params(args.method, args.param)
    start = None
    if args.init is not None:
        from . import methods as registry

        if "init" not in registry.get(args.method).params:
            takes = ", ".join(m for m in registry.names() if "init" in registry.get(m).params)
            raise UserError(f"method {args.method} takes no start partition; --init works with {takes}")
        if "init" in params:
            raise UserError("give the start partition once: --init FILE or --param init=...")
        if args.out_of_core or args.block_size is not None or args.scheduler is not None:
            raise UserError("--init cannot be combined with --out-of-core or --block-size: blocks are cut afresh")
        start = read_start_labels(args.init)
    if args.out_of_core:
        if args.categorical or args.ordinal or args.distance != "euclidean" or args.aggregation != "mean":
            raise UserError("--out-of-core takes continuous columns and group means only: drop --categorical, "
                            "--ordinal, --distance and --aggregation, or run without --out-of-core")
        return protect_out_of_core_cli(args, params)
    src = Path(args.input)
    if not src.exists():
        raise UserError(f"input file not found: {src}")
    io.format_of(src)
    out = io.check_output_path(Path(args.output), src)
    if args.init is not None and io.same_file(out, Path(args.init)):
        raise UserError(f"refusing to write the output over the --init file {out}")
    report_path = None
    if args.report is not None:
        from .report import check_report_path

        report_path = io.check_side_file(check_report_path(args.report), "report", src, out, args.init)
    labels_out = None if args.labels_out is None else io.check_side_file(args.labels_out, "labels", src, out,
                                                                            report_path, args.init)
    weights = parse_weights(args.weights)
    strata = _names(args.strata, "--strata")
    columns = _names(args.columns, "--columns")
    if args.columns is not None and not columns:
        raise UserError("--columns is empty")
    if args.merge_small_strata and not strata:
        raise UserError("--merge-small-strata needs --strata")

    read_options = _read_options(args)
    table = io.read(src, **read_options)
    io.check_writable(table, out)
    columns, strata = as_in_header(columns, table.header), as_in_header(strata, table.header)
    sample_weight = as_in_header([args.sample_weight], table.header)[0] if args.sample_weight else None
    categorical = as_in_header(_names(args.categorical, "--categorical"), table.header)
    ordinal = as_in_header(_names(args.ordinal, "--ordinal"), table.header)
    if isinstance(weights, dict):
        weights = dict(zip(as_in_header(list(weights), table.header), weights.values()))
    if start is not None:
        if len(start) != len(table.frame):
            raise UserError(f"--init {args.init} has {len(start)} labels for {len(table.frame)} records")
        params["init"] = start
    table.check_columns(columns)
    table.check_columns(strata, "stratum")
    table.check_columns([sample_weight] if sample_weight else [], "sample weight")
    table.check_columns((categorical or []) + (ordinal or []))
    show = not args.quiet
    from .api import microaggregate

    with stdout_to_stderr(), progress_bar(show, args.time_limit, f"microagg {args.method}") as callback:
        res = microaggregate(
            table.frame,
            k=args.k,
            method=args.method,
            columns=columns,
            seed=args.seed,
            standardize=not args.raw,
            time_limit=args.time_limit,
            strata=strata,
            block_size=args.block_size,
            scheduler=args.scheduler,
            weights=weights,
            sample_weight=sample_weight,
            merge_small_strata=args.merge_small_strata,
            progress=callback if callback is not None else False,
            categorical=categorical, ordinal=ordinal, distance=args.distance,
            aggregation=args.aggregation, trim=args.trim, missing=read_options["missing"],
            **params,
        )
        report_text = None
        if report_path is not None:
            from .report import render_report

            settings = {"input": str(src), "output": str(out), "seed": args.seed,
                        "time limit (s)": args.time_limit, "strata": ", ".join(strata) if strata else None,
                        "standardised": not args.raw, "block size": args.block_size}
            report_text = render_report(res, table.frame, settings,
                                        p=10.0 if args.interval_p is None else args.interval_p)
    published = {c: res.data[c].to_numpy() for c in res.columns}
    io.write(table, out, published)
    if report_text is not None:
        io.atomic_write_text(report_path, report_text)
    if labels_out is not None:
        io.atomic_write_text(labels_out, labels_text(res.labels))
    unchanged = [c for c in table.header if c not in set(res.columns)]
    if args.json:
        print_json(result_record(res, out, report_path, unchanged))
    else:
        print(res.summary())
        print(f"protected (quasi-identifiers): {', '.join(map(str, res.columns))}")
        if unchanged:
            print(f"unchanged: {', '.join(map(str, unchanged))}")
        print(f"written: {out}")
        if report_path is not None:
            print(f"report: {report_path}")
        if labels_out is not None:
            print(f"labels: {labels_out}")
    return 0


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
    from .preprocess import quasi_identifiers, select_columns

    _check_interval_p(args.interval_p)
    if args.k is not None and args.k < 1:
        raise UserError(f"-k must be at least 1, got {args.k}")
    options = _read_options(args)
    orig_table = io.read(args.original, **options)
    prot_table = io.read(args.protected, **options)
    orig, prot = orig_table.frame, prot_table.frame
    if len(orig) != len(prot):
        raise UserError(f"the files have different numbers of rows ({len(orig)} and {len(prot)})")
    columns = as_in_header(_names(args.columns, "--columns"), orig_table.header)
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
    from . import datasets
    from .demo import run_demo

    if args.dataset not in datasets.names():
        raise UserError(f"unknown data set {args.dataset!r}; bundled: {', '.join(datasets.names())}")
    if args.k < 2:
        raise UserError(f"k must be at least 2, got {args.k}")
    _check_time_limit(args.time_limit)
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
                 allow_remote=args.allow_remote, max_upload_mb=args.max_upload_mb)


def _add_read_options(p) -> None:
    p.add_argument("--sep", help="CSV field separator (default: detected among , ; tab |); 'tab' for a tab")
    p.add_argument("--decimal", choices=(".", ","), help="CSV decimal mark (default: detected)")
    p.add_argument("--encoding", help="CSV text encoding (default: UTF-8 with or without BOM, else cp1252/latin-1)")
    p.add_argument("--sheet", help="Excel: the worksheet to read (default: the first)")
    p.add_argument("--missing", metavar="TOKEN,...",
                   help="text tokens that mean 'missing' (e.g. '-,.,n/a'); a missing value in a "
                        "quasi-identifier is still an error, other columns are written unchanged")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="microagg", description="Microaggregation of numeric microdata (k-anonymity by group means).")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    sub.required = True

    pr = sub.add_parser("protect", help="microaggregate a data file (CSV, Parquet, Stata, SPSS, SAS, Excel)")
    pr.add_argument("input")
    pr.add_argument("-o", "--output", required=True,
                    help="output file; its suffix sets the format (the input's format and CSV dialect when "
                         "the suffixes match); written atomically, never over the input")
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
    pr.add_argument("--categorical", metavar="A,B", help="nominal quasi-identifier columns (publish the group's mode)")
    pr.add_argument("--ordinal", metavar="C,D", help="ordinal quasi-identifier columns (publish the median category)")
    pr.add_argument("--distance", default="euclidean", help="euclidean | mahalanobis | robust (MCD covariance)")
    pr.add_argument("--aggregation", default="mean", help="continuous representative: mean | median | trimmed | onestep")
    pr.add_argument("--trim", type=float, default=None, help="share trimmed at each end with --aggregation trimmed (0.1)")
    pr.add_argument("--report", metavar="REPORT.html", help="write a self-contained HTML report (atomically)")
    pr.add_argument("--labels-out", metavar="FILE", help="write each record's group label, one per line "
                    "(atomically): the partition, to check or to continue from with --init")
    pr.add_argument("--init", metavar="FILE", help="start from this partition (one group label per line, as "
                    "--labels-out writes): icsm, lsearch and colgen continue improving it")
    pr.add_argument("--interval-p", type=float, default=None, metavar="P",
                    help="rank-interval percentage for interval disclosure in the report (default 10)")
    _add_read_options(pr)
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
    ap.add_argument("--max-upload-mb", type=float, default=2048.0, metavar="N", help="upload limit (default 2048)")
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
