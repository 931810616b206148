"""Exact counts of the key combinations of a file too large for memory, from a stream of its
chunks: each record's combination hashed twice (two 64-bit keys, 128 bits in all: two
combinations merge only with a chance below 2^-100 at 10^9 records), the hashes of every record
held in one preallocated array (16 bytes a record) and sorted in place, the runs of equal hashes
counted. No per-record array beyond the hashes (1.6 GB at 10^8 records, 3.2 GB with strata)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CombinationCounts", "count_combinations"]

_HASH_KEYS = ("microagg-keys-01", "microagg-keys-02")


@dataclass(frozen=True)
class CombinationCounts:
    """The sample frequencies of a file's key combinations (``counts``: one per combination, in
    hash order), with the figures ``measures.records.KeyFrequencies`` gives of them."""

    keys: tuple
    k: int
    counts: np.ndarray

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def combinations(self) -> int:
        return int(self.counts.size)

    @property
    def smallest(self) -> int | None:
        return int(self.counts.min()) if self.counts.size else None

    @property
    def records_below_k(self) -> int:
        return int(self.counts[self.counts < self.k].sum())

    @property
    def combinations_below_k(self) -> int:
        return int(np.count_nonzero(self.counts < self.k))

    @property
    def is_k_anonymous(self) -> bool:
        return self.records_below_k == 0


class _Hashes:
    """The 128-bit hashes of every record, appended chunk by chunk into one array (``records``
    known: allocated once; else grown by doubling)."""

    def __init__(self, records: int | None):
        self.pairs = np.empty((records or 1 << 16, 2), np.uint64)
        self.fixed, self.size = records is not None, 0

    def add(self, frame) -> None:
        import pandas as pd

        m = len(frame)
        if self.size + m > len(self.pairs):
            if self.fixed:
                raise ValueError(f"more than the {len(self.pairs)} records expected")
            grown = np.empty((max(2 * len(self.pairs), self.size + m), 2), np.uint64)
            grown[: self.size] = self.pairs[: self.size]
            self.pairs = grown
        for j, key in enumerate(_HASH_KEYS):
            self.pairs[self.size : self.size + m, j] = pd.util.hash_pandas_object(
                frame, index=False, hash_key=key
            ).to_numpy()
        self.size += m

    def counts(self) -> np.ndarray:
        """Each distinct hash's count (the array is sorted in place, then released)."""
        pairs = self.pairs[: self.size]
        self.pairs = None
        if not len(pairs):
            return np.zeros(0, np.int64)
        rows = pairs.view(np.dtype((np.void, 16))).reshape(-1)
        rows.sort()  # in place: equal 16-byte rows become runs
        pairs = rows.view(np.uint64).reshape(-1, 2)
        starts = np.flatnonzero(np.any(pairs[1:] != pairs[:-1], axis=1)) + 1
        return np.diff(np.concatenate(([0], starts, [len(pairs)]))).astype(np.int64)


def count_combinations(chunks, keys, qis, k: int, records: int | None = None):
    """(the key variables' CombinationCounts, each QI combination's count, the records) of a
    stream of chunks holding the columns ``keys`` (the QIs and strata) and ``qis``; the QI
    combinations are the key ones when both name the same columns (no strata). ``records``: the
    number expected (one allocation; more is a ValueError)."""
    keys, qis = list(keys), list(qis)
    separate = set(qis) != set(keys)
    key_hashes = _Hashes(records)
    qi_hashes = _Hashes(records) if separate else None
    for frame in chunks:
        key_hashes.add(frame[keys].reset_index(drop=True))
        if qi_hashes is not None:
            qi_hashes.add(frame[qis].reset_index(drop=True))
    n = key_hashes.size
    key_counts = key_hashes.counts()
    qi_counts = qi_hashes.counts() if qi_hashes is not None else key_counts
    return CombinationCounts(tuple(keys), int(k), key_counts), qi_counts, n
