"""The run's options, declared once: one table of ``Param``s (the class the methods declare their
parameters with), validated once, before any data is read, on every path.

``RUN_OPTIONS`` is the table: each option's kind, range or choices, default, meaning and
command-line flag. ``validate_run`` checks a call's options and the method's parameters against
it, then what involves several of them (``together``), and returns a :class:`Run`: the API
(``microaggregate``), the command line (its flags are generated from the table:
``add_arguments`` / ``from_arguments``), the out-of-core mode and the app all go through it, so
they agree on what a user error is: a ``ParameterError`` (an ``InputError``) in one line. What
needs the data (columns exist, k against n, ...) is checked right after loading by the
pipeline's ``check_params_vs_input``. ``command_line`` / ``python_call`` write the command and the
Python call that reproduce a run, from the same table.

The package's modules: ``run_options`` (RUN_OPTIONS: a new option's one home),
``generated`` (the options' typed forms, written from the table by ``python -m
microagg.options.generate``: ``Run``'s fields, the ``RunOptions`` TypedDict), ``values`` (the
structured values' checks), ``together`` (what involves several options) and ``command_line``
(the flags, the reproducing command and call). Nothing heavy is imported here: the command line
builds its parser from this package at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..errors import ParameterError
from . import run_options
from .command_line import (
    add_arguments,
    command_line,
    from_arguments,
    python_call,
    unlisted_names,
)
from .generated import GridOptions, KeywordOptions, PositionalOptions, RunOptions
from .run import Run
from .run_options import (
    GRID_OPTIONS,
    KEY_ANONYMITY,
    NOT_FOR_A_GRID,
    ON_KEYS_BELOW_K,
    POSITIONAL,
    RUN_OPTIONS,
    option,
    register,
    unregister,
)
from .together import check_together, shown
from .unknown_names import suggestion, unknown_keyword_error
from .values import LOCAL_SCHEDULERS, MERGED_STRATA, parse_weights, positive_weights

__all__ = [
    "RUN_OPTIONS",
    "POSITIONAL",
    "Run",
    "validate_run",
    "split_arguments",
    "signature",
    "describe",
    "option",
    "LOCAL_SCHEDULERS",
    "add_arguments",
    "from_arguments",
    "command_line",
    "python_call",
    "parse_weights",
    "unlisted_names",
    "NOT_FOR_A_GRID",
    "GRID_OPTIONS",
    "given_options",
    "positive_weights",
    "ON_KEYS_BELOW_K",
    "KEY_ANONYMITY",
    "MERGED_STRATA",
    "register",
    "unregister",
    "call_options",
    "RunOptions",
    "PositionalOptions",
    "KeywordOptions",
    "GridOptions",
]


def split_arguments(args: tuple, kwargs: dict) -> tuple[dict, dict]:
    """(run options, method parameters) of a call: positional arguments in POSITIONAL order, keyword
    arguments that name a run option, and the rest (the method's parameters)."""
    if len(args) > len(POSITIONAL):
        raise TypeError(
            f"microaggregate() takes at most {len(POSITIONAL) + 1} positional arguments "
            f"({len(args) + 1} given)"
        )
    options = dict(zip(POSITIONAL, args, strict=False))
    twice = [name for name in options if name in kwargs]
    if twice:
        raise TypeError(f"microaggregate() got multiple values for argument {twice[0]!r}")
    params = {}
    for name, value in kwargs.items():
        (options if name in run_options.DECLARED else params)[name] = value
    return options, params


def given_options(arguments: Mapping[str, Any], names=None) -> dict:
    """The run options a call gave, from its arguments (``locals()`` of a function whose signature
    lists the options): those not left at their declared default (the very default object), so a
    call validates and records what was given, as when options came as keyword arguments.
    ``names``: the options the function takes (default: every run option)."""
    return {
        name: arguments[name]
        for name in names or run_options.DECLARED
        if name in arguments and arguments[name] is not run_options.DECLARED[name].default
    }


def call_options(
    arguments: Mapping[str, Any], keywords: Mapping[str, Any], names=None
) -> tuple[dict, dict]:
    """(the run options given, the rest) of a call that lists some options in its signature
    (``arguments``: its ``locals()``) and takes the others as ``**keywords``: options left at their
    declared default (the very default object) are not given (``given_options``); the rest are
    the keywords that name no run option (a method's parameters). ``names``: the options the
    function takes (default: every run option)."""
    names = list(names or run_options.DECLARED)
    given = given_options({**arguments, **keywords}, names)
    return given, {name: value for name, value in keywords.items() if name not in names}


def signature(func_name: str = "microaggregate"):
    """The call's signature from the declarations (introspection, help()): the data, the options
    also taken by position, then ``**options`` (the keyword-only run options, typed by
    ``generated.MicroaggregateOptions``, and the method's parameters)."""
    import inspect

    P = inspect.Parameter
    ps = [P("data", P.POSITIONAL_OR_KEYWORD)]
    declared = run_options.DECLARED
    ps += [P(name, P.POSITIONAL_OR_KEYWORD, default=declared[name].default) for name in POSITIONAL]
    ps.append(P("options", P.VAR_KEYWORD))
    return inspect.Signature(ps)


def describe() -> str:
    """One line per run option (name, constraint, default, meaning), for docstrings and help."""
    return "\n".join(f"    {p.describe()}" for p in run_options.RUN_OPTIONS)


def validate_run(
    options: Mapping[str, Any], params: Mapping[str, Any] | None = None, *, cli: bool = False
) -> Run:
    """Check every run option and the method's parameters before any data is read.

    ``options``: run option name -> value (missing ones take their default); ``params``: the
    method's parameters. Unknown names are errors (a name that is neither a run option nor one of
    the method's parameters). ``cli``: errors name the command line's flags. One ParameterError
    (an InputError) for the first problem found.
    """
    from .. import methods

    params = dict(params or {})
    unknown = [name for name in options if name not in run_options.DECLARED]
    if unknown:
        meant = suggestion(unknown[0], run_options.DECLARED)
        hint = f": did you mean {shown(meant, cli)}?" if meant else ""
        raise ParameterError(f"unknown run option(s): {', '.join(unknown)}{hint}")
    method = options.get("method", "mdav")
    p = run_options.DECLARED["method"]
    (replace(p, name=shown("method", cli)) if cli else p).validate(
        method, None
    )  # sdcMicro's names: a hint
    info = methods.get(method)
    values = {}
    for p in run_options.RUN_OPTIONS:
        named = replace(p, name=shown(p.name, cli)) if cli else p
        values[p.name] = named.validate(options[p.name], None) if p.name in options else p.default
    _check_keywords(params, info, cli)
    method_params = info.validate(params)
    check_together(values, info, method_params, cli)
    return Run.of(info, method_params, params, values)


def _check_keywords(params: Mapping[str, Any], info, cli: bool) -> None:
    """A keyword that is neither a run option nor one of the method's parameters is an unknown
    option, said with the name it was probably meant as (``options.unknown_names``), not blamed on
    the method."""
    from .. import methods

    for name in params:
        if name not in info.params:
            raise unknown_keyword_error(
                name,
                run_options.DECLARED,
                info.name,
                info.params,
                {m: methods.get(m).params for m in methods.names()},
                flag=lambda option: shown(option, cli),
            )
