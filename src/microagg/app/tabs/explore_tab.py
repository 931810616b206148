"""Tab 5, Explore: a grid of k values and methods (``microagg.explore``) over the loaded data and
the run the Protect tab describes (its quasi-identifiers, roles and options, through the same
generated controls: ``controls.run_spec``; what a grid sets per run is left out), drawn as the
risk-utility map. The exploration runs in its own process like a protect run (progress, Cancel,
one line for an error); the map, the table of runs (frontier and recommended marked) and each
run's reproduce command are redrawn for any risk measure or max risk without running again; a
click on a point of the map (or a row's button: ``static/app.js``) opens that run in the Results
tab from its kept partition (``explore_runs.picked_spec``). Exploring again over the same data and
options reuses the runs already made (explore's ``previous``). Framework-free logic:
``app.explore_runs``.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from htmltools import HTML, TagList, tags
from shiny import module, reactive, render, ui
from starlette.exceptions import HTTPException

from ...errors import InputError
from ...explore import labels_path
from .. import controls, explore_runs
from .shared import PageState, download, quiet_ui, table

#: the Protect tab's controls a grid does not read (it sets them per run); the method is read, for
#: the parameters the Protect tab gives it
_GRID_SETS = ("k", "time_limit", "work")


@module.ui
def explore_ui():
    return ui.row(
        ui.column(3, _grid_controls()),
        ui.column(9, ui.output_ui("exploration_view")),
        class_="section",
    )


def _grid_controls():
    """The grid's controls: k values, methods, budget, the map's risk axis and the max risk."""
    from ... import explore
    from ... import methods as registry

    return ui.div(
        ui.output_ui("roles_ui"),
        ui.input_text("ks", "k values", explore_runs.DEFAULT_KS_TEXT),
        ui.p("Whole numbers >= 2, separated by commas.", class_="help"),
        ui.input_checkbox_group(
            "methods",
            "methods",
            {m: m for m in registry.names()},
            selected=list(explore.DEFAULT_METHODS),
        ),
        ui.p(
            f"Explore's default grid is ticked. From {explore.SCALABLE_N:,} records, each method "
            "is first timed on two subsamples and one whose cost grows as "
            f"n^{explore.SCALABLE_EXPONENT:g} or faster is left out.",
            class_="help",
        ),
        ui.input_numeric(
            "budget", "time budget (seconds)", explore.DEFAULT_BUDGET, min=1, step="any"
        ),
        ui.p(
            "The whole grid's, cheap runs first; anytime methods share what is left.", class_="help"
        ),
        ui.input_select(
            "risk",
            "risk measure (the map's axis)",
            explore_runs.risk_choices(),
            selected=explore.DEFAULT_RISK,
        ),
        ui.input_numeric("max_risk", "max risk (optional)", None, min=0, step="any"),
        ui.p(
            "Recommended: the least IL among the runs whose risk is at most this (in the measure's "
            "unit: a share 0..1 for record linkage). The axis and the max risk redraw the map "
            "without running again.",
            class_="help",
        ),
        ui.div(
            ui.input_action_button("run", "Explore", class_="btn-primary"),
            " ",
            ui.input_action_button("cancel", "Cancel", class_="btn-outline-danger"),
            class_="section",
        ),
        ui.output_ui("progress_ui"),
        class_="grid-controls",
    )


class _Tab:
    """What the tab's outputs and actions read: the Protect tab's run, the max risk typed, and the
    latest finished exploration (only the one shown is held: its partitions are n labels a run)."""

    def __init__(self, input, state: PageState):
        self.input, self.state = input, state
        # the shown exploration's id -> the Exploration its process pickled
        self.loaded_explorations: dict = {}

    def sent(self, ident):
        """The Protect tab's controls as the grid reads them."""
        if ident in _GRID_SETS or self.state.run_inputs is None:
            return controls.ABSENT
        return self.state.run_inputs(ident)

    def protect_run(self):
        """(the data loaded, the Protect tab's run on them), or one line."""
        with reactive.isolate():
            loaded = self.state.loaded.get()
        if loaded is None:
            raise InputError(
                "load a file or choose a data set first (tab 1), and its roles (tab 2)"
            )
        return loaded, controls.run_spec(loaded, self.sent)

    def shown(self):
        """(id, ExploreSpec, handle, Exploration) of the latest finished exploration, or None."""
        done = [
            (gid, spec, h) for gid, spec, h in self.state.explorations.get() if h.state == "done"
        ]
        if not done:
            return None
        gid, spec, handle = done[-1]
        if gid not in self.loaded_explorations:
            self.loaded_explorations.clear()
            path = explore_runs.pickle_path(self.state.session_dir, gid)
            self.loaded_explorations[gid] = explore_runs.load_exploration(path)
        return gid, spec, handle, self.loaded_explorations[gid]

    def max_risk(self):
        value = self.input.max_risk()
        return None if value is None or value == "" else value


@module.server
def explore_server(input, output, session, state: PageState):
    tab = _Tab(input, state)
    _control_outputs(state, tab)
    _actions(input, state, tab)
    _exploration_outputs(input, session, state, tab)


def _control_outputs(state: PageState, tab: _Tab) -> None:
    """The run explored (the Protect tab's, less what a grid sets) and the progress line."""

    @render.ui
    @quiet_ui
    def roles_ui():
        loaded = state.loaded.get()
        if loaded is None:
            return ui.p(
                "Load data first (tab 1) and choose its roles on the Protect tab (2).",
                class_="muted",
            )
        return _roles_note(loaded, controls.run_spec(loaded, tab.sent))

    @render.ui
    @quiet_ui
    def progress_ui():
        state.tick.get()
        return _progress_line(state)


def _roles_note(loaded: dict, run):
    """The Protect tab's run as the grid explores it, and what the grid leaves out."""
    from ...options import NOT_FOR_A_GRID
    from ..figures import option_text

    shared = {
        name: value for name, value in run.changed_options().items() if name not in NOT_FOR_A_GRID
    }
    shared.pop("columns", None)
    items = [
        tags.b(loaded["name"]),
        f": {len(loaded['df']):,} records; quasi-identifiers ",
        ", ".join(map(str, run.columns)),
    ]
    for name, value in shared.items():
        items.append(f"; {name.replace('_', ' ')}: {option_text(value)}")
    if run.params:
        items.append(f"; {run.method} parameters: {option_text(run.params)}")
    left = explore_runs.left_out(run)
    notes = (
        [
            ui.p(
                "Left out (a grid sets them per run, or they have no meaning for one): "
                f"{', '.join(left)}.",
                class_="warning-line",
            )
        ]
        if left
        else []
    )
    return TagList(
        ui.p(
            "Explores the run of the Protect tab: ", *items, ".", id="explore-roles", class_="muted"
        ),
        *notes,
    )


def _progress_line(state: PageState):
    """The exploration going (its progress bar), a picked run opening, a cancelled one, or ready."""
    handle = state.exploring.get()
    if handle is not None:
        text, fraction = explore_runs.progress_line(handle)
        return ui.div(
            text,
            tags.progress(value=f"{fraction:.3f}", max="1", class_="bar"),
            id="explore-status",
            class_="progress-line running",
        )
    active = state.active.get()
    if active is not None and active.spec.explored is not None:
        return ui.div(
            f"opening run {active.spec.explored[1]} of the exploration…",
            id="explore-status",
            class_="progress-line running",
        )
    explorations = state.explorations.get()
    if explorations and explorations[-1][2].state == "cancelled":
        return ui.div(
            f"exploration {explorations[-1][0]} cancelled",
            id="explore-status",
            class_="progress-line",
        )
    return ui.div("ready", id="explore-status", class_="progress-line")


def _actions(input, state: PageState, tab: _Tab) -> None:
    """Explore (checked on the loaded data before its process starts), Cancel, and a pick: a click
    on a point of the map or a row's button opens that run in the Results tab."""

    @reactive.effect
    @reactive.event(input.run)
    @state.guarded
    async def _explore():
        if state.busy():
            return
        loaded, run = tab.protect_run()
        spec = explore_runs.explore_spec(
            run,
            input.ks(),
            list(input.methods() or ()),
            input.budget(),
            input.risk(),
            tab.max_risk(),
        )
        with reactive.isolate():
            earlier = [
                (gid, s)
                for gid, s, h in state.explorations.get()
                if h.state == "done" and s.same_grid_data(spec)
            ]
        if earlier:  # its runs are not made again (explore checks the data's fingerprint besides)
            spec = replace(
                spec, previous=str(explore_runs.pickle_path(state.session_dir, earlier[-1][0]))
            )
        await asyncio.to_thread(explore_runs.check_against_data, spec, loaded["df"])
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
        found = tab.shown()
        if found is None:
            raise InputError("no exploration yet: explore first")
        _, spec, _, exploration = found
        run_id = explore_runs.pick_of(input.pick(), exploration)
        if state.busy():
            return
        state.show_error("")
        state.start_run(explore_runs.picked_spec(spec, exploration, run_id))


def _exploration_outputs(input, session, state: PageState, tab: _Tab) -> None:
    """The latest exploration as the axis and max risk show it, and its result's two downloads."""

    @render.ui
    @quiet_ui
    def exploration_view():
        found = tab.shown()
        if found is None:
            return ui.p("No exploration yet: choose the grid and Explore.", class_="muted")
        gid, spec, handle, exploration = found
        shown = explore_runs.view(exploration, input.risk(), tab.max_risk())
        return ui.div(
            *_exploration_parts(gid, spec, handle, shown),
            id="explore-view",
            data_pick_input=session.ns("pick"),
        )

    def _result():
        found = tab.shown()
        if found is None:
            raise HTTPException(404, "microagg app: no exploration to download")
        gid, spec, _, _ = found
        return explore_runs.result_path(spec, state.session_dir, gid)

    @download(filename=lambda: _result().name)
    def download_result():
        return str(_result())

    @download(filename=lambda: labels_path(_result()).name)
    def download_labels():
        return str(labels_path(_result()))


def _exploration_parts(gid: int, spec, handle, shown) -> list:
    """An exploration ``shown`` (``explore_runs.view``): its heading, the recommended run, its
    warnings, the map, the table of runs (a button opens a finished one) and its downloads."""
    header, rows = explore_runs.table_rows(spec, shown)
    rows = [
        (
            (
                tags.button(
                    f"open {row[0]}",
                    type="button",
                    class_="btn btn-sm btn-outline-primary open-run",
                    data_run=str(row[0]),
                )
                if shown.runs[row[0]].done
                else row[0]
            ),
            *row[1:],
        )
        for row in rows
    ]
    label = header[4]
    done = sum(r.done for r in shown.runs)
    parts = [
        tags.h4(
            f"Exploration {gid}: {len(shown.runs)} runs ({done} finished) of {spec.input_name}, "
            f"{shown.seconds:.1f} s of a {shown.budget:g} s budget"
        ),
        _recommended_line(shown, label),
    ]
    if not explore_runs.has_values(shown, shown.risk):
        parts.append(
            ui.p(
                f"No run has {label}: it needs other roles (keys, sensitive columns, sampling "
                "weights) on the Protect tab.",
                class_="warning-line",
            )
        )
    for message in handle.figures.get("warnings", []):
        parts.append(tags.p("warning: ", message, class_="warning-line"))
    return parts + [
        ui.div(HTML(explore_runs.checked_svg(shown.map_svg())), id="map-figure"),
        ui.p(
            "Click a point of the map (or a row's button) to open that run in the Results tab, "
            "with its export: the partition kept from the exploration is published, not computed "
            "again.",
            class_="muted",
        ),
        ui.div(table(header, rows, table_id="explore-table"), class_="scroll-x"),
        tags.h5("The exploration's result"),
        ui.p(
            "The reproduce commands read these two files (put them beside the data):",
            class_="muted",
        ),
        ui.download_button("download_result", explore_runs.result_name(spec)),
        " ",
        ui.download_button("download_labels", labels_path(explore_runs.result_name(spec)).name),
    ]


def _recommended_line(shown, label: str):
    """The recommended run: the least IL among the runs within the max risk (in the axis's unit)."""
    best = shown.recommended()
    if best is None:
        verdict = "no run meets the max risk" if shown.max_risk is not None else "no finished run"
    else:
        r = shown.runs[best]
        verdict = f"run {best}: k = {r.k}, {r.method}, IL {r.il:.4f} %"
    within = (
        f", {label} ≤ {shown.max_risk * explore_runs.risk_scale(shown.risk):g}"
        if shown.max_risk is not None
        else ""
    )
    return tags.p(
        tags.b("Recommended"), f" (least IL{within}): {verdict}.", id="explore-recommended"
    )
