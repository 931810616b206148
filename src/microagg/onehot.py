"""Nominal QIs with many levels kept as their level codes (issue 57): the embedding's one-hot
blocks (``embedding``) are never materialised, so a run costs n × (columns), not n × levels.

``OneHot`` holds what the dense embedding holds, as (numeric columns, level codes, each nominal
column's one-hot entry u_j). Every figure of the dense matrix that a default run needs follows
from the codes alone (nominal column j, a group of m records with cnt_l of level l):

* SSE to the group means:            u_j²·(m − Σ_l cnt_l² / m)        (summed over the groups)
* SST:                               u_j²·(n − Σ_l cnt_l² / n)        (over the whole file)
* ‖z − z'‖² between two records:     2·u_j²·[a ≠ b]
* distances to a centroid:           ``kernels.mdav_onehot``

MDAV (the default method) runs on it (``kernels.mdav_onehot``). Everything else that asks for
the dense matrix gets it (``np.asarray``) when it holds at most DENSE_MAX_CELLS values, else
one error line naming the column, its levels and what handles it (``dense``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .errors import InputError

__all__ = [
    "WIDE_ONEHOT",
    "DENSE_MAX_CELLS",
    "OneHot",
    "sq_distance",
    "scaled",
]

#: from this many one-hot columns (every nominal QI's levels summed) the embedding keeps codes:
#: below, the dense kernels stay, so that every run of fewer columns gives what it gave (label
#: fingerprints, published figures: the codes' sums are the dense ones in another order).
#: Measured (benchmarks/category_levels.py, results/category_levels.md; 10^4 records, k = 3):
#: the dense MDAV costs what the codes' kernel costs at 16 one-hot columns (0.05 s), 3x at 64,
#: 20x at 256, where the codes' cost does not change with the levels; at 10^5 records (the
#: dense tree kernel) as much at 32 columns (5.6 s), 4x at 64
WIDE_ONEHOT = 64
#: the most values of a dense embedding built for what cannot read codes (other methods,
#: households, privacy models): 5·10^7 float64 values, 400 MB
DENSE_MAX_CELLS = 50_000_000
#: what handles many levels without the dense matrix (the error line says it)
HANDLED_BY = (
    "method mdav (the default) without a household id, the partitioned mode or a privacy model"
)


@dataclass(frozen=True)
class OneHot:
    """The embedding of n records with its nominal columns as codes.

    ``numeric`` (n, p): the continuous and ordinal columns (z-scores, whitened or weighted as the
    matrix is); ``codes`` (n, q): each nominal column's level index; ``units`` (q,): its one-hot
    entry; ``sizes`` (q,): its number of levels; ``layout``: per QI column in order, ("numeric",
    i) or ("nominal", j); ``names``: the nominal columns' names (for the error line)."""

    numeric: np.ndarray
    codes: np.ndarray
    units: np.ndarray
    sizes: np.ndarray
    layout: tuple
    names: tuple

    # --- what code asking for a matrix reads ----------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.codes), self.numeric.shape[1] + int(self.sizes.sum()))

    ndim = 2
    dtype = np.dtype(np.float64)

    def __len__(self) -> int:
        return len(self.codes)

    def __array__(self, dtype=None, copy=None):
        out = self.dense()
        return out if dtype is None else out.astype(dtype)

    def __getitem__(self, rows):
        """Rows (an index array, a mask or a slice) as a OneHot; anything else on the dense
        matrix (``dense``)."""
        if isinstance(rows, tuple):
            return self.dense()[rows]
        return replace(self, numeric=self.numeric[rows], codes=self.codes[rows])

    def dense(self, why: str = "") -> np.ndarray:
        """The dense embedding, columns in QI order (a nominal column: its one-hot block); one
        InputError line when it would hold more than DENSE_MAX_CELLS values (``why``: what needs
        it, said in the line)."""
        n, width = self.shape
        if n * width > DENSE_MAX_CELLS:
            self._refuse(n, f"{n:,} records", why)
        parts = []
        for kind, i in self.layout:
            if kind == "numeric":
                parts.append(self.numeric[:, [i]])
            else:
                block = np.zeros((n, int(self.sizes[i])))
                block[np.arange(n), self.codes[:, i]] = self.units[i]
                parts.append(block)
        return np.ascontiguousarray(np.hstack(parts), dtype=np.float64)

    def _refuse(self, rows: int, what: str, why: str):
        """The one error line: a dense matrix of ``rows`` rows (``what``) is beyond the bound."""
        j = int(np.argmax(self.sizes))
        raise InputError(
            f"categorical column {self.names[j]} has {int(self.sizes[j]):,} levels: "
            f"{why or 'this run'} needs its one-hot embedding of {what} "
            f"({rows * self.shape[1] * 8 / 2**30:.1f} GiB, beyond the "
            f"{DENSE_MAX_CELLS * 8 / 2**20:.0f} MiB allowed); many levels are handled by "
            f"{HANDLED_BY}, or merge the levels"
        )

    def starts(self) -> np.ndarray:
        """Position in the dense matrix of each QI column (its block's first column)."""
        widths = [1 if kind == "numeric" else int(self.sizes[i]) for kind, i in self.layout]
        return np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int64)

    def weighted(self, per_column: np.ndarray) -> OneHot:
        """Each QI column scaled by the square root of its weight (one per QI column)."""
        root = np.sqrt(np.asarray(per_column, dtype=np.float64))
        numeric, units = self.numeric.copy(), self.units.copy()
        for (kind, i), r in zip(self.layout, root):
            if kind == "numeric":
                numeric[:, i] *= r
            else:
                units[i] *= r
        return replace(self, numeric=np.ascontiguousarray(numeric), units=units)

    def group_sums(self, labels: np.ndarray, g: int, w: np.ndarray) -> np.ndarray:
        """(g, width) sums of the dense rows per group 0..g−1, rows weighted by w
        (``labels.group_sums``; strata's centroids): built from the codes, within
        DENSE_MAX_CELLS values (else the error line of ``dense``)."""
        width = self.shape[1]
        if g * width > DENSE_MAX_CELLS:
            self._refuse(g, f"{g:,} groups' sums", "")
        parts = []
        for kind, i in self.layout:
            if kind == "numeric":
                x = self.numeric[:, i]
                parts.append(np.bincount(labels, weights=w * x, minlength=g)[:, None])
            else:
                size = int(self.sizes[i])
                flat = np.bincount(labels * size + self.codes[:, i], weights=w, minlength=g * size)
                parts.append(self.units[i] * flat.reshape(g, size))
        return np.hstack(parts) if parts else np.empty((g, 0))

    # --- the figures, from the codes --------------------------------------------------------------
    def nominal_sse(self, labels: np.ndarray) -> float:
        """The nominal blocks' within-group sum of squares to the group means."""
        labels = np.asarray(labels, dtype=np.int64)
        sizes = np.bincount(labels).astype(np.float64)
        total = 0.0
        for j in range(self.codes.shape[1]):
            pair = labels * int(self.sizes[j]) + self.codes[:, j]
            key, count = np.unique(pair, return_counts=True)
            same = float(np.sum(count.astype(np.float64) ** 2 / sizes[key // int(self.sizes[j])]))
            total += self.units[j] ** 2 * (len(labels) - same)
        return float(total)

    def nominal_sst(self) -> float:
        """The nominal blocks' sum of squares about their overall mean."""
        n = len(self.codes)
        total = 0.0
        for j in range(self.codes.shape[1]):
            count = np.bincount(self.codes[:, j]).astype(np.float64)
            total += self.units[j] ** 2 * (n - float(np.sum(count**2)) / n)
        return float(total)

    def mismatches(self, other: OneHot, per_column=None) -> float:
        """Σ over the nominal blocks of ‖z − z'‖² against another OneHot of the same records
        (each column weighted by ``per_column``, its weight among the nominal ones, when given)."""
        total = 0.0
        for j in range(self.codes.shape[1]):
            differ = float(np.count_nonzero(self.codes[:, j] != other.codes[:, j]))
            w = 1.0 if per_column is None else float(per_column[j])
            total += w * 2.0 * self.units[j] ** 2 * differ
        return total


def il_per_column(Z: OneHot, columns, labels) -> dict:
    """Each QI column's 100·SSE_j/SST_j (``display.il_per_variable``), a nominal one over its
    whole block (the dense matrix's figure is per one-hot column)."""
    labels = np.unique(np.asarray(labels), return_inverse=True)[1].ravel()
    counts = np.bincount(labels)
    out = {}
    for c, (kind, i) in zip(columns, Z.layout):
        if kind == "numeric":
            x = Z.numeric[:, i]
            means = np.bincount(labels, weights=x) / np.maximum(counts, 1)
            within = float(np.sum((x - means[labels]) ** 2))
            total = float(np.sum((x - x.mean()) ** 2))
        else:
            part = replace(
                Z, codes=Z.codes[:, [i]], units=Z.units[[i]], sizes=Z.sizes[[i]], names=(c,)
            )
            within, total = part.nominal_sse(labels), part.nominal_sst()
        out[str(c)] = 100.0 * within / total if total > 0 else 0.0
    return out


def sq_distance(Z, Zp, weights=None) -> float:
    """Σ w·(Z − Zp)² over the present values (NaN adds nothing), for dense matrices or two
    OneHot of the same records; ``weights``: one per dense column, or None."""
    if not isinstance(Z, OneHot):
        diff = (np.asarray(Z) - np.asarray(Zp)) ** 2
        return float(np.nansum(diff if weights is None else weights * diff))
    diff = (Z.numeric - Zp.numeric) ** 2
    if weights is None:
        return float(np.nansum(diff)) + Z.mismatches(Zp)
    w = np.asarray(weights)[Z.starts()]
    numeric_w = np.array([w[c] for c, (kind, _) in enumerate(Z.layout) if kind == "numeric"])
    nominal_w = [w[c] for c, (kind, _) in enumerate(Z.layout) if kind == "nominal"]
    return float(np.nansum(numeric_w * diff)) + Z.mismatches(Zp, nominal_w)


def scaled(Z, weights):
    """Z with each column scaled by the square root of its weight (one per dense column)."""
    if isinstance(Z, OneHot):
        return Z.weighted(np.asarray(weights)[Z.starts()])
    return Z * np.sqrt(weights)


def numeric_part(Z):
    """The columns that may hold missing values (NaN): a OneHot's numeric ones (codes are never
    missing), a dense matrix as it is."""
    return Z.numeric if isinstance(Z, OneHot) else Z
