"""``Run``: a validated run, one typed field per run option of the table (``generated.RunFields``),
and the options ``register`` added at run time. It reads the table at call time, so an option
registered later (a plug-in, a test) is among its ``options``."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from . import run_options
from .generated import RunFields

__all__ = ["Run"]

#: the run options with a field of their own in ``Run`` (generated from the table)
_FIELDS = frozenset(f.name for f in fields(RunFields)) - {"info", "params", "given", "added"}


@dataclass(frozen=True)
class Run(RunFields):
    """A validated run: the method's registry entry and its parameters (validated, defaults
    filled; ``given``: as the caller gave them), then every run option, one typed field each
    (defaults filled), so that a misspelt option is an error for a type checker. The fields are
    generated from RUN_OPTIONS (``generated.RunFields``); an option ``register`` added at run time
    is in ``added`` (and ``options``)."""

    @classmethod
    def of(cls, info, params: dict, given: dict, values: dict[str, Any]) -> Run:
        """The run of these validated option values (each option by name)."""
        own, added = _own_and_added(values)
        return cls(info, params, given, **own, added=added)

    @property
    def options(self) -> dict[str, Any]:
        """Every run option by name, in RUN_OPTIONS's order."""
        return {
            p.name: getattr(self, p.name)
            if p.name in _FIELDS
            else self.added.get(p.name, p.default)
            for p in run_options.RUN_OPTIONS
        }

    def with_options(self, **changes) -> Run:
        """This run with some options changed (not validated again)."""
        unknown = [name for name in changes if name not in run_options.DECLARED]
        if unknown:
            raise TypeError(f"unknown run option(s): {', '.join(unknown)}")
        own, added = _own_and_added(changes)
        return replace(self, **own, added={**self.added, **added})


def _own_and_added(values: dict[str, Any]) -> tuple[dict, dict]:
    """(the options with a field of their own in Run, the ones ``register`` added)."""
    own = {name: value for name, value in values.items() if name in _FIELDS}
    return own, {name: value for name, value in values.items() if name not in _FIELDS}
