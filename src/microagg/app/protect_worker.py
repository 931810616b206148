"""A protection run in its own process (started by ``run_process.start``): published through the
command line's publication stage, measured, reported (HTML) and pickled for the page, every
event sent through the run's pipe.
"""

from __future__ import annotations

import dataclasses
import html
import pickle
import time
import warnings
from pathlib import Path

from . import run_events
from .input_data import input_file
from .private import one_line
from .runspec import RunSpec


def published_path(workdir, run_id: int, spec) -> Path:
    """Where a run's process publishes its file (the download serves it as it is)."""
    return Path(workdir) / f"run-{run_id}" / spec.output_name()


#: Measures and figures of a run look at most this many quasi-identifier columns: their cost grows
#: with the square of the columns (correlation matrices, principal axes, heat maps), and a
#: 5,000-column run spent minutes there.
REPORT_COLUMNS = 40


def measured_view(res):
    """(the result the measures and the report look at, a note saying so or None): the run itself
    on at most REPORT_COLUMNS quasi-identifier columns, the first ones (IL, SSE, the bound and the
    group sizes stay the whole run's)."""
    if len(res.columns) <= REPORT_COLUMNS:
        return res, None
    chosen = list(res.columns)[:REPORT_COLUMNS]
    names = {str(c) for c in chosen}
    publication = dataclasses.replace(
        res.publication, kinds={c: k for c, k in res.publication.kinds.items() if c in names}
    )
    audit = dataclasses.replace(
        res.audit, categories={c: m for c, m in res.audit.categories.items() if str(c) in names}
    )
    changes = {
        "columns": chosen,
        "scaler": None,
        "standardized": None,
        "publication": publication,
        "audit": audit,
    }
    if res.per_variable:  # one labelling (and group sizes) per column
        changes["labels"] = res.labels[:, :REPORT_COLUMNS]
        changes["group_sizes"] = list(res.group_sizes)[:REPORT_COLUMNS]
    note = (
        f"measures and figures on the first {REPORT_COLUMNS} of the {len(res.columns):,} "
        "quasi-identifier columns (their cost grows with the square of the columns); "
        "IL is the whole run's"
    )
    return dataclasses.replace(res, **changes), note


def publish_run(spec: RunSpec, workdir, run_id: int, progress=False, started=None):
    """(the Result, the input as read) of a run published through the command line's publication
    stage (``publication``): the file the download serves is the one written, read back with its
    format's own library, checked k-anonymous on its key variables and given its manifest."""
    from .. import publication, read_limits

    out = published_path(workdir, run_id, spec)
    out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    run = spec.run()
    with read_limits.limited(spec.max_bytes):
        opened = publication.open_input(input_file(spec), out, spec.options, run, read_options={})
    if started is not None:
        started()
    res = publication.publish_table(
        opened,
        spec.params,
        run,
        command_input=spec.shown_path or spec.input_name,
        progress=progress,
    )
    return res, opened.table.frame


def worker(spec: RunSpec, workdir: str, run_id: int, events) -> None:
    """Run one protection in this (spawned) process and report through ``events`` (the writing
    end of a pipe): ("progress", stage, fraction, message, elapsed), then ("done", figures) or
    ("error", message). The Result is pickled to ``workdir/run-<id>.pkl`` and the HTML report
    written next to it. Started by ``run_process.start``, which has tied this process to the
    app's."""
    t0 = time.perf_counter()
    post = events.send
    try:
        from ..errors import InputError
        from ..report import render_report
        from .figures import option_text, run_figures

        progress = run_events.progress_sender(post, t0)
        run_events.silence_stdout()
        post(("progress", "reading the data", None, "", 0.0))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res, df = publish_run(
                spec,
                workdir,
                run_id,
                progress,
                lambda: post(("progress", spec.method, None, "", time.perf_counter() - t0)),
            )
        post(("progress", "measures and report", None, "", time.perf_counter() - t0))
        view, note = measured_view(res)
        figures = run_figures(view, df)
        figures["warnings"] = list(dict.fromkeys(one_line(w.message, (workdir,)) for w in caught))
        # the report lists the run's method, k, quasi-identifiers and parameters itself
        settings = {
            "input": spec.input_name,
            "seed": spec.option("seed"),
            **{
                name.replace("_", " "): option_text(value)
                for name, value in spec.changed_options().items()
                if name not in ("k", "method", "columns", "seed")
            },
        }
        if note:
            figures["warnings"].append(note)
            settings["measures and figures"] = note
        try:
            report = render_report(view, df, settings)
        except InputError as exc:  # e.g. no continuous QI column to draw
            why = html.escape(one_line(exc, (workdir,)))
            report = f"<!DOCTYPE html><html><body><p>No report: {why}</p></body></html>"
        base = Path(workdir) / f"run-{run_id}"
        base.with_suffix(".html").write_text(report, encoding="utf-8")
        with open(base.with_suffix(".pkl"), "wb") as fh:
            pickle.dump(res, fh, protocol=pickle.HIGHEST_PROTOCOL)
        post(("done", figures))
    except BaseException as exc:  # noqa: BLE001 - everything becomes one line for the page
        try:
            post(("error", one_line(exc, (workdir,))))
        except (OSError, ValueError):  # the app has gone (or cancelled the run): nobody to tell
            pass
