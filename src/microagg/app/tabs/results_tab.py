"""Tab 3, Results: a finished run's figures (its audit, with the measure registry's labels and
references: ``app.figures``), auto's portfolio, warnings, the HTML report, and the exports: the
protected file in the input's format, the report and the reproduce command and call."""

from __future__ import annotations

from htmltools import TagList, tags
from shiny import module, reactive, render, ui
from starlette.exceptions import HTTPException

from .. import figures as shown
from ..input_data import output_suffix
from ..private import one_line
from ..protect_worker import published_path
from ..run_handle import RunHandle
from ..runspec import RunSpec
from .shared import PageState, quiet_ui, table
from .shared import download as _download


@module.ui
def results_ui():
    return ui.div(ui.output_ui("results_ui"), class_="section")


def _figure_table(rows, table_id):
    return table(
        ["measure", "value", "reference"],
        [(f.measure.label, f.text(), f.measure.reference) for f in rows],
        table_id=table_id,
    )


def run_detail(key: str, spec: RunSpec, handle: RunHandle):
    """The Results tab's view of one finished run (rendered inside the tab's namespace)."""
    f = handle.figures
    audit = shown.audit_of(f)
    groups = shown.figure_rows(audit)
    il = audit.get("information_loss")
    parts = [
        tags.h4(f"Run {key}: {spec.method}, k = {spec.k}, {spec.input_name}"),
        tags.p("IL = ", tags.b("—" if il is None else f"{il:.6f}", id="il-value"), " %"),
    ]
    if spec.explored is not None:
        parts.append(
            tags.p(
                f"Run {spec.explored[1]} of the exploration (Explore tab): its partition, "
                "kept from it, published as it was found.",
                class_="muted",
                id="result-explored",
            )
        )
    for message in [*f.get("warnings", []), *f.get("notes", [])]:
        parts.append(tags.p("warning: ", message, class_="warning-line"))
    if f.get("per_variable"):
        parts.append(
            tags.p(
                "Each variable was grouped on its own: combinations of values are NOT k-anonymous.",
                class_="one-line-error",
            )
        )
    run_rows = [(fig.measure.label, fig.text()) for fig in groups.pop(shown.FIRST_GROUP, [])]
    measures = []
    for group, rows in groups.items():
        title = {"risk": "Disclosure risk", "utility": "Utility"}.get(group, group.capitalize())
        measures += [tags.h5(title), _figure_table(rows, f"result-{group}")]
    categories = shown.category_rows(audit)
    if categories:
        measures += [
            tags.h5("Categorical quasi-identifiers"),
            table(None, categories, table_id="result-categories"),
        ]
    export = [
        tags.h5("Export"),
        ui.download_button("download_data", f"Protected data ({output_suffix(spec.input_name)})"),
        " ",
        ui.download_button("download_manifest", "Manifest (.json)"),
        " ",
        ui.download_button("download_report", "HTML report"),
        " ",
        ui.download_button("download_reproduce", "Reproduce (.txt)"),
        tags.pre(spec.reproduce_text(), class_="reproduce", id="reproduce"),
    ]
    parts.append(
        ui.row(
            ui.column(
                3,
                tags.h5("Information loss"),
                table(None, run_rows + shown.fact_rows(f), table_id="result-figures"),
            ),
            ui.column(4, *measures, id="result-measures"),
            ui.column(5, *export),
        )
    )
    portfolio = shown.portfolio_table(f)
    if portfolio is not None:
        header, rows, caption = portfolio
        parts += [
            tags.h5("Portfolio (auto; * the winner)"),
            ui.p(caption, class_="muted", id="portfolio-caption") if caption else None,
            table(header, rows, table_id="portfolio-table"),
        ]
    parts += [
        tags.h5("Report: measures and figures"),
        tags.iframe(
            srcdoc=handle.report_path.read_text(encoding="utf-8"),
            sandbox="",
            class_="report",
            id="report-frame",
            title="report",
        ),
    ]
    return TagList(*parts)


@module.server
def results_server(input, output, session, state: PageState):
    @render.ui
    @quiet_ui
    def results_ui():
        done = state.finished()
        if not done:
            return ui.p("No finished run yet.", class_="muted")
        choices = {
            str(rid): f"run {rid}: {spec.method}, k = {spec.k}, {spec.input_name}"
            for rid, spec, _ in done
        }
        with reactive.isolate():
            current = (state.shown_run.get() or (None,))[0]
        selected = current if current in choices else str(done[-1][0])
        return TagList(
            ui.input_select("result_run", "Run", choices, selected=selected),
            ui.output_ui("result_detail"),
        )

    @reactive.effect
    @reactive.event(state.shown_run)
    def _show():
        ui.update_select("result_run", selected=state.shown_run.get()[0])

    @render.ui
    @quiet_ui
    def result_detail():
        done = {str(rid): (spec, h) for rid, spec, h in state.finished()}
        key = input.result_run()
        if key not in done:
            return None
        spec, handle = done[key]
        return run_detail(key, spec, handle)

    def _chosen():
        return _chosen_run(input, state)

    @_download(filename=lambda: _chosen()[0].output_name())
    def download_data():
        spec, handle = _chosen()
        # the file the run published (written, read back, verified, with its manifest)
        return _exported(lambda: _published_file(spec, handle, ""))

    @_download(filename=lambda: f"{_chosen()[0].output_name()}.manifest.json")
    def download_manifest():
        spec, handle = _chosen()
        # the published file's manifest: roles, checks, audit (microagg evaluate reads it)
        return _exported(lambda: _published_file(spec, handle, ".manifest.json"))

    @_download(filename=lambda: f"report-run-{_chosen()[1].run_id}.html")
    def download_report():
        return str(_chosen()[1].report_path)

    @_download(filename=lambda: f"reproduce-run-{_chosen()[1].run_id}.txt")
    def download_reproduce():
        return [_chosen()[0].reproduce_text()]  # known before the answer starts (a 404 stays a 404)


def _chosen_run(input, state: PageState):
    """(spec, handle) of the finished run the tab shows; a download asked for before any (or for a
    run that is not finished) is a 404 with one line."""
    done = {str(rid): (spec, h) for rid, spec, h in state.finished()}
    key = input.result_run() if "result_run" in input else None
    if not isinstance(key, str) or key not in done:
        raise HTTPException(404, "microagg app: no finished run to download")
    return done[key]


def _published_file(spec: RunSpec, handle: RunHandle, suffix: str) -> str:
    """The path of the file the run published (``suffix`` "") or of its manifest
    (".manifest.json"); a 404 with one line if the run published none."""
    path = published_path(handle.workdir, handle.run_id, spec)
    path = path.with_name(path.name + suffix)
    if not path.is_file():
        what = "manifest" if suffix else "file"
        raise HTTPException(404, f"microagg app: the run published no {what}")
    return str(path)


def _exported(write):
    """A download's file, or a 500 with one line (never a traceback) if writing it fails."""
    try:
        return write()
    except HTTPException:
        raise
    except Exception as exc:  # noqa: BLE001
        raise HTTPException(500, f"microagg app: {one_line(exc)}") from None
