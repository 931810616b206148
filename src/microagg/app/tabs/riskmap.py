"""Tab 5, Map: the risk-utility map of a grid of k values and methods (``microagg.explore``) over
the loaded data and the run the Protect tab describes (its quasi-identifiers, roles and options,
through the same generated controls: ``controls.run_spec``; what a grid sets per run is left
out). The exploration runs in its own process like a protect run (progress, Cancel, one line for
an error); the map, the table of runs (frontier and recommended marked) and each run's
reproduce command are redrawn for any risk measure or max risk without running again; a click
on a point (or a row's button: ``static/app.js``) opens that run in the Results tab from its kept
partition (``grid.picked_spec``). Exploring again over the same data and options reuses the
runs already made (explore's ``previous``). Framework-free logic: ``app.grid``.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from htmltools import HTML, TagList, tags
from shiny import module, reactive, render, ui
from starlette.exceptions import HTTPException

from ...errors import InputError
from ...explore import labels_path
from .. import controls, grid
from .shared import PageState, download, quiet_ui, table

#: the Protect tab's controls a grid does not read (it sets them per run); the method is read, for
#: the parameters the Protect tab gives it
_GRID_SETS = ("k", "time_limit", "work")


@module.ui
def map_ui():
    from ... import explore
    from ... import methods as registry

    grid_controls = ui.div(
        ui.output_ui("roles_ui"),
        ui.input_text("ks", "k values", grid.DEFAULT_KS_TEXT),
        ui.p("Whole numbers >= 2, separated by commas.", class_="help"),
        ui.input_checkbox_group("methods", "methods", {m: m for m in registry.names()},
                                selected=list(explore.DEFAULT_METHODS)),
        ui.p(f"Explore's default grid is ticked. From {explore.SCALABLE_N:,} records, each method is first timed on "
             f"two subsamples and one whose cost grows as n^{explore.SCALABLE_EXPONENT:g} or faster is left out.",
             class_="help"),
        ui.input_numeric("budget", "time budget (seconds)", explore.DEFAULT_BUDGET, min=1, step="any"),
        ui.p("The whole grid's, cheap runs first; anytime methods share what is left.", class_="help"),
        ui.input_select("risk", "risk measure (the map's axis)", grid.risk_choices(), selected=explore.DEFAULT_RISK),
        ui.input_numeric("max_risk", "max risk (optional)", None, min=0, step="any"),
        ui.p("Recommended: the least IL among the runs whose risk is at most this (in the measure's unit: a share "
             "0..1 for record linkage). The axis and the max risk redraw the map without running again.",
             class_="help"),
        ui.div(ui.input_action_button("explore", "Explore", class_="btn-primary"), " ",
               ui.input_action_button("cancel", "Cancel", class_="btn-outline-danger"), class_="section"),
        ui.output_ui("progress_ui"),
        class_="grid-controls",
    )
    return ui.row(ui.column(3, grid_controls), ui.column(9, ui.output_ui("map_view")), class_="section")


@module.server
def map_server(input, output, session, state: PageState):
    from ...options import NOT_FOR_A_GRID

    loaded_explorations: dict = {}  # the shown exploration's id -> the Exploration its process pickled

    def sent(ident):
        """The Protect tab's controls as the grid reads them."""
        if ident in _GRID_SETS or state.run_inputs is None:
            return controls.ABSENT
        return state.run_inputs(ident)

    def protect_run():
        with reactive.isolate():
            loaded = state.loaded.get()
        if loaded is None:
            raise InputError("load a file or choose a data set first (tab 1), and its roles (tab 2)")
        return loaded, controls.run_spec(loaded, sent)

    def shown():
        """(id, GridSpec, handle, Exploration) of the latest finished exploration, or None."""
        done = [(gid, spec, h) for gid, spec, h in state.explorations.get() if h.state == "done"]
        if not done:
            return None
        gid, spec, handle = done[-1]
        if gid not in loaded_explorations:  # only the one shown is held: its partitions are n labels a run
            loaded_explorations.clear()
            loaded_explorations[gid] = grid.load_exploration(grid.pickle_path(state.session_dir, gid))
        return gid, spec, handle, loaded_explorations[gid]

    def max_risk():
        value = input.max_risk()
        return None if value is None or value == "" else value

    @render.ui
    @quiet_ui
    def roles_ui():
        loaded = state.loaded.get()
        if loaded is None:
            return ui.p("Load data first (tab 1) and choose its roles on the Protect tab (2).", class_="muted")
        run = controls.run_spec(loaded, sent)
        shared = {name: value for name, value in run.changed_options().items() if name not in NOT_FOR_A_GRID}
        shared.pop("columns", None)
        from ..figures import option_text

        items = [tags.b(loaded["name"]), f": {len(loaded['df']):,} records; quasi-identifiers ",
                 ", ".join(map(str, run.columns))]
        for name, value in shared.items():
            items.append(f"; {name.replace('_', ' ')}: {option_text(value)}")
        if run.params:
            items.append(f"; {run.method} parameters: {option_text(run.params)}")
        left = grid.left_out(run)
        notes = [ui.p(f"Left out (a grid sets them per run, or they have no meaning for one): {', '.join(left)}.",
                      class_="warning-line")] if left else []
        return TagList(ui.p("Explores the run of the Protect tab: ", *items, ".", id="map-roles", class_="muted"),
                       *notes)

    @reactive.effect
    @reactive.event(input.explore)
    @state.guarded
    async def _explore():
        if state.busy():
            return
        loaded, run = protect_run()
        spec = grid.grid_spec(run, input.ks(), list(input.methods() or ()), input.budget(), input.risk(), max_risk())
        with reactive.isolate():
            earlier = [(gid, s) for gid, s, h in state.explorations.get() if h.state == "done" and s.same_grid_data(spec)]
        if earlier:  # its runs are not made again (explore checks the data's fingerprint besides)
            spec = replace(spec, previous=str(grid.pickle_path(state.session_dir, earlier[-1][0])))
        await asyncio.to_thread(grid.check_against_data, spec, loaded["df"])
        state.show_error("")
        state.start_exploration(spec)

    @reactive.effect
    @reactive.event(input.cancel)
    @state.guarded
    def _cancel():
        state.cancel_exploration()

    @reactive.effect
    @reactive.event(input.pick)
    @state.guarded
    def _pick():
        found = shown()
        if found is None:
            raise InputError("no map yet: explore first")
        _, spec, _, exploration = found
        run_id = grid.pick_of(input.pick(), exploration)
        if state.busy():
            return
        state.show_error("")
        state.start_run(grid.picked_spec(spec, exploration, run_id))

    @render.ui
    @quiet_ui
    def progress_ui():
        state.tick.get()
        handle = state.exploring.get()
        if handle is not None:
            text, fraction = grid.progress_line(handle)
            return ui.div(text, tags.progress(value=f"{fraction:.3f}", max="1", class_="bar"), id="map-status",
                          class_="progress-line running")
        active = state.active.get()
        if active is not None and active.spec.explored is not None:
            return ui.div(f"opening run {active.spec.explored[1]} of the map…", id="map-status",
                          class_="progress-line running")
        explorations = state.explorations.get()
        if explorations and explorations[-1][2].state == "cancelled":
            return ui.div(f"exploration {explorations[-1][0]} cancelled", id="map-status", class_="progress-line")
        return ui.div("ready", id="map-status", class_="progress-line")

    @render.ui
    @quiet_ui
    def map_view():
        found = shown()
        if found is None:
            return ui.p("No map yet: choose the grid and Explore.", class_="muted")
        gid, spec, handle, exploration = found
        view = grid.view(exploration, input.risk(), max_risk())
        header, rows = grid.table_rows(spec, view)
        rows = [(tags.button(f"open {row[0]}", type="button", class_="btn btn-sm btn-outline-primary open-run",
                             data_run=str(row[0])) if exploration.runs[row[0]].done else row[0], *row[1:])
                for row in rows]
        best = view.recommended()
        label = header[4]
        if best is None:
            verdict = "no run meets the max risk" if view.max_risk is not None else "no finished run"
        else:
            r = view.runs[best]
            verdict = f"run {best}: k = {r.k}, {r.method}, IL {r.il:.4f} %"
        done = sum(r.done for r in view.runs)
        parts = [
            tags.h4(f"Exploration {gid}: {len(view.runs)} runs ({done} finished) of {spec.input_name}, "
                    f"{view.seconds:.1f} s of a {view.budget:g} s budget"),
            tags.p(tags.b("Recommended"), " (least IL" + (f", {label} ≤ {view.max_risk * grid.risk_scale(view.risk):g}"
                                                          if view.max_risk is not None else "") + f"): {verdict}.",
                   id="map-recommended"),
        ]
        if not grid.has_values(view, view.risk):
            parts.append(ui.p(f"No run has {label}: it needs other roles (keys, sensitive columns, sampling "
                              "weights) on the Protect tab.", class_="warning-line"))
        for message in handle.figures.get("warnings", []):
            parts.append(tags.p("warning: ", message, class_="warning-line"))
        parts += [
            ui.div(HTML(grid.checked_svg(view.map_svg())), id="map-figure"),
            ui.p("Click a point (or a row's button) to open that run in the Results tab, with its export: the "
                 "partition kept from the exploration is published, not computed again.", class_="muted"),
            ui.div(table(header, rows, table_id="map-table"), class_="scroll-x"),
            tags.h5("The exploration's result"),
            ui.p("The reproduce commands read these two files (put them beside the data):", class_="muted"),
            ui.download_button("download_result", grid.result_name(spec)), " ",
            ui.download_button("download_labels", labels_path(grid.result_name(spec)).name),
        ]
        return ui.div(*parts, id="map-view", data_pick_input=session.ns("pick"))

    def _result():
        found = shown()
        if found is None:
            raise HTTPException(404, "microagg app: no exploration to download")
        gid, spec, _, _ = found
        return grid.result_path(spec, state.session_dir, gid)

    @download(filename=lambda: _result().name)
    def download_result():
        return str(_result())

    @download(filename=lambda: _labels().name)
    def download_labels():
        return str(_labels())

    def _labels():
        return labels_path(_result())
