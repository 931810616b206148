"""Heterogeneous quasi-identifiers: column kinds, the embedding every method sees, its whitening.

Quasi-identifier (QI) columns are continuous, ordinal or nominal. Methods only ever see one
float matrix (their contract is unchanged); this module builds it so that its squared Euclidean
distance is a documented Gower-type distance between records (Domingo-Ferrer & Torra 2005,
"Ordinal, continuous and heterogeneous k-anonymity through microaggregation", Data Min. Knowl.
Disc. 11(2); Gower 1971 for the idea of summing per-variable dissimilarities of each kind):

    d(x, y)^2 = sum_continuous ((x_j - y_j) / s_j)^2          z-scores (standardize.Standardizer)
              + sum_ordinal    ((r_j(x) - r_j(y)) / s_rj)^2    rank of the category, z-scored
              + sum_nominal    NOMINAL_WEIGHT * [x_j != y_j]   one-hot, entries sqrt(w/2)

* continuous: z-scores, as for every method (the Standardizer is their one home).
* ordinal: the category's rank 0..L-1 among the column's levels (an ordered pandas Categorical
  keeps its declared categories and order; numbers and text are ranked by sorted observed value),
  then z-scored like a continuous column, so an ordinal column has unit variance and weighs like
  one continuous column; neighbouring categories are one rank apart whatever their codes.
* nominal: one-hot with entries sqrt(NOMINAL_WEIGHT / 2): two different categories are at
  squared distance NOMINAL_WEIGHT = 2, which is the expected squared distance between two records
  drawn at random from a z-scored continuous column (2·variance), so a mismatch costs what a
  typical difference costs in one continuous column; equal categories are at distance 0.

The run option ``distance`` then selects a whitening of the continuous part (``whitening``):
"euclidean" (none: the z-scores above), "mahalanobis" or "robust" (an MCD covariance), so that
the Euclidean distance of the method's matrix is a Mahalanobis distance. Information loss is
always reported on the embedding above (the standard z-score figure), not on the whitened matrix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from .columns import (
    default_columns,
    first_non_number,
    quasi_identifiers,
    refuse_mixed_marks,
    select_columns,
)
from .errors import InputError, RolesWarning, option_term, shown
from .standardize import Standardizer
from .whitening import WHITENINGS, whiten

__all__ = [
    "KINDS",
    "NOMINAL_WEIGHT",
    "column_kinds",
    "select_qi",
    "select_qi_roles",
    "Embedding",
    "embed",
    "method_matrix",
]

KINDS = ("continuous", "ordinal", "nominal")
#: squared distance between two different categories of a nominal column (see module docstring)
NOMINAL_WEIGHT = 2.0


def column_kinds(
    df: pd.DataFrame, cols: list, categorical=(), ordinal=(), missing=(), continuous=()
) -> dict:
    """Kind of each QI column: declared first, else from the column itself.

    Declared ``categorical`` -> nominal, ``ordinal`` -> ordinal, ``continuous`` -> continuous.
    Undeclared: an unordered pandas Categorical or a bool column -> nominal, an ordered
    Categorical -> ordinal; a numeric column that looks like category codes
    (``columns.code_columns``: value labels, an SPSS measure nominal / ordinal, few distinct
    integers, a code-like name) -> nominal, or ordinal under an SPSS measure ordinal, with one
    warning naming them (no code is averaged unless declared continuous); another numeric column
    -> continuous; text columns must be declared (InputError otherwise).
    """
    from .columns import code_columns, leading_zero_codes

    declared = set(categorical) | set(ordinal) | set(continuous)
    codes = code_columns(df, [c for c in cols if c not in declared])
    measured_ordinal = set(df.attrs.get("ordinal", ()))
    kinds, as_codes = {}, []
    for c in cols:
        s = df[c]
        if c in categorical:
            kinds[c] = "nominal"
        elif c in ordinal:
            kinds[c] = "ordinal"
        elif c in continuous:
            if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
                if (bad := first_non_number(s, set(missing))) is not None:
                    raise InputError(
                        f"column {c} is declared continuous but is not numeric: row {bad[0]} holds "
                        f"{shown(bad[1])}"
                    )
            kinds[c] = "continuous"
        elif isinstance(s.dtype, pd.CategoricalDtype):
            kinds[c] = "ordinal" if s.dtype.ordered else "nominal"
        elif pd.api.types.is_bool_dtype(s):
            kinds[c] = "nominal"
        elif pd.api.types.is_numeric_dtype(s):
            if c in codes:
                kinds[c] = "ordinal" if c in measured_ordinal else "nominal"
                as_codes.append(f"{c} ({codes[c]})")
            else:
                kinds[c] = "continuous"
        elif (bad := first_non_number(s, set(missing))) is None:
            # numbers written as text (issue 14): continuous, unless written as codes are
            if why := leading_zero_codes(s):
                kinds[c] = "nominal"
                as_codes.append(f"{c} ({why.split(';')[0]})")
            else:
                kinds[c] = "continuous"
        else:
            raise InputError(
                f"quasi-identifier column {c} is not numeric: row {bad[0]} holds {shown(bad[1])}; "
                f"declare it with {option_term('categorical')} or {option_term('ordinal')}"
            )
    if as_codes:
        import warnings

        warnings.warn(
            f"quasi-identifier column(s) {', '.join(as_codes)} look like category codes: they are"
            " protected as categories (nominal: the group's most frequent code; ordinal: its"
            f" median code), never averaged; declare them continuous ({option_term('continuous')})"
            " to publish group means",
            RolesWarning,
            stacklevel=4,
        )
    return kinds


def select_qi(
    df: pd.DataFrame,
    columns,
    exclude,
    categorical=(),
    ordinal=(),
    missing=(),
    continuous=(),
    household=None,
) -> tuple[list, dict]:
    """(QI columns, kinds). Default columns: every numeric column the column rules take (and the
    ones declared continuous) plus the declared categorical / ordinal ones.

    Columns declared categorical / ordinal / continuous must be quasi-identifiers: when
    ``columns`` is given they must be among them. Undeclared pandas Categorical columns are QIs
    only when named. ``household``: the declared household id (the weights rule reads within it).
    """
    cols, kinds, _ = select_qi_roles(
        df, columns, exclude, categorical, ordinal, missing, continuous, household
    )
    return cols, kinds


def select_qi_roles(
    df: pd.DataFrame,
    columns,
    exclude,
    categorical=(),
    ordinal=(),
    missing=(),
    continuous=(),
    household=None,
) -> tuple[list, dict, tuple]:
    """``select_qi``'s (QI columns, kinds) and the numeric columns the default rules left out, as
    (column, why) pairs (none when ``columns`` is named): the summary names them."""
    declared = list(categorical) + list(ordinal)
    unknown = [c for c in declared + list(continuous) if c not in df.columns]
    if unknown:
        raise InputError(
            "unknown column(s) declared categorical/ordinal/continuous:"
            f" {', '.join(map(str, unknown))}"
        )
    excluded = [c for c in declared + list(continuous) if c in set(exclude)]
    if excluded:
        raise InputError(
            f"column(s) {', '.join(map(str, excluded))} declared categorical/ordinal/continuous "
            "but used as stratum, sample weight or another role"
        )
    left_out: list = []
    if columns is None:
        # the default numeric columns under the same rules (identifiers, stray tokens) with or
        # without declarations
        numeric, left_out = default_columns(
            df, list(exclude) + declared, missing, bool(declared), continuous, household
        )
        chosen = set(numeric) | set(declared)
        cols = [c for c in df.columns if c in chosen]
    else:
        if isinstance(columns, str):
            columns = [c.strip() for c in columns.split(",") if c.strip()]
        columns = list(columns)
        if not columns:
            raise InputError("no quasi-identifier columns given")
        if len(set(columns)) != len(columns) or any(c not in df.columns for c in columns):
            select_columns(
                df, columns, exclude
            )  # the usual one-line error for duplicates / unknown names
        for c in [c for c in columns if c not in declared]:  # (categories: their text)
            refuse_mixed_marks(df, c)
        outside = [c for c in declared + list(continuous) if c not in columns]
        if outside:
            raise InputError(
                "column(s) declared categorical/ordinal/continuous but not among the"
                f" quasi-identifier columns: {', '.join(map(str, outside))}"
            )
        cols = columns
    return cols, column_kinds(df, cols, categorical, ordinal, missing, continuous), tuple(left_out)


def _levels(s: pd.Series) -> pd.Index:
    """The column's levels in their documented order (ranks for ordinal, tie order for nominal).

    A pandas Categorical keeps its declared categories in their declared order; other columns
    use their observed values sorted (numbers ascending, text lexicographically).
    """
    if isinstance(s.dtype, pd.CategoricalDtype):
        return pd.Index(s.cat.categories)
    values = pd.unique(s.dropna())
    try:
        return pd.Index(np.sort(values))
    except TypeError:  # mixed types: order by text
        return pd.Index(sorted(values, key=str))


@dataclass
class Embedding:
    """The QI columns of one run, their kinds and levels, and the float matrix methods see.

    ``numeric`` (n, p) holds the continuous values and the ordinal ranks (``numeric_columns``,
    in QI order), ``codes`` (n, q) the level index of each categorical (ordinal or nominal) column
    (in ``categorical_columns`` order). ``scaler`` z-scores ``numeric``; ``matrix`` is the
    embedding of the module docstring (before any distance whitening), its columns in QI
    order (a nominal column takes one column per level).
    """

    columns: list
    kinds: dict
    numeric_columns: list
    categorical_columns: list
    levels: dict
    numeric: np.ndarray
    codes: np.ndarray
    scaler: Standardizer
    matrix: np.ndarray = field(repr=False)
    #: the nominal columns kept as codes (``onehot.OneHot``): their one-hot blocks are wide
    compact: bool = False

    @cached_property
    def _numeric_position(self) -> dict:  # column -> its index in numeric (a wide file's lookups)
        return {c: i for i, c in enumerate(self.numeric_columns)}

    @property
    def heterogeneous(self) -> bool:
        return bool(self.categorical_columns)

    @property
    def continuous_columns(self) -> list:
        return [c for c in self.columns if self.kinds[c] == "continuous"]

    def column_slices(self) -> dict:
        """Column -> slice of ``matrix`` holding it (one column, or the one-hot block of a nominal
        one)."""
        out, at = {}, 0
        for c in self.columns:
            width = len(self.levels[c]) if self.kinds[c] == "nominal" else 1
            out[c] = slice(at, at + width)
            at += width
        return out

    def continuous_positions(self) -> np.ndarray:
        """Positions in ``matrix`` of the continuous columns."""
        slices = self.column_slices()
        return np.array([slices[c].start for c in self.continuous_columns], dtype=np.int64)

    def widths(self) -> np.ndarray:
        """Number of ``matrix`` columns per QI column (1, or the levels of a nominal one)."""
        return np.array([s.stop - s.start for s in self.column_slices().values()], dtype=np.int64)

    def embed(self, numeric: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """The embedding of (continuous values and ordinal ranks, category codes), columns in QI
        order."""
        Zn = self.scaler.transform(numeric)
        if (
            self.numeric_columns == self.columns
        ):  # no nominal column, QI order: the z-scores as they are
            return np.ascontiguousarray(Zn, dtype=np.float64)
        if self.compact:
            return self._codes_kept(Zn, codes)
        unit = np.sqrt(NOMINAL_WEIGHT / 2.0)
        parts = []
        for c in self.columns:
            if self.kinds[c] == "nominal":
                onehot = np.zeros((len(codes), len(self.levels[c])))
                onehot[np.arange(len(codes)), codes[:, self.categorical_columns.index(c)]] = unit
                parts.append(onehot)
            else:
                parts.append(Zn[:, [self._numeric_position[c]]])
        return np.ascontiguousarray(np.hstack(parts), dtype=np.float64)

    def nominal_columns(self) -> list:
        return [c for c in self.columns if self.kinds[c] == "nominal"]

    def onehot_width(self) -> int:
        """The number of one-hot columns of the nominal QIs (their levels summed)."""
        return sum(len(self.levels[c]) for c in self.nominal_columns())

    def _codes_kept(self, Zn: np.ndarray, codes: np.ndarray):
        """``embed``'s matrix as a ``onehot.OneHot``: the same distances, the nominal columns as
        codes."""
        from .onehot import OneHot

        nominal = self.nominal_columns()
        layout = tuple(
            ("nominal", nominal.index(c))
            if self.kinds[c] == "nominal"
            else ("numeric", self._numeric_position[c])
            for c in self.columns
        )
        at = [self.categorical_columns.index(c) for c in nominal]
        return OneHot(
            np.ascontiguousarray(Zn, dtype=np.float64),
            np.ascontiguousarray(codes[:, at], dtype=np.int64),
            np.full(len(nominal), np.sqrt(NOMINAL_WEIGHT / 2.0)),
            np.array([len(self.levels[c]) for c in nominal], dtype=np.int64),
            layout,
            tuple(nominal),
        )

    def values_of(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(numeric, codes) of another file's QI columns (a protected file) on this embedding's
        columns, levels and order, for ``embed``: continuous values as numbers, ordinal and
        nominal values as their level's index. A category that is not among this embedding's
        levels, or a missing value, is an InputError naming the column."""
        numeric = np.empty((len(frame), len(self.numeric_columns)))
        codes = np.empty((len(frame), len(self.categorical_columns)), dtype=np.int64)
        for c in self.columns:
            if c not in frame.columns:
                raise InputError(f"quasi-identifier column {c} is missing from the protected file")
            if self.kinds[c] == "continuous":
                numeric[:, self._numeric_position[c]] = quasi_identifiers(
                    frame, [c], allow_missing=True
                )[:, 0]
                continue
            s = frame[c]
            values = s.astype(object) if isinstance(s.dtype, pd.CategoricalDtype) else s
            at = self.levels[c].get_indexer(pd.Index(np.asarray(values, dtype=object)))
            if (at < 0).any():
                bad = pd.unique(s[at < 0])[:3]
                raise InputError(
                    f"protected column {c} holds value(s) that are not categories of the original: "
                    f"{', '.join(map(repr, bad))}"
                )
            codes[:, self.categorical_columns.index(c)] = at
            if self.kinds[c] == "ordinal":
                numeric[:, self._numeric_position[c]] = at
        return numeric, codes

    def published_column(
        self, c, numeric: np.ndarray, codes: np.ndarray, original: pd.Series | None = None
    ):
        """Column c's published values: floats for continuous, categories (the column's dtype)
        otherwise."""
        if self.kinds[c] == "continuous":
            return numeric[:, self._numeric_position[c]]
        col_codes = codes[:, self.categorical_columns.index(c)]
        if original is not None and isinstance(original.dtype, pd.CategoricalDtype):
            return pd.Categorical.from_codes(col_codes, dtype=original.dtype)
        values = self.levels[c].take(col_codes).to_numpy()
        return (
            values
            if original is None
            else pd.Series(values, index=original.index).astype(original.dtype)
        )


def embed(
    df: pd.DataFrame,
    cols: list,
    kinds: dict,
    standardize: bool = True,
    levels=None,
    missing=(),
    compact: bool | None = None,
) -> Embedding:
    """Build the Embedding of ``df[cols]``. A missing value of a continuous column (an empty
    cell, NA or a ``missing`` token) stays NaN in ``numeric`` and ``matrix`` (the methods group on
    ``missing_values.grouping_matrix``); one of a categorical column is an InputError naming it.

    levels: column -> declared levels (lowest first) of ordinal columns, overriding ``_levels``;
    a value outside them is an InputError. compact: keep the nominal columns as codes
    (``onehot.OneHot``); None: when their one-hot blocks are wide (``onehot.WIDE_ONEHOT``).
    """
    declared = {c: v for c, v in (levels or {}).items() if v is not None}
    categorical = [c for c in cols if kinds[c] != "continuous"]
    continuous = [c for c in cols if kinds[c] == "continuous"]
    X = (
        quasi_identifiers(df, continuous, missing, allow_missing=True)
        if continuous
        else np.empty((len(df), 0))
    )
    tokens = {str(t).strip() for t in missing or ()}
    levels, code_cols, missing = {}, [], []
    for c in categorical:
        # a blank text cell or a declared-missing token is missing, not a category of its own
        blank = np.fromiter(
            (
                isinstance(v, str) and (not v.strip() or v.strip() in tokens)
                for v in df[c].to_numpy(dtype=object)
            ),
            dtype=bool,
            count=len(df),
        )
        if blank.any():
            missing.append(f"{c} ({int(blank.sum())} rows)")
            continue
        lev = pd.Index(declared[c]) if c in declared else _levels(df[c])
        if isinstance(df[c].dtype, pd.CategoricalDtype) and c not in declared:
            codes = df[c].cat.codes.to_numpy()
        else:
            codes = lev.get_indexer(
                pd.Index(np.asarray(df[c], dtype=object))
            )  # -1: missing or undeclared
        codes = np.asarray(codes, dtype=np.int64)
        outside = (codes < 0) & df[c].notna().to_numpy()
        if outside.any():
            raise InputError(
                f"ordinal column {c} has value(s) outside its declared levels: "
                f"{', '.join(map(repr, pd.unique(df[c][outside])[:5]))}"
            )
        if (codes < 0).any():
            missing.append(f"{c} ({int((codes < 0).sum())} rows)")
        levels[c] = lev
        code_cols.append(codes)
    if missing:
        raise InputError("missing values in quasi-identifier column(s): " + ", ".join(missing))
    codes = np.column_stack(code_cols) if code_cols else np.empty((len(df), 0), dtype=np.int64)
    ordinal = [c for c in categorical if kinds[c] == "ordinal"]
    ranks = codes[:, [categorical.index(c) for c in ordinal]].astype(np.float64)
    numeric = np.hstack([X, ranks]) if ordinal else X
    order = {c: i for i, c in enumerate(continuous + ordinal)}
    numeric_columns = [c for c in cols if c in order]  # QI order
    numeric = numeric[:, [order[c] for c in numeric_columns]]
    scaler = Standardizer.fit(numeric, numeric_columns, standardize)
    named = (list(cols), dict(kinds), numeric_columns, categorical, levels)
    emb = Embedding(*named, numeric, codes, scaler, np.empty((0, 0)))
    emb.compact = _wide(emb) if compact is None else compact
    emb.matrix = emb.embed(numeric, codes)
    return emb


def _wide(emb: Embedding) -> bool:
    """Whether the nominal columns' one-hot blocks are wide enough to keep them as codes."""
    from .onehot import WIDE_ONEHOT

    return emb.onehot_width() >= WIDE_ONEHOT


def method_matrix(emb: Embedding, distance: str, seed: int | None = 0) -> tuple[np.ndarray, float]:
    """(matrix the method sees, factor f with SSE(embedding) >= f·SSE(method matrix)).

    ``distance``: the whitening (``whitening.WHITENINGS``). The identity (euclidean): the
    embedding itself (f = 1). Otherwise the continuous part is replaced by its whitened version
    (``whitening.whiten``; ordinal and nominal parts unchanged) and f = min(λ_min, 1).
    """
    from .missing_values import grouping_matrix

    if emb.compact:
        return _method_codes(emb, distance, seed)
    base = grouping_matrix(emb.matrix)  # missing values placed for the grouping only
    if WHITENINGS[distance].identity:
        return base, 1.0
    where = emb.continuous_positions()
    if where.size == 0:
        raise InputError(
            f"distance={distance!r} needs continuous quasi-identifier columns; all are categorical"
        )
    # with missing values, the covariance of the records that have every continuous QI (the
    # placed values would inflate it); all records when too few are complete
    complete = ~np.isnan(emb.matrix[:, where]).any(axis=1)
    fit = None if complete.all() or complete.sum() <= 2 * len(where) else np.flatnonzero(complete)
    W, lam = whiten(base[:, where], distance, seed, fit_rows=fit)
    rest = np.setdiff1d(np.arange(base.shape[1]), where)
    return np.ascontiguousarray(np.hstack([W, base[:, rest]])), min(lam, 1.0)


def _method_codes(emb: Embedding, distance: str, seed: int | None):
    """``method_matrix`` of an embedding that keeps its nominal columns as codes: the numeric
    columns placed (missing values) and whitened in place, the codes as they are."""
    from dataclasses import replace

    from .missing_values import grouping_matrix

    Z = emb.matrix
    base = grouping_matrix(Z.numeric)
    if WHITENINGS[distance].identity:
        return replace(Z, numeric=base), 1.0
    where = [emb._numeric_position[c] for c in emb.continuous_columns]
    if not where:
        raise InputError(
            f"distance={distance!r} needs continuous quasi-identifier columns; all are categorical"
        )
    complete = ~np.isnan(Z.numeric[:, where]).any(axis=1)
    fit = None if complete.all() or complete.sum() <= 2 * len(where) else np.flatnonzero(complete)
    W, lam = whiten(base[:, where], distance, seed, fit_rows=fit)
    numeric = base.copy()
    numeric[:, where] = W
    return replace(Z, numeric=np.ascontiguousarray(numeric)), min(lam, 1.0)
