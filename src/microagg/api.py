"""microaggregate(): the pipeline of DESIGN.md, one call per stage (``microagg.pipeline``).

options validated (``microagg.options``) -> load -> check the options against the data ->
prepare (kinds, z-scores, embedding, distance, weights) -> partition (method, strata, blocks;
every labelling checked) -> publish (representatives in original units) -> measure (the audit)
-> Result
"""

from __future__ import annotations

from . import pipeline
from .clock import Deadline
from .options import describe, signature, split_arguments, validate_run
from .partition import group_sizes
from .progress import channel
from .result import Portfolio, Result, Weights

__all__ = ["Result", "microaggregate"]


def microaggregate(data, *args, **kwargs) -> Result:
    options, params = split_arguments(args, kwargs)
    run = validate_run(options, params)  # every option and parameter, before the data are read
    pipeline.import_dependencies()
    deadline = Deadline(run.time_limit)  # the whole call's budget (the checks above take microseconds)
    source = pipeline.load(data)
    roles = pipeline.check_params_vs_input(run, source)
    prepared = pipeline.prepare(source, roles, run)
    with channel(run.progress, run.time_limit, f"microagg {run.method}") as report:
        partitioned = pipeline.partition(source, roles, prepared, run, deadline, report)
    published = pipeline.publish(source, roles, prepared, partitioned, run)
    audit, publication, bound = pipeline.measure(source, roles, prepared, partitioned, published, run)
    seconds = deadline.elapsed()  # the protection's time; the file audit is not part of it
    # the file audit runs when Result.audit is first read (issue 45: the default call costs the protection)
    pending = pipeline.deferred_audit(source, roles, prepared, published, run) if run.audit else None
    order = pipeline.shuffle_order(run, source.frame)  # after the audit, which pairs records in input order
    labels = partitioned.labels
    sizes = [group_sizes(labels[:, j]) for j in range(labels.shape[1])] if labels.ndim == 2 else group_sizes(labels)
    sample_weight = None if roles.sample_weights is None else (roles.sample_weight_column or "array")
    return Result(
        data=published.data if order is None else pipeline.reorder(published.data, order), labels=labels,
        information_loss=audit.group("run")["information_loss"], sse=audit["sse"],
        sst=audit["sst"], lower_bound=audit["lower_bound"], gap=audit["gap"], method=run.method,
        params=dict(run.given), seconds=seconds, group_sizes=sizes, k=roles.k, columns=roles.columns,
        per_variable=run.info.per_variable, scaler=prepared.embedding.scaler, standardized=prepared.Z,
        audit=audit, bound=bound, strata=partitioned.strata, portfolio=Portfolio.of(partitioned.method_facts),
        weights=Weights(None if roles.weights is None else {str(c): float(w) for c, w in zip(roles.columns,
                                                                                              roles.weights)},
                        sample_weight),
        publication=publication, method_facts=partitioned.method_facts, changed_columns=published.changed,
        shuffled=order is not None, audit_roles=pipeline.audit_roles(roles, run), pending_audit=pending,
    )


microaggregate.__signature__ = signature()
microaggregate.__doc__ = """Microaggregate ``data`` so that every group of quasi-identifier values has >= k records.

    data: pandas DataFrame, 1-D or 2-D numpy array, a file path (``microagg.io`` formats) or an
        ``io.Table``. The other arguments are the run options (``microagg.options.RUN_OPTIONS``:
        k, method, columns, seed, standardize, time_limit, strata, block_size, scheduler may also be
        given by position, in this order) and the method's declared parameters (``microagg methods
        -v``). Every option and parameter is validated before the data are read: a bad one raises
        ``ParameterError`` (an ``InputError``) in one line; what needs the data (columns exist, k
        against n, ...) is checked right after loading, before any method starts.

    time_limit is the wall-clock budget of the whole call (None: no limit; ``auto`` then takes
    60 s); strata, blocks, portfolio members and initial methods share it by one rule
    (``microagg.clock``); the file audit is not part of the call (``Result.audit`` computes it
    when first read). MDAV stops forming groups at the limit and groups the
    records it did not reach by median splits (a warning, ``extras['stopped']``); methods
    registered as not interruptible (md, npn-mhm, ...) run to completion or are refused at once
    where their least time does not fit; anytime methods overshoot by at most about
    max(0.5 s, 10 %) (benchmarks/results/colgen_time_limit.md). The method's compiled kernels
    load before the clock starts, once per process (``methods.load_kernels``).

    With variable weights, standardised column j is multiplied by sqrt(w_j) before the method, so
    it minimises Σ_j w_j·SSE_j; IL and SSE stay on the unweighted columns (the weighted IL is an
    audit figure) and a proven bound on the weighted SSE becomes one on the SSE by dividing by
    max w_j. With sampling weights, robust aggregates or categorical QIs, IL is measured to the
    published values. Categorical / ordinal QIs are embedded as in ``microagg.transforms``
    (nominal columns publish the group's mode, ordinal ones its median category, in the column's
    own dtype); a non-euclidean distance whitens the continuous part before the method.

    Returns a Result (``microagg.result``): the protected data are the same kind and shape as the
    input, with the same rows in the same order and every non-QI column unchanged (strata merged
    because smaller than k are recoded or suppressed in the stratum columns, ``merged_strata``;
    with ``shuffle=True`` the rows come in a random order, while ``labels`` and the audit stay in
    the input's). ``Result.audit`` holds the run's figures and the published data's audit
    (``microagg.audit``: utility, k-anonymity of the key variables, re-identification risk,
    l-diversity, interval disclosure, row order), computed when ``Result.audit`` is first read
    (docs/performance.md: the default call costs the protection).

    Run options:
""" + describe() + "\n"
