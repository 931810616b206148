"""``microagg explore``: a risk-utility map, a grid of k values and methods run within one budget,
audited and mapped (``microagg.explore``); -o keeps its result for ``protect --from-explore``.
"""

from __future__ import annotations

from pathlib import Path

from .common import (
    UserError,
    add_read_options,
    parse_param,
    positive_number,
    print_json,
    progress_bar,
    read_options,
    stdout_to_stderr,
)


def declare(commands) -> None:
    """The explore command and its flags (the grid's run options come from their declarations)."""
    from ..options import NOT_FOR_A_GRID, add_arguments

    ex = commands.add_parser(
        "explore", help="a risk-utility map: a grid of k values and methods within one budget"
    )
    ex.add_argument("input")
    ex.add_argument(
        "-k", default="3,4,5,10", metavar="K1,K2,..", help="the k values (default 3,4,5,10)"
    )
    ex.add_argument(
        "--methods",
        default=",".join(("mdav", "vmdav", "mdav-mhm", "icsm", "lsearch")),
        metavar="M1,M2,..",
        help="the methods (default mdav,vmdav,mdav-mhm,icsm,lsearch)",
    )
    ex.add_argument(
        "--time-limit",
        default=None,
        metavar="SECONDS",
        help=(
            "the whole exploration's budget (default 60): cheap runs first, anytime methods "
            "share it"
        ),
    )
    ex.add_argument(
        "--risk",
        default="record_linkage_dbrl",
        metavar="MEASURE",
        help=(
            "the risk measure of the map, the frontier and --max-risk (an audit risk measure, "
            "default "
            "record_linkage_dbrl)"
        ),
    )
    ex.add_argument(
        "--max-risk",
        default=None,
        metavar="R",
        help=(
            "recommend the least IL among runs whose risk is "
            "at most R (in the measure's own unit: a share 0..1 for record linkage)"
        ),
    )
    add_arguments(ex, skip=NOT_FOR_A_GRID)
    ex.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="[METHOD:]NAME=VALUE",
        help="a method parameter, for every method of the grid that declares it (or METHOD's only)",
    )
    ex.add_argument(
        "-o",
        "--output",
        metavar="RESULT.json",
        help=(
            "write the result and the runs' labels (RESULT.labels.npz) for protect --from-explore;"
            " an existing result of the same data and options is widened: its runs are reused"
        ),
    )
    ex.add_argument(
        "--fresh", action="store_true", help="do not reuse the runs of an existing -o result"
    )
    ex.add_argument("--csv", metavar="FILE.csv", help="write the table as CSV")
    ex.add_argument("--map", metavar="FILE.svg", help="write the risk-utility map as SVG")
    ex.add_argument(
        "--report",
        metavar="FILE.html",
        help="write the map and the table as a self-contained HTML page",
    )
    add_read_options(ex, missing=False)
    ex.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ex.add_argument(
        "--json", action="store_true", help="print the result as one JSON object on stdout"
    )
    ex.set_defaults(func=run)


def run(args) -> int:
    """microagg explore: the grid and every output path checked before the data are read, the grid
    run within one budget and audited, its files written, its table and recommendation printed."""
    from .. import explore, io
    from ..options import NOT_FOR_A_GRID, from_arguments

    options = from_arguments(args, skip=NOT_FOR_A_GRID)
    grid = _grid(args)
    src = Path(args.input)
    if not src.exists():
        raise UserError(f"input file not found: {src}")
    io.format_of(src)
    outputs = _output_paths(args, src)
    previous = None
    if "-o" in outputs and outputs["-o"].exists() and not args.fresh:
        previous = explore.load(outputs["-o"])  # runs of the same data and options are reused
    result_name = args.output if "-o" in outputs else "RESULT.json"
    with stdout_to_stderr():
        result = _explore(args, src, options, grid, previous)
        _write_outputs(result, outputs, result_name)
    if args.json:  # the reproduce commands carry the paths as typed: they run where the user is
        print_json(result.to_dict(result_name=result_name))
        return 0
    _print_explored(args, result, grid["time_limit"], outputs, result_name)
    return 0


def _grid(args) -> dict:
    """The grid asked for: its k values, methods, budget, risk measure (and its bound) and the
    methods' parameters, each checked."""
    from .. import explore

    ks = explore.checked_ks(args.k)
    names = explore.checked_methods(args.methods)
    budget = explore.DEFAULT_BUDGET if args.time_limit is None else _budget(args.time_limit)
    max_risk = None
    if args.max_risk is not None:
        try:
            max_risk = float(args.max_risk)
        except ValueError:
            raise UserError(f"--max-risk must be a number, got {args.max_risk!r}") from None
    explore.checked_risk(args.risk, max_risk)
    return {
        "ks": ks,
        "names": names,
        "time_limit": budget,
        "risk": args.risk,
        "max_risk": max_risk,
        "method_params": _explore_params(names, args.param),
    }


def _output_paths(args, src: Path) -> dict:
    """The files asked for, by flag: each with its suffix, never the input nor another output."""
    from .. import explore, io

    taken = [src]
    outputs = {}
    for flag, value, suffixes in (
        ("-o", args.output, (".json",)),
        ("--csv", args.csv, (".csv",)),
        ("--map", args.map, (".svg",)),
        ("--report", args.report, (".html", ".htm")),
    ):
        if value is None:
            continue
        if not str(value).lower().endswith(suffixes):
            raise UserError(f"{flag} must end in {' or '.join(suffixes)}, got {Path(value).name}")
        outputs[flag] = io.check_side_file(
            value, {"-o": "result"}.get(flag, flag.lstrip("-")), *taken
        )
        taken.append(outputs[flag])
    if "-o" in outputs:
        io.check_side_file(explore.labels_path(outputs["-o"]), "labels", *taken)
    return outputs


def _explore(args, src: Path, options: dict, grid: dict, previous):
    """Read the input and run the grid (``explore.explore``); a grid of which no run finished is
    an error, and nothing is written."""
    from .. import explore, io, manifest
    from ..publication import as_in_file

    table = io.read(src, **read_options(args))
    options = as_in_file(options, table)
    info = {
        "name": src.name,
        "sha256": manifest.sha256(src),
        "format": table.format,
        "read": {k: v for k, v in read_options(args).items() if v not in (None, ())},
    }
    with progress_bar(not args.quiet, grid["time_limit"], "microagg explore") as bar:
        result = explore.explore(
            table,
            grid["ks"],
            grid["names"],
            time_limit=grid["time_limit"],
            risk=grid["risk"],
            max_risk=grid["max_risk"],
            method_params=grid["method_params"],
            previous=previous,
            progress=bar if bar else False,
            input_info=info,
            **options,
        )
    if not any(
        r.status == "ok" for r in result.runs
    ):  # a run that produced nothing is not a success
        first = next((r for r in result.runs if r.note), None)
        raise UserError(
            f"no run of the exploration finished ({len(result.runs)} tried"
            + (f"; run {first.id}: {first.status}: {first.note}" if first is not None else "")
            + "): nothing was written"
        )
    return result


def _write_outputs(result, outputs: dict, result_name) -> None:
    """The result (-o, with its labels), the table (--csv), the map (--map), the page (--report)."""
    from .. import explore, io

    if "-o" in outputs:
        result.save(outputs["-o"])
    if "--csv" in outputs:
        io.atomic_write_text(outputs["--csv"], result.to_csv())
    if "--map" in outputs:
        io.atomic_write_text(outputs["--map"], result.map_svg())
    if "--report" in outputs:
        io.atomic_write_text(
            outputs["--report"], explore.report_html(result, result_name=result_name)
        )


def _print_explored(args, result, budget: float, outputs: dict, result_name) -> None:
    print(result.table())
    done = sum(r.done for r in result.runs)
    print(
        f"{done} of {len(result.runs)} runs done in {result.seconds:.1f} s of a {budget:g} s budget"
    )
    best = result.recommended()
    if best is not None:
        cmds = result.commands(best, args.input, "OUTPUT", result_name)
        command = cmds["from_explore" if "-o" in outputs else "protect"]
        print(f"reproduce the recommended run: {command}")
    for flag, path in outputs.items():
        print(f"written ({flag}): {path}")


def _budget(text: str) -> float:
    return positive_number(text, "--time-limit (the exploration's budget)", "seconds")


def _explore_params(names, texts) -> dict:
    """--param NAME=VALUE for explore: given to every method of the grid that declares NAME (one
    at least must), typed by each one's declaration; METHOD:NAME=VALUE for one method."""
    from .. import methods as registry

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
