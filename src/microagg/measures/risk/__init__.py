"""Disclosure risk of a published file: the measures, as pure functions.

Each function takes the published (and, where the measure needs it, the original) values and
returns a frozen result; ``microagg.measures.file_audit`` registers the audit's figures from them
in the one measure registry (``microagg.measures.MEASURES``: name, label, unit, reference).
Nothing here reads files, knows the pipeline or prints. docs/audit.md explains every figure for
a statistician.

* ``key_frequencies`` (in ``records``, which the utility side shares): k-anonymity on the key
  variables (QIs + strata + other categorical keys), grouped as a reader of the output groups
  them (Samarati 2001; Sweeney 2002).
* ``individual``: per-record re-identification risk with sampling weights, sdcMicro's
  ``measure_risk`` / ``indivRisk`` (Benedetti & Franconi 1998; Franconi & Polettini 2004).
* ``diversity``: distinct and entropy l-diversity of sensitive columns (Machanavajjhala et al.
  2007; sdcMicro ``ldiversity``).
* ``closeness``: t-closeness of sensitive columns, the largest Earth Mover's Distance of a key
  combination's distribution to the file's (Li et al. 2007; Soria-Comas et al. 2015).
* ``linkage``: distance-based record linkage (Domingo-Ferrer & Torra 2001).
* ``intervals`` and ``rmd``: interval disclosure by rank intervals, sdcMicro's ``dRisk`` (SDID)
  and ``dRiskRMD`` (intervals scaled by robust Mahalanobis distances, Templ & Meindl 2008).
* ``order``: does the row order carry information, and a permutation that removes it.

How key combinations and missing key values are counted: ``microagg.measures.records``.
"""

from __future__ import annotations

from ..records import (
    KeyFrequencies,
    identical_rows,
    key_codes,
    key_frequencies,
    wildcard_frequencies,
)
from .diversity import LDiversity, l_diversity
from .individual import IndividualRisk, expected_inverse_frequency, individual_risk
from .intervals import IntervalDisclosure, interval_disclosure, interval_disclosure_risk, sdid_risk
from .linkage import dbrl_sample, distance_linkage_risk
from .order import OrderSignal, RowOrder, row_order, shuffle_permutation, shuffle_rows
from .rmd import RMDRisk, rmd_interval_risk

__all__ = [
    "REFERENCES",
    "KeyFrequencies",
    "key_frequencies",
    "key_codes",
    "identical_rows",
    "wildcard_frequencies",
    "expected_inverse_frequency",
    "IndividualRisk",
    "individual_risk",
    "LDiversity",
    "l_diversity",
    "distance_linkage_risk",
    "dbrl_sample",
    "interval_disclosure_risk",
    "sdid_risk",
    "RMDRisk",
    "rmd_interval_risk",
    "IntervalDisclosure",
    "interval_disclosure",
    "OrderSignal",
    "RowOrder",
    "row_order",
    "shuffle_permutation",
    "shuffle_rows",
]

#: One line of reference per measure; docs/audit.md gives the full citations.
REFERENCES = {
    "k_anonymity": (
        "k-anonymity: Samarati (2001), IEEE TKDE 13(6); Sweeney (2002), IJUFKS 10(5); "
        "sdcMicro freqCalc / kAnon (fk)"
    ),
    "individual_risk": (
        "individual risk: Benedetti & Franconi (1998); Franconi & Polettini (2004), "
        "PSD 2004, LNCS 3050, 262-272; sdcMicro measure_risk / indivRisk"
    ),
    "hierarchical_risk": (
        "hierarchical (household) risk: Franconi & Polettini (2004); sdcMicro measure_risk "
        "with hid (hier_risk)"
    ),
    "l_diversity": (
        "l-diversity: Machanavajjhala, Kifer, Gehrke & Venkitasubramaniam (2007), "
        "ACM TKDD 1(1); sdcMicro ldiversity"
    ),
    "t_closeness": (
        "t-closeness: Li, Li & Venkatasubramanian (2007), ICDE; by microaggregation: "
        "Soria-Comas, Domingo-Ferrer, Sanchez & Martinez (2015), IEEE TKDE 27(11)"
    ),
    "rank_interval": (
        "rank interval disclosure: Domingo-Ferrer & Torra (2001); Mateo-Sanz, Sebe & "
        "Domingo-Ferrer (2004), PSD 2004, LNCS 3050"
    ),
    "sdid": "SDID: Mateo-Sanz, Sebe & Domingo-Ferrer (2004), PSD 2004, LNCS 3050; sdcMicro dRisk",
    "rmd": (
        "RMDID: Templ & Meindl (2008), PSD 2008, LNCS 5262, 113-126; sdcMicro dRiskRMD; "
        "MCD: Rousseeuw & Van Driessen (1999), Technometrics 41(3)"
    ),
    "row_order": (
        "record order: sdcMicro extractManipData(randomizeRecords=...); rank correlation: "
        "Spearman (1904)"
    ),
}
