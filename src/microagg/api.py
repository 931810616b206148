"""microaggregate(): the pipeline of DESIGN.md, in one direction.

input -> QI columns, validation -> z-scores -> [strata] -> method(X, k) -> labels
-> validity check -> group means in original units -> measures -> Result
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import methods as registry
from .partition import aggregate, check_partition, group_sizes, relabel, sse, sst
from .preprocess import InputError, Standardizer, check_k, quasi_identifiers, read_table, select_columns

__all__ = ["Result", "microaggregate"]


@dataclass
class Result:
    data: Any  # same kind as the input: DataFrame or ndarray
    labels: np.ndarray
    information_loss: float
    sse: float
    sst: float
    lower_bound: float | None
    gap: float | None
    method: str
    params: dict
    seconds: float
    group_sizes: np.ndarray
    k: int
    columns: list
    per_variable: bool = False  # labels (n, d): each QI column grouped on its own
    extras: dict = field(default_factory=dict)

    @property
    def lower_bound_il(self) -> float | None:
        """The lower bound expressed as information loss (percent)."""
        if self.lower_bound is None or self.sst == 0:
            return None
        return 100.0 * self.lower_bound / self.sst

    def summary(self) -> str:
        sizes = self.group_sizes if not self.per_variable else np.concatenate(self.group_sizes)
        lines = [
            f"method {self.method}, k = {self.k}, {len(self.labels)} records, "
            f"{len(self.columns)} quasi-identifiers",
            f"information loss {self.information_loss:.4f}% (SSE {self.sse:.6g} of SST {self.sst:.6g})",
            f"groups: {len(sizes)}, sizes {sizes.min()}..{sizes.max()}" if not self.per_variable
            else f"groups per variable: sizes {sizes.min()}..{sizes.max()}",
        ]
        if self.lower_bound is not None:
            lines.append(f"lower bound {self.lower_bound_il:.4f}% (SSE {self.lower_bound:.6g}), gap {self.gap:.3f}%")
        if self.per_variable:
            lines.append(
                "warning: each variable was grouped on its own (individual ranking); combinations of "
                "values are NOT k-anonymous and the disclosure risk is higher than with multivariate methods"
            )
        lines.append(f"{self.seconds:.3f} s")
        return "\n".join(lines)


def _as_frame(data, columns):
    """(DataFrame, kind) for a DataFrame, ndarray or path input."""
    if isinstance(data, pd.DataFrame):
        return data, "frame"
    if isinstance(data, np.ndarray):
        if data.ndim == 1:
            data = data[:, None]
        if data.ndim != 2:
            raise InputError(f"array input must be 2-D (records × attributes), got {data.ndim}-D")
        if not np.issubdtype(data.dtype, np.number) or np.issubdtype(data.dtype, np.bool_):
            raise InputError(f"array input must be numeric, got dtype {data.dtype}")
        return pd.DataFrame(data), "array"
    if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        return read_table(data), "frame"
    raise InputError(f"unsupported input type {type(data).__name__}: pass a DataFrame, an ndarray or a file path")


def _fit_labels(Z, k, method, seed, time_limit, params):
    """Run the method and validate its labels; returns (labels, MethodOutput)."""
    out = registry.run(method, Z, k, seed=seed, time_limit=time_limit, **params)
    return check_partition(out.labels, len(Z), k, method), out


def microaggregate(
    data,
    k: int = 3,
    method: str = "mdav",
    columns=None,
    seed: int | None = 0,
    standardize: bool = True,
    time_limit: float | None = None,
    strata=None,
    block_size: int | None = None,
    scheduler=None,
    **params,
) -> Result:
    """Microaggregate ``data`` so that every group of quasi-identifier values has >= k records.

    data: pandas DataFrame, 2-D numpy array, or a CSV / Parquet path.
    columns: quasi-identifier columns (default: every numeric column, strata columns excluded).
    method: a registered method name (``microagg.methods()``); ``params`` go to it and unknown
        ones are an error. standardize=False runs the method on raw values (SSE, SST and the
        bound are then in raw units). strata: column name(s); groups never cross strata.
    block_size / scheduler: partitioned mode (see ``microagg.scale``).
    Returns a Result; the protected data are the same kind as the input, with the same rows in
    the same order and every non-QI column unchanged.
    """
    t0 = time.perf_counter()
    info = registry.get(method)
    df, kind = _as_frame(data, columns)
    strata_cols = [] if strata is None else ([strata] if isinstance(strata, str) else list(strata))
    missing = [s for s in strata_cols if s not in df.columns]
    if missing:
        raise InputError(f"unknown strata column(s): {', '.join(map(str, missing))}")
    cols = select_columns(df, columns, exclude=strata_cols)
    overlap = [c for c in cols if c in strata_cols]
    if overlap:
        raise InputError(f"column(s) {', '.join(map(str, overlap))} cannot be both quasi-identifier and stratum")
    X = quasi_identifiers(df, cols)
    n = len(X)
    k = check_k(k, n)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    if time_limit is not None and not time_limit > 0:
        raise InputError(f"time_limit must be positive, got {time_limit!r}")
    scaler = Standardizer.fit(X, cols, standardize)
    Z = scaler.transform(X)

    lower_bound = None
    extras: dict = {}
    if block_size is not None or scheduler is not None:
        if strata_cols:
            raise InputError("strata and the partitioned mode (block_size / scheduler) cannot be combined yet")
        from .scale import partitioned_labels

        labels = partitioned_labels(Z, k, method, block_size=block_size, scheduler=scheduler,
                                    seed=seed, time_limit=time_limit, **params)
        labels = check_partition(labels, n, k, f"{method} (partitioned)")
    elif strata_cols:
        labels, lower_bound = _fit_strata(df, strata_cols, Z, k, method, seed, time_limit, params, info)
    else:
        labels, out = _fit_labels(Z, k, method, seed, time_limit, params)
        lower_bound = out.lower_bound
        extras.update(out.extras)

    total_sse = sse(Z, labels)
    total_sst = sst(Z)
    il = 0.0 if total_sst == 0 else 100.0 * total_sse / total_sst
    gap = None
    if lower_bound is not None:
        lower_bound = min(float(lower_bound), total_sse)
        gap = 0.0 if total_sse == 0 else 100.0 * (total_sse - lower_bound) / total_sse

    protected_values = aggregate(X, labels)
    if kind == "array":
        out_data = protected_values
    else:
        out_data = df.copy()
        for j, c in enumerate(cols):
            out_data[c] = protected_values[:, j]
    sizes = [group_sizes(labels[:, j]) for j in range(labels.shape[1])] if labels.ndim == 2 else group_sizes(labels)
    return Result(
        data=out_data,
        labels=labels,
        information_loss=il,
        sse=total_sse,
        sst=total_sst,
        lower_bound=lower_bound,
        gap=gap,
        method=method,
        params=dict(params),
        seconds=time.perf_counter() - t0,
        group_sizes=sizes,
        k=k,
        columns=cols,
        per_variable=info.per_variable,
        extras=extras,
    )


def _fit_strata(df, strata_cols, Z, k, method, seed, time_limit, params, info):
    """Run the method inside each stratum; groups never cross strata. Bounds add up."""
    keys = df[strata_cols].astype("object").where(df[strata_cols].notna(), "<missing>")
    codes, uniques = pd.factorize(pd.MultiIndex.from_frame(keys))
    counts = np.bincount(codes)
    small = np.flatnonzero(counts < k)
    if small.size:
        names = [str(uniques[i] if len(strata_cols) > 1 else uniques[i][0]) for i in small[:5]]
        raise InputError(
            f"{small.size} stratum/strata smaller than k={k}: {', '.join(names)}"
            + (" ..." if small.size > 5 else "")
        )
    n = len(Z)
    labels = np.full((n, Z.shape[1]) if info.per_variable else n, -1, dtype=np.int64)
    offset = 0
    bound = 0.0
    have_bound = True
    for s in range(len(uniques)):
        rows = np.flatnonzero(codes == s)
        lab, out = _fit_labels(Z[rows], k, method, seed, time_limit, params)
        labels[rows] = lab + offset
        offset = int(labels[rows].max()) + 1
        if out.lower_bound is None:
            have_bound = False
        else:
            bound += out.lower_bound
    return relabel(labels), (bound if have_bound else None)
