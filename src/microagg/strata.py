"""Strata: groups never cross them. Codes per record, names, and the merging of strata smaller than k.

One home for the in-memory pipeline (api.py) and the partitioned mode (scale.py).
"""

from __future__ import annotations

import numpy as np

from .errors import InputError

__all__ = ["Strata", "stratum_codes", "stratum_name", "merge_small", "merge_plan"]


class Strata:
    """Records' stratum codes 0..S-1, a name per code, the original strata each code merges, and the merges."""

    def __init__(self, codes: np.ndarray, names: list[str], members: list[list[str]], merges: list[dict]):
        self.codes = codes
        self.names = names
        self.members = members
        self.merges = merges

    def rows(self):
        """(code, row indices) per non-empty stratum, in code order."""
        order = np.argsort(self.codes, kind="stable")
        bounds = np.flatnonzero(np.diff(self.codes[order])) + 1
        for rows in np.split(order, bounds):
            if rows.size:
                yield int(self.codes[rows[0]]), rows


def stratum_name(key, columns) -> str:
    """'value' for one stratum column, 'col1=v1, col2=v2' for several."""
    if len(columns) == 1:
        return str(key[0])
    return ", ".join(f"{c}={v}" for c, v in zip(columns, key))


def stratum_codes(df, columns: list, Z: np.ndarray, k: int, merge_small_strata: bool) -> Strata:
    """The strata of ``df`` by ``columns`` (missing values form a stratum of their own).

    A stratum with fewer than k records is an InputError naming it, unless merge_small_strata:
    then ``merge_small`` merges it into the stratum with the nearest centroid of Z.
    """
    import pandas as pd

    keys = df[columns].astype("object").where(df[columns].notna(), "<missing>")
    codes, uniques = pd.factorize(pd.MultiIndex.from_frame(keys))
    codes = codes.astype(np.int64)
    names = [stratum_name(u, columns) for u in uniques]
    counts = np.bincount(codes, minlength=len(names))
    small = np.flatnonzero(counts < k)
    if small.size and not merge_small_strata:
        listed = [f"{names[i]} ({counts[i]} records)" for i in small[:5]]
        raise InputError(
            f"{small.size} stratum/strata smaller than k={k}: {', '.join(listed)}"
            + (" ..." if small.size > 5 else "")
            + "; merge them with merge_small_strata=True (--merge-small-strata)"
        )
    if small.size:
        return merge_small(codes, names, Z, k)
    return Strata(codes, names, [[name] for name in names], [])


def merge_small(codes: np.ndarray, names: list[str], Z: np.ndarray, k: int) -> Strata:
    """Merge strata smaller than k into the stratum whose centroid (of Z, the data the method
    sees) is nearest, smallest first (``merge_plan``)."""
    S = len(names)
    counts = np.bincount(codes, minlength=S).astype(np.float64)
    sums = np.zeros((S, Z.shape[1]))
    np.add.at(sums, codes, Z)
    target, names, members, merges = merge_plan(counts, sums, names, k)
    return Strata(target[codes], names, members, merges)


def merge_plan(counts: np.ndarray, sums: np.ndarray, names: list[str], k: int):
    """From each stratum's record count and QI sums: (target code per stratum, names, members,
    merges). The smallest stratum below k joins the stratum with the nearest centroid, until none
    is below k or only one is left."""
    S = len(names)
    names = list(names)
    counts = np.asarray(counts, dtype=np.float64).copy()
    sums = np.asarray(sums, dtype=np.float64).copy()
    active = counts > 0
    target = np.arange(S)
    members = [[name] for name in names]
    merges = []
    while True:
        small = np.flatnonzero(active & (counts < k))
        if small.size == 0 or active.sum() < 2:
            break
        s = int(small[np.argmin(counts[small])])
        others = np.flatnonzero(active)
        others = others[others != s]
        cent = sums[others] / counts[others, None]
        t = int(others[np.argmin(((cent - sums[s] / counts[s]) ** 2).sum(axis=1))])
        merges.append({"stratum": names[s], "size": int(counts[s]), "merged_into": names[t]})
        counts[t] += counts[s]
        sums[t] += sums[s]
        counts[s] = 0
        active[s] = False
        target[target == s] = t
        names[t] = f"{names[t]}+{names[s]}"
        members[t] += members[s]
    return target, names, members, merges
