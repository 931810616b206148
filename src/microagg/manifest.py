"""The run manifest: ``<output>.manifest.json`` beside a protected file.

What ``microagg protect`` did, so that ``microagg evaluate ORIGINAL PROTECTED`` needs nothing
retyped and reproduces protect's figures to the last digit: the roles of the columns (QIs and
their kinds, strata, keys, sensitive columns, sampling weight), k, the method, its parameters
and the run's seed, how the input was read, the versions of the software, the SHA-256 of the
input and of the output, whether the records were shuffled, and the audit (every figure,
including those that pair each record with its original, which cannot be recomputed once the
records are shuffled).

What it never holds: data values (no record, no group value, no partition, no method parameter
that is an array), the names of strata merged because they were smaller than k (their existence
and size are what merging hides), and the shuffle's permutation or seed (with either, anyone can
undo the shuffle). It can be published beside the file.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from .deadline import TIME_CUT_NOTE

__all__ = [
    "SUFFIX",
    "VERSION",
    "path_for",
    "sha256",
    "rows_digest",
    "build",
    "write",
    "read",
    "versions",
    "json_safe",
]

SUFFIX = ".manifest.json"
VERSION = 1


def path_for(output) -> Path:
    """The manifest's path beside ``output`` (a file or a folder)."""
    output = Path(output)
    return output.with_name(output.name + SUFFIX)


def sha256(path) -> str:
    """SHA-256 of a file's bytes (of every file of a folder, in name order, for a Parquet
    folder)."""
    h = hashlib.sha256()
    p = Path(path)
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    for f in files:
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def versions() -> dict:
    import platform

    out = {"python": platform.python_version()}
    for name in (
        "microagg",
        "numpy",
        "pandas",
        "scipy",
        "numba",
        "pyarrow",
        "pyreadstat",
        "openpyxl",
    ):
        try:
            from importlib.metadata import version

            out[name] = version(name)
        except Exception:  # noqa: BLE001  (not installed: left out)
            continue
    return out


def _plain_params(params: dict) -> dict:
    """Method parameters without data: an array (a start partition) is only said to be given."""
    out = {}
    for name, value in params.items():
        if value is None or isinstance(value, (bool, int, float, str)):
            out[name] = value
        else:
            out[name] = "(given)"
    return out


def build(
    *,
    input_path,
    output_path,
    input_format: str,
    output_format: str,
    read_options: dict,
    run_options: dict,
    params: dict,
    result,
    shuffled: bool,
    command: str,
    verified: dict,
    output_read: dict | None = None,
    output_rows=None,
) -> dict:
    """The manifest of one protect run (``result``: its Result, whose audit is the written
    file's; ``output_rows``: a shuffled output's frame as read back, for its rows' digest, not
    read again)."""
    strata = result.strata
    options = {
        k: v
        for k, v in run_options.items()
        if k not in ("progress", "shuffle_seed", "scheduler", "labels")
    }
    if run_options.get("labels") is not None:
        options["labels"] = "(a given partition: an explore run's)"
    return {
        "microagg_manifest": VERSION,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": versions(),
        "input": {
            "name": Path(input_path).name,
            "sha256": sha256(input_path),
            "format": input_format,
            "read": {k: v for k, v in read_options.items() if v not in (None, ())},
        },
        "output": _output_entry(output_path, output_format, output_read, shuffled, output_rows),
        "run": {
            "method": result.method,
            "k": result.k,
            "seed": run_options.get("seed", 0),
            "options": options,
            "params": _plain_params(params),
            # what a group publishes, with the aggregation's own parameters' values (defaults too)
            "aggregation": {
                "name": result.publication.aggregation,
                "parameters": dict(result.publication.parameters),
            },
            "per_variable": bool(result.per_variable),
            "seconds": result.seconds,
            "reproducible": not getattr(result, "time_cut", False),
            **({"note": TIME_CUT_NOTE} if getattr(result, "time_cut", False) else {}),
        },
        "roles": result.audit_roles.to_dict(),
        "shuffled": bool(shuffled),
        "merged_strata": (
            None
            if strata is None or not strata.merges
            else {"count": len(strata.merges), "published": strata.published}
        ),
        "verified": verified,
        # the privacy models the run declared, with their parameters (microagg.privacy)
        "privacy_models": list(
            (getattr(result, "method_facts", None) or {}).get("privacy_models", [])
        ),
        "command": command,
        "audit": result.audit.to_dict(),
    }


def _output_entry(path, format: str, read: dict | None, shuffled: bool, rows=None) -> dict:
    """The manifest's ``output``: its name, SHA-256, format and reading options; a shuffled
    file's rows' digest too (``rows``: the frame as read back, not read again)."""
    entry = {
        "name": Path(path).name,
        "sha256": sha256(path),
        "format": format,
        "read": dict(read or {}),
    }
    if shuffled:
        entry["rows_sha256"] = (
            rows_digest(path, read, format) if rows is None else rows_digest_of(rows)
        )
    return entry


def rows_digest(path, read_options: dict | None = None, format: str | None = None) -> str:
    """SHA-256 of a table's rows as a multiset (row order aside), the file read
    (``rows_digest_of``)."""
    from . import io

    options = {
        k: v
        for k, v in (read_options or {}).items()
        if k in ("sep", "decimal", "encoding", "sheet") and v not in (None, "")
    }
    frame = io.read(
        path, format=format or None, **options
    ).frame  # format: a temporary file's name says none
    return rows_digest_of(frame)


def rows_digest_of(frame) -> str:
    """SHA-256 of a frame's rows as a multiset (row order aside): the column names, then every
    row's hash (pandas ``hash_pandas_object``, the values and their types) in sorted order."""
    import numpy as np
    import pandas as pd

    h = hashlib.sha256()
    h.update("\x1f".join(map(str, frame.columns)).encode("utf-8"))
    rows = np.sort(pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64))
    h.update(rows.tobytes())
    return h.hexdigest()


def write(path, manifest: dict) -> Path:
    from .io import atomic_write_text

    return atomic_write_text(
        path, json.dumps(json_safe(manifest), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    )


def json_safe(obj):
    """A JSON-ready copy: numpy scalars and arrays as Python numbers and lists, non-finite floats
    as None, anything else unknown as its text (the manifest's and explore's result files)."""
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def read(path) -> dict:
    """A manifest written by ``write``, read as untrusted (``untrusted_documents.read_manifest``:
    its schema, a bounded size and depth); one InputError line when it is not one."""
    from .untrusted_documents import read_manifest

    return read_manifest(path)
