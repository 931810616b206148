"""A protection run in its own process (started by ``run_process.start``): published through the
command line's publication stage, measured, reported (HTML) and pickled for the page, every
event sent through the run's pipe.
"""

from __future__ import annotations

import pickle
import time
import warnings
from pathlib import Path

from ..report_columns import measured_view
from . import run_events
from .input_data import input_file
from .private import one_line
from .runspec import RunSpec


def published_path(workdir, run_id: int, spec) -> Path:
    """Where a run's process publishes its file (the download serves it as it is)."""
    return Path(workdir) / f"run-{run_id}" / spec.output_name()


def publish_run(spec: RunSpec, workdir, run_id: int, progress=False, started=None):
    """(the Result, the input as read) of a run published through the command line's publication
    stage (``publication``): the file the download serves is the one written, read back with its
    format's own library, checked k-anonymous on its key variables and given its manifest; its
    HTML report (``workdir/run-<id>.html``) is the publication's, as ``--report`` writes it."""
    from .. import publication, read_limits

    out = published_path(workdir, run_id, spec)
    out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    run = spec.run()
    report = Path(workdir) / f"run-{run_id}.html"
    with read_limits.limited(spec.max_bytes):
        opened = publication.open_input(
            input_file(spec), out, spec.options, run, read_options={}, report=report
        )
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
        from .figures import run_figures

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
        post(("progress", "measures", None, "", time.perf_counter() - t0))
        view, note = measured_view(res)
        figures = run_figures(view, df)
        figures["warnings"] = list(dict.fromkeys(one_line(w.message, (workdir,)) for w in caught))
        if note:
            figures["warnings"].append(note)
        base = Path(workdir) / f"run-{run_id}"
        with open(base.with_suffix(".pkl"), "wb") as fh:
            pickle.dump(res, fh, protocol=pickle.HIGHEST_PROTOCOL)
        post(("done", figures))
    except BaseException as exc:  # noqa: BLE001 - everything becomes one line for the page
        try:
            post(("error", one_line(exc, (workdir,))))
        except (OSError, ValueError):  # the app has gone (or cancelled the run): nobody to tell
            pass
