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

from .deadline import mark_command_thread
from .errors import InputError
from .declarations import Param

EXIT_INTERNAL_ERROR = 1
EXIT_USER_ERROR = 2
EXIT_KEYS_BELOW_K = 3  # --on-keys-below-k report: the file is written, but not k-anonymous on its keys
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

#: the rank-interval percentage of interval disclosure (evaluate, and protect's report)
INTERVAL_P = Param("interval_p", "float", 10.0, "rank-interval percentage for interval disclosure", low=0.0,
                   high=100.0, flags=("--interval-p",), metavar="P")


class UserError(InputError):
    """An error in what the user asked; reported in one line, exit status 2."""


#: what a command that does not exist probably meant
_NOT_A_COMMAND = {"report": "the HTML report is written by 'microagg protect IN -o OUT --report REPORT.html' (or "
                            "'microagg explore IN --report MAP.html')",
                  "version": "'microagg --version' prints the version"}


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line, raised (main prints it once, with the one
    ``microagg: error:`` prefix, and exits 2): a subcommand's name its errors, the unknown or
    missing command a line listing the commands."""

    def error(self, message):
        words = self.prog.split()[1:]  # "microagg protect" -> ["protect"]
        if not words:
            commands = ", ".join(_commands(self))
            if "required: COMMAND" in message:
                message = f"no command given: microagg COMMAND, one of {commands} (microagg --help)"
            elif message.startswith("argument COMMAND: invalid choice:"):
                given = message.split("invalid choice:", 1)[1].split("(", 1)[0].strip().strip("'")
                hint = _NOT_A_COMMAND.get(given)
                message = f"no command {given!r}: " + (f"{hint}; " if hint else "") + f"the commands are {commands}"
        raise UserError(f"{words[0]}: {message}" if words else message)


def _commands(parser) -> list[str]:
    return [name for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name in action.choices]


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
    """JSON-safe copy: numpy scalars/arrays to Python, non-finite floats to None (one home:
    ``manifest.json_safe``)."""
    from .manifest import json_safe

    return json_safe(obj)


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
        "utility": res.audit.group("utility"),
        "risk": res.audit.group("risk"),
        "categories": res.audit.categories,
        "warnings": list(res.audit.warnings),
        "audit_context": res.audit.context,
        "strata_published": None if res.strata is None or not res.strata.merges else {
            "how": res.strata.published, "mapping": list(res.strata.mapping)},
        "shuffled": bool(getattr(res, "shuffled", False)),
        "suppression": None if getattr(res, "suppression", None) is None else res.suppression.to_dict(),
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
    folder of Parquet partitions, published as every file is (``publication.publish_folder``:
    read back, k-anonymity counted on every record, audited on a sample, with its manifest).
    Every check runs before the first pass over the data; the folder and its manifest appear
    complete or not at all."""
    from .outofcore import check_out_of_core
    from .publication import publish_folder

    unsupported = [flag for flag, on in (
        ("--report", args.report), ("--sep", args.sep), ("--decimal", args.decimal), ("--encoding", args.encoding),
        ("--sheet", args.sheet), ("--labels-out", args.labels_out)) if on]
    if unsupported:
        raise UserError(f"--out-of-core does not support {', '.join(unsupported)} yet")
    run = check_out_of_core(options, params, cli=True)
    bar = progress_bar(not args.quiet, options.get("time_limit"), f"microagg {options.get('method', 'mdav')}")
    with stdout_to_stderr():
        summary, published = publish_folder(Path(args.input), Path(args.output), options, params, run,
                                            command_input=str(args.input), progress_context=bar)
    audit = summary.pop("audit")
    summary = {k: (v if isinstance(v, (int, float, str, list, bool)) or v is None else str(v))
               for k, v in summary.items()}
    risk = audit.group("risk")
    if args.json:
        print_json({"output": str(published.path), "manifest": str(published.manifest), **summary,
                    "verified": {"read_back_by": published.read_back_by, "key_variables": published.key_variables,
                                 "k_anonymous": published.k_anonymous,
                                 "smallest_frequency": published.smallest_frequency},
                    "utility": audit.group("utility"), "risk": risk, "audit_context": audit.context})
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
        sampled = audit.context.get("sampled", {})
        print(f"published file: {summary['k']}-anonymous on its key variables ({', '.join(published.key_variables)}),"
              f" counted on every record as pyarrow reads them back: the rarest combination is shared by "
              f"{published.smallest_frequency} records")
        print(f"audit: on a random sample of {sampled.get('records', 0):,} of {sampled.get('of', 0):,} records "
              "(k-anonymity exact)")
        print(f"written: {published.path}/")
        print(f"manifest: {published.manifest}")
    return 0


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


def cmd_protect(args) -> int:
    from .options import from_arguments, validate_run
    from .publication import publish

    if args.from_manifest is not None:  # re-run a publication and check it (microagg.reproduce)
        from .reproduce import protect_from_manifest

        return protect_from_manifest(args, lambda argv: build_parser().parse_args(["protect", *argv]), cmd_protect)
    options = from_arguments(args)
    if args.from_explore is not None or args.pick is not None:
        options, picked_params = _from_explore(args, options)
        args.param = [f"{name}={value}" for name, value in picked_params.items() if name != "init"]
    elif "k" not in options:
        raise UserError("protect: the following arguments are required: -k")
    params = method_params(options.get("method", "mdav"), args.param)
    if args.from_explore is not None:
        options["labels"] = args.picked_labels
    run = validate_run(options, params, cli=True)  # every option and parameter, before the data are read
    interval_p = _interval_p(args)
    start = _start_partition(args, options, params)
    if args.out_of_core:
        return protect_out_of_core_cli(args, options, params)
    bar = progress_bar(not args.quiet, run.time_limit, f"microagg {run.method}")
    with stdout_to_stderr():
        res = publish(Path(args.input), args.output, options, params, run, read_options=_read_options(args),
                      report=args.report, labels_out=args.labels_out, interval_p=interval_p, init=args.init,
                      init_labels=start, command_input=str(args.input), progress_context=bar)
    _print_protected(args, res)
    if res.suppression is not None and res.suppression.mode == "report" and res.suppression.records_left_below_k:
        print(f"microagg: {res.suppression.warnings()[0]}", file=sys.stderr)
        return EXIT_KEYS_BELOW_K
    return 0


def _from_explore(args, given: dict) -> tuple[dict, dict]:
    """--from-explore RESULT.json --pick N: the run options and parameters of run N of the
    exploration (its labels in args.picked_labels), for the input it explored (same SHA-256).
    Options given on the command line that a run fixes are errors; --shuffle and the output's
    own options (report, labels, json) may be added."""
    from . import explore, manifest

    if args.from_explore is None or args.pick is None:
        raise UserError("--from-explore and --pick go together: --from-explore RESULT.json --pick N")
    fixed = [name for name in given if name not in ("shuffle", "household", "shuffle_seed")]
    if fixed or args.param or args.init:
        shown = [f"--{n.replace('_', '-')}" if n != "k" else "-k" for n in fixed] + (["--param"] if args.param else []) \
            + (["--init"] if args.init else [])
        raise UserError(f"--from-explore publishes the run as explored: drop {', '.join(shown)}")
    doc, labels = explore.load(args.from_explore, runs=[args.pick])
    runs = {row["id"]: row for row in doc["runs"]}
    if not runs:
        raise UserError(f"--pick {args.pick}: {Path(args.from_explore).name} holds no run")
    if args.pick not in runs:
        raise UserError(f"--pick {args.pick}: {Path(args.from_explore).name} has runs {min(runs)} to {max(runs)}")
    row = runs[args.pick]
    if row["status"] != "ok" or args.pick not in labels:
        raise UserError(f"--pick {args.pick}: that run did not finish ({row['status']}"
                        + (f": {row['note']}" if row.get("note") else "") + ")")
    sha = doc["input"].get("sha256")
    if sha is None:
        raise UserError(f"{Path(args.from_explore).name} names no input SHA-256: the file it explored cannot be "
                        "checked, so it is not published (explore a file, or protect with the run's options)")
    if not Path(args.input).is_file():
        raise UserError(f"input file not found: {args.input}")
    if manifest.sha256(args.input) != sha:
        raise UserError(f"{Path(args.input).name} is not the file {Path(args.from_explore).name} explored (its SHA-256 "
                        "differs)")
    from .options import validate_run

    from .options import GRID_OPTIONS

    foreign = sorted(name for name in doc["options"] if name not in GRID_OPTIONS)
    if foreign:  # an exploration's runs share only the grid's options (no scheduler, no time limit)
        raise UserError(f"{Path(args.from_explore).name} is not a microagg explore result: its options name "
                        f"{', '.join(map(str, foreign))[:200]}")
    options = {name: value for name, value in doc["options"].items() if value != "(an array)"}
    options.update(k=row["k"], method=row["method"], **{n: v for n, v in given.items()})
    validate_run(options, row["params"], cli=True)
    args.picked_labels = labels[args.pick]
    return options, dict(row["params"])


#: column lists longer than this are shown by their first and last names (--json lists them all)
SHOWN_NAMES = 20


def _names_text(names) -> str:
    names = [str(c) for c in names]
    if len(names) <= SHOWN_NAMES:
        return ", ".join(names)
    return (f"{', '.join(names[:SHOWN_NAMES - 2])}, ..., {names[-1]} ({len(names):,} columns; --json lists them "
            "all)")


def _print_protected(args, res) -> None:
    published = res.file
    if args.json:
        record = result_record(res, published.path, published.report, published.unchanged)
        record["manifest"] = None if published.manifest is None else str(published.manifest)
        record["labels"] = None if published.labels is None else str(published.labels)
        record["unchanged_sheets"] = [str(s) for s in published.other_sheets]
        record["verified"] = {"read_back_by": published.read_back_by, "key_variables": published.key_variables,
                              "k_anonymous": published.k_anonymous,
                              "smallest_frequency": published.smallest_frequency}
        print_json(record)
        return
    print(res.summary())
    print(f"protected (quasi-identifiers): {_names_text(res.columns)}")
    suppressed = [] if res.suppression is None else [c for c, n in res.suppression.per_key.items() if n]
    recoded = [c for c in res.changed_columns if c not in set(res.columns) and c not in suppressed]
    if recoded:
        print(f"recoded (merged strata): {_names_text(recoded)}")
    if suppressed:
        print(f"suppressed values (local suppression): {_names_text(suppressed)}")
    if published.unchanged:
        print(f"unchanged: {_names_text(published.unchanged)}")
    if published.other_sheets:
        print(f"other sheets, published unchanged: {_names_text(published.other_sheets)}")
    print(f"written: {published.path}")
    for what, path in (("report", published.report), ("labels", published.labels),
                       ("manifest", published.manifest)):
        if path is not None:
            print(f"{what}: {path}")


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


def _evaluate_roles(args, orig, prot, orig_table):
    """The audit's roles from evaluate's flags: the QI columns (default: the numeric columns the
    protection changed), their kinds (as protect takes them: codes are categories unless declared
    continuous), strata, keys, sensitive columns, the sampling weight and k (default 2)."""
    import numpy as np

    from .declarations import column_names
    from .measures import AuditRoles
    from .publication import as_in_header
    from .columns import select_columns
    from .embedding import column_kinds

    def names(value, flag):
        return as_in_header(column_names(value, flag), orig_table.header) or []

    columns = names(args.columns, "--columns") or None
    categorical, ordinal = names(args.categorical, "--categorical"), names(args.ordinal, "--ordinal")
    continuous = names(args.continuous, "--continuous")
    strata, keys = names(args.strata, "--strata"), names(args.keys, "--keys")
    sensitive = names(args.sensitive, "--sensitive")
    sw = as_in_header([args.sample_weight], orig_table.header)[0] if args.sample_weight else None
    apart = strata + keys + sensitive + ([sw] if sw else [])
    for c in apart + categorical + ordinal + continuous + (columns or []):
        orig_table.check_columns([c])
        if c not in orig.columns:
            raise UserError(f"unknown column: {c}")
        if c not in prot.columns:
            raise UserError(f"column {c} is missing from the protected file")
    if columns is None:  # default: the numeric columns the protection changed, and the declared categories
        numeric = select_columns(orig, None, apart + categorical + ordinal, allow_empty=bool(categorical + ordinal),
                                 continuous=continuous)
        changed = [c for c in numeric if not np.array_equal(orig[c].to_numpy(), prot[c].to_numpy())]
        columns = [c for c in orig.columns if c in set(changed or numeric) | set(categorical + ordinal)]
    kinds = column_kinds(orig, columns, categorical, ordinal, (), continuous)
    return AuditRoles(tuple(columns), kinds, args.k or 2, tuple(strata), tuple(keys), tuple(sensitive), sw,
                      {c: None for c in ordinal}, True, p=10.0)


def _rows_aligned(orig, prot, qis) -> bool:
    """Do the files hold the same records in the same order? False when a column both hold that
    the protection does not touch holds the same values in another order (a shuffled output)."""
    import pandas as pd

    for c in orig.columns:
        if c in qis or c not in prot.columns or getattr(orig[c], "ndim", 1) != 1:
            continue
        a, b = orig[c].astype(str).reset_index(drop=True), prot[c].astype(str).reset_index(drop=True)
        if not a.equals(b) and pd.Series(sorted(a)).equals(pd.Series(sorted(b))):
            return False
    return True


def _evaluate_manifest(args, given_roles: list):
    """The run manifest to use: --manifest, else <PROTECTED>.manifest.json when it exists and no
    role is given on the command line (None with --no-manifest). Its files must be these: the
    SHA-256 of both are compared."""
    from . import manifest

    if args.no_manifest:
        if args.manifest:
            raise UserError("--manifest and --no-manifest cannot be combined")
        return None
    path = Path(args.manifest) if args.manifest else manifest.path_for(args.protected)
    if not args.manifest and not path.is_file():
        return None
    if not args.manifest and given_roles:  # the roles asked for win over a manifest found beside the file
        warnings.warn(f"{path.name} is not used: the roles are given ({', '.join(given_roles)})", UserWarning,
                      stacklevel=2)
        return None
    doc = manifest.read(path)
    if given_roles:
        raise UserError(f"the roles come from the manifest: drop {', '.join(given_roles)} (or use --no-manifest)")
    for which, given in (("input", args.original), ("output", args.protected)):
        if not Path(given).exists():
            raise UserError(f"input file not found: {given}")
        if manifest.sha256(given) != doc[which]["sha256"]:
            name = "ORIGINAL" if which == "input" else "PROTECTED"
            raise UserError(f"{name} ({Path(given).name}) is not the file the manifest {path.name} was written for "
                            f"(its SHA-256 differs); evaluate without it with --no-manifest")
    if args.k is not None and args.k != doc["roles"]["k"]:
        raise UserError(f"-k {args.k} differs from the manifest's k ({doc['roles']['k']}): drop -k (or use "
                        "--no-manifest)")
    return doc


def cmd_evaluate(args) -> int:
    import dataclasses

    from . import io
    from .measures import Audit, AuditRoles, audit_files, in_registry_order

    interval_p = _interval_p(args)
    if args.k is not None and args.k < 1:
        raise UserError(f"-k must be at least 1, got {args.k}")
    given_roles = [f for f, v in (("--columns", args.columns), ("--categorical", args.categorical),
                                  ("--ordinal", args.ordinal), ("--continuous", args.continuous),
                                  ("--strata", args.strata), ("--keys", args.keys), ("--sensitive", args.sensitive),
                                  ("--sample-weight", args.sample_weight)) if v is not None]
    doc = _evaluate_manifest(args, given_roles)
    if doc is not None and (doc["audit"].get("context") or {}).get("sampled"):
        return _evaluate_streamed(args, doc, interval_p)
    options = _read_options(args)
    if doc is not None:
        read = {**{k: v for k, v in options.items() if v not in (None, ())}, **doc["input"].get("read", {})}
        orig_table = io.read(args.original, **read)
        prot_table = io.read(args.protected, **doc["output"].get("read", {}))
    else:
        orig_table = io.read(args.original, **options)
        prot_table = io.read(args.protected, **options)
    orig, prot = orig_table.frame, io.published_view(prot_table)
    if len(orig) != len(prot):
        raise UserError(f"the files have different numbers of rows ({len(orig)} and {len(prot)})")
    if doc is not None:
        roles = AuditRoles.from_dict(doc["roles"])
        seed, aligned = doc["run"].get("seed", 0), not doc.get("shuffled", False)
    else:
        roles = _evaluate_roles(args, orig, prot, orig_table)
        seed = 0
        changed = tuple(roles.columns) + tuple(roles.keys)  # keys: local suppression may have set values missing
        _warn_unaligned(orig, prot, changed)
        aligned = _rows_aligned(orig, prot, changed)
    if interval_p is not None:
        roles = dataclasses.replace(roles, p=float(interval_p))
    missing = [c for c in roles.key_variables + list(roles.sensitive) if c not in prot.columns]
    if missing:
        raise UserError(f"column(s) missing from the protected file: {', '.join(map(str, missing))}")
    if roles.sample_weight is not None and roles.sample_weight not in orig.columns:
        raise UserError(f"the sample weight column {roles.sample_weight} is missing from the original")
    with stdout_to_stderr(), progress_bar(not args.quiet and not args.json, None, "evaluating"):
        try:
            audit = audit_files(orig, prot, roles, grouped=io.key_view(prot_table, roles.key_variables),
                                aligned=aligned, seed=seed, read_back=io.reader_name(prot_table))
        except InputError as exc:
            raise UserError(f"protected file: {exc}") from None
    recomputed = {(f.group, f.name) for f in audit.figures}
    differ = []
    if doc is not None:
        run = Audit.from_dict(doc["audit"])
        if interval_p is not None:  # another p: the manifest's interval figures do not apply
            run = run.without("risk", "interval_disclosure", "interval_disclosure_p")
        for f in audit.figures:
            if f.name != "interval_disclosure_p" and (f.group, f.name) in {(g.group, g.name) for g in run.figures} \
                    and run.rows(f.group) and _value_of(run, f) != f.value:
                differ.append(f.name)
        merged = run.with_figures(audit)
        audit = dataclasses.replace(merged, figures=in_registry_order(merged.figures), warnings=audit.warnings,
                                    context=audit.context)
        if differ:
            warnings.warn(f"figure(s) {', '.join(differ)} recomputed from the files differ from the manifest's",
                          UserWarning, stacklevel=2)
    _print_evaluation(args, audit, roles, orig, doc, recomputed, aligned)
    return 0


def _evaluate_streamed(args, doc, interval_p) -> int:
    """evaluate of a file the out-of-core mode published: its manifest's audit recomputed from the
    two files in a stream, on the same seeded sample (``publication.stream_audit``), the
    k-anonymity figures on every record; every figure must equal the manifest's."""
    import dataclasses

    from .measures import Audit, AuditRoles
    from .publication import stream_audit

    roles = AuditRoles.from_dict(doc["roles"])
    if interval_p is not None:
        roles = dataclasses.replace(roles, p=float(interval_p))
    sampled = doc["audit"]["context"]["sampled"]
    size = sampled.get("records") if isinstance(sampled, dict) else None
    if not isinstance(size, int) or size < 1:
        raise UserError("the manifest's audit names no sample size: not a microagg out-of-core manifest")
    with stdout_to_stderr():
        audit, _ = stream_audit(args.original, args.protected, roles, seed=doc["run"].get("seed", 0), sample=size)
    run = Audit.from_dict(doc["audit"])
    differ = [f.name for f in audit.figures if _value_of(run, f) != f.value and f.name != "interval_disclosure_p"
              and interval_p is None]
    if differ:
        warnings.warn(f"figure(s) {', '.join(differ)} recomputed from the files differ from the manifest's",
                      UserWarning, stacklevel=2)
    _print_evaluation(args, audit, roles, range(sampled.get("of", 0)), doc, {(f.group, f.name) for f in audit.figures},
                      True)
    return 0


def _value_of(audit, figure):
    for f in audit.rows(figure.group):
        if f.name == figure.name:
            return f.value
    return None


def _print_evaluation(args, audit, roles, orig, doc, recomputed, aligned) -> None:
    risk = audit.group("risk")
    k = args.k if doc is None else roles.k
    anonymous = None if k is None or "smallest_group" not in risk else bool(risk["smallest_group"] >= k)
    from_manifest = sorted(f.name for f in audit.figures if f.group != "run" and (f.group, f.name) not in recomputed)
    if args.json:
        record = {"columns": [str(c) for c in roles.columns], "records": len(orig), "utility": audit.group("utility"),
                  "risk": risk, "k": k, "k_anonymous": anonymous,
                  "key_variables_k_anonymous": None if "key_records_below_k" not in risk else
                  risk["key_records_below_k"] == 0,
                  "categories": audit.categories, "warnings": list(audit.warnings), "context": audit.context,
                  "rows_aligned": aligned, "from_manifest": from_manifest}
        if doc is not None:
            record["run"] = audit.group("run")
            record["manifest"] = {"method": doc["run"]["method"], "shuffled": doc.get("shuffled", False)}
        print_json(record)
        return
    print(f"quasi-identifiers: {', '.join(map(str, roles.columns))}")
    if doc is not None:
        print(f"run (from the manifest): method {doc['run']['method']}, k = {roles.k}"
              + (", records shuffled" if doc.get("shuffled") else ""))
        for figure in audit.rows("run"):
            print(f"  {figure.measure.label + ':':45s} {figure.text()}")
    for title, group in (("utility / information loss", "utility"), ("disclosure risk", "risk")):
        print(title)
        for figure in audit.rows(group):
            if group == "utility" and figure.name == "smallest_group":
                continue  # listed once, with the risk figures
            note = ""
            if figure.name == "smallest_group" and k is not None:
                note = "  (k-anonymous)" if anonymous else f"  (NOT {k}-anonymous)"
            if figure.name in from_manifest:
                note += "  (from the manifest)"
            print(f"  {figure.measure.label + ':':45s} {figure.text()}{note}")
    if "key_records_below_k" in risk:
        keys = ", ".join(audit.context.get("key_variables", ()))
        print(f"key variables ({keys}): " + (f"{roles.k}-anonymous" if risk["key_records_below_k"] == 0 else
                                             f"NOT {roles.k}-anonymous"))
    if not aligned:
        print("the records are not in the original's order: the measures that pair each record with its original "
              + ("come from the manifest" if doc is not None else "are left out")
              + "; the others are recomputed from the files")
    for w in audit.warnings:
        print(f"warning: {w}")


def cmd_explore(args) -> int:
    """microagg explore: a grid of k values and methods within one budget, audited, mapped."""
    from . import explore, io, manifest
    from .options import NOT_FOR_A_GRID, from_arguments
    from .publication import as_in_file

    options = from_arguments(args, skip=NOT_FOR_A_GRID)
    ks = explore._ks(args.k)
    names = explore._methods(args.methods)
    budget = explore.DEFAULT_BUDGET if args.time_limit is None else _budget(args.time_limit)
    max_risk = None
    if args.max_risk is not None:
        try:
            max_risk = float(args.max_risk)
        except ValueError:
            raise UserError(f"--max-risk must be a number, got {args.max_risk!r}") from None
    explore._check_risk(args.risk, max_risk)
    params = _explore_params(names, args.param)
    src = Path(args.input)
    if not src.exists():
        raise UserError(f"input file not found: {src}")
    io.format_of(src)
    taken = [src]
    outputs = {}
    for flag, value, suffixes in (("-o", args.output, (".json",)), ("--csv", args.csv, (".csv",)),
                                  ("--map", args.map, (".svg",)), ("--report", args.report, (".html", ".htm"))):
        if value is None:
            continue
        if not str(value).lower().endswith(suffixes):
            raise UserError(f"{flag} must end in {' or '.join(suffixes)}, got {Path(value).name}")
        outputs[flag] = io.check_side_file(value, {"-o": "result"}.get(flag, flag.lstrip("-")), *taken)
        taken.append(outputs[flag])
    if "-o" in outputs:
        io.check_side_file(explore.labels_path(outputs["-o"]), "labels", *taken)
    previous = None
    if "-o" in outputs and outputs["-o"].exists() and not args.fresh:
        previous = explore.load(outputs["-o"])  # runs of the same data and options are reused
    table = io.read(src, **_read_options(args))
    options = as_in_file(options, table)
    info = {"name": src.name, "sha256": manifest.sha256(src), "format": table.format,
            "read": {k: v for k, v in _read_options(args).items() if v not in (None, ())}}
    with stdout_to_stderr():
        with progress_bar(not args.quiet, budget, "microagg explore") as bar:
            result = explore.explore(table, ks, names, time_limit=budget, risk=args.risk, max_risk=max_risk,
                                     method_params=params, previous=previous, progress=bar if bar else False,
                                     input_info=info, **options)
        if not any(r.status == "ok" for r in result.runs):  # a run that produced nothing is not a success
            first = next((r for r in result.runs if r.note), None)
            raise UserError(f"no run of the exploration finished ({len(result.runs)} tried"
                            + (f"; run {first.id}: {first.status}: {first.note}" if first is not None else "")
                            + "): nothing was written")
        if "-o" in outputs:
            result.save(outputs["-o"])
        if "--csv" in outputs:
            io.atomic_write_text(outputs["--csv"], result.to_csv())
        if "--map" in outputs:
            io.atomic_write_text(outputs["--map"], result.map_svg())
        if "--report" in outputs:
            io.atomic_write_text(outputs["--report"], explore.report_html(
                result, result_name=args.output if "-o" in outputs else "RESULT.json"))
    if args.json:  # the reproduce commands carry the paths as typed: they run where the user is
        print_json(result.to_dict(result_name=args.output if "-o" in outputs else "RESULT.json"))
        return 0
    print(result.table())
    done = sum(r.done for r in result.runs)
    print(f"{done} of {len(result.runs)} runs done in {result.seconds:.1f} s of a {budget:g} s budget")
    best = result.recommended()
    if best is not None:
        cmds = result.commands(best, args.input, "OUTPUT", args.output if "-o" in outputs else "RESULT.json")
        print(f"reproduce the recommended run: {cmds['from_explore'] if '-o' in outputs else cmds['protect']}")
    for flag, path in outputs.items():
        print(f"written ({flag}): {path}")
    return 0




def _positive_number(text: str, flag: str, unit: str) -> float:
    """A flag's finite number > 0 (one line naming the flag otherwise)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{flag} must be a number of {unit}, got {str(text)[:40]!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"{flag} must be a number > 0, got {str(text)[:40]!r}")
    return value


def _budget(text: str) -> float:
    return _positive_number(text, "--time-limit (the exploration's budget)", "seconds")


def _explore_params(names, texts) -> dict:
    """--param NAME=VALUE for explore: given to every method of the grid that declares NAME (one
    at least must), typed by each one's declaration; METHOD:NAME=VALUE for one method."""
    from . import methods as registry

    out: dict = {m: {} for m in names}
    for text in texts:
        target = None
        if ":" in text.split("=", 1)[0]:
            target, text = text.split(":", 1)
            if target not in names:
                raise UserError(f"--param {target}:...: {target} is not among --methods")
        name, raw = parse_param(text)
        takers = [m for m in ([target] if target else names) if name in registry.get(m).params]
        if not takers:
            raise UserError(f"--param {name}: no method of the grid declares it")
        for m in takers:
            out[m][name] = registry.get(m).params[name].parse(raw, m)
            registry.get(m).validate(out[m])
    return {m: p for m, p in out.items() if p}


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
    replace(option("work"), name="--work").validate(args.work, None)
    run_demo(args.dataset, args.k, args.time_limit, quiet_stdout=stdout_to_stderr, work=args.work)
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
    p.add_argument("--max-memory-mb", metavar="MB",
                   help="the memory reading a file may take: decompressed text at most a quarter of it, the cells a "
                        "file claims at their size in memory (default: half of this machine's memory)")
    if missing:
        p.add_argument("--missing", metavar="TOKEN,...",
                       help="text tokens that mean 'missing' (e.g. '-,.,n/a'); a missing value in a "
                            "quasi-identifier is still an error, other columns are written unchanged")


def build_parser() -> argparse.ArgumentParser:
    from . import io
    from .options import NOT_FOR_A_GRID, add_arguments

    from . import __version__

    p = _Parser(prog="microagg", description="Microaggregation of numeric microdata (k-anonymity by group means).")
    p.add_argument("--version", action="version", version=f"microagg {__version__}",
                   help="print the installed version and exit")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    sub.required = True

    pr = sub.add_parser("protect", help=f"microaggregate a data file ({io.supported_text()})")
    pr.add_argument("input", help="the data file to protect (its suffix says the format), or a folder of Parquet "
                    "files with --out-of-core")
    pr.add_argument("-o", "--output", required=True,
                    help="output file; its suffix sets the format (the input's format and CSV dialect when "
                         "the suffixes match); written atomically, never over the input")
    add_arguments(pr, notes={"k": "required, unless --from-explore gives it"})  # the run options' flags
    pr.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="a parameter of the method, typed by its declaration (repeat the flag for several; "
                         "'microagg methods -v' lists each method's)")
    pr.add_argument("--out-of-core", action="store_true",
                    help="stream a Parquet dataset or CSV larger than memory in chunks (needs --block-size); "
                         "OUTPUT is a new folder of Parquet partitions")
    pr.add_argument("--report", metavar="REPORT.html", help="write a self-contained HTML report (atomically)")
    pr.add_argument("--labels-out", metavar="FILE", help="write each record's group label, one per line "
                    "(atomically): the partition, to check or to continue from with --init")
    pr.add_argument("--init", metavar="FILE", help="start from this partition (one group label per line, as "
                    "--labels-out writes): icsm, lsearch and colgen continue improving it")
    pr.add_argument("--interval-p", default=None, metavar="P",
                    help="rank-interval percentage of the audit's interval disclosure (default 10)")
    pr.add_argument("--from-explore", metavar="RESULT.json", help="publish a run of 'microagg explore' exactly: "
                    "its roles, options and kept partition (with --pick)")
    pr.add_argument("--pick", type=int, metavar="N", help="the explore run to publish (its id in RESULT.json)")
    pr.add_argument("--from-manifest", metavar="M.manifest.json", help="re-run the publication M describes on "
                    "INPUT (the same options, parameters and seed) and check OUTPUT against it: its SHA-256, or "
                    "its rows when the records were shuffled")
    _add_read_options(pr, missing=False)  # --missing is a run option
    pr.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    pr.add_argument("--json", action="store_true", help="print one JSON object on stdout instead of the summary")
    pr.set_defaults(func=cmd_protect)

    ev = sub.add_parser("evaluate", help="compare an original and a protected file")
    ev.add_argument("original")
    ev.add_argument("protected")
    ev.add_argument("--columns", help="quasi-identifier columns (default: the numeric columns that changed)")
    ev.add_argument("-k", type=int, default=None, help="check k-anonymity of the published key variables "
                    "(default 2)")
    ev.add_argument("--categorical", metavar="A,B", help="nominal quasi-identifier columns")
    ev.add_argument("--ordinal", metavar="C,D", help="ordinal quasi-identifier columns")
    ev.add_argument("--continuous", metavar="A,B", help="columns declared continuous (codes otherwise count as "
                    "categories)")
    ev.add_argument("--strata", metavar="A,B", help="stratum columns (key variables)")
    ev.add_argument("--keys", metavar="A,B", help="other published categorical key variables")
    ev.add_argument("--sensitive", metavar="A,B", help="sensitive columns (l-diversity)")
    ev.add_argument("--sample-weight", metavar="COLUMN", help="sampling-weight column (re-identification risk)")
    ev.add_argument("--manifest", metavar="FILE", help="the run manifest protect wrote (default: "
                    "PROTECTED.manifest.json when it exists): roles, k and the figures that pair records")
    ev.add_argument("--no-manifest", action="store_true", help="ignore a manifest beside PROTECTED")
    ev.add_argument("-p", "--interval-p", default=None, metavar="P",
                    help="rank-interval percentage for interval disclosure (default 10)")
    _add_read_options(ev)
    ev.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    ev.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ev.set_defaults(func=cmd_evaluate)

    ex = sub.add_parser("explore", help="a risk-utility map: a grid of k values and methods within one budget")
    ex.add_argument("input")
    ex.add_argument("-k", default="3,4,5,10", metavar="K1,K2,..", help="the k values (default 3,4,5,10)")
    ex.add_argument("--methods", default=",".join(("mdav", "vmdav", "mdav-mhm", "icsm", "lsearch")),
                    metavar="M1,M2,..", help="the methods (default mdav,vmdav,mdav-mhm,icsm,lsearch)")
    ex.add_argument("--time-limit", default=None, metavar="SECONDS",
                    help="the whole exploration's budget (default 60): cheap runs first, anytime methods share it")
    ex.add_argument("--risk", default="record_linkage_dbrl", metavar="MEASURE",
                    help="the risk measure of the map, the frontier and --max-risk (an audit risk measure, default "
                         "record_linkage_dbrl)")
    ex.add_argument("--max-risk", default=None, metavar="R", help="recommend the least IL among runs whose risk is "
                    "at most R (in the measure's own unit: a share 0..1 for record linkage)")
    add_arguments(ex, skip=NOT_FOR_A_GRID)
    ex.add_argument("--param", action="append", default=[], metavar="[METHOD:]NAME=VALUE",
                    help="a method parameter, for every method of the grid that declares it (or METHOD's only)")
    ex.add_argument("-o", "--output", metavar="RESULT.json", help="write the result and the runs' labels "
                    "(RESULT.labels.npz) for protect --from-explore; an existing result of the same data and "
                    "options is widened: its runs are reused")
    ex.add_argument("--fresh", action="store_true", help="do not reuse the runs of an existing -o result")
    ex.add_argument("--csv", metavar="FILE.csv", help="write the table as CSV")
    ex.add_argument("--map", metavar="FILE.svg", help="write the risk-utility map as SVG")
    ex.add_argument("--report", metavar="FILE.html", help="write the map and the table as a self-contained HTML page")
    _add_read_options(ex, missing=False)
    ex.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ex.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    ex.set_defaults(func=cmd_explore)

    me = sub.add_parser("methods", help="list the registered methods")
    me.add_argument("-v", "--verbose", action="store_true")
    me.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    me.set_defaults(func=cmd_methods)

    de = sub.add_parser("demo", help="run every method on a bundled data set")
    de.add_argument("--dataset", default="census", help="census, tarragona or eia (default census)")
    de.add_argument("-k", type=int, default=3)
    de.add_argument("--work", type=float, default=None, metavar="UNITS",
                    help="work budget for each iterative method (default: 200 passes over the records, at "
                         "most about 1 s of a quiet machine's work): the same figures at any load")
    de.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                    help="a safety cap for each method (default none)")
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

#: the longest error line printed (a message quoting a 10 MB field is cut, saying so)
MAX_ERROR_CHARS = 600


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    if len(line) > MAX_ERROR_CHARS:
        line = f"{line[:MAX_ERROR_CHARS - 40]}... ({len(line):,} characters in all)"
    return line


def _memory_mb(text) -> float | None:
    """--max-memory-mb: a number of megabytes > 0 (None: the default)."""
    return None if text is None else _positive_number(text, "--max-memory-mb", "megabytes")


def _run_command(args) -> int:
    """Run the command; map its outcome to an exit status (in the thread that runs it)."""
    try:
        from .read_limits import memory_budget

        with memory_budget(_memory_mb(getattr(args, "max_memory_mb", None))):
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
    args = None
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
            table = [t for t in shown if t.startswith("microagg: warning: not protected, ")]
            if table and getattr(args, "quiet", False):  # -q: the default-column table's count only
                shown = [t for t in shown if t not in table]
                print(f"microagg: {len(table)} warning(s) on columns left out of the default quasi-identifiers "
                      "(run without -q to see them)", file=sys.stderr)
            for text in shown:
                print(text, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
