"""Tab 1, Data: upload a file or pick a bundled data set; each column's type, distinct and missing
values, whether it is suggested as a quasi-identifier, and the first rows."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from htmltools import TagList, tags
from shiny import module, reactive, render, ui

from ...errors import InputError
from .. import websocket
from ..column_profile import profile, shown
from ..input_data import (
    dataset_names,
    dataset_path,
    dataset_roles,
    load_dataset,
    read_input,
    read_suffixes,
)
from ..private import one_line
from .shared import PageState, quiet_ui, table

#: the upload's input id in this tab (``websocket.ShinyMessages`` lets only the server set it)
UPLOAD = "upload"


@module.ui
def data_ui(datasets: list, max_upload_mb: float):
    return ui.div(
        ui.row(
            ui.column(
                5,
                ui.input_file(
                    UPLOAD, "Upload a data file (CSV, Parquet, ...)", button_label="Choose file…"
                ),
                ui.p(
                    f"Largest upload: {max_upload_mb:g} MB, all this page's uploads together. The"
                    " file stays on this machine.",
                    class_="muted",
                ),
            ),
            ui.column(
                4,
                ui.input_select(
                    "dataset", "…or a bundled data set", {"": "(none)", **{n: n for n in datasets}}
                ),
            ),
        ),
        ui.output_ui("data_summary"),
        class_="section",
    )


@module.server
def data_server(
    input,
    output,
    session,
    state: PageState,
    workdir: Path,
    initial_file: str | None,
    limit_bytes: int,
):
    _initial_file(state, initial_file)
    _upload_action(input, state, workdir, limit_bytes)
    _dataset_action(input, state)
    _summary_output(state)


async def _load(
    state: PageState, path, name, dataset=None, shown=None, max_bytes=None, note=None
) -> bool:
    """Read a file (or a bundled data set) off the event loop (a large file does not stall other
    pages) and profile its columns; it becomes the page's data, or its error is the error line."""
    try:
        if dataset:
            df = await asyncio.to_thread(load_dataset, dataset)
            roles = dataset_roles(dataset)
        else:
            df = await asyncio.to_thread(read_input, path, max_bytes)
            roles = None
        prof = await asyncio.to_thread(profile, df, roles)
    except Exception as exc:  # noqa: BLE001
        state.show_error(one_line(exc))
        return False
    with reactive.isolate():
        previous = state.loaded.get()
    state.loaded.set(
        {
            "df": df,
            "path": str(path),
            "name": name,
            "dataset": dataset,
            "shown": shown,
            "profile": prof,
            "note": note,
            "max_bytes": max_bytes,
        }
    )
    state.show_error("")
    if previous is not None:
        state.release_upload(previous["path"])
    state.update_spare()
    return True


def _initial_file(state: PageState, initial_file: str | None) -> None:
    """The file the app was started with (``microagg app FILE``), loaded at once."""

    @reactive.effect
    @state.guarded
    async def _initial():
        if initial_file:
            await _load(state, initial_file, Path(initial_file).name, shown=initial_file)


def _upload_action(input, state: PageState, workdir: Path, limit_bytes: int) -> None:
    """An upload: only from Shiny's own upload folder, under a safe name in the session's private
    folder, read within the upload bound; the file it replaces gives back its room."""
    workdir_real = Path(os.path.realpath(workdir))

    @reactive.effect
    @reactive.event(input[UPLOAD])
    @state.guarded
    async def _upload():
        files = input[UPLOAD]()
        if not files:
            return
        f = files[0]
        source = Path(os.path.realpath(f["datapath"]))
        if (
            workdir_real not in source.parents or not source.is_file()
        ):  # only Shiny's own upload folder
            state.show_error("the upload did not arrive: try again")
            return
        size = source.stat().st_size  # what arrived, not what the page said
        with reactive.isolate():
            previous = state.loaded.get()
        if (
            previous is not None
            and previous["path"] in state.uploads
            and not state.used_by_a_run(previous["path"])
        ):
            state.loaded.set(None)  # replaced: its room was this file's (UploadBudget.spare)
            state.release_upload(previous["path"])
        # the user's file name (its suffix says the format), made safe, inside the private folder
        name = websocket.safe_file_name(f["name"], read_suffixes())
        target = state.session_dir / f"upload-{next(state.upload_counter)}" / name
        target.parent.mkdir(mode=0o700)
        source.replace(target)
        state.uploads[str(target)] = size
        note = (
            f"the file's name was changed to a safe one: {name}" if f.get("name_changed") else None
        )
        shown = f.get("shown_name")  # the user's own name ('-data.csv') for the commands shown
        if shown is not None:
            shown = websocket.safe_file_name(shown, read_suffixes(), options=True)
        if await _load(state, target, name, shown=shown, max_bytes=limit_bytes, note=note):
            ui.update_select("dataset", selected="")
        else:
            state.release_upload(str(target))  # unreadable: nothing keeps it
            state.update_spare()


def _dataset_action(input, state: PageState) -> None:
    """A bundled data set chosen: loaded with its dtypes and roles."""

    @reactive.effect
    @reactive.event(input.dataset)
    @state.guarded
    async def _dataset():
        name = input.dataset()
        if name:
            if name not in dataset_names():
                raise InputError("the page sent an unknown data set: reload the page")
            path = dataset_path(name)
            await _load(state, path, name, dataset=name, shown=str(path))


def _summary_output(state: PageState) -> None:
    """The data loaded: each column's profile and the first rows."""

    @render.ui
    @quiet_ui
    def data_summary():
        d = state.loaded.get()
        if d is None:
            return ui.p("Load a file or choose a data set.", class_="muted")
        df = d["df"]
        prof, preview, cut = shown(df, d["profile"])
        rows = [
            (p.name, p.dtype, p.distinct, p.missing, "yes" if p.suggested else "", p.note)
            for p in prof
        ]
        return TagList(
            tags.h4(
                tags.span(d["name"], id="data-name"), f": {len(df)} records × {df.shape[1]} columns"
            ),
            ui.p(d["note"], class_="warning-line", id="data-note") if d.get("note") else None,
            ui.p(cut, class_="muted", id="data-shown") if cut else None,
            table(
                ["column", "type", "distinct values", "missing", "suggested QI", "note"],
                rows,
                table_id="profile-table",
                numeric_from=2,
            ),
            tags.h5("First rows"),
            ui.div(
                table(
                    [str(c) for c in preview.columns],
                    [tuple(r) for r in preview.itertuples(index=False)],
                    table_id="preview-table",
                    numeric_from=0,
                ),
                class_="scroll-x",
            ),
        )
