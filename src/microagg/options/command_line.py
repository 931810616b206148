"""The command line and the reproducing call, generated from the run options' table: one flag
per option (``add_arguments``), the given flags typed by their declarations
(``from_arguments``), and the ``microagg protect`` command and Python call that reproduce a run
(``command_line``, ``python_call``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..declarations import Param
from . import run_options

__all__ = ["add_arguments", "from_arguments", "command_line", "python_call", "unlisted_names"]


def add_arguments(parser, skip=(), required=(), notes: Mapping[str, str] | None = None) -> None:
    """One flag per run option with flags (``skip``: names the command declares itself;
    ``required``: options the command needs given; ``notes``: what the command says instead of the
    option's default, e.g. that it needs the option); every value is read as text and typed by its
    declaration in ``from_arguments``. The help is the declaration's meaning, then what a value
    must be and the default."""
    notes = dict(notes or {})
    for p in run_options.RUN_OPTIONS:
        if not p.flags or p.name in skip:
            continue
        if p.name in notes:
            default = f"; {notes[p.name]}"
        elif p.name in required:
            default = "; required"
        else:
            default = (
                "" if p.default is None or isinstance(p.default, bool) else f"; default {p.default}"
            )
        shown = p.kind in (
            "int",
            "float",
            "str",
            "method",
        )  # structured values: the doc says what they are
        text = (
            f"{p.doc} ({p.constraint().removesuffix(' or None')}{default})"
            if shown
            else f"{p.doc} ({default.removeprefix('; ')})"
            if default
            else p.doc
        )
        if p.kind == "bool" and p.flag_value is False:  # a flag that turns a default on off (--raw)
            text = f"by default: {text}"
        if p.kind == "bool":
            parser.add_argument(
                *p.flags,
                dest=p.name,
                action="store_const",
                const=p.flag_value,
                default=None,
                help=text,
            )
        else:
            parser.add_argument(
                *p.flags,
                dest=p.name,
                default=None,
                metavar=p.metavar,
                help=text,
                required=p.name in required,
            )


def from_arguments(args, skip=()) -> dict:
    """The run options given on the command line, typed and validated by their declarations
    (errors name the flag); options not given are left out (their defaults apply)."""
    out = {}
    for p in run_options.RUN_OPTIONS:
        if not p.flags or p.name in skip:
            continue
        raw = getattr(args, p.name, None)
        if raw is None:
            continue
        shown = replace(p, name=p.flags[0])
        out[p.name] = raw if p.kind == "bool" else shown.validate(shown.parse(raw, None), None)
    return out


def _number_text(value: float) -> str:
    """A float as the shortest text that reads back as the same float ('600' for 600.0)."""
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def _cli_text(p: Param, value) -> str:
    if p.name == "weights":
        items = value.items() if isinstance(value, Mapping) else None
        return (
            ",".join(f"{c}={_number_text(float(w))}" for c, w in items)
            if items
            else ",".join(_number_text(float(w)) for w in value)
        )
    if p.name == "aggregation_params":  # NAME=VALUE,... (values.check_aggregation_params)
        return ",".join(f"{n}={_number_text(float(v))}" for n, v in value.items())
    if p.name == "bounds":  # COL=LO:HI,... (privacy.dp.parse_bounds)
        return ",".join(
            f"{c}={_number_text(float(lo))}:{_number_text(float(hi))}"
            for c, (lo, hi) in value.items()
        )
    if isinstance(value, Mapping):
        return ",".join(map(str, value))
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    if isinstance(value, float):
        return _number_text(value)
    return str(value)


def _flag_and_value(flag: str, text: str) -> list[str]:
    """A flag and its value as words no option parser misreads: a value starting with '-' is joined
    to its flag ('--columns=-x,b'; a short flag: '-k-1'), else two words."""
    if not text.startswith("-"):
        return [flag, text]
    return [f"{flag}={text}" if flag.startswith("--") else f"{flag}{text}"]


def command_line(
    input_path: str, output_path: str, options: Mapping[str, Any], params: Mapping[str, Any]
) -> str:
    """The ``microagg protect`` command that runs with these options (those that differ from their
    defaults, and k, method, columns and seed always) and method parameters. Nothing in it can be
    taken for an option: a path starting with '-' is written './-name', a value starting with '-'
    is joined to its flag ('--columns=-x'). Numbers are written exactly (the shortest text that
    reads back as the same float). Column names holding a comma cannot be listed
    (``unlisted_names``)."""
    import shlex

    q = shlex.quote
    shown = lambda path: q(path if not str(path).startswith("-") else f"./{path}")  # noqa: E731
    parts = ["microagg", "protect", shown(input_path), "-o", shown(output_path)]
    for p in run_options.RUN_OPTIONS:
        if not p.flags or p.name not in options:
            continue
        value = options[p.name]
        if hasattr(value, "__array__"):  # numbers per QI given as an array (weights=)
            value = value.tolist()
        always = p.name in ("k", "method", "columns", "seed")
        if value is None or (not always and value == p.default):
            continue
        if p.kind == "bool":
            if value == p.flag_value:
                parts.append(p.flags[0])
            continue
        parts += [q(word) for word in _flag_and_value(p.flags[0], _cli_text(p, value))]
    for name, value in params.items():
        text = (
            ("true" if value else "false")
            if isinstance(value, bool)
            else (
                "none"
                if value is None
                else (
                    _number_text(value)
                    if isinstance(value, float)
                    else str(value)
                    if isinstance(value, (int, str))
                    else repr(value)
                )
            )
        )
        parts += ["--param", q(f"{name}={text}")]
    return " ".join(parts)


def unlisted_names(options: Mapping[str, Any]) -> list:
    """Column names among the options' column lists that the command line cannot list (it splits
    a list at commas): such a run is reproduced by the Python call only."""
    out = []
    for p in run_options.RUN_OPTIONS:
        value = options.get(p.name)
        if p.flags and p.kind == "names" and value is not None and not isinstance(value, str):
            out += [c for c in value if "," in str(c) and c not in out]
    return out


def python_call(
    options: Mapping[str, Any],
    params: Mapping[str, Any],
    data: str = "df",
    function: str = "microaggregate",
) -> str:
    """The ``microagg.microaggregate`` call (or ``microagg.protect``, with ``data`` naming the input
    and output files) that runs with these options and method parameters."""
    kwargs = {
        name: value
        for name, value in options.items()
        if name in run_options.DECLARED
        and name not in ("progress", "shuffle_seed", "labels")
        and (
            value != run_options.option(name).default or name in ("k", "method", "columns", "seed")
        )
    }
    args = ",\n    ".join(f"{k}={v!r}" for k, v in {**kwargs, **params}.items())
    return f"res = microagg.{function}(\n    {data},\n    {args},\n)\n"
