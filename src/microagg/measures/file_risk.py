"""The disclosure figures of a published file, registered in the measure registry (group
"risk"), each computed from the file audit's inputs (``file_audit.FileAudit``) with the pure
functions of ``risk``: k-anonymity on the key variables, individual re-identification risk,
l-diversity of sensitive columns, SDID and RMD interval disclosure, suppressed key values and the
row order. Each is None (left out) on inputs that are not a published file's. docs/audit.md
explains every figure.
"""

from __future__ import annotations

import numpy as np

from .file_audit import FileAudit
from .registry import measure
from .risk import REFERENCES
from .risk.intervals import sdid_risk
from .risk.method_aware import method_aware_linkage


@measure(
    "key_combinations",
    "published combinations of the key variables",
    "combinations",
    REFERENCES["k_anonymity"],
    "risk",
)
def _key_combinations(c):
    return c.frequencies.combinations if isinstance(c, FileAudit) else None


@measure(
    "key_smallest_frequency",
    "records sharing the rarest combination of key variables",
    "records",
    REFERENCES["k_anonymity"],
    "risk",
)
def _key_smallest(c):
    return c.frequencies.smallest if isinstance(c, FileAudit) else None


@measure(
    "key_records_below_k",
    "records whose combination of key variables occurs fewer than k times",
    "records",
    REFERENCES["k_anonymity"],
    "risk",
)
def _key_records_below(c):
    return c.frequencies.records_below_k if isinstance(c, FileAudit) else None


@measure(
    "key_combinations_below_k",
    "combinations of key variables occurring fewer than k times",
    "combinations",
    REFERENCES["k_anonymity"],
    "risk",
)
def _key_combinations_below(c):
    return c.frequencies.combinations_below_k if isinstance(c, FileAudit) else None


def _individual(c):
    return c.individual if isinstance(c, FileAudit) else None


@measure(
    "reidentification_expected",
    "expected re-identifications (categorical keys)",
    "records",
    REFERENCES["individual_risk"],
    "risk",
)
def _reid_expected(c):
    r = _individual(c)
    return None if r is None else r.expected_reidentifications


@measure(
    "reidentification_global_percent",
    "global re-identification risk (%)",
    "%",
    REFERENCES["individual_risk"],
    "risk",
    digits=6,
)
def _reid_global(c):
    r = _individual(c)
    return None if r is None else r.global_risk_percent


@measure(
    "reidentification_max",
    "largest individual re-identification risk",
    "risk",
    REFERENCES["individual_risk"],
    "risk",
    digits=6,
)
def _reid_max(c):
    r = _individual(c)
    return None if r is None else r.max_risk


@measure(
    "reidentification_above_threshold",
    "records with individual risk above 0.1",
    "records",
    REFERENCES["individual_risk"],
    "risk",
)
def _reid_above(c):
    r = _individual(c)
    return None if r is None else r.records_above_threshold


@measure(
    "reidentification_higher_than_main_part",
    "records with risk above median + 2 MAD and 0.1",
    "records",
    REFERENCES["individual_risk"],
    "risk",
)
def _reid_main(c):
    r = _individual(c)
    return None if r is None else r.higher_than_main_part


def _households(c):
    """(household codes, distinct households matching each record) of a published file with a
    household id (``roles.household``), counted once per audit; None otherwise."""
    if not isinstance(c, FileAudit) or not c.roles.household:
        return None
    if "_household_counts" not in c.__dict__:
        from .risk.household_risk import household_codes, households_sharing

        r, view = c.roles, c.key_view
        homes = household_codes(c.published_frame, list(r.household))
        qis = [q for q in r.columns if q not in r.strata]
        keys = [k for k in r.keys if k not in r.columns and k not in r.strata]
        c.__dict__["_household_counts"] = (
            homes,
            households_sharing(view, list(r.strata), qis, keys, homes, r.k),
        )
    return c.__dict__["_household_counts"]


@measure(
    "households_smallest",
    "fewest distinct households sharing a published combination of key variables",
    "households",
    REFERENCES["k_anonymity"],
    "risk",
)
def _households_smallest(c):
    found = _households(c)
    return None if found is None else int(found[1].min())


@measure(
    "households_records_below_k",
    "records whose published combination comes from fewer than k households",
    "records",
    REFERENCES["k_anonymity"],
    "risk",
)
def _households_below_k(c):
    found = _households(c)
    return None if found is None else int((found[1] < c.roles.k).sum())


def _hierarchical(c):
    found, r = _households(c), _individual(c)
    if found is None or r is None:
        return None
    from .risk.household_risk import hierarchical_risk

    return hierarchical_risk(r.risk, found[0])


@measure(
    "household_risk_expected",
    "expected re-identifications with the household structure (sdcMicro hier_risk_ER)",
    "records",
    REFERENCES["hierarchical_risk"],
    "risk",
)
def _household_risk_expected(c):
    h = _hierarchical(c)
    return None if h is None else float(h.sum())


@measure(
    "household_risk_percent",
    "household re-identification risk (%) (sdcMicro hier_risk_pct)",
    "%",
    REFERENCES["hierarchical_risk"],
    "risk",
    digits=6,
)
def _household_risk_percent(c):
    h = _hierarchical(c)
    return None if h is None else float(100.0 * h.mean())


def _diversity(c):
    return c.diversity if isinstance(c, FileAudit) and c.roles.sensitive else None


@measure(
    "ldiversity_smallest_distinct",
    "fewest distinct sensitive values in a key combination (distinct l)",
    "l",
    REFERENCES["l_diversity"],
    "risk",
)
def _ld_distinct(c):
    d = _diversity(c)
    return None if not d else min(ld.smallest_distinct for ld in d.values())


@measure(
    "ldiversity_smallest_entropy",
    "smallest entropy l of a sensitive column in a key combination",
    "l",
    REFERENCES["l_diversity"],
    "risk",
)
def _ld_entropy(c):
    d = _diversity(c)
    return None if not d else min(ld.smallest_entropy for ld in d.values())


@measure(
    "ldiversity_records_below_l",
    "records in key combinations with fewer than l distinct sensitive values",
    "records",
    REFERENCES["l_diversity"],
    "risk",
)
def _ld_records(c):
    d = _diversity(c)
    if not d:
        return None
    return int(np.count_nonzero(np.logical_or.reduce([ld.distinct < ld.l for ld in d.values()])))


@measure(
    "ldiversity_records_below_l_entropy",
    "records in key combinations not entropy l-diverse",
    "records",
    REFERENCES["l_diversity"],
    "risk",
)
def _ld_records_entropy(c):
    d = _diversity(c)
    if not d:
        return None
    return int(
        np.count_nonzero(
            np.logical_or.reduce([ld.entropy < ld.l * (1.0 - 1e-12) for ld in d.values()])
        )
    )


@measure(
    "tcloseness_largest_emd",
    "largest Earth Mover's Distance of a key combination's sensitive values to the file's "
    "(t-closeness: the smallest t that holds)",
    "EMD",
    REFERENCES["t_closeness"],
    "risk",
)
def _t_closeness(c):
    if not isinstance(c, FileAudit) or not c.roles.sensitive:
        return None
    return max(c.closeness.values())


@measure(
    "record_linkage_method_aware",
    "record linkage by an intruder who knows the method (%)",
    "share",
    "expected share of records linked correctly by an intruder who re-runs the method on the "
    "original and picks among the published records with the record's own QI vector (1/f); "
    "Nin, Herranz & Torra 2008",
    "risk",
    digits=2,
    scale=100.0,
)
def _method_aware(c):
    if not isinstance(c, FileAudit) or not c.roles.columns:
        return None
    return method_aware_linkage(c.key_view[list(c.roles.columns)])


@measure(
    "interval_sdid_share",
    "records at risk by SDID (all values within ±0.05 sd; sdcMicro dRisk, %)",
    "share",
    REFERENCES["sdid"],
    "risk",
    digits=2,
    scale=100.0,
    aligned=True,
)
def _sdid(c):
    if not isinstance(c, FileAudit) or not c.X.shape[1]:
        return None
    return sdid_risk(c.X, c.Xp, sd=c.sample_sds[1])


@measure(
    "interval_rmd_risk1",
    "records inside their RMD-scaled interval (RMDID1, microagg's: MCD location, original scale, "
    "%)",
    "share",
    REFERENCES["rmd"],
    "risk",
    digits=2,
    scale=100.0,
    aligned=True,
)
def _rmd1(c):
    r = c.rmd if isinstance(c, FileAudit) else None
    return None if r is None else r.risk1


@measure(
    "interval_rmd_risk2",
    "RMDID1 records with no other published record near (RMDID2, %)",
    "share",
    REFERENCES["rmd"],
    "risk",
    digits=2,
    scale=100.0,
    aligned=True,
)
def _rmd2(c):
    r = c.rmd if isinstance(c, FileAudit) else None
    return None if r is None else r.risk2


@measure(
    "suppressed_key_values",
    "declared key values published missing (local suppression)",
    "values",
    "local suppression: sdcMicro localSuppression; mu-ARGUS",
    "risk",
    aligned=True,
)
def _suppressed_key_values(c):
    """Values of the declared keys present in the original and missing in the published file:
    local suppression's count (docs/local-suppression.md); per key in ``Result.suppression``."""
    if not isinstance(c, FileAudit) or not c.roles.keys:
        return None
    original, published = _key_cells(c)
    # a blank field of the input is missing there: published blank, it is no suppression
    return int((original.notna().to_numpy() & published.isna().to_numpy()).sum())


def _key_cells(c):
    """The declared keys' cells of the original and the published file, a blank text or a declared
    token missing."""
    from .records import missing_as_na

    keys = [k for k in c.roles.keys if k in c.original.columns and k in c.published_frame.columns]
    tokens = c.roles.missing  # a blank and a declared token are missing (suppression.plan's rule)
    original = missing_as_na(c.original, keys, tokens).reset_index(drop=True)
    published = missing_as_na(c.published_frame, keys, tokens).reset_index(drop=True)
    return original, published


@measure(
    "key_values_missing_in_input",
    "declared key values missing in the input (published missing, not suppressions)",
    "values",
    "local suppression: sdcMicro localSuppression; mu-ARGUS",
    "risk",
    aligned=True,
)
def _key_values_missing_in_input(c):
    """Values of the declared keys missing (NA or blank) in the original and in the published file:
    the input's own gaps, counted apart from the suppressions."""
    if not isinstance(c, FileAudit) or not c.roles.keys:
        return None
    original, published = _key_cells(c)
    return int((original.isna().to_numpy() & published.isna().to_numpy()).sum())


@measure(
    "row_order_informative_columns",
    "columns the published file's row order follows",
    "columns",
    REFERENCES["row_order"],
    "risk",
)
def _row_order(c):
    return len(c.order.informative_columns) if isinstance(c, FileAudit) else None
