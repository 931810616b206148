"""Row order: does the published file's order carry information (an id, a sort by a column), and
a permutation that removes it (sdcMicro's ``randomizeRecords``; Spearman 1904)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ..records import WIDE, column_arrays, key_list

__all__ = ["OrderSignal", "RowOrder", "row_order", "shuffle_permutation", "shuffle_rows"]


@dataclass(frozen=True)
class OrderSignal:
    """How strongly one column follows the row order.

    spearman: rank correlation of the column with the row number (rows with a missing value
    left out); ascending_share: share of strictly ascending pairs among the adjacent pairs of
    rows whose values differ (1: sorted ascending, 0: descending, ~1/2: no order); pairs: the
    number of such pairs; row_number_offset: c when the column equals the 0-based row number
    plus c on every row (an id that is the row number), else None; informative: judged by the
    thresholds of ``row_order``.
    """

    column: str
    spearman: float
    ascending_share: float
    pairs: int
    row_number_offset: float | None
    informative: bool


@dataclass(frozen=True)
class RowOrder:
    """Row-order signals of the columns examined; ``informative``: some column follows the order."""

    signals: tuple[OrderSignal, ...]

    @property
    def informative_columns(self) -> tuple[str, ...]:
        return tuple(s.column for s in self.signals if s.informative)

    @property
    def informative(self) -> bool:
        return bool(self.informative_columns)

    def warnings(self) -> tuple[str, ...]:
        if not self.informative:
            return ()
        parts = []
        for s in self.signals:
            if s.informative:
                if s.row_number_offset is not None:
                    parts.append(f"{s.column} (= row number + {s.row_number_offset:g})")
                else:
                    parts.append(
                        f"{s.column} (rank correlation {s.spearman:+.2f}, "
                        f"{100 * max(s.ascending_share, 1 - s.ascending_share):.0f} % of "
                        "neighbours in order)"
                    )
        return (
            "the input's row order is informative: it follows "
            + ", ".join(parts)
            + "; an output in the same order lets position link a published record to its "
            "respondent: use --shuffle",
        )


#: the first present values of a text column tried as numbers before all of them are
_NUMBER_PROBE = 1000


def _order_values(series) -> np.ndarray | None:
    """Float ranks-ready values of a column in row order (NaN = missing), or None if it cannot be
    ordered."""
    import pandas as pd

    s = series
    if isinstance(s.dtype, pd.CategoricalDtype):
        if s.cat.ordered:
            codes = s.cat.codes.to_numpy().astype(np.float64)
            return np.where(codes < 0, np.nan, codes)
        s = s.astype(object).where(s.notna(), None)
    if pd.api.types.is_bool_dtype(s.dtype):
        return s.astype("float64").to_numpy()
    if pd.api.types.is_datetime64_any_dtype(s.dtype) or pd.api.types.is_timedelta64_dtype(s.dtype):
        v = s.to_numpy().astype("int64").astype(np.float64)
        return np.where(s.isna().to_numpy(), np.nan, v)
    if pd.api.types.is_numeric_dtype(s.dtype):
        return pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
    # text: numbers if every present value is one, else the text itself in lexicographic order
    present = s.notna()
    probe = s[present].iloc[:_NUMBER_PROBE]  # a text among the first: not every value a number
    if pd.to_numeric(probe, errors="coerce").notna().all():
        as_number = pd.to_numeric(s.where(present), errors="coerce")
        if as_number[present].notna().all():
            return as_number.to_numpy(dtype=np.float64)
    # (a column of strings is its own text: no copy of each)
    text = (
        s
        if pd.api.types.infer_dtype(s, skipna=True) == "string"
        else s.where(~present, s.astype(str))
    )
    codes, uniques = pd.factorize(text, sort=True)  # sorted codes: order-preserving; -1 = missing
    return np.where(codes < 0, np.nan, codes.astype(np.float64))


def _average_ranks(v: np.ndarray) -> np.ndarray:
    """Ranks 1..m, ties sharing their average rank (Spearman's convention)."""
    _, inverse, counts = np.unique(v, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)
    return (last - (counts - 1) / 2.0)[inverse]


def _order_signal(
    name,
    values: np.ndarray,
    min_spearman: float,
    min_share: float,
    min_z: float,
    sample: int | None = None,
    seed: int = 0,
) -> OrderSignal | None:
    n = len(values)
    present = ~np.isnan(values)
    v = values[present]
    m = len(v)
    if m < 3 or np.all(v == v[0]):
        return None
    offset = None
    if m == n and np.all(v == np.floor(v)):  # exact on every row: O(n), no sort
        c = v - np.arange(n)
        if np.all(c == c[0]):
            offset = float(c[0])
    if sample is not None and m > sample:
        # a fixed-seed sample of rows (in file order) for rho and one of adjacent pairs for the
        # share: each an estimate with standard error about 1/sqrt(sample) (docs/audit.md), and
        # the z statistics below are the sample's, so a random order is still not flagged
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(m, sample, replace=False))
        rank = _average_ranks(v[rows])
        rho = float(np.corrcoef(rank, np.arange(sample))[0, 1])
        at = rng.choice(m - 1, sample, replace=False)
        step = v[at + 1] - v[at]  # the sign of a value step is that of its rank step
        m = sample
    else:
        rank = _average_ranks(v)
        rho = float(
            np.corrcoef(rank, np.arange(m))[0, 1]
        )  # ranks of the values against ranks of the rows
        step = np.diff(rank)
    up, down = int(np.count_nonzero(step > 0)), int(np.count_nonzero(step < 0))
    pairs = up + down
    share = up / pairs if pairs else 0.5
    # under a random order: rho·sqrt(m-1) ~ N(0, 1); ascents among P pairs: mean P/2, variance
    # ~(P+2)/12
    z_rho = abs(rho) * math.sqrt(m - 1)
    z_share = abs(up - pairs / 2) / math.sqrt((pairs + 2) / 12) if pairs else 0.0
    informative = (
        offset is not None
        or (abs(rho) >= min_spearman and z_rho >= min_z)
        or (max(share, 1 - share) >= min_share and z_share >= min_z)
    )
    return OrderSignal(str(name), rho, share, pairs, offset, bool(informative))


def row_order(
    frame,
    columns=None,
    *,
    min_spearman: float = 0.5,
    min_monotone_share: float = 0.8,
    min_z: float = 5.0,
    sample: int | None = None,
    seed: int = 0,
) -> RowOrder:
    """Does the input's row order carry information? One ``OrderSignal`` per column that can be
    ordered.

    A file is often stored sorted by an id, a date, a region, or a quasi-identifier; an output
    written in the same order lets anyone holding the original (or any other release of it in
    that order) link records by position, and an order that follows an original QI reveals the
    ranks that microaggregation averaged away. Examined on the ORIGINAL file: for each column
    (numbers, dates, booleans, ordered categories; text as numbers when every value is one,
    else in lexicographic order; missing values left out), the Spearman rank correlation of the
    column with the row number (Spearman 1904; average ranks for ties) and the share of
    ascending steps between neighbouring rows whose values differ (catches files sorted within
    blocks, e.g. by region then income), plus an id equal to the row number up to an offset.
    A column is informative when |rho| >= min_spearman, or the share of steps in one direction
    >= min_monotone_share, each only if it is at least min_z standard deviations away from what
    a random order gives (|rho|·sqrt(m - 1) under H0; ascents among P steps: mean P/2, variance
    about (P + 2)/12, the Eulerian numbers' for distinct values), so that small files in random
    order are not flagged; or when it is the row number plus a constant. Constant columns and
    columns with fewer than 3 values carry no order and are skipped. O(n log n) per column.
    sample: above this many values in a column, rho is computed on a fixed-seed (``seed``)
    sample of that many rows kept in file order and the share on as many adjacent pairs drawn
    at random (standard error about 1/sqrt(sample) each), in O(n + sample log sample); the row
    number check stays exact. None: every row.
    """
    if columns is None:
        columns = list(frame.columns)
    else:
        columns = key_list(frame, columns)
    signals = []
    # a wide file's numeric columns as float64 without a Series each (_order_values' numbers)
    plain = (
        column_arrays(frame, columns, "biuf")
        if len(columns) >= WIDE and frame.columns.is_unique
        else [None] * len(columns)
    )
    for name, array in zip(columns, plain, strict=True):
        if array is not None:
            values = array.astype(np.float64)
        else:
            col = frame[name]
            if getattr(col, "ndim", 1) != 1:  # duplicated header: ambiguous, skipped
                continue
            try:
                values = _order_values(col)
            except (TypeError, ValueError):
                continue
        if values is None:
            continue
        signal = _order_signal(name, values, min_spearman, min_monotone_share, min_z, sample, seed)
        if signal is not None:
            signals.append(signal)
    return RowOrder(tuple(signals))


def shuffle_permutation(n: int, seed=None, *, groups=None) -> np.ndarray:
    """A uniformly random permutation of range(n): publish ``rows[perm]`` to remove the row order.

    seed: None (default) draws fresh entropy from the operating system; an integer or a
    ``numpy.random.SeedSequence`` makes the permutation reproducible, so such a seed must never
    be published (not in the output, not in a run manifest): with it and the software anyone
    can undo the shuffle. groups: optional labels (e.g. household ids), one per row: the groups
    are put in random order and each group's rows stay together, in random order among
    themselves (sdcMicro's ``randomizeRecords = "withinHH"``). numpy ``Generator.permutation``.
    """
    import pandas as pd

    if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    rng = np.random.default_rng(seed)
    if groups is None:
        return rng.permutation(int(n)).astype(np.int64)
    codes = pd.factorize(
        np.asarray(groups, dtype=object) if not hasattr(groups, "dtype") else groups,
        use_na_sentinel=False,
    )[0]
    if len(codes) != n:
        raise ValueError(f"groups must give one label per row ({n}), got {len(codes)}")
    group_rank = rng.permutation(int(codes.max()) + 1 if n else 0)
    within = rng.permutation(int(n))
    return np.lexsort((within, group_rank[codes])).astype(np.int64)


def shuffle_rows(frame, seed=None, *, groups=None):
    """The frame's rows in random order (``shuffle_permutation``), with a fresh 0..n-1 index.

    The index is reset so that it keeps no trace of the original positions; every row is kept
    unchanged (same multiset of rows). groups: a column name or labels, as in
    ``shuffle_permutation``.
    """
    if isinstance(groups, str):
        groups = frame[groups]
    perm = shuffle_permutation(len(frame), seed, groups=groups)
    return frame.iloc[perm].reset_index(drop=True)
