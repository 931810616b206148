"""Strata: groups never cross them. Stratum keys, codes per record, names, and the merging of
strata smaller than k.

The one home for the in-memory pipeline and the out-of-core mode: ``StratumIndex`` turns the
stratum columns of a frame, or of chunk after chunk of a file, into codes 0..S-1 (in order of
first appearance, the same codes whatever the chunking) and sums, per stratum, the rows of the
matrix the method sees; ``StratumIndex.strata`` then reports strata smaller than k, or merges
them (``merge_plan``, on those centroids: the same merges in both modes).
"""

from __future__ import annotations

import numpy as np

from .errors import InputError
from .labels import group_sums

__all__ = [
    "Strata",
    "StratumIndex",
    "stratum_codes",
    "stratum_name",
    "merge_plan",
    "MISSING_KEY",
    "chunk_stratum_publisher",
]

#: the key of a record whose stratum value is missing: such records form a stratum of their own
MISSING_KEY = "<missing>"


class Strata:
    """Records' stratum codes 0..S-1, a name per code, the original strata each code merges, and the
    merges; ``original``: each record's stratum before merging (a merged stratum keeps the code
    of the stratum the others joined)."""

    def __init__(
        self,
        codes: np.ndarray,
        names: list[str],
        members: list[list[str]],
        merges: list[dict],
        original: np.ndarray | None = None,
    ):
        self.codes = codes
        self.names = names
        self.members = members
        self.merges = merges
        self.original = codes if original is None else original

    def mapping(self, how: str) -> list:
        """[{"stratum", "published_as"}] per merged stratum: the value its records publish (the
        name of the stratum it joined; None when suppressed). Empty when nothing was merged."""
        merged_codes = [c for c, m in enumerate(self.members) if len(m) > 1]
        if how == "suppress":
            return [
                {"stratum": name, "published_as": None}
                for c in merged_codes
                for name in self.members[c]
            ]
        # members[c][0]: the stratum the others joined, under its own name
        return [
            {"stratum": name, "published_as": self.members[c][0]}
            for c in merged_codes
            for name in self.members[c][1:]
        ]

    def published_columns(self, frame, columns, how: str) -> dict:
        """What the stratum columns publish once strata smaller than k were merged, so that the
        file stays k-anonymous on its key variables (every group lies inside one merged stratum,
        so a column constant on each merged stratum keeps each group's key combination whole):
        ``how`` = "recode": the records of a stratum that joined another publish that stratum's
        values; "suppress": the records of every merged stratum publish missing values.
        Returns {column: new values (a Series on frame's index)}; nothing when no stratum was
        merged (``mapping`` says what each merged stratum publishes)."""
        if not self.merges:
            return {}
        import pandas as pd

        moved = self.original != self.codes  # records of a stratum that joined another
        merged_codes = [c for c, m in enumerate(self.members) if len(m) > 1]
        out = {}
        if how == "recode":
            first = {}
            for i in np.flatnonzero(np.isin(self.original, merged_codes)):
                first.setdefault(int(self.original[i]), i)  # a record of each merged stratum's own
            source = np.arange(len(self.codes))
            source[moved] = [first[int(c)] for c in self.codes[moved]]
            for col in columns:
                values = frame[col].to_numpy(dtype=object if frame[col].dtype == object else None)
                new = pd.Series(values[source], index=frame.index, name=col)
                out[col] = (
                    new.astype(frame[col].dtype)
                    if not isinstance(frame[col].dtype, pd.CategoricalDtype)
                    else pd.Categorical(new, dtype=frame[col].dtype)
                )
        elif how == "suppress":
            hit = np.isin(self.codes, merged_codes)
            for col in columns:
                new = frame[col].copy()
                if isinstance(new.dtype, pd.CategoricalDtype):
                    new[hit] = np.nan
                elif pd.api.types.is_numeric_dtype(new.dtype) and not pd.api.types.is_bool_dtype(
                    new.dtype
                ):
                    new = new.astype(
                        np.float64
                    )  # missing numbers: NaN (a blank CSV field, '.' in Stata)
                    new[hit] = np.nan
                else:
                    new = new.astype(object)
                    new[hit] = None
                out[col] = new
        else:
            raise ValueError(f"how must be 'recode' or 'suppress', got {how!r}")
        return out

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
    return ", ".join(f"{c}={v}" for c, v in zip(columns, key, strict=False))


class StratumIndex:
    """Stratum keys -> codes, fed a whole frame or chunk after chunk.

    ``encode(frame, Z)`` gives the codes of the frame's records (a key seen before keeps its
    code) and adds each record's row of Z (the matrix the method sees) to its stratum's sum.
    """

    def __init__(self, columns):
        self.columns = list(columns)
        self._codes: dict = {}
        self.counts = np.zeros(0)
        self.sums: np.ndarray | None = None

    def encode(self, frame, Z: np.ndarray) -> np.ndarray:
        import pandas as pd

        cols = self.columns
        keys = frame[cols].astype("object").where(frame[cols].notna(), MISSING_KEY)
        local, uniques = pd.factorize(pd.MultiIndex.from_frame(keys))
        known = np.array(
            [self._codes.setdefault(key, len(self._codes)) for key in uniques], dtype=np.int64
        )
        codes = known[local] if len(local) else np.zeros(0, dtype=np.int64)
        counts, sums = group_sums(Z, codes, len(self._codes))
        if self.sums is None:
            self.counts, self.sums = counts, sums
        else:  # strata first seen in this chunk extend the totals
            grown = len(counts) - len(self.counts)
            self.counts = np.concatenate([self.counts, np.zeros(grown)]) + counts
            self.sums = np.vstack([self.sums, np.zeros((grown, sums.shape[1]))]) + sums
        return codes

    @property
    def names(self) -> list[str]:
        return [stratum_name(key, self.columns) for key in self._codes]

    @property
    def keys(self) -> list[tuple]:
        """Each code's key: its values of the stratum columns (MISSING_KEY for a missing value)."""
        return list(self._codes)

    def strata(
        self, codes: np.ndarray, k: int, merge_small_strata: bool, refuse: bool = False
    ) -> Strata:
        """The strata of the records coded ``codes``. A stratum with fewer than k records is an
        InputError naming it, unless merge_small_strata: then ``merge_plan`` merges it into the
        stratum with the nearest centroid (``refuse``: still an error, saying why)."""
        names = self.names
        counts = np.rint(self.counts).astype(np.int64)
        small = np.flatnonzero(counts < k)
        if small.size and (not merge_small_strata or refuse):
            listed = [f"{names[i]} ({counts[i]} records)" for i in small[:5]]
            raise InputError(
                f"{small.size} stratum/strata smaller than k={k}: {', '.join(listed)}"
                + (" ..." if small.size > 5 else "")
                + (
                    "; merging them is refused (merged_strata='refuse'): a merged stratum must be"
                    " recoded or suppressed in the published stratum column, or the file is not"
                    " k-anonymous on it"
                    if refuse
                    else "; merge them with merge_small_strata=True (--merge-small-strata)"
                )
            )
        if not small.size:
            return Strata(codes, names, [[name] for name in names], [])
        target, names, members, merges = merge_plan(self.counts, self.sums, names, k)
        return Strata(target[codes], names, members, merges, codes)


def stratum_codes(
    df, columns: list, Z: np.ndarray, k: int, merge_small_strata: bool, refuse: bool = False
) -> Strata:
    """The strata of ``df`` by ``columns`` (missing values form a stratum of their own); strata
    smaller than k are an error or merged (``StratumIndex.strata``) on the centroids of Z."""
    index = StratumIndex(columns)
    codes = index.encode(df, Z)
    return index.strata(codes, k, merge_small_strata, refuse)


def merge_plan(counts: np.ndarray, sums: np.ndarray, names: list[str], k: int):
    """From each stratum's record count and sums: (target code per stratum, names, members,
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


def chunk_stratum_publisher(run, found, keys):
    """What the out-of-core mode's pass 4 does to the stratum columns of a chunk starting at
    record ``pos``: nothing, or
    (strata merged) recode / suppress the merged strata as in memory (``Strata.published_columns``):
    a moved record publishes the key of the stratum it joined."""
    if found is None or not found.merges:
        return None
    columns = list(run.strata)
    merged = np.array([len(m) > 1 for m in found.members])

    def publish_keys(df, pos):
        original, final = found.original[pos : pos + len(df)], found.codes[pos : pos + len(df)]
        if run.merged_strata == "recode":
            moved = np.flatnonzero(original != final)
            for j, c in enumerate(columns):
                values = np.array(df[c].astype(object).to_numpy(), dtype=object)
                for i in moved:
                    v = keys[final[i]][j]
                    values[i] = None if v == MISSING_KEY else v
                df[c] = values if df[c].dtype == object else _typed(values, df[c].dtype)
        else:  # suppress
            hit = merged[final]
            for c in columns:
                values = np.array(df[c].astype(object).to_numpy(), dtype=object)
                values[hit] = None
                df[c] = values if df[c].dtype == object else _typed(values, df[c].dtype)

    publish_keys.columns = columns
    return publish_keys


def _typed(values, dtype):
    """Values back in a column's dtype where they fit (a suppressed number: a float column with
    NaN)."""
    import pandas as pd

    try:
        return pd.array(values, dtype=dtype)
    except (TypeError, ValueError):
        return (
            pd.to_numeric(pd.Series(values), errors="coerce").to_numpy()
            if pd.api.types.is_numeric_dtype(dtype)
            else values
        )
