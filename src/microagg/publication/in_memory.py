"""Publishing a table: run the pipeline on the input read, write the output atomically, read it
back with its format's own reader, verify k-anonymity as that reader groups the keys, audit the
file as read back, and land the output with its manifest, report and labels together."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DisclosureWarning, InputError
from . import landing
from .opening import Opened, Targets


@dataclass
class PublishedFile:
    """What was published: the paths, the file as its reader read it back, and what it holds."""

    path: Path
    manifest: Path | None
    report: Path | None
    labels: Path | None
    read_back_by: str
    key_variables: list
    k_anonymous: bool
    smallest_frequency: int | None
    unchanged: list = field(default_factory=list)  # columns published as they came in
    other_sheets: list = field(
        default_factory=list
    )  # a workbook's sheets published as they came in
    shuffled: bool = False

    def __repr__(self) -> str:
        from ..display import published_repr

        return published_repr(self)

    def _repr_html_(self) -> str:
        """A notebook's display: the file, its reader, its key variables' k-anonymity."""
        from ..display import published_html

        return published_html(self)


class _ReadBack:
    """The output as its format's reader reads it back: its table and its key variables as
    grouped."""

    def __init__(self, table, keys, read_options, written=None):
        from .. import io
        from ..measures.records import blank_as_missing

        self.table, self.read_options = table, read_options
        # an empty CSV field is a missing value: after local suppression it matches any value
        # (and so is a declared missing token: a missing QI value is written as it was read)
        tokens = read_options.get("missing", ())
        self.keys = blank_as_missing(io.key_view(table, keys, written), tokens)
        self.reader = io.reader_name(table)


def unchanged_columns(table, res) -> list:
    """The columns of the file published as they came in (every column not protected nor
    recoded)."""
    changed = set(res.changed_columns)
    return [c for c in table.header if c not in changed]


def other_sheets(table) -> list:
    """A workbook's sheets other than the one protected: published as they came in (named in the
    summary, the JSON and the manifest, so that a sheet holding the original values is seen)."""
    sheets = getattr(table.meta, "other_sheets", None)
    return list(sheets or [])


def publish_table(
    opened: Opened,
    params: dict,
    run,
    *,
    interval_p=None,
    init=None,
    command_input=None,
    progress=None,
    progress_context=None,
    init_labels=None,
    confirm=None,
):
    """Run the pipeline on the input read and publish its file (see :func:`protect`)."""
    table, options = opened.table, opened.options
    params = dict(params)
    if init_labels is not None:
        if len(init_labels) != len(table.frame):
            raise InputError(
                f"--init {init} has {len(init_labels)} labels for {len(table.frame)} records"
            )
        params["init"] = init_labels
    _import_audit_libraries(run)
    res, embedding = _run(table, options, params, run, progress, progress_context)
    if (
        interval_p is not None
    ):  # the audit's rank interval (the summary, the report and the manifest)
        res.audit_roles = dataclasses.replace(res.audit_roles, p=float(interval_p))
    order = _shuffle_order(run, options, table)
    command = manifest_command(
        command_input or str(table.path), str(opened.targets.output), options, params, order
    )
    res.file = _write_all(
        table,
        opened.targets,
        res,
        run,
        order,
        options,
        params,
        opened.read_options,
        command,
        embedding,
        confirm,
    )
    return res


def _import_audit_libraries(run) -> None:
    """Import the libraries the file audit needs (scikit-learn's MCD for the robust distances,
    scipy's KD-tree; about 1 s) in a background thread while the method runs (its kernels
    release the interpreter), instead of after it; the audit's own imports then find them
    loaded, or wait for them. scipy's base module changes the warning filters while it is
    imported (``warnings.catch_warnings``, which is process-wide): it is imported here, in this
    thread, so that the background one never touches them while the run warns. Not in the
    partitioned mode, whose Dask scheduler may fork worker processes: a child forked while a
    thread holds a module's import lock would wait for it forever."""
    import contextlib
    import sys
    import threading

    if "sklearn.covariance" in sys.modules or run.block_size is not None or run.scheduler:
        return
    with contextlib.suppress(ImportError):
        import scipy._lib._util  # noqa: F401

    def load():
        with contextlib.suppress(Exception):  # an import that fails is reported by the audit's
            import scipy.spatial  # noqa: F401
            import sklearn.covariance  # noqa: F401

    threading.Thread(target=load, name="microagg-audit-imports", daemon=True).start()


def _run(table, options, params, run, progress, progress_context):
    """The pipeline on the table read, without its own audit: the written file is audited
    instead, with the run's embedding of the original (its pending audit's, never computed: not
    built again, 0.4 s at 10^6 x 6)."""
    from contextlib import nullcontext

    from ..api import microaggregate

    # the publication stage shuffles the written rows itself (with run.shuffle_seed), not the run
    api = {
        name: value
        for name, value in options.items()
        if name not in ("shuffle", "shuffle_seed", "progress", "audit")
    }
    with progress_context if progress_context is not None else nullcontext(progress) as callback:
        res = microaggregate(
            table, **api, audit=True, progress=callback if callback is not None else False, **params
        )
    pending, res.pending_audit = res.pending_audit, None
    return res, getattr(pending, "embedding", None)


def _shuffle_order(run, options, table):
    """The written rows' order: a permutation with --shuffle (households kept together), else
    None."""
    from ..pipeline import shuffle_order

    return shuffle_order(run.with_options(household=options.get("household")), table.frame)


def manifest_command(input_name: str, output_name: str, options: dict, params: dict, order) -> str:
    """The protect command the manifest holds, to reproduce the publication
    (``microagg.reproduce``)."""
    from ..options import command_line

    return command_line(
        input_name,
        output_name,
        {**options, "shuffle": order is not None},
        {k: v for k, v in params.items() if k != "init"},
    )


def _write_all(
    table,
    targets: Targets,
    res,
    run,
    order,
    options,
    params,
    read_options,
    command,
    embedding,
    confirm=None,
) -> PublishedFile:
    """Write the output (in ``order``), read it back, verify it, audit it (``embedding``: the
    run's of the original, or None), then the side files; everything lands together or nothing
    does."""
    from .. import io

    keys = res.audit_roles.key_variables
    staged: list[
        tuple[str, Path]
    ] = []  # (temporary, target) of the side files, renamed after the output
    box: dict = {}

    def check(tmp, fmt, written):
        back = _read_back(tmp, fmt, table, targets.output, keys, written)
        found = _verify(back, table, res, targets.output)
        _verify_t_closeness(back, res, run, targets.output)
        res.audit = res.audit.with_figures(
            _written_audit(table, back, res, run, order, found, embedding)
        )
        res.summary()  # the summary every door prints: should it fail, nothing lands
        published = _published_file(targets, back, res, table, order)
        box["published"] = published
        _warn_other_sheets(targets, published)
        if targets.report is not None:
            staged.append(
                (
                    landing.stage_text(
                        targets.report, _report_text(res, table, targets, run, order)
                    ),
                    targets.report,
                )
            )
        if targets.labels is not None:
            staged.append(
                (
                    landing.stage_text(targets.labels, landing.labels_text(res.labels)),
                    targets.labels,
                )
            )
        if targets.manifest is not None:
            doc = _manifest(
                tmp,
                table,
                targets,
                back,
                res,
                options,
                params,
                read_options,
                order,
                command,
                published,
            )
            if confirm is not None:  # a replay checked against its manifest before anything lands
                confirm(doc)
            staged.append(
                (landing.stage_text(targets.manifest, landing.manifest_text(doc)), targets.manifest)
            )

    published_values = {c: res.data[c].to_numpy() for c in res.changed_columns}
    qis = set(res.columns)
    kept = [c for c in res.changed_columns if c not in qis]  # keys, recoded strata
    try:
        io.write(table, targets.output, published_values, order=order, check=check, kept=kept)
        landing.land(staged, targets.output)
    finally:
        landing.discard(staged)
    return box["published"]


def _warn_other_sheets(targets: Targets, published: PublishedFile) -> None:
    if published.other_sheets:
        import warnings

        warnings.warn(
            f"{targets.output.name}: the workbook's other sheet(s) "
            f"{', '.join(map(repr, published.other_sheets))} are published as they came in, "
            "unprotected",
            DisclosureWarning,
            stacklevel=3,
        )


def _read_back(tmp, fmt, table, out: Path, keys, written=None) -> _ReadBack:
    from .. import io

    same = fmt == table.format and table.meta is not None  # read back as the input was read
    options = table.meta.read_options() if same else {}
    try:
        read = io.read(tmp, format=fmt, written=written, **options)
    except InputError as exc:  # named as the user named the file, not as the temporary link
        link = f"data{io.get_format(fmt).suffixes[0]}"
        raise InputError(
            f"the written {out.name} does not read back: {str(exc).replace(link, out.name)}; "
            "nothing was written"
        ) from None
    back = _ReadBack(read, keys, options, written)
    if len(back.table.frame) != len(table.frame):
        raise InputError(
            f"the written {out.name} reads back with {len(back.table.frame)} records instead of "
            f"{len(table.frame)}: nothing was written"
        )
    return back


def _verify(back: _ReadBack, table, res, out: Path):
    """Every combination of the QIs and strata occurs at least k times as the reader groups them,
    a missing value matching any value (a method that groups each variable on its own is not
    k-anonymous on the combination by design: its summary says so, and the audit counts the
    records). Returns the frequencies counted (the audit's, when the key variables are these)."""
    from ..measures.records import key_frequencies

    guaranteed = list(dict.fromkeys([*res.audit_roles.columns, *res.audit_roles.strata]))
    # a missing QI value (published missing, as it was) matches any value (sdcMicro's freqCalc)
    found = key_frequencies(back.keys, guaranteed, res.k, missing="wildcard")
    if not found.is_k_anonymous and not res.per_variable:
        raise InputError(
            f"{out.name}, read back ({back.reader}), is not {res.k}-anonymous on "
            f"{', '.join(map(str, guaranteed))}: {found.records_below_k} records in combinations "
            f"occurring fewer than {res.k} times (values the reader tells apart that the run took "
            "as one, such as '1' and '1.0' in a stratum column); nothing was written"
        )
    if res.audit_roles.household:  # k-anonymous by households (households.py)
        from ..households import check_published

        failed = check_published(back.table.frame, back.keys, res.audit_roles)
        if failed:
            raise InputError(
                f"{out.name}, read back ({back.reader}), is not k-anonymous by households: "
                f"{failed}; nothing was written"
            )
    return found


def _verify_t_closeness(back: _ReadBack, res, run, out: Path) -> None:
    """With ``t_closeness``: every key combination of the file as read back is t-close on every
    sensitive column (EMD to the whole file at most t), or nothing is written."""
    if run.t_closeness is None:
        return
    from .. import io
    from ..measures.risk.closeness import t_closeness

    frame = back.keys.copy()
    published = io.published_view(back.table)
    sensitive = list(res.audit_roles.sensitive)
    for c in sensitive:
        frame[c] = published[c].to_numpy()
    found = t_closeness(frame, list(back.keys.columns), sensitive)
    over = {c: emd for c, emd in found.items() if emd > run.t_closeness}
    if over:
        raise InputError(
            f"{out.name}, read back ({back.reader}), is not {run.t_closeness:g}-close: largest "
            + ", ".join(f"EMD {emd:.6g} on {c}" for c, emd in over.items())
            + "; nothing was written"
        )


def _written_audit(table, back: _ReadBack, res, run, order, found=None, embedding=None):
    """The audit of the written file read back (``measures.audit_files``), on the original as read:
    exactly what ``microagg evaluate`` computes from the two files and the manifest. A shuffled
    file's records are put back in the input's order (by the permutation, held in memory only)
    for the measures that pair records; every other figure is the file's as it is. ``found``: the
    read-back check's key frequencies (counted once); ``embedding``: the run's embedding of the
    original (the audit's, not built again)."""
    import numpy as np

    from .. import io
    from ..measures import audit_files, combine
    from ..measures.file_audit import embedding_key

    roles = res.audit_roles
    frame, keys = io.published_view(back.table), back.keys
    # what depends on the original only (its embedding, robust distances): once for both
    cache: dict = {} if embedding is None else {embedding_key(roles): embedding}
    as_written = audit_files(
        table.frame,
        frame,
        roles,
        grouped=keys,
        aligned=order is None,
        seed=run.seed,
        read_back=back.reader,
        cache=cache,
        frequencies=found,
    )
    if order is None:
        return as_written
    undo = np.argsort(order)
    paired = audit_files(
        table.frame,
        frame.iloc[undo].reset_index(drop=True),
        roles,
        grouped=keys.iloc[undo].reset_index(drop=True),
        seed=run.seed,
        read_back=back.reader,
        cache=cache,
        paired_only=True,
    )  # combine takes only these from it
    return combine(paired, as_written)


def _published_file(targets: Targets, back: _ReadBack, res, table, order) -> PublishedFile:
    """The file as published; its k-anonymity on every key variable is the written file's audit's
    (counted once, on the keys as the reader grouped them, a suppressed value matching any)."""
    risk = res.audit.group("risk")
    smallest = risk["key_smallest_frequency"]
    return PublishedFile(
        targets.output,
        targets.manifest,
        targets.report,
        targets.labels,
        back.reader,
        [str(c) for c in res.audit_roles.key_variables],
        risk["key_records_below_k"] == 0,
        None if smallest is None else int(smallest),
        unchanged_columns(table, res),
        other_sheets(back.table),
        order is not None,
    )


def _manifest(
    tmp, table, targets, back, res, options, params, read_options, order, command, published
):
    from .. import io, manifest

    verified = {
        "key_variables": published.key_variables,
        "read_back_by": back.reader,
        "k_anonymous": published.k_anonymous,
        "smallest_frequency": published.smallest_frequency,
        "suppression": None if res.suppression is None else res.suppression.to_dict(),
    }
    if res.audit_roles.household:  # checked on the file read back (_verify)
        from ..measures.risk.household_risk import privacy_model

        verified["privacy_model"] = privacy_model(res.k, res.audit_roles.household)
        verified["smallest_households"] = res.audit.group("risk").get("households_smallest")
    doc = manifest.build(
        input_path=table.path,
        output_path=tmp,
        input_format=table.format,
        output_format=io.format_of(targets.output),
        read_options=read_options,
        run_options=options,
        params=params,
        result=res,
        shuffled=order is not None,
        command=command,
        verified=verified,
        output_read=back.read_options,
    )
    doc["output"]["name"] = targets.output.name
    doc["published_unchanged"] = {
        "columns": [str(c) for c in published.unchanged],
        "sheets": [str(s) for s in published.other_sheets],
    }
    return doc


def _report_text(res, table, targets, run, order) -> str:
    from ..report import render_report

    settings = {
        "input": str(table.path),
        "output": str(targets.output),
        "seed": run.seed,
        "time limit (s)": run.time_limit,
        "strata": ", ".join(map(str, run.strata)) if run.strata else None,
        "standardised": run.standardize,
        "block size": run.block_size,
        "row order": "shuffled" if order is not None else "the input's",
    }
    return render_report(res, table.frame, settings)
