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
from .kernels.cores import end_probe, start_probe
from .labels import group_sizes
from .options import call_options, validate_run
from .progress import channel
from .result import Portfolio, Result, Weights

if TYPE_CHECKING:
    from distributed import Client
    from typing_extensions import Unpack

    from .options.generated import MicroaggregateOptions
    from .public_types import Columns, DataInput

__all__ = ["Result", "microaggregate", "compute", "Computed"]


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
    """The call: its options validated once, the data's header checked, the stages computed, the
    file audit deferred to its first read and the rows in the published order."""
    run = validate_run(options, params)  # every option and parameter, before the data are read
    if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        _check_header(data, options)  # a misspelt column: one line before the body is read
    computed = compute(data, run)
    # the file audit runs when Result.audit is first read (issue 45: the default call costs the
    # protection)
    pending = computed.deferred_audit() if run.audit else None
    # after the audit, which pairs records in input order
    order = pipeline.shuffle_order(run, computed.source.frame)
    return computed.result(order=order, pending_audit=pending)


@dataclasses.dataclass(frozen=True)
class Computed:
    """The compute stage's value: every stage of the run (``microagg.pipeline``) on validated
    options, the run's own figures measured, nothing reordered and no file audit. The API makes
    its ``Result`` from it (``result``, its file audit deferred); the publication writes it,
    reads the file back and audits that (``microagg.publication.stages``)."""

    run: object  # options.Run
    source: pipeline.Source
    roles: pipeline.Roles
    prepared: pipeline.Prepared
    grouped: pipeline.Grouped
    published: pipeline.Published
    measured: tuple  # (the run's audit, its Publication, its Bound)
    time_cut: bool
    seconds: float
    audit_roles: object  # measures.AuditRoles: the roles of the published data's audit, made once

    @property
    def embedding(self):
        """The run's embedding of the original (the file audit's, not built again)."""
        return self.prepared.embedding

    def published_columns(self) -> dict:
        """Column name -> published values, in the input's order (what ``io.write`` takes)."""
        data = self.published.data
        return {c: data[c].to_numpy() for c in self.published.changed}

    def deferred_audit(self):
        """The published data's audit, computed when ``Result.audit`` is first read."""
        return pipeline.deferred_audit(
            self.source, self.roles, self.prepared, self.published, self.run
        )

    def result(self, *, order=None, pending_audit=None, audit=None, file=None) -> Result:
        """The Result, made once: the published data (in ``order``, or the input's), the
        partition, the figures (the run's, or ``audit``: the run's and its written file's) and the
        facts of every stage; ``file``: the publication's ``PublishedFile``."""
        run_audit, publication, bound = self.measured
        labels = self.grouped.labels
        sizes = (
            [group_sizes(labels[:, j]) for j in range(labels.shape[1])]
            if labels.ndim == 2
            else group_sizes(labels)
        )
        roles, run = self.roles, self.run
        sample_weight = (
            None if roles.sample_weights is None else (roles.sample_weight_column or "array")
        )
        data = self.published.data
        return Result(
            data=data if order is None else pipeline.reorder(data, order),
            labels=labels,
            information_loss=run_audit.group("run")["information_loss"],
            sse=run_audit["sse"],
            sst=run_audit["sst"],
            lower_bound=run_audit["lower_bound"],
            gap=run_audit["gap"],
            method=run.method,
            params=dict(run.given),
            seconds=self.seconds,
            group_sizes=sizes,
            k=roles.k,
            columns=roles.columns,
            per_variable=run.info.per_variable,
            scaler=self.prepared.embedding.scaler,
            standardized=self.prepared.Z,
            audit=run_audit if audit is None else audit,
            bound=bound,
            strata=self.grouped.strata,
            portfolio=Portfolio.of(self.grouped.method_facts),
            weights=Weights(
                (
                    None
                    if roles.weights is None
                    else {str(c): float(w) for c, w in zip(roles.columns, roles.weights)}
                ),
                sample_weight,
            ),
            publication=publication,
            method_facts=self.grouped.method_facts,
            changed_columns=self.published.changed,
            shuffled=order is not None,
            audit_roles=self.audit_roles,
            time_cut=self.time_cut,
            suppression=self.published.suppression,
            left_out=tuple(roles.left_out),
            pending_audit=pending_audit,
            file=file,
        )


def compute(data, run, progress=None, interval_p: float = 10.0) -> Computed:
    """The compute stage: the pipeline's stages on a validated run (``options.validate_run``;
    never validated again), from loading the data to the run's own figures, and the roles of
    its audit (rank intervals of ``interval_p`` percent), made once for every later stage.
    ``progress``: a callback in place of the run's ``progress`` option (a front end's own
    channel)."""
    pipeline.import_dependencies()
    probe = start_probe()  # the cores' probe covers the stages before the method (0.1 s a call)
    deadline = Deadline(
        run.time_limit, work=run.work
    )  # the whole call's budget (the checks before it take microseconds)
    source = pipeline.load(data)
    roles = pipeline.check_params_vs_input(run, source)
    prepared = pipeline.prepare(source, roles, run)
    shown = run.progress if progress is None else progress
    with channel(shown, run.time_limit, f"microagg {run.method}") as report:
        grouped = pipeline.group(source, roles, prepared, run, deadline, report)
    end_probe(probe)
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
    return Computed(
        run,
        source,
        roles,
        prepared,
        grouped,
        published,
        (audit, publication, bound),
        deadline.time_cut,
        seconds,
        pipeline.audit_roles(roles, run, interval_p),
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
