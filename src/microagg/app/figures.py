"""The figures the app shows for a run, from the run's audit and the measure registry (no web
framework here: tests/test_app_figures.py).

Nothing is listed by hand: the results, the history table and the compare tab enumerate the
audit's figures with the registry's labels, units and references (``measures.MEASURES``), so a
measure added to the registry appears in the app with no edit of it; the compare tab lists
every run option that differs from its default (``RunSpec.changed_options``) and every method
parameter given. The audit is the report's (``report.report_audit``: the run's own figures and
the file measures of its continuous quasi-identifiers, one computation), computed in the run's
process and sent to the app as plain rows (``run_figures``), rebuilt here with the registry
(``audit_of``).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "run_figures",
    "audit_of",
    "headline",
    "figure_rows",
    "fact_rows",
    "category_rows",
    "history_rows",
    "compare_rows",
    "portfolio_table",
    "option_text",
]

# : the audit group shown first (the run's own figures), then disclosure risk, as the report does;
# the
#: others follow in the audit's order
FIRST_GROUP = "run"
_SHOWN_FIRST = (FIRST_GROUP, "risk")


# ---------------------------------------------------------------------------- in the run's process
def run_figures(res, original, p: float = 10.0) -> dict:
    """The figures of a finished run as plain data (picklable, JSON-safe): every audit figure as
    [group, name, value], the categorical columns' changes, the records, seconds, auto's
    portfolio, and what the run published when it is not the group means."""
    from ..errors import InputError
    from ..report import report_audit

    try:
        audit = report_audit(res, original, p)[0]
    except InputError:  # no continuous quasi-identifier: no file measures, the run's own figures
        audit = res.audit.with_figures(_smallest_published_group(res))
    out: dict = {
        "figures": [[f.group, f.name, _plain(f.value)] for f in audit.figures],
        "categories": {
            str(c): {k: _plain(v) for k, v in m.items()} for c, m in audit.categories.items()
        },
        "records": int(len(res.labels)),
        "seconds": float(res.seconds),
        "per_variable": bool(res.per_variable),
        "notes": [] if res.publication.plain else [res.publication.note],
    }
    out["notes"] += [
        f"stratum {m['stratum']} ({m['size']} records < k) merged into {m['merged_into']}"
        for m in (res.strata.merges if res.strata is not None else ())
    ]
    suppression = getattr(res, "suppression", None)
    if (
        suppression is not None
    ):  # local suppression of the keys: per variable, in the notes the page shows
        from ..summary_lines import suppression_lines

        out["suppression"] = {
            k: _plain(v) if not isinstance(v, (list, dict)) else v
            for k, v in suppression.to_dict().items()
        }
        out["notes"] += suppression_lines(suppression)
    if res.portfolio is not None:
        out["portfolio"] = [{k: _plain(v) for k, v in row.items()} for row in res.portfolio.rows]
        out["winner"] = res.portfolio.winner
    return out


def _smallest_published_group(res):
    """The registry's smallest group of identical published QI values, over every QI column (the
    one file measure that needs no continuous column)."""
    import pandas as pd

    from ..measures import MEASURES, Audit, Comparison, Figure

    data = (
        res.data
        if isinstance(res.data, pd.DataFrame)
        else pd.DataFrame(res.data.reshape(len(res.labels), -1))
    )
    n = len(res.labels)
    measure = MEASURES["smallest_group"]
    value = measure.compute(Comparison([[0.0]] * n, [[0.0]] * n, published=data[list(res.columns)]))
    return Audit((Figure(measure, value, "risk"),))


def _plain(v):
    """A JSON-safe value: numpy scalars as Python numbers, NaN and infinities as None."""
    import numpy as np

    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    return v


# ---------------------------------------------------------------------------- in the app
def audit_of(figures: dict):
    """The run's ``measures.Audit`` again, from its plain figures: each figure with its registered
    measure (a name the registry does not know keeps its name as label)."""
    from ..measures import MEASURES, Audit, Figure, Measure

    rows = []
    for group, name, value in figures.get("figures", ()):
        measure = MEASURES.get(name) or Measure(
            name, name.replace("_", " "), "", "", None, (group,)
        )
        rows.append(Figure(measure, value, group))
    return Audit(tuple(rows), dict(figures.get("categories", {})))


def headline(figures: dict) -> float | None:
    """The run's information loss (percent)."""
    return audit_of(figures).get("information_loss")


def _groups(audit) -> list[str]:
    seen = [group for group in _SHOWN_FIRST if audit.rows(group)]
    for f in audit.figures:
        if f.group not in seen:
            seen.append(f.group)
    return seen


def figure_rows(audit, groups=None) -> dict:
    """group -> [Figure] in the page's order (the run's figures, the risk, the others), each measure
    once: a figure already shown in an earlier group (IL among the utility measures, the smallest
    group among the utility ones) is not repeated."""
    shown, out = set(), {}
    for group in groups or _groups(audit):
        out[group] = [f for f in audit.rows(group) if f.name not in shown]
        shown |= {f.name for f in out[group]}
    return out


def category_rows(audit) -> list[tuple]:
    """(label, text) per categorical quasi-identifier: values changed and the distribution
    distance."""
    return [
        (f"categorical {c}: values changed (%)", f"{100 * m['changed_share']:.2f}")
        for c, m in audit.categories.items()
    ] + [
        (f"categorical {c}: distribution distance (TVD)", f"{m['distribution_tvd']:.4f}")
        for c, m in audit.categories.items()
    ]


def fact_rows(figures: dict) -> list[tuple]:
    """(label, text) of the run's facts that are not measures: records and seconds."""
    return [("records", str(figures["records"])), ("seconds", f"{figures['seconds']:.3f}")]


def option_text(value) -> str:
    """A run option's or parameter's value as the page shows it."""
    if value is None:
        return "none"
    if (
        hasattr(value, "shape") and getattr(value, "ndim", 0) >= 1
    ):  # a partition given (an explore run's)
        return f"a given partition ({len(value):,} records)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return ", ".join(str(k) if v is None else f"{k}={option_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
    return str(value)


def history_rows(runs) -> tuple[list, list]:
    """(header, rows) of the session's runs; ``runs``: (run id, spec, state, error, figures or
    None). Each run's IL and risk figures (the audit's "risk" group, with the registry's labels),
    its seconds and its state."""
    columns: dict = {}  # measure name -> label, in the order first met
    audits = []
    for *_, figures in runs:
        audit = audit_of(figures) if figures else None
        audits.append(audit)
        if audit is not None:
            for f in [
                *[g for g in audit.rows(FIRST_GROUP) if g.name == "information_loss"],
                *audit.rows("risk"),
            ]:
                columns.setdefault(f.name, f.measure.label)
    header = ["run", "data", "method", "k", *columns.values(), "seconds", "status"]
    rows = []
    for (run_id, spec, state, error, figures), audit in zip(runs, audits):
        texts = {}
        if audit is not None:
            texts = {f.name: f.text() for f in [*audit.rows("risk"), *audit.rows(FIRST_GROUP)]}
        seconds = f"{figures['seconds']:.3f}" if figures else None
        status = state if state != "error" else f"error: {error}"
        rows.append(
            [
                run_id,
                spec.input_name,
                spec.method,
                spec.k,
                *[texts.get(name) for name in columns],
                seconds,
                status,
            ]
        )
    return header, rows


def compare_rows(a: tuple, b: tuple) -> list[tuple]:
    """(label, text of run a, text of run b) for two finished runs given as (spec, figures): the
    input, every run option that differs from its default in either run (k, method and the
    quasi-identifiers always), every method parameter given, then every figure of their audits
    and the categorical changes."""
    from ..options import RUN_OPTIONS

    (spec_a, fig_a), (spec_b, fig_b) = a, b
    rows = [("data", spec_a.input_name, spec_b.input_name)]
    changed_a, changed_b = spec_a.changed_options(), spec_b.changed_options()
    for p in RUN_OPTIONS:
        if p.name in ("k", "method", "columns") or p.name in changed_a or p.name in changed_b:
            rows.append(
                (
                    p.name.replace("_", " "),
                    option_text(spec_a.option(p.name)),
                    option_text(spec_b.option(p.name)),
                )
            )
    for name in dict.fromkeys([*spec_a.params, *spec_b.params]):
        rows.append(
            (
                f"parameter {name}",
                option_text(spec_a.params[name]) if name in spec_a.params else "default",
                option_text(spec_b.params[name]) if name in spec_b.params else "default",
            )
        )
    audit_a, audit_b = audit_of(fig_a), audit_of(fig_b)
    both = audit_a.with_figures(audit_b)  # the figures of either run, in order
    by_name_a = {f.name: f for group in figure_rows(audit_a).values() for f in group}
    by_name_b = {f.name: f for group in figure_rows(audit_b).values() for f in group}
    for group in figure_rows(both).values():
        for f in group:
            rows.append(
                (f.measure.label, _text_of(by_name_a.get(f.name)), _text_of(by_name_b.get(f.name)))
            )
    cats_a, cats_b = dict(category_rows(audit_a)), dict(category_rows(audit_b))
    for label in dict.fromkeys([*cats_a, *cats_b]):
        rows.append((label, cats_a.get(label), cats_b.get(label)))
    rows.append(("seconds", f"{fig_a['seconds']:.3f}", f"{fig_b['seconds']:.3f}"))
    return rows


def _text_of(figure) -> str | None:
    return None if figure is None else figure.text()


def portfolio_table(figures: dict) -> tuple[list, list, str | None] | None:
    """(header, rows, caption) of auto's members, the winner marked; None without a portfolio.

    auto compares its members by the SSE of their partitions to the group means on the matrix
    the methods saw. When the run published other values (a median, weighted means, categories)
    or measured IL on other columns (variable weights, a whitening distance), the winner's IL
    there is not the run's: the table then also gives the winner's IL to the published values,
    the headline, and says why the two differ."""
    rows = figures.get("portfolio")
    if not rows:
        return None
    winner = figures.get("winner")
    il = headline(figures)
    won = next((r for r in rows if r.get("method") == winner and r.get("status") == "ok"), None)
    agree = (
        won is not None
        and il is not None
        and won.get("il") is not None
        and math.isclose(won["il"], il, rel_tol=1e-9, abs_tol=1e-12)
    )
    header = ["method", "IL of its partition (%)", "lower bound IL (%)", "seconds", "status"]
    table = []
    for r in rows:
        mark = "* " if r.get("method") == winner else ""
        line = [
            mark + str(r.get("method")),
            _number(r.get("il"), 4),
            _number(r.get("lower_bound_il"), 4),
            _number(r.get("seconds"), 2),
            r.get("status"),
        ]
        if not agree:
            line.insert(2, _number(il, 4) if r.get("method") == winner else None)
        table.append(line)
    caption = None
    if not agree:
        header.insert(2, "IL to the published values (%)")
        caption = (
            "auto compares its members by the information loss of their partitions (to the group"
            " means, on the columns the methods grouped); this run publishes other values or"
            " measures IL on other columns, so the winner's IL to the published values, the run's"
            " IL, is given beside it"
        )
    return header, table, caption


def _number(value: Any, digits: int) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.{digits}f}"
    return str(value)
