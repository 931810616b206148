"""``microagg protect``: publish a protected file (``microagg.publication``), or a folder of
Parquet partitions with --out-of-core; --from-explore publishes an explored run, --from-manifest
re-runs a publication and checks it (``microagg.reproduce``).

Every option and method parameter is validated before the data are read, exactly as the API
validates them; the publication stage then reads, runs, writes, reads back, verifies and audits.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .common import (
    EXIT_KEYS_BELOW_K,
    Parser,
    UserError,
    add_read_options,
    interval_p,
    parse_param,
    print_json,
    progress_bar,
    read_options,
    stdout_to_stderr,
)


def declare(commands) -> None:
    """The protect command and its flags (the run options' flags come from their declarations)."""
    from .. import io

    add_arguments(
        commands.add_parser("protect", help=f"microaggregate a data file ({io.supported_text()})")
    )


def add_arguments(pr) -> None:
    """protect's flags: the input, the output, the run options, the side files, the sources of a
    run (an exploration, a manifest), how to read."""
    from ..options import add_arguments as add_run_options

    pr.add_argument(
        "input",
        help=(
            "the data file to protect (its suffix says the format), or a folder of Parquet "
            "files with --out-of-core"
        ),
    )
    pr.add_argument(
        "-o",
        "--output",
        required=True,
        help=(
            "output file; its suffix sets the format (the input's format and CSV dialect when "
            "the suffixes match); written atomically, never over the input"
        ),
    )
    # the run options' flags
    add_run_options(pr, notes={"k": "required, unless --from-explore gives it"})
    pr.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=(
            "a parameter of the method, typed by its declaration (repeat the flag for several; "
            "'microagg methods -v' lists each method's)"
        ),
    )
    pr.add_argument(
        "--out-of-core",
        action="store_true",
        help=(
            "stream a Parquet dataset or CSV larger than memory in chunks (needs --block-size); "
            "OUTPUT is a new folder of Parquet partitions"
        ),
    )
    _add_side_files_and_sources(pr)
    add_read_options(pr, missing=False)  # --missing is a run option
    pr.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    pr.add_argument(
        "--json", action="store_true", help="print one JSON object on stdout instead of the summary"
    )
    pr.set_defaults(func=run)


def _add_side_files_and_sources(pr) -> None:
    """protect's side files (report, labels, the start partition, the audit's interval) and the
    runs it can publish instead of running one (an explored run, a manifest's)."""
    pr.add_argument(
        "--report", metavar="REPORT.html", help="write a self-contained HTML report (atomically)"
    )
    pr.add_argument(
        "--labels-out",
        metavar="FILE",
        help=(
            "write each record's group label, one per line "
            "(atomically): the partition, to check or to continue from with --init"
        ),
    )
    pr.add_argument(
        "--init",
        metavar="FILE",
        help=(
            "start from this partition (one group label per line, as "
            "--labels-out writes): icsm, lsearch and colgen continue improving it"
        ),
    )
    pr.add_argument(
        "--interval-p",
        default=None,
        metavar="P",
        help="rank-interval percentage of the audit's interval disclosure (default 10)",
    )
    pr.add_argument(
        "--from-explore",
        metavar="RESULT.json",
        help=(
            "publish a run of 'microagg explore' exactly: "
            "its roles, options and kept partition (with --pick)"
        ),
    )
    pr.add_argument(
        "--pick", type=int, metavar="N", help="the explore run to publish (its id in RESULT.json)"
    )
    pr.add_argument(
        "--from-manifest",
        metavar="M.manifest.json",
        help=(
            "re-run the publication M describes on INPUT (the same options, parameters and seed)"
            " and check OUTPUT against it: its SHA-256, or its rows when the records were shuffled"
        ),
    )


def parser() -> Parser:
    """protect's parser on its own."""
    standalone = Parser(prog="microagg protect")
    add_arguments(standalone)
    return standalone


def run(args) -> int:
    """microagg protect: every option checked before the data are read, the file published (read
    back, verified, audited, with its manifest), its summary printed."""
    from ..options import from_arguments, validate_run

    if args.from_manifest is not None:  # re-run a publication and check it (microagg.reproduce)
        return _from_manifest(args)
    options = from_arguments(args)
    if args.from_explore is not None or args.pick is not None:
        options, picked_params = _from_explore(args, options)
        args.param = [f"{name}={value}" for name, value in picked_params.items() if name != "init"]
    elif "k" not in options:
        raise UserError("protect: the following arguments are required: -k")
    params = method_params(options.get("method", "mdav"), args.param)
    if args.from_explore is not None:
        options["labels"] = args.picked_labels
    checked = validate_run(
        options, params, cli=True
    )  # every option and parameter, before the data are read
    interval = interval_p(args)
    start = _start_partition(args, options, params)
    if args.out_of_core:
        return protect_out_of_core_cli(args, options, params)
    return _publish(args, options, params, checked, read_options(args), interval, start)


def _from_manifest(args) -> int:
    """--from-manifest M: M's declared run (never its command) re-published on INPUT as OUTPUT,
    and landed only if it matches M (``reproduce.Replay``)."""
    from ..options import validate_run
    from ..reproduce import Replay, refuse_given_flags

    refuse_given_flags(args)
    replay = Replay.of(args.from_manifest, args.input)
    checked = validate_run(replay.options, replay.params)
    status = _publish(
        args,
        replay.options,
        replay.params,
        checked,
        replay.read_options,
        replay.interval_p,
        None,
        confirm=replay.confirm,
    )
    if not args.json:
        print(replay.said(args.output))
    return status


def _publish(args, options, params, checked, read, interval, start, confirm=None) -> int:
    """Publish the file (``publication.publish``) and print its summary."""
    from ..publication import publish

    bar = progress_bar(not args.quiet, checked.time_limit, f"microagg {checked.method}")
    with stdout_to_stderr():
        res = publish(
            Path(args.input),
            args.output,
            options,
            params,
            checked,
            read_options=read,
            report=args.report,
            labels_out=args.labels_out,
            interval_p=interval,
            init=args.init,
            init_labels=start,
            command_input=str(args.input),
            progress_context=bar,
            confirm=confirm,
        )
    _print_protected(args, res)
    if (
        res.suppression is not None
        and res.suppression.mode == "report"
        and res.suppression.records_left_below_k
    ):
        print(f"microagg: {res.suppression.warnings()[0]}", file=sys.stderr)
        return EXIT_KEYS_BELOW_K
    return 0


def _start_partition(args, options: dict, params: dict):
    """--init: the labels to start from (read here), for a method that takes a start partition."""
    if args.init is None:
        return None
    from .. import methods as registry

    method = options.get("method", "mdav")
    if "init" not in registry.get(method).params:
        takes = ", ".join(m for m in registry.names() if "init" in registry.get(m).params)
        raise UserError(f"method {method} takes no start partition; --init works with {takes}")
    if "init" in params:
        raise UserError("give the start partition once: --init FILE or --param init=...")
    if (
        args.out_of_core
        or options.get("block_size") is not None
        or options.get("scheduler") is not None
    ):
        raise UserError(
            "--init cannot be combined with --out-of-core or --block-size: blocks are cut afresh"
        )
    return read_start_labels(args.init)


def read_start_labels(path: str):
    """--init: the partition to start from, one integer group label per line in record order
    (what --labels-out writes)."""
    import numpy as np

    src = Path(path)
    if not src.is_file():
        raise UserError(f"--init file not found: {src}")
    labels = []
    for number, line in enumerate(
        src.read_text(encoding="utf-8", errors="replace").splitlines(), 1
    ):
        text = line.strip()
        try:
            labels.append(int(text))
        except ValueError:
            raise UserError(
                f"--init {src}: line {number} is not an integer group label: {text[:40]!r}"
            ) from None
    if not labels:
        raise UserError(f"--init {src} is empty")
    return np.asarray(labels, dtype=np.int64)


def method_params(method: str, texts) -> dict:
    """The --param values for ``method``, each parsed and validated by the method's declaration
    (``microagg.methods.get(method).params[name]``): wrong type, NaN or out of range is a
    ParameterError here, before any data are read."""
    from .. import methods as registry

    info = registry.get(method)
    raw: dict = {}
    for text in texts:
        name, value = parse_param(text)
        if name in raw:
            raise UserError(f"--param {name} is given twice")
        raw[name] = value
    values = {
        name: info.params[name].parse(text, method) if name in info.params else text
        for name, text in raw.items()
    }
    info.validate(values)  # unknown names, types, ranges, choices: one ParameterError
    return values


def protect_out_of_core_cli(args, options: dict, params: dict) -> int:
    """--out-of-core: stream a Parquet dataset or CSV through the partitioned mode into a new
    folder of Parquet partitions, published as every file is (``publication.publish_folder``:
    read back, k-anonymity counted on every record, audited on a sample, with its manifest).
    Every check runs before the first pass over the data; the folder and its manifest appear
    complete or not at all."""
    from ..outofcore import check_out_of_core
    from ..publication import publish_folder

    unsupported = [
        flag
        for flag, on in (
            ("--report", args.report),
            ("--sep", args.sep),
            ("--decimal", args.decimal and _streamed_decimal(args.input) is None),
            ("--encoding", args.encoding),
            ("--sheet", args.sheet),
            ("--labels-out", args.labels_out),
        )
        if on
    ]
    if unsupported:
        raise UserError(f"--out-of-core does not support {', '.join(unsupported)} yet")
    detected = _streamed_decimal(args.input) if args.decimal else None
    if args.decimal and detected != args.decimal:
        raise UserError(
            f"--out-of-core reads {Path(args.input).name} with the decimal mark it detects there "
            f"({detected!r}): --decimal {args.decimal} cannot be applied yet"
        )
    checked = check_out_of_core(options, params, cli=True)
    bar = progress_bar(
        not args.quiet, options.get("time_limit"), f"microagg {options.get('method', 'mdav')}"
    )
    with stdout_to_stderr():
        result = publish_folder(
            Path(args.input),
            Path(args.output),
            options,
            params,
            checked,
            command_input=str(args.input),
            progress_context=bar,
        )
    _print_folder(args, result.method_facts["out_of_core"], result)
    return 0


def _streamed_decimal(path) -> str | None:
    """The decimal mark the out-of-core mode detects in a CSV file (a --decimal that agrees with
    it is accepted), or None for another input."""
    from .. import io

    p = Path(path)
    if not p.is_file() or io.format_of(p) != "csv":
        return None
    from ..io.csv.reader import detected_decimal

    try:
        return detected_decimal(p)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _print_folder(args, summary: dict, result) -> None:
    """The out-of-core publication's summary: one JSON document, or its lines."""
    audit, published = result.audit, result.file
    summary = {
        k: v if isinstance(v, (int, float, str, list, bool)) or v is None else str(v)
        for k, v in summary.items()
    }
    if args.json:
        verified = {
            "read_back_by": published.read_back_by,
            "key_variables": published.key_variables,
            "k_anonymous": published.k_anonymous,
            "smallest_frequency": published.smallest_frequency,
        }
        print_json(
            {
                "output": str(published.path),
                "manifest": str(published.manifest),
                **summary,
                "verified": verified,
                "utility": audit.group("utility"),
                "risk": audit.group("risk"),
                "audit_context": audit.context,
            }
        )
        return
    for key, value in summary.items():
        print(f"{key}: {value}")
    sampled = audit.context.get("sampled", {})
    keys = ", ".join(published.key_variables)
    print(
        f"published file: {summary['k']}-anonymous on its key variables ({keys}), counted on every "
        "record as pyarrow reads them back: the rarest combination is shared by "
        f"{published.smallest_frequency} records"
    )
    print(
        f"audit: on a random sample of {sampled.get('records', 0):,} of "
        f"{sampled.get('of', 0):,} records (k-anonymity exact)"
    )
    print(f"written: {published.path}/")
    print(f"manifest: {published.manifest}")


def _from_explore(args, given: dict) -> tuple[dict, dict]:
    """--from-explore RESULT.json --pick N: the run options and parameters of run N of the
    exploration (its labels in args.picked_labels), for the input it explored (same SHA-256).
    Options given on the command line that a run fixes are errors; --shuffle and the output's
    own options (report, labels, json) may be added."""
    from .. import explore, manifest

    if args.from_explore is None or args.pick is None:
        raise UserError(
            "--from-explore and --pick go together: --from-explore RESULT.json --pick N"
        )
    fixed = [name for name in given if name not in ("shuffle", "household", "shuffle_seed")]
    if fixed or args.param or args.init:
        shown = (
            [f"--{n.replace('_', '-')}" if n != "k" else "-k" for n in fixed]
            + (["--param"] if args.param else [])
            + (["--init"] if args.init else [])
        )
        raise UserError(f"--from-explore publishes the run as explored: drop {', '.join(shown)}")
    doc, labels = explore.load(args.from_explore, runs=[args.pick])
    runs = {row["id"]: row for row in doc["runs"]}
    if not runs:
        raise UserError(f"--pick {args.pick}: {Path(args.from_explore).name} holds no run")
    if args.pick not in runs:
        raise UserError(
            f"--pick {args.pick}: {Path(args.from_explore).name} has runs "
            f"{min(runs)} to {max(runs)}"
        )
    row = runs[args.pick]
    if row["status"] != "ok" or args.pick not in labels:
        raise UserError(
            f"--pick {args.pick}: that run did not finish ({row['status']}"
            + (f": {row['note']}" if row.get("note") else "")
            + ")"
        )
    sha = doc["input"].get("sha256")
    if sha is None:
        raise UserError(
            f"{Path(args.from_explore).name} names no input SHA-256: the file it explored "
            "cannot be "
            "checked, so it is not published (explore a file, or protect with the run's options)"
        )
    if not Path(args.input).is_file():
        raise UserError(f"input file not found: {args.input}")
    if manifest.sha256(args.input) != sha:
        raise UserError(
            f"{Path(args.input).name} is not the file {Path(args.from_explore).name} explored "
            "(its SHA-256 "
            "differs)"
        )
    from ..options import GRID_OPTIONS, validate_run

    foreign = sorted(name for name in doc["options"] if name not in GRID_OPTIONS)
    if foreign:  # an exploration's runs share only the grid's options (no scheduler, no time limit)
        raise UserError(
            f"{Path(args.from_explore).name} is not a microagg explore result: its options name "
            f"{', '.join(map(str, foreign))[:200]}"
        )
    options = {name: value for name, value in doc["options"].items() if value != "(an array)"}
    options.update(k=row["k"], method=row["method"], **{n: v for n, v in given.items()})
    # the budget the run used, in the manifest's run options (as ``Exploration.commands`` puts it
    # in the run's protect command): its re-run is that run, not the method unbounded
    if row.get("work") is not None:
        options["work"] = row["work"]
    elif row.get("time_limit") is not None:
        options["time_limit"] = row["time_limit"]
    validate_run(options, row["params"], cli=True)
    args.picked_labels = labels[args.pick]
    return options, dict(row["params"])


#: column lists longer than this are shown by their first and last names (--json lists them all)
SHOWN_NAMES = 20


def _names_text(names) -> str:
    names = [str(c) for c in names]
    if len(names) <= SHOWN_NAMES:
        return ", ".join(names)
    return (
        f"{', '.join(names[: SHOWN_NAMES - 2])}, ..., {names[-1]} "
        f"({len(names):,} columns; --json lists them "
        "all)"
    )


def _print_protected(args, res) -> None:
    published = res.file
    if args.json:
        record = result_record(res, published.path, published.report, published.unchanged)
        record["manifest"] = None if published.manifest is None else str(published.manifest)
        record["labels"] = None if published.labels is None else str(published.labels)
        record["unchanged_sheets"] = [str(s) for s in published.other_sheets]
        record["verified"] = {
            "read_back_by": published.read_back_by,
            "key_variables": published.key_variables,
            "k_anonymous": published.k_anonymous,
            "smallest_frequency": published.smallest_frequency,
        }
        print_json(record)
        return
    print(res.summary())
    print(f"protected (quasi-identifiers): {_names_text(res.columns)}")
    suppressed = (
        [] if res.suppression is None else [c for c, n in res.suppression.per_key.items() if n]
    )
    protected, suppressed_set = set(res.columns), set(suppressed)
    recoded = [c for c in res.changed_columns if c not in protected and c not in suppressed_set]
    if recoded:
        print(f"recoded (merged strata): {_names_text(recoded)}")
    if suppressed:
        print(f"suppressed values (local suppression): {_names_text(suppressed)}")
    if published.unchanged:
        print(f"unchanged: {_names_text(published.unchanged)}")
    if published.other_sheets:
        print(f"other sheets, published unchanged: {_names_text(published.other_sheets)}")
    print(f"written: {published.path}")
    for what, path in (
        ("report", published.report),
        ("labels", published.labels),
        ("manifest", published.manifest),
    ):
        if path is not None:
            print(f"{what}: {path}")


# --- evaluate --------------------------------------------------------------------------------


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
        "strata_published": (
            None
            if res.strata is None or not res.strata.merges
            else {"how": res.strata.published, "mapping": list(res.strata.mapping)}
        ),
        "shuffled": bool(getattr(res, "shuffled", False)),
        "suppression": (
            None if getattr(res, "suppression", None) is None else res.suppression.to_dict()
        ),
        "per_variable": res.per_variable,
        "seconds": res.seconds,
        "extras": res.extras,
        "output": None if output is None else str(output),
        "report": None if report is None else str(report),
    }
