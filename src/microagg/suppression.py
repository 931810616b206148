"""Local suppression of categorical key values: the published file's last stage.

A file is k-anonymous on its key variables when every record matches at least k records; a
suppressed (missing) key value matches any value (sdcMicro's ``freqCalc`` with alpha = 1 and
``localSuppression``; mu-ARGUS's local suppression). ``plan`` finds which values to set missing
so that every record reaches k, with an importance order of the keys (the most important is
suppressed last), in two phases:

1. greedy (``kernels.suppress.suppress_greedy``): the records below k, rarest first (sdcMicro's
   order of decreasing individual risk), each get values suppressed until they match k records;
   each time the least important key whose suppression alone reaches k, else the key that adds
   the most matches. Suppressing a value only adds matches, so no record falls below k.
2. restore (``kernels.suppress.restore``): every suppressed value, most important keys first, is
   given back where the file stays k-anonymous (the record keeps k matches and no record that
   matched it only through the missing value falls below k).

Published QI groups and strata (``fixed``) are never suppressed: two records match only within
the same fixed combination, so the whole file is k-anonymous on all its key variables. Values
already missing in the input are kept missing and not counted. Time O(u · b · m) for u records
below k in blocks of b records and m keys (sdcMicro's ``localSuppression``: O(u · n · m) in R
and C++ per pass).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .options import ON_KEYS_BELOW_K as ON_BELOW_K  # declared once, with the run options

__all__ = [
    "ON_BELOW_K",
    "Suppression",
    "default_importance",
    "importance_order",
    "missing_as_na",
    "plan",
    "apply",
    "below_k",
    "for_run",
]


@dataclass(frozen=True)
class Suppression:
    """The values local suppression sets missing (``suppressed[i, j]``: key j of record i).

    keys: the suppressed key columns, in the frame's order; importance: the same keys, most
    important first; k: the level reached; records_left_below_k: records that no suppression can
    lift to k (their QI group or stratum has fewer than k records); greedy: values the first
    phase suppressed, before the restoring phase gave some back.
    """

    keys: tuple
    importance: tuple
    k: int
    suppressed: np.ndarray
    records_below_k_before: int
    records_left_below_k: int
    greedy: int
    mode: str = "suppress"  # the run's on_keys_below_k: "report" suppresses nothing and says so
    missing_before: int = 0  # key values missing in the input (blank, NA, a declared token)
    key_anonymity: str | None = None  # the run's model (key_anonymity); None: a plan on its own

    @property
    def per_key(self) -> dict:
        """Suppressed values per key column (sdcMicro's ``print(sdc, "ls")``)."""
        return {key: int(self.suppressed[:, j].sum()) for j, key in enumerate(self.keys)}

    @property
    def total(self) -> int:
        return int(self.suppressed.sum())

    @property
    def records(self) -> int:
        """Records with at least one suppressed value."""
        return int(self.suppressed.any(axis=1).sum()) if self.suppressed.size else 0

    def to_dict(self) -> dict:
        return {
            "mode": self.mode,
            "keys": list(self.keys),
            "importance": list(self.importance),
            "k": self.k,
            "per_key": self.per_key,
            "total": self.total,
            "records": self.records,
            "records_below_k_before": self.records_below_k_before,
            "records_left_below_k": self.records_left_below_k,
            "missing_in_input": self.missing_before,
            "key_anonymity": self.key_anonymity,
        }

    def warnings(self) -> tuple:
        if not self.records_left_below_k:
            return ()
        if self.mode == "report":
            return (
                (
                    f"{self.records_left_below_k} records match fewer than {self.k} records on the"
                    f" keys ({', '.join(map(str, self.keys))}) with the published QIs and strata;"
                    " published unchanged (on_keys_below_k='report'): the file is not k-anonymous"
                ),
            )
        return (
            (
                f"{self.records_left_below_k} records stay below k = {self.k} on the keys"
                f" ({', '.join(map(str, self.keys))}) after local suppression: their QI group or"
                f" stratum has fewer than {self.k} records"
            ),
        )


def default_importance(frame, keys) -> list:
    """sdcMicro's default importance: keys with fewer categories are more important (suppressed
    last); ties keep the given order."""
    counts = [frame[key].nunique(dropna=True) for key in keys]
    return [keys[j] for j in sorted(range(len(keys)), key=lambda j: (counts[j], j))]


def missing_as_na(frame, keys, tokens=()):
    """The key columns with a blank text and a declared token as NA (``measures.records``)."""
    from .measures.records import missing_as_na as as_na

    return as_na(frame, keys, tokens)


def importance_order(frame, keys, importance=None) -> tuple[list, list]:
    """(keys, keys most important first): ``importance`` completed as ``plan`` takes it."""
    return _check(frame, keys, 1, importance)


def _check(frame, keys, k, importance) -> tuple[list, list]:
    keys = [keys] if isinstance(keys, str) else list(keys)
    unknown = [key for key in keys if key not in frame.columns]
    if unknown:
        raise ValueError(f"key column(s) not in the data: {', '.join(map(str, unknown))}")
    if len(set(keys)) != len(keys):
        raise ValueError("a key column is named twice")
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if importance is None:
        return keys, default_importance(frame, keys)
    importance = [importance] if isinstance(importance, str) else list(importance)
    extra = [c for c in importance if c not in keys]
    if extra:
        raise ValueError(
            f"importance names column(s) that are not suppressed keys: {', '.join(map(str, extra))}"
        )
    if len(set(importance)) != len(importance):
        raise ValueError("importance names a key twice")
    # keys left out of the importance order come after the named ones, in the given order
    return keys, importance + [c for c in keys if c not in importance]


def _fixed_codes(frame, fixed) -> np.ndarray:
    from .measures.records import combination_codes

    fixed = [] if fixed is None else ([fixed] if isinstance(fixed, str) else list(fixed))
    return combination_codes(frame, fixed)


def below_k(frame, keys, k: int, fixed=None, missing=()) -> int:
    """Records matching fewer than k records on ``keys`` (missing matches any value) within
    their ``fixed`` combination: what ``plan`` would have to suppress for (0: nothing)."""
    from .measures.records import key_codes, wildcard_frequencies

    keys, _ = _check(frame, keys, k, None)
    if not keys or not len(frame):
        return 0
    view = missing_as_na(frame, keys, missing)
    fk, _ = wildcard_frequencies(key_codes(view, keys), fixed=_fixed_codes(frame, fixed))
    return int(np.count_nonzero(fk < k))


def plan(frame, keys, k: int, importance=None, fixed=None, missing=()) -> Suppression:
    """The fewest values of ``keys`` to set missing for k-anonymity (see the module docstring).

    frame: the file as it will be published (its QI and strata columns already published);
    keys: the categorical key columns that may be suppressed; importance: the keys, most
    important first (default: fewer categories first, sdcMicro's default); fixed: columns that
    also identify and are never suppressed (published QIs, strata): records match only within
    the same fixed combination; missing: text tokens that mean missing (besides NA and an empty
    text): missing in the input, matching any value, never counted as suppressed. Deterministic:
    the same frame gives the same suppressions.
    """
    from .kernels.suppress import restore, suppress_greedy
    from .measures.records import key_codes, wildcard_frequencies

    importance_given = importance
    keys, importance = _check(frame, keys, k, importance)
    n, m = len(frame), len(keys)
    if not m or not n:
        return Suppression(
            tuple(keys), tuple(importance), int(k), np.zeros((n, m), dtype=bool), 0, 0, 0
        )
    view = missing_as_na(frame, keys, missing)
    keys, importance = _check(view, keys, k, importance_given)  # a blank is no category
    codes = key_codes(view, keys)
    gaps = int(np.count_nonzero(codes < 0))
    block = _fixed_codes(frame, fixed)
    fk, _ = wildcard_frequencies(codes, fixed=block)
    before = int(np.count_nonzero(fk < k))
    if not before:
        return Suppression(
            tuple(keys),
            tuple(importance),
            int(k),
            np.zeros((n, m), dtype=bool),
            0,
            0,
            0,
            missing_before=gaps,
        )
    # rows sorted by block (stable: file order within a block)
    perm = np.argsort(block, kind="stable")
    sorted_block = block[perm]
    start = np.concatenate([[0], np.flatnonzero(np.diff(sorted_block)) + 1, [n]]).astype(np.int64)
    work = np.ascontiguousarray(codes[perm])
    original = work.copy()
    fks = fk[perm].astype(np.int64)
    rank = np.array([importance.index(key) for key in keys], dtype=np.int64)
    unsafe = np.flatnonzero(fks < k)
    order = unsafe[np.lexsort((unsafe, fks[unsafe]))].astype(
        np.int64
    )  # rarest first, then file order
    left = int(suppress_greedy(work, start, fks, order, rank, int(k)))
    cells = np.argwhere((work < 0) & (original >= 0))
    greedy = len(cells)
    if greedy:
        # most important key first, then rows in file order
        cell_order = np.lexsort((perm[cells[:, 0]], rank[cells[:, 1]]))
        cells = cells[cell_order]
        restore(
            work,
            original,
            start,
            fks,
            cells[:, 0].astype(np.int64),
            cells[:, 1].astype(np.int64),
            int(k),
        )
    suppressed = np.zeros((n, m), dtype=bool)
    suppressed[perm] = (work < 0) & (original >= 0)
    left = int(np.count_nonzero(fks < k))
    return Suppression(
        tuple(keys),
        tuple(importance),
        int(k),
        suppressed,
        before,
        left,
        greedy,
        missing_before=gaps,
    )


def apply(frame, suppression: Suppression):
    """A copy of ``frame`` with the suppressed key values missing (NaN / None / pandas NA as the
    column's dtype holds them; a categorical column keeps its categories); other columns unchanged.
    """
    import pandas as pd

    out = frame.copy()
    for j, key in enumerate(suppression.keys):
        mask = suppression.suppressed[:, j]
        if not mask.any():
            continue
        col = out[key]
        if pd.api.types.is_integer_dtype(col.dtype) and not isinstance(
            col.dtype, pd.api.extensions.ExtensionDtype
        ):
            # a missing integer: pandas' nullable integer of the same width (int16 -> Int16)
            col = col.astype(col.dtype.name.replace("uint", "UInt").replace("int", "Int"))
        elif pd.api.types.is_bool_dtype(col.dtype) and not isinstance(
            col.dtype, pd.api.extensions.ExtensionDtype
        ):
            col = col.astype("boolean")
        out[key] = col.mask(pd.Series(mask, index=col.index))
    return out


def for_run(
    frame, keys, k: int, mode: str, importance=None, fixed=None, missing=()
) -> Suppression | None:
    """The publish stage's suppression of a run (``pipeline.publish_values``): None without keys;
    with mode "suppress" the plan; "report" and "refuse" suppress nothing and count the records
    below k ("refuse" raises ``InputError`` when there are any: nothing is written)."""
    from .errors import InputError

    if not keys:
        return None
    if mode == "suppress":
        return plan(frame, keys, k, importance, fixed, missing)
    keys, importance = _check(frame, keys, k, importance)
    left = below_k(frame, keys, k, fixed, missing)
    if mode == "refuse" and left:
        raise InputError(
            f"{left} records match fewer than {k} records on the keys ({', '.join(map(str, keys))})"
            " with the published quasi-identifiers and strata (on_keys_below_k='refuse'): use"
            " on_keys_below_k='suppress' (--on-keys-below-k suppress), or fewer or coarser keys"
        )
    return Suppression(
        tuple(keys),
        tuple(importance),
        int(k),
        np.zeros((len(frame), len(keys)), dtype=bool),
        left,
        left,
        0,
        mode,
        int(missing_as_na(frame, keys, missing).isna().to_numpy().sum()),
    )
