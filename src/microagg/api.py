"""microaggregate(): the pipeline of DESIGN.md, in one direction.

input -> QI columns, validation -> z-scores -> [strata] -> method(X, k) -> labels
-> validity check -> group means in original units -> measures -> Result
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import methods as registry
from .clock import Deadline
from .errors import InputError, ParameterError
from .partition import check_partition, group_sizes, relabel, sse, sst
from .measures import categorical_report
from .methods.starts import given_labels, restricted
from .preprocess import Standardizer, check_k, given_twice, read_table
from .progress import channel, part
from .representatives import check_aggregation, publish
from .strata import stratum_codes
from .transforms import check_options, embed, method_matrix, select_qi

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
    scaler: Standardizer | None = None  # the run's standardisation of the QI columns
    standardized: np.ndarray | None = None  # the QI columns as the run measured them (scaler applied)
    # with categorical QIs, ``standardized`` is the Gower-type embedding (microagg.transforms) and
    # ``scaler`` z-scores only the continuous values and ordinal ranks

    def measured(self, values) -> np.ndarray:
        """Continuous QI values (n, d) in the units the run measured IL in (its own scaler).

        With categorical QIs the run measured the embedding, which is ``standardized`` itself."""
        if any(kind != "continuous" for kind in self.extras.get("kinds", {}).values()):
            raise InputError("measured() maps continuous QI values; with categorical QIs use Result.standardized")
        return self.scaler.transform(np.asarray(values, dtype=np.float64))

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
        lines.extend(self._extras_lines())
        if self.per_variable:
            lines.append(
                "warning: each variable was grouped on its own (individual ranking); combinations of "
                "values are NOT k-anonymous and the disclosure risk is higher than with multivariate methods"
            )
        lines.append(f"{self.seconds:.3f} s")
        return "\n".join(lines)


    def _extras_lines(self) -> list[str]:
        """Human-readable lines for the facts in ``extras`` (portfolio, weights, merged strata)."""
        lines = []
        portfolios = [("", self.extras)] if "portfolio" in self.extras else [
            (f"stratum {s['stratum']}: ", s["extras"]) for s in self.extras.get("strata", [])
            if "portfolio" in s.get("extras", {})
        ]
        if len(portfolios) > 3:  # many strata: one line each
            for prefix, ex in portfolios:
                ok = [r for r in ex["portfolio"] if r.get("status") == "ok"]
                lines.append(f"{prefix}auto: winner {ex['winner']} of {len(ok)} member(s)")
            portfolios = []
        for prefix, ex in portfolios:
            lines.append(f"{prefix}auto: winner {ex['winner']}")
            for row in ex["portfolio"]:
                if row.get("status") == "ok":
                    bound = f", lower bound IL {row['lower_bound_il']:.4f}%" if "lower_bound_il" in row else ""
                    mark = "*" if row["method"] == ex["winner"] else " "
                    lines.append(f"  {mark} {row['method']:14s} IL {row['il']:.4f}%  {row['seconds']:.2f} s{bound}")
                else:
                    lines.append(f"    {row['method']:14s} {row.get('status')}")
        if "weighted_information_loss" in self.extras:
            lines.append(f"variable weights {self.extras['weights']}; weighted information loss "
                         f"{self.extras['weighted_information_loss']:.4f}%")
        if "sample_weight" in self.extras:
            lines.append(f"group means weighted by sample weight {self.extras['sample_weight']}")
        if "aggregation" in self.extras:
            lines.append(self.extras["representatives_note"])
        for c, m in self.extras.get("categories", {}).items():
            lines.append(f"categorical {c}: {100 * m['changed_share']:.2f}% of values changed, "
                         f"distribution distance (TVD) {m['distribution_tvd']:.4f}")
        if self.extras.get("distance", "euclidean") != "euclidean":
            lines.append(f"distance {self.extras['distance']}: the methods grouped the records on whitened "
                         "continuous columns; IL is on z-scores")
        for m in self.extras.get("merged_strata", []):
            lines.append(f"stratum {m['stratum']} ({m['size']} records < k) merged into {m['merged_into']}")
        return lines


def _as_frame(data):
    """(DataFrame, kind, shape) for a DataFrame, ndarray or path input; kind says how to give it back."""
    if isinstance(data, pd.DataFrame):
        return data, "frame", data.shape
    if isinstance(data, np.ndarray):
        if data.ndim not in (1, 2):
            raise InputError(f"array input must be 1-D or 2-D (records × attributes), got {data.ndim}-D")
        if data.dtype.kind not in "iuf":
            raise InputError(f"array input must be real numbers (integer or float), got dtype {data.dtype}")
        return pd.DataFrame(data.reshape(len(data), -1)), "array", data.shape
    if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        return read_table(data), "frame", None
    raise InputError(f"unsupported input type {type(data).__name__}: pass a DataFrame, an ndarray or a file path")


def _check_options(k, seed, time_limit, standardize, progress, merge_small_strata, strata, block_size,
                   scheduler, columns, refine) -> list:
    """Every option that does not need the data, checked before the data are touched.

    Returns the strata columns as a list.
    """
    check_k(k)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ParameterError(f"seed must be a non-negative integer or None, got {seed!r}")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real)
                                   or not math.isfinite(time_limit) or time_limit <= 0):
        raise ParameterError(f"time_limit must be a positive number of seconds or None, got {time_limit!r}")
    for name, value in (("standardize", standardize), ("merge_small_strata", merge_small_strata)):
        if not isinstance(value, (bool, np.bool_)):
            raise ParameterError(f"{name} must be True or False, got {value!r}")
    if not (isinstance(progress, (bool, np.bool_)) or progress is None or callable(progress)):
        raise ParameterError(f"progress must be True, False or a callable, got {progress!r}")
    if strata is None:
        strata_cols = []
    elif isinstance(strata, (str, int)) and not isinstance(strata, bool):
        strata_cols = [strata]
    elif isinstance(strata, (list, tuple)) and strata and all(isinstance(c, (str, int)) for c in strata):
        strata_cols = list(strata)
    else:
        raise ParameterError(f"strata must be a column name or a list of column names, got {strata!r}")
    twice = given_twice(strata_cols)
    if twice:
        raise ParameterError(f"stratum column(s) given twice: {', '.join(twice)}")
    if merge_small_strata and not strata_cols:
        raise ParameterError("merge_small_strata needs strata: pass the stratum column(s) with strata=")
    if block_size is not None and (isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer))
                                   or block_size < 1):
        raise ParameterError(f"block_size must be a positive integer or None, got {block_size!r}")
    if refine is not None:
        if block_size is None and scheduler is None:
            raise ParameterError("refine applies to the partitioned mode: pass block_size= (or scheduler=) too")
        if isinstance(refine, bool) or not isinstance(refine, numbers.Real) or not 0 <= refine <= 1:
            raise ParameterError(f"refine must be a share between 0 and 1, got {refine!r}")
    if columns is not None and not isinstance(columns, str):
        if isinstance(columns, (list, tuple, pd.Index)):
            bad = [c for c in columns if isinstance(c, (bool, float)) or not isinstance(c, (str, int, np.integer))]
            if bad:
                raise ParameterError(f"columns must be column names or positions, got {bad[0]!r}")
        else:
            raise ParameterError(f"columns must be a column name, a comma-separated string or a list of names, "
                                 f"got {columns!r}")
    return strata_cols


def _missing_tokens(missing) -> tuple:
    """``missing=``: None, a comma-separated string or a list of strings."""
    if missing is None:
        return ()
    if isinstance(missing, str):
        missing = missing.split(",")
    if not isinstance(missing, (list, tuple)) or any(not isinstance(t, str) for t in missing):
        raise ParameterError(f"missing must be text tokens (a list or a comma-separated string), got {missing!r}")
    return tuple(t.strip() for t in missing if t.strip())


def _check_not_duplicated(names, duplicated) -> None:
    """A column named twice in the header cannot be used as a QI, stratum or weight (which one?)."""
    twice = sorted({str(c) for c in names if c in duplicated})
    if twice:
        raise InputError(f"column name(s) {', '.join(twice)} appear more than once in the data; rename them "
                         "to use them as quasi-identifiers, strata or weights")


def _run_method(Z, k, info, params, seed, deadline, progress, block_size, scheduler, refine):
    """One method run (partitioned when block_size / scheduler is given), labels checked."""
    if block_size is not None or scheduler is not None:
        from .scale import DEFAULT_REFINE, partitioned_labels

        labels = partitioned_labels(Z, k, info.name, block_size=block_size, scheduler=scheduler, seed=seed,
                                    deadline=deadline, progress=progress,
                                    refine=DEFAULT_REFINE if refine is None else refine, **params)
        return check_partition(labels, len(Z), k, f"{info.name} (partitioned)"), registry.MethodOutput(labels)
    out = registry.run(info.name, Z, k, seed=seed, deadline=deadline, progress=progress, **params)
    return check_partition(out.labels, len(Z), k, info.name), out


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
    *,
    weights=None,
    sample_weight=None,
    merge_small_strata: bool = False,
    progress=False,
    refine: float | None = None,
    categorical=None,
    ordinal=None,
    distance: str = "euclidean",
    aggregation: str = "mean",
    trim: float | None = None,
    missing=None,
    **params,
) -> Result:
    """Microaggregate ``data`` so that every group of quasi-identifier values has >= k records.

    data: pandas DataFrame, 1-D or 2-D numpy array, or a file path (``microagg.io`` formats).
    columns: quasi-identifier columns (default: every numeric column, strata columns excluded);
        for an ndarray, column positions.
    method: a registered method name (``microagg.methods()``); ``params`` are its declared
        parameters (``microagg methods -v``), validated before any data work: a bad one raises
        ``ParameterError`` (an ``InputError``). standardize=False runs the method on raw values
        (SSE, SST and the bound are then in raw units).
    time_limit: the wall-clock budget of the whole call, in seconds (None: no limit; ``auto``
        then takes 60 s). Strata, blocks, portfolio members and initial methods share it by
        one rule (``microagg.clock``). Methods registered as not interruptible (mdav, md, ...)
        run to completion; anytime methods overshoot by at most about max(0.5 s, 10 %) on our
        measurements (benchmarks/results/colgen_time_limit.md). The method's compiled kernels are loaded
        before the clock starts, once per process (``methods.load_kernels``).
    strata: column name(s); groups never cross strata (also in the partitioned mode, where
        blocks are cut inside strata).
    merge_small_strata: a stratum with fewer than k records is an error naming it, unless this is
        True: then it is merged with the stratum whose QI centroid is nearest (repeatedly, the
        smallest first); the merges are listed in ``Result.extras["merged_strata"]``.
    weights: variable weights for the distance, one positive number per QI column (a sequence in
        column order, or a mapping column -> weight; columns left out of a mapping weigh 1).
        Standardised column j is multiplied by sqrt(w_j) before the method, so the method
        minimises sum_j w_j * SSE_j. The reported IL/SSE stay on the unweighted standardised
        columns; the weighted IL is in ``extras["weighted_information_loss"]`` and a proven bound
        on the weighted SSE is converted into a bound on the unweighted SSE by dividing by max w_j.
    sample_weight: sampling weights (a column name, or an array with one positive weight per
        record) for weighted group means; the grouping itself is unchanged, IL is measured
        against the published (weighted) means.
    progress: True draws a progress bar on stderr; a callable receives
        ``progress(stage, fraction, message)`` (``microagg.progress``).
    block_size / scheduler / refine: partitioned mode (see ``microagg.scale``).
    categorical / ordinal: QI columns (names) that are nominal / ordinal (``ordinal`` may also map
        a column to its levels, lowest first: {"grade": ["low", "mid", "high"]}); undeclared columns take
        their kind from the dtype (pandas Categorical unordered -> nominal, ordered -> ordinal, bool
        -> nominal, numbers -> continuous). The method sees the Gower-type embedding of
        ``microagg.transforms``; nominal columns publish the group's mode, ordinal ones its median
        category, in the column's own dtype. With ``columns=None`` the declared columns join the
        numeric ones.
    distance: "euclidean" (z-scores), "mahalanobis" or "robust" (MCD covariance, as sdcMicro's
        rmd): the continuous part is whitened before the method (``transforms.whiten``).
    aggregation / trim: what a group publishes for continuous columns: "mean", "median",
        "trimmed" (``trim``: share per end, None = 0.1) or "onestep" (``microagg.representatives``),
        weighted by ``sample_weight``. IL and the bound are measured against the published
        values; ``extras["sse_to_group_means"]`` gives the SSE to the group means for comparison.
    missing: text tokens that mean "missing" in text columns (a list, or comma-separated), e.g.
        ["-", ".", "n/a"]: a column numeric but for these tokens is numeric (and, as a QI, an
        error naming its missing cells); without it such a column is an error naming the tokens.
    Every option is either honoured or rejected with an InputError; none is silently ignored.
    Returns a Result; the protected data are the same kind and shape as the input, with the same
    rows in the same order and every non-QI column unchanged.
    """
    info = registry.get(method)
    method_params = info.validate(params)
    strata_cols = _check_options(k, seed, time_limit, standardize, progress, merge_small_strata, strata,
                                 block_size, scheduler, columns, refine)
    if given_labels(method_params) and (block_size is not None or scheduler is not None):
        raise ParameterError("init labels (a start partition) cannot be combined with the partitioned mode "
                             "(block_size / scheduler): blocks are cut afresh")
    # heterogeneous QIs, distance and aggregation: options validated before any data work
    categorical, ordinal, distance = check_options(categorical, ordinal, distance)
    aggregation, trim = check_aggregation(aggregation, trim)
    missing_tokens = _missing_tokens(missing)
    deadline = Deadline(time_limit)  # the whole call's budget (the checks above take microseconds)
    df, kind, shape = _as_frame(data)
    duplicated = set(df.columns[df.columns.duplicated()])
    if kind == "array" and isinstance(columns, str):
        raise ParameterError("columns of an array are positions (integers), not names")
    unknown_strata = [s for s in strata_cols if s not in df.columns]
    if unknown_strata:
        raise InputError(f"unknown strata column(s): {', '.join(map(str, unknown_strata))}")
    sw_col = sample_weight if isinstance(sample_weight, str) else None
    if sw_col is not None and sw_col not in df.columns:
        raise InputError(f"unknown sample_weight column: {sw_col}")
    if sw_col is not None and sw_col in strata_cols:
        raise InputError(f"column {sw_col} cannot be both sample weight and stratum")
    named = strata_cols + ([sw_col] if sw_col is not None else [])
    named += [c.strip() for c in columns.split(",")] if isinstance(columns, str) else list(columns or [])
    _check_not_duplicated(named, duplicated)
    if duplicated and columns is None:  # which of the twins would be protected? the user says
        raise InputError(f"column name(s) {', '.join(sorted(map(str, duplicated)))} appear more than once in the "
                         "data: name the quasi-identifier columns with columns= (--columns)")
    cols, kinds = select_qi(df, columns, strata_cols + ([sw_col] if sw_col is not None else []), categorical, ordinal,
                            missing_tokens)
    overlap = [c for c in cols if c in strata_cols]
    if overlap:
        raise InputError(f"column(s) {', '.join(map(str, overlap))} cannot be both quasi-identifier and stratum")
    if sw_col is not None and sw_col in cols:
        raise InputError(f"column {sw_col} cannot be both quasi-identifier and sample weight")
    _check_heterogeneous(info, kinds, distance, weights)
    n = len(df)
    k = check_k(k, n)
    emb = embed(df, cols, kinds, standardize, ordinal, missing=missing_tokens)
    w = _variable_weights(weights, cols, info)
    sw = _sample_weights(sample_weight, df, n)
    scaler, Z = emb.scaler, emb.matrix  # z-scores of the continuous columns, Gower-type embedding of the rest
    M, bound_factor = method_matrix(emb, distance, seed)  # whitened when distance is not euclidean
    if w is not None:  # one weight per QI column, repeated over a nominal column's one-hot block
        w = np.repeat(w, emb.widths())
    # variable weights: the method sees sqrt(w_j)-scaled columns (minimises sum_j w_j SSE_j)
    Zw = M if w is None else np.ascontiguousarray(M * np.sqrt(w))
    # every input checked: load the method's kernels, outside the budget (the limit is for the work)
    loading = time.monotonic()
    registry.load_kernels(info.name, Zw.shape, progress)
    deadline.extend(time.monotonic() - loading)

    lower_bound = None
    extras: dict = {}
    with channel(progress, time_limit, f"microagg {method}") as report:
        if strata_cols:
            labels, lower_bound, strata_extras = _fit_strata(
                df, strata_cols, Zw, k, info, method_params, seed, deadline, report, merge_small_strata,
                block_size, scheduler, refine)
            extras.update(strata_extras)
        else:
            labels, out = _run_method(Zw, k, info, method_params, seed, deadline, report, block_size, scheduler,
                                      refine)
            lower_bound = out.lower_bound
            extras.update(out.extras)

    published_numeric, published_codes = publish(emb, labels, aggregation, trim, sw)
    Zp = emb.embed(published_numeric, published_codes)
    published_are_means = sw is None and aggregation == "mean" and not emb.heterogeneous
    if published_are_means:
        total_sse = sse(Z, labels)
    else:  # weighted means, robust aggregates, categories: measure the loss against what is published
        total_sse = float(np.sum((Z - Zp) ** 2))
    extras.update(_representatives_extras(emb, Z, labels, aggregation, trim, distance, total_sse))
    if lower_bound is not None and bound_factor != 1.0:  # bound on the whitened SSE -> on the SSE of Z
        extras["whitened_lower_bound"] = float(lower_bound)
        lower_bound = float(lower_bound) * bound_factor
    total_sst = sst(Z)
    il = 0.0 if total_sst == 0 else 100.0 * total_sse / total_sst
    if w is not None:
        extras["weights"] = {str(c): float(w[s.start]) for c, s in emb.column_slices().items()}
        w_sst = sst(Zw)
        w_sse = sse(Zw, labels) if published_are_means else float(np.sum(w * (Z - Zp) ** 2))
        extras["weighted_information_loss"] = 0.0 if w_sst == 0 else 100.0 * w_sse / w_sst
        if lower_bound is not None:  # SSE >= SSE_w / max(w) >= bound_w / max(w)
            extras["weighted_lower_bound"] = float(lower_bound)
            lower_bound = float(lower_bound) / float(w.max())
    if sw is not None:
        extras["sample_weight"] = sw_col if sw_col is not None else "array"
    gap = None
    if lower_bound is not None:
        lower_bound = min(float(lower_bound), total_sse)
        gap = 0.0 if total_sse == 0 else 100.0 * (total_sse - lower_bound) / total_sse

    out_data = _published_data(df, kind, shape, cols, emb, published_numeric, published_codes)
    if emb.heterogeneous:  # per categorical column: share of changed values, distribution distance
        extras["categories"] = categorical_report(
            df[emb.categorical_columns],
            pd.DataFrame({c: emb.published_column(c, published_numeric, published_codes, df[c])
                          for c in emb.categorical_columns}, index=df.index))
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
        seconds=deadline.elapsed(),
        group_sizes=sizes,
        k=k,
        columns=cols,
        per_variable=info.per_variable,
        extras=extras,
        scaler=scaler,
        standardized=Z,
    )


def _published_data(df, kind, shape, cols, emb, numeric, codes):
    """The protected data in the input's kind and shape: only the QI columns change.

    Categorical QI columns keep their dtype and publish existing categories.
    """
    if kind == "array":
        out = df.to_numpy(dtype=np.float64, copy=True)
        for c in cols:
            out[:, df.columns.get_loc(c)] = np.asarray(emb.published_column(c, numeric, codes), dtype=np.float64)
        return out.reshape(shape)
    out = df.copy()
    for c in cols:
        out[c] = emb.published_column(c, numeric, codes, df[c])
    return out


def _variable_weights(weights, cols, info) -> np.ndarray | None:
    """One positive finite weight per QI column, or None; every bad weight vector is an InputError."""
    if weights is None:
        return None
    if isinstance(weights, dict):
        unknown = [c for c in weights if c not in cols]
        if unknown:
            raise InputError(f"weights given for column(s) that are not quasi-identifiers: "
                             f"{', '.join(map(str, unknown))}")
        values = [weights.get(c, 1.0) for c in cols]
    elif isinstance(weights, (str, bytes)):
        raise InputError("weights must be numbers (one per quasi-identifier column) or a column -> weight mapping")
    else:
        values = list(np.ravel(np.asarray(weights, dtype=object)))
        if len(values) != len(cols):
            raise InputError(f"weights has {len(values)} value(s) but there are {len(cols)} "
                             f"quasi-identifier columns ({', '.join(map(str, cols))})")
    try:
        w = np.array([float(v) for v in values], dtype=np.float64)
        if any(isinstance(v, (bool, np.bool_)) for v in values):
            raise TypeError
    except (TypeError, ValueError):
        raise InputError(f"weights must be numbers, got {values!r}") from None
    bad = [f"{cols[j]}={values[j]!r}" for j in range(len(w)) if not (np.isfinite(w[j]) and w[j] > 0)]
    if bad:
        raise InputError(f"weights must be positive and finite: {', '.join(bad)}")
    if info.per_variable:
        raise InputError(f"weights have no effect with method {info.name!r}, which groups each variable on its own")
    if len(cols) == 1:
        raise InputError("weights have no effect with a single quasi-identifier column")
    return w


def _sample_weights(sample_weight, df, n) -> np.ndarray | None:
    """Sampling weights as a positive finite float array of length n, or None."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, str):
        col = df[sample_weight]
        if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
            raise InputError(f"sample_weight column {sample_weight} is not numeric")
        sw = col.to_numpy(dtype=np.float64, na_value=np.nan)
        where = f"sample_weight column {sample_weight}"
    else:
        try:
            sw = np.asarray(sample_weight, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError("sample_weight must be a column name or an array of numbers") from None
        where = "sample_weight"
        if sw.ndim != 1 or len(sw) != n:
            raise InputError(f"{where} must have one value per record ({n}), got shape {sw.shape}")
    bad = ~(np.isfinite(sw) & (sw > 0))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise InputError(f"{where} must be positive and finite: {int(bad.sum())} bad value(s), "
                         f"first at row {first + 1} ({sw[first]:g})")
    return sw


def _fit_strata(df, strata_cols, Z, k, info, params, seed, deadline, progress, merge_small, block_size, scheduler,
                refine):
    """Run the method inside each stratum; groups never cross strata. Bounds add up.

    Each stratum gets ``deadline.share(its records, records still to do)``; with block_size the
    partitioned mode runs inside each stratum, so blocks are cut inside strata.
    Returns (labels, lower bound or None, extras).
    """
    strata = stratum_codes(df, strata_cols, Z, k, merge_small)
    if not deadline.bounded and info.name == "auto":  # auto's default budget is for the whole run
        from .methods.auto import DEFAULT_BUDGET

        deadline = Deadline(DEFAULT_BUDGET)
        if params.get("improve") is None:  # a cap, not a time limit the caller asked to use
            params = dict(params, improve=False)
    n = len(Z)
    labels = np.full((n, Z.shape[1]) if info.per_variable else n, -1, dtype=np.int64)
    offset, todo = 0, n
    bound, have_bound = 0.0, True
    per_stratum = []
    for code, rows in strata.rows():
        name = strata.names[code]
        report = part(progress, (n - todo) / n, (n - todo + len(rows)) / n, prefix=f"stratum {name}: ")
        lab, out = _run_method(Z[rows], k, info, restricted(params, rows), seed, deadline.share(len(rows), todo),
                               report, block_size, scheduler, refine)
        todo -= len(rows)
        labels[rows] = lab + offset
        offset = int(labels[rows].max()) + 1
        if out.lower_bound is None:
            have_bound = False
        else:
            bound += out.lower_bound
        entry = {"stratum": name, "members": strata.members[code], "records": int(len(rows)),
                 "sse": sse(Z[rows], lab)}
        if out.lower_bound is not None:
            entry["lower_bound"] = float(out.lower_bound)
        if out.extras:
            entry["extras"] = out.extras
        per_stratum.append(entry)
    extras = {"strata": per_stratum}
    if strata.merges:
        extras["merged_strata"] = strata.merges
    return relabel(labels), (bound if have_bound else None), extras


def _check_heterogeneous(info, kinds, distance, weights) -> None:
    """One-line rejections of option combinations a method or the distance cannot honour."""
    categorical = [c for c, kind in kinds.items() if kind != "continuous"]
    if categorical and (info.per_variable or not info.multivariate or not getattr(info, "categorical", True)):
        raise InputError(f"method {info.name!r} cannot take categorical quasi-identifiers "
                         f"({', '.join(map(str, categorical))}); use a multivariate method such as mdav")
    if distance != "euclidean" and info.per_variable:
        raise InputError(f"distance={distance!r} has no effect with method {info.name!r}, which groups each "
                         "variable on its own")
    if distance != "euclidean" and weights is not None:
        raise InputError(f"weights and distance={distance!r} cannot be combined: whitening undoes the weights")


def _representatives_extras(emb, Z, labels, aggregation, trim, distance, total_sse) -> dict:
    """Facts about what was published: the aggregation, the kinds, the SSE to the group means."""
    kinds = {str(c): emb.kinds[c] for c in emb.columns}
    extras: dict = {}
    if distance != "euclidean":
        extras["distance"] = distance
    if aggregation == "mean" and not emb.heterogeneous:
        return extras
    extras["aggregation"] = aggregation
    if aggregation == "trimmed":
        extras["trim"] = trim
    extras["kinds"] = kinds
    to_means = sse(Z, labels) if labels.ndim == 1 else None
    extras["sse_to_group_means"] = to_means
    what = {"mean": "mean", "median": "median", "trimmed": f"{trim:g}-trimmed mean",
            "onestep": "one-step Huber mean"}[aggregation]
    parts = [f"{what} (continuous)"] if emb.continuous_columns else []
    if any(k == "ordinal" for k in kinds.values()):
        parts.append("median category (ordinal)")
    if any(k == "nominal" for k in kinds.values()):
        parts.append("mode (nominal)")
    note = f"representatives: {', '.join(parts)}; IL is measured to the published values"
    if to_means is not None:
        note += f" (SSE {total_sse:.6g}; to the group means it would be {to_means:.6g})"
    extras["representatives_note"] = note
    return extras
