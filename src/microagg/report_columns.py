"""Which quasi-identifier columns the HTML report (and the app's figures) look at: at most
REPORT_COLUMNS, the first ones, the run's own figures staying the whole run's."""

from __future__ import annotations

__all__ = ["REPORT_COLUMNS", "measured_view"]

#: The report's measures and figures look at most this many quasi-identifier columns: their cost
#: grows with the square of the columns (correlation matrices, principal axes, heat maps), and a
#: 5,000-column run spent minutes there.
REPORT_COLUMNS = 40


def measured_view(res):
    """(the result the report's measures and figures look at, a note saying so or None): the run
    itself on at most REPORT_COLUMNS quasi-identifier columns, the first ones (IL, SSE, the bound
    and the group sizes stay the whole run's)."""
    import dataclasses

    if len(res.columns) <= REPORT_COLUMNS:
        return res, None
    chosen = list(res.columns)[:REPORT_COLUMNS]
    names = {str(c) for c in chosen}
    publication = dataclasses.replace(
        res.publication, kinds={c: k for c, k in res.publication.kinds.items() if c in names}
    )
    audit = dataclasses.replace(
        res.audit, categories={c: m for c, m in res.audit.categories.items() if str(c) in names}
    )
    changes = {
        "columns": chosen,
        "scaler": None,
        "standardized": None,
        "publication": publication,
        "audit": audit,
    }
    if res.per_variable:  # one labelling (and group sizes) per column
        changes["labels"] = res.labels[:, :REPORT_COLUMNS]
        changes["group_sizes"] = list(res.group_sizes)[:REPORT_COLUMNS]
    note = (
        f"measures and figures on the first {REPORT_COLUMNS} of the {len(res.columns):,} "
        "quasi-identifier columns (their cost grows with the square of the columns); "
        "IL is the whole run's"
    )
    return dataclasses.replace(res, **changes), note
