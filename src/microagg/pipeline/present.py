"""The stage after ``partition`` when continuous QIs have missing values: the groups merged so
that every published mean is over at least k present values (``missing_values``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from .parts import Partitioned, Prepared, Roles


def cover_missing(prepared: Prepared, partitioned: Partitioned, roles: Roles) -> Partitioned:
    """``partitioned`` itself when no QI value is missing. Otherwise its groups merged (within
    strata) until each holds, per QI, no present value or at least k
    (``missing_values.present_groups``), and without a lower bound: the method proved it on the
    grouping matrix, whose placed values are not the measured ones."""
    from ..missing_values import present_groups

    present = ~np.isnan(prepared.Z)
    if present.all():
        return partitioned
    units = None if partitioned.stratum_codes is None else partitioned.stratum_codes.codes
    labels = present_groups(partitioned.labels, present, prepared.matrix, roles.k, units)
    facts = dict(partitioned.method_facts)
    return dataclasses.replace(partitioned, labels=labels, lower_bound=None, method_facts=facts)
