"""Records and their combinations: the helpers both the utility and the risk measures use.

A leaf of the measures package (it imports none of its modules). Values come in as (n, d)
float arrays (``as_matrix``); the original and the protected files are compared on one scale
(``common_scale``) or as finite pairs (``finite_pairs``).

Key combinations: two records share a combination when every key column holds the same value,
compared as given (the caller passes the values as the output file reads back; a float that a
text round trip changes is the caller's business). Missing values (NaN, None, pandas NA) of a
column are one value of their own. sdcMicro's ``freqCalc`` treats a missing key value as a
wildcard matching every category instead, which raises the frequencies of the records it
matches; counting it as its own value never gives a larger frequency, so it is the
conservative reading (and the one a reader grouping the published file sees).

Memory O(n·d): combinations are integer codes (``pandas.factorize``), counts are ``bincount``s;
nothing is n×n.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..standardize import Standardizer

__all__ = [
    "as_matrix",
    "common_scale",
    "finite_pairs",
    "key_list",
    "combination_codes",
    "identical_rows",
    "distinct_records",
    "KeyFrequencies",
    "key_frequencies",
    "blank_as_missing",
    "missing_as_na",
    "key_codes",
    "wildcard_frequencies",
]


def as_matrix(A) -> np.ndarray:
    """Values as an (n, d) float64 array (a DataFrame, a Series, a list; one column for 1-D)."""
    A = A.to_numpy(dtype=np.float64) if hasattr(A, "to_numpy") else np.asarray(A, dtype=np.float64)
    return A[:, None] if A.ndim == 1 else A


def common_scale(X: np.ndarray, Xp: np.ndarray, scaler=None) -> tuple[np.ndarray, np.ndarray]:
    """Both files on one scale: ``scaler`` (a run's ``Standardizer``) if given, else the original's
    mean and population standard deviation."""
    if X.shape != Xp.shape:
        raise InputError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    if scaler is None:
        scaler = Standardizer.fit(X, warn=False)
    return scaler.transform(X), scaler.transform(Xp)


def finite_pairs(X, Xp) -> tuple[np.ndarray, np.ndarray]:
    """The original and protected values as (n, d) arrays of one shape, all finite (the interval
    disclosure measures' inputs)."""
    X, Xp = as_matrix(X), as_matrix(Xp)
    if X.shape != Xp.shape:
        raise ValueError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Xp))):
        raise ValueError("interval disclosure needs finite original and protected values")
    return X, Xp


def key_list(frame, keys) -> list:
    keys = [keys] if isinstance(keys, str) else list(keys)
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise ValueError(f"key column(s) not in the data: {', '.join(map(str, missing))}")
    if len(set(keys)) != len(keys):
        raise ValueError("a key column is named twice")
    return keys


def combination_codes(frame, keys: list) -> np.ndarray:
    """int64 code per row, equal for rows with the same values in every key column (missing: a
    value of its own).

    Each column is factorised (``use_na_sentinel=False``: NaN / None / NA are one code) and the
    codes are combined column by column as digits of a mixed-radix number, re-factorised only when
    the next digit could overflow int64 (at 10^6 x 13 published columns: 0.85 -> 0.5 s). Codes
    number the combinations in order of first appearance. No key column: every row is in the one
    combination 0.
    """
    import pandas as pd

    n = len(frame)
    combined = np.zeros(n, dtype=np.int64)
    size = 1  # combined < size
    for codes, radix in _key_codes(frame, keys):
        if size > _CODE_LIMIT // radix:
            combined, distinct = pd.factorize(combined)
            combined, size = combined.astype(np.int64), max(len(distinct), 1)
        combined = combined * radix + codes.astype(np.int64)
        size *= radix
    return pd.factorize(combined)[0].astype(np.int64)


#: a wide file's numeric key columns of at most this many records are numbered in blocks, by a
#: sort of every column at once (one factorisation per column cost ~0.1 ms: 20,000 columns)
_SORTED_ROWS = 2048


def _key_codes(frame, keys: list):
    """(codes, their number) of each key column in turn: equal codes for equal values, missing
    values one value (as ``pd.factorize(use_na_sentinel=False)`` numbers them; only equality
    matters to the combinations)."""
    import pandas as pd

    arrays = _key_arrays(frame, keys)
    blocks: dict = {}  # a block of plain columns of one dtype, numbered at once
    if 0 < len(frame) <= _SORTED_ROWS and len(keys) >= WIDE:
        for j, values in enumerate(arrays):
            if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
                blocks.setdefault(values.dtype, []).append(j)
    numbered = {}
    for where in blocks.values():
        codes, radices = _sorted_codes(np.column_stack([arrays[j] for j in where]))
        numbered.update({j: (codes[:, k], int(radices[k])) for k, j in enumerate(where)})
    wide = len(keys) >= WIDE
    for j, values in enumerate(arrays):
        if j in numbered:
            yield numbered[j]
            continue
        if wide and isinstance(values.dtype, pd.CategoricalDtype):  # a CSV's texts, as grouped
            codes = np.asarray(values.array.codes, dtype=np.int64)  # missing: -1, a value
            yield codes + 1, len(values.dtype.categories) + 1
            continue
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        yield codes, max(len(uniques), 1)


def _sorted_codes(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int64 codes, the number of distinct values) of each column of a non-empty 2-D block:
    its values' ranks among its distinct values (NaN one value, -0.0 equal to 0.0)."""
    order = np.argsort(block, axis=0, kind="stable")
    ordered = np.take_along_axis(block, order, axis=0)
    new = ordered[1:] != ordered[:-1]
    if block.dtype.kind == "f":
        new &= ~(np.isnan(ordered[1:]) & np.isnan(ordered[:-1]))
    ranks = np.zeros(block.shape, dtype=np.int64)
    np.cumsum(new, axis=0, out=ranks[1:])
    codes = np.empty_like(ranks)
    np.put_along_axis(codes, order, ranks, axis=0)
    return codes, ranks[-1] + 1


def _key_arrays(frame, keys: list) -> list:
    """Each key column's values: the numpy columns of a wide frame as arrays (factorised as
    their Series would be), the others as Series."""
    if len(keys) < WIDE or not frame.columns.is_unique:
        return [frame[key] for key in keys]
    arrays = column_arrays(frame, keys)
    return [frame[key] if values is None else values for key, values in zip(keys, arrays)]


#: from this many columns on, the measures take a frame's numpy columns in one conversion per
#: dtype: a Series per column costs ~0.1 ms (12,000 and 20,000 columns: issue 57)
WIDE = 64


def column_arrays(frame, names: list, kinds: str = "biufmM") -> list:
    """The numpy array of each named column of a numpy dtype of these ``kinds`` (None for the
    others), one conversion per dtype, no Series per column (the frame's names unique)."""
    positions = frame.columns.get_indexer(names)
    dtypes = frame.dtypes.to_numpy()[positions]
    arrays: list = [None] * len(names)
    plain = np.array(
        [isinstance(t, np.dtype) and t.kind in kinds for t in dtypes], dtype=bool
    ).reshape(-1)
    for dtype in set(dtypes[plain]):
        where = np.flatnonzero(plain & (dtypes == dtype))
        block = frame.iloc[:, positions[where]].to_numpy(dtype=dtype)
        for k, j in enumerate(where):
            arrays[j] = block[:, k]
    return arrays


def identical_rows(A: np.ndarray) -> np.ndarray:
    """int64 code per row of a 2-D array, equal for rows with the same values in every column
    (``combination_codes`` over its columns; no row sort: np.unique(axis=0) took 1.0 s on
    10^6 x 13)."""
    import pandas as pd

    A = np.asarray(A)
    return combination_codes(pd.DataFrame(A, copy=False), list(range(A.shape[1])))


def distinct_records(A: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One row of A per code of ``rows`` (``identical_rows(A)``), in code order."""
    distinct = np.empty((int(rows.max()) + 1 if len(rows) else 0, A.shape[1]))
    distinct[rows] = A  # identical records write the same values
    return distinct


#: the largest mixed-radix combination code ``combination_codes`` lets grow before re-factorising
_CODE_LIMIT = 2**62


@dataclass(frozen=True)
class KeyFrequencies:
    """Sample frequencies of the key combinations (sdcMicro's ``fk``) and k-anonymity against ``k``.

    combination[i]: index (0..combinations-1) of row i's key combination; fk[i]: the number of
    rows sharing it. A record violates k-anonymity when fk < k (sdcMicro prints these counts for
    k = 2, 3, 5 as "observations violating k-anonymity"; mu-ARGUS calls combinations below its
    threshold "unsafe").
    """

    keys: tuple
    k: int
    combination: np.ndarray
    fk: np.ndarray

    @property
    def n(self) -> int:
        return int(len(self.fk))

    @property
    def sizes(self) -> np.ndarray:
        """Number of records of each combination (indexed by combination code)."""
        return np.bincount(self.combination, minlength=0)

    @property
    def combinations(self) -> int:
        return int(self.sizes.size)

    @property
    def smallest(self) -> int | None:
        """The smallest frequency of a published key combination (None for an empty file)."""
        return int(self.fk.min()) if self.n else None

    @property
    def records_below_k(self) -> int:
        return int(np.count_nonzero(self.fk < self.k))

    @property
    def combinations_below_k(self) -> int:
        return int(np.unique(self.combination[self.fk < self.k]).size)

    @property
    def is_k_anonymous(self) -> bool:
        return self.records_below_k == 0

    def warnings(self) -> tuple[str, ...]:
        if self.is_k_anonymous:
            return ()
        return (
            (
                f"the published file is not {self.k}-anonymous on its key variables "
                f"({', '.join(map(str, self.keys))}): {self.records_below_k} records in "
                f"{self.combinations_below_k} combinations occur fewer than {self.k} times"
            ),
        )


def key_frequencies(frame, keys, k: int, *, missing: str = "value") -> KeyFrequencies:
    """k-anonymity of a published file on its key variables, grouped as its reader groups them.

    frame: the published file as read back (a pandas DataFrame); keys: its key columns (the QIs,
    the strata columns and any other published categorical key); k: the level to check.
    Values are compared exactly as given, missing values forming one value per column (see the
    module docstring for why this differs from sdcMicro's wildcard rule and is conservative).
    Samarati (2001), Sweeney (2002): the file is k-anonymous on the keys when every combination
    of key values that occurs, occurs at least k times. O(n·len(keys)) time and memory.
    missing="wildcard": a missing key value matches any value (sdcMicro's ``freqCalc``; the
    reading of a file after local suppression, ``wildcard_frequencies``): fk counts every record
    that matches.
    """
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if missing not in ("value", "wildcard"):
        raise ValueError(f"missing must be 'value' or 'wildcard', got {missing!r}")
    keys = key_list(frame, keys)
    combination = combination_codes(frame, keys)
    if missing == "wildcard" and keys and bool(frame[keys].isna().to_numpy().any()):
        fk = wildcard_frequencies(key_codes(frame, keys))[0]
    else:  # no missing key value: the wildcard changes nothing
        fk = np.bincount(combination)[combination].astype(np.int64)
    return KeyFrequencies(tuple(keys), int(k), combination, fk)


#: categories this few are looked up in a Python set rather than compared by ``isin``
_FEW_CATEGORIES = 64


def blank_as_missing(frame, tokens=()):
    """A CSV's key texts with every empty field a missing value (``frame.replace("", None)``: a
    suppressed key matches any value), and every field holding one of ``tokens`` (the run's
    declared ``missing`` tokens: a missing QI value is written back as it was read); the frame
    itself when no column can hold such a text (numbers; categories without them): replacing in
    a frame of 10^6 categories costs 0.1 s."""
    import pandas as pd

    blanks = ["", *(str(t) for t in tokens)]
    blank_set = set(blanks)

    def may_hold_blank(dtype) -> bool:
        if isinstance(dtype, pd.CategoricalDtype):  # compared, not hashed: 10^5 texts in 5 ms
            categories = dtype.categories
            if len(categories) <= _FEW_CATEGORIES:  # (isin costs ~0.1 ms: 12,000 columns)
                return not blank_set.isdisjoint(categories.tolist())
            return bool(categories.isin(blanks).any())
        return pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)

    # the dtypes, not a Series per column: 12,000 columns took 12 s (issue 57)
    if any(may_hold_blank(dtype) for dtype in frame.dtypes):
        return frame.replace(blanks if len(blanks) > 1 else "", None)
    return frame


def missing_as_na(frame, keys, tokens=()):
    """The key columns with every missing value as NA: an empty text (a blank CSV field) and a
    declared missing token (``missing`` run option) are missing, not a category, to the planner,
    the audit and the counts (a missing key matches any value)."""
    import pandas as pd

    keys = [keys] if isinstance(keys, str) else list(keys)
    tokens = {"", *(str(t) for t in tokens or ())}
    view = frame[keys].copy()
    for key in keys:
        col = view[key]
        if isinstance(col.dtype, pd.CategoricalDtype):
            drop = [c for c in col.cat.categories if isinstance(c, str) and c in tokens]
            if drop:
                view[key] = col.cat.remove_categories(drop)
        elif pd.api.types.is_object_dtype(col.dtype) or pd.api.types.is_string_dtype(col.dtype):
            view[key] = col.mask(col.isin(tokens))
    return view


def key_codes(frame, keys) -> np.ndarray:
    """(n, len(keys)) int64 matrix: each key column's values as codes 0.. in order of first
    appearance, -1 where the value is missing (NaN, None, pandas NA)."""
    import pandas as pd

    keys = key_list(frame, keys)
    out = np.empty((len(frame), len(keys)), dtype=np.int64)
    for j, key in enumerate(keys):
        out[:, j] = pd.factorize(frame[key], use_na_sentinel=True)[0]
    return out


def wildcard_frequencies(
    codes: np.ndarray, weights=None, fixed=None, *, all_missing_matches_complete: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(fk, Fk) per record when a missing key value matches ANY value (sdcMicro's ``freqCalc``,
    alpha = 1): two records share a combination when, on every key, their codes are equal or one
    of them is missing (-1). fk[i] counts the records matching record i (itself included), Fk[i]
    sums their weights (fk without weights). A record missing every key matches all n records.

    codes: ``key_codes`` of the keys; fixed: optional int codes per record that must be EQUAL
    for two records to match (published QI groups, strata: they are never suppressed).
    Exact counting by missingness pattern: for each pair of patterns (P, Q) present, the records
    of Q are counted by their codes on the keys both have, and looked up for the records of P.
    O(p² · n) time for p distinct patterns (p <= 2^keys, few in practice), O(n) memory.

    all_missing_matches_complete=False is sdcMicro's ``freqCalc`` exactly (its
    ``addAllNAtoKeys = FALSE``): with two keys or more, a record missing every key is not counted
    among the matches of a record missing none (it still matches, and counts for, the records
    missing some keys, and itself counts every record); the k-anonymity checks keep the plain
    rule (True: a missing value matches any value, every record alike).
    """
    codes = np.asarray(codes, dtype=np.int64)
    n, m = codes.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    present = codes >= 0
    pattern = (
        (present * (1 << np.arange(m, dtype=np.int64))).sum(axis=1)
        if m
        else np.zeros(n, dtype=np.int64)
    )
    base = (
        np.zeros(n, dtype=np.int64)
        if fixed is None
        else np.unique(np.asarray(fixed), return_inverse=True)[1].astype(np.int64)
    )
    fk = np.zeros(n)
    Fk = np.zeros(n)
    patterns = np.unique(pattern)
    rows_of = {int(P): np.flatnonzero(pattern == P) for P in patterns}
    common_codes: dict = {}
    full = (1 << m) - 1
    for P in patterns:
        for Q in patterns:
            if not all_missing_matches_complete and m > 1 and int(P) == full and int(Q) == 0:
                continue  # sdcMicro: an all-missing record is no match of a complete one
            C = int(P) & int(Q)
            if C not in common_codes:
                cols = [j for j in range(m) if C >> j & 1]
                common_codes[C] = identical_rows(
                    np.column_stack([base] + [codes[:, j] for j in cols])
                )
            code = common_codes[C]
            rp, rq = rows_of[int(P)], rows_of[int(Q)]
            size = int(code.max()) + 1
            fk[rp] += np.bincount(code[rq], minlength=size)[code[rp]]
            Fk[rp] += np.bincount(code[rq], weights=w[rq], minlength=size)[code[rp]]
    return fk.astype(np.int64), Fk
