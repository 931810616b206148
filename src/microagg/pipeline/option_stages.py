"""The run options' own stages at the "grouped" point (``declarations.STAGE_POINTS``): after
the method, before the group representatives. The privacy models act here (``microagg.privacy``:
t-closeness replaces the partition by a t-close one, differential privacy fixes the published
values); what each states is kept in the method's facts (``privacy_models``)."""

from __future__ import annotations

import dataclasses

from ..options import Run
from .parts import Grouped, Grouping, Prepared, Roles, Source


def grouped_stages(
    source: Source, roles: Roles, prepared: Prepared, grouped: Grouped, run: Run
) -> Grouped:
    """Each run option with a stage at "grouped", in the table's order, where the run gives
    it a value other than its default; the partition unchanged when none does."""
    from ..options import RUN_OPTIONS

    given = run.options
    staged = [
        p
        for p in RUN_OPTIONS
        if p.stage is not None and p.acts_on == "grouped" and _given(given[p.name], p.default)
    ]
    if not staged:
        return grouped
    grouping = Grouping(
        source.frame,
        roles,
        prepared.Z,
        grouped.labels,
        given,
        run.info.per_variable,
        matrix=prepared.matrix,
    )
    for p in staged:
        grouping = p.stage(grouping, given[p.name])
    facts = {**grouped.method_facts, "privacy_models": [dict(m) for m in grouping.models]}
    return dataclasses.replace(
        grouped, labels=grouping.labels, method_facts=facts, values=grouping.values
    )


def _given(value, default) -> bool:
    return not (value is default or (isinstance(value, (int, float, str)) and value == default))
