"""auto: run a portfolio of registered methods within a time budget and keep the best partition.

The data-oriented paper (Domingo-Ferrer & Mateo-Sanz 2002, §6) finds that no single
microaggregation method is best on every data set and recommends trying several and keeping
the one with the lowest information loss; ``auto`` does that within a time budget.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..clock import Deadline
from ..errors import InputError, ParameterError
from ..params import Param
from ..partition import InvalidPartitionError, check_partition, sse, sst
from ..progress import part
from . import MethodOutput, get, names, register, run

#: MDAV first, then the local search from MDAV's partition with most of the budget (so auto
#: does what icsm alone does, with nearly its time), then the cheap constructive heuristics;
#: whatever time is left then goes to icsm again, from the best of them when one beat it. Only
#: the registered ones are used.
DEFAULT_PORTFOLIO = ("mdav", "icsm", "vmdav", "mdav-mhm", "tsp-mhm", "kward", "md")
#: md's exact farthest-pair search grows about cubically (0.5 s at n = 1080, 23 s at n = 4092 on
#: our machine) and cannot be stopped: it is left out of the default portfolio above this size.
MD_MAX_N = 2000
#: Column generation closes the portfolio on small data, where it usually proves a lower bound
#: on the optimal SSE within seconds (so the report can state how far from optimal we are).
COLGEN_MAX_N = 300
#: icsm compares every pair of groups (O(n²) per pass); from this many records on the default
#: portfolio uses lsearch, the same exact moves between neighbouring groups only (O(n·K) per sweep)
LSEARCH_MIN_N = 20_000
#: For one quasi-identifier the optimal univariate partition (Hansen & Mukherjee) is exact.
DEFAULT_UNIVARIATE = ("univariate-optimal",)
#: Budget (seconds) when the caller gives no time limit.
DEFAULT_BUDGET = 60.0
#: Weights of the members in the time rule (``Deadline.share``): the local search, which improves
#: the best partition so far for as long as it runs, gets most of the budget; tours and column
#: generation (anytime too) get more than the constructive heuristics, which take milliseconds to
#: seconds whatever they are given. Unlisted members weigh 1.
MEMBER_WEIGHTS = {"icsm": 50.0, "lsearch": 50.0, "colgen": 10.0, "tsp-mhm": 1.0}


def _default_portfolio(n: int, d: int) -> list[str]:
    if d == 1:
        wanted = DEFAULT_UNIVARIATE
    else:
        wanted = tuple(m for m in DEFAULT_PORTFOLIO if m != "md" or n <= MD_MAX_N)
        if n >= LSEARCH_MIN_N:
            wanted = tuple("lsearch" if m == "icsm" else m for m in wanted)
        wanted += ("colgen",) if n <= COLGEN_MAX_N else ()
    known = set(names())
    return [m for m in wanted if m in known]


def _check_portfolio(portfolio):
    """A list of distinct registered method names (or a comma-separated string), none of them auto or
    per-variable; checked before any data work."""
    if isinstance(portfolio, str):
        portfolio = [p.strip() for p in portfolio.split(",") if p.strip()]
    if not isinstance(portfolio, (list, tuple)) or any(not isinstance(m, str) for m in portfolio):
        raise ValueError(f"must be a list of method names, got {portfolio!r}")
    members = list(portfolio)
    if not members:
        raise ValueError("is empty: name at least one method")
    if len(set(members)) != len(members):
        raise ValueError(f"names a method twice: {members!r}")
    for m in members:
        info = get(m)  # unknown name: ParameterError listing the known ones
        if m == "auto":
            raise ValueError("cannot contain auto itself")
        if info.per_variable:
            raise ValueError(f"cannot contain {m!r}: it groups each variable on its own (not k-anonymous), "
                             "so its IL is not comparable")
    return members


def _check_together(values: dict) -> dict:
    """member_params: {method: {parameter: value}}, each validated against that method's declarations."""
    mp = values["member_params"]
    if mp is None:
        return values
    if not isinstance(mp, dict) or any(not isinstance(v, dict) for v in mp.values()):
        raise ValueError("member_params must be a mapping {method: {parameter: value}}")
    if values["portfolio"] is not None:
        stray = sorted(set(mp) - set(values["portfolio"]))
        if stray:
            raise ValueError(f"member_params names method(s) not in the portfolio: {', '.join(stray)}")
    values["member_params"] = {m: get(m).validate(p) for m, p in mp.items()}
    return values


@register(
    "auto",
    family="portfolio",
    paper="Domingo-Ferrer & Mateo-Sanz 2002 (data-oriented paper), §6: try several methods, keep the best",
    complexity="the sum of its members' costs, bounded by the time budget; O(n·d) memory beyond the members'",
    variable_size=True,
    params=(
        Param("portfolio", "object", None, "member methods in run order, a list or comma-separated names "
              "(None: mdav, icsm, vmdav, mdav-mhm, tsp-mhm, kward, md (n <= 2000), colgen (n <= 300); "
              "univariate-optimal for one column)", nullable=True, check=_check_portfolio),
        Param("member_params", "object", None, "parameters per member, {method: {parameter: value}}", nullable=True),
    ),
    check_together=_check_together,
)
def auto(X, k, *, seed, deadline, progress, portfolio, member_params):
    """Portfolio: run several registered methods within the time budget and keep the lowest-SSE partition.

    ``portfolio``: method names run in the given order; the default is mdav, icsm, vmdav,
    mdav-mhm, tsp-mhm, kward, md (only when n <= 2000: it cannot be stopped and grows fast), plus
    colgen when n <= 300 (for its lower bound), of those that are registered; from 20,000
    records on, lsearch (the same moves between neighbouring groups, O(n·K) per sweep) replaces
    icsm (O(n²) per pass);
    univariate-optimal (exact) when there is one quasi-identifier. The default order runs icsm
    second, from MDAV's partition, with most of the budget; with the time left after the other
    members it continues from their partitions, best first (its row then reports the best of
    its searches). ``member_params``:
    {method: {param: value}} passed to the members. The deadline is the total budget (60 s when
    the caller gives none): each member gets its weight's share of what is left,
    ``deadline.share(w_i, w_i + ... + w_m)`` with the weights of MEMBER_WEIGHTS (icsm most), so
    time a fast member leaves unused flows to the later ones (anytime members such as icsm and
    colgen stop at their share and return their best partition; icsm searches from MDAV's
    partition, as it does alone, and from the best member so far, unless ``member_params`` gives
    it an ``init``; the others run to completion); once the budget is spent the remaining members are
    skipped, but the first member always runs so there is always a valid partition. Each member's
    labels are checked (check_partition) and the valid partition with the lowest SSE is returned,
    so auto is never worse than its best member; the largest proven lower bound of any member is
    kept. ``extras["portfolio"]`` lists {method, il, sse, seconds, status} for every member and
    ``extras["winner"]`` names the winner.
    """
    n, d = X.shape
    members = _default_portfolio(n, d) if portfolio is None else portfolio
    for m in members:
        if not get(m).multivariate and d != 1:
            raise ParameterError(f"auto portfolio cannot contain the univariate method {m!r}: "
                                 f"the data have {d} quasi-identifier columns")
    member_params = member_params or {}
    if not deadline.bounded:
        deadline = Deadline(DEFAULT_BUDGET)
    budget = deadline.remaining()
    total_ss = sst(X)
    best_labels, best_sse, winner, best_bound, bound_from = None, np.inf, None, None, None
    rows = []
    weights = [MEMBER_WEIGHTS.get(m, 1.0) for m in members]
    by_method = {}
    polish = False  # icsm ran from auto's own starts: it may continue from a later winner
    for i, name in enumerate(members):
        if best_labels is not None and deadline.expired():
            rows.append({"method": name, "status": "skipped (budget spent)"})
            continue
        share = deadline.share(weights[i], sum(weights[i:]))
        report = part(progress, i / len(members), (i + 1) / len(members), prefix="auto: ")
        report(name, 0.0, f"best so far: {winner or '-'}")
        try:
            params = dict(member_params.get(name, {}))
            if name == "icsm" and "init" not in params and winner is not None:
                # from MDAV's partition, as icsm alone starts, then from the best so far: auto is
                # then never worse than icsm alone when both searches end within the budget
                starts = [by_method["mdav"]] if "mdav" in by_method and winner != "mdav" else []
                params["init"] = starts + [best_labels]
                polish = True
            out = run(name, X, k, seed=seed, deadline=share, progress=report, **params)
            labels = check_partition(out.labels, n, k, name)
        except InputError:  # the user's error (a bad member parameter, ...): report it
            raise
        except Exception as exc:  # a member's bug must not sink the portfolio: skip it, loudly
            status = f"failed: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
            warnings.warn(f"auto: member {name} {status}", RuntimeWarning, stacklevel=2)
            rows.append({"method": name, "status": status, "seconds": share.elapsed()})
            continue
        value = sse(X, labels)
        row = {"method": name, "sse": value, "il": 0.0 if total_ss == 0 else 100.0 * value / total_ss,
               "seconds": share.elapsed(), "status": "ok"}
        if out.lower_bound is not None:
            row["lower_bound"] = float(out.lower_bound)
            row["lower_bound_il"] = 0.0 if total_ss == 0 else 100.0 * float(out.lower_bound) / total_ss
            if best_bound is None or out.lower_bound > best_bound:
                best_bound, bound_from = float(out.lower_bound), name
        rows.append(row)
        by_method[name] = labels
        if value < best_sse:
            best_labels, best_sse, winner = labels, value, name
    if best_labels is None:
        raise InvalidPartitionError("auto: no member of the portfolio returned a valid partition")
    # with the time left, icsm continues from the other members' partitions, best first (a
    # search from a different start often ends in a better local optimum); reported in icsm's
    # row, whose figures become the best of its searches
    others = sorted((r for r in rows if r.get("status") == "ok" and r["method"] not in ("icsm", "mdav")),
                    key=lambda r: r["sse"])
    if polish and others and not deadline.expired():
        row = next(r for r in rows if r["method"] == "icsm")
        t = deadline.share(1, 1)
        progress("auto: icsm", None, f"continuing from {', '.join(r['method'] for r in others)}")
        starts = [by_method[r["method"]] for r in others]
        out = run("icsm", X, k, seed=seed, deadline=t, **dict(member_params.get("icsm", {}), init=starts))
        labels = check_partition(out.labels, n, k, "icsm")
        value = sse(X, labels)
        row["seconds"] += t.elapsed()
        row["continued_from"] = [r["method"] for r in others]
        if value < best_sse:
            best_labels, best_sse, winner = labels, value, "icsm"
        if value < row["sse"]:
            row.update(sse=value, il=0.0 if total_ss == 0 else 100.0 * value / total_ss)
    extras = {"winner": winner, "portfolio": rows, "budget_seconds": budget}
    if bound_from is not None:
        extras["lower_bound_from"] = bound_from
    return MethodOutput(best_labels, lower_bound=best_bound, extras=extras)
