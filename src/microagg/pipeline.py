"""The pipeline of one run, in stages, one function each:

    load -> check_params_vs_input -> prepare -> partition -> publish -> measure

``load`` takes the input (a DataFrame, an array, a path or an ``io.Table``) as a frame;
``check_params_vs_input`` checks the validated run options against the data (columns and their
kinds, strata, weights, k against n: the one named hook for what needs the data, run right after
loading and before any method starts); ``prepare`` builds the matrix the method sees (kinds,
missing values, z-scores, the Gower-type embedding, the distance whitening, variable weights);
``partition`` runs the method (inside each stratum, in blocks in the partitioned mode), after
checking its parameters against each part (``MethodInfo.check_params_vs_input``);
``publish`` computes what each group publishes (``representatives``) in the input's own kind;
``measure`` is the run's audit (``measures``: IL, SSE, SST, the bound and gap, weighted IL,
categorical changes). ``microaggregate`` (api.py) is these calls; the out-of-core mode
(outofcore.py) drives the same stages' homes over chunks.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .deadline import Deadline
from .errors import InputError
from .options import Run
from .partition import check_k, check_partition, relabel, sse

__all__ = ["Source", "Roles", "Prepared", "Partitioned", "Published", "GROUP_MEANS", "load", "check_params_vs_input", "prepare",
           "partition", "publish", "measure", "audit_roles", "audit", "deferred_audit", "shuffle_order", "frame_of"]


@dataclass
class Source:
    """The input as a frame; ``kind`` / ``shape`` say how to give the data back; ``table``: the file
    read, when the input was one (its duplicated header names are not in the frame)."""

    frame: object
    kind: str  # "frame", "array" or "native" (a polars, pyarrow, ... frame: microagg.frames)
    shape: tuple | None
    table: object = None
    native: object = None  # the caller's frame of another library than pandas


@dataclass(frozen=True)
class Roles:
    """The run's columns once checked against the data."""

    columns: list
    kinds: dict
    strata: list
    sample_weight_column: str | None
    weights: np.ndarray | None  # one variable weight per QI column
    sample_weights: np.ndarray | None  # one sampling weight per record
    k: int
    n: int
    keys: list = ()  # other published key variables (the audit's)
    sensitive: list = ()  # sensitive columns (the audit's l-diversity)
    household: object = None  # household id column (the shuffle keeps households together)


@dataclass
class Prepared:
    """The matrices of the run: ``Z`` the QI values as the run measures them (z-scores, or the
    embedding with categorical QIs), ``matrix`` what the method sees (whitened, weighted)."""

    embedding: object  # embedding.Embedding
    Z: np.ndarray
    matrix: np.ndarray
    bound_factor: float  # SSE(Z) >= bound_factor · SSE(whitened)
    weights: np.ndarray | None  # variable weights, one per column of Z


@dataclass
class Partitioned:
    labels: np.ndarray
    lower_bound: float | None  # proven on the method's matrix (summed over strata)
    method_facts: dict  # the method's own report (no strata)
    strata: object = None  # result.StrataReport
    stratum_codes: object = None  # strata.Strata: each record's stratum, before and after merging


#: ``Published.values`` when every QI publishes its group's (unweighted) mean: the run's SSE is
#: then the within-group sum of squares
GROUP_MEANS = "group means"


@dataclass
class Published:
    """What the run publishes. ``values`` says what the published QI values are: GROUP_MEANS,
    or else their nature in words ("median (continuous), mode (nominal)", ...); a stage that
    changes them after ``publish`` (rounding, ...) says so here, and ``measure`` reads it."""

    numeric: np.ndarray  # continuous values and ordinal ranks, one row per record
    codes: np.ndarray  # category codes of the categorical columns
    data: object  # the protected data, the input's kind
    changed: list = None  # the columns whose values are published anew: the QIs and recoded strata
    suppression: object = None  # suppression.Suppression: the key values set missing (None: no keys)
    values: str = GROUP_MEANS


# --- load ------------------------------------------------------------------------------------------

def import_dependencies() -> None:
    """Import what every run's stages use (pandas, with the pyarrow it loads, and the stages' own
    modules), once per process, before a caller starts its clock: as compiled kernels
    (``methods.load_kernels``), a one-time cost of the process, not of the run (pandas: 0.16-0.5 s
    of a first 10^4-record MDAV call's 0.3-0.6 s; the stages' modules 0.03 s of its 0.09 s)."""
    import importlib

    for name in ("pandas", ".io", ".columns", ".read_limits", ".strata", ".embedding"):
        importlib.import_module(name, __package__)


def load(data) -> Source:
    """The input as a frame: a DataFrame (pandas, or polars, pyarrow, ... through narwhals:
    ``microagg.frames``), a 1-D or 2-D real array, a file path or an ``io.Table``."""
    import pandas as pd

    from . import frames
    from .io import Table

    if isinstance(data, Table):
        return Source(data.frame, "frame", None, data)
    if isinstance(data, pd.DataFrame):
        return Source(data, "frame", data.shape)
    if isinstance(data, np.ndarray):
        if data.ndim not in (1, 2):
            raise InputError(f"array input must be 1-D or 2-D (records × attributes), got {data.ndim}-D")
        if data.dtype.kind not in "iuf":
            raise InputError(f"array input must be real numbers (integer or float), got dtype {data.dtype}")
        return Source(pd.DataFrame(data.reshape(len(data), -1)), "array", data.shape)
    if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        from . import io

        table = io.read(data)
        return Source(table.frame, "frame", None, table)
    if frames.is_foreign_frame(data):
        return Source(frames.to_pandas(data), "native", None, native=data)
    raise InputError(f"unsupported input type {type(data).__name__}: pass a DataFrame (pandas, polars, pyarrow), "
                     "an ndarray or a file path")


# --- the data hook ---------------------------------------------------------------------------------

def check_params_vs_input(run: Run, source: Source) -> Roles:
    """Every check of the run's options that needs the data, right after loading and before any
    method starts: the columns (named ones exist, are numeric, are not duplicated; the default ones
    by the column rules), their kinds, strata and sample-weight columns, the variable weights
    against the QI columns, the sampling weights against the records, whether the method takes
    categorical QIs, and k against the number of records. InputError / ParameterError."""
    from .embedding import select_qi

    df, info = source.frame, run.info
    columns, strata = run.columns, run.strata or []
    if source.kind == "array" and columns is not None and any(isinstance(c, str) for c in columns):
        raise InputError("columns of an array are positions (integers), not names")
    unknown = [s for s in strata if s not in df.columns]
    if unknown:
        raise InputError(f"unknown strata column(s): {', '.join(map(str, unknown))}")
    sw_col = run.sample_weight if isinstance(run.sample_weight, str) else None
    if sw_col is not None and sw_col not in df.columns:
        raise InputError(f"unknown sample_weight column: {sw_col}")
    keys, sensitive, household = list(run.keys or []), list(run.sensitive or []), run.household
    others = [("keys", keys), ("sensitive", sensitive), ("household", [household] if household is not None else [])]
    for what, names in others:
        unknown = [c for c in names if c not in df.columns]
        if unknown:
            raise InputError(f"unknown {what} column(s): {', '.join(map(str, unknown))}")
    duplicated = set(df.columns[df.columns.duplicated()])
    named = strata + ([sw_col] if sw_col is not None else []) + list(columns or []) + keys + sensitive + (
        [household] if household is not None else [])
    twice = sorted({str(c) for c in named if c in duplicated})
    if twice:
        raise InputError(f"column name(s) {', '.join(twice)} appear more than once in the data; rename them "
                         "to use them as quasi-identifiers, strata or weights")
    if duplicated and columns is None:  # which of the twins would be protected? the user says
        raise InputError(f"column name(s) {', '.join(sorted(map(str, duplicated)))} appear more than once in the "
                         "data: name the quasi-identifier columns with columns= (--columns)")
    if source.table is not None and source.table.duplicates and columns is None:
        warnings.warn(f"column name(s) {', '.join(map(repr, source.table.duplicates))} occur more than once in the "
                      f"header of {source.table.path.name}: they are not protected (a duplicated name cannot be a "
                      "quasi-identifier); rename them to protect them, or remove them before publishing",
                      UserWarning, stacklevel=3)
    categorical, ordinal = run.categorical or [], run.ordinal or {}
    roles_apart = strata + ([sw_col] if sw_col is not None else []) + keys + sensitive + (
        [household] if household is not None else [])
    cols, kinds = select_qi(df, columns, roles_apart, categorical, ordinal, run.missing or (), run.continuous or ())
    nominal = [c for c, kind in kinds.items() if kind != "continuous"]
    if nominal and (info.per_variable or not info.multivariate or not info.categorical):
        raise InputError(f"method {info.name!r} cannot take categorical quasi-identifiers "
                         f"({', '.join(map(str, nominal))}); use a multivariate method such as mdav, or declare "
                         "numeric codes continuous (--continuous) to average them")
    n = len(df)
    k = check_k(run.k, n)
    if keys and run.on_keys_below_k == "refuse":  # known from the input: refused before any work
        from .suppression import below_k

        left = below_k(df, keys, k, strata)
        if left:
            raise InputError(f"{left} records match fewer than {k} records on the keys ({', '.join(map(str, keys))})"
                             + (" within their strata" if strata else "") + " (on_keys_below_k='refuse'): use "
                             "on_keys_below_k='suppress' (--on-keys-below-k suppress), or fewer or coarser keys")
    return Roles(cols, kinds, strata, sw_col, _variable_weights(run.weights, cols),
                 _sample_weights(run.sample_weight, df, n), k, n, keys, sensitive, household)


def _variable_weights(weights, cols) -> np.ndarray | None:
    """One weight per QI column (validated numbers: options._weights) or None."""
    if weights is None:
        return None
    if isinstance(weights, dict):
        unknown = [c for c in weights if c not in cols]
        if unknown:
            raise InputError(f"weights given for column(s) that are not quasi-identifiers: "
                             f"{', '.join(map(str, unknown))}")
        values = [weights.get(c, 1.0) for c in cols]
    else:
        values = list(weights)
        if len(values) != len(cols):
            raise InputError(f"weights has {len(values)} value(s) but there are {len(cols)} "
                             f"quasi-identifier columns ({', '.join(map(str, cols))})")
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
        from .options import positive_weights

        values = col.to_numpy(dtype=np.float64, na_value=np.nan)
        return positive_weights(values, f"sample_weight column {sample_weight}")
    if len(sample_weight) != n:  # values checked with the options (options._sample_weight)
        raise InputError(f"sample_weight must have one value per record ({n}), got shape {sample_weight.shape}")
    return sample_weight


# --- prepare ---------------------------------------------------------------------------------------

def prepare(source: Source, roles: Roles, run: Run) -> Prepared:
    """The matrix the method sees: z-scores of continuous columns, the Gower-type embedding of the
    others (``embedding.embed``), whitened by the ``distance`` option's whitening, each column scaled by
    the square root of its variable weight (the method then minimises Σ_j w_j·SSE_j)."""
    from .embedding import embed, method_matrix

    emb = embed(source.frame, roles.columns, roles.kinds, run.standardize, run.ordinal or {},
                missing=run.missing or ())
    M, bound_factor = method_matrix(emb, run.distance, run.seed)  # whitened when distance is not euclidean
    w = None if roles.weights is None else np.repeat(roles.weights, emb.widths())  # over a one-hot block too
    matrix = M if w is None else np.ascontiguousarray(M * np.sqrt(w))
    return Prepared(emb, emb.matrix, matrix, bound_factor, w)


# --- partition -------------------------------------------------------------------------------------

def partition(source: Source, roles: Roles, prepared: Prepared, run: Run, deadline: Deadline, progress) -> Partitioned:
    """The method's labels: inside each stratum (groups never cross strata), in blocks in the
    partitioned mode. The method's parameters are checked against every part before the first
    method starts; its compiled kernels load outside the budget."""
    from . import methods as registry
    from .methods.starts import restricted
    from .strata import stratum_codes

    info, params, k, Z = run.info, run.params, roles.k, prepared.matrix
    strata = stratum_codes(source.frame, roles.strata, Z, k, run.merge_small_strata,
                           run.merged_strata == "refuse") if roles.strata else None
    if run.labels is not None:
        return _given_partition(run.labels, strata, Z, k, run)
    units = list(strata.rows()) if strata is not None else [(None, np.arange(len(Z)))]
    for _, rows in units:
        info.check_params_vs_input(restricted(params, rows) if strata is not None else params, len(rows),
                                   Z.shape[1], k)
    # every input checked: the kernels the largest part will call load outside the budget
    largest = max(len(rows) for _, rows in units)
    registry.load_kernels(info.name, (largest, Z.shape[1]), progress, deadline)
    if strata is None:
        labels, out = _run_unit(Z, k, run, params, deadline, progress)
        return Partitioned(labels, out.lower_bound, dict(out.extras))
    return _partition_strata(strata, Z, k, run, deadline, progress)


def _given_partition(labels, strata, Z, k, run: Run) -> Partitioned:
    """A partition given to publish (``labels``, e.g. an explore run's): one label per record, every
    group at least k records, each group inside one (merged) stratum; the method does not run."""
    from .result import StrataReport, StratumRun

    if run.info.per_variable:
        raise InputError(f"labels cannot be given for method {run.info.name!r}, which groups each variable on its own")
    n = len(Z)
    if labels.shape != (n,):
        raise InputError(f"labels must give one group per record ({n}), got shape {labels.shape}")
    if labels.min() < 0:
        raise InputError("the given labels must be group numbers >= 0 (a negative label leaves a record without group)")
    labels = relabel(labels)
    sizes = np.bincount(labels)
    if sizes.min() < k:
        raise InputError(f"the given labels hold a group of {int(sizes.min())} record(s), fewer than k = {k}")
    facts = {"given_labels": True}
    if strata is None:
        return Partitioned(labels, None, facts)
    pairs = np.unique(labels * (int(strata.codes.max()) + 1) + strata.codes)  # (group, stratum) pairs
    if len(pairs) != len(sizes):  # some group holds records of two strata
        raise InputError("the given labels put records of different strata in one group: groups never cross strata")
    runs = [StratumRun(strata.names[code], strata.members[code], int(len(rows)), sse(Z[rows], labels[rows]), None,
                       {}) for code, rows in strata.rows()]
    report = StrataReport(tuple(runs), tuple(strata.merges), run.merged_strata if strata.merges else None,
                          tuple(strata.mapping(run.merged_strata)) if strata.merges else ())
    return Partitioned(labels, None, facts, report, strata)


def _run_unit(Z, k, run: Run, params, deadline, progress):
    """One method run (partitioned when block_size / scheduler is given), labels checked."""
    from . import methods as registry

    name = run.info.name
    if run.block_size is not None or run.scheduler is not None:
        from .partitioned import DEFAULT_REFINE, partitioned_labels

        labels = partitioned_labels(Z, k, name, block_size=run.block_size, scheduler=run.scheduler, seed=run.seed,
                                    deadline=deadline, progress=progress,
                                    refine=DEFAULT_REFINE if run.refine is None else run.refine, **params)
        return check_partition(labels, len(Z), k, f"{name} (partitioned)"), registry.MethodOutput(labels)
    out = registry.run(name, Z, k, seed=run.seed, deadline=deadline, progress=progress, **params)
    return check_partition(out.labels, len(Z), k, name), out


def _partition_strata(strata, Z, k, run: Run, deadline: Deadline, progress) -> Partitioned:
    """The method inside each stratum; each gets ``deadline.share(its records, records still to
    do)``, and a method with a ``default_work`` shares that cap when the caller gave no time
    limit nor work budget. Bounds add up."""
    from .methods.starts import restricted
    from .progress import part
    from .result import StrataReport, StratumRun

    info = run.info
    if not deadline.limited and info.default_work is not None:  # the cap is for the whole run
        deadline = Deadline(work=info.default_work(len(Z), Z.shape[1], k), cap=True)
    n = len(Z)
    labels = np.full((n, Z.shape[1]) if info.per_variable else n, -1, dtype=np.int64)
    offset, todo = 0, n
    bound, have_bound = 0.0, True
    runs = []
    for code, rows in strata.rows():
        name = strata.names[code]
        report = part(progress, (n - todo) / n, (n - todo + len(rows)) / n, prefix=f"stratum {name}: ")
        lab, out = _run_unit(Z[rows], k, run, restricted(run.params, rows), deadline.share(len(rows), todo), report)
        todo -= len(rows)
        labels[rows] = lab + offset
        offset = int(labels[rows].max()) + 1
        if out.lower_bound is None:
            have_bound = False
        else:
            bound += out.lower_bound
        runs.append(StratumRun(name, strata.members[code], int(len(rows)), sse(Z[rows], lab),
                               None if out.lower_bound is None else float(out.lower_bound), dict(out.extras)))
    published = strata.mapping(run.merged_strata) if strata.merges else []
    report = StrataReport(tuple(runs), tuple(strata.merges), run.merged_strata if strata.merges else None,
                          tuple(published))
    return Partitioned(relabel(labels), bound if have_bound else None, {}, report, strata)


# --- publish ---------------------------------------------------------------------------------------

def publish(source: Source, roles: Roles, prepared: Prepared, partitioned: Partitioned, run: Run) -> Published:
    """What each record publishes (``representatives.publish``: the aggregation of continuous
    columns, the median category of ordinal ones, the mode of nominal ones), in the input's kind
    and shape: only the QI columns change; categorical ones keep their dtype."""
    from .representatives import publish as representatives

    emb = prepared.embedding
    numeric, codes = representatives(emb, partitioned.labels, run.aggregation, _aggregation_arguments(run),
                                     roles.sample_weights)
    nature = _published_values(emb, run, roles.sample_weights is not None)
    df = source.frame
    strata = partitioned.stratum_codes
    recoded = strata.published_columns(df, roles.strata, run.merged_strata) if strata is not None else {}
    changed = list(roles.columns) + list(recoded)
    if source.kind == "array":
        out = df.to_numpy(dtype=np.float64, copy=True)
        for c in roles.columns:
            out[:, df.columns.get_loc(c)] = np.asarray(emb.published_column(c, numeric, codes), dtype=np.float64)
        for c, values in recoded.items():
            out[:, df.columns.get_loc(c)] = np.asarray(values, dtype=np.float64)
        suppression = _suppress_keys(frame_of(out, df.columns), roles, run)
        if suppression is not None:
            for j, c in enumerate(suppression.keys):
                out[suppression.suppressed[:, j], df.columns.get_loc(c)] = np.nan
        return Published(numeric, codes, out.reshape(source.shape), changed + _suppressed_columns(suppression),
                         suppression, nature)
    out = df.copy()
    for c in roles.columns:
        out[c] = emb.published_column(c, numeric, codes, df[c])
    for c, values in recoded.items():
        out[c] = values
    suppression = _suppress_keys(out, roles, run)
    if suppression is not None and suppression.total:
        from .suppression import apply

        out = apply(out, suppression)
    changed = changed + _suppressed_columns(suppression)
    if source.kind == "native":  # the caller's frame, only the changed columns replaced
        from .frames import give_back

        return Published(numeric, codes, give_back(source.native, out, changed), changed, suppression, nature)
    return Published(numeric, codes, out, changed, suppression, nature)


def _suppress_keys(frame, roles: Roles, run: Run):
    """The published file's last stage: local suppression of the declared keys (``suppression``),
    the published QIs and strata fixed, so that the whole file is k-anonymous on every key
    variable; or, by ``on_keys_below_k``, a refusal or a report."""
    if not roles.keys:
        return None
    from .suppression import for_run

    return for_run(frame, list(roles.keys), roles.k, run.on_keys_below_k, run.key_importance,
                   list(roles.columns) + list(roles.strata))


def _suppressed_columns(suppression) -> list:
    """The key columns in which values were suppressed: they are published anew."""
    if suppression is None:
        return []
    return [c for c, count in suppression.per_key.items() if count]


def _aggregation_arguments(run: Run) -> dict:
    """The values of the chosen aggregation's parameters (run options; defaults where not given)."""
    from .representatives import AGGREGATIONS

    chosen = AGGREGATIONS[run.aggregation]
    return chosen.arguments({name: getattr(run, name) for name in chosen.params})


def _representatives_in_words(emb, run: Run) -> list[str]:
    """What a group publishes, per kind of QI ("median (continuous)", "mode (nominal)", ...)."""
    from .representatives import AGGREGATIONS

    described = AGGREGATIONS[run.aggregation].describe(_aggregation_arguments(run))
    parts = [f"{described} (continuous)"] if emb.continuous_columns else []
    if any(kind == "ordinal" for kind in emb.kinds.values()):
        parts.append("median category (ordinal)")
    if any(kind == "nominal" for kind in emb.kinds.values()):
        parts.append("mode (nominal)")
    return parts


def _published_values(emb, run: Run, weighted: bool) -> str:
    """The nature of the published QI values (``Published.values``)."""
    from .representatives import AGGREGATIONS

    if AGGREGATIONS[run.aggregation].group_means and not weighted and not emb.heterogeneous:
        return GROUP_MEANS
    return ", ".join(_representatives_in_words(emb, run)) + (" (weighted)" if weighted else "")


# --- measure ---------------------------------------------------------------------------------------

def measure(source: Source, roles: Roles, prepared: Prepared, partitioned: Partitioned, published: Published,
            run: Run):
    """The run's audit (the "run" measures of ``measures``: IL, SSE, SST, the bound converted to
    the SSE of Z and the gap, weighted IL, group sizes; the categorical QIs' changes), and what the
    run published (``result.Publication``) and proved (``result.Bound``)."""
    import pandas as pd

    from .measures import RunInputs, audit, categorical_report
    from .result import Bound

    emb, labels = prepared.embedding, partitioned.labels
    Zp = emb.embed(published.numeric, published.codes)
    means = published.values == GROUP_MEANS
    inputs = RunInputs(prepared.Z, Zp, labels, means, partitioned.lower_bound, prepared.bound_factor,
                       prepared.weights, prepared.matrix)
    result = audit(inputs, "run")
    if emb.heterogeneous:  # per categorical column: share of changed values, distribution distance
        df = source.frame
        result = type(result)(result.figures, categorical_report(
            df[emb.categorical_columns],
            pd.DataFrame({c: emb.published_column(c, published.numeric, published.codes, df[c])
                          for c in emb.categorical_columns}, index=df.index)))
    return result, _publication(emb, prepared.Z, labels, run, inputs.sse), Bound(inputs.whitened_bound,
                                                                                  inputs.weighted_bound)


def _publication(emb, Z, labels, run: Run, total_sse: float):
    """What was published: the aggregation and its parameters, the kinds, the SSE to the group
    means (group means, weighted or not, of continuous QIs only: nothing to say)."""
    from .representatives import AGGREGATIONS
    from .result import Publication

    kinds = {str(c): emb.kinds[c] for c in emb.columns}
    if AGGREGATIONS[run.aggregation].group_means and not emb.heterogeneous:
        return Publication(run.aggregation, {}, run.distance, kinds)
    to_means = sse(Z, labels) if labels.ndim == 1 else None
    parts = ", ".join(_representatives_in_words(emb, run))
    note = f"representatives: {parts}; IL is measured to the published values"
    if to_means is not None:
        note += f" (SSE {total_sse:.6g}; to the group means it would be {to_means:.6g})"
    return Publication(
        run.aggregation, _aggregation_arguments(run), run.distance, kinds, to_means, note
    )


# --- the published file's audit and its row order ------------------------------------------------

def audit_roles(roles: Roles, run: Run, p: float = 10.0):
    """The roles the file audit needs (``audit.AuditRoles``), from the run's."""
    from .audit import AuditRoles

    sw = roles.sample_weight_column
    return AuditRoles(tuple(roles.columns), dict(roles.kinds), roles.k, tuple(roles.strata), tuple(roles.keys),
                      tuple(roles.sensitive), sw, dict(run.ordinal or {}), bool(run.standardize), p=float(p))


def frame_of(data, columns) -> object:
    """Data (a DataFrame, or an array of the input's shape) as a DataFrame with ``columns``."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if not isinstance(data, np.ndarray):  # a polars, pyarrow, ... frame
        from .frames import to_pandas

        return to_pandas(data)
    return pd.DataFrame(np.asarray(data).reshape(len(data), -1), columns=columns)


def audit(source: Source, roles: Roles, prepared: Prepared, published: Published, run: Run, p: float = 10.0):
    """The published data's audit (``audit.audit_files``: utility and disclosure risk on the key
    variables, grouped as the data are given), in the input's row order; the run's embedding of
    the original is the audit's (not built again: 1.5 s at 10^6 x 13)."""
    from .audit import audit_files, embedding_key

    frame = frame_of(published.data, source.frame.columns)
    given = audit_roles(roles, run, p)
    return audit_files(source.frame, frame, given,
                       sample_weights=roles.sample_weights if roles.sample_weight_column is None else None,
                       seed=run.seed, cache={embedding_key(given): prepared.embedding})


def deferred_audit(source: Source, roles: Roles, prepared: Prepared, published: Published, run: Run):
    """``audit`` of this run, computed when ``Result.audit`` is first read (``result.PendingAudit``),
    on the input and the published data as they are now: pandas' copy-on-write keeps a shallow
    copy of a frame from the caller's later edits (free), an array is copied."""
    from dataclasses import replace

    from .result import PendingAudit

    def snapshot(data):
        if hasattr(data, "iloc"):
            return data.copy(deep=False)
        if isinstance(data, np.ndarray):
            return np.array(data, copy=True)
        return data  # a pyarrow or polars frame: immutable, every edit makes a new one

    return PendingAudit(audit, replace(source, frame=snapshot(source.frame)), roles, prepared,
                        replace(published, data=snapshot(published.data)), run)


def shuffle_order(run: Run, frame) -> np.ndarray | None:
    """The order the records are published in: None (the input's), or with ``shuffle`` a uniformly
    random permutation (``disclosure.shuffle_permutation``; households together when a household
    column is given), from fresh operating-system entropy unless the API's ``shuffle_seed`` is
    given. The permutation is never kept or written: with it (or the seed) anyone could undo it."""
    if not run.shuffle:
        return None
    from .disclosure import shuffle_permutation

    groups = None if run.household is None else frame[run.household].to_numpy()
    return shuffle_permutation(len(frame), run.shuffle_seed, groups=groups)


def reorder(data, order: np.ndarray):
    """``data``'s rows in ``order`` (a DataFrame gets a fresh 0..n-1 index: no trace of the old positions)."""
    if hasattr(data, "iloc"):
        return data.iloc[order].reset_index(drop=True)
    if not isinstance(data, np.ndarray):  # a polars, pyarrow, ... frame
        from .frames import take_rows

        return take_rows(data, order)
    return np.asarray(data)[order]
