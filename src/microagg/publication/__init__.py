"""The publication stage: one protected file, whichever door asked for it.

``protect(input, output, ...)`` is the whole publication of a file: read the input with its
format's own library, run the pipeline (``api.microaggregate`` on the table read), write the
output atomically, read the written file back with its format's own reader, check k-anonymity on
every key variable as that reader groups them, audit the file as read back, and move the output
and its manifest into place together. The command line's ``protect`` (also with
``--from-explore``), the app's download and the public API all call it, so every door publishes
the same bytes (``tests/test_doors.py`` holds them to it, option by option, from
``options.RUN_OPTIONS``). The out-of-core mode publishes through
:func:`~microagg.publication.folder.publish_folder`, which gives its folder the same read-back
check, audit and manifest.

The stage's steps live in its modules: :mod:`~microagg.publication.opening` (the targets and the
input checked and read), :mod:`~microagg.publication.table` (run, write, read back, verify,
audit), :mod:`~microagg.publication.landing` (the files land together) and
:mod:`~microagg.publication.folder` (the out-of-core folder).

Nothing is left behind when a stage fails: the output, the manifest, the report and the labels
file are first written as temporary files beside their targets and renamed only once all of them
are complete, so a full disk at the manifest leaves no output without its manifest.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .folder import publish_folder, stream_audit
from .opening import Opened, Targets, as_in_file, as_in_header, open_input
from .table import PublishedFile, publish_table, unchanged_columns

if TYPE_CHECKING:
    from typing import Any

    from distributed import Client
    from numpy.typing import ArrayLike
    from typing_extensions import Unpack

    from ..result import Result
    from ..typed import (
        Aggregation,
        Columns,
        Distance,
        MergedStrata,
        MethodParams,
        OnKeysBelowK,
        Progress,
    )

__all__ = [
    "protect",
    "publish",
    "PublishedFile",
    "Targets",
    "Opened",
    "unchanged_columns",
    "open_input",
    "publish_table",
    "as_in_file",
    "as_in_header",
    "publish_folder",
    "stream_audit",
]


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
    from ..options import given_options, validate_run

    options = given_options(locals())
    options.pop("progress", None)  # reported through progress= below
    options.pop("audit", None)  # a published file is always audited, as read back
    params = dict(params)
    if out_of_core:  # the mode's call names k and the method
        folder_options = {"k": k, "method": method, **options}
        return _protect_folder(Path(input), output, folder_options, params, command_input)
    run = validate_run(options, params)
    read_options = _read_options(sep, decimal, encoding, sheet, missing)
    sides = {"report": report, "labels_out": labels_out, "manifest": manifest}
    return publish(
        Path(input),
        output,
        options,
        params,
        run,
        read_options=read_options,
        **sides,
        interval_p=interval_p,
        init=init,
        command_input=command_input,
        progress=progress,
    )


def _read_options(sep, decimal, encoding, sheet, missing) -> dict:
    """The reader's options of a call, as ``io.read`` takes them."""
    missing = (missing,) if isinstance(missing, str) else tuple(missing or ())
    return {
        "sep": sep,
        "decimal": decimal,
        "encoding": encoding,
        "sheet": sheet,
        "missing": missing,
    }


def _protect_folder(source: Path, output, options: dict, params: dict, command_input) -> Any:
    """``protect(..., out_of_core=True)``: the mode's summary dict, with its ``audit`` and
    ``file``."""
    from ..outofcore import check_out_of_core

    run = check_out_of_core(options, params)
    summary, published = publish_folder(
        source, output, options, params, run, command_input=command_input
    )
    return {**summary, "file": published}


def publish(
    source: Path,
    output,
    options: dict,
    params: dict,
    run,
    *,
    read_options: dict,
    report=None,
    labels_out=None,
    manifest: bool = True,
    interval_p=None,
    init=None,
    command_input=None,
    progress=None,
    progress_context=None,
    init_labels=None,
):
    """:func:`protect` on validated options (the command line's entry: ``options`` and ``params``
    as ``options.validate_run`` took them; ``progress_context``: a context manager giving the
    progress callback)."""
    opened = open_input(
        source,
        output,
        options,
        run,
        read_options=read_options,
        report=report,
        labels_out=labels_out,
        manifest=manifest,
        init=init,
    )
    return publish_table(
        opened,
        params,
        run,
        interval_p=interval_p,
        init=init,
        command_input=command_input,
        progress=progress,
        progress_context=progress_context,
        init_labels=init_labels,
    )
