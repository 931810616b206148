"""t-closeness of sensitive columns: the Earth Mover's Distance (EMD) between each group's
distribution of a sensitive column and the whole file's (Li, Li & Venkatasubramanian 2007,
"t-Closeness: privacy beyond k-anonymity and l-diversity", ICDE, section 4.2; Soria-Comas,
Domingo-Ferrer, Sanchez & Martinez 2015, "t-Closeness through microaggregation", IEEE TKDE
27(11), section 3).

Ground distances, as in both papers:

* ordered (a numeric column): the m distinct values of the whole file in increasing order, the
  distance between the i-th and the j-th is |i - j| / (m - 1); then
  EMD(P, Q) = 1/(m - 1) * sum_{i=1}^{m-1} |sum_{j<=i} (p_j - q_j)|  (Li et al., eq. in 4.2).
  With every value distinct this is the rank distance of Soria-Comas et al.;
* equal (a categorical column): every two distinct values at distance 1; EMD(P, Q) =
  1/2 * sum_i |p_i - q_i| (the total variation distance).

A missing value is a value of its own (after the largest, for an ordered column). EMD against a
fixed Q is convex in P, so the union of two t-close groups is t-close: a file whose published key
combinations join some groups is t-close when its groups are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SensitiveScale", "group_emd", "largest_emd", "t_closeness"]


@dataclass(frozen=True)
class SensitiveScale:
    """One sensitive column over the whole file: each record's value code (0..m-1, in increasing
    order for an ordered column), the file's share of each value and the ground distance."""

    column: str
    codes: np.ndarray  # int64, one per record
    shares: np.ndarray  # the whole file's distribution Q, length m
    ordered: bool

    @classmethod
    def of(cls, values, column="", ordered: bool | None = None) -> SensitiveScale:
        """The scale of a column's values (``ordered``: None, numeric columns are ordered)."""
        import pandas as pd

        series = pd.Series(values)
        if ordered is None:
            ordered = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(
                series
            )
        if ordered:
            x = series.to_numpy(dtype=np.float64, na_value=np.nan)
            missing = np.isnan(x)
            distinct, codes = np.unique(x[~missing], return_inverse=True)
            out = np.full(len(x), len(distinct), dtype=np.int64)  # missing: after the largest
            out[~missing] = codes
        else:
            out = pd.factorize(series, use_na_sentinel=False)[0].astype(np.int64)
        m = int(out.max()) + 1 if out.size else 1
        shares = np.bincount(out, minlength=m) / max(len(out), 1)
        return cls(str(column), out, shares, bool(ordered))

    @property
    def m(self) -> int:
        return int(self.shares.size)

    def emd_of_counts(self, counts: np.ndarray) -> float:
        """EMD of a group given its count of each value (length m) against the file's."""
        p = counts / counts.sum()
        if not self.ordered:
            return float(0.5 * np.abs(p - self.shares).sum())
        if self.m < 2:
            return 0.0
        cum = np.cumsum(p - self.shares)[:-1]
        return float(np.abs(cum).sum() / (self.m - 1))

    def emd_adding_each(self, counts: np.ndarray) -> np.ndarray:
        """EMD of the group with one more record of value v, for every v (length m): O(m)."""
        s = counts.sum() + 1.0
        q = self.shares
        if not self.ordered:
            base = np.abs(counts / s - q)
            return 0.5 * (base.sum() - base + np.abs((counts + 1.0) / s - q))
        if self.m < 2:
            return np.zeros(self.m)
        H, Q = np.cumsum(counts)[:-1], np.cumsum(q)[:-1]
        below = np.concatenate(([0.0], np.cumsum(np.abs(H / s - Q))))  # i < v: F_p = H/s
        above = np.abs((H + 1.0) / s - Q)  # i >= v: F_p = (H + 1)/s
        after = np.concatenate((np.cumsum(above[::-1])[::-1], [0.0]))
        return (below + after) / (self.m - 1)


def group_emd(
    scale: SensitiveScale, groups: np.ndarray, codes: np.ndarray | None = None
) -> np.ndarray:
    """The EMD of every group (``groups``: codes 0..G-1, one per record) against the file:
    vectorised over all groups, O(n log n) time and O(n) memory (no G x m matrix). ``codes``:
    the value codes of the records grouped (default: every record of the file, in order)."""
    groups = np.asarray(groups, dtype=np.int64)
    codes = scale.codes if codes is None else codes
    G = int(groups.max()) + 1 if groups.size else 0
    m = scale.m
    pairs, counts = np.unique(groups * m + codes, return_counts=True)
    g, v = pairs // m, pairs % m
    size = np.bincount(groups, minlength=G).astype(np.float64)
    p = counts / size[g]
    if not scale.ordered:
        q = scale.shares[v]
        present = np.bincount(g, weights=np.abs(p - q) - q, minlength=G)
        # absent values add their q_v: 1 - sum of present q (an empty group: 0)
        return np.where(size > 0, 0.5 * (1.0 + present), 0.0)
    if m < 2:
        return np.zeros(G)
    # F_p is a step function: 0 before the group's first value, then its cumulative share c_l on
    # [v_l, v_{l+1}), 1 from its last value; sum |c - Q(i)| over a range by prefix sums of Q,
    # split where the nondecreasing Q crosses c.
    Q = np.cumsum(scale.shares)[:-1]  # Q(i), i = 0..m-2
    PQ = np.concatenate(([0.0], np.cumsum(Q)))
    first = np.r_[True, g[1:] != g[:-1]]
    last = np.r_[g[1:] != g[:-1], True]
    running = np.cumsum(counts)  # exact integers; minus the counts of the groups before
    before = np.repeat(
        running[last] - np.bincount(g, weights=counts, minlength=G)[g[last]],
        np.diff(np.r_[np.flatnonzero(first), len(g)]),
    )
    c = (running - before) / size[g]
    end = np.where(last, m - 1, np.r_[v[1:], 0])
    starts = np.concatenate((np.zeros(int(first.sum()), dtype=np.int64), v))
    ends = np.concatenate((v[first], end))
    levels = np.concatenate((np.zeros(int(first.sum())), c))
    owner = np.concatenate((g[first], g))
    a = starts
    b = np.maximum(np.minimum(ends, m - 1), a)
    t = np.clip(np.searchsorted(Q, levels, side="left"), a, b)
    part = levels * (t - a) - (PQ[t] - PQ[a]) + (PQ[b] - PQ[t]) - levels * (b - t)
    return np.bincount(owner, weights=part, minlength=G) / (m - 1)


def largest_emd(scale: SensitiveScale, groups: np.ndarray) -> float:
    """The largest EMD of a group against the file (0 for an empty file)."""
    emd = group_emd(scale, groups)
    return float(emd.max()) if emd.size else 0.0


def t_closeness(frame, keys, sensitive) -> dict:
    """{sensitive column: the largest EMD of a key combination's distribution against the file's}
    (a missing key value is a value of its own here, as in ``l_diversity``)."""
    from ..records import combination_codes, key_list

    keys, sensitive = key_list(frame, keys), key_list(frame, sensitive)
    both = sorted(set(keys) & set(sensitive), key=str)
    if both:
        raise ValueError(
            f"a sensitive column cannot be a key variable: {', '.join(map(str, both))}"
        )
    combination = combination_codes(frame, keys)
    return {
        str(col): largest_emd(SensitiveScale.of(frame[col], col), combination) for col in sensitive
    }
