"""Tab 4, Compare: every run of the page in a table (its IL and risk figures, seconds, state), and
two finished runs side by side: every run option that differs from its default in either,
every method parameter given, every figure of their audits (``app.figures``); either run can be
shown and exported."""

from __future__ import annotations

from htmltools import TagList, tags
from shiny import module, reactive, render, ui

from .. import figures as shown
from .shared import PageState, quiet_ui, table


@module.ui
def compare_ui():
    return ui.div(ui.output_ui("history_ui"), ui.output_ui("compare_ui"), class_="section")


@module.server
def compare_server(input, output, session, state: PageState):
    @render.ui
    @quiet_ui
    def history_ui():
        state.tick.get()
        runs = state.runs.get()
        if not runs:
            return ui.p("No run yet.", class_="muted")
        header, rows = shown.history_rows(
            [(rid, spec, h.state, h.error, h.figures) for rid, spec, h in runs]
        )
        return TagList(tags.h4("This page's runs"), table(header, rows, table_id="history-table"))

    @render.ui
    @quiet_ui
    def compare_ui():
        done = state.finished()
        if len(done) < 2:
            return ui.p("Finish two runs to compare them side by side.", class_="muted")
        choices = {str(rid): f"run {rid}: {spec.method}, k = {spec.k}" for rid, spec, _ in done}
        return TagList(
            tags.h4("Compare two runs"),
            ui.row(
                ui.column(
                    3, ui.input_select("compare_a", "Run A", choices, selected=str(done[-2][0]))
                ),
                ui.column(
                    3, ui.input_select("compare_b", "Run B", choices, selected=str(done[-1][0]))
                ),
            ),
            ui.output_ui("compare_table"),
            ui.input_action_button("export_a", "Show and export A"),
            " ",
            ui.input_action_button("export_b", "Show and export B"),
        )

    @render.ui
    @quiet_ui
    def compare_table():
        done = {str(rid): (spec, h.figures) for rid, spec, h in state.finished()}
        a, b = input.compare_a(), input.compare_b()
        if a not in done or b not in done:
            return None
        return table(
            ["", f"run {a}", f"run {b}"],
            shown.compare_rows(done[a], done[b]),
            table_id="compare-table",
        )

    def _show(key) -> None:
        if key in {str(rid) for rid, _, _ in state.finished()}:
            state.show_run(key)

    @reactive.effect
    @reactive.event(input.export_a)
    @state.guarded
    def _export_a():
        _show(input.compare_a())

    @reactive.effect
    @reactive.event(input.export_b)
    @state.guarded
    def _export_b():
        _show(input.compare_b())
