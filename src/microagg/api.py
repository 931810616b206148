"""microaggregate(): the pipeline, one call per stage (``microagg.pipeline``).

options validated (``microagg.options``) -> load -> check the options against the data ->
prepare (kinds, z-scores, embedding, distance, weights) -> partition (method, strata, blocks;
every labelling checked) -> publish (representatives in original units) -> measure (the audit)
-> Result
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from . import pipeline
from .deadline import TIME_CUT_NOTE, Deadline
from .labels import group_sizes
from .options import call_options, validate_run
from .progress import channel
from .result import Portfolio, Result, Weights

if TYPE_CHECKING:
    from distributed import Client
    from typing_extensions import Unpack

    from .options.generated import MicroaggregateOptions
    from .public_types import Columns, DataInput

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
    **options: Unpack[MicroaggregateOptions],
) -> Result:
    """Microaggregate ``data`` so that every group of quasi-identifier values has at least k
    records.

    Records are grouped into groups of at least ``k`` similar records (by ``method``, on the
    z-scores of the quasi-identifiers (QIs)) and each QI value is replaced by its group's
    representative (the mean by default): IL = 100·SSE/SST on the z-scores. Every option and
    parameter is checked before the data are read (``ParameterError``, an ``InputError``, in one
    line); what needs the data (columns exist, k against n, ...) right after loading. The options
    are declared once, in ``microagg.options.RUN_OPTIONS`` (the table of run options on this
    page).

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame, pyarrow.Table, numpy.ndarray, str or io.Table
        The microdata (the same kind comes back), or a file path (``microagg.io``'s formats).
    k : int, default 3
        Minimum group size (at least 2, at most the number of records).
    method : str, default "mdav"
        A registered method (``microagg.methods()``; ``microagg methods -v``).
    columns : str or list, optional
        QI columns (default: every numeric column, strata excluded; for an array, positions).
    seed : int or None, default 0
        Random seed of randomised methods, blocks and the robust distance.
    standardize : bool, default True
        Run on z-scores; False: on the raw values (SSE, SST and the bound in raw units).
    time_limit : float, optional
        The whole call's wall-clock budget in seconds (None or inf: none), a safety cap.
    strata : str or list, optional
        Stratum columns: groups never cross strata.
    block_size : int, optional
        Partitioned mode: records per block (at least k).
    scheduler : str or distributed.Client, optional
        Partitioned mode: the Dask scheduler (threads, processes, synchronous) or a client.
    **options
        The other run options by keyword (``microagg.options.generated.KeywordOptions``, each
        documented there: work, weights, aggregation, keys, shuffle, labels, audit, ...), and the
        method's own parameters (``microagg methods -v``; e.g. ``gamma`` of ``vmdav``).

    Returns
    -------
    Result
        The protected data (the input's kind and shape, rows in order, non-QI columns unchanged),
        the partition (``labels``), the information loss and the audit.

    Examples
    --------
    >>> import microagg
    >>> df = microagg.datasets.load("census").head(300)
    >>> res = microagg.microaggregate(df, k=3, method="mdav", columns=["AGI", "FEDTAX"])
    >>> int(res.group_sizes.min()) >= 3, res.data.shape == df.shape
    (True, True)
    """
    given, params = call_options(locals(), options)
    return _microaggregate(data, given, params)


def _microaggregate(data, options: dict, params: dict) -> Result:
    """The run: the pipeline's stages, once the call's options are known (given ones only)."""
    run = validate_run(options, params)  # every option and parameter, before the data are read
    pipeline.import_dependencies()
    deadline = Deadline(
        run.time_limit, work=run.work
    )  # the whole call's budget (the checks above take microseconds)
    if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        _check_header(data, options)  # a misspelt column: one line before the body is read
    source = pipeline.load(data)
    roles = pipeline.check_params_vs_input(run, source)
    prepared = pipeline.prepare(source, roles, run)
    with channel(run.progress, run.time_limit, f"microagg {run.method}") as report:
        grouped = pipeline.group(source, roles, prepared, run, deadline, report)
    grouped = pipeline.cover_missing(prepared, grouped, roles)
    grouped = pipeline.grouped_stages(source, roles, prepared, grouped, run)
    published = pipeline.publish_values(source, roles, prepared, grouped, run)
    audit, publication, bound = pipeline.measure(source, roles, prepared, grouped, published, run)
    audit = pipeline.note_missing(audit, prepared, grouped, roles)
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
        grouped,
        published,
        (audit, publication, bound, pending),
        deadline,
        seconds,
        order,
    )


def _result(run, roles, prepared, grouped, published, measured, deadline, seconds, order) -> Result:
    """The Result: the published data (in the published order), the partition, the figures and
    the facts of every stage."""
    audit, publication, bound, pending = measured
    labels = grouped.labels
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
        strata=grouped.strata,
        portfolio=Portfolio.of(grouped.method_facts),
        weights=Weights(
            (
                None
                if roles.weights is None
                else {str(c): float(w) for c, w in zip(roles.columns, roles.weights)}
            ),
            sample_weight,
        ),
        publication=publication,
        method_facts=grouped.method_facts,
        changed_columns=published.changed,
        shuffled=order is not None,
        audit_roles=pipeline.audit_roles(roles, run),
        time_cut=deadline.time_cut,
        suppression=published.suppression,
        left_out=tuple(roles.left_out),
        pending_audit=pending,
    )


def _check_header(path, options: dict) -> None:
    """Every column the options name is in the file's header, read alone (as ``protect`` checks
    it): a bad name in a file of millions of rows is one line before the body is read."""
    import os
    from pathlib import Path

    from . import io
    from .io.names import check_names

    source = Path(os.fsdecode(path))
    if source.exists():
        check_names(options, io.read_header(source), source)
