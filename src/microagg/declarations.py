"""Declared parameters: each method declares its parameters once, at registration, and the run
declares its options once (``microagg.options``), with this one class.

A ``Param`` says a parameter's type, range or choices, default and meaning (and, for a run
option, its command-line flag). One validator (``validate``) checks a call's values against the
declarations before any data work and raises ``ParameterError`` (an ``InputError``) with one
line naming the owner, the parameter, what it must be and what it got. The command line reads
text with ``Param.parse``, so a value is typed by its declaration, not guessed; tests build bad
values from the declarations (``invalid_values``). (The habit is scikit-learn's
``_parameter_constraints`` and ``check_param_validation``.)

This module imports nothing of the package but the errors: a kind whose choices live higher up
(registered method names) is given them by their owner (``provide_choices``).
"""

from __future__ import annotations

import ast
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .deadline import BEYOND_ANY_RUN
from .errors import ParameterError

__all__ = [
    "Param",
    "validate",
    "ParameterError",
    "provide_choices",
    "invalid_values",
    "column_names",
    "STAGE_POINTS",
]

_KINDS = ("int", "float", "bool", "str", "method", "names", "object")

#: kind -> a function listing its allowed values, given by the module that owns them (the method
#: registry gives "method"), so that this module imports nothing above it
_NAMED_CHOICES: dict[str, Callable[[], list]] = {}
#: kind -> whether a value is allowed, where the owner can tell it without listing them all (the
#: method registry imports only the module of a method's name: a first call's 0.05-0.3 s)
_NAMED_MEMBERS: dict[str, Callable[[Any], bool]] = {}


def provide_choices(
    kind: str, listing: Callable[[], list], contains: Callable[[Any], bool] | None = None
) -> None:
    """Give a kind its allowed values (``listing()`` is called when a value is checked, or
    ``contains(value)`` when given; the listing then only for a refused value's message)."""
    _NAMED_CHOICES[kind] = listing
    if contains is not None:
        _NAMED_MEMBERS[kind] = contains


def _owned(kind: str) -> None:
    if kind not in _NAMED_CHOICES:  # the owner registers at import: import it now
        import importlib

        importlib.import_module({"method": "microagg.methods"}[kind])


def _choices_of(kind: str) -> list:
    _owned(kind)
    return list(_NAMED_CHOICES[kind]())


def _is_choice(kind: str, value) -> bool:
    _owned(kind)
    member = _NAMED_MEMBERS.get(kind)
    return member(value) if member is not None else value in _NAMED_CHOICES[kind]()


#: the pipeline's points where a run option's own ``stage`` can act, and what it is given and
#: returns there: "published": ``pipeline.PublishedValues`` (each continuous QI's published values
#: in original units, and their nature in words, which the audit reads), before they are written,
#: suppressed on the keys and measured; "grouped": ``pipeline.Grouping`` (the partition, the
#: original frame, the run's options; privacy models: t-closeness, differential privacy), right
#: after the method, before the group representatives
STAGE_POINTS = ("published", "grouped")


@dataclass(frozen=True)
class Param:
    """One declared parameter.

    kind: "int", "float", "bool", "str", "method" (a registered method name), "names" (column
    names: a name, a list of names or a comma-separated string; normalised to a list; a mapping
    keyed by names when ``check`` takes one) or
    "object" (structured values: ``check`` validates and normalises them). low / high bound
    numbers (inclusive unless low_open / high_open); choices lists the allowed values, or
    choices_from() gives them when a value is checked (registries that grow); nullable allows
    None. check(value) may normalise a value and raises ParameterError (or ValueError /
    TypeError, whose message is used) for a bad one; it runs after the kind and range checks.

    A run option also says how the command line gives it: flags ("--time-limit"; none: API
    only), metavar, flag_value (a flag without a value: it sets this one) and parse_text (text
    -> value, for structured options); ``annotation``, its type for type checkers as text (names
    of ``microagg.public_types``, ``collections.abc`` and ``typing``; default: the kind's type),
    read by ``python -m microagg.options.generate``; and, when no built-in stage acts on it, its own
    ``stage``: ``stage(values, value)``, called at the pipeline's point ``acts_on`` when the run
    gives the option a value other than its default, returns the values changed (``STAGE_POINTS``
    says what they are).
    """

    name: str
    kind: str
    default: Any
    doc: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple | None = None
    nullable: bool = False
    check: Callable[[Any], Any] | None = None
    choices_from: Callable[[], Any] | None = None
    flags: tuple = ()
    metavar: str | None = None
    flag_value: Any = None
    parse_text: Callable[[str], Any] | None = None
    data_bound: str | None = (
        None  # "columns": an index below the data's column count (checked with the data)
    )
    hint: Callable[[Any], str | None] | None = (
        None  # a better line for a value outside the choices (sdcMicro's names)
    )
    infinite_is_none: bool = (
        False  # +inf, and any value from deadline.BEYOND_ANY_RUN on, mean "no bound" (None)
    )
    annotation: str | None = None  # a run option's type for type checkers (default: its kind's)
    stage: Callable[[Any, Any], Any] | None = None  # a run option's own stage (``STAGE_POINTS``)
    acts_on: str = "published"  # the pipeline's point where ``stage`` runs

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"parameter {self.name}: unknown kind {self.kind!r}")
        if self.acts_on not in STAGE_POINTS:
            raise ValueError(f"parameter {self.name}: no pipeline point {self.acts_on!r}")

    # ---------------------------------------------------------------- description
    def allowed(self) -> tuple | None:
        """The allowed values (choices, or choices_from() now), or None."""
        if self.choices_from is not None:
            return tuple(self.choices_from())
        return self.choices

    def constraint(self) -> str:
        """What a value must be, in words ("a number > 0", "one of 'a', 'b'", ...)."""
        allowed = self.allowed()
        if allowed is not None:
            text = "one of " + ", ".join(map(repr, allowed))
        elif self.kind in ("int", "float"):
            text = "an integer" if self.kind == "int" else "a number"
            lo = None if self.low is None else (">" if self.low_open else ">=") + f" {self.low:g}"
            hi = (
                None if self.high is None else ("<" if self.high_open else "<=") + f" {self.high:g}"
            )
            text += " " + " and ".join(b for b in (lo, hi) if b) if (lo or hi) else ""
        else:
            text = {
                "bool": "true or false",
                "str": "a string",
                "method": "a registered method name",
                "names": "column names",
                "object": "see its description",
            }[self.kind]
        return text + (" or None" if self.nullable else "")

    def describe(self) -> str:
        """One line for ``microagg methods -v``: name, constraint, default, meaning."""
        return f"{self.name} ({self.constraint()}; default {self.default!r}): {self.doc}"

    # ---------------------------------------------------------------- checking
    def where(self, owner: str | None) -> str:
        """How an error names the parameter: 'vmdav parameter gamma', or 'time_limit' for a run
        option."""
        return self.name if owner is None else f"{owner} parameter {self.name}"

    def validate(self, value, method: str | None = "method"):
        """The value, normalised (int for "int", float for "float", a list for "names");
        ParameterError otherwise. ``method``: the owner named in errors (None: a run option)."""
        where = self.where(method)
        if value is None:
            if self.nullable:
                return None
            raise ParameterError(f"{where} must be {self.constraint()}, got None")
        kind = self.kind
        if kind == "bool":
            if not isinstance(value, (bool,)) and type(value).__name__ != "bool_":
                raise ParameterError(f"{where} must be true or false, got {value!r}")
            value = bool(value)
        elif kind == "int":
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                if (
                    isinstance(value, numbers.Real)
                    and not isinstance(value, bool)
                    and math.isfinite(value)
                    and float(value).is_integer()
                ):
                    value = int(value)
                else:
                    raise ParameterError(f"{where} must be {self.constraint()}, got {value!r}")
            value = int(value)
        elif kind == "float":
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ParameterError(f"{where} must be {self.constraint()}, got {value!r}")
            value = float(value)
            if self.infinite_is_none and value >= BEYOND_ANY_RUN:
                return None
            if not math.isfinite(value):
                raise ParameterError(f"{where} must be a finite number, got {value!r}")
        elif kind in ("str", "method"):
            if not isinstance(value, str):
                raise ParameterError(f"{where} must be {self.constraint()}, got {value!r}")
            if kind == "method" and not _is_choice("method", value):
                known = _choices_of("method")
                better = self.hint(value) if self.hint is not None else None
                raise ParameterError(
                    f"{where}: {better}"
                    if better
                    else f"{where}: unknown method {value!r}; known methods: {', '.join(known)}"
                )
        elif (
            kind == "names"
        ):  # (a mapping keyed by the names, when the declaration's check takes one)
            value = (
                value
                if isinstance(value, Mapping) and self.check is not None
                else _names(value, where)
            )
        if kind in ("int", "float"):
            bad_low = self.low is not None and (
                value <= self.low if self.low_open else value < self.low
            )
            bad_high = self.high is not None and (
                value >= self.high if self.high_open else value > self.high
            )
            if bad_low or bad_high:
                raise ParameterError(f"{where} must be {self.constraint()}, got {value!r}")
        allowed = self.allowed()
        if allowed is not None and value not in allowed:
            better = self.hint(value) if self.hint is not None else None
            raise ParameterError(
                f"{where}: {better}"
                if better
                else f"{where} must be {self.constraint()}, got {value!r}"
            )
        if self.check is not None:
            try:
                value = self.check(value)
            except ParameterError:
                raise
            except (ValueError, TypeError) as exc:
                raise ParameterError(f"{where}: {exc}") from None
        return value

    def parse(self, text: str, method: str | None = "method"):
        """A value from command-line text, typed by the declaration (then ``validate`` it)."""
        raw = text.strip()
        where = self.where(method)
        if self.nullable and raw.lower() in ("none", "null"):
            return None
        if self.parse_text is not None:
            try:
                return self.parse_text(raw)
            except ParameterError:
                raise
            except (ValueError, TypeError) as exc:
                raise ParameterError(f"{where}: {exc}") from None
        if self.kind == "bool":
            low = raw.lower()
            if low in ("true", "yes", "1", "on"):
                return True
            if low in ("false", "no", "0", "off"):
                return False
            raise ParameterError(f"{where} must be true or false, got {raw!r}")
        if self.kind == "int":
            try:
                return int(raw)
            except ValueError:
                raise ParameterError(f"{where} must be {self.constraint()}, got {raw!r}") from None
        if self.kind == "float":
            try:
                value = float(raw)
            except ValueError:
                raise ParameterError(f"{where} must be {self.constraint()}, got {raw!r}") from None
            if self.infinite_is_none and value >= BEYOND_ANY_RUN:
                return None
            if not math.isfinite(value):
                raise ParameterError(f"{where} must be a finite number, got {raw!r}")
            return value
        if self.kind in ("str", "method"):
            return raw
        if self.kind == "names":
            return [c.strip() for c in raw.split(",") if c.strip()]
        try:  # structured values: a Python literal (list, dict, number), else the text itself
            return ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            return raw


def validate(method: str, declared: dict[str, Param], given: dict) -> dict:
    """Every declared parameter's value for one call: given ones validated, the rest defaults.

    Unknown names are a ParameterError listing the method's parameters.
    """
    unknown = sorted(set(given) - set(declared))
    if unknown:
        known = ", ".join(declared) or "none"
        raise ParameterError(
            f"method {method!r} has no parameter {', '.join(unknown)} (its parameters: {known})"
        )
    out = {}
    for name, p in declared.items():
        out[name] = p.validate(given[name], method) if name in given else p.default
    return out


def column_names(value, where: str) -> list | None:
    """Column names as the "names" kind takes them (errors name ``where``)."""
    return _names(value, where)


def _names(value, where: str) -> list | None:
    """Column names: one name (a comma-separated string is several), a list or tuple of names
    (strings or positions), each at most once; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        names = [c.strip() for c in value.split(",") if c.strip()]
    elif isinstance(value, (int, numbers.Integral)) and not isinstance(value, bool):
        names = [value]
    elif isinstance(value, (list, tuple)) or type(value).__name__ == "Index":
        names = list(value)
        bad = [
            c for c in names if isinstance(c, bool) or not isinstance(c, (str, numbers.Integral))
        ]
        if bad:
            raise ParameterError(f"{where} must be column names or positions, got {bad[0]!r}")
    else:
        raise ParameterError(
            f"{where} must be a column name, a comma-separated string or a list of names, "
            f"got {value!r}"
        )
    if not names:
        raise ParameterError(f"{where} names no column")
    twice = sorted({str(c) for c in names if names.count(c) > 1})
    if twice:
        raise ParameterError(f"{where} names a column twice: {', '.join(twice)}")
    return names


def invalid_values(p: Param) -> list[tuple[Any, str | None]]:
    """Values the declaration of ``p`` rejects, as (API value, command-line text or None), for the
    generated bad-value tests (scikit-learn's ``generate_invalid_param_val``): a value of another
    type, each side of the range, a value outside the choices, NaN and infinity for numbers,
    None when not nullable."""
    out: list = []
    if not p.nullable:
        out.append((None, None))
    if p.kind in ("int", "float"):
        out.append(("abc", "abc"))
        out.append((True, None))
        if p.kind == "int":
            out.append((2.5, "2.5"))
        else:
            out += [(math.nan, "nan")] + ([] if p.infinite_is_none else [(math.inf, "inf")])
            out.append((-math.inf, "-inf"))
        step = 1 if p.kind == "int" else 1e-9
        if p.low is not None:
            low = p.low if p.low_open else p.low - step
            out.append(
                (
                    int(low) if p.kind == "int" else float(low),
                    repr(int(low) if p.kind == "int" else low),
                )
            )
        if p.high is not None:
            high = p.high if p.high_open else p.high + step
            out.append(
                (
                    int(high) if p.kind == "int" else float(high),
                    repr(int(high) if p.kind == "int" else high),
                )
            )
    elif p.kind == "bool":
        out.append(("yes", None))
    elif p.kind in ("str", "method"):
        out.append((5, None))
        if p.kind == "method" or p.allowed() is not None:
            out.append(("no-such-choice", "no-such-choice"))
    elif p.kind == "names":
        out += [(5.5, None), (["a", "a"], "a,a")]
    else:  # structured: an arbitrary object fits no declaration
        out.append((object(), None))
    return out
