"""Households in a published file, as pure functions: each record's household, whether a
column is constant within every household, how many distinct households share a published
combination (a missing key value matching any value), and sdcMicro's hierarchical risk (the
probability that at least one member of a household is re-identified: ``measure_risk`` with
``hid``, 1 - prod(1 - r_i) over the household's members, Franconi & Polettini 2004).
"""

from __future__ import annotations

import numpy as np

from ...errors import InputError

__all__ = [
    "privacy_model",
    "households_doc",
    "household_codes",
    "constant_within",
    "households_matching",
    "households_sharing",
    "hierarchical_risk",
]


def privacy_model(k: int, household) -> str:
    """The privacy model a file with a household id is verified to hold, in words (the summary's
    and the manifest's)."""
    return f"k-anonymous by households (k = {k}, household id {', '.join(map(str, household))})"


def households_doc(k: int, household, level) -> dict:
    """The roles' entries of a run with a household id (the manifest's)."""
    return {
        "household": [str(c) for c in household],
        "household_level": [str(c) for c in level],
        "privacy_model": privacy_model(k, household),
    }


def household_codes(frame, columns) -> np.ndarray:
    """Each record's household as a code 0..H-1 (in order of first appearance) from the household
    id column(s); a missing id is an InputError (a record of no household)."""
    import pandas as pd

    columns = list(columns)
    ids = frame[columns]
    missing = ids.isna().any(axis=1).to_numpy()
    if missing.any():
        raise InputError(
            f"{int(missing.sum())} record(s) have no household id ({', '.join(map(str, columns))} "
            "missing): every record must belong to a household"
        )
    if len(columns) == 1:
        return pd.factorize(ids.iloc[:, 0])[0].astype(np.int64)
    return ids.groupby(columns, sort=False, dropna=False).ngroup().to_numpy(dtype=np.int64)


def constant_within(values: np.ndarray, codes: np.ndarray) -> bool:
    """Whether ``values`` (floats, NaN for missing) take one value within every household."""
    first = np.full(int(codes.max()) + 1, np.nan)
    order = np.arange(len(codes))[::-1]  # the first record of each household written last
    first[codes[order]] = values[order]
    ref = first[codes]
    same = (ref == values) | (np.isnan(ref) & np.isnan(values))
    return bool(same.all())


def households_matching(codes: np.ndarray, fixed: np.ndarray, homes: np.ndarray) -> np.ndarray:
    """Per record, the distinct households among the records that match it: equal ``fixed``
    codes (published QIs and strata) and, on every key (``codes``, -1 missing), equal values or
    a missing one (a blank key matches any value). Counted block by block (records of one fixed
    combination), in row chunks: O(block²) per block."""
    n = len(fixed)
    out = np.zeros(n, dtype=np.int64)
    order = np.argsort(fixed, kind="stable")
    for rows in np.split(order, np.flatnonzero(np.diff(fixed[order])) + 1):
        if not rows.size:
            continue
        local = np.unique(homes[rows], return_inverse=True)[1]
        if codes.shape[1] == 0 or (codes[rows] < 0).all(axis=1).all():
            out[rows] = int(local.max()) + 1
            continue
        onehot = np.zeros((len(rows), int(local.max()) + 1), dtype=np.float64)
        onehot[np.arange(len(rows)), local] = 1.0
        c = codes[rows]
        for start in range(0, len(rows), 512):
            part = c[start : start + 512]
            match = np.ones((len(part), len(rows)), dtype=bool)
            for j in range(c.shape[1]):
                a, b = part[:, j][:, None], c[:, j][None, :]
                match &= (a == b) | (a < 0) | (b < 0)
            out[rows[start : start + 512]] = ((match @ onehot) > 0).sum(axis=1)
    return out


def households_sharing(frame, exact, qis, keys, homes: np.ndarray, k: int) -> np.ndarray:
    """Per record, the distinct households among the records publishing its combination: equal
    on the ``exact`` columns (strata), and on each QI and key equal or missing on either side
    (sdcMicro's rule for a missing value). Counted first with the QIs as exact values (a missing
    one a value of its own: ``households_matching`` within their combinations, a lower bound),
    then, when a QI value is missing, record by record against its stratum for the records below
    k and those that could hold the smallest count: exact there, a lower bound elsewhere."""
    from ..records import combination_codes, key_codes

    exact, qis, keys = list(exact), list(qis), list(keys)
    found = households_matching(
        key_codes(frame, keys), combination_codes(frame, [*exact, *qis]), homes
    )
    if not qis or not frame[qis].isna().to_numpy().any():
        return found
    codes, strata = key_codes(frame, [*qis, *keys]), combination_codes(frame, exact)
    refined = np.zeros(len(found), dtype=bool)
    todo = np.flatnonzero((found < k) | (found == found.min()))
    while todo.size:
        for i in todo:
            rows = np.flatnonzero(strata == strata[i])
            c = codes[rows]
            same = ((c == codes[i]) | (c < 0) | (codes[i] < 0)).all(axis=1)
            found[i] = len(np.unique(homes[rows[same]]))
        refined[todo] = True
        todo = np.flatnonzero(~refined & (found < found[refined].min()))
    return found


def hierarchical_risk(risk: np.ndarray, homes: np.ndarray) -> np.ndarray:
    """Per record, its household's risk: 1 - prod(1 - r_i) over the household's members (r_i:
    individual re-identification risk; sdcMicro's ``measure_risk(..., hid=)``, column
    ``hier_risk``; its ``hier_risk_ER`` is the sum over records)."""
    risk = np.asarray(risk, dtype=np.float64)
    survive = np.ones(int(homes.max()) + 1)
    np.multiply.at(survive, homes, 1.0 - risk)
    return 1.0 - survive[homes]
