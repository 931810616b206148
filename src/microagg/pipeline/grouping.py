"""The stage ``group``: the method's labels, inside each stratum, in blocks in the
partitioned mode, or a given partition checked."""

from __future__ import annotations

import numpy as np

from ..deadline import Deadline
from ..errors import InputError
from ..labels import check_partition, relabel, sse
from ..options import Run
from .parts import Grouped, Prepared, Roles, Source

# --- group ----------------------------------------------------------------------------------------


def group(
    source: Source, roles: Roles, prepared: Prepared, run: Run, deadline: Deadline, progress
) -> Grouped:
    """The method's labels: inside each stratum (groups never cross strata), in blocks in the
    partitioned mode. The method's parameters are checked against every part before the first
    method starts; its compiled kernels load outside the budget."""
    from .. import methods as registry
    from ..methods.starts import restricted
    from ..strata import stratum_codes

    info, params, k, Z = run.info, run.params, roles.k, prepared.matrix
    strata = (
        stratum_codes(
            source.frame, roles.strata, Z, k, run.merge_small_strata, run.merged_strata == "refuse"
        )
        if roles.strata
        else None
    )
    if roles.households is not None:  # every group from >= k households (households.py); the
        # keys are suppressed by households there, not in key classes (a household spans them)
        return _household_partition(roles, prepared, run, strata, deadline, progress)
    classes = _key_classes(source, roles, run, strata)  # the QI groups formed inside them
    if run.labels is not None:  # (given labels keep the keys-alone plan: the same suppressions)
        given = _given_partition(run.labels, strata, Z, k, run)
        given.key_classes = classes
        return given
    units = list(strata.rows()) if strata is not None else [(None, np.arange(len(Z)))]
    units = units if classes is None else _split_units(units, classes.codes)
    for _, rows in units:
        info.check_params_vs_input(
            restricted(params, rows) if strata is not None else params, len(rows), Z.shape[1], k
        )
    # every input checked: the kernels the largest part will call load outside the budget
    largest = max(len(rows) for _, rows in units)
    registry.load_kernels(info.name, (largest, Z.shape[1]), progress, deadline)
    codes = None if classes is None else classes.codes
    if strata is None:
        labels, out = _run_in_classes(codes, Z, k, run, params, deadline, progress)
        return Grouped(labels, out.lower_bound, dict(out.extras), key_classes=classes)
    found = _partition_strata(strata, Z, k, run, deadline, progress, codes)
    found.key_classes = classes
    return found


def _key_classes(source: Source, roles: Roles, run: Run, strata):
    """key_anonymity="keys+qis" with declared keys: the key classes the QI groups are formed in
    (``key_classes``), inside the (merged) strata; None otherwise (sdcMicro's semantics, or no
    keys)."""
    if not roles.keys or run.key_anonymity != "keys+qis":
        return None
    from ..key_classes import for_run

    return for_run(
        source.frame,
        list(roles.keys),
        roles.k,
        run.on_keys_below_k,
        run.key_importance,
        None if strata is None else strata.codes,
        run.missing or (),
    )


def _split_units(units: list, codes: np.ndarray) -> list:
    """Each part (stratum) cut into its key classes: the parts the method runs on."""
    from ..key_classes import split_by

    out = []
    for name, rows in units:
        _, local = np.unique(codes[rows], return_inverse=True)
        out += [(name, rows[part]) for part in split_by(local.reshape(-1))]
    return out


def _run_in_classes(codes, Z, k, run: Run, params, deadline, progress):
    """``_run_unit`` inside each key class of these records (``codes``), or on all of them."""
    if codes is None:
        return _run_unit(Z, k, run, params, deadline, progress)
    from ..key_classes import run_within

    return run_within(
        codes,
        Z,
        k,
        lambda part, given, share, report: _run_unit(part, k, run, given, share, report),
        params,
        deadline,
        progress,
    )


def _household_partition(roles: Roles, prepared: Prepared, run: Run, strata, deadline, progress):
    """The household-aware partition (``households.group``): the method runs on the household
    groups' records, each run given its share of the budget; or a given partition checked by
    households."""
    from .. import households

    if run.info.per_variable:
        raise InputError(
            f"method {run.info.name!r} groups each variable on its own: with a household id, "
            "use a multivariate method such as mdav"
        )
    if run.labels is not None:
        return _given_household_partition(roles, prepared, run, strata, deadline, progress)
    from .. import methods as registry
    from ..methods.starts import restricted

    Z = prepared.Z if prepared.weights is None else prepared.Z * np.sqrt(prepared.weights)
    if not deadline.limited and run.info.default_work is not None:  # a cap for the whole run
        deadline = Deadline(work=run.info.default_work(len(Z), Z.shape[1], roles.k), cap=True)
    registry.load_kernels(run.info.name, Z.shape, progress, deadline)
    n = len(Z)

    def run_unit(Zu, k, rows):
        params = restricted(run.params, rows) if rows is not None else {}
        run.info.check_params_vs_input(params, len(Zu), Zu.shape[1], k)
        return _run_unit(Zu, k, run, params, deadline.share(len(Zu), n), None)[0]

    labels, grouping = households.group(
        roles.households, Z, prepared.embedding.column_slices(), strata, roles.k, run_unit
    )
    facts = {"household_merges": grouping.merges, "household_group_multiple": grouping.multiple}
    return Grouped(relabel(labels), None, facts, None, strata, grouping)


def _given_household_partition(roles, prepared, run: Run, strata, deadline, progress):
    """A given partition (an explore run's labels) checked by households. Its household groups are
    the run's own when the run, made again with the same options, gives these labels (an
    explore run's: the file published is the run explored); else the groups linked by a shared
    household (``households.given_partition``)."""
    from .. import households

    given = _given_partition(run.labels, strata, prepared.Z, roles.k, run)
    again = _household_partition(
        roles, prepared, run.with_options(labels=None), strata, deadline, progress
    )
    if np.array_equal(relabel(again.labels), relabel(given.labels)):
        grouping = again.households
    else:
        grouping = households.given_partition(roles.households, given.labels, roles.k)
    return Grouped(given.labels, None, given.method_facts, given.strata, strata, grouping)


def _given_partition(labels, strata, Z, k, run: Run) -> Grouped:
    """A partition given to publish (``labels``, e.g. an explore run's): one label per record, every
    group at least k records, each group inside one (merged) stratum; the method does not run."""
    from ..result import StrataReport, StratumRun

    if run.info.per_variable:
        raise InputError(
            f"labels cannot be given for method {run.info.name!r}, which groups each variable on "
            "its own"
        )
    n = len(Z)
    if labels.shape != (n,):
        raise InputError(f"labels must give one group per record ({n}), got shape {labels.shape}")
    if labels.min() < 0:
        raise InputError(
            "the given labels must be group numbers >= 0 (a negative label leaves a record without "
            "group)"
        )
    labels = relabel(labels)
    sizes = np.bincount(labels)
    if sizes.min() < k:
        raise InputError(
            f"the given labels hold a group of {int(sizes.min())} record(s), fewer than k = {k}"
        )
    facts = {"given_labels": True}
    if strata is None:
        return Grouped(labels, None, facts)
    pairs = np.unique(
        labels * (int(strata.codes.max()) + 1) + strata.codes
    )  # (group, stratum) pairs
    if len(pairs) != len(sizes):  # some group holds records of two strata
        raise InputError(
            "the given labels put records of different strata in one group: groups never cross "
            "strata"
        )
    runs = [
        StratumRun(
            strata.names[code],
            strata.members[code],
            int(len(rows)),
            # the stratum's groups numbered 0..g-1: given labels number them across strata,
            # and a gap is an empty group (0/0 in its mean; the SSE is the same either way)
            sse(Z[rows], np.unique(labels[rows], return_inverse=True)[1]),
            None,
            {},
        )
        for code, rows in strata.rows()
    ]
    report = StrataReport(
        tuple(runs),
        tuple(strata.merges),
        run.merged_strata if strata.merges else None,
        tuple(strata.mapping(run.merged_strata)) if strata.merges else (),
    )
    return Grouped(labels, None, facts, report, strata)


def _run_unit(Z, k, run: Run, params, deadline, progress):
    """One method run (partitioned when block_size / scheduler is given), labels checked."""
    from .. import methods as registry

    name = run.info.name
    if run.block_size is not None or run.scheduler is not None:
        from ..blocks import DEFAULT_REFINE, partitioned_labels

        labels = partitioned_labels(
            Z,
            k,
            name,
            block_size=run.block_size,
            scheduler=run.scheduler,
            seed=run.seed,
            deadline=deadline,
            progress=progress,
            refine=DEFAULT_REFINE if run.refine is None else run.refine,
            **params,
        )
        return check_partition(labels, len(Z), k, f"{name} (partitioned)"), registry.MethodOutput(
            labels
        )
    out = registry.run(name, Z, k, seed=run.seed, deadline=deadline, progress=progress, **params)
    return check_partition(out.labels, len(Z), k, name), out


def _partition_strata(
    strata, Z, k, run: Run, deadline: Deadline, progress, classes=None
) -> Grouped:
    """The method inside each stratum; each gets ``deadline.share(its records, records still to
    do)``, and a method with a ``default_work`` shares that cap when the caller gave no time
    limit nor work budget. Bounds add up."""
    from ..methods.starts import restricted
    from ..progress import part
    from ..result import StrataReport, StratumRun

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
        report = part(
            progress, (n - todo) / n, (n - todo + len(rows)) / n, prefix=f"stratum {name}: "
        )
        lab, out = _run_in_classes(
            None if classes is None else classes[rows],
            Z[rows],
            k,
            run,
            restricted(run.params, rows),
            deadline.share(len(rows), todo),
            report,
        )
        todo -= len(rows)
        labels[rows] = lab + offset
        offset = int(labels[rows].max()) + 1
        if out.lower_bound is None:
            have_bound = False
        else:
            bound += out.lower_bound
        runs.append(
            StratumRun(
                name,
                strata.members[code],
                int(len(rows)),
                sse(Z[rows], lab),
                None if out.lower_bound is None else float(out.lower_bound),
                dict(out.extras),
            )
        )
    published = strata.mapping(run.merged_strata) if strata.merges else []
    report = StrataReport(
        tuple(runs),
        tuple(strata.merges),
        run.merged_strata if strata.merges else None,
        tuple(published),
    )
    return Grouped(relabel(labels), bound if have_bound else None, {}, report, strata)
