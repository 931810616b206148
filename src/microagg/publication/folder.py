"""The out-of-core mode's publication: a folder of Parquet partitions, read back, verified and
audited in a stream, landing with its manifest (the same checks as
:mod:`microagg.publication.stages` gives a file, counted on every record; the other
figures on a seeded sample)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputError
from . import landing
from .stages import PublishedFile, manifest_command

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
    run,
    *,
    command_input=None,
    progress_context=None,
    chunk_rows: int = 1_000_000,
):
    """The out-of-core mode's publication: the folder of Parquet partitions is written beside its
    target, read back in a stream (pyarrow) and checked k-anonymous on the QIs and strata by an
    exact count of their combinations over every record, audited on a seeded sample of
    FOLDER_AUDIT_SAMPLE records, and lands together with its manifest (``OUTPUT.manifest.json``).
    Returns (the mode's summary, its ``Result``: ``folder_result``)."""
    from .. import io, manifest

    source, out = Path(source), Path(output)
    if not source.exists():
        raise InputError(f"input file not found: {source}")
    io.check_output_path(out, source, folder=True)
    manifest_path = io.check_side_file(manifest.path_for(out), "manifest", source, out)
    box: dict = {}
    staged: list = []

    def fill(tmp):  # the folder, written beside its target: run, read back, verified, audited
        summary = _run_out_of_core(source, tmp, options, params, progress_context, chunk_rows)
        roles = folder_roles(summary, run)
        published, audit = _verify_folder(source, tmp, out, manifest_path, roles, run, chunk_rows)
        command = manifest_command(
            command_input or str(source),
            str(output),
            {**options, "out_of_core": True},
            params,
            None,
        )
        doc = _folder_manifest(
            source, tmp, out, summary, roles, run, options, params, audit, published, command
        )
        staged.append(
            (landing.stage_text(manifest_path, landing.manifest_text(doc)), manifest_path)
        )
        box.update(summary=summary, published=published, audit=audit)

    try:
        io.atomic_folder(out, fill)
        _land_manifest(staged, out, manifest_path)
    finally:
        landing.discard(staged)
    summary = {k: v for k, v in box["summary"].items() if k not in ("files", "labels")}
    result = folder_result(box["summary"], box["published"], box["audit"], run, params)
    return summary, result


def folder_result(summary: dict, published: PublishedFile, audit, run, params: dict):
    """The out-of-core publication's ``Result``, the type every door returns: the labels (one per
    record, in input order), the run's figures (IL, SSE, SST, the groups' sizes: over every
    record), the folder's audit (k-anonymity counted on every record, the other figures on its
    seeded sample) and the ``PublishedFile``; ``data`` is the published folder as a pyarrow
    dataset, read lazily (it may not fit in memory)."""
    import numpy as np
    import pyarrow.dataset as ds

    from ..labels import group_sizes
    from ..measures import MEASURES, Audit, Figure, in_registry_order
    from ..result import Result

    labels = summary["labels"]
    sizes = group_sizes(labels)
    figures = {
        "information_loss": summary["information_loss"],
        "sse": summary["sse"],
        "sst": summary["sst"],
        "groups": int(len(sizes)),
        "group_size_min": int(sizes.min()),
        "group_size_max": int(sizes.max()),
    }
    run_audit = Audit(
        in_registry_order(tuple(Figure(MEASURES[n], v, "run") for n, v in figures.items())),
        {},
        (summary["note"],) if "note" in summary else (),
        {"reproducible": "note" not in summary},
    )
    roles = folder_roles(summary, run)
    return Result(
        data=ds.dataset(str(published.path), format="parquet"),
        labels=np.asarray(labels),
        information_loss=figures["information_loss"],
        sse=figures["sse"],
        sst=figures["sst"],
        lower_bound=None,
        gap=None,
        method=summary["method"],
        params=dict(params),
        seconds=summary["seconds"],
        group_sizes=sizes,
        k=int(summary["k"]),
        columns=list(summary["columns"]),
        audit=run_audit.with_figures(audit),
        audit_roles=roles,
        file=published,
        time_cut="note" in summary,
    )


def _run_out_of_core(source, tmp, options, params, progress_context, chunk_rows) -> dict:
    """The out-of-core mode (``outofcore.protect_out_of_core``) writing into ``tmp``: its
    summary."""
    from ..outofcore import protect_out_of_core

    if progress_context is None:
        return protect_out_of_core(source, tmp, chunk_rows=chunk_rows, **options, **params)
    with progress_context as bar:
        return protect_out_of_core(
            source, tmp, progress=bar, chunk_rows=chunk_rows, **options, **params
        )


def _verify_folder(source, tmp, out: Path, manifest_path, roles, run, chunk_rows):
    """(the PublishedFile, its audit): the folder read back in a stream, k-anonymous on every
    record, or nothing is written."""
    audit, frequencies = stream_audit(source, tmp, roles, seed=run.seed, chunk_rows=chunk_rows)
    if frequencies.records_below_k:
        raise InputError(
            f"{out.name}, read back (pyarrow), is not {roles.k}-anonymous on "
            f"{', '.join(map(str, roles.key_variables))}: {frequencies.records_below_k} records in "
            f"combinations occurring fewer than {roles.k} times; nothing was written"
        )
    keys = [str(c) for c in roles.key_variables]
    published = PublishedFile(
        out, manifest_path, None, None, "pyarrow", keys, True, frequencies.smallest, [], [], False
    )
    return published, audit


def _land_manifest(staged, out: Path, manifest_path) -> None:
    """The manifest renamed into place once the folder is; if it cannot be, the folder goes too."""
    import shutil

    try:
        for tmp, target in staged:
            os.replace(tmp, target)
    except OSError as exc:
        shutil.rmtree(out, ignore_errors=True)
        raise InputError(
            f"cannot write {manifest_path}: {exc.strerror or exc}; nothing was written"
        ) from None


def folder_roles(summary: dict, run):
    """The audit's roles of an out-of-core run: continuous QIs, strata, k."""
    from ..measures import AuditRoles

    columns = tuple(summary["columns"])
    return AuditRoles(
        columns, {c: "continuous" for c in columns}, int(summary["k"]), tuple(run.strata or ())
    )


def _folder_manifest(
    source, tmp, out, summary, roles, run, options, params, audit, published, command
) -> dict:
    import time

    from .. import io, manifest

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
            "sha256": manifest.sha256(tmp),
            "format": "parquet",
            "read": {},
        },
        "run": {
            "method": summary["method"],
            "k": int(summary["k"]),
            "seed": run.seed,
            "options": plain,
            "params": manifest._plain_params(params),
            "per_variable": False,
            "seconds": summary["seconds"],
            "out_of_core": True,
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
        "command": command,
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
    frequencies, qi_counts, n = _stream_frequencies(published, roles, chunk_rows)
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
    return _with_exact_figures(audit, exact, sampled), frequencies


def _stream_frequencies(published, roles, chunk_rows):
    """(the key variables' frequencies, each QI combination's count, the records), counted on
    every record of the published file in a stream, each combination by its 128-bit hash."""
    import numpy as np

    from .. import io
    from ..measures.records import KeyFrequencies

    keys, qis = list(roles.key_variables), list(roles.columns)
    hashes, qi_hashes = [], []
    for df in io.chunks(published, keys, chunk_rows, qis):
        hashes.append(_row_hashes(df[keys].reset_index(drop=True)))
        qi_hashes.append(_row_hashes(df[qis].reset_index(drop=True)))
    n = sum(len(h) for h in hashes)
    combination, counts = _combinations(hashes)
    frequencies = KeyFrequencies(
        tuple(keys), int(roles.k), combination, counts[combination].astype(np.int64)
    )
    _, qi_counts = _combinations(qi_hashes)
    return frequencies, qi_counts, n


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


def _row_hashes(frame):
    """Two 64-bit hashes of each row's values (two keys: 128 bits in all)."""
    import numpy as np
    import pandas as pd

    return np.stack(
        [
            pd.util.hash_pandas_object(frame, index=False, hash_key=key).to_numpy()
            for key in ("microagg-keys-01", "microagg-keys-02")
        ],
        axis=1,
    )


def _combinations(hashes):
    """(each row's combination code, each combination's count) of row hashes in chunks."""
    import numpy as np

    pairs = np.concatenate(hashes) if hashes else np.empty((0, 2), np.uint64)
    _, combination, counts = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
    return combination.reshape(-1).astype(np.int64), counts


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
