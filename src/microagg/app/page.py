"""The Shiny page: Data -> Protect -> Results -> Compare, wired to ``microagg.app.logic``.

Every text that comes from a file (column names, values, file names) reaches the page through
htmltools tags, which escape it; the HTML report is shown in a sandboxed iframe (no scripts).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import math
import os
from pathlib import Path

from htmltools import HTML, Tag, TagList, tags
from shiny import App, reactive, render, ui
from shiny.types import SilentCancelOutputException, SilentException
from starlette.exceptions import HTTPException

from ..errors import InputError
from . import logic, security

# shiny renamed these (1.x): use the new names where they exist
_download = getattr(render, "download_button", render.download)
_update_navset = getattr(ui, "update_navset", getattr(ui, "update_navs", None))

_CSS = """
body{padding-bottom:3rem}
.one-line-error{color:#a40000;font-weight:600;margin:.5rem 0;white-space:pre-wrap}
table.mtable{border-collapse:collapse;margin:.5rem 0 1rem 0;font-size:.92rem}
table.mtable td,table.mtable th{padding:.2rem .6rem;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}
table.mtable th{background:#f6f6f6}
table.mtable td.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#666;font-size:.9rem}
.warning-line{color:#8a5a00}
.progress-line{font-variant-numeric:tabular-nums;margin:.5rem 0}
iframe.report{width:100%;height:1400px;border:1px solid #ddd}
pre.reproduce{background:#f6f6f6;padding:.6rem;white-space:pre-wrap;overflow-wrap:anywhere}
.section{margin-top:1rem}
"""


def _table(header, rows, table_id=None, numeric_from=1) -> Tag:
    """An HTML table; every cell is escaped text (htmltools)."""
    head = tags.tr(*[tags.th(str(h)) for h in header]) if header else None
    body = []
    for row in rows:
        cells = []
        for j, value in enumerate(row):
            text = logic.fmt(value)
            num = j >= numeric_from and isinstance(value, (int, float)) and not isinstance(value, bool)
            cells.append(tags.td(text, class_="num") if num else tags.td(text))
        body.append(tags.tr(*cells))
    return tags.table(head, *body, class_="mtable", id=table_id)


_SHINY_SIGNALS = (SilentException, SilentCancelOutputException)  # req() and the like: not failures


def _quiet_ui(fn):
    """A render function whose failure (a value the page sent that makes no sense, a bug) is one
    line in its place on the page, never a traceback on the server's stderr."""

    @functools.wraps(fn)
    def render_or_say_why():
        try:
            return fn()
        except _SHINY_SIGNALS:  # Shiny's own "nothing to show yet"
            raise
        except Exception as exc:  # noqa: BLE001
            return ui.div(logic.one_line(exc), class_="one-line-error")

    return render_or_say_why


def _picked(value, names: dict, what: str, single: bool = False) -> list:
    """The columns the page sent for ``what`` (their indices in the profile as text), each one a
    column of the data: one line for anything else (a hand-made message, a stale page)."""
    if value is None or (single and value == ""):
        return []
    values = [value] if single or isinstance(value, str) else value
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise InputError(f"the page sent something that is not a column for the {what}: reload the page")
    unknown = [v for v in values if v not in names]
    if unknown:
        shown = ", ".join(repr(v[:20]) for v in unknown[:3])
        raise InputError(f"the page sent an unknown column for the {what} ({shown}): reload the page")
    return [names[v] for v in values]


def _whole(value, what: str) -> int:
    """A whole number typed in a numeric box (None: empty)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not float(value).is_integer():
        raise InputError(f"{what} must be a whole number, got {value!r}"[:200])
    return int(value)


def _text(value) -> str:
    """A text box's value ('' when empty)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError("the page sent a value that is not text: reload the page")
    return value.strip()


def build_app(workdir: Path, initial_file: str | None = None, max_upload_mb: float = 2048.0,
              budget: security.UploadBudget | None = None) -> App:
    """The Shiny App; ``workdir`` is the private folder for this server's sessions; ``budget``:
    the bytes each session's uploads hold (shared with the upload middleware)."""
    from .. import methods as registry

    method_names = registry.names()
    datasets = logic.dataset_names()
    limit_bytes = int(max_upload_mb * 1024 * 1024)
    budget = budget if budget is not None else security.UploadBudget(limit_bytes)
    workdir_real = Path(os.path.realpath(workdir))

    data_panel = ui.nav_panel(
        "1 Data",
        ui.div(
            ui.row(
                ui.column(5, ui.input_file("upload", "Upload a data file (CSV, Parquet, ...)",
                                           button_label="Choose file…"),
                          ui.p(f"Largest upload: {max_upload_mb:g} MB, all this page's uploads together. The "
                               "file stays on this machine.", class_="muted")),
                ui.column(4, ui.input_select("dataset", "…or a bundled data set",
                                             {"": "(none)", **{n: n for n in datasets}})),
            ),
            ui.output_ui("data_summary"),
            class_="section",
        ),
        value="data",
    )
    protect_panel = ui.nav_panel(
        "2 Protect",
        ui.div(
            ui.div(ui.input_action_button("run", "Run", class_="btn-primary"), " ",
                   ui.input_action_button("cancel", "Cancel", class_="btn-outline-danger"),
                   ui.output_ui("progress_ui"), class_="section"),
            ui.row(
                ui.column(4, ui.output_ui("columns_ui")),
                ui.column(4,
                          ui.input_numeric("k", "k (minimum group size)", 3, min=2, step=1),
                          ui.input_select("method", "Method", {n: n for n in method_names},
                                          selected="mdav" if "mdav" in method_names else method_names[0]),
                          ui.output_ui("method_ui"),
                          ui.input_text("time_limit", "Time limit in seconds (blank: none)", ""),
                          ui.input_numeric("seed", "Seed", 0, min=0, step=1)),
                ui.column(4, ui.output_ui("roles_ui")),
            ),
            class_="section",
        ),
        value="protect",
    )
    results_panel = ui.nav_panel(
        "3 Results",
        ui.div(ui.output_ui("results_ui"), class_="section"),
        value="results",
    )
    compare_panel = ui.nav_panel(
        "4 Compare",
        ui.div(ui.output_ui("history_ui"), ui.output_ui("compare_ui"), class_="section"),
        value="compare",
    )
    size_check = tags.script(HTML(
        "document.addEventListener('change',function(e){var t=e.target;"
        "if(t&&t.id==='upload'&&t.files&&t.files.length&&t.files[0].size>" + str(limit_bytes) + "){"
        "var m=document.getElementById('upload-limit');if(m){m.textContent='the file is larger than the "
        f"upload limit of {max_upload_mb:g} MB (start the app with --max-upload-mb to change it)';}}}}}},true);"))
    app_ui = ui.page_fluid(
        tags.head(tags.style(HTML(_CSS)), tags.title("microagg")),
        tags.h2("microagg — protect microdata by microaggregation"),
        ui.div(id="upload-limit", class_="one-line-error"),
        ui.output_ui("error_line"),
        ui.navset_tab(data_panel, protect_panel, results_panel, compare_panel, id="tabs"),
        size_check,
    )

    def server(input, output, session):
        session_dir = Path(workdir) / f"session-{session.id}"
        session_dir.mkdir(mode=0o700, exist_ok=True)
        loaded = reactive.Value(None)  # dict: df, path, name, dataset, profile
        error = reactive.Value(("", 0))  # (one-line message, the Run click it belongs to)
        active = reactive.Value(None)  # the RunHandle of the current run
        runs = reactive.Value([])  # [(run_id, spec, handle)] in order
        tick = reactive.Value(0)
        shown_run = reactive.Value(None)  # the run the Results tab shows (set when a run ends)
        handles = []  # every RunHandle of this session, to stop them when the session ends
        counter = itertools.count(1)

        def show_error(message: str) -> None:
            with reactive.isolate():
                clicks = input.run() if "run" in input else 0
            error.set((logic.private_text(message), clicks if isinstance(clicks, int) else 0))

        def guarded(fn):
            """An effect whose failure is one line at the top of the page, never a traceback on the
            server's stderr (which would also end the session)."""
            if asyncio.iscoroutinefunction(fn):
                @functools.wraps(fn)
                async def run_or_say_why():
                    try:
                        await fn()
                    except _SHINY_SIGNALS:
                        raise
                    except Exception as exc:  # noqa: BLE001
                        show_error(logic.one_line(exc))
            else:
                @functools.wraps(fn)
                def run_or_say_why():
                    try:
                        fn()
                    except _SHINY_SIGNALS:
                        raise
                    except Exception as exc:  # noqa: BLE001
                        show_error(logic.one_line(exc))
            return run_or_say_why

        uploads: dict = {}  # path of each upload kept -> its bytes (counted in the session's budget)

        def used_by_a_run(path: str) -> bool:
            return any(spec.input_path == path for _, spec, _ in runs.get())

        def release_upload(path: str | None) -> None:
            """Delete an upload that no run uses (not shown any more, or replaced); its bytes go back
            to the session's budget."""
            with reactive.isolate():
                if path not in uploads or used_by_a_run(path):
                    return
            logic.cleanup_workdir(Path(path).parent)
            budget.release(session.id, uploads.pop(path))

        def update_spare() -> None:
            """The shown upload, if no run uses it, is deleted when another file arrives: its bytes
            are room for that file (UploadBudget.spare)."""
            with reactive.isolate():
                d = loaded.get()
                path = d["path"] if d is not None else None
                spare = uploads[path] if path in uploads and not used_by_a_run(path) else 0
            budget.set_spare(session.id, spare)

        async def load(path, name, dataset=None, shown=None, max_bytes=None, note=None) -> bool:
            """Read a file off the event loop (a large file does not stall other sessions)."""
            try:
                if dataset:
                    df = await asyncio.to_thread(logic.load_input, logic.RunSpec(str(path), name, 2, "", [],
                                                                                   dataset=dataset))
                    roles = logic.dataset_roles(dataset)
                else:
                    df = await asyncio.to_thread(logic.read_input, path, max_bytes)
                    roles = None
                prof = await asyncio.to_thread(logic.profile, df, roles)
            except Exception as exc:  # noqa: BLE001
                show_error(logic.one_line(exc))
                return False
            with reactive.isolate():
                previous = loaded.get()
            loaded.set({"df": df, "path": str(path), "name": name, "dataset": dataset, "shown": shown,
                        "profile": prof, "note": note, "max_bytes": max_bytes})
            show_error("")
            if previous is not None:
                release_upload(previous["path"])
            update_spare()
            return True

        @reactive.effect
        @guarded
        async def _initial():
            if initial_file:
                await load(initial_file, Path(initial_file).name, shown=initial_file)

        @reactive.effect
        @reactive.event(input.upload)
        @guarded
        async def _upload():
            files = input.upload()
            if not files:
                return
            f = files[0]
            source = Path(os.path.realpath(f["datapath"]))
            if workdir_real not in source.parents or not source.is_file():  # only Shiny's own upload folder
                show_error("the upload did not arrive: try again")
                return
            size = source.stat().st_size  # what arrived, not what the page said
            with reactive.isolate():
                previous = loaded.get()
            if previous is not None and previous["path"] in uploads and not used_by_a_run(previous["path"]):
                loaded.set(None)  # replaced: its room was this file's (UploadBudget.spare)
                release_upload(previous["path"])
            # the user's file name (its suffix says the format), made safe, inside the private folder
            name = security.safe_file_name(f["name"], logic.read_suffixes())
            target = session_dir / f"upload-{next(counter)}" / name
            target.parent.mkdir(mode=0o700)
            source.replace(target)
            uploads[str(target)] = size
            note = f"the file's name was changed to a safe one: {name}" if f.get("name_changed") else None
            if await load(target, name, max_bytes=limit_bytes, note=note):
                ui.update_select("dataset", selected="")
            else:
                release_upload(str(target))  # unreadable: nothing keeps it
                update_spare()

        @reactive.effect
        @reactive.event(input.dataset)
        @guarded
        async def _dataset():
            name = input.dataset()
            if name:
                if name not in datasets:
                    raise InputError("the page sent an unknown data set: reload the page")
                path = logic.dataset_path(name)
                await load(path, name, dataset=name, shown=str(path))

        @render.ui
        @_quiet_ui
        def error_line():
            message, clicks = error.get()
            return ui.div(message, id="error-line", class_="one-line-error",
                          data_run=str(clicks)) if message else None

        @render.ui
        @_quiet_ui
        def data_summary():
            d = loaded.get()
            if d is None:
                return ui.p("Load a file or choose a data set.", class_="muted")
            df = d["df"]
            prof = d["profile"]
            rows = [(p.name, p.dtype, p.distinct, p.missing, "yes" if p.suggested else "", p.note) for p in prof]
            preview = df.head(8)
            return TagList(
                tags.h4(tags.span(d["name"], id="data-name"), f": {len(df)} records × {df.shape[1]} columns"),
                ui.p(d["note"], class_="warning-line", id="data-note") if d.get("note") else None,
                _table(["column", "type", "distinct values", "missing", "suggested QI", "note"], rows,
                       table_id="profile-table", numeric_from=2),
                tags.h5("First rows"),
                ui.div(_table([str(c) for c in preview.columns],
                              [tuple(r) for r in preview.itertuples(index=False)], table_id="preview-table",
                              numeric_from=0), style="overflow-x:auto"),
            )

        def _choices():
            d = loaded.get()
            if d is None:
                return {}, []
            return {str(i): str(p.name) for i, p in enumerate(d["profile"])}, d["profile"]

        @render.ui
        @_quiet_ui
        def columns_ui():
            choices, prof = _choices()
            if not prof:
                return ui.p("Load data first (tab 1).", class_="muted")
            def label(p):
                marks = [] if p.kind == "continuous" else [p.kind]
                if p.id_like:
                    marks.append("identifier?")
                return f"{p.name}  ({', '.join(marks)})" if marks else str(p.name)

            usable = {i: label(p) for i, p in zip(choices, prof) if p.kind != "other"}
            selected = [i for i, p in zip(choices, prof) if p.suggested]
            return TagList(
                ui.input_checkbox_group("columns", "Quasi-identifiers", usable, selected=selected),
                ui.p("Numbers are continuous unless declared nominal or ordinal (right); text columns are "
                     "nominal.", class_="muted"))

        @reactive.effect
        @reactive.event(input.strata, input.sample_weight)
        @guarded
        def _roles_leave_the_qis():
            """A column chosen as a stratum or the sample weight stops being a quasi-identifier
            (the library refuses a column in both roles): its box is unticked."""
            if "columns" not in input:
                return
            weight = input.sample_weight() if "sample_weight" in input else ""
            taken = set(input.strata() or ()) | ({weight} if weight else set())
            current = list(input.columns() or ())
            kept = [c for c in current if c not in taken]
            if kept != current:
                ui.update_checkbox_group("columns", selected=kept)

        @render.ui
        @_quiet_ui
        def roles_ui():
            choices, prof = _choices()
            if not prof:
                return None
            numeric = {i: str(p.name) for i, p in zip(choices, prof) if p.numeric}
            return TagList(
                ui.input_select("strata", "Strata (groups never cross them)", choices, multiple=True, size="5"),
                ui.input_select("sample_weight", "Sample weight column", {"": "(none)", **numeric}),
                ui.input_text("weights", "Variable weights (COLUMN=W, … ; others weigh 1)", ""),
                ui.input_select("nominal", "Numeric QI columns that are nominal codes", numeric, multiple=True,
                                size="4"),
                ui.input_select("ordinal", "Numeric QI columns that are ordinal codes", numeric, multiple=True,
                                size="4"),
                ui.input_select("distance", "Distance", {"euclidean": "euclidean (z-scores)",
                                                         "mahalanobis": "mahalanobis",
                                                         "robust": "robust (MCD covariance)"}),
                ui.input_select("aggregation", "A group publishes (continuous columns)",
                                {"mean": "mean", "median": "median", "trimmed": "trimmed mean",
                                 "onestep": "one-step (robust)"}),
                ui.input_text("trim", "Trimmed share at each end (trimmed mean; blank: 0.1)", ""),
            )

        @render.ui
        @_quiet_ui
        def method_ui():
            info = registry.get(input.method())
            items = [ui.p(info.summary, class_="muted", id="method-summary"),
                     ui.p(f"{info.family}; {info.complexity}; {info.paper}", class_="muted")]
            if not info.interruptible:
                items.append(ui.p("It may run past the time limit (it cannot stop inside a step); Cancel "
                                  "always stops it.", class_="muted"))
            if info.per_variable:
                items.append(ui.p("It groups each variable on its own: the published records are NOT "
                                  "k-anonymous.", class_="one-line-error"))
            for name, p in logic.method_params(info).items():
                ident = _param_id(info.name, name)
                label = f"{name}: {p.doc} ({p.constraint()}; default {p.default!r})"
                if p.kind in ("int", "float") and not p.nullable and p.choices is None:
                    items.append(ui.input_numeric(ident, label, p.default, min=p.low, max=p.high,
                                                  step=1 if p.kind == "int" else None))
                elif p.kind == "bool" and not p.nullable:
                    items.append(ui.input_checkbox(ident, label, bool(p.default)))
                elif p.choices is not None and not p.nullable:
                    items.append(ui.input_select(ident, label, {str(c): str(c) for c in p.choices},
                                                 selected=str(p.default)))
                elif p.kind == "method" and not p.nullable:
                    items.append(ui.input_select(ident, label, {n: n for n in method_names},
                                                 selected=str(p.default)))
                else:
                    default = "" if p.default is None else str(p.default)
                    items.append(ui.input_text(ident, label, default))
            return TagList(*items)

        def _param_values(info) -> dict:
            """The method's parameters as typed in the page, only those that differ from the defaults."""
            out = {}
            for name, p in logic.method_params(info).items():
                raw = input[_param_id(info.name, name)]() if _param_id(info.name, name) in input else None
                if raw is None:
                    continue
                if p.kind in ("int", "float") and not isinstance(raw, str):  # a numeric input
                    value = raw
                elif p.kind == "bool" and not p.nullable:
                    value = bool(raw)
                elif (p.choices is not None or p.kind == "method") and not p.nullable:
                    value = next((c for c in (p.choices or ()) if str(c) == raw), raw)
                else:
                    value = logic.parse_param_text(p, raw, info.name)
                out[name] = value
            values = registry.validate_params(info.name, out)  # typed and checked (ParameterError)
            return {name: values[name] for name in out
                    if values[name] != info.params[name].default
                    or type(values[name]) is not type(info.params[name].default)}

        def _spec() -> logic.RunSpec:
            from ..preprocess import check_k

            d = loaded.get()
            if d is None:
                raise InputError("load a file or choose a data set first")
            names = {str(i): p.name for i, p in enumerate(d["profile"])}

            def chosen(what: str, input_id: str, single: bool = False) -> list:
                return _picked(input[input_id](), names, what, single) if input_id in input else []

            columns = chosen("quasi-identifiers", "columns")
            if not columns:
                raise InputError("choose at least one quasi-identifier column")
            if input.k() is None:
                raise InputError("k must be a whole number, got nothing")
            k = _whole(input.k(), "k")
            check_k(k, len(d["df"]))  # before a process starts: the same message as the CLI's
            seed = _whole(input.seed(), "the seed") if input.seed() is not None else -1
            if seed < 0:
                raise InputError(f"the seed must be a non-negative whole number, got {input.seed()!r}")
            text = _text(input.time_limit())
            try:
                time_limit = float(text) if text else None
            except ValueError:
                raise InputError(f"the time limit must be a number of seconds, got {text[:40]!r}") from None
            if time_limit is not None and not (time_limit > 0 and math.isfinite(time_limit)):
                raise InputError(f"the time limit must be a positive number of seconds, got {text[:40]}")
            info = registry.get(input.method())
            strata = chosen("strata", "strata")
            weight = chosen("sample weight", "sample_weight", single=True)
            weights = logic.parse_weights(_text(input.weights()) if "weights" in input else "", columns)
            kind_of = {p.name: p.kind for p in d["profile"]}
            declared_nominal = chosen("nominal codes", "nominal")
            declared_ordinal = chosen("ordinal codes", "ordinal")
            both = set(declared_nominal) & set(declared_ordinal)
            if both:
                raise InputError(f"column(s) {', '.join(map(str, both))} cannot be both nominal and ordinal")
            outside = [c for c in declared_nominal + declared_ordinal if c not in columns]
            if outside:
                raise InputError(f"declared nominal/ordinal column(s) {', '.join(map(str, outside))} are not "
                                 "selected as quasi-identifiers")
            # declared explicitly (also the dtype's categories), so the command line reproduces the run
            categorical = [c for c in columns if c in declared_nominal or kind_of[c] in ("nominal", "text")]
            ordinal = [c for c in columns if c in declared_ordinal or kind_of[c] == "ordinal"]
            trim_text = _text(input.trim()) if "trim" in input else ""
            try:
                trim = float(trim_text) if trim_text else None
            except ValueError:
                raise InputError(f"the trimmed share must be a number, got {trim_text[:40]!r}") from None
            return logic.RunSpec(
                categorical=categorical, ordinal=ordinal,
                distance=_text(input.distance()) if "distance" in input else "euclidean",
                aggregation=_text(input.aggregation()) if "aggregation" in input else "mean", trim=trim,
                input_path=d["path"], input_name=d["name"], dataset=d["dataset"], k=k, method=info.name,
                columns=columns, strata=strata, sample_weight=weight[0] if weight else None, weights=weights,
                params=_param_values(info), time_limit=time_limit, seed=seed, shown_path=d["shown"],
                max_bytes=d["max_bytes"])

        @reactive.effect
        @reactive.event(input.run)
        @guarded
        def _run():
            if active.get() is not None:
                show_error("a run is already going: wait for it or cancel it")
                return
            try:
                spec = _spec()
            except Exception as exc:  # noqa: BLE001
                show_error(logic.one_line(exc))
                return
            show_error("")
            run_id = len(runs.get()) + 1
            handle = logic.RunHandle(spec, session_dir, run_id)
            handles.append(handle)
            runs.set(runs.get() + [(run_id, spec, handle)])
            active.set(handle)
            update_spare()  # the run's file is kept for its export

        @reactive.effect
        @reactive.event(input.cancel)
        @guarded
        def _cancel():
            handle = active.get()
            if handle is not None:
                handle.cancel()
                active.set(None)
                runs.set(list(runs.get()))
                tick.set(tick.get() + 1)

        def _poll_active() -> None:
            """One look at the current run: move the progress line on; at its end, show its results
            (or its error line)."""
            with reactive.isolate():
                handle = active.get()
                if handle is None:
                    return
                state = handle.poll()
                tick.set(tick.get() + 1)
                if state != "running":
                    active.set(None)
                    runs.set(list(runs.get()))
                    if state == "done":
                        shown_run.set(str(handle.run_id))
                        _update_navset("tabs", selected="results")
                    elif state == "error":
                        show_error(handle.error)

        async def _watch_runs() -> None:
            # The session's own timer task, not reactive.invalidate_later: shiny 1.8 prints a
            # traceback when that timer is cancelled (its effect invalidated by Run / Cancel, or the
            # session ending) while it waits for the reactive lock.
            while True:
                await asyncio.sleep(0.25)
                async with reactive.lock():
                    try:
                        _poll_active()
                    except Exception as exc:  # noqa: BLE001  (a bug of ours: say it, keep watching)
                        active.set(None)
                        show_error(f"internal error: {logic.one_line(exc)}")
                    await reactive.flush()

        watcher = asyncio.create_task(_watch_runs())

        @render.ui
        @_quiet_ui
        def progress_ui():
            tick.get()
            handle = active.get()
            if handle is None:
                done = [h for _, _, h in runs.get()]
                if done and done[-1].state == "cancelled":
                    return ui.div(f"run {done[-1].run_id} cancelled", id="run-status", class_="progress-line")
                return ui.div("ready", id="run-status", class_="progress-line")
            limit = handle.spec.time_limit
            if limit is None and handle.spec.method == "auto":  # auto's own default budget
                from ..methods.auto import DEFAULT_BUDGET

                limit = DEFAULT_BUDGET
            elapsed = handle.elapsed
            text = f"running {handle.spec.method}: {handle.stage}"
            if handle.message:
                text += f" ({handle.message})"
            text += f" — {elapsed:.0f} s" + (f" of {limit:g} s" if limit else "")
            fraction = handle.fraction if handle.fraction is not None else (
                min(elapsed / limit, 1.0) if limit else None)
            bar = tags.progress(value=f"{fraction:.3f}", max="1", style="width:100%") if fraction is not None \
                else tags.progress(style="width:100%")
            return ui.div(text, bar, id="run-status", class_="progress-line running")

        def finished():
            return [(rid, spec, h) for rid, spec, h in runs.get() if h.state == "done"]

        @render.ui
        @_quiet_ui
        def results_ui():
            done = finished()
            if not done:
                return ui.p("No finished run yet.", class_="muted")
            choices = {str(rid): f"run {rid}: {spec.method}, k = {spec.k}, {spec.input_name}"
                       for rid, spec, _ in done}
            with reactive.isolate():
                current = shown_run.get()
            selected = current if current in choices else str(done[-1][0])
            return TagList(ui.input_select("result_run", "Run", choices, selected=selected),
                           ui.output_ui("result_detail"))

        @render.ui
        @_quiet_ui
        def result_detail():
            done = {str(rid): (spec, h) for rid, spec, h in finished()}
            key = input.result_run()
            if key not in done:
                return None
            spec, handle = done[key]
            f = handle.figures
            figures = [("information loss IL (%)", f["information_loss"]),
                       ("lower bound on IL (%)", f["lower_bound_il"] if f["lower_bound_il"] is not None
                        else "not known"),
                       ("gap to the bound (%)", f["gap"]),
                       ("groups", f["groups"]), ("group sizes", f"{f['group_size_min']} … {f['group_size_max']}"),
                       ("records", f["records"]), ("seconds", f["seconds"])]
            if "weighted_information_loss" in f:
                figures.insert(1, ("weighted IL (%)", f["weighted_information_loss"]))
            u, r = f["utility"], f["risk"]
            measures = [
                ("record linkage risk, DBRL (%)", _pct(r.get("record_linkage_dbrl"))),
                ("interval disclosure risk, p = 10% (%)", _pct(r.get("interval_disclosure"))),
                ("smallest group of identical published QI values", r.get("smallest_group")),
                ("IL1s", u.get("il1s")),
                ("correlation discrepancy Δr (mean)", u.get("delta_r_mean")),
                ("relative eigenvalue discrepancy (%)", u.get("eigenvalue_discrepancy_percent")),
                ("first-PC weight change ΔW (%)", u.get("delta_w")),
            ]
            export = [
                tags.h5("Export"),
                ui.download_button("download_data", f"Protected data ({logic.output_suffix(spec.input_name)})"),
                " ", ui.download_button("download_report", "HTML report"),
                " ", ui.download_button("download_reproduce", "Reproduce (.txt)"),
                tags.pre(spec.reproduce_text(), class_="reproduce", id="reproduce"),
            ]
            parts = [tags.h4(f"Run {key}: {spec.method}, k = {spec.k}, {spec.input_name}"),
                     tags.p("IL = ", tags.b(f"{f['information_loss']:.6f}", id="il-value"), " %")]
            for message in f.get("warnings", []):
                parts.append(tags.p("warning: ", message, class_="warning-line"))
            if f.get("per_variable"):
                parts.append(tags.p("Each variable was grouped on its own: combinations of values are NOT "
                                    "k-anonymous.", class_="one-line-error"))
            parts.append(ui.row(
                ui.column(3, tags.h5("Information loss"), _table(None, figures, table_id="result-figures")),
                ui.column(4, tags.h5("Disclosure risk and utility"),
                          _table(None, measures, table_id="result-measures")),
                ui.column(5, *export)))
            if f.get("portfolio"):
                rows = [(("* " if r.get("method") == f.get("winner") else "") + str(r.get("method")),
                         r.get("il"), r.get("lower_bound_il"), r.get("seconds"), r.get("status"))
                        for r in f["portfolio"]]
                parts += [tags.h5("Portfolio (auto; * the winner)"),
                          _table(["method", "IL (%)", "lower bound IL (%)", "seconds", "status"], rows,
                                 table_id="portfolio-table")]
            parts += [
                tags.h5("Report: measures and figures"),
                tags.iframe(srcdoc=handle.report_path.read_text(encoding="utf-8"), sandbox="", class_="report",
                            id="report-frame", title="report"),
            ]
            return TagList(*parts)

        def _chosen():
            """(spec, handle) of the finished run the Results tab shows; a download asked for before
            any (or for a run that is not finished) is a 404 with one line."""
            done = {str(rid): (spec, h) for rid, spec, h in finished()}
            key = input.result_run() if "result_run" in input else None
            if not isinstance(key, str) or key not in done:
                raise HTTPException(404, "microagg app: no finished run to download")
            return done[key]

        def _exported(write):
            """A download's file, or a 500 with one line (never a traceback) if writing it fails."""
            try:
                return write()
            except HTTPException:
                raise
            except Exception as exc:  # noqa: BLE001
                raise HTTPException(500, f"microagg app: {logic.one_line(exc)}") from None

        @_download(filename=lambda: _chosen()[0].output_name())
        def download_data():
            spec, handle = _chosen()

            def write():
                path = session_dir / f"export-{handle.run_id}" / spec.output_name()
                path.parent.mkdir(mode=0o700, exist_ok=True)
                logic.write_protected(spec.input_path, handle.load_result(), path)
                return str(path)

            return _exported(write)

        @_download(filename=lambda: f"report-run-{_chosen()[1].run_id}.html")
        def download_report():
            return str(_chosen()[1].report_path)

        @_download(filename=lambda: f"reproduce-run-{_chosen()[1].run_id}.txt")
        def download_reproduce():
            return [_chosen()[0].reproduce_text()]  # known before the answer starts (a 404 stays a 404)

        @render.ui
        @_quiet_ui
        def history_ui():
            tick.get()
            all_runs = runs.get()
            if not all_runs:
                return ui.p("No run yet.", class_="muted")
            rows = [tuple(logic.history_row(rid, spec, h).values()) for rid, spec, h in all_runs]
            header = list(logic.history_row(*all_runs[0]).keys())
            return TagList(tags.h4("This session's runs"), _table(header, rows, table_id="history-table"))

        @render.ui
        @_quiet_ui
        def compare_ui():
            done = finished()
            if len(done) < 2:
                return ui.p("Finish two runs to compare them side by side.", class_="muted")
            choices = {str(rid): f"run {rid}: {spec.method}, k = {spec.k}" for rid, spec, _ in done}
            return TagList(
                tags.h4("Compare two runs"),
                ui.row(ui.column(3, ui.input_select("compare_a", "Run A", choices, selected=str(done[-2][0]))),
                       ui.column(3, ui.input_select("compare_b", "Run B", choices, selected=str(done[-1][0])))),
                ui.output_ui("compare_table"),
                ui.input_action_button("export_a", "Show and export A"), " ",
                ui.input_action_button("export_b", "Show and export B"),
            )

        @render.ui
        @_quiet_ui
        def compare_table():
            done = {str(rid): (spec, h.figures) for rid, spec, h in finished()}
            a, b = input.compare_a(), input.compare_b()
            if a not in done or b not in done:
                return None
            return _table(["", f"run {a}", f"run {b}"], logic.compare_table(done[a], done[b]),
                          table_id="compare-table")

        def _export(which):
            key = input.compare_a() if which == "a" else input.compare_b()
            shown_run.set(key)
            ui.update_select("result_run", selected=key)
            _update_navset("tabs", selected="results")

        @reactive.effect
        @reactive.event(input.export_a)
        @guarded
        def _export_a():
            _export("a")

        @reactive.effect
        @reactive.event(input.export_b)
        @guarded
        def _export_b():
            _export("b")

        def _ended():
            watcher.cancel()
            for h in handles:
                h.cancel()
            logic.cleanup_workdir(session_dir)
            budget.forget(session.id)

        session.on_ended(_ended)

    return App(app_ui, server)


def _pct(x):
    return None if x is None else 100 * x


def _param_id(method: str, name: str) -> str:
    return "param_" + "".join(ch if ch.isalnum() else "_" for ch in f"{method}__{name}")
