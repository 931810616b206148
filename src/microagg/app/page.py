"""The Shiny page: one module per tab (``microagg.app.tabs``: Data -> Protect -> Results ->
Compare -> Explore), composed here around the error line, with the page's style and script served
from ``static/``.

Every text that comes from a file (column names, values, file names) reaches the page through
htmltools tags, which escape it; the HTML report is shown in a sandboxed iframe (no scripts).
"""

from __future__ import annotations

from pathlib import Path

from htmltools import tags
from shiny import App, render, ui

from . import security
from .input_data import dataset_names
from .tabs import compare_tab, data_tab, explore_tab, protect_tab, results_tab
from .tabs.shared import TABS_ID, PageState, quiet_ui

#: the page's style and script, served by the app under /static
STATIC = Path(__file__).parent / "static"

#: the inputs only the server sets (``websocket.ShinyMessages``): the Data tab's upload
FILE_INPUTS = (f"data-{data_tab.UPLOAD}",)


def build_app(
    workdir: Path,
    initial_file: str | None = None,
    max_upload_mb: float = 2048.0,
    budget: security.UploadBudget | None = None,
) -> App:
    """The Shiny App; ``workdir`` is the private folder for this server's pages; ``budget``: the
    bytes each page's uploads hold (shared with the upload middleware)."""
    limit_bytes = int(max_upload_mb * 1024 * 1024)
    budget = budget if budget is not None else security.UploadBudget(limit_bytes)
    app_ui = ui.page_fluid(
        tags.head(
            tags.link(rel="stylesheet", href="static/app.css"),
            tags.script(src="static/app.js"),
            tags.title("microagg"),
        ),
        tags.h2("microagg — protect microdata by microaggregation"),
        ui.div(
            id="upload-limit",
            class_="one-line-error",
            data_limit_bytes=str(limit_bytes),
            data_limit_mb=f"{max_upload_mb:g}",
        ),
        ui.output_ui("error_line"),
        ui.navset_tab(
            ui.nav_panel(
                "1 Data", data_tab.data_ui("data", dataset_names(), max_upload_mb), value="data"
            ),
            ui.nav_panel("2 Protect", protect_tab.protect_ui("protect"), value="protect"),
            ui.nav_panel("3 Results", results_tab.results_ui("results"), value="results"),
            ui.nav_panel("4 Compare", compare_tab.compare_ui("compare"), value="compare"),
            ui.nav_panel("5 Explore", explore_tab.explore_ui("explore"), value="explore"),
            id=TABS_ID,
        ),
    )

    def server(input, output, session):
        state = PageState(session, workdir, budget)
        data_tab.data_server("data", state, workdir, initial_file, limit_bytes)
        protect_tab.protect_server("protect", state)
        results_tab.results_server("results", state)
        compare_tab.compare_server("compare", state)
        explore_tab.explore_server("explore", state)

        @render.ui
        @quiet_ui
        def error_line():
            message, clicks = state.error.get()
            return (
                ui.div(message, id="error-line", class_="one-line-error", data_run=str(clicks))
                if message
                else None
            )

    return App(app_ui, server, static_assets={"/static": STATIC})
