"""The Protect tab's controls, generated from the declarations, and the values they send, parsed
back by the same declarations (no web framework here: tests/test_app_controls.py).

One control per run option the command line has a flag for (``options.RUN_OPTIONS``) and per
parameter of the chosen method (``MethodInfo.params``): its widget follows the ``Param``'s kind
(a number box with the declared range, a check box, a list of the declared choices, a text box
for structured values, the loaded file's columns for a column-valued option), its label is the
option's name, its help the declared meaning, constraint and default. A run option added to the
table appears on the page with no edit of the app. What a control sends is typed and checked by
its ``Param`` (``value_of``), then the whole run by ``options.validate_run`` and the pipeline's
data hook (``runspec.check_against_data``): the app and the command line give the same one-line
errors.

Column-valued options send the positions of the chosen columns in the data's profile (as text),
never names: a name the page did not offer is refused in one line.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from ..declarations import Param
from ..errors import InputError, ParameterError

__all__ = [
    "Control",
    "column_valued",
    "widget_of",
    "narrowed",
    "option_controls",
    "method_controls",
    "value_of",
    "leaves_the_quasi_identifiers",
    "param_input_id",
    "run_spec",
    "ABSENT",
]

#: widget kinds: "numeric", "checkbox", "select", "text", "columns" (several of the data's columns)
#: and "column" (one column, or none)
WIDGETS = ("numeric", "checkbox", "select", "text", "columns", "column")


@dataclass(frozen=True)
class Control:
    """One generated control: the declaration it comes from, its input id (in the tab's
    namespace), widget kind, label, help text, initial value and choices (value -> label; for a
    column control, a profile position -> the column's name). ``owner``: the method a parameter
    belongs to (errors name it), None for a run option."""

    param: Param
    input_id: str
    widget: str
    label: str
    help: str
    value: Any
    choices: dict | None = None
    owner: str | None = None


def column_valued(p: Param) -> str | None:
    """ "many" for an option that names columns (kind "names"), "one" for one column (its metavar
    says COLUMN, as --sample-weight's), else None."""
    if p.kind == "names":
        return "many"
    if p.metavar == "COLUMN":
        return "one"
    return None


def widget_of(p: Param) -> str:
    """The widget a declaration gets."""
    columns = column_valued(p)
    if columns is not None:
        return "columns" if columns == "many" else "column"
    if p.kind == "bool":
        return (
            "select" if p.nullable else "checkbox"
        )  # a nullable one has a third state: the default
    if p.kind == "method" or p.allowed() is not None:
        return "select"
    if p.kind in ("int", "float"):
        return "numeric"
    return "text"


def _help(p: Param) -> str:
    """The declared meaning, constraint (structured values: their meaning says it) and default."""
    default = (
        "none"
        if p.default is None
        else repr(p.default)
        if isinstance(p.default, str)
        else str(p.default)
    )
    blank = "; blank: none" if p.nullable and p.kind in ("int", "float") else ""
    constraint = "" if p.kind == "object" else f"{p.constraint().removesuffix(' or None')}; "
    return f"{p.doc} ({constraint}default {default}{blank})"


_DEFAULT = object()


def _control(
    p: Param, input_id: str, columns=None, owner: str | None = None, start=_DEFAULT
) -> Control:
    """``start``: the value the control starts from (default: the declared default)."""
    widget = widget_of(p)
    label = p.name.replace("_", " ")
    value = p.default if start is _DEFAULT else start
    choices = None
    if widget in ("columns", "column"):
        names = list(columns or ())
        choices = {str(i): str(name) for i, name in enumerate(names)}
        first = value if isinstance(value, (list, tuple)) else [] if value is None else [value]
        value = [str(names.index(c)) for c in first if c in names]
        if widget == "column":
            choices = {"": "(none)", **choices}
            value = value[0] if value else ""
    elif widget == "select":
        if p.kind == "bool":
            allowed = (True, False)
        elif p.kind == "method":
            from .. import methods

            allowed = tuple(methods.names())
        else:
            allowed = p.allowed()
        choices = {_text(c): _text(c) for c in allowed}
        if p.nullable:
            choices = {"": "(default)" if p.default is None else "(none)", **choices}
        value = "" if value is None else _text(value)
    elif widget == "text":
        value = "" if value is None else _text(value)
    return Control(p, input_id, widget, label, _help(p), value, choices, owner)


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def narrowed(p: Param) -> Param:
    """The declaration the app's control follows: the run option's own, narrowed where the app
    promises more than the run needs. The app keeps the data on this machine: its scheduler is one
    of Dask's local ones, never a cluster's address (which the command line and the API take), and
    a value the page sends is checked against that list before anything tries to reach it."""
    if p.name == "scheduler":
        from dataclasses import replace

        from ..options import LOCAL_SCHEDULERS

        return replace(
            p,
            kind="str",
            choices=LOCAL_SCHEDULERS,
            check=None,
            parse_text=None,
            doc=(
                "partitioned mode: the Dask scheduler, on this machine (a cluster's address: the "
                "command line)"
            ),
        )
    return p


def option_controls(columns=None, initial=None) -> list[Control]:
    """A control per run option with a command-line flag (the API-only ones, such as the progress
    callback, have none), in declaration order; ``columns``: the loaded data's column names;
    ``initial``: option -> the value a control starts from instead of its default (the columns the
    column rules would take when none are named)."""
    from ..options import RUN_OPTIONS

    initial = initial or {}
    return [
        _control(narrowed(p), p.name, columns, start=initial.get(p.name, p.default))
        for p in RUN_OPTIONS
        if p.flags
    ]


def param_input_id(method: str, name: str) -> str:
    """The input id of a method parameter's control (one per method: switching keeps each value)."""
    return "param_" + "".join(ch if ch.isalnum() else "_" for ch in f"{method}__{name}")


def method_controls(info) -> list[Control]:
    """A control per declared parameter of a registered method."""
    return [
        _control(p, param_input_id(info.name, name), owner=info.name)
        for name, p in info.params.items()
    ]


def _where(c: Control) -> str:
    return c.param.where(c.owner)


def value_of(c: Control, raw, columns=None):
    """The value of a control as the page sent it (``raw``), typed and checked by its declaration
    (ParameterError / InputError, one line): the declared default when left blank; for a column
    control, the names of the chosen columns (``columns``: the data's, in profile order), None when
    none is chosen."""
    p = c.param
    if c.widget in ("columns", "column"):
        return _columns(c, raw, list(columns or ()))
    if c.widget == "checkbox":
        if not isinstance(raw, bool):
            raise InputError(
                f"the page sent a value that is not true or false for {_where(c)}: reload the page"
            )
        return p.validate(raw, c.owner)
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return p.validate(None, c.owner) if p.nullable or c.widget == "numeric" else p.default
    if c.widget == "numeric" and isinstance(raw, numbers.Real) and not isinstance(raw, bool):
        if isinstance(raw, float) and raw.is_integer() and p.kind == "int" and math.isfinite(raw):
            raw = int(raw)
        return p.validate(raw, c.owner)
    if not isinstance(raw, str):
        what = "a number" if c.widget == "numeric" else "text"
        raise InputError(
            f"the page sent a value that is not {what} for {_where(c)}: reload the page"
        )
    if c.widget == "select":
        if p.kind == "bool":
            return p.validate(p.parse(raw, c.owner), c.owner)
        allowed = p.allowed() or ()
        value = next((v for v in allowed if _text(v) == raw), raw)
        return p.validate(value, c.owner)  # a value outside the choices: the declaration's error
    return p.validate(p.parse(raw[:10_000], c.owner), c.owner)


def _columns(c: Control, raw, columns: list):
    """Column names from the profile positions a column control sent."""
    one = c.widget == "column"
    if isinstance(raw, (str, list, tuple, type(None))) and not raw:  # nothing chosen
        return None
    values = [raw] if one or isinstance(raw, str) else raw
    if (
        (one and not isinstance(raw, str))
        or not isinstance(values, (list, tuple))
        or not all(isinstance(v, str) for v in values)
    ):
        raise InputError(
            f"the page sent something that is not a column for {_where(c)}: reload the page"
        )
    by_position = {str(i): name for i, name in enumerate(columns)}
    unknown = [v for v in values if v not in by_position]
    if unknown:
        shown = ", ".join(repr(v[:20]) for v in unknown[:3])
        raise InputError(
            f"the page sent an unknown column for {_where(c)} ({shown}): reload the page"
        )
    names = [by_position[v] for v in values]
    return names[0] if one else names


#: what ``sent`` gives for a control that is not on the page (its value: the declared default)
ABSENT = object()
#: the run option whose columns are the quasi-identifiers
QUASI_IDENTIFIERS = "columns"


def run_spec(loaded: dict, sent):
    """The run the page's controls describe (a ``runspec.RunSpec``), each value typed and checked by
    its declaration, then the whole run by ``options.validate_run`` (one line for the first bad
    value). ``loaded``: the data shown (path, name, dataset, shown path, reading bound, profile);
    ``sent(input_id)``: what the page sent for a control, ABSENT when the control is not on the
    page. Quasi-identifiers whose dtype makes them categories are declared so
    (``runspec.with_dtype_kinds``), so that the reproduce command makes the same run."""
    from .. import methods
    from .runspec import RunSpec, with_dtype_kinds

    names = [p.name for p in loaded["profile"]]
    options = {}
    for c in option_controls(names):
        raw = sent(c.input_id)
        if raw is not ABSENT:  # (a column control is on the page once data are loaded)
            options[c.param.name] = value_of(c, raw, names)
    if not options.get(QUASI_IDENTIFIERS):
        raise InputError("choose at least one quasi-identifier column")
    options = with_dtype_kinds(options, loaded["profile"])
    info = methods.get(options.get("method", "mdav"))
    params = {}
    for c in method_controls(info):
        raw = sent(c.input_id)
        if raw is not ABSENT:
            params[c.param.name] = value_of(c, raw)
    return RunSpec.of(
        loaded["path"],
        loaded["name"],
        dataset=loaded["dataset"],
        shown_path=loaded["shown"],
        max_bytes=loaded["max_bytes"],
        **options,
        **params,
    )


def leaves_the_quasi_identifiers(p: Param) -> bool:
    """Whether a column chosen for the column-valued option ``p`` stops being a quasi-identifier:
    the declared run refuses a column in both roles (a stratum, a sample weight), where a kind
    (categorical, ordinal) names quasi-identifiers. Asked of ``options.validate_run`` itself, so a
    new role follows its declaration."""
    from ..options import validate_run

    many = column_valued(p)
    if many is None or p.name == QUASI_IDENTIFIERS:
        return False
    probe = "column"
    try:
        validate_run({"columns": [probe], p.name: [probe] if many == "many" else probe})
    except ParameterError:
        return True
    return False
