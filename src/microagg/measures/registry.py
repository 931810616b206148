"""The registry of measures and the audit they fill: the one home of a measure's facts.

A measure is one function registered with ``@measure`` (its name, the JSON key; its label, unit,
reference, groups and how it is shown). The command line, the report, the run manifest and the
app enumerate ``MEASURES``, so a new measure is one decorated function in the module of its
inputs (``comparison``, ``run_figures``, ``file_risk``) and its test. ``Audit`` holds the
figures of one run and of its published file. This module imports none of the measures: they
import it and register themselves when the package ``microagg.measures`` loads them, in its
order (the order the figures are listed in).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Measure",
    "MEASURES",
    "measure",
    "measures_of",
    "Figure",
    "Audit",
    "audit",
    "in_registry_order",
]


@dataclass(frozen=True)
class Measure:
    """One figure of an audit: its name (the JSON key), label, unit, reference and how it is
    computed. ``groups``: "run" (a run's own figures: the pipeline's measure stage), "utility" and
    "risk" (original against protected file). ``scale``: the factor a value is shown with (a share
    shown in percent: 100); ``digits``: decimals shown."""

    name: str
    label: str
    unit: str
    reference: str
    compute: Callable
    groups: tuple
    digits: int = 4
    scale: float = 1.0
    aligned: bool = (
        False  # compares each record's original and published values: needs the same row order
    )


MEASURES: dict[str, Measure] = {}


def measure(
    name: str,
    label: str,
    unit: str,
    reference: str,
    groups,
    digits: int = 4,
    scale: float = 1.0,
    aligned: bool = False,
):
    """Register a measure (decorator of ``compute(inputs) -> value``; None: not defined for these
    inputs, left out of the audit): the command line, the report and the app enumerate
    ``MEASURES``, so a new measure is one function (and its test). ``aligned``: the measure pairs
    each original record with its published one, so it needs both files in the same row order
    (``evaluate`` of a shuffled output reads it from the run's manifest)."""
    groups = (groups,) if isinstance(groups, str) else tuple(groups)

    def deco(compute):
        if name in MEASURES and MEASURES[name].compute is not compute:
            raise ValueError(f"measure {name!r} registered twice")
        MEASURES[name] = Measure(
            name, label, unit, reference, compute, groups, digits, scale, aligned
        )
        return compute

    return deco


def measures_of(group: str) -> list[Measure]:
    """The registered measures of a group, in registration order."""
    return [m for m in MEASURES.values() if group in m.groups]


def _plain_value(v):
    """A figure's value as JSON holds it: int, float (finite) or None."""
    import math

    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    v = float(v)
    return v if math.isfinite(v) else None


@dataclass(frozen=True)
class Figure:
    """One measured value of a group of an audit, with its measure's description."""

    measure: Measure
    value: Any
    group: str

    @property
    def name(self) -> str:
        return self.measure.name

    def text(self) -> str:
        """The value as shown: scaled, with its decimals ("—" when unknown)."""
        v = self.value
        if v is None:
            return "—"
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return str(int(v))
        if isinstance(v, (float, np.floating)):
            return f"{float(v) * self.measure.scale:.{self.measure.digits}f}"
        return str(v)


@dataclass(frozen=True)
class Audit:
    """The figures of one run and of its published file, by group ("run", "utility", "risk"): the
    one object the command line's summary and --json, ``evaluate``, the report, the run manifest
    and the app read their figures from. ``warnings``: what a statistician must know about the
    published file (not k-anonymous on a key variable, an informative row order, records at
    high risk, ...); ``context``: what the figures were computed on (the key variables, how the
    file was read back, whether rows were aligned)."""

    figures: tuple = ()
    categories: dict = field(
        default_factory=dict
    )  # categorical QI column -> {changed_share, distribution_tvd}
    warnings: tuple = ()
    context: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        """One line (the dataclass's repr printed every measure with its function)."""
        from ..display import audit_repr

        return audit_repr(self)

    def _repr_html_(self) -> str:
        """A notebook's display: every figure by group, labelled, and the warnings."""
        from ..display import audit_html

        return audit_html(self)

    def __getitem__(self, name):
        """The value of the figure ``name`` (a run's figure first)."""
        for f in sorted(self.figures, key=lambda f: f.group != "run"):
            if f.name == name:
                return f.value
        raise KeyError(name)

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def rows(self, group: str) -> list[Figure]:
        return [f for f in self.figures if f.group == group]

    def group(self, group: str) -> dict:
        """name -> value of a group's figures (the JSON object of that group)."""
        return {f.name: f.value for f in self.rows(group)}

    def with_figures(self, other: Audit) -> Audit:
        """This audit and another's figures (e.g. a run's and its files' comparison); the other's
        replace this one's of the same group and name."""
        keys = {(f.group, f.name) for f in other.figures}
        return Audit(
            tuple(f for f in self.figures if (f.group, f.name) not in keys) + other.figures,
            {**self.categories, **other.categories},
            tuple(dict.fromkeys(self.warnings + other.warnings)),
            {**self.context, **other.context},
        )

    def without(self, group: str, *names) -> Audit:
        return Audit(
            tuple(f for f in self.figures if not (f.group == group and f.name in names)),
            self.categories,
            self.warnings,
            self.context,
        )

    def to_dict(self) -> dict:
        """JSON-ready: {group: {name: value}} per group, the categorical QIs' figures, the warnings
        and the context (non-finite numbers as None). ``from_dict`` reads it back."""
        groups: dict = {}
        for f in self.figures:
            groups.setdefault(f.group, {})[f.name] = _plain_value(f.value)
        return {
            "groups": groups,
            "categories": {
                str(c): {k: _plain_value(v) for k, v in m.items()}
                for c, m in self.categories.items()
            },
            "warnings": list(self.warnings),
            "context": dict(self.context),
        }

    @classmethod
    def from_dict(cls, doc: dict) -> Audit:
        """The audit ``to_dict`` wrote (a run manifest's); a figure whose measure this version does
        not register keeps its name as its label."""
        figures = []
        for group, values in (doc.get("groups") or {}).items():
            for name, value in values.items():
                m = MEASURES.get(name) or Measure(name, name, "", "", None, (group,))
                figures.append(Figure(m, value, group))
        return cls(
            tuple(figures),
            dict(doc.get("categories") or {}),
            tuple(doc.get("warnings") or ()),
            dict(doc.get("context") or {}),
        )


def audit(inputs, group: str, paired_only: bool = False) -> Audit:
    """Every registered measure of ``group`` on ``inputs`` (a ``Comparison`` or
    ``file_audit.FileAudit`` for "utility" and "risk", the pipeline's measure-stage inputs for
    "run"). Measures that pair records (``aligned``) are left out when the inputs' rows are not
    aligned; ``paired_only``: only those (a shuffled file's other figures come from the file as it
    is: ``file_audit.combine``)."""
    aligned = getattr(inputs, "aligned", True)
    figures = [
        Figure(m, m.compute(inputs), group)
        for m in measures_of(group)
        if (aligned or not m.aligned) and (m.aligned or not paired_only)
    ]
    return Audit(tuple(f for f in figures if f.value is not None or f.measure.name in _ALWAYS))


#: run figures listed even when unknown (None): the contract's lower bound and gap
_ALWAYS = ("lower_bound", "lower_bound_il", "gap")


def in_registry_order(figures) -> tuple:
    """Figures sorted by group (run, utility, risk) and their measures' registration order."""
    order = {
        (m.name, g): i
        for i, (m, g) in enumerate(
            (m, g) for g in ("run", "utility", "risk") for m in measures_of(g)
        )
    }
    return tuple(sorted(figures, key=lambda f: order.get((f.name, f.group), len(order))))
