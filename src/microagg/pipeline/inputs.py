"""The stages before the method: ``load`` (the input as a frame), ``check_params_vs_input`` (what
needs the data, right after loading) and ``prepare`` (the matrix the method sees)."""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import InputError, RolesWarning, option_term
from ..labels import check_k
from ..options import Run
from .parts import Prepared, Roles, Source

# --- load ----------------------------------------------------------------------------------------


def import_dependencies() -> None:
    """Import what every run's stages use (pandas, with the pyarrow it loads, and the stages' own
    modules), once per process, before a caller starts its clock: as compiled kernels
    (``methods.load_kernels``), a one-time cost of the process, not of the run (pandas: 0.16-0.5 s
    of a first 10^4-record MDAV call's 0.3-0.6 s; the stages' modules 0.03 s of its 0.09 s)."""
    import importlib

    for name in ("pandas", "..io", "..columns", "..read_limits", "..strata", "..embedding"):
        importlib.import_module(name, __package__)


def load(data) -> Source:
    """The input as a frame: a DataFrame (pandas, or polars, pyarrow, ... through narwhals:
    ``microagg.frames``), a 1-D or 2-D real array, a file path or an ``io.Table``."""
    import pandas as pd

    from .. import frames
    from ..io import Table

    if isinstance(data, Table):
        return Source(data.frame, "frame", None, data)
    if isinstance(data, pd.DataFrame):
        return Source(data, "frame", data.shape)
    if isinstance(data, np.ndarray):
        if data.ndim not in (1, 2):
            raise InputError(
                f"array input must be 1-D or 2-D (records × attributes), got {data.ndim}-D"
            )
        if data.dtype.kind not in "iuf":
            raise InputError(
                f"array input must be real numbers (integer or float), got dtype {data.dtype}"
            )
        return Source(pd.DataFrame(data.reshape(len(data), -1)), "array", data.shape)
    if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        from .. import io

        table = io.read(data)
        return Source(table.frame, "frame", None, table)
    if frames.is_foreign_frame(data):
        return Source(frames.to_pandas(data), "native", None, native=data)
    raise InputError(
        f"unsupported input type {type(data).__name__}: pass a DataFrame (pandas, polars, "
        "pyarrow), "
        "an ndarray or a file path"
    )


# --- the data hook -------------------------------------------------------------------------------


def check_params_vs_input(run: Run, source: Source) -> Roles:
    """Every check of the run's options that needs the data, right after loading and before any
    method starts: the columns (named ones exist, are numeric, are not duplicated; the default ones
    by the column rules), their kinds, strata and sample-weight columns, the variable weights
    against the QI columns, the sampling weights against the records, whether the method takes
    categorical QIs, and k against the number of records. InputError / ParameterError."""
    from ..embedding import select_qi_roles

    df = source.frame
    strata = run.strata or []
    sw_col = run.sample_weight if isinstance(run.sample_weight, str) else None
    keys, sensitive = list(run.keys or []), list(run.sensitive or [])
    household = list(run.household or [])
    apart = strata + ([sw_col] if sw_col is not None else []) + keys + sensitive + household
    _check_named_columns(
        source,
        run.columns,
        strata,
        sw_col,
        [("keys", keys), ("sensitive", sensitive), ("household", household)],
        apart,
    )
    cols, kinds, left_out = select_qi_roles(
        df,
        run.columns,
        apart,
        run.categorical or [],
        run.ordinal or {},
        run.missing or (),
        run.continuous or (),
        household,
    )
    _check_method_takes_kinds(run.info, kinds)
    n = len(df)
    k = check_k(run.k, n)
    if keys and run.on_keys_below_k == "refuse":  # known from the input: refused before any work
        _refuse_keys_below_k(df, keys, k, strata)
    sample_weights = _sample_weights(run.sample_weight, df, n)
    households = None
    if household:  # the data hook: ids, household-level QIs and weights, before any work
        from ..households import households_of

        households = households_of(df, household, cols, kinds, run.household_level, sample_weights)
    return Roles(
        cols,
        kinds,
        strata,
        sw_col,
        _variable_weights(run.weights, cols),
        sample_weights,
        k,
        n,
        keys,
        sensitive,
        household,
        households,
        left_out,
    )


def _check_named_columns(
    source: Source, columns, strata: list, sw_col, others: list, apart: list
) -> None:
    """The columns the options name exist, once each; with a duplicated name in the data the
    quasi-identifiers must be named (and a file's duplicated header names are said)."""
    df = source.frame
    if source.kind == "array" and columns is not None and any(isinstance(c, str) for c in columns):
        raise InputError("columns of an array are positions (integers), not names")
    unknown = [s for s in strata if s not in df.columns]
    if unknown:
        raise InputError(f"unknown strata column(s): {', '.join(map(str, unknown))}")
    if sw_col is not None and sw_col not in df.columns:
        raise InputError(f"unknown sample_weight column: {sw_col}")
    for what, names in others:
        unknown = [c for c in names if c not in df.columns]
        if unknown:
            raise InputError(f"unknown {what} column(s): {', '.join(map(str, unknown))}")
    duplicated = set(df.columns[df.columns.duplicated()])
    twice = sorted({str(c) for c in apart + list(columns or []) if c in duplicated})
    if twice:
        raise InputError(
            f"column name(s) {', '.join(twice)} appear more than once in the data; rename "
            "them to use them as quasi-identifiers, strata or weights"
        )
    if duplicated and columns is None:  # which of the twins would be protected? the user says
        raise InputError(
            f"column name(s) {', '.join(sorted(map(str, duplicated)))} appear more than once "
            f"in the data: name the quasi-identifier columns with {option_term('columns')}"
        )
    if source.table is not None and source.table.duplicates and columns is None:
        warnings.warn(
            f"column name(s) {', '.join(map(repr, source.table.duplicates))} occur more than once "
            f"in the header of {source.table.path.name}: they are not protected (a duplicated name "
            "cannot be a quasi-identifier); rename them to protect them, or remove them before "
            "publishing",
            RolesWarning,
            stacklevel=4,
        )


def _check_method_takes_kinds(info, kinds: dict) -> None:
    """Categorical QIs need a multivariate method that takes them."""
    nominal = [c for c, kind in kinds.items() if kind != "continuous"]
    if nominal and (info.per_variable or not info.multivariate or not info.categorical):
        raise InputError(
            f"method {info.name!r} cannot take categorical quasi-identifiers "
            f"({', '.join(map(str, nominal))}); use a multivariate method such as mdav, or "
            "declare numeric codes continuous (--continuous) to average them"
        )


def _refuse_keys_below_k(df, keys: list, k: int, strata: list) -> None:
    """on_keys_below_k='refuse': records below k on the keys are an error before any work."""
    from ..suppression import below_k

    left = below_k(df, keys, k, strata)
    if left:
        raise InputError(
            f"{left} records match fewer than {k} records on the keys ({', '.join(map(str, keys))})"
            + (" within their strata" if strata else "")
            + " (on_keys_below_k='refuse'): use on_keys_below_k='suppress' "
            "(--on-keys-below-k suppress), or fewer or coarser keys"
        )


def _variable_weights(weights, cols) -> np.ndarray | None:
    """One weight per QI column (validated numbers: options._weights) or None."""
    if weights is None:
        return None
    if isinstance(weights, dict):
        unknown = [c for c in weights if c not in cols]
        if unknown:
            raise InputError(
                "weights given for column(s) that are not quasi-identifiers: "
                f"{', '.join(map(str, unknown))}"
            )
        values = [weights.get(c, 1.0) for c in cols]
    else:
        values = list(weights)
        if len(values) != len(cols):
            raise InputError(
                f"weights has {len(values)} value(s) but there are {len(cols)} "
                f"quasi-identifier columns ({', '.join(map(str, cols))})"
            )
    if len(cols) == 1:
        raise InputError("weights have no effect with a single quasi-identifier column")
    return np.array(values, dtype=np.float64)


def _sample_weights(sample_weight, df, n) -> np.ndarray | None:
    """Sampling weights as a positive finite float array of length n, or None."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, str):
        import pandas as pd

        col = df[sample_weight]
        if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
            raise InputError(f"sample_weight column {sample_weight} is not numeric")
        from ..options import positive_weights

        values = col.to_numpy(dtype=np.float64, na_value=np.nan)
        return positive_weights(values, f"sample_weight column {sample_weight}")
    if len(sample_weight) != n:  # values checked with the options (options._sample_weight)
        raise InputError(
            f"sample_weight must have one value per record ({n}), got shape {sample_weight.shape}"
        )
    return sample_weight


# --- prepare -------------------------------------------------------------------------------------


def prepare(source: Source, roles: Roles, run: Run) -> Prepared:
    """The matrix the method sees: z-scores of continuous columns, the Gower-type embedding of the
    others (``embedding.embed``), whitened by the ``distance`` option's whitening, each column
    scaled by the square root of its variable weight (the method then minimises Σ_j w_j·SSE_j)."""
    from ..embedding import embed, method_matrix

    emb = embed(
        source.frame,
        roles.columns,
        roles.kinds,
        run.standardize,
        run.ordinal or {},
        missing=run.missing or (),
    )
    from .levels import dense_if_needed

    emb = dense_if_needed(emb, roles, run)  # many levels: codes kept when nothing needs them dense
    M, bound_factor = method_matrix(
        emb, run.distance, run.seed
    )  # whitened when distance is not euclidean
    w = (
        None if roles.weights is None else np.repeat(roles.weights, emb.widths())
    )  # over a one-hot block too
    if w is None:
        matrix = M
    elif emb.compact:
        matrix = M.weighted(roles.weights)
    else:
        matrix = np.ascontiguousarray(M * np.sqrt(w))
    return Prepared(emb, emb.matrix, matrix, bound_factor, w)
