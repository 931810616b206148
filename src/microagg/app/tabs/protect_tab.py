"""Tab 2, Protect: the run's controls, generated from the declared run options and the chosen
method's parameters (``app.controls``), Run and Cancel, and the run's progress.

The quasi-identifiers are ticked in a list (the column rules' suggestion first), the other
column-valued options (strata, sample weight, categorical, ordinal, ...) are chosen among the
loaded file's columns, every other option has the widget its declaration says. Run checks the
whole run as the command line does (``controls.run_spec``: each value by its declaration, then
``options.validate_run``; ``runspec.check_against_data``: the pipeline's data hook on the loaded
data) before its process starts.
"""

from __future__ import annotations

import asyncio

from htmltools import TagList, tags
from shiny import module, reactive, render, ui

from ...errors import InputError
from .. import controls
from ..run_handle import progress_line
from ..runspec import check_against_data
from .shared import PageState, quiet_ui

#: the run option whose columns are the quasi-identifiers (a list of boxes, the suggested ticked)
QUASI_IDENTIFIERS = controls.QUASI_IDENTIFIERS
#: a method with this many parameters or more shows them folded (click to open)
FOLDED_FROM = 6


def control_ui(c: controls.Control, labels: dict | None = None):
    """The Shiny input of a generated control, its help text below (``labels``: the choices'
    labels, for a column control)."""
    p, choices = c.param, c.choices
    if labels is not None and choices is not None:
        choices = {value: labels.get(value, text) for value, text in choices.items()}
    if c.widget == "numeric":
        low = None if p.low is None or p.low_open else p.low
        high = None if p.high is None or p.high_open else p.high
        widget = ui.input_numeric(
            c.input_id, c.label, c.value, min=low, max=high, step=1 if p.kind == "int" else "any"
        )
    elif c.widget == "checkbox":
        widget = ui.input_checkbox(c.input_id, c.label, bool(c.value))
    elif c.widget == "select" or c.widget == "column":
        widget = ui.input_select(c.input_id, c.label, choices, selected=c.value)
    elif c.widget == "columns" and p.name == QUASI_IDENTIFIERS:
        widget = ui.input_checkbox_group(c.input_id, c.label, choices, selected=c.value)
    elif c.widget == "columns":
        widget = ui.input_select(
            c.input_id,
            c.label,
            choices,
            selected=c.value,
            multiple=True,
            size=str(min(max(len(choices), 2), 6)),
        )
    else:
        widget = ui.input_text(c.input_id, c.label, c.value)
    return ui.div(widget, ui.p(c.help, class_="help"), class_="control", data_option=p.name)


def _is_column_control(c: controls.Control) -> bool:
    return c.widget in ("columns", "column")


@module.ui
def protect_ui():
    fixed = [c for c in controls.option_controls() if not _is_column_control(c)]
    options = []
    for c in fixed:  # the method's description and parameters right below the method
        options.append(control_ui(c))
        if c.param.kind == "method":
            options.append(ui.output_ui("method_ui"))
    return ui.div(
        ui.div(
            ui.input_action_button("run", "Run", class_="btn-primary"),
            " ",
            ui.input_action_button("cancel", "Cancel", class_="btn-outline-danger"),
            ui.output_ui("progress_ui"),
            class_="section",
        ),
        ui.row(
            ui.column(4, ui.output_ui("columns_ui")),
            ui.column(4, *options),
            ui.column(4, ui.output_ui("roles_ui")),
        ),
        class_="section",
    )


@module.server
def protect_server(input, output, session, state: PageState):
    columns = _ColumnControls(input, state)
    state.run_inputs = columns.sent  # the Explore tab explores the run these controls describe
    _column_outputs(input, columns)
    _method_output(input)
    _run_actions(input, state, columns)
    _progress_output(state)


class _ColumnControls:
    """The column-valued controls of the loaded data, and what the page sent for every control."""

    def __init__(self, input, state: PageState):
        self.input, self.state = input, state
        # the column-valued options that take a column away from the quasi-identifiers (stratum,
        # sample weight, ...), as the declared run says
        self.leaving = [
            c.input_id
            for c in controls.option_controls()
            if _is_column_control(c) and controls.leaves_the_quasi_identifiers(c.param)
        ]

    def profile(self):
        d = self.state.loaded.get()
        return [] if d is None else d["profile"]

    def column_controls(self):
        """The column-valued controls for the loaded data (the QIs: the column rules'
        suggestion)."""
        prof = self.profile()
        names = [p.name for p in prof]
        suggested = [p.name for p in prof if p.suggested]
        return [
            c
            for c in controls.option_controls(names, {QUASI_IDENTIFIERS: suggested})
            if _is_column_control(c)
        ]

    def sent(self, ident):
        """What the page sent for a control (``controls.run_spec``'s ``sent``); a column control
        the page has not drawn yet (the tab never opened) gives its initial value: the column rules'
        suggestion, what the tab would show."""
        if ident in self.input:
            return self.input[ident]()
        return {c.input_id: c.value for c in self.column_controls()}.get(ident, controls.ABSENT)


def _column_outputs(input, columns: _ColumnControls) -> None:
    """The quasi-identifiers' boxes, the other column roles, and a role that takes a column away
    from the quasi-identifiers unticking it."""

    @render.ui
    @quiet_ui
    def columns_ui():
        prof = columns.profile()
        if not prof:
            return ui.p("Load data first (tab 1).", class_="muted")

        labels = {str(i): p.label() for i, p in enumerate(prof)}
        qi = next(c for c in columns.column_controls() if c.param.name == QUASI_IDENTIFIERS)
        return TagList(
            control_ui(qi, labels),
            ui.p(
                "Numbers are continuous unless declared categorical or ordinal (right); text "
                "columns are nominal.",
                class_="muted",
            ),
        )

    @render.ui
    @quiet_ui
    def roles_ui():
        if not columns.profile():
            return None
        return TagList(
            *[control_ui(c) for c in columns.column_controls() if c.param.name != QUASI_IDENTIFIERS]
        )

    @reactive.effect
    @columns.state.guarded
    def _roles_leave_the_qis():
        """A column chosen in a role that excludes it from the quasi-identifiers (a stratum, the
        sample weight) stops being one: its box is unticked."""
        taken = set()
        for ident in columns.leaving:
            if ident in input:
                value = input[ident]()
                taken |= {value} if isinstance(value, str) else set(value or ())
        with reactive.isolate():
            if QUASI_IDENTIFIERS not in input:
                return
            current = list(input[QUASI_IDENTIFIERS]() or ())
        kept = [c for c in current if c not in taken]
        if kept != current:
            ui.update_checkbox_group(QUASI_IDENTIFIERS, selected=kept)


def _method_output(input) -> None:
    """The chosen method's description and its parameters' controls (folded when many)."""
    from ... import methods as registry

    @render.ui
    @quiet_ui
    def method_ui():
        return _method_panel(registry.get(input.method()))


def _method_panel(info):
    items = [
        ui.p(info.summary, class_="muted", id="method-summary"),
        ui.p(f"{info.family}; {info.complexity}; {info.paper}", class_="muted"),
    ]
    if not info.interruptible:
        items.append(
            ui.p(
                "It may run past the time limit (it cannot stop inside a step); Cancel "
                "always stops it.",
                class_="muted",
            )
        )
    if info.per_variable:
        items.append(
            ui.p(
                "It groups each variable on its own: the published records are NOT k-anonymous.",
                class_="one-line-error",
            )
        )
    params = [control_ui(c) for c in controls.method_controls(info)]
    if params:  # a long list is folded
        items.append(
            tags.details(
                tags.summary(f"{info.name} parameters ({len(params)})"),
                *params,
                open="" if len(params) < FOLDED_FROM else None,
            )
        )
    return ui.div(*items, class_="method-panel")


def _run_actions(input, state: PageState, columns: _ColumnControls) -> None:
    """Run (the whole run checked as the command line checks it, before its process starts) and
    Cancel."""

    @reactive.effect
    @reactive.event(input.run)
    @state.guarded
    async def _run():
        clicks = input.run()
        state.run_clicks = clicks if isinstance(clicks, int) else 0
        if state.busy():
            return
        with reactive.isolate():
            loaded = state.loaded.get()
        if loaded is None:
            raise InputError("load a file or choose a data set first")
        spec = controls.run_spec(loaded, columns.sent)
        # the command line's checks on the loaded data, before a process starts
        await asyncio.to_thread(check_against_data, spec, loaded["df"])
        state.show_error("")
        state.start_run(spec)

    @reactive.effect
    @reactive.event(input.cancel)
    @state.guarded
    def _cancel():
        state.cancel_run()


def _progress_output(state: PageState) -> None:
    """The run's progress line: its stage and seconds, a bar when its share done is known."""

    @render.ui
    @quiet_ui
    def progress_ui():
        state.tick.get()
        handle = state.active.get()
        if handle is None:
            done = [h for _, _, h in state.runs.get()]
            if done and done[-1].state == "cancelled":
                return ui.div(
                    f"run {done[-1].run_id} cancelled", id="run-status", class_="progress-line"
                )
            return ui.div("ready", id="run-status", class_="progress-line")
        text, fraction = progress_line(handle)
        bar = (
            tags.progress(value=f"{fraction:.3f}", max="1", class_="bar")
            if fraction is not None
            else tags.progress(class_="bar")
        )
        return ui.div(text, bar, id="run-status", class_="progress-line running")
