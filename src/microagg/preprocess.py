"""Input handling: column selection, validation, standardisation, strata.

Every problem with the input is reported as one InputError whose message says what is
wrong and where (column names, row counts); nothing is dropped or coerced silently.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import InputError

__all__ = ["InputError", "read_table", "select_columns", "quasi_identifiers", "Standardizer", "zscores",
           "principal_axes", "check_k"]


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV or Parquet file (by extension; a directory is read as a Parquet dataset)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"input file not found: {p}")
    try:
        if p.is_dir() or p.suffix.lower() in (".parquet", ".pq"):
            df = pd.read_parquet(p)
        else:
            df = pd.read_csv(p)
    except pd.errors.EmptyDataError:
        raise InputError(f"input file is empty: {p}") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        raise InputError(f"cannot read {p}: {str(exc).splitlines()[0]}") from None
    if len(df) == 0:
        raise InputError(f"input has no data rows: {p}")
    return df


def select_columns(df: pd.DataFrame, columns=None, exclude=()) -> list[str]:
    """The quasi-identifier columns: ``columns`` if given, else every numeric column not excluded."""
    if columns is None:
        cols = [c for c in df.columns if c not in set(exclude) and pd.api.types.is_numeric_dtype(df[c])
                and not pd.api.types.is_bool_dtype(df[c])]
        if not cols:
            raise InputError("no numeric columns to use as quasi-identifiers")
        return cols
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    columns = list(columns)
    if not columns:
        raise InputError("no quasi-identifier columns given")
    if len(set(columns)) != len(columns):
        dup = sorted({c for c in columns if columns.count(c) > 1}, key=str)
        raise InputError(f"quasi-identifier column(s) given twice: {', '.join(map(str, dup))}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(
            f"unknown column(s): {', '.join(map(str, missing))}; available: {', '.join(map(str, df.columns))}"
        )
    bad = [c for c in columns if not pd.api.types.is_numeric_dtype(df[c]) or pd.api.types.is_bool_dtype(df[c])]
    if bad:
        raise InputError(f"quasi-identifier column(s) not numeric: {', '.join(map(str, bad))}")
    return columns


def quasi_identifiers(df: pd.DataFrame, columns: list) -> np.ndarray:
    """QI values as float64 (n, d); NaN or inf is an error naming the column and row count."""
    X = df[columns].to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(X)
    if bad.any():
        parts = [f"{columns[j]} ({int(bad[:, j].sum())} rows)" for j in np.flatnonzero(bad.any(axis=0))]
        raise InputError("missing or infinite values in quasi-identifier column(s): " + ", ".join(parts))
    return X


def check_k(k, n: int | None = None) -> int:
    """The one check of k: an integer >= 2, and at most n when the number of records is known."""
    from .errors import ParameterError

    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ParameterError(f"k must be an integer, got {k!r}")
    if k < 2:
        raise ParameterError(f"k must be at least 2, got {k}")
    if n is not None:
        if n == 0:
            raise InputError("the data have no rows")
        if k > n:
            raise InputError(f"k={k} is larger than the number of records ({n})")
    return int(k)


@dataclass
class Standardizer:
    """z-scores with the population standard deviation; constant columns get scale 1.

    The one home of standardisation: the pipeline, the measures, the report and the partitioned
    mode all use it. Numerically safe for any finite input: a column whose magnitude is beyond
    1e±150 is first divided by its largest absolute value (``unit``), so sums of values near 1e308
    do not overflow and spreads near 1e-300 are not lost (other columns keep the plain
    arithmetic, so their z-scores are bit for bit what they always were); a column is constant
    only if all its values are equal.
    standardize=False keeps the raw values (mean 0, scale 1).
    """

    mean: np.ndarray
    scale: np.ndarray
    constant: list
    unit: np.ndarray | None = None  # per-column pre-scale (largest |value|); None: 1

    @classmethod
    def fit(cls, X: np.ndarray, names=None, standardize: bool = True, warn: bool = True) -> "Standardizer":
        X = np.asarray(X, dtype=np.float64)
        d = X.shape[1]
        constant_mask = (X == X[:1]).all(axis=0) if len(X) else np.ones(d, dtype=bool)
        names = list(range(d)) if names is None else list(names)
        constant = [names[j] for j in np.flatnonzero(constant_mask)]
        if constant and warn:
            warnings.warn(
                f"constant quasi-identifier column(s) {', '.join(map(str, constant))}: "
                "they are kept and add nothing to the information loss",
                UserWarning,
                stacklevel=3,
            )
        if not standardize:
            return cls(np.zeros(d), np.ones(d), constant, None)
        peak = np.abs(X).max(axis=0) if len(X) else np.ones(d)
        if np.all((peak < 1e150) & ((peak > 1e-150) | (peak == 0))):
            std = X.std(axis=0)
            return cls(X.mean(axis=0), np.where(constant_mask | (std == 0), 1.0, std), constant, None)
        unit = np.where(peak > 0, peak, 1.0)
        U = X / unit
        std_u = U.std(axis=0)
        std_u = np.where(constant_mask | (std_u == 0), 1.0 / unit, std_u)
        return cls(U.mean(axis=0) * unit, std_u * unit, constant, unit)

    def transform(self, X: np.ndarray) -> np.ndarray:
        if self.unit is None:
            return (X - self.mean) / self.scale
        u = self.unit
        return (X / u - self.mean / u) / (self.scale / u)

    def inverse(self, Z: np.ndarray) -> np.ndarray:
        if self.unit is None:
            return Z * self.scale + self.mean
        u = self.unit
        return (Z * (self.scale / u) + self.mean / u) * u


def zscores(X: np.ndarray) -> np.ndarray:
    """Columns standardised to mean 0 and population standard deviation 1 (constant columns: 0)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    return Standardizer.fit(X, warn=False).transform(X)


def principal_axes(Z: np.ndarray, count: int = 1, sign: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues, axes): the ``count`` leading eigenvalues (descending) of the covariance of the
    rows of Z and their unit eigenvectors as columns (d, count). The one home of principal axes.

    sign: None leaves LAPACK's signs; 'sum' makes each axis's loadings sum >= 0; 'largest' makes
    each axis's largest loading positive (reproducible pictures). Degenerate input (fewer than two
    rows, non-finite or all-zero covariance) gives the coordinate axes and zero eigenvalues.
    """
    Z = np.asarray(Z, dtype=np.float64)
    d = Z.shape[1]
    count = min(count, d)
    C = np.atleast_2d(np.cov(Z, rowvar=False, bias=True)) if len(Z) > 1 else np.zeros((d, d))
    if not np.all(np.isfinite(C)) or not C.any():
        return np.zeros(count), np.eye(d)[:, :count]
    vals, vecs = np.linalg.eigh(C)
    vals, axes = vals[::-1][:count], vecs[:, ::-1][:, :count]
    if sign == "sum":
        axes = axes * np.where(axes.sum(axis=0) < 0, -1.0, 1.0)
    elif sign == "largest":
        top = axes[np.argmax(np.abs(axes), axis=0), np.arange(count)]
        axes = axes * np.where(top < 0, -1.0, 1.0)
    return vals, axes
