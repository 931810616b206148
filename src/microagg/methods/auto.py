"""auto: run a portfolio of registered methods within a time budget and keep the best partition.

The data-oriented paper (Domingo-Ferrer & Mateo-Sanz 2002, §6) finds that no single
microaggregation method is best on every data set and recommends trying several and keeping
the one with the lowest information loss; ``auto`` does that within a time budget.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from . import MethodOutput, get, names, register, run
from ..partition import InvalidPartitionError, check_partition, sse

#: Fast-to-strong order: the cheap constructive heuristics first, the local search (anytime,
#: it gets the budget that is left) last. Only the registered ones are used.
DEFAULT_PORTFOLIO = ("mdav", "vmdav", "mdav-mhm", "tsp-mhm", "kward", "md", "icsm")
#: md's exact farthest-pair search grows about cubically (0.5 s at n = 1080, 23 s at n = 4092 on
#: our machine) and cannot be stopped: it is left out of the default portfolio above this size.
MD_MAX_N = 2000
#: Column generation closes the portfolio on small data, where it usually proves a lower bound
#: on the optimal SSE within seconds (so the report can state how far from optimal we are).
COLGEN_MAX_N = 300
#: For one quasi-identifier the optimal univariate partition (Hansen & Mukherjee) is exact.
DEFAULT_UNIVARIATE = ("univariate-optimal",)
#: Budget (seconds) when ``time_limit`` is None.
DEFAULT_BUDGET = 60.0


def _portfolio(portfolio, n: int, d: int) -> list[str]:
    """The members to run, validated: registered, not auto, not per-variable, univariate only if d == 1."""
    if portfolio is None:
        if d == 1:
            wanted = DEFAULT_UNIVARIATE
        else:
            wanted = tuple(m for m in DEFAULT_PORTFOLIO if m != "md" or n <= MD_MAX_N)
            wanted += ("colgen",) if n <= COLGEN_MAX_N else ()
        known = set(names())
        members = [m for m in wanted if m in known]
        if not members:  # fall back to every suitable registered method
            members = [i.name for i in _suitable(d)]
        return members
    if isinstance(portfolio, str):
        portfolio = [p.strip() for p in portfolio.split(",") if p.strip()]
    try:
        members = list(portfolio)
    except TypeError:
        raise ValueError(f"auto portfolio must be a list of method names, got {portfolio!r}") from None
    if not members:
        raise ValueError("auto portfolio is empty: name at least one method")
    if any(not isinstance(m, str) for m in members):
        raise ValueError(f"auto portfolio must be a list of method names, got {portfolio!r}")
    if len(set(members)) != len(members):
        raise ValueError(f"auto portfolio names a method twice: {members!r}")
    for m in members:
        info = get(m)  # unknown name: ValueError listing the known ones
        if m == "auto":
            raise ValueError("auto portfolio cannot contain auto itself")
        if info.per_variable:
            raise ValueError(f"auto portfolio cannot contain {m!r}: it groups each variable on its own "
                             "(not k-anonymous), so its IL is not comparable")
        if not info.multivariate and d != 1:
            raise ValueError(f"auto portfolio cannot contain the univariate method {m!r}: "
                             f"the data have {d} quasi-identifier columns")
    return members


def _suitable(d):
    from . import all_methods

    return [i for i in all_methods() if i.name != "auto" and not i.per_variable and (i.multivariate or d == 1)]


class _Bar:
    """A rich progress bar on stderr over the portfolio members (no-op when progress is False)."""

    def __init__(self, enabled: bool, total: int):
        self.progress = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("auto: {task.description}"), BarColumn(),
                                     TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                                     console=Console(file=sys.stderr), transient=True)
            self.progress.start()
            self.task = self.progress.add_task("starting", total=total)

    def step(self, description: str, advance: int = 0) -> None:
        if self.progress is not None:
            self.progress.update(self.task, description=description, advance=advance)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


@register(
    "auto",
    family="portfolio",
    paper="Domingo-Ferrer & Mateo-Sanz 2002 (data-oriented paper), §6: try several methods, keep the best",
    complexity="the sum of its members' costs, bounded by the time budget; O(n·d) memory beyond the members'",
    variable_size=True,
)
def auto(X, k, *, seed=None, time_limit=None, progress=False, portfolio=None, member_params=None):
    """Portfolio: run several registered methods within the time budget and keep the lowest-SSE partition.

    ``portfolio``: method names (list or comma-separated string) run in the given order; the
    default is the fast-to-strong set mdav, vmdav, mdav-mhm, tsp-mhm, kward, md (only when
    n <= 2000: it cannot be stopped and grows fast), icsm, plus colgen when n <= 300 (for its
    lower bound), of those that are registered; univariate-optimal (exact) when there is one
    quasi-identifier. ``member_params``:
    {method: {param: value}} passed to the members. ``time_limit`` is the total budget (default
    60 s when None): each member gets an equal share of what is left (anytime members such as
    icsm and colgen stop at their share and return their best partition; icsm starts from the best
    member so far unless ``member_params`` gives it an ``init``; the others run to
    completion); once the budget is spent the remaining members are skipped, but the first
    member always runs so there is always a valid partition. Each member's labels are checked
    (check_partition) and the valid partition with the lowest SSE is returned, so auto is never
    worse than its best member; the largest proven lower bound of any member is kept.
    ``extras["portfolio"]`` lists {method, il, sse, seconds, status} for every member and
    ``extras["winner"]`` names the winner.
    """
    n, d = X.shape
    members = _portfolio(portfolio, n, d)
    if member_params is None:
        member_params = {}
    if not isinstance(member_params, dict) or any(not isinstance(v, dict) for v in member_params.values()):
        raise ValueError("auto member_params must be a mapping {method: {parameter: value}}")
    stray = sorted(set(member_params) - set(members))
    if stray:
        raise ValueError(f"auto member_params names method(s) not in the portfolio: {', '.join(stray)}")
    budget = DEFAULT_BUDGET if time_limit is None else float(time_limit)
    total_ss = float(np.sum((X - X.mean(axis=0)) ** 2))
    t0 = time.perf_counter()
    best_labels, best_sse, winner, best_bound, bound_from = None, np.inf, None, None, None
    rows = []
    bar = _Bar(bool(progress), len(members))
    try:
        for i, name in enumerate(members):
            left = budget - (time.perf_counter() - t0)
            if best_labels is not None and left <= 0:
                rows.append({"method": name, "status": "skipped (budget spent)"})
                bar.step(f"{name} skipped", 1)
                continue
            share = max(left, 0.0) / (len(members) - i)
            bar.step(f"{name} (best {winner or '-'})")
            t = time.perf_counter()
            try:
                params = dict(member_params.get(name, {}))
                if name == "icsm" and "init" not in params and winner is not None:
                    params["init"] = winner  # improve the best partition so far, not MDAV's
                out = run(name, X, k, seed=seed, time_limit=max(share, 1e-3), progress=False, **params)
                labels = check_partition(out.labels, n, k, name)
            except ValueError:  # a bad parameter for a member is the user's error: report it
                raise
            except Exception as exc:  # a member's bug must not sink the portfolio: skip it, loudly
                first_line = (str(exc).splitlines() or [""])[0]
                status = f"failed: {type(exc).__name__}: {first_line}"
                warnings.warn(f"auto: member {name} {status}", RuntimeWarning, stacklevel=2)
                rows.append({"method": name, "status": status, "seconds": time.perf_counter() - t})
                bar.step(f"{name} failed", 1)
                continue
            value = sse(X, labels)
            row = {"method": name, "sse": value, "il": 0.0 if total_ss == 0 else 100.0 * value / total_ss,
                   "seconds": time.perf_counter() - t, "status": "ok"}
            if out.lower_bound is not None:
                row["lower_bound"] = float(out.lower_bound)
                row["lower_bound_il"] = 0.0 if total_ss == 0 else 100.0 * float(out.lower_bound) / total_ss
                if best_bound is None or out.lower_bound > best_bound:
                    best_bound, bound_from = float(out.lower_bound), name
            rows.append(row)
            if value < best_sse:
                best_labels, best_sse, winner = labels, value, name
            bar.step(f"{name} done (best {winner})", 1)
    finally:
        bar.close()
    if best_labels is None:
        raise InvalidPartitionError("auto: no member of the portfolio returned a valid partition")
    extras = {"winner": winner, "portfolio": rows, "budget_seconds": budget}
    if bound_from is not None:
        extras["lower_bound_from"] = bound_from
    return MethodOutput(best_labels, lower_bound=best_bound, extras=extras)
