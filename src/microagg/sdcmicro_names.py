"""sdcMicro's names for its microaggregation methods and group measures, with microagg's
equivalent: a user who types ``--method rmd`` or ``--aggregation trim`` gets one line saying what
to use instead (docs/sdcmicro.md explains each mapping), not a bare "unknown". Pure data: nothing
is imported here.
"""

from __future__ import annotations

__all__ = ["METHODS", "AGGREGATIONS", "hint"]

_GUIDE = "see docs/sdcmicro.md"

#: sdcMicro's ``microaggregation(method=)`` (and ``mafast``) -> microagg's equivalent
METHODS = {
    "rmd": (
        "method mdav with distance robust (--method mdav --distance robust): MDAV on robust"
        " Mahalanobis distances"
    ),
    "pca": (
        "method projected with projection fpc and univariate univariate-fixed (--method projected"
        " --param projection=fpc --param univariate=univariate-fixed)"
    ),
    "single": (
        "method projected with projection pv, variable j and univariate univariate-fixed (--method"
        " projected --param projection=pv --param variable=J --param univariate=univariate-fixed)"
    ),
    "onedims": (
        "method individual-ranking with univariate univariate-fixed (--method individual-ranking"
        " --param univariate=univariate-fixed); not k-anonymous on the combination"
    ),
    "mafast": (
        "method individual-ranking with univariate univariate-fixed (--method individual-ranking"
        " --param univariate=univariate-fixed)"
    ),
    "simple": "no equivalent (groups of k consecutive records in file order, a baseline); use mdav",
    "mcdpca": (
        "no equivalent (a robust first axis, then fixed cuts); use mdav with distance robust, or"
        " projected"
    ),
    "pppca": (
        "no equivalent (a projection-pursuit first axis, then fixed cuts); use mdav with distance"
        " robust, or projected"
    ),
    "clustpca": (
        "no equivalent (clusters sorted on one axis); use mdav, or the partitioned mode"
        " (--block-size) for large data"
    ),
    "clustmcdpca": (
        "no equivalent (clusters sorted on one robust axis); use mdav with distance robust"
    ),
    "clustpppca": (
        "no equivalent (clusters sorted on one projection-pursuit axis); use mdav with distance"
        " robust"
    ),
    "influence": "no equivalent (clusters sorted on one variable); use mdav",
}

#: sdcMicro's ``measure=`` (what a group publishes) -> microagg's aggregation
AGGREGATIONS = {
    "trim": "aggregation trimmed (--aggregation trimmed --trim SHARE)",
    "trimmed.mean": "aggregation trimmed (--aggregation trimmed --trim SHARE)",
    "mode": "nominal columns publish the group's mode: declare them --categorical",
}


def hint(kind: str, name) -> str | None:
    """One line for an sdcMicro name given where microagg expects a method ("method") or an
    aggregation ("aggregation"); None if ``name`` is not one of sdcMicro's."""
    table = {"method": METHODS, "aggregation": AGGREGATIONS}.get(kind, {})
    if not isinstance(name, str) or name.lower() not in table:
        return None
    return f"{name!r} is sdcMicro's name; in microagg use {table[name.lower()]} ({_GUIDE})"
