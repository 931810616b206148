"""The publication: one protected file, whichever door asked for it.

``protect(input, output, ...)`` is the whole publication of a file, as seven stages each run once
(:mod:`~microagg.publication.stages`): plan, compute (the pipeline's stages on the table read,
``api.compute``), write (with the format's writer, beside the target), read back (with the
format's own reader), verify (k-anonymity on every key variable as that reader groups them),
audit (the file as read back) and land (the one ``Result``; the output, its manifest, report and
labels into place together). The command line's ``protect`` (also with ``--from-explore`` and
``--from-manifest``), the app's run and the public API all call it, so every door publishes the
same bytes (``tests/test_doors.py`` holds them to it, option by option, from
``options.RUN_OPTIONS``). The out-of-core mode composes the same stages over a chunked table
(:func:`~microagg.publication.folder.publish_folder`).

Modules: :mod:`~microagg.publication.opening` (the targets and the input checked and read before
any work), :mod:`~microagg.publication.stages` (the stages) and
:mod:`~microagg.publication.stage_values` (what they pass on),
:mod:`~microagg.publication.landing` (the side files land together),
:mod:`~microagg.publication.folder` (the stages over a chunked table) and
:mod:`~microagg.publication.streamed_counts` (its exact key count).

Nothing is left behind when a stage fails: the output, the manifest, the report and the labels
file are first written as temporary files beside their targets and renamed only once all of them
are complete, so a full disk at the manifest leaves no output without its manifest.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from .folder import publish_folder, stream_audit
from .opening import Opened, Targets, as_in_file, as_in_header, open_input
from .stages import PublishedFile, publish_table, unchanged_columns

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..options.generated import ProtectOptions
    from ..result import Result

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
    **options: Unpack[ProtectOptions],
) -> Result:
    """Protect the file ``input`` and publish it as ``output``: the one publication stage.

    Read with its format's library, microaggregated, written, read back and checked k-anonymous
    on every key variable as that library groups them; the manifest, report and labels land with
    it, or nothing is written (a bad input: one ``InputError`` before any work).

    Parameters
    ----------
    input : str or path
        The file to protect, in any format ``microagg.io`` reads.
    output : str or path
        The file to publish, in the format its suffix names (never the input itself).
    report : str or path, optional
        An HTML report of the run (``.html``) written beside the output.
    labels_out : str or path, optional
        A labels file: one group label per record, in the input's order.
    manifest : bool, default True
        Write ``output.manifest.json`` (``microagg evaluate`` reads it).
    sep : str, optional
        A CSV input's field separator (detected by default).
    decimal : str, optional
        A CSV input's decimal mark, ``.`` or ``,`` (detected by default).
    encoding : str, optional
        A CSV input's text encoding (detected by default).
    sheet : str, optional
        An Excel input's sheet to protect (default: the first; the others published as they are).
    interval_p : float, optional
        The rank-interval percentage of the audit's interval disclosure (default 10).
    init : str or path, optional
        The labels file the method's ``init`` came from (named in errors).
    command_input : str, optional
        The input as the manifest's reproduce command names it (default: ``input``).
    out_of_core : bool, default False
        Stream a file into a folder of Parquet partitions (``block_size``; ``data``: a dataset).
    **options
        Every run option (``RunOptions``; ``missing``: the reader's too), the method's parameters.

    Returns
    -------
    Result
        The run; its ``audit`` is the written file's, its ``file`` a ``PublishedFile``.

    Examples
    --------
    >>> import microagg, tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "public.csv"
    >>> res = microagg.protect(microagg.datasets.path("census"), out, k=3)
    >>> res.file.k_anonymous, out.with_name("public.csv.manifest.json").is_file()
    (True, True)
    """
    from ..options import call_options, validate_run

    given, params = call_options({}, options)
    _refuse_arrays(given)
    progress = given.pop("progress", False)  # reported through progress= below
    given.pop("audit", None)  # a published file is always audited, as read back
    if out_of_core:
        return _protect_folder(Path(input), output, given, params, command_input, progress)
    read = _read_options(sep, decimal, encoding, sheet, given.get("missing"))
    sides = {"report": report, "labels_out": labels_out, "manifest": manifest, "init": init}
    run = validate_run(given, params)
    sides.update(interval_p=interval_p, command_input=command_input, progress=progress)
    return publish(Path(input), output, given, params, run, read_options=read, **sides)


def _refuse_arrays(given: dict) -> None:
    """A published file's sample weights are one of its columns: an array given for
    ``sample_weight=`` (as ``microaggregate`` takes one) can be neither read beside the file nor
    written in the manifest's command, so it is refused before any work."""
    from ..errors import ParameterError, option_term

    if hasattr(given.get("sample_weight"), "__array__"):
        raise ParameterError(
            f"{option_term('sample_weight')} names a column of the input file when a file is "
            "published, not an array of values"
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


def _protect_folder(
    source: Path, output, given: dict, params: dict, command_input, progress
) -> Result:
    """``protect(..., out_of_core=True)``: the folder's ``Result`` (``folder.folder_result``),
    its progress shown as a file's run shows it (``progress.channel``); the mode's call names k
    and the method (its manifest's command too)."""
    from ..options import option
    from ..outofcore import check_out_of_core
    from ..progress import channel

    options = {"k": option("k").default, "method": option("method").default, **given}
    run = check_out_of_core(options, params)
    shown = channel(progress, run.time_limit, f"microagg {run.method}")
    return publish_folder(
        source, output, options, params, run, command_input=command_input, progress_context=shown
    )


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
    init=None,
    **staged,
):
    """:func:`protect` on validated options (the command line's entry: ``options`` and ``params``
    as ``options.validate_run`` took them): the input opened, then the stages
    (``stages.publish_table``; ``staged``: its keywords: ``progress`` or ``progress_context``, a
    context manager giving the progress callback, and the plan's: ``interval_p``,
    ``command_input``, ``init_labels``, ``confirm``, called with the new manifest before anything
    lands, whose exception leaves nothing written: ``reproduce.Replay.confirm``)."""
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
    return publish_table(opened, params, run, init=init, **staged)
