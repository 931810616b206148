"""Information loss, utility and disclosure-risk measures, and the audit of a published file.

All measures take the original and the protected quasi-identifier values as (n, d) arrays in
the same row order (DataFrames are accepted and converted). Measures that need a common scale
standardise BOTH files with the ORIGINAL's mean and population standard deviation, so that a
loss of variance in the protected file shows up instead of being standardised away.
Memory stays O(n·d) (no n×n distance matrix): record linkage uses a KD-tree.

The package's modules, each importing only those listed before it (no module imports this one):

* ``records``: the helpers both sides use (values as matrices, one common scale, identical
  rows, key combinations and their frequencies);
* ``registry``: ``Measure``, ``@measure``, ``MEASURES``, ``Figure``, ``Audit``;
* ``utility``: information loss and utility, as pure functions;
* ``risk``: disclosure risk, as pure functions (record linkage, interval disclosure, SDID, RMD,
  individual risk, l-diversity, row order);
* ``comparison``: original against protected values (``Comparison``) and their figures;
* ``run_figures``: a run's own figures (``RunInputs``);
* ``file_audit``: the audit of a published file (``audit_files``, ``FileAudit``: its inputs);
* ``file_risk``: the published file's disclosure figures.

A measure registers itself when its module is imported; this package imports ``comparison``,
``run_figures`` and ``file_risk`` first, in that order, which is the order their figures are
listed in.
A new figure is one function decorated with ``@measure`` in the module of its inputs
(``comparison``, ``run_figures`` or ``file_risk``).
"""

from __future__ import annotations

# the modules that register measures, in the order their figures are listed (the comparison's
# information loss heads a run's figures, its risk figures precede the file audit's)
from . import comparison as comparison  # isort: split

from . import run_figures as run_figures  # isort: split

from . import file_risk as file_risk  # isort: split

from . import registry
from .comparison import Comparison, compare, risk_report, utility_report
from .file_audit import AuditRoles, FileAudit, audit_files, combine
from .registry import Audit, Figure, Measure, audit, in_registry_order, measure, measures_of
from .risk.intervals import interval_disclosure_risk
from .risk.linkage import dbrl_sample, distance_linkage_risk
from .run_figures import RunInputs
from .utility import (
    categorical_report,
    category_change_rate,
    category_distribution_distance,
    correlation_discrepancy,
    covariance_discrepancy,
    eigen_sdcmicro,
    eigenvalue_discrepancy,
    fpc_variance_percent,
    il1s,
    il1s_per_value,
    information_loss,
    is_k_anonymous,
    pc_weight_change,
    smallest_group,
)

__all__ = [
    "information_loss",
    "correlation_discrepancy",
    "pc_weight_change",
    "fpc_variance_percent",
    "smallest_group",
    "is_k_anonymous",
    "utility_report",
    "il1s",
    "il1s_per_value",
    "eigen_sdcmicro",
    "covariance_discrepancy",
    "eigenvalue_discrepancy",
    "distance_linkage_risk",
    "dbrl_sample",
    "interval_disclosure_risk",
    "risk_report",
    "category_change_rate",
    "category_distribution_distance",
    "categorical_report",
    "Measure",
    "MEASURES",
    "measure",
    "measures_of",
    "in_registry_order",
    "Figure",
    "Audit",
    "audit",
    "Comparison",
    "compare",
    "RunInputs",
    "AuditRoles",
    "FileAudit",
    "audit_files",
    "combine",
]


def __getattr__(name):
    # the registry's dict, read where it lives: a test's copy of it (monkeypatch) is the one seen
    if name == "MEASURES":
        return registry.MEASURES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
