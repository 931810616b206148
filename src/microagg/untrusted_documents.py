"""What microagg reads back of its own, read as untrusted: run manifests, explore results and
their labels files.

A manifest or an explore result may have been edited, truncated, forged or swapped since
microagg wrote it. Each is read here against a declared schema (pydantic: the types of every
field the program uses, the read options limited to the reader's own), within a bounded size
(:data:`MAX_DOCUMENT_BYTES`) and nesting depth (the parser's own limit), and every way it can be
wrong is one :class:`~microagg.errors.InputError` line. A labels file (``RESULT.labels.npz``)
must lie in the result's own folder under a plain name; its zip directory and each array's
``.npy`` header are checked before any array is allocated (numpy's own ``read_magic`` /
``read_array_header``): int64 labels, one dimension (two for per-variable methods), sizes that
match the bytes stored and at most :data:`MAX_LABELS` labels.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from .errors import InputError

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_LABELS",
    "read_manifest",
    "read_explore_result",
    "read_labels",
]

# : the largest manifest or explore result read (a manifest takes a few kB; a result of 1,000 runs
# ~2 MB)
MAX_DOCUMENT_BYTES = 64 * 2**20
#: the most labels one run of a labels file may hold (records × columns of a per-variable method)
MAX_LABELS = 2**31
_SHA256 = r"^[0-9a-f]{64}$"
_LABELS_NAME = re.compile(r"^[^/\\\x00]{1,200}\.labels\.npz$")
_PLAIN_NAME = r"^[^/\\\x00]{1,255}$"
_MEMBER = re.compile(r"^run_(\d{1,9})\.npy$")


def _models():
    """The schemas (built on first use: pydantic is imported only when a document is read)."""
    global _MODELS
    if _MODELS is None:
        shared = _shared_models()
        _MODELS = {"manifest": _manifest_model(shared), "explore": _explore_model(shared)}
    return _MODELS


def _shared_models():
    """The parts both documents use: open and closed records, the read options, a figure's value."""
    from types import SimpleNamespace

    from pydantic import BaseModel, ConfigDict, Field

    class Open(BaseModel):  # fields the program does not use are kept, not checked
        model_config = ConfigDict(extra="allow", strict=True)

    class Closed(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

    class ReadOptions(Closed):  # handed to io.read: nothing else may come through
        sep: str | None = Field(None, max_length=8)
        decimal: str | None = Field(None, max_length=1)
        encoding: str | None = Field(None, max_length=40)
        sheet: str | None = Field(None, max_length=200)
        missing: list[str] = Field(default_factory=list, max_length=1000)

    Value = float | int | str | bool | list[Any] | dict[str, Any] | None
    return SimpleNamespace(Open=Open, ReadOptions=ReadOptions, Value=Value)


def _manifest_model(shared):
    """A run manifest (``microagg.manifest``): the files, the run, the roles and the audit."""
    from pydantic import Field

    Open, ReadOptions, Value = shared.Open, shared.ReadOptions, shared.Value

    class FileEntry(Open):
        name: str = Field(pattern=_PLAIN_NAME)  # a file's name, never a path
        sha256: str = Field(pattern=_SHA256)
        format: str
        read: ReadOptions = Field(default_factory=ReadOptions)

    class Roles(Open):
        columns: list[str] = Field(max_length=100_000)
        kinds: dict[str, Literal["continuous", "ordinal", "nominal"]]
        k: int = Field(ge=1)
        strata: list[str] = Field(default_factory=list)
        keys: list[str] = Field(default_factory=list)
        sensitive: list[str] = Field(default_factory=list)
        sample_weight: str | None = None
        ordinal_levels: dict[str, list[Any] | None] = Field(default_factory=dict)
        standardize: bool = True
        l: float = Field(2.0, ge=0)  # noqa: E741 (l-diversity's l, the document's field name)
        p: float = Field(10.0, ge=0, le=100)
        household: list[str] = Field(default_factory=list)
        household_level: list[str] = Field(default_factory=list)
        missing: list[str] = Field(default_factory=list, max_length=1000)

    class AuditDoc(Open):
        groups: dict[str, dict[str, Value]] = Field(default_factory=dict)
        categories: dict[str, dict[str, Value]] = Field(default_factory=dict)
        warnings: list[str] = Field(default_factory=list)
        context: dict[str, Any] = Field(default_factory=dict)

    class RunDoc(Open):
        method: str
        k: int = Field(ge=1)
        seed: int | None = 0
        options: dict[str, Any] = Field(default_factory=dict)
        params: dict[str, Any] = Field(default_factory=dict)
        per_variable: bool = False
        seconds: float | None = None

    class Manifest(Open):
        microagg_manifest: Literal[1]
        input: FileEntry
        output: FileEntry
        run: RunDoc
        roles: Roles
        shuffled: bool = False
        command: str = ""
        audit: AuditDoc = Field(default_factory=AuditDoc)

    return Manifest


def _explore_model(shared):
    """An explore result (``microagg.explore``): the input explored, the options and the runs."""
    from pydantic import Field

    Open, ReadOptions, Value = shared.Open, shared.ReadOptions, shared.Value

    class InputDoc(
        Open
    ):  # an exploration of a data frame has no file: --from-explore requires its SHA-256
        name: str = ""
        sha256: str | None = Field(None, pattern=_SHA256)
        format: str = ""
        read: ReadOptions = Field(default_factory=ReadOptions)

    class ExploreRunDoc(Open):
        id: int = Field(ge=0, le=10**9)
        k: int = Field(ge=1)
        method: str
        params: dict[str, Any] = Field(default_factory=dict)
        status: str
        note: str | None = None
        time_limit: float | None = None
        predicted: float | None = None
        seconds: float | None = None
        audit_seconds: float | None = None
        run_figures: dict[str, Value] = Field(default_factory=dict)
        utility: dict[str, Value] = Field(default_factory=dict)
        risk_figures: dict[str, Value] = Field(default_factory=dict)
        warnings: list[str] = Field(default_factory=list)

    class ExploreResult(Open):
        microagg_explore: Literal[1]
        input: InputDoc = Field(default_factory=InputDoc)
        options: dict[str, Any] = Field(default_factory=dict)
        fingerprint: str | None = None
        runs: list[ExploreRunDoc] = Field(max_length=100_000)
        labels_file: str | None = None

    return ExploreResult


_MODELS = None


def _read(path, what: str, model: str, marker: str) -> dict:
    """The document at ``path`` checked against its schema, as plain data; one InputError
    otherwise."""
    from pydantic import ValidationError

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{what} not found: {p}")
    try:
        size = p.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise InputError(
                f"{p.name} is not a {what}: {size:,} bytes, more than any microagg writes "
                f"({MAX_DOCUMENT_BYTES:,})"
            )
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {p.name}: {exc.strerror or exc}") from None
    schema = _models()[model]
    try:
        doc = schema.model_validate_json(raw)
    except ValidationError as exc:
        raise InputError(f"{p.name} is not a {what}: {_first_error(exc, marker)}") from None
    except (RecursionError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{p.name} is not a {what} ({type(exc).__name__})") from None
    out = doc.model_dump(mode="python")
    for entry in ("input", "output"):  # read options as given to io.read: only those set
        if isinstance(out.get(entry), dict) and isinstance(out[entry].get("read"), dict):
            out[entry]["read"] = {
                k: v for k, v in out[entry]["read"].items() if v not in (None, [], ())
            }
    return out


def _first_error(exc, marker: str) -> str:
    """The first schema error as a short phrase (where, what), without the document's values."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "invalid"
    first = errors[0]
    where = ".".join(str(x) for x in first.get("loc", ()))
    if where == marker or first.get("type") == "json_invalid":
        kind = (
            "not JSON"
            if first.get("type") == "json_invalid"
            else "not microagg's (or another version)"
        )
        return f"{kind}" + (
            f" ({first.get('msg', '')[:80]})" if first.get("type") == "json_invalid" else ""
        )
    message = str(first.get("msg", "invalid"))[:120]
    return f"{where or 'the document'}: {message}" + (
        f" ({len(errors) - 1} more)" if len(errors) > 1 else ""
    )


def read_manifest(path) -> dict:
    """A run manifest (``OUTPUT.manifest.json``) checked against its schema."""
    return _read(path, "microagg run manifest", "manifest", "microagg_manifest")


def read_explore_result(path) -> dict:
    """An explore result (``RESULT.json``) checked against its schema; its input's SHA-256 is
    required."""
    return _read(path, "microagg explore result", "explore", "microagg_explore")


def labels_file(result_path, doc: dict) -> Path:
    """The labels file of an explore result: a plain name in the result's own folder."""
    p = Path(result_path)
    name = doc.get("labels_file") or (p.name.removesuffix(".json") + ".labels.npz")
    if not _LABELS_NAME.match(name) or name in (".", "..") or Path(name).name != name:
        raise InputError(
            f"{p.name}: its labels file {name[:80]!r} is not a file name beside it "
            "(RESULT.labels.npz in the result's folder)"
        )
    return p.with_name(name)


def read_labels(path, run_ids, records: int | None = None) -> dict:
    """{run id: int64 labels} of a labels file, for the runs ``run_ids`` (others are not read);
    every member's size and header checked before its array is allocated."""
    import zipfile

    import numpy as np
    from numpy.lib import format as npy

    p = Path(path)
    if not p.is_file():
        return {}
    wanted = set(int(i) for i in run_ids)
    out = {}
    try:
        with zipfile.ZipFile(p) as archive:
            members = archive.infolist()
            if len(members) > 100_000:
                raise InputError(
                    f"{p.name} holds {len(members):,} members: not a microagg labels file"
                )
            for info in members:
                match = _MEMBER.match(info.filename)
                if match is None:
                    raise InputError(
                        f"{p.name}: member {info.filename[:60]!r} is not a run's labels"
                    )
                run_id = int(match.group(1))
                if run_id not in wanted:
                    continue
                if info.file_size > 8 * MAX_LABELS + 4096:
                    raise InputError(
                        f"{p.name}: run {run_id}'s labels claim {info.file_size:,} bytes"
                    )
                with archive.open(info) as fh:
                    out[run_id] = _read_npy(fh, info, p.name, run_id, records, npy, np)
    except InputError:
        raise
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        EOFError,
        OSError,
        ValueError,
        KeyError,
    ) as exc:
        raise InputError(
            f"cannot read the runs' labels {p.name}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:120] if str(exc) else 'damaged'}"
        ) from None
    return out


def _read_npy(fh, info, name: str, run_id: int, records, npy, np):
    version = npy.read_magic(fh)
    if version not in ((1, 0), (2, 0)):
        raise InputError(f"{name}: run {run_id}'s labels are not a numpy array of a known version")
    reader = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
    shape, fortran, dtype = reader(fh, max_header_size=10_000)
    if dtype != np.dtype("<i8") or fortran or len(shape) not in (1, 2):
        raise InputError(f"{name}: run {run_id}'s labels are not one column of int64 group labels")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count > MAX_LABELS or (records is not None and shape[0] != records):
        raise InputError(
            f"{name}: run {run_id} has {shape[0]:,} labels"
            + (f" for {records:,} records" if records is not None else "")
        )
    header = 6 + 2 + (2 if version == (1, 0) else 4)
    if info.file_size < count * 8 + header:
        raise InputError(f"{name}: run {run_id}'s labels are truncated")
    data = fh.read(count * 8)
    if len(data) != count * 8:
        raise InputError(f"{name}: run {run_id}'s labels are truncated")
    return np.frombuffer(data, dtype="<i8").reshape(shape).astype(np.int64)
