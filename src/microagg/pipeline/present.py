"""The stage after ``group`` when continuous QIs have missing values: groups taken apart or
merged so that every published mean is over at least k present values (``missing_values``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..onehot import numeric_part
from .parts import Grouped, Prepared, Roles


def cover_missing(prepared: Prepared, grouped: Grouped, roles: Roles) -> Grouped:
    """``grouped`` itself when no QI value is missing. Otherwise its groups taken apart or
    merged (within strata) until each holds, per QI, no present value or at least k
    (``missing_values.present_groups``), and without a lower bound: the method proved it on the
    grouping matrix, whose placed values are not the measured ones."""
    from ..missing_values import present_groups

    Z = numeric_part(prepared.Z)  # codes kept for many levels are never missing (issue 57)
    present = ~np.isnan(Z)
    if present.all():
        return grouped
    labels = present_groups(grouped.labels, Z, roles.k, _units(grouped))
    facts = dict(grouped.method_facts)
    return dataclasses.replace(grouped, labels=labels, lower_bound=None, method_facts=facts)


def _units(grouped: Grouped):
    """The parts no record may leave: the strata, the key classes (keys+qis: the groups agree on
    the keys) and the household groups (their household-level values are published over them),
    as one code per record; None: the whole file."""
    parts = [
        p.codes if hasattr(p, "codes") else p.groups
        for p in (grouped.stratum_codes, grouped.key_classes, grouped.households)
        if p is not None
    ]
    if not parts:
        return None
    return np.unique(np.stack(parts, axis=1), axis=0, return_inverse=True)[1].reshape(-1)


def note_missing(audit, prepared: Prepared, grouped: Grouped, roles: Roles):
    """The run's audit with, when QI values are missing, their count and the published values that
    are means over fewer than k present values (``missing_values.thin_cells``: 0 unless a
    variable has fewer than k present values in a stratum) in its context, and a warning when
    there are such values. The audit itself when nothing is missing."""
    from ..missing_values import thin_cells

    present = ~np.isnan(numeric_part(prepared.Z))
    if present.all():
        return audit
    thin = thin_cells(grouped.labels, present, roles.k)
    warnings = audit.warnings
    if thin:
        warnings = warnings + (
            f"{thin} published values are means over fewer than {roles.k} present values (a "
            "variable with fewer than k present values in a stratum): declare its missing "
            "values, leave it out, or merge the strata",
        )
    return dataclasses.replace(
        audit,
        warnings=warnings,
        context={
            **audit.context,
            "missing_values": int((~present).sum()),
            "means_below_k_present": int(thin),
        },
    )
