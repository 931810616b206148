"""microaggregate(): the pipeline, one call per stage (``microagg.pipeline``).

options validated (``microagg.options``) -> load -> check the options against the data ->
prepare (kinds, z-scores, embedding, distance, weights) -> partition (method, strata, blocks;
every labelling checked) -> publish (representatives in original units) -> measure (the audit)
-> Result
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING

from . import pipeline
from .deadline import TIME_CUT_NOTE, Deadline
from .options import given_options, validate_run
from .partition import group_sizes
from .progress import channel
from .result import Portfolio, Result, Weights

if TYPE_CHECKING:
    from typing import Any

    from distributed import Client
    from numpy.typing import ArrayLike
    from typing_extensions import Unpack

    from .typed import (
        Aggregation,
        Columns,
        DataInput,
        Distance,
        MergedStrata,
        MethodParams,
        OnKeysBelowK,
        Progress,
    )

__all__ = ["Result", "microaggregate"]


def microaggregate(
    data: DataInput,
    k: int = 3,
    method: str = "mdav",
    columns: Columns | None = None,
    seed: int | None = 0,
    standardize: bool = True,
    time_limit: float | None = None,
    strata: Columns | None = None,
    block_size: int | None = None,
    scheduler: str | Client | None = None,
    *,
    work: float | None = None,
    refine: float | None = None,
    weights: Sequence[float] | Mapping[Hashable, float] | None = None,
    sample_weight: Hashable | ArrayLike | None = None,
    merge_small_strata: bool = False,
    categorical: Columns | None = None,
    ordinal: Columns | Mapping[Hashable, Sequence[Any]] | None = None,
    distance: Distance = "euclidean",
    aggregation: Aggregation = "mean",
    trim: float | None = None,
    missing: str | Sequence[str] | None = None,
    continuous: Columns | None = None,
    keys: Columns | None = None,
    on_keys_below_k: OnKeysBelowK = "suppress",
    key_importance: Columns | None = None,
    sensitive: Columns | None = None,
    merged_strata: MergedStrata = "recode",
    shuffle: bool = False,
    household: Hashable | None = None,
    shuffle_seed: int | None = None,
    labels: ArrayLike | None = None,
    audit: bool = True,
    progress: bool | Progress | None = False,
    **params: Unpack[MethodParams],
) -> Result:
    """Microaggregate ``data`` so that every group of quasi-identifier values has at least k
    records.

    Records are grouped into groups of at least ``k`` similar records (by ``method``, on the
    z-scores of the quasi-identifiers (QIs)) and each QI value is replaced by its group's
    representative (the mean by default), so every published combination of QI values is shared
    by at least ``k`` records. Information loss is IL = 100·SSE/SST on the z-scores.

    Every option and method parameter is validated before the data are read (a bad one raises
    ``ParameterError``, an ``InputError``, in one
    line); what needs the data (columns exist, k against n, ...) is checked right after loading,
    before any method starts. The options are declared once, in ``microagg.options.RUN_OPTIONS``:
    the command line's flags, the app's controls and this signature follow them (a test holds
    this signature against the table).

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame, pyarrow.Table, numpy.ndarray, str or io.Table
        The microdata: a data frame (the same kind comes back), a 1-D or 2-D array, or a file path
        (CSV, Parquet, Stata, SPSS, SAS, Excel: ``microagg.io``).
    k : int, default 3
        Minimum group size (at least 2, at most the number of records).
    method : str, default "mdav"
        A registered method (``microagg.methods()``; ``microagg methods -v`` lists their papers and
        parameters).
    columns : str or list, optional
        Quasi-identifier columns (default: every numeric column, strata excluded; for an array,
        positions).
    seed : int or None, default 0
        Random seed of randomised methods, blocks and the robust distance.
    standardize : bool, default True
        Run the method on z-scores; False: on the raw values (SSE, SST and the bound are then in
        raw units).
    time_limit : float, optional
        The wall-clock budget of the whole call, in seconds (None or inf: no limit). A safety cap:
        a run it cuts says "stopped by the time limit: not reproducible". MDAV stops forming groups
        at the limit and groups the rest by median splits (a warning); anytime methods overshoot
        by at most about max(0.5 s, 10 %).
    strata : str or list, optional
        Stratum columns: groups never cross strata.
    block_size : int, optional
        Partitioned mode: records per block (at least k).
    scheduler : str or distributed.Client, optional
        Partitioned mode: the Dask scheduler (threads, processes, synchronous), a cluster's
        address or a ``distributed.Client``.
    work : float, optional
        The work budget of the whole call, in the methods' deterministic units
        (docs/reproducibility.md): the same input, options and seed give the same output at any
        load. Methods that improve until stopped (``auto``, ``icsm``, ``colgen``, ...) take a
        default sized from the data when neither bound is given.
    refine : float, optional
        Partitioned mode: share of the groups the refinement tries to improve (None: 0.05).
    weights : list of float or dict, optional
        Variable weights for the distance: one positive number per QI column, or
        ``{column: weight}`` (others weigh 1). The method then minimises Σ_j w_j·SSE_j.
    sample_weight : str or array-like, optional
        Sampling weights for weighted group means: a column, or one positive number per record.
    merge_small_strata : bool, default False
        Merge a stratum smaller than k into the stratum with the nearest QI centroid (else such a
        stratum is an error).
    categorical : str or list, optional
        Nominal QI columns (published as the group's mode).
    ordinal : str, list or dict, optional
        Ordinal QI columns (published as the group's median category); also
        ``{column: [levels, lowest first]}``.
    distance : {"euclidean", "mahalanobis", "robust"}, default "euclidean"
        The distance the methods group records by: the whitening of the continuous columns
        (``microagg.whitening.WHITENINGS``; "euclidean": none).
    aggregation : {"mean", "median", "trimmed", "onestep"}, default "mean"
        What a group publishes for continuous columns (``microagg.representatives.AGGREGATIONS``).
    trim : float, optional
        Share trimmed at each end with ``aggregation="trimmed"`` (None: 0.1).
    missing : str or list of str, optional
        Text tokens that mean missing (e.g. ``"-,.,n/a"``); a missing value in a QI is still an
        error, other columns are written unchanged.
    continuous : str or list, optional
        QI columns declared continuous: published as group means even when they look like
        category codes.
    keys : str or list, optional
        Other published categorical key variables a reader can match on (published unchanged; the
        audit's k-anonymity and re-identification risk include them).
    on_keys_below_k : {"suppress", "refuse", "report"}, default "suppress"
        What a run does when records match fewer than k records on the declared keys (QIs and
        strata included; a missing value matches any): set the fewest key values missing (local
        suppression, docs/local-suppression.md), refuse before any work, or publish and report.
    key_importance : list, optional
        The keys in order of importance, most important first: suppressed last (default: fewer
        categories first, as sdcMicro's ``localSuppression``).
    sensitive : str or list, optional
        Sensitive columns whose l-diversity the audit measures within the key combinations.
    merged_strata : {"recode", "suppress", "refuse"}, default "recode"
        What the published stratum column shows for strata merged because smaller than k.
    shuffle : bool, default False
        Publish the records in a random order (``labels`` and the audit stay in the input's).
    household : str, optional
        Household id column: ``shuffle`` keeps each household's records together.
    shuffle_seed : int, optional
        A seed for the shuffle's permutation (tests only: with it anyone can undo the shuffle).
    labels : array-like of int, optional
        Publish this partition (one group label per record, e.g. an explore run's) instead of
        running the method; every group is checked to hold at least k records inside one stratum.
    audit : bool, default True
        Measure the published data into ``Result.audit`` (utility, k-anonymity of the key
        variables, re-identification risk, l-diversity, interval disclosure, row order), when
        ``Result.audit`` is first read.
    progress : bool or callable, default False
        True: a progress bar on stderr; a callable receives ``progress(stage, fraction, message)``.
    **params
        The method's own parameters (``microagg methods -v``; e.g. ``gamma`` of ``vmdav``).

    Returns
    -------
    Result
        The protected data (``Result.data``: the same kind and shape as the input, the same rows
        in the same order, every non-QI column unchanged), the partition (``labels``), the
        information loss and the audit.

    Raises
    ------
    ParameterError
        A bad option or parameter, before the data are read.
    InputError
        Data that cannot be protected as asked (a missing column, NaN in a QI, k > n, ...).

    Notes
    -----
    ``time_limit`` is shared by strata, blocks, portfolio members and initial methods by one rule
    (``microagg.deadline``); the file audit is not part of the call. Methods registered as not
    interruptible (md, npn-mhm, ...) run to completion or are refused at once where their least time
    does not fit
    (benchmarks/results/colgen_time_limit.md). The method's compiled kernels load before the clock
    starts, once per process (``methods.load_kernels``).

    With variable weights, standardised column j is multiplied by sqrt(w_j) before the method, so
    it minimises Σ_j w_j·SSE_j; IL and SSE stay on the unweighted columns (the weighted IL is an
    audit figure) and a proven bound on the weighted SSE becomes one on the SSE by dividing by
    max w_j. With sampling weights, robust aggregates or categorical QIs, IL is measured to the
    published values. Categorical / ordinal QIs are embedded as in ``microagg.embedding``
    (nominal columns publish the group's mode, ordinal ones its median category, in the column's
    own dtype); a non-euclidean distance whitens the continuous part before the method. Strata
    merged because smaller than k are recoded or suppressed in the stratum columns
    (``merged_strata``). The published data's file audit is computed when ``Result.audit`` is
    first read, not during the call (docs/performance.md).

    Examples
    --------
    >>> import microagg
    >>> df = microagg.datasets.load("census").head(300)
    >>> res = microagg.microaggregate(df, k=3, method="mdav", columns=["AGI", "FEDTAX"])
    >>> int(res.group_sizes.min()) >= 3
    True
    >>> res.data.shape == df.shape and list(res.data.columns) == list(df.columns)
    True
    >>> round(res.information_loss, 4) > 0
    True
    """
    return _microaggregate(data, given_options(locals()), dict(params))


def _microaggregate(data, options: dict, params: dict) -> Result:
    """The run: the pipeline's stages, once the call's options are known (given ones only)."""
    run = validate_run(options, params)  # every option and parameter, before the data are read
    pipeline.import_dependencies()
    deadline = Deadline(
        run.time_limit, work=run.work
    )  # the whole call's budget (the checks above take microseconds)
    source = pipeline.load(data)
    roles = pipeline.check_params_vs_input(run, source)
    prepared = pipeline.prepare(source, roles, run)
    with channel(run.progress, run.time_limit, f"microagg {run.method}") as report:
        partitioned = pipeline.partition(source, roles, prepared, run, deadline, report)
    published = pipeline.publish(source, roles, prepared, partitioned, run)
    audit, publication, bound = pipeline.measure(
        source, roles, prepared, partitioned, published, run
    )
    if (
        deadline.time_cut
    ):  # the clock, not the work done, ended the run: another load gives another file
        audit = dataclasses.replace(
            audit,
            warnings=audit.warnings + (TIME_CUT_NOTE,),
            context={**audit.context, "reproducible": False},
        )
    seconds = deadline.elapsed()  # the protection's time; the file audit is not part of it
    # the file audit runs when Result.audit is first read (issue 45: the default call costs the
    # protection)
    pending = (
        pipeline.deferred_audit(source, roles, prepared, published, run) if run.audit else None
    )
    order = pipeline.shuffle_order(
        run, source.frame
    )  # after the audit, which pairs records in input order
    return _result(
        run,
        roles,
        prepared,
        partitioned,
        published,
        (audit, publication, bound, pending),
        deadline,
        seconds,
        order,
    )


def _result(
    run, roles, prepared, partitioned, published, measured, deadline, seconds, order
) -> Result:
    """The Result: the published data (in the published order), the partition, the figures and
    the facts of every stage."""
    audit, publication, bound, pending = measured
    labels = partitioned.labels
    sizes = (
        [group_sizes(labels[:, j]) for j in range(labels.shape[1])]
        if labels.ndim == 2
        else group_sizes(labels)
    )
    sample_weight = (
        None if roles.sample_weights is None else (roles.sample_weight_column or "array")
    )
    return Result(
        data=published.data if order is None else pipeline.reorder(published.data, order),
        labels=labels,
        information_loss=audit.group("run")["information_loss"],
        sse=audit["sse"],
        sst=audit["sst"],
        lower_bound=audit["lower_bound"],
        gap=audit["gap"],
        method=run.method,
        params=dict(run.given),
        seconds=seconds,
        group_sizes=sizes,
        k=roles.k,
        columns=roles.columns,
        per_variable=run.info.per_variable,
        scaler=prepared.embedding.scaler,
        standardized=prepared.Z,
        audit=audit,
        bound=bound,
        strata=partitioned.strata,
        portfolio=Portfolio.of(partitioned.method_facts),
        weights=Weights(
            (
                None
                if roles.weights is None
                else {str(c): float(w) for c, w in zip(roles.columns, roles.weights)}
            ),
            sample_weight,
        ),
        publication=publication,
        method_facts=partitioned.method_facts,
        changed_columns=published.changed,
        shuffled=order is not None,
        audit_roles=pipeline.audit_roles(roles, run),
        time_cut=deadline.time_cut,
        suppression=published.suppression,
        pending_audit=pending,
    )
