"""The grid of an exploration, checked before any run: its k values, its methods, the risk
measure of its axis and its max risk, its time budget, and the defaults of each.

The command line (``microagg explore``) and the app's Explore tab check their arguments with
these same functions, so every door gives the same one-line error (ParameterError).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

DEFAULT_KS = (3, 4, 5, 10)
#: the default grid's methods: fast fixed-size and variable-size heuristics and the two local
#: searches
DEFAULT_METHODS = ("mdav", "vmdav", "mdav-mhm", "icsm", "lsearch")
#: the default risk axis: distance-based record linkage, the risk continuous microaggregation moves
DEFAULT_RISK = "record_linkage_dbrl"
DEFAULT_BUDGET = 60.0

#: risk-group figures that are not a risk (a parameter) or where a higher value is safer: not an
#: axis
_NOT_AN_AXIS = (
    "interval_disclosure_p",
    "smallest_group",
    "key_smallest_frequency",
    "key_combinations",
    "ldiversity_smallest_distinct",
    "ldiversity_smallest_entropy",
)


def risk_measures() -> list:
    """The names of the audit's risk measures a map can put on its axis: the registry's "risk"
    group, less the figures where a higher value means less risk (the smallest frequency, l)."""
    from ..measures import measures_of

    return [m.name for m in measures_of("risk") if m.name not in _NOT_AN_AXIS]


def checked_ks(k) -> list[int]:
    """The grid's k values, sorted: an integer, a list of them, or a comma-separated text; each a
    valid run option ``k``, none twice."""
    from ..options import option

    values = [k] if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else k
    if isinstance(values, str):
        values = [v for v in values.split(",") if v.strip()]
    try:
        values = list(values)
    except TypeError:
        raise ParameterError(f"k must be an integer or a list of integers, got {k!r}") from None
    if not values:
        raise ParameterError("k names no value")
    out = []
    for v in values:
        if isinstance(v, str):
            try:
                v = int(v.strip())
            except ValueError:
                raise ParameterError(f"k must be integers, got {v!r}") from None
        out.append(option("k").validate(v, None))
    if len(set(out)) != len(out):
        raise ParameterError(f"k lists a value twice: {out}")
    return sorted(out)


def checked_methods(methods) -> list[str]:
    """The grid's methods: registered names (a list, or a comma-separated text), none twice."""
    from ..options import option

    values = (
        [m.strip() for m in methods.split(",") if m.strip()]
        if isinstance(methods, str)
        else list(methods)
    )
    if not values:
        raise ParameterError("methods names no method")
    for m in values:
        option("method").validate(m, None)  # unknown names, sdcMicro's names: one line
    if len(set(values)) != len(values):
        raise ParameterError(f"methods lists a method twice: {values}")
    return values


def checked_risk(risk, max_risk) -> float | None:
    """``max_risk`` as a float (or None) after checking that ``risk`` is one of ``risk_measures()``
    and ``max_risk`` a number >= 0 in that measure's unit."""
    names = risk_measures()
    if risk not in names:
        raise ParameterError(
            f"risk must be one of the audit's risk measures ({', '.join(names)}), got {risk!r}"
        )
    if max_risk is not None:
        if (
            isinstance(max_risk, bool)
            or not isinstance(max_risk, (int, float, np.integer, np.floating))
            or not math.isfinite(float(max_risk))
            or float(max_risk) < 0
        ):
            raise ParameterError(
                "max_risk must be a number >= 0 in the risk measure's own unit (a share: "
                f"0..1), got {max_risk!r}"
            )
        return float(max_risk)
    return None


def checked_budget(time_limit) -> float:
    """The exploration's time budget: a finite number of seconds > 0 (ParameterError otherwise)."""
    if (
        time_limit is None
        or isinstance(time_limit, bool)
        or not isinstance(time_limit, (int, float))
        or not math.isfinite(time_limit)
        or time_limit <= 0
    ):
        raise ParameterError(
            "time_limit (the exploration's budget) must be a number of seconds > 0, got "
            f"{time_limit!r}"
        )
    return float(time_limit)


@dataclass(frozen=True)
class Grid:
    """An exploration's arguments, checked: the k values (sorted), the methods, the risk axis and
    max risk, the budget in seconds, each method's parameters, the run options every run shares,
    and each method's validated run at the smallest k (``options.Run``)."""

    ks: list
    methods: list
    risk: str
    max_risk: float | None
    budget: float
    method_params: dict
    options: dict
    validated: dict

    @property
    def first_run(self):
        """The validated run of the first method at the smallest k: the run whose roles and
        checks on the data stand for the grid's."""
        return self.validated[self.methods[0]].with_options(k=self.ks[0])


def checked_grid(k, methods, time_limit, risk, max_risk, method_params, options: dict) -> Grid:
    """Every argument of ``explore`` checked before any data is read (ParameterError / InputError
    in one line): k, methods, risk, budget, the methods' parameters and each method's run."""
    from ..options import validate_run

    ks, names = checked_ks(k), checked_methods(methods)
    risk_limit = checked_risk(risk, max_risk)
    budget = checked_budget(time_limit)
    params = {m: dict(p) for m, p in (method_params or {}).items()}
    unknown = [m for m in params if m not in names]
    if unknown:
        raise ParameterError(f"method_params names method(s) not in the grid: {', '.join(unknown)}")
    validated = {
        m: validate_run({**options, "k": ks[0], "method": m}, params.get(m, {})) for m in names
    }
    return Grid(ks, names, risk, risk_limit, budget, params, dict(options), validated)
