"""What the tabs of one page share: the page's state (the loaded data, the runs, the error line),
the acts one tab asks of another (show a run, go to a tab), and the small helpers every tab
renders with (escaped tables, one-line failures)."""

from __future__ import annotations

import asyncio
import functools
import itertools
from pathlib import Path

from htmltools import Tag, tags
from shiny import reactive, render, ui
from shiny.types import SilentCancelOutputException, SilentException

from .. import security
from ..private import cleanup_workdir, one_line, private_text
from ..run_handle import RunHandle
from ..runspec import RunSpec

# shiny renamed these (1.x): use the new names where they exist
_update_navset = getattr(ui, "update_navset", getattr(ui, "update_navs", None))
download = getattr(render, "download_button", render.download)

#: Shiny's own "nothing to show yet" signals (req() and the like): not failures
SHINY_SIGNALS = (SilentException, SilentCancelOutputException)

#: the id of the page's tab set (the tabs' values are the modules' ids)
TABS_ID = "tabs"


def table(header, rows, table_id=None, numeric_from=1) -> Tag:
    """An HTML table; every cell is escaped text (htmltools), or a tag built with htmltools;
    numbers (or number texts) from column ``numeric_from`` on are right-aligned."""
    head = tags.tr(*[tags.th(str(h)) for h in header]) if header else None
    body = []
    for row in rows:
        cells = []
        for j, value in enumerate(row):
            if isinstance(value, Tag):
                cells.append(tags.td(value))
                continue
            text = fmt(value)
            cells.append(
                tags.td(text, class_="num")
                if j >= numeric_from and _numeric(value)
                else tags.td(text)
            )
        body.append(tags.tr(*cells))
    return tags.table(head, *body, class_="mtable", id=table_id)


def fmt(x, digits: int = 4) -> str:
    """A table cell's text: floats to ``digits`` decimals, None as a dash."""
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _numeric(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    try:
        float(str(value))
    except ValueError:
        return False
    return True


def quiet_ui(fn):
    """A render function whose failure (a value the page sent that makes no sense, a bug) is one
    line in its place on the page, never a traceback on the server's stderr."""

    @functools.wraps(fn)
    def render_or_say_why():
        try:
            return fn()
        except SHINY_SIGNALS:
            raise
        except Exception as exc:  # noqa: BLE001
            return ui.div(one_line(exc), class_="one-line-error")

    return render_or_say_why


class PageState:
    """The state of one page (one browser tab's session), shared by its tabs.

    ``loaded``: the data shown (a dict: df, path, name, dataset, shown, profile, note, max_bytes);
    ``runs``: [(run id, RunSpec, RunHandle)] in order; ``active``: the RunHandle of the run going;
    ``explorations``: [(id, explore_runs.ExploreSpec, RunHandle)] of the Explore tab;
    ``exploring``: the one going (one run or exploration at a time); ``run_inputs``: the Protect
    tab's controls as they are (``controls.run_spec``'s ``sent``; set by that tab); ``shown_run``:
    (the run the Results tab shows, a count); ``error``: (the one-line message, the Run click it
    belongs to); ``tick``: moves when a run's progress does."""

    def __init__(self, session, workdir: Path, budget: security.UploadBudget):
        self.session = session  # the page's (root) session
        self.session_dir = Path(workdir) / f"session-{session.id}"
        self.session_dir.mkdir(mode=0o700, exist_ok=True)
        self.budget = budget
        self.loaded = reactive.Value(None)
        self.error = reactive.Value(("", 0))
        self.active = reactive.Value(None)
        self.runs = reactive.Value([])
        self.tick = reactive.Value(0)
        self.shown_run = reactive.Value(None)
        self.exploring = reactive.Value(None)
        self.explorations = reactive.Value([])
        self.run_inputs = None
        self.run_clicks = 0  # Run clicks so far: an error line names the click it belongs to
        self.handles: list = []  # every RunHandle of this page, stopped when the page ends
        # path of each upload kept -> its bytes (counted in the page's budget)
        self.uploads: dict = {}
        self.upload_counter = itertools.count(1)
        self._shows = itertools.count()
        self._watcher = asyncio.create_task(self._watch_runs())
        session.on_ended(self._ended)

    # ------------------------------------------------------------------ the error line
    def show_error(self, message: str) -> None:
        self.error.set((private_text(message), self.run_clicks))

    def guarded(self, fn):
        """An effect whose failure is one line at the top of the page, never a traceback on the
        server's stderr (which would also end the session)."""
        if asyncio.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_or_say_why():
                try:
                    await fn()
                except SHINY_SIGNALS:
                    raise
                except Exception as exc:  # noqa: BLE001
                    self.show_error(one_line(exc))

        else:

            @functools.wraps(fn)
            def run_or_say_why():
                try:
                    fn()
                except SHINY_SIGNALS:
                    raise
                except Exception as exc:  # noqa: BLE001
                    self.show_error(one_line(exc))

        return run_or_say_why

    # ------------------------------------------------------------------ between tabs
    def go_to(self, tab: str) -> None:
        _update_navset(TABS_ID, selected=tab, session=self.session)

    def show_run(self, run_id) -> None:
        """The Results tab shows this run (and its export)."""
        self.shown_run.set(
            (str(run_id), next(self._shows))
        )  # a new value each time: the tab follows
        self.go_to("results")

    def finished(self) -> list:
        return [(rid, spec, h) for rid, spec, h in self.runs.get() if h.state == "done"]

    # ------------------------------------------------------------------ uploads and the budget
    def used_by_a_run(self, path: str) -> bool:
        """A run or an exploration of the page reads this file (its export, a pick of its map)."""
        return any(
            spec.input_path == path for _, spec, _ in [*self.runs.get(), *self.explorations.get()]
        )

    def release_upload(self, path: str | None) -> None:
        """Delete an upload that no run uses (not shown any more, or replaced); its bytes go back
        to the page's budget."""
        with reactive.isolate():
            if path not in self.uploads or self.used_by_a_run(path):
                return
        cleanup_workdir(Path(path).parent)
        self.budget.release(self.session.id, self.uploads.pop(path))

    def update_spare(self) -> None:
        """The shown upload, if no run uses it, is deleted when another file arrives: its bytes are
        room for that file (UploadBudget.spare)."""
        with reactive.isolate():
            d = self.loaded.get()
            path = d["path"] if d is not None else None
            spare = (
                self.uploads[path] if path in self.uploads and not self.used_by_a_run(path) else 0
            )
        self.budget.set_spare(self.session.id, spare)

    # ------------------------------------------------------------------ runs
    def busy(self) -> bool:
        """A run or an exploration is going (one at a time: they share the machine's cores); if so,
        the page's error line says so."""
        with reactive.isolate():
            going = self.active.get() is not None or self.exploring.get() is not None
        if going:
            self.show_error("a run is already going: wait for it or cancel it")
        return going

    def start_run(self, spec: RunSpec) -> None:
        if self.busy():
            return
        run_id = len(self.runs.get()) + 1
        handle = RunHandle(spec, self.session_dir, run_id)
        self.handles.append(handle)
        self.runs.set(self.runs.get() + [(run_id, spec, handle)])
        self.active.set(handle)
        self.update_spare()  # the run's file is kept for its export

    def cancel_run(self) -> None:
        self._cancel(self.active, self.runs)

    def start_exploration(self, spec) -> None:
        """Explore a grid (``explore_runs.ExploreSpec``) in its own process, as a run goes."""
        if self.busy():
            return
        with reactive.isolate():
            explorations = self.explorations.get()
        handle = RunHandle(spec, self.session_dir, len(explorations) + 1, job="explore")
        self.handles.append(handle)
        self.explorations.set(explorations + [(handle.run_id, spec, handle)])
        self.exploring.set(handle)
        self.update_spare()

    def cancel_exploration(self) -> None:
        self._cancel(self.exploring, self.explorations)

    def _cancel(self, going, listed) -> None:
        """Stop the run or exploration ``going`` holds; ``listed``, the page's list of them, shows
        it."""
        handle = going.get()
        if handle is not None:
            handle.cancel()
            going.set(None)
            listed.set(list(listed.get()))
            self.tick.set(self.tick.get() + 1)

    def _poll(self, going, listed):
        """One look at the run or exploration ``going`` holds: the progress line moves on; at its
        end ``listed`` shows it, an error is the page's line; returns the handle once it is done."""
        handle = going.get()
        if handle is None:
            return None
        state = handle.poll()
        self.tick.set(self.tick.get() + 1)
        if state == "running":
            return None
        going.set(None)
        listed.set(list(listed.get()))
        if state == "error":
            self.show_error(handle.error)
        return handle if state == "done" else None

    def _poll_active(self) -> None:
        """One look at the current run and exploration; a finished run's results are shown (an
        exploration's map is the Explore tab's, which follows ``explorations``)."""
        with reactive.isolate():
            done = self._poll(self.active, self.runs)
            if done is not None:
                self.show_run(done.run_id)
            self._poll(self.exploring, self.explorations)

    async def _watch_runs(self) -> None:
        # The page's own timer task, not reactive.invalidate_later: shiny 1.8 prints a traceback
        # when that timer is cancelled (its effect invalidated by Run / Cancel, or the session
        # ending) while it waits for the reactive lock.
        while True:
            await asyncio.sleep(0.25)
            async with reactive.lock():
                try:
                    self._poll_active()
                except Exception as exc:  # noqa: BLE001  (a bug of ours: say it, keep watching)
                    self.active.set(None)
                    self.show_error(f"internal error: {one_line(exc)}")
                await reactive.flush()

    def _ended(self) -> None:
        self._watcher.cancel()
        for h in self.handles:
            h.cancel()
        cleanup_workdir(self.session_dir)
        self.budget.forget(self.session.id)
