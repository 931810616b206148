"""The out-of-core mode's publication: a folder of Parquet partitions, read back, verified and
audited in a stream, landing with its manifest (the same checks as
:mod:`microagg.publication.stages` gives a file, counted on every record; the other
figures on a seeded sample)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from ..errors import InputError
from . import landing
from .opening import Targets
from .stage_values import Plan, PublishedFile, ReadBack, manifest_command

#: records of the out-of-core audit's simple random sample (the k-anonymity figures are exact,
#: counted on every record)
FOLDER_AUDIT_SAMPLE = 10_000
#: the audit figures that need every record (the whole file's frequencies): exact from the stream
_EXACT_KEY_FIGURES = (
    "key_combinations",
    "key_smallest_frequency",
    "key_records_below_k",
    "key_combinations_below_k",
    "smallest_group",
)
#: figures estimating population frequencies from the file's own: meaningless on a sample, left out
_WHOLE_FILE_ONLY = (
    "reidentification_expected",
    "reidentification_global_percent",
    "reidentification_max",
    "reidentification_above_threshold",
    "reidentification_higher_than_main_part",
)


def publish_folder(
    source: Path,
    output,
    options: dict,
    params: dict,
    run=None,
    *,
    command_input=None,
    progress=None,
    progress_context=None,
    chunk_rows: int = 1_000_000,
    slab_blocks: int = 32,
):
    """The out-of-core mode's publication: the same stages as a file's
    (``stages.run_stages``) over a chunked table (``io.ChunkedTable``): the run in passes over
    the input (``compute``), the folder of Parquet partitions written beside its target with the
    Parquet writer (``write``), read back in a stream by pyarrow (``read_back``), checked
    k-anonymous on the QIs and strata by an exact count of their combinations over every record
    (``verify``), audited on a seeded sample of FOLDER_AUDIT_SAMPLE records (``audit``), landing
    with its manifest (``OUTPUT.manifest.json``, ``land``). Returns its ``Result``
    (``folder_result``; the mode's summary in ``method_facts["out_of_core"]``).

    ``run``: the options checked by ``outofcore.check_out_of_core`` (None: checked here, before
    any pass); ``progress``: a callback, or ``progress_context`` a context manager giving one.
    The mode's own settings, which the manifest records: ``chunk_rows``, the records read at
    once (one Parquet partition per input chunk), and ``slab_blocks``, the blocks of a slab (a
    Dask task: slabs of slab_blocks·max(k, block_size) to twice as many records)."""
    from contextlib import nullcontext

    from .stages import run_stages

    if run is None:
        from ..outofcore import check_out_of_core

        run = check_out_of_core(options, params)
    the_plan = plan(source, output, options, params, run, command_input, chunk_rows, slab_blocks)
    shown = progress_context if progress_context is not None else nullcontext(progress)
    with shown as callback:
        return run_stages(the_plan, callback)


def plan(
    source, output, options: dict, params: dict, run, command_input, chunk_rows, slab_blocks=32
) -> Plan:
    """The plan of an out-of-core publication: the input as a chunked table, the folder's and its
    manifest's paths checked, the reproduce command, the mode's settings (``chunked_stages``)."""
    from .. import io, manifest

    source, out = Path(source), Path(output)
    table = io.open_chunked(source, chunk_rows)
    io.check_output_path(out, source, folder=True)
    manifest_path = io.check_side_file(manifest.path_for(out), "manifest", source, out)
    input_name = command_input or str(source)
    command = manifest_command(
        input_name, str(output), {**options, "out_of_core": True}, params, None
    )
    return Plan(
        table,
        Targets(out, manifest_path),
        options,
        params,
        run,
        {},
        None,
        command,
        input_name,
        chunked=chunked_stages(slab_blocks),
    )


@dataclass(frozen=True)
class FolderRun:
    """The compute stage's value over a chunked table: the run in passes
    (``outofcore.ChunkedRun``) and the roles of the folder's audit (``folder_roles``), made once
    for the stages after it."""

    chunked: object  # outofcore.ChunkedRun
    audit_roles: object  # measures.AuditRoles

    @property
    def summary(self) -> dict:
        """The run's summary (records, k, slabs, groups, SSE, SST, IL, seconds, notes)."""
        return self.chunked.summary

    @property
    def labels(self):
        """Each record's group, in input order."""
        return self.chunked.labels


def compute(the_plan: Plan, progress=None) -> FolderRun:
    """Passes 1 to 3 and the partition over the chunked table (``outofcore.compute_chunked``),
    and the roles of the folder's audit."""
    from ..outofcore import compute_chunked

    chunked = compute_chunked(
        the_plan.table,
        the_plan.run,
        the_plan.targets.output.parent,
        progress,
        the_plan.chunked.slab_blocks,
    )
    return FolderRun(chunked, folder_roles(chunked.summary, the_plan.run))


def write(the_plan: Plan, computed, progress=None):
    """Pass 4: the folder of Parquet partitions, each written by the Parquet format's writer
    (``io.write_part``), staged beside its target (``io.stage_folder``)."""
    from .. import io
    from ..outofcore import write_chunked

    return io.stage_folder(
        the_plan.targets.output,
        lambda tmp: write_chunked(computed.chunked, the_plan.table, tmp, progress),
        "parquet",
    )


def read_back(the_plan: Plan, staged, computed) -> ReadBack:
    """The staged folder as pyarrow reads it, in a stream (its records counted in ``verify``)."""
    from .. import io

    table = io.open_chunked(staged.temporary, the_plan.table.chunk_rows)
    return ReadBack(table, None, "pyarrow", {})


def verify(the_plan: Plan, computed, back: ReadBack):
    """(the key variables' frequencies, each QI combination's count, the records): counted on
    every record of the folder read back; not k-anonymous, nothing is written."""
    roles = computed.audit_roles
    counted = _stream_frequencies(
        back.table.path, roles, the_plan.table.chunk_rows, computed.summary["records"]
    )
    frequencies = counted[0]
    if frequencies.records_below_k:
        raise InputError(
            f"{the_plan.targets.output.name}, read back (pyarrow), is not {roles.k}-anonymous on "
            f"{', '.join(map(str, roles.key_variables))}: {frequencies.records_below_k} records in "
            f"combinations occurring fewer than {roles.k} times; nothing was written"
        )
    return counted


def audit(the_plan: Plan, computed, back: ReadBack, counted):
    """The run's figures over every record and the folder's audit: the k-anonymity figures from
    ``verify``'s exact count, the others on a seeded sample (``stream_audit``'s)."""
    figures = _folder_audit(
        the_plan.table.path,
        back.table.path,
        computed.audit_roles,
        counted,
        seed=the_plan.run.seed,
        sample=FOLDER_AUDIT_SAMPLE,
        chunk_rows=the_plan.table.chunk_rows,
    )
    return run_figures(computed.summary, computed.labels).with_figures(figures)


def land(the_plan: Plan, computed, staged, back: ReadBack, file_audit):
    """The folder's ``Result`` (``folder_result``), the summary it prints, its manifest staged,
    then the folder and the manifest renamed into place together (if the manifest cannot be,
    the folder goes too)."""
    targets = the_plan.targets
    smallest = file_audit.group("risk")["key_smallest_frequency"]
    keys = [str(c) for c in computed.audit_roles.key_variables]
    published = PublishedFile(
        targets.output, targets.manifest, None, None, "pyarrow", keys, True, smallest, [], [], False
    )
    result = folder_result(computed, published, file_audit, the_plan)
    result.summary()  # the summary every door prints: should it fail, nothing lands
    doc = _folder_manifest(the_plan, staged, computed, file_audit, published)
    staged_manifest: list = []
    try:
        text = landing.manifest_text(doc)
        staged_manifest.append((landing.stage_text(targets.manifest, text), targets.manifest))
        staged.land()
        landing.land(staged_manifest, targets.output)
    finally:
        landing.discard(staged_manifest)
    return result


def run_figures(summary: dict, labels):
    """The run's own figures over every record (IL, SSE, SST, the groups and their sizes)."""
    from ..labels import group_sizes
    from ..measures import MEASURES, Audit, Figure, in_registry_order

    sizes = group_sizes(labels)
    figures = {
        "information_loss": summary["information_loss"],
        "sse": summary["sse"],
        "sst": summary["sst"],
        "groups": int(len(sizes)),
        "group_size_min": int(sizes.min()),
        "group_size_max": int(sizes.max()),
    }
    return Audit(
        in_registry_order(tuple(Figure(MEASURES[n], v, "run") for n, v in figures.items())),
        {},
        (summary["note"],) if "note" in summary else (),
        {"reproducible": "note" not in summary},
    )


def folder_result(computed, published: PublishedFile, audit, the_plan: Plan):
    """The out-of-core publication's ``Result``, the type every door returns: the labels (one per
    record, in input order), the run's figures (over every record), the folder's audit
    (k-anonymity counted on every record, the other figures on its seeded sample) and the
    ``PublishedFile``; ``data`` is the published folder as a pyarrow dataset, read lazily (it may
    not fit in memory); the mode's summary is in ``method_facts["out_of_core"]``."""
    import numpy as np

    from ..labels import group_sizes
    from ..result import Result

    summary = computed.summary
    return Result(
        data=PublishedFolder(published.path),
        labels=np.asarray(computed.labels),
        information_loss=summary["information_loss"],
        sse=summary["sse"],
        sst=summary["sst"],
        lower_bound=None,
        gap=None,
        method=summary["method"],
        params=dict(the_plan.params),
        seconds=summary["seconds"],
        group_sizes=group_sizes(computed.labels),
        k=int(summary["k"]),
        columns=list(summary["columns"]),
        audit=audit,
        audit_roles=computed.audit_roles,
        file=published,
        time_cut="note" in summary,
        method_facts={"out_of_core": dict(summary)},
        changed_columns=list(summary["columns"]) + list(summary.get("strata") or []),
    )


class PublishedFolder:
    """The published folder's records as a ``pyarrow.dataset.Dataset``, opened on first use (the
    folder lands after the Result is made, and its records may not fit in memory): every
    attribute is the dataset's (``to_table``, ``count_rows``, ``scanner``, ...)."""

    def __init__(self, path):
        self.path = Path(path)
        self._opened = None

    def dataset(self):
        """The ``pyarrow.dataset.Dataset`` of the folder's Parquet partitions."""
        if self._opened is None:
            import pyarrow.dataset as ds

            self._opened = ds.dataset(str(self.path), format="parquet")
        return self._opened

    def __getattr__(self, name):
        if name.startswith("_"):  # not the dataset's (copy and pickle look for these)
            raise AttributeError(name)
        return getattr(self.dataset(), name)

    def __getstate__(self):
        return {"path": self.path, "_opened": None}

    def __repr__(self) -> str:
        return f"<microagg PublishedFolder {self.path} (pyarrow dataset, read on use)>"


def folder_roles(summary: dict, run):
    """The audit's roles of an out-of-core run: continuous QIs, strata, k."""
    from ..measures import AuditRoles

    columns = tuple(summary["columns"])
    return AuditRoles(
        columns, {c: "continuous" for c in columns}, int(summary["k"]), tuple(run.strata or ())
    )


def _folder_manifest(the_plan: Plan, staged, computed: FolderRun, audit, published) -> dict:
    import time

    from .. import io, manifest

    run, options, source, out = (
        the_plan.run,
        the_plan.options,
        the_plan.table.path,
        the_plan.targets.output,
    )
    summary, roles = computed.summary, computed.audit_roles
    verified = {
        "key_variables": published.key_variables,
        "read_back_by": "pyarrow",
        "k_anonymous": True,
        "smallest_frequency": published.smallest_frequency,
        "counted": "every record (streamed)",
    }
    plain = {k: v for k, v in options.items() if k not in ("progress", "scheduler")}
    return {
        "microagg_manifest": manifest.VERSION,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": manifest.versions(),
        "input": {
            "name": Path(source).name,
            "sha256": manifest.sha256(source),
            "format": io.format_of(Path(source)),
            "read": {},
        },
        "output": {
            "name": out.name,
            "sha256": manifest.sha256(staged.temporary),
            "format": "parquet",
            "read": {},
        },
        "run": {
            "method": summary["method"],
            "k": int(summary["k"]),
            "seed": run.seed,
            "options": plain,
            "params": manifest._plain_params(the_plan.params),
            "per_variable": False,
            "seconds": summary["seconds"],
            "out_of_core": True,
            "chunk_rows": the_plan.table.chunk_rows,  # the mode's settings (publish_folder)
            "slab_blocks": the_plan.chunked.slab_blocks,
            "information_loss": summary["information_loss"],
            "sse": summary["sse"],
        },
        "roles": roles.to_dict(),
        "shuffled": False,
        "merged_strata": (
            None
            if not summary.get("merged_strata")
            else {"count": len(summary["merged_strata"]), "published": run.merged_strata}
        ),
        "verified": verified,
        "published_unchanged": {"columns": [], "sheets": []},
        "command": the_plan.command,
        "audit": audit.to_dict(),
    }


def stream_audit(
    original,
    published,
    roles,
    *,
    seed,
    sample: int = FOLDER_AUDIT_SAMPLE,
    chunk_rows: int = 1_000_000,
):
    """(the audit of a published file too large for memory, its key frequencies), both from
    streams of the two files in the same record order: the k-anonymity figures counted exactly on
    every record (each key combination hashed twice, 128 bits: a collision that would merge two
    combinations has a chance below 2^-100 at 10^9 records), every other figure on the same
    seeded simple random sample of ``sample`` records (the audit's context says so), except the
    re-identification figures, which need the whole file's frequencies and are left out.
    ``microagg evaluate`` recomputes it from the manifest to the last digit."""
    counted = _stream_frequencies(published, roles, chunk_rows)
    audit = _folder_audit(
        original, published, roles, counted, seed=seed, sample=sample, chunk_rows=chunk_rows
    )
    return audit, counted[0]


def _folder_audit(original, published, roles, counted, *, seed, sample, chunk_rows):
    """The folder's audit from the exact count (``counted``: ``_stream_frequencies``) and the
    seeded sample's figures."""
    frequencies, qi_counts, n = counted
    audit, chosen = _sampled_audit(original, published, roles, seed, sample, n, chunk_rows)
    exact = {
        "key_combinations": frequencies.combinations,
        "key_smallest_frequency": frequencies.smallest,
        "key_records_below_k": frequencies.records_below_k,
        "key_combinations_below_k": frequencies.combinations_below_k,
        "smallest_group": int(qi_counts.min()) if len(qi_counts) else None,
    }
    sampled = {
        "records": int(len(chosen)),
        "of": int(n),
        "seed": seed,
        "exact": list(_EXACT_KEY_FIGURES),
        "left_out": list(_WHOLE_FILE_ONLY),
    }
    return _with_exact_figures(audit, exact, sampled)


def _stream_frequencies(published, roles, chunk_rows, records=None):
    """(the key variables' CombinationCounts, each QI combination's count, the records), counted
    on every record of the published file in a stream (``streamed_counts``); ``records``: the
    number the run wrote (a folder that reads back with another is refused)."""
    from .. import io
    from .streamed_counts import count_combinations

    keys, qis = list(roles.key_variables), list(roles.columns)
    stream = io.chunks(published, keys, chunk_rows, qis)
    try:
        counted = count_combinations(stream, keys, qis, roles.k, records)
    except ValueError:
        counted = None
    if counted is None or (records is not None and counted[2] != records):
        raise InputError(
            f"the written folder does not read back with its {records} records: nothing was written"
        )
    return counted


def _sampled_audit(original, published, roles, seed, sample, n, chunk_rows):
    """(the audit of the seeded simple random sample of ``sample`` of the ``n`` records, the
    positions drawn): the same positions of both files."""
    import numpy as np

    from .. import io
    from ..measures import audit_files

    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(n, size=min(sample, n), replace=False))
    numeric = [c for c in roles.columns]
    frames = [
        _rows_at(io.chunks(path, None, chunk_rows, numeric), chosen)
        for path in (original, published)
    ]
    return audit_files(frames[0], frames[1], roles, seed=seed, read_back="pyarrow"), chosen


def _with_exact_figures(audit, exact: dict, sampled: dict):
    """The sample's audit with the figures counted on every record in place of the sample's, the
    whole-file-only figures left out, and its context saying what was sampled."""
    from ..measures import MEASURES, Audit, Figure, in_registry_order

    figures = [
        Figure(f.measure, exact[f.name], f.group) if f.name in exact else f
        for f in audit.figures
        if f.name not in _WHOLE_FILE_ONLY
    ]
    present = {f.name for f in figures}
    figures += [
        Figure(MEASURES[name], value, "risk")
        for name, value in exact.items()
        if name not in present
    ]
    context = {**audit.context, "sampled": sampled}
    warnings_ = tuple(w for w in audit.warnings if "anonymous" not in w)
    return Audit(in_registry_order(tuple(figures)), audit.categories, warnings_, context)


def _rows_at(chunks, positions):
    """The records at ``positions`` (sorted) of a stream of chunks, as one frame."""
    import numpy as np
    import pandas as pd

    parts, start = [], 0
    for df in chunks:
        stop = start + len(df)
        lo, hi = np.searchsorted(positions, [start, stop])
        if hi > lo:
            parts.append(df.iloc[positions[lo:hi] - start])
        start = stop
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def chunked_stages(slab_blocks: int = 32) -> SimpleNamespace:
    """The publication's stages over a chunked table, as ``stages`` calls them (``Plan.chunked``),
    and the mode's setting they read: the blocks of a slab."""
    return SimpleNamespace(
        compute=compute,
        write=write,
        read_back=read_back,
        verify=verify,
        audit=audit,
        land=land,
        slab_blocks=int(slab_blocks),
    )
