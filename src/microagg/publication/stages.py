"""One publication, as explicit stages, each a function of the previous stages' values:

    plan -> compute -> write -> read_back -> verify -> audit -> land

``plan`` decides everything that needs no computation (the run with the file's column names,
the row order, the reproduce command); ``compute`` is the run (``api.compute``: the pipeline's
stages on the validated options, the run's own figures); ``write`` stages the output beside its
target with the format's writer (``io.write_staged``: nothing in place yet); ``read_back`` reads
the staged file with its format's own reader; ``verify`` checks the guarantees on the file as
read back (k-anonymity on the QIs and strata, by households, t-closeness); ``audit`` measures the
file as read back against the original; ``land`` makes the one ``Result``, stages the side files
(manifest, report, labels), lets a replay confirm its manifest, and renames everything into place
together, or nothing.

No stage calls back into an earlier one, ``io`` never calls the publication, and the ``Result``
is made once, in ``land``, never changed after. :func:`publish_table` composes the stages for a
file read in memory; the out-of-core mode composes the same stages over a chunked table
(``publication.folder``)."""

from __future__ import annotations

from pathlib import Path

from ..errors import DisclosureWarning, InputError
from . import landing
from .opening import Opened, Targets
from .stage_values import (
    Plan,
    PublishedFile,
    ReadBack,
    manifest_command,
    other_sheets,
    unchanged_columns,
)

__all__ = [
    "Plan",
    "PublishedFile",
    "ReadBack",
    "plan",
    "compute",
    "write",
    "read_back",
    "verify",
    "audit",
    "land",
    "publish_table",
    "run_stages",
    "unchanged_columns",
    "manifest_command",
]


# --- plan ---------------------------------------------------------------------------------------


def plan(
    opened: Opened,
    params: dict,
    run,
    *,
    interval_p=None,
    init=None,
    command_input=None,
    init_labels=None,
    confirm=None,
) -> Plan:
    """The plan: the run with the file's column names, the ``--init`` labels checked against the
    records, the written rows' order (``--shuffle``: households together) and the reproduce
    command."""
    from ..io.names import options_in_header
    from ..pipeline import shuffle_order

    table, options = opened.table, opened.options
    # the validated run's column names as the file's header spells them (a hand-written header
    # 'x, y' holds ' y'), as ``opening`` renamed the options given: renamed, not validated again
    run = run.with_options(**options_in_header(run.options, table.header))
    params = dict(params)
    if init_labels is not None:
        if len(init_labels) != len(table.frame):
            raise InputError(
                f"--init {init} has {len(init_labels)} labels for {len(table.frame)} records"
            )
        params["init"] = init_labels
        run = _with_init(run, init_labels)
    order = shuffle_order(run, table.frame)
    input_name = command_input or str(table.path)
    command = manifest_command(input_name, str(opened.targets.output), options, params, order)
    return Plan(
        table,
        opened.targets,
        options,
        params,
        run,
        dict(opened.read_options),
        order,
        command,
        input_name,
        10.0 if interval_p is None else float(interval_p),
        confirm,
    )


def _with_init(run, labels):
    """The run with the method's ``init`` parameter set to the labels of an --init file (read
    after the options were validated: checked against the records here)."""
    import dataclasses

    given = {**run.given, "init": labels}
    return dataclasses.replace(run, params=run.info.validate(given), given=given)


# --- compute ------------------------------------------------------------------------------------


def compute(the_plan: Plan, progress=None):
    """The run on the input read (``api.compute``: the pipeline's stages, the run's own figures,
    the roles of its audit, made once for the stages after it), ``progress`` the publication's
    progress callback; the rows stay in the input's order (``write`` publishes them in the
    plan's). A chunked table: ``the_plan.chunked.compute``."""
    if the_plan.chunked is not None:
        return the_plan.chunked.compute(the_plan, progress)
    from ..api import compute as compute_run

    _import_audit_libraries(the_plan.run)
    shown = progress if progress is not None else False
    return compute_run(the_plan.table, the_plan.run, shown, the_plan.interval_p)


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


# --- write --------------------------------------------------------------------------------------


def write(the_plan: Plan, computed, progress=None):
    """The output written in full beside its target with its format's writer, in the plan's
    row order, not yet in place (``io.StagedFile``). A chunked table: ``the_plan.chunked.write``."""
    from .. import io

    if the_plan.chunked is not None:
        return the_plan.chunked.write(the_plan, computed, progress)

    qis = set(computed.roles.columns)
    kept = [c for c in computed.published.changed if c not in qis]  # keys, recoded strata
    return io.write_staged(
        the_plan.table,
        the_plan.targets.output,
        computed.published_columns(),
        order=the_plan.order,
        kept=kept,
    )


# --- read back ----------------------------------------------------------------------------------


def read_back(the_plan: Plan, staged, computed) -> ReadBack:
    """The staged output as its format's reader reads it (with the input's reading options when
    the formats are the same), its key variables as that reader groups them (an empty CSV field
    is a missing value: after local suppression it matches any value, and so does a declared
    missing token). A chunked table: ``the_plan.chunked.read_back``."""
    from .. import io
    from ..measures.records import blank_as_missing

    if the_plan.chunked is not None:
        return the_plan.chunked.read_back(the_plan, staged, computed)
    key_variables = computed.audit_roles.key_variables
    table, out = the_plan.table, the_plan.targets.output
    same = staged.format == table.format and table.meta is not None
    options = table.meta.read_options(out) if same else {}
    try:
        read = io.read(staged.temporary, format=staged.format, written=staged.written, **options)
    except InputError as exc:  # named as the user named the file, not as the temporary link
        link = f"data{io.get_format(staged.format).suffixes[0]}"
        raise InputError(
            f"the written {out.name} does not read back: {str(exc).replace(link, out.name)}; "
            "nothing was written"
        ) from None
    if len(read.frame) != len(table.frame):
        raise InputError(
            f"the written {out.name} reads back with {len(read.frame)} records instead of "
            f"{len(table.frame)}: nothing was written"
        )
    tokens = the_plan.read_options.get("missing", ())
    keys = blank_as_missing(io.key_view(read, key_variables, staged.written), tokens)
    return ReadBack(read, keys, io.reader_name(read), options)


# --- verify -------------------------------------------------------------------------------------


def verify(the_plan: Plan, computed, back: ReadBack):
    """The guarantees on the file as read back, or nothing is written: every combination of the
    QIs and strata occurs at least k times as the reader groups them, a missing value matching
    any value (a method that groups each variable on its own is not k-anonymous on the
    combination by design: its summary says so, and the audit counts the records); k households
    per combination with a household id; t-closeness on every sensitive column. Returns the
    key variables' frequencies counted (the audit's, not counted again). A chunked table:
    ``folder.verify``."""
    from ..measures.records import key_frequencies

    if the_plan.chunked is not None:
        return the_plan.chunked.verify(the_plan, computed, back)
    roles, out, k = computed.audit_roles, the_plan.targets.output, computed.roles.k
    guaranteed = list(dict.fromkeys([*roles.columns, *roles.strata]))
    # a missing QI value (published missing, as it was) matches any value (sdcMicro's freqCalc)
    found = key_frequencies(back.keys, guaranteed, k, missing="wildcard")
    if not found.is_k_anonymous and not computed.run.info.per_variable:
        raise InputError(
            f"{out.name}, read back ({back.reader}), is not {k}-anonymous on "
            f"{', '.join(map(str, guaranteed))}: {found.records_below_k} records in combinations "
            f"occurring fewer than {k} times (values the reader tells apart that the run took "
            "as one, such as '1' and '1.0' in a stratum column); nothing was written"
        )
    if roles.household:  # k-anonymous by households (households.py)
        from ..households import check_published

        failed = check_published(back.table.frame, back.keys, roles)
        if failed:
            raise InputError(
                f"{out.name}, read back ({back.reader}), is not k-anonymous by households: "
                f"{failed}; nothing was written"
            )
    _verify_t_closeness(the_plan, roles, back)
    return found


def _verify_t_closeness(the_plan: Plan, roles, back: ReadBack) -> None:
    """With ``t_closeness``: every key combination of the file as read back is t-close on every
    sensitive column (EMD to the whole file at most t), or nothing is written."""
    t = the_plan.run.t_closeness
    if t is None:
        return
    from .. import io
    from ..measures.risk.closeness import t_closeness

    frame = back.keys.copy()
    published = io.published_view(back.table)
    sensitive = list(roles.sensitive)
    for c in sensitive:
        frame[c] = published[c].to_numpy()
    found = t_closeness(frame, list(back.keys.columns), sensitive)
    over = {c: emd for c, emd in found.items() if emd > t}
    if over:
        raise InputError(
            f"{the_plan.targets.output.name}, read back ({back.reader}), is not {t:g}-close: "
            "largest "
            + ", ".join(f"EMD {emd:.6g} on {c}" for c, emd in over.items())
            + "; nothing was written"
        )


# --- audit --------------------------------------------------------------------------------------


def audit(the_plan: Plan, computed, back: ReadBack, found=None):
    """The run's own figures and the audit of the file as read back
    (``measures.audit_files``, on the original as read): exactly what ``microagg evaluate``
    computes from the two files and the manifest. A shuffled file's records are put back in the
    input's order (by the permutation, held in memory only) for the measures that pair records;
    every other figure is the file's as it is. ``found``: the verify stage's key frequencies
    (counted once); the run's embedding of the original is the audit's (not built again). A
    chunked table: ``folder.audit``."""
    from .. import io
    from ..measures import audit_files
    from ..measures.file_audit import embedding_key

    if the_plan.chunked is not None:
        return the_plan.chunked.audit(the_plan, computed, back, found)
    roles = computed.audit_roles
    cache: dict = {embedding_key(roles): computed.embedding}
    figures = audit_files(
        the_plan.table.frame,
        io.published_view(back.table),
        roles,
        grouped=back.keys,
        seed=the_plan.run.seed,
        read_back=back.reader,
        cache=cache,
        frequencies=found,
        order=the_plan.order,
    )
    return computed.measured[0].with_figures(figures)


# --- land ---------------------------------------------------------------------------------------


def land(the_plan: Plan, computed, staged, back: ReadBack, file_audit):
    """The one ``Result`` (the run, the file's audit, the ``PublishedFile``), checked by the
    summary every door prints; the side files (report, labels, manifest) staged beside their
    targets; a replay's confirmation of the new manifest; then the output and the side files
    renamed into place together. Should any step fail, nothing lands. A chunked table:
    ``folder.land``."""
    if the_plan.chunked is not None:
        return the_plan.chunked.land(the_plan, computed, staged, back, file_audit)
    targets = the_plan.targets
    published = _published_file(the_plan, computed, back, file_audit)
    result = computed.result(audit=file_audit, file=published)
    result.summary()  # the summary every door prints: should it fail, nothing lands
    _warn_other_sheets(targets, published)
    sides: list[tuple[str, Path]] = []  # (temporary, target) of the side files
    try:
        if targets.report is not None:
            text = _report_text(the_plan, result)
            sides.append((landing.stage_text(targets.report, text), targets.report))
        if targets.labels is not None:
            text = landing.labels_text(result.labels)
            sides.append((landing.stage_text(targets.labels, text), targets.labels))
        if targets.manifest is not None:
            doc = _manifest(the_plan, staged, back, result, published)
            if the_plan.confirm is not None:  # a replay checked against its manifest
                the_plan.confirm(doc)
            text = landing.manifest_text(doc)
            sides.append((landing.stage_text(targets.manifest, text), targets.manifest))
        staged.land()
        landing.land(sides, targets.output)
    finally:
        landing.discard(sides)
    return result


def _published_file(the_plan: Plan, computed, back: ReadBack, file_audit) -> PublishedFile:
    """The file as published; its k-anonymity on every key variable is the written file's audit's
    (counted once, on the keys as the reader grouped them, a suppressed value matching any)."""
    targets = the_plan.targets
    risk = file_audit.group("risk")
    smallest = risk["key_smallest_frequency"]
    return PublishedFile(
        targets.output,
        targets.manifest,
        targets.report,
        targets.labels,
        back.reader,
        [str(c) for c in computed.audit_roles.key_variables],
        risk["key_records_below_k"] == 0,
        None if smallest is None else int(smallest),
        unchanged_columns(the_plan.table, computed.published.changed),
        other_sheets(back.table),
        the_plan.order is not None,
    )


def _warn_other_sheets(targets: Targets, published: PublishedFile) -> None:
    if published.other_sheets:
        import warnings

        warnings.warn(
            f"{targets.output.name}: the workbook's other sheet(s) "
            f"{', '.join(map(repr, published.other_sheets))} are published as they came in, "
            "unprotected",
            DisclosureWarning,
            stacklevel=4,
        )


def _manifest(the_plan: Plan, staged, back: ReadBack, result, published: PublishedFile) -> dict:
    from .. import io, manifest

    table, targets = the_plan.table, the_plan.targets
    verified = {
        "key_variables": published.key_variables,
        "read_back_by": back.reader,
        "k_anonymous": published.k_anonymous,
        "smallest_frequency": published.smallest_frequency,
        "suppression": None if result.suppression is None else result.suppression.to_dict(),
    }
    if result.audit_roles.household:  # checked on the file read back (verify)
        from ..measures.risk.household_risk import privacy_model

        verified["privacy_model"] = privacy_model(result.k, result.audit_roles.household)
        verified["smallest_households"] = result.audit.group("risk").get("households_smallest")
    shuffled = the_plan.order is not None
    doc = manifest.build(
        input_path=table.path,
        output_path=staged.temporary,
        input_format=table.format,
        output_format=io.format_of(targets.output),
        read_options=the_plan.read_options,
        run_options=the_plan.options,
        params=the_plan.params,
        result=result,
        shuffled=shuffled,
        command=the_plan.command,
        verified=verified,
        output_read=back.read_options,
        output_rows=back.table.frame if shuffled else None,
    )
    doc["output"]["name"] = targets.output.name
    doc["published_unchanged"] = {
        "columns": [str(c) for c in published.unchanged],
        "sheets": [str(s) for s in published.other_sheets],
    }
    return doc


def _report_text(the_plan: Plan, result) -> str:
    from ..report import render_report

    run = the_plan.run
    settings = {
        "input": the_plan.input_name,
        "output": the_plan.targets.output.name,
        "seed": run.seed,
        "time limit (s)": run.time_limit,
        "strata": ", ".join(map(str, run.strata)) if run.strata else None,
        "standardised": run.standardize,
        "block size": run.block_size,
        "row order": "shuffled" if the_plan.order is not None else "the input's",
    }
    return render_report(result, the_plan.table.frame, settings, p=the_plan.interval_p)


# --- the stages composed ------------------------------------------------------------------------


def publish_table(
    opened: Opened, params: dict, run, *, progress=None, progress_context=None, **planned
):
    """The publication of a file read in memory: the stages, each once, in order (see the
    module's docstring); the ``Result`` ``land`` made. ``planned``: the plan's keywords
    (``plan``); ``progress_context``: a context manager giving the progress callback."""
    from contextlib import nullcontext

    the_plan = plan(opened, params, run, **planned)
    with progress_context if progress_context is not None else nullcontext(progress) as callback:
        return run_stages(the_plan, callback)


def run_stages(the_plan: Plan, progress=None):
    """The stages after the plan, each once, in order; the ``Result`` ``land`` made. Every
    publication composes them: a file read in memory (``publish_table``) and a chunked table
    (``folder.publish_folder``); ``progress``: the progress callback of the run and the write."""
    computed = compute(the_plan, progress)
    staged = write(the_plan, computed, progress)
    try:
        back = read_back(the_plan, staged, computed)
        found = verify(the_plan, computed, back)
        figures = audit(the_plan, computed, back, found)
        return land(the_plan, computed, staged, back, figures)
    finally:
        staged.discard()
