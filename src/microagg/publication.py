"""The publication stage: one protected file, whichever door asked for it.

``protect(input, output, ...)`` is the whole publication of a file: read the input with its
format's own library, run the pipeline (``api.microaggregate`` on the table read), write the
output atomically, read the written file back with its format's own reader, check k-anonymity on
every key variable as that reader groups them, audit the file as read back, and move the output
and its manifest into place together. The command line's ``protect`` (also with
``--from-explore``), the app's download and the public API all call it, so every door publishes
the same bytes (``tests/test_doors.py`` holds them to it, option by option, from
``options.RUN_OPTIONS``). The out-of-core mode publishes through :func:`finish_folder`, which
gives its folder the same read-back check, audit and manifest.

Nothing is left behind when a stage fails: the output, the manifest, the report and the labels
file are first written as temporary files beside their targets and renamed only once all of them
are complete, so a full disk at the manifest leaves no output without its manifest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from typing import TYPE_CHECKING, Hashable, Mapping, Sequence

from .errors import InputError

if TYPE_CHECKING:
    from typing import Any

    from distributed import Client
    from numpy.typing import ArrayLike
    from typing_extensions import Unpack

    from .result import Result
    from .typed import Aggregation, Columns, Distance, MergedStrata, MethodParams, OnKeysBelowK, Progress

__all__ = ["protect", "PublishedFile", "Targets", "unchanged_columns"]


@dataclass(frozen=True)
class Targets:
    """Where a publication writes: the output, its manifest, and the optional report and labels."""

    output: Path
    manifest: Path | None
    report: Path | None = None
    labels: Path | None = None

    @classmethod
    def checked(cls, source: Path, output, *, report=None, labels=None, init=None, manifest: bool = True) -> "Targets":
        """Every path checked before any work: its format, its folder (writable, by a probe),
        never the input nor another file of the run."""
        from . import io
        from .manifest import path_for

        out = io.check_output_path(Path(output), source)
        if init is not None and io.same_file(out, Path(init)):
            raise InputError(f"refusing to write the output over the --init file {out}")
        report_path = None
        if report is not None:
            from .report import check_report_path

            report_path = io.check_side_file(check_report_path(report), "report", source, out, init)
        labels_path = None if labels is None else io.check_side_file(labels, "labels", source, out, report_path, init)
        manifest_path = None
        if manifest:
            manifest_path = io.check_side_file(path_for(out), "manifest", source, out, report_path, labels_path, init)
        return cls(out, manifest_path, report_path, labels_path)


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
    other_sheets: list = field(default_factory=list)  # a workbook's sheets published as they came in
    shuffled: bool = False


class _ReadBack:
    """The output as its format's reader reads it back: its table and its key variables as grouped."""

    def __init__(self, table, keys, read_options):
        from . import io

        self.table, self.read_options = table, read_options
        # an empty CSV field is a missing value: after local suppression it matches any value
        self.keys = io.key_view(table, keys).replace("", None)
        self.reader = io.reader_name(table)


def unchanged_columns(table, res) -> list:
    """The columns of the file published as they came in (every column not protected nor recoded)."""
    changed = set(res.changed_columns)
    return [c for c in table.header if c not in changed]


def other_sheets(table) -> list:
    """A workbook's sheets other than the one protected: published as they came in (named in the
    summary, the JSON and the manifest, so that a sheet holding the original values is seen)."""
    sheets = getattr(table.meta, "other_sheets", None)
    return list(sheets or [])


def protect(
    input: str | os.PathLike,
    output: str | os.PathLike,
    *,
    k: int = 3,
    method: str = "mdav",
    columns: Columns | None = None,
    seed: int | None = 0,
    standardize: bool = True,
    time_limit: float | None = None,
    work: float | None = None,
    strata: Columns | None = None,
    block_size: int | None = None,
    scheduler: str | Client | None = None,
    refine: float | None = None,
    weights: Sequence[float] | Mapping[Hashable, float] | None = None,
    sample_weight: Hashable | None = None,
    merge_small_strata: bool = False,
    categorical: Columns | None = None,
    ordinal: Columns | Mapping[Hashable, Sequence[Any]] | None = None,
    distance: Distance = "euclidean",
    aggregation: Aggregation = "mean",
    trim: float | None = None,
    missing: str | Sequence[str] | None = None,
    continuous: Columns | None = None,
    keys: Columns | None = None,
    on_keys_below_k: OnKeysBelowK = "suppress",
    key_importance: Columns | None = None,
    sensitive: Columns | None = None,
    merged_strata: MergedStrata = "recode",
    shuffle: bool = False,
    household: Hashable | None = None,
    shuffle_seed: int | None = None,
    labels: ArrayLike | None = None,
    audit: bool = True,
    progress: bool | Progress | None = False,
    report: str | os.PathLike | None = None,
    labels_out: str | os.PathLike | None = None,
    manifest: bool = True,
    sep: str | None = None,
    decimal: str | None = None,
    encoding: str | None = None,
    sheet: str | None = None,
    interval_p: float | None = None,
    init: str | os.PathLike | None = None,
    command_input: str | None = None,
    out_of_core: bool = False,
    **params: Unpack[MethodParams],
) -> Result:
    """Protect the file ``input`` and publish it as ``output``: the one publication stage.

    The file is read with its format's own library, microaggregated (``microaggregate`` on the
    table read), written in the format ``output``'s suffix names, read back with that format's
    own library and checked k-anonymous on every key variable as that library groups them; then
    ``output.manifest.json`` (``manifest=False``: none), the optional HTML ``report`` and
    ``labels_out`` (one group label per record) land with it. Nothing is written when a stage
    fails. The command line's ``protect``, the app's download and this call publish the same
    bytes (a shuffled file: the same records).

    Parameters
    ----------
    input, output : str or path
        The file to protect and the file to publish (a different suffix converts; never over the
        input).
    k, method, columns, ... : run options
        ``microaggregate``'s run options (``microagg.options.RUN_OPTIONS``), with their defaults;
        ``missing`` also says which text tokens the reader takes as missing.
    report, labels_out : str or path, optional
        An HTML report and a labels file written beside the output.
    manifest : bool, default True
        Write ``output.manifest.json`` (``microagg evaluate`` reads it).
    sep, decimal, encoding, sheet : str, optional
        How to read the input: a CSV's dialect (detected by default), an Excel sheet.
    interval_p : float, optional
        The rank-interval percentage of the audit's interval disclosure (default 10).
    init : str or path, optional
        The labels file the method's ``init`` came from (named in errors).
    command_input : str, optional
        The input as the manifest's reproduce command names it (default: ``input``).
    out_of_core : bool, default False
        Stream a file larger than memory into a folder of Parquet partitions (``block_size``
        needed): returns that mode's summary dict with its ``audit`` and ``file``.
    **params
        The method's declared parameters (``microagg methods -v``).

    Returns
    -------
    Result
        The run, whose ``audit`` is the written file's and whose ``file`` is a
        :class:`PublishedFile` (paths, the reader, k-anonymity as read back, unchanged columns).

    Raises
    ------
    InputError
        Every bad input, in one line, before any work; nothing is written.

    Examples
    --------
    >>> import microagg, tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "public.csv"
    >>> res = microagg.protect(microagg.datasets.path("census"), out, k=3)
    >>> res.file.k_anonymous, out.with_name("public.csv.manifest.json").is_file()
    (True, True)
    """
    from .options import given_options, validate_run

    options = given_options(locals())
    options.pop("progress", None)  # reported through progress= below
    options.pop("audit", None)  # a published file is always audited, as read back
    params = dict(params)
    if out_of_core:
        from .outofcore import check_out_of_core

        options = {"k": k, "method": method, **options}  # the mode's call names them
        run = check_out_of_core(options, params)
        summary, published = publish_folder(Path(input), output, options, params, run, command_input=command_input)
        return {**summary, "file": published}  # type: ignore[return-value]
    run = validate_run(options, params)
    read_options = {"sep": sep, "decimal": decimal, "encoding": encoding, "sheet": sheet,
                    "missing": (missing,) if isinstance(missing, str) else tuple(missing or ())}
    return publish(Path(input), output, options, params, run, read_options=read_options, report=report,
                   labels_out=labels_out, manifest=manifest, interval_p=interval_p, init=init,
                   command_input=command_input, progress=progress)


def publish(source: Path, output, options: dict, params: dict, run, *, read_options: dict, report=None,
            labels_out=None, manifest: bool = True, interval_p=None, init=None, command_input=None, progress=None,
            progress_context=None, init_labels=None):
    """:func:`protect` on validated options (the command line's entry: ``options`` and ``params``
    as ``options.validate_run`` took them; ``progress_context``: a context manager giving the
    progress callback)."""
    opened = open_input(source, output, options, run, read_options=read_options, report=report,
                        labels_out=labels_out, manifest=manifest, init=init)
    return publish_table(opened, params, run, interval_p=interval_p, init=init, command_input=command_input,
                         progress=progress, progress_context=progress_context, init_labels=init_labels)


@dataclass
class Opened:
    """An input read and its publication's targets checked: what every door holds before the run."""

    table: object  # io.Table
    targets: Targets
    options: dict  # the run options, column names as the file spells them
    read_options: dict


def open_input(source: Path, output, options: dict, run, *, read_options: dict, report=None, labels_out=None,
               manifest: bool = True, init=None) -> Opened:
    """Check the targets, read the input, check the conversion and the columns: every check that
    needs no computation, before any."""
    from . import io

    source = Path(source)
    if not source.exists():
        raise InputError(f"input file not found: {source}")
    io.format_of(source)
    targets = Targets.checked(source, output, report=report, labels=labels_out, init=init, manifest=manifest)
    check_names(options, io.read_header(source, **read_options), source)  # before the body is read
    table = io.read(source, **read_options)
    io.check_writable(table, targets.output)
    options = as_in_file(options, table)
    if run.household is not None and options["household"] not in table.frame.columns:
        raise InputError(f"unknown household column: {options['household']}")
    return Opened(table, targets, options, dict(read_options))


def publish_table(opened: Opened, params: dict, run, *, interval_p=None, init=None, command_input=None,
                  progress=None, progress_context=None, init_labels=None):
    """Run the pipeline on the input read and publish its file (see :func:`protect`)."""
    table, options = opened.table, opened.options
    params = dict(params)
    if init_labels is not None:
        if len(init_labels) != len(table.frame):
            raise InputError(f"--init {init} has {len(init_labels)} labels for {len(table.frame)} records")
        params["init"] = init_labels
    res = _run(table, options, params, run, progress, progress_context)
    if interval_p is not None:  # the audit's rank interval (the summary, the report and the manifest)
        res.audit_roles = dataclasses.replace(res.audit_roles, p=float(interval_p))
    order = _shuffle_order(run, options, table)
    command = _command(command_input or str(table.path), str(opened.targets.output), options, params, order)
    res.file = _write_all(table, opened.targets, res, run, order, options, params, opened.read_options, command)
    return res


def as_in_file(options: dict, table) -> dict:
    """The column names of the options as the file's header spells them (a hand-written header
    'x, y' holds ' y'); a duplicated header name named in an option is an error."""
    header = table.header
    out = dict(options)
    for name in ("columns", "strata", "categorical", "continuous", "keys", "sensitive"):
        if out.get(name):
            out[name] = as_in_header(out[name], header)
    if isinstance(out.get("household"), str):
        out["household"] = as_in_header([out["household"]], header)[0]
    if isinstance(out.get("ordinal"), dict):
        out["ordinal"] = dict(zip(as_in_header(list(out["ordinal"]), header), out["ordinal"].values()))
    elif out.get("ordinal"):
        out["ordinal"] = as_in_header(list(out["ordinal"]), header)
    if isinstance(out.get("sample_weight"), str):
        out["sample_weight"] = as_in_header([out["sample_weight"]], header)[0]
    if isinstance(out.get("weights"), dict):
        out["weights"] = dict(zip(as_in_header(list(out["weights"]), header), out["weights"].values()))
    table.check_columns(out.get("columns"))
    table.check_columns(out.get("strata"), "stratum")
    table.check_columns([out["sample_weight"]] if isinstance(out.get("sample_weight"), str) else [], "sample weight")
    table.check_columns((out.get("categorical") or []) + list(out.get("ordinal") or []) + (out.get("continuous") or []))
    table.check_columns((out.get("keys") or []) + (out.get("sensitive") or []), "key or sensitive column")
    return out


#: the run options that name columns (lists, a mapping's keys, or one name)
NAMING_OPTIONS = ("columns", "strata", "categorical", "ordinal", "continuous", "keys", "sensitive", "household",
                  "sample_weight")  # weights and key_importance name QIs and keys: checked against them


def check_names(options: dict, header: list, source: Path) -> None:
    """Every column an option names is in the file's header (as :func:`as_in_header` matches
    it), found from the header alone: a misspelt name in a file of millions of rows is one line
    before the body is read."""
    for option in NAMING_OPTIONS:
        value = options.get(option)
        if value is None or (option == "sample_weight" and not isinstance(value, str)):
            continue  # (sample weights as an array of numbers, not a column)
        given = list(value) if isinstance(value, (list, tuple, dict)) else [value]
        names = [n for n in as_in_header(given, header) if n not in header]
        if names:
            shown = ", ".join(map(str, dict.fromkeys(names)))
            available = ", ".join(map(str, header))
            what = "column(s)" if option == "columns" else f"{option} column(s)"
            raise InputError(f"unknown {what}: {shown[:300]}; available in {source.name}: {available[:300]}"
                             + ("..." if len(available) > 300 else ""))


def as_in_header(names, header) -> list | None:
    """Column names as given (stripped when parsed from a command line) as the file spells them: a
    name matching no column exactly takes the one column whose name it is once stripped."""
    if names is None or (isinstance(names, (list, tuple)) and not names):
        return names
    if isinstance(names, (str, int)) or not isinstance(names, (list, tuple)):
        names = [names]  # one name (or a position, for an array) as the options may give it
    out = []
    for name in names:
        if name not in header:
            near = [h for h in dict.fromkeys(header) if isinstance(h, str) and h.strip() == name]
            if len(near) == 1:
                name = near[0]
        out.append(name)
    return out


def _run(table, options, params, run, progress, progress_context):
    """The pipeline on the table read, without its own audit: the written file is audited instead."""
    from .api import microaggregate

    # the publication stage shuffles the written rows itself (with run.shuffle_seed), not the run
    api = {name: value for name, value in options.items()
           if name not in ("shuffle", "shuffle_seed", "household", "progress", "audit")}
    if progress_context is None:
        return microaggregate(table, **api, audit=False, progress=progress if progress is not None else False,
                              **params)
    with progress_context as callback:
        return microaggregate(table, **api, audit=False, progress=callback if callback is not None else False,
                              **params)


def _shuffle_order(run, options, table):
    from .pipeline import shuffle_order

    return shuffle_order(run.with_options(household=options.get("household")), table.frame)


def _command(input_name: str, output_name: str, options: dict, params: dict, order) -> str:
    from .options import command_line

    return command_line(input_name, output_name, {**options, "shuffle": order is not None},
                        {k: v for k, v in params.items() if k != "init"})


def _write_all(table, targets: Targets, res, run, order, options, params, read_options, command) -> PublishedFile:
    """Write the output (in ``order``), read it back, verify it, audit it, then the side files;
    everything lands together or nothing does."""
    from . import io

    keys = res.audit_roles.key_variables
    staged: list[tuple[str, Path]] = []  # (temporary, target) of the side files, renamed after the output
    box: dict = {}

    def check(tmp, fmt):
        back = _read_back(tmp, fmt, table, targets.output, keys)
        _verify(back, table, res, targets.output)
        res.audit = res.audit.with_figures(_written_audit(table, back, res, run, order))
        published = _published_file(targets, back, res, table, order)
        box["published"] = published
        if published.other_sheets:
            import warnings

            warnings.warn(f"{targets.output.name}: the workbook's other sheet(s) "
                          f"{', '.join(map(repr, published.other_sheets))} are published as they came in, unprotected",
                          UserWarning, stacklevel=2)
        if targets.report is not None:
            staged.append((_stage_text(targets.report, _report_text(res, table, targets, run, order)),
                           targets.report))
        if targets.labels is not None:
            staged.append((_stage_text(targets.labels, labels_text(res.labels)), targets.labels))
        if targets.manifest is not None:
            doc = _manifest(tmp, table, targets, back, res, options, params, read_options, order, command, published)
            staged.append((_stage_text(targets.manifest, _manifest_text(doc)), targets.manifest))

    published_values = {c: res.data[c].to_numpy() for c in res.changed_columns}
    try:
        io.write(table, targets.output, published_values, order=order, check=check)
        _land(staged, targets.output)
    finally:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            io.unregister_temporary(tmp)
    return box["published"]


def _read_back(tmp, fmt, table, out: Path, keys) -> _ReadBack:
    from . import io

    options = {}
    if fmt == "csv" and table.format == "csv":
        options["decimal"] = table.meta.dialect.decimal
    if fmt == "excel" and table.format == "excel" and getattr(table.meta, "sheet", None):
        options["sheet"] = table.meta.sheet  # the sheet protected, not the workbook's first
    back = _ReadBack(io.read(tmp, format=fmt, **options), keys, options)
    if len(back.table.frame) != len(table.frame):
        raise InputError(f"the written {out.name} reads back with {len(back.table.frame)} records instead of "
                         f"{len(table.frame)}: nothing was written")
    return back


def _verify(back: _ReadBack, table, res, out: Path) -> None:
    """Every combination of the QIs and strata occurs at least k times as the reader groups them
    (a method that groups each variable on its own is not k-anonymous on the combination by
    design: its summary says so, and the audit counts the records)."""
    from .measures.records import key_frequencies

    guaranteed = list(dict.fromkeys([*res.audit_roles.columns, *res.audit_roles.strata]))
    found = key_frequencies(back.keys, guaranteed, res.k)
    if not found.is_k_anonymous and not res.per_variable:
        raise InputError(f"{out.name}, read back ({back.reader}), is not {res.k}-anonymous on "
                         f"{', '.join(map(str, guaranteed))}: {found.records_below_k} records in combinations "
                         f"occurring fewer than {res.k} times (values the reader tells apart that the run took "
                         "as one, such as '1' and '1.0' in a stratum column); nothing was written")


def _written_audit(table, back: _ReadBack, res, run, order):
    """The audit of the written file read back (``audit.audit_files``), on the original as read:
    exactly what ``microagg evaluate`` computes from the two files and the manifest. A shuffled
    file's records are put back in the input's order (by the permutation, held in memory only)
    for the measures that pair records; every other figure is the file's as it is."""
    import numpy as np

    from . import io
    from .measures import audit_files, combine

    roles = res.audit_roles
    frame, keys = io.published_view(back.table), back.keys
    cache: dict = {}  # what depends on the original only (its embedding, robust distances): once for both
    as_written = audit_files(table.frame, frame, roles, grouped=keys, aligned=order is None, seed=run.seed,
                             read_back=back.reader, cache=cache)
    if order is None:
        return as_written
    undo = np.argsort(order)
    paired = audit_files(table.frame, frame.iloc[undo].reset_index(drop=True), roles,
                         grouped=keys.iloc[undo].reset_index(drop=True), seed=run.seed, read_back=back.reader,
                         cache=cache, paired_only=True)  # combine takes only these from it
    return combine(paired, as_written)


def _published_file(targets: Targets, back: _ReadBack, res, table, order) -> PublishedFile:
    """The file as published; its k-anonymity on every key variable is the written file's audit's
    (counted once, on the keys as the reader grouped them, a suppressed value matching any)."""
    risk = res.audit.group("risk")
    smallest = risk["key_smallest_frequency"]
    return PublishedFile(targets.output, targets.manifest, targets.report, targets.labels, back.reader,
                         [str(c) for c in res.audit_roles.key_variables], risk["key_records_below_k"] == 0,
                         None if smallest is None else int(smallest), unchanged_columns(table, res),
                         other_sheets(back.table), order is not None)


def _manifest(tmp, table, targets, back, res, options, params, read_options, order, command, published):
    from . import io, manifest

    verified = {"key_variables": published.key_variables, "read_back_by": back.reader,
                "k_anonymous": published.k_anonymous, "smallest_frequency": published.smallest_frequency,
                "suppression": None if res.suppression is None else res.suppression.to_dict()}
    doc = manifest.build(input_path=table.path, output_path=tmp, input_format=table.format,
                         output_format=io.format_of(targets.output), read_options=read_options, run_options=options,
                         params=params, result=res, shuffled=order is not None, command=command, verified=verified,
                         output_read=back.read_options)
    doc["output"]["name"] = targets.output.name
    doc["published_unchanged"] = {"columns": [str(c) for c in published.unchanged],
                                  "sheets": [str(s) for s in published.other_sheets]}
    return doc


def _manifest_text(doc) -> str:
    import json

    from .manifest import json_safe

    return json.dumps(json_safe(doc), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def labels_text(labels) -> str:
    """The labels file: one line per record, its group label (per-variable methods: one label per
    column, comma-separated); ``--init`` reads it back."""
    if labels.ndim == 1:
        return "\n".join(map(str, labels.tolist())) + "\n"
    return "\n".join(",".join(map(str, row)) for row in labels.tolist()) + "\n"


def _report_text(res, table, targets, run, order) -> str:
    from .report import render_report

    settings = {"input": str(table.path), "output": str(targets.output), "seed": run.seed,
                "time limit (s)": run.time_limit, "strata": ", ".join(map(str, run.strata)) if run.strata else None,
                "standardised": run.standardize, "block size": run.block_size,
                "row order": "shuffled" if order is not None else "the input's"}
    return render_report(res, table.frame, settings)


def _stage_text(target: Path, text: str) -> str:
    """``text`` written to a temporary file beside ``target`` (renamed by :func:`_land`)."""
    import tempfile

    from . import io

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputError(f"cannot write {target}: {exc.strerror or exc}") from None
    io.register_temporary(tmp)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
    except OSError as exc:
        raise InputError(f"cannot write {target}: {exc.strerror or exc}") from None
    return tmp


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _land(staged, output: Path) -> None:
    """Rename the side files into place once the output is; if one cannot be, the output goes too
    (no output without its manifest)."""
    try:
        for tmp, target in staged:
            os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(output)
        for _, target in staged:
            with contextlib.suppress(OSError):
                if Path(target).exists():
                    os.unlink(target)
        raise InputError(f"cannot write {target}: {exc.strerror or exc}; nothing was written") from None


# --- the out-of-core mode: a folder of Parquet partitions, verified and audited in a stream -------------

#: records of the out-of-core audit's simple random sample (the k-anonymity figures are exact, counted on every record)
FOLDER_AUDIT_SAMPLE = 10_000
#: the audit figures that need every record (the frequencies of the whole file): exact from the stream
_EXACT_KEY_FIGURES = ("key_combinations", "key_smallest_frequency", "key_records_below_k", "key_combinations_below_k",
                      "smallest_group")
#: figures that estimate population frequencies from the file's own: meaningless on a sample, left out
_WHOLE_FILE_ONLY = ("reidentification_expected", "reidentification_global_percent", "reidentification_max",
                    "reidentification_above_threshold", "reidentification_higher_than_main_part")


def publish_folder(source: Path, output, options: dict, params: dict, run, *, command_input=None,
                   progress_context=None, chunk_rows: int = 1_000_000):
    """The out-of-core mode's publication: the folder of Parquet partitions is written beside its
    target, read back in a stream (pyarrow) and checked k-anonymous on the QIs and strata by an
    exact count of their combinations over every record, audited on a seeded sample of
    FOLDER_AUDIT_SAMPLE records, and lands together with its manifest (``OUTPUT.manifest.json``).
    Returns (the mode's summary, the PublishedFile)."""
    import shutil

    from . import io, manifest
    from .outofcore import protect_out_of_core

    source, out = Path(source), Path(output)
    if not source.exists():
        raise InputError(f"input file not found: {source}")
    io.check_output_path(out, source, folder=True)
    manifest_path = io.check_side_file(manifest.path_for(out), "manifest", source, out)
    box: dict = {}
    staged: list = []

    def fill(tmp):
        if progress_context is None:
            box["summary"] = protect_out_of_core(source, tmp, chunk_rows=chunk_rows, **options, **params)
        else:
            with progress_context as bar:
                box["summary"] = protect_out_of_core(source, tmp, progress=bar, chunk_rows=chunk_rows, **options,
                                                     **params)
        summary = box["summary"]
        roles = folder_roles(summary, run)
        audit, frequencies = stream_audit(source, tmp, roles, seed=run.seed, chunk_rows=chunk_rows)
        if frequencies.records_below_k:
            raise InputError(f"{out.name}, read back (pyarrow), is not {roles.k}-anonymous on "
                             f"{', '.join(map(str, roles.key_variables))}: {frequencies.records_below_k} records in "
                             f"combinations occurring fewer than {roles.k} times; nothing was written")
        published = PublishedFile(out, manifest_path, None, None, "pyarrow", [str(c) for c in roles.key_variables],
                                  True, frequencies.smallest, [], [], False)
        doc = _folder_manifest(source, tmp, out, summary, roles, run, options, params, audit, published,
                               _command(command_input or str(source), str(output), {**options, "out_of_core": True},
                                        params, None))
        staged.append((_stage_text(manifest_path, _manifest_text(doc)), manifest_path))
        box["published"], box["audit"] = published, audit

    try:
        io.atomic_folder(out, fill)
        try:
            for tmp, target in staged:
                os.replace(tmp, target)
        except OSError as exc:
            shutil.rmtree(out, ignore_errors=True)
            raise InputError(f"cannot write {manifest_path}: {exc.strerror or exc}; nothing was written") from None
    finally:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            io.unregister_temporary(tmp)
    summary = {k: v for k, v in box["summary"].items() if k != "files"}
    summary["audit"] = box["audit"]
    return summary, box["published"]


def folder_roles(summary: dict, run):
    """The audit's roles of an out-of-core run: continuous QIs, strata, k."""
    from .measures import AuditRoles

    columns = tuple(summary["columns"])
    return AuditRoles(columns, {c: "continuous" for c in columns}, int(summary["k"]), tuple(run.strata or ()))


def _folder_manifest(source, tmp, out, summary, roles, run, options, params, audit, published, command) -> dict:
    import time

    from . import io, manifest

    verified = {"key_variables": published.key_variables, "read_back_by": "pyarrow", "k_anonymous": True,
                "smallest_frequency": published.smallest_frequency, "counted": "every record (streamed)"}
    plain = {k: v for k, v in options.items() if k not in ("progress", "scheduler")}
    return {
        "microagg_manifest": manifest.VERSION,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": manifest.versions(),
        "input": {"name": Path(source).name, "sha256": manifest.sha256(source), "format": io.format_of(Path(source)),
                  "read": {}},
        "output": {"name": out.name, "sha256": manifest.sha256(tmp), "format": "parquet", "read": {}},
        "run": {"method": summary["method"], "k": int(summary["k"]), "seed": run.seed, "options": plain,
                "params": manifest._plain_params(params), "per_variable": False, "seconds": summary["seconds"],
                "out_of_core": True, "information_loss": summary["information_loss"], "sse": summary["sse"]},
        "roles": roles.to_dict(),
        "shuffled": False,
        "merged_strata": None if not summary.get("merged_strata") else {
            "count": len(summary["merged_strata"]), "published": run.merged_strata},
        "verified": verified,
        "published_unchanged": {"columns": [], "sheets": []},
        "command": command,
        "audit": audit.to_dict(),
    }


def stream_audit(original, published, roles, *, seed, sample: int = FOLDER_AUDIT_SAMPLE,
                 chunk_rows: int = 1_000_000):
    """(the audit of a published file too large for memory, its key frequencies), both from
    streams of the two files in the same record order: the k-anonymity figures counted exactly on
    every record (each key combination hashed twice, 128 bits: a collision that would merge two
    combinations has a chance below 2^-100 at 10^9 records), every other figure on the same
    seeded simple random sample of ``sample`` records (the audit's context says so), except the
    re-identification figures, which need the whole file's frequencies and are left out.
    ``microagg evaluate`` recomputes it from the manifest to the last digit."""
    import numpy as np
    import pandas as pd

    from . import io
    from .measures import MEASURES, Audit, Figure, audit_files
    from .measures.records import KeyFrequencies

    keys, qis = list(roles.key_variables), list(roles.columns)
    hashes, qi_hashes = [], []
    for df in io.chunks(published, keys, chunk_rows, qis):
        hashes.append(_row_hashes(df[keys].reset_index(drop=True)))
        qi_hashes.append(_row_hashes(df[qis].reset_index(drop=True)))
    n = sum(len(h) for h in hashes)
    combination, counts = _combinations(hashes)
    frequencies = KeyFrequencies(tuple(keys), int(roles.k), combination, counts[combination].astype(np.int64))
    _, qi_counts = _combinations(qi_hashes)
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(n, size=min(sample, n), replace=False))
    numeric = [c for c in roles.columns]
    frames = [_rows_at(io.chunks(path, None, chunk_rows, numeric), chosen) for path in (original, published)]
    audit = audit_files(frames[0], frames[1], roles, seed=seed, read_back="pyarrow")
    exact = {name: value for name, value in (
        ("key_combinations", frequencies.combinations), ("key_smallest_frequency", frequencies.smallest),
        ("key_records_below_k", frequencies.records_below_k),
        ("key_combinations_below_k", frequencies.combinations_below_k),
        ("smallest_group", int(qi_counts.min()) if len(qi_counts) else None))}
    figures = [Figure(f.measure, exact[f.name], f.group) if f.name in exact else f for f in audit.figures
               if f.name not in _WHOLE_FILE_ONLY]
    present = {f.name for f in figures}
    figures += [Figure(MEASURES[name], value, "risk") for name, value in exact.items() if name not in present]
    from .measures import in_registry_order

    context = {**audit.context, "sampled": {"records": int(len(chosen)), "of": int(n), "seed": seed,
                                            "exact": list(_EXACT_KEY_FIGURES),
                                            "left_out": list(_WHOLE_FILE_ONLY)}}
    warnings_ = tuple(w for w in audit.warnings if "anonymous" not in w)
    return Audit(in_registry_order(tuple(figures)), audit.categories, warnings_, context), frequencies


def _row_hashes(frame):
    """Two 64-bit hashes of each row's values (two keys: 128 bits in all)."""
    import numpy as np
    import pandas as pd

    return np.stack([pd.util.hash_pandas_object(frame, index=False, hash_key=key).to_numpy()
                     for key in ("microagg-keys-01", "microagg-keys-02")], axis=1)


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
