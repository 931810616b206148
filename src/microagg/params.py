"""Declared parameters: each method declares its parameters once, at registration.

A ``Param`` says a parameter's type, range or choices, default and meaning. One validator
(``validate``) checks a call's parameters against the declarations before any data work and
raises ``ParameterError`` (an ``InputError``) with one line naming the method, the parameter,
what it must be and what it got. The CLI reads ``--param NAME=VALUE`` text with ``Param.parse``,
so a value is typed by its declaration, not guessed. (The habit is scikit-learn's
``_parameter_constraints``; see shared/EXAMPLES.md.)
"""

from __future__ import annotations

import ast
import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

from .errors import ParameterError

__all__ = ["Param", "validate", "ParameterError"]

_KINDS = ("int", "float", "bool", "str", "method", "object")


@dataclass(frozen=True)
class Param:
    """One declared parameter.

    kind: "int", "float", "bool", "str", "method" (a registered method name) or "object"
    (structured values: ``check`` validates and normalises them). low / high bound numbers
    (inclusive unless low_open / high_open); choices lists the allowed values; nullable allows None.
    check(value) may normalise a value and raises ParameterError (or ValueError / TypeError,
    whose message is used) for a bad one; it runs after the kind and range checks.
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

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"parameter {self.name}: unknown kind {self.kind!r}")

    # ---------------------------------------------------------------- description
    def constraint(self) -> str:
        """What a value must be, in words ("a number > 0", "one of 'a', 'b'", ...)."""
        if self.choices is not None:
            text = "one of " + ", ".join(map(repr, self.choices))
        elif self.kind in ("int", "float"):
            text = "an integer" if self.kind == "int" else "a number"
            lo = None if self.low is None else (">" if self.low_open else ">=") + f" {self.low:g}"
            hi = None if self.high is None else ("<" if self.high_open else "<=") + f" {self.high:g}"
            text += " " + " and ".join(b for b in (lo, hi) if b) if (lo or hi) else ""
        else:
            text = {"bool": "true or false", "str": "a string", "method": "a registered method name",
                    "object": "see its description"}[self.kind]
        return text + (" or None" if self.nullable else "")

    def describe(self) -> str:
        """One line for ``microagg methods -v``: name, constraint, default, meaning."""
        return f"{self.name} ({self.constraint()}; default {self.default!r}): {self.doc}"

    # ---------------------------------------------------------------- checking
    def validate(self, value, method: str = "method"):
        """The value, normalised (int for "int", float for "float"); ParameterError otherwise."""
        where = f"{method} parameter {self.name}"
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
                if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) \
                        and float(value).is_integer():
                    value = int(value)
                else:
                    raise ParameterError(f"{where} must be {self.constraint()}, got {value!r}")
            value = int(value)
        elif kind == "float":
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ParameterError(f"{where} must be {self.constraint()}, got {value!r}")
            value = float(value)
            if not math.isfinite(value):
                raise ParameterError(f"{where} must be a finite number, got {value!r}")
        elif kind in ("str", "method"):
            if not isinstance(value, str):
                raise ParameterError(f"{where} must be {self.constraint()}, got {value!r}")
            if kind == "method":
                from . import methods

                if value not in methods.names():
                    raise ParameterError(f"{where} must be a registered method ({', '.join(methods.names())}), "
                                         f"got {value!r}")
        if kind in ("int", "float"):
            bad_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
            bad_high = self.high is not None and (value >= self.high if self.high_open else value > self.high)
            if bad_low or bad_high:
                raise ParameterError(f"{where} must be {self.constraint()}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ParameterError(f"{where} must be {self.constraint()}, got {value!r}")
        if self.check is not None:
            try:
                value = self.check(value)
            except ParameterError:
                raise
            except (ValueError, TypeError) as exc:
                raise ParameterError(f"{where}: {exc}") from None
        return value

    def parse(self, text: str, method: str = "method"):
        """A value from command-line text, typed by the declaration (then ``validate`` it)."""
        raw = text.strip()
        where = f"{method} parameter {self.name}"
        if self.nullable and raw.lower() in ("none", "null"):
            return None
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
            if not math.isfinite(value):
                raise ParameterError(f"{where} must be a finite number, got {raw!r}")
            return value
        if self.kind in ("str", "method"):
            return raw
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
        raise ParameterError(f"method {method!r} has no parameter {', '.join(unknown)} (its parameters: {known})")
    out = {}
    for name, p in declared.items():
        out[name] = p.validate(given[name], method) if name in given else p.default
    return out
