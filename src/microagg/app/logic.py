"""What the app does, without the web framework: reading, column profiles, run specifications
(the declared run options of a ``microaggregate`` call and its "reproduce" command and call),
the checks before a run and the run's worker process.

Everything here is plain Python and testable without a browser (tests/test_app.py); so are the
generated controls (``controls``) and the figures shown for a run (``figures``). The Shiny page
(``microagg.app.page`` and its tabs, ``microagg.app.tabs``) only wires them to inputs and outputs.
"""

from __future__ import annotations

import dataclasses
import html
import multiprocessing
import os
import pickle
import re
import signal
import time
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

#: Private folders (the app's, its sessions'): no error line shows a path inside one.
_PRIVATE_ROOTS: set = set()
_PRIVATE_PATH = re.compile(r"""[^\s'"]*microagg-app-[^\s'"]*""")  # a path in any app's private folder


def private_text(text: str, roots=()) -> str:
    """``text`` with every path inside a private folder (which holds the session id) replaced by
    the file's own name: error lines name the file the user gave, never where the app keeps it."""
    for root in sorted({*map(str, roots), *_PRIVATE_ROOTS}, key=len, reverse=True):
        text = re.sub(re.escape(root) + r"""[^\s'"]*""", lambda m: Path(m.group()).name, text)
    return _PRIVATE_PATH.sub(lambda m: Path(m.group()).name, text)


def one_line(exc: BaseException, roots=()) -> str:
    """The message shown for an error: one line, never a traceback, never a private path.

    A user error (InputError and its family) shows its own first line; anything else is named as
    an internal error with its type, so a bug is recognisable without leaking a traceback.
    """
    from ..errors import InputError

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = private_text(text, roots)
    if isinstance(exc, InputError):
        return text
    return f"internal error ({type(exc).__name__}): {text}"


# ---------------------------------------------------------------------------- reading and writing
def read_input(path, max_bytes: int | None = None) -> pd.DataFrame:
    """Read a data file in any format the CLI reads (the one reading function of the app);
    ``max_bytes``: an upload's bound on its decompressed bytes and its cells (microagg.read_limits)."""
    from .. import io, read_limits

    with read_limits.limited(max_bytes):
        return io.read(path).frame


def read_suffixes() -> tuple:
    """The suffixes of the files the app reads (longest first), from the format registry."""
    from .. import io

    return io.read_suffixes()


def output_suffix(input_name: str) -> str:
    """The suffix of the protected file: the input's own where it can be written, else the one
    its format is written as (CSV for an unknown one), from the format registry."""
    from .. import io

    return io.output_suffix(input_name)


def published_path(workdir, run_id: int, spec) -> Path:
    """Where a run's process publishes its file (the download serves it as it is)."""
    return Path(workdir) / f"run-{run_id}" / spec.output_name()


def input_file(spec) -> Path:
    """The file a run protects: the upload, or the bundled data set's own file."""
    return dataset_path(spec.dataset) if spec.dataset else Path(spec.input_path)


def _silence_stdout() -> None:
    """A run's process prints nothing on the app's terminal (solver banners write to fd 1)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def load_input(spec) -> pd.DataFrame:
    """The data of a run: a bundled data set with its dtypes, else the file read."""
    if spec.dataset:
        return load_dataset(spec.dataset)
    return read_input(spec.input_path, spec.max_bytes)


def load_dataset(name: str) -> pd.DataFrame:
    """A bundled data set with its dtypes."""
    from .. import datasets

    return datasets.load(name)


def dataset_roles(name: str) -> dict:
    from .. import datasets

    return datasets.roles(name) if hasattr(datasets, "roles") else {}


def dataset_names() -> list[str]:
    """The bundled data sets (census, tarragona, eia, and testdata once it is bundled)."""
    from .. import datasets

    return list(datasets.names())


def dataset_path(name: str) -> Path:
    from .. import datasets

    return Path(str(datasets.path(name)))


# ---------------------------------------------------------------------------- column profile
@dataclass
class ColumnProfile:
    name: Any
    dtype: str
    distinct: int
    missing: int
    numeric: bool  # numbers (a continuous quasi-identifier unless declared a category)
    kind: str  # "continuous", "nominal", "ordinal", "text" or "other": what the column can be as a QI
    id_like: bool
    suggested: bool  # suggested as a quasi-identifier
    note: str

    def label(self) -> str:
        """The column as the quasi-identifier list names it: its name, and its kind when it is not
        continuous, or a possible identifier."""
        marks = [] if self.kind == "continuous" else [self.kind]
        if self.id_like:
            marks.append("identifier?")
        return f"{self.name}  ({', '.join(marks)})" if marks else str(self.name)


def column_kind(series: pd.Series) -> str:
    """What a column is as a quasi-identifier by its dtype (as ``microaggregate`` reads it)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return "ordinal" if series.dtype.ordered else "nominal"
    if pd.api.types.is_bool_dtype(series):
        return "nominal"
    if pd.api.types.is_numeric_dtype(series):
        return "continuous"
    if pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series):
        return "text"
    return "other"


def profile(df: pd.DataFrame, roles: dict | None = None) -> list[ColumnProfile]:
    """Each column's type, number of distinct values and missing values, and whether it is
    suggested as a quasi-identifier: numeric, without missing values, and a default
    quasi-identifier by the library's rule (preprocess.not_a_default_qi: not an identifier, a
    weight or category codes), so the app suggests what the CLI uses. ``roles`` (a bundled data
    set's ``datasets.roles``) marks identifiers and weights besides."""
    from ..columns import looks_like_identifier, looks_like_weight, not_a_default_qi

    rows = []
    roles = roles or {}
    coded = set(df.attrs.get("category_codes", ()))
    for c in df.columns:
        s = df[c]
        kind = column_kind(s)
        numeric = kind == "continuous"
        distinct = int(s.nunique(dropna=True))
        missing = int(s.isna().sum())
        role = roles.get(str(c))
        # an identifier rather than an attribute: named like one, or integers that number the
        # records (read once: it scans the column)
        identifier = looks_like_identifier(c, s) if numeric or role is None else None
        id_like = role == "id" or (role is None and identifier is not None)
        weight = role == "weight" or looks_like_weight(c) is not None
        why_not = not_a_default_qi(c, s, labelled=c in coded, identifier=identifier) if numeric else None
        notes = []
        if id_like:
            notes.append("looks like an identifier" if role is None else "an identifier")
        elif weight:
            notes.append("a weight")
        elif numeric and distinct <= 1:
            notes.append("constant")
        elif why_not:
            notes.append(f"{why_not.split(';')[0]}? declare it nominal to protect it as a category")
        if kind in ("nominal", "ordinal"):
            notes.append(f"categorical ({kind})")
        elif kind == "text":
            notes.append("text: a stratum, or a nominal quasi-identifier")
        if missing:
            notes.append(f"{missing} missing")
        suggested = numeric and not (id_like or weight or why_not or missing) and distinct > 1
        rows.append(ColumnProfile(c, str(s.dtype), distinct, missing, numeric, kind, id_like, suggested,
                                  "; ".join(notes)))
    return rows


# ---------------------------------------------------------------------------- run specification
#: the run options every reproduce command and call states, even at their defaults
STATED = ("k", "method", "columns", "seed")


@dataclass(frozen=True)
class RunSpec:
    """One protection run: its input and a ``microaggregate`` call on it, as the declared run
    options (``options.RUN_OPTIONS``) and the method's declared parameters, nothing written here
    by hand. Plain data (sent to the run's process as a dict).

    ``options``: run option -> value as given (validated by ``options.validate_run``);
    ``params``: the method's parameters that differ from their defaults; ``dataset``: a bundled
    data set's name (the Python call loads it); ``shown_path``: the input as the user names it in
    a command (default ``input_name``); ``max_bytes``: an upload's reading bound; ``explored``:
    (the result file's name, the run's id) for a run of an exploration (Map tab), whose options
    carry that run's kept partition (``labels``): it is reproduced by ``protect --from-explore``."""

    input_path: str
    input_name: str
    options: dict
    params: dict = field(default_factory=dict)
    dataset: str | None = None
    shown_path: str | None = None
    max_bytes: int | None = None
    explored: tuple | None = None

    @classmethod
    def of(cls, input_path, input_name, *args, dataset=None, shown_path=None, max_bytes=None, explored=None,
           **kwargs) -> "RunSpec":
        """The run ``microaggregate(data, *args, **kwargs)`` would make (positional options in the
        contract's order; run options and method parameters by name), validated first: a bad one
        is a ParameterError in one line, the command line's."""
        from ..options import split_arguments, validate_run

        options, params = split_arguments(args, kwargs)
        run = validate_run(options, params)
        declared = run.info.params
        differing = {name: value for name, value in params.items()
                     if run.params[name] != declared[name].default or type(run.params[name]) is not type(
                         declared[name].default)}
        return cls(str(input_path), str(input_name), dict(options), differing, dataset, shown_path, max_bytes,
                   None if explored is None else (str(explored[0]), int(explored[1])))

    def option(self, name: str):
        """A run option's value (its default when not given)."""
        from ..options import option

        return self.options[name] if name in self.options else option(name).default

    @property
    def k(self) -> int:
        return self.option("k")

    @property
    def method(self) -> str:
        return self.option("method")

    @property
    def columns(self) -> list:
        return list(self.option("columns") or [])

    @property
    def time_limit(self) -> float | None:
        return self.option("time_limit")

    def run(self):
        """The validated run (``options.Run``): every option with its default, the method's entry."""
        from ..options import validate_run

        return validate_run(self.options, self.params)

    def api_kwargs(self) -> dict:
        """The keyword arguments of ``microaggregate`` (run options and method parameters)."""
        return {**self.options, **self.params}

    def stated_options(self) -> dict:
        """The options a reproduce command or call writes: those given, and STATED ones always."""
        return {**{name: self.option(name) for name in STATED}, **self.options}

    def changed_options(self) -> dict:
        """The run options that differ from their defaults, in declaration order."""
        from ..options import RUN_OPTIONS

        return {p.name: self.options[p.name] for p in RUN_OPTIONS
                if p.name in self.options and not _same(self.options[p.name], p.default)}

    def output_name(self) -> str:
        suffix = output_suffix(self.input_name)
        name = Path(self.input_name).name
        stem = name[: -len(suffix)] if name.lower().endswith(suffix) else Path(name).stem
        return f"{stem or 'data'}-{self.method}-k{self.k}{suffix}"

    def cli_command(self) -> str:
        """The ``microagg protect`` command that gives the same output (``options.command_line``:
        a name starting with '-' is './-name', a value starting with '-' is joined to its flag); for
        a run of an exploration, ``protect --from-explore RESULT.json --pick N``."""
        from ..options import command_line

        if self.explored is not None:
            from ..explore import from_explore_command

            return from_explore_command(self.shown_path or self.input_name, self.output_name(), *self.explored)
        return command_line(self.shown_path or self.input_name, self.output_name(), self.stated_options(),
                            self.params)

    def python_snippet(self) -> str:
        """The Python call that gives the same output (``options.python_call``); for a run of an
        exploration, with its kept partition read from the result (``explore.load``)."""
        from ..options import python_call

        source = f"microagg.datasets.path({self.dataset!r})" if self.dataset else repr(self.shown_path or self.input_name)
        files = f"{source}, {self.output_name()!r}"
        lead = "import microagg\n"
        if self.explored is not None:
            result, run_id = self.explored
            lead += f"doc, labels = microagg.explore.load({result!r})  # and its .labels.npz beside it\n"
            files += f",\n    labels=labels[{run_id}]"
        # the command line's publication: written, read back, verified, with its manifest
        return f"{lead}{python_call(self.stated_options(), self.params, files, 'protect')}print(res.summary())\n"

    def reproduce_text(self) -> str:
        from ..options import unlisted_names

        note = ("# A time limit makes iterative methods depend on the machine's speed: the same command\n"
                "# can stop at a different point on another machine or under another load.\n"
                if self.time_limit is not None else "")
        if self.explored is not None:
            from ..explore import labels_path

            note = (f"# {self.explored[0]} is the exploration's result (the Map tab's download), its partitions in\n"
                    f"# {labels_path(Path(self.explored[0]).name).name} beside it.\n")
        elif unlisted_names(self.options):  # the command line splits column lists at commas
            note += "# A column name holds a comma, which the command line cannot list: use the Python call.\n"
        return f"# command line\n{note}{self.cli_command()}\n\n# Python\n{self.python_snippet()}\n"


def _same(a, b) -> bool:
    """Equal values of an option (a list and a tuple of the same names are the same)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    if a is None or b is None or isinstance(a, bool) != isinstance(b, bool):
        return a is b
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # e.g. an array
        return False


def with_dtype_kinds(options: dict, prof: list) -> dict:
    """The options with the quasi-identifiers whose dtype makes them categories (a pandas
    Categorical, booleans, text: nominal; an ordered Categorical: ordinal) declared as such, as
    ``microaggregate`` reads them: the reproduce command, which reads a file without dtypes, then
    makes the same run. A column the user declared keeps its declared kind."""
    kind_of = {p.name: p.kind for p in prof}
    columns = list(options.get("columns") or [])
    categorical, ordinal = list(options.get("categorical") or []), list(options.get("ordinal") or [])
    declared = set(categorical) | set(ordinal)
    categorical += [c for c in columns if c not in declared and kind_of.get(c) in ("nominal", "text")]
    ordinal += [c for c in columns if c not in declared and kind_of.get(c) == "ordinal"]
    return {**options, "categorical": categorical or None, "ordinal": ordinal or None}


def check_against_data(spec: RunSpec, df: pd.DataFrame) -> None:
    """The checks a run makes before any method starts, made before its process starts: the
    declared options (``validate_run``) and the pipeline's data hook (``check_params_vs_input``:
    columns, kinds, strata, weights, k against n) on the loaded data, so the page shows the
    command line's one-line error at once. Warnings are the run's to report."""
    from .. import pipeline

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipeline.check_params_vs_input(spec.run(), pipeline.Source(df, "frame", df.shape))


# ---------------------------------------------------------------------------- the worker process
#: Measures and figures of a run look at most this many quasi-identifier columns: their cost grows
#: with the square of the columns (correlation matrices, principal axes, heat maps), and a
#: 5,000-column run spent minutes there.
REPORT_COLUMNS = 40


def measured_view(res):
    """(the result the measures and the report look at, a note saying so or None): the run itself
    on at most REPORT_COLUMNS quasi-identifier columns, the first ones (IL, SSE, the bound and the
    group sizes stay the whole run's)."""
    if len(res.columns) <= REPORT_COLUMNS:
        return res, None
    chosen = list(res.columns)[:REPORT_COLUMNS]
    names = {str(c) for c in chosen}
    publication = dataclasses.replace(
        res.publication, kinds={c: k for c, k in res.publication.kinds.items() if c in names})
    audit = dataclasses.replace(
        res.audit, categories={c: m for c, m in res.audit.categories.items() if str(c) in names})
    changes = {"columns": chosen, "scaler": None, "standardized": None, "publication": publication, "audit": audit}
    if res.per_variable:  # one labelling (and group sizes) per column
        changes["labels"] = res.labels[:, :REPORT_COLUMNS]
        changes["group_sizes"] = list(res.group_sizes)[:REPORT_COLUMNS]
    note = (f"measures and figures on the first {REPORT_COLUMNS} of the {len(res.columns):,} quasi-identifier "
            "columns (their cost grows with the square of the columns); IL is the whole run's")
    return dataclasses.replace(res, **changes), note


def progress_sender(post, t0: float):
    """A run's progress callback that posts ("progress", stage, fraction, message, elapsed) events,
    at most five a second (and the last, at fraction 1)."""
    last = [0.0]

    def progress(stage, fraction=None, message=""):
        now = time.perf_counter()
        if now - last[0] >= 0.2 or (fraction is not None and fraction >= 1):
            last[0] = now
            post(("progress", str(stage), None if fraction is None else float(fraction), str(message), now - t0))

    return progress


def publish_run(spec: RunSpec, workdir, run_id: int, progress=False, started=None):
    """(the Result, the input as read) of a run published through the command line's publication
    stage (``publication``): the file the download serves is the one written, read back with its
    format's own library, checked k-anonymous on its key variables and given its manifest."""
    from .. import publication, read_limits

    out = published_path(workdir, run_id, spec)
    out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    run = spec.run()
    with read_limits.limited(spec.max_bytes):
        opened = publication.open_input(input_file(spec), out, spec.options, run, read_options={})
    if started is not None:
        started()
    res = publication.publish_table(opened, spec.params, run, command_input=spec.shown_path or spec.input_name,
                                    progress=progress)
    return res, opened.table.frame


def _worker(spec: RunSpec, workdir: str, run_id: int, events) -> None:
    """Run one protection in this (spawned) process and report through ``events`` (the writing
    end of a pipe): ("progress", stage, fraction, message, elapsed), then ("done", figures) or
    ("error", message). The Result is pickled to ``workdir/run-<id>.pkl`` and the HTML report
    written next to it. Started by ``run_process.start``, which has tied this process to the app's."""
    t0 = time.perf_counter()
    post = events.send
    try:
        from ..errors import InputError
        from ..report import render_report
        from .figures import option_text, run_figures

        progress = progress_sender(post, t0)
        _silence_stdout()
        post(("progress", "reading the data", None, "", 0.0))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res, df = publish_run(spec, workdir, run_id, progress,
                                  lambda: post(("progress", spec.method, None, "", time.perf_counter() - t0)))
        post(("progress", "measures and report", None, "", time.perf_counter() - t0))
        view, note = measured_view(res)
        figures = run_figures(view, df)
        figures["warnings"] = list(dict.fromkeys(one_line(w.message, (workdir,)) for w in caught))
        # the report lists the run's method, k, quasi-identifiers and parameters itself
        settings = {"input": spec.input_name, "seed": spec.option("seed"),
                    **{name.replace("_", " "): option_text(value) for name, value in spec.changed_options().items()
                       if name not in ("k", "method", "columns", "seed")}}
        if note:
            figures["warnings"].append(note)
            settings["measures and figures"] = note
        try:
            report = render_report(view, df, settings)
        except InputError as exc:  # e.g. no continuous QI column to draw
            report = f"<!DOCTYPE html><html><body><p>No report: {html.escape(one_line(exc, (workdir,)))}</p></body></html>"
        base = Path(workdir) / f"run-{run_id}"
        base.with_suffix(".html").write_text(report, encoding="utf-8")
        with open(base.with_suffix(".pkl"), "wb") as fh:
            pickle.dump(res, fh, protocol=pickle.HIGHEST_PROTOCOL)
        post(("done", figures))
    except BaseException as exc:  # noqa: BLE001 - everything becomes one line for the page
        try:
            post(("error", one_line(exc, (workdir,))))
        except (OSError, ValueError):  # the app has gone (or cancelled the run): nobody to tell
            pass


class RunHandle:
    """One protection (or, ``job="explore"``, one exploration: ``app.grid``) running in a spawned
    process; ``poll()`` drains its events, ``cancel()`` terminates it (works inside a numba
    kernel, where no Python code can check a flag).

    The process starts in ``run_process.start``, which ties its life to this one's before any
    heavy import; events come through a one-way pipe (no semaphore left behind at a kill)."""

    def __init__(self, spec, workdir, run_id: int, job: str = "protect"):
        from . import run_process

        ctx = multiprocessing.get_context("spawn")
        self.spec = spec
        self.run_id = run_id
        self.workdir = Path(workdir)
        self.started = time.perf_counter()
        self.ended: float | None = None
        self.state = "running"  # running | done | error | cancelled
        self.stage, self.fraction, self.message = "starting", None, ""
        self.figures: dict | None = None
        self.error: str | None = None
        reader, writer = ctx.Pipe(duplex=False)
        # the spec goes as plain data: unpickling it must not import this (heavy) module first
        self.process = ctx.Process(target=run_process.start, daemon=True,
                                   args=(os.getpid(), dataclasses.asdict(spec), str(workdir), run_id, writer, job))
        blocked = hasattr(signal, "pthread_sigmask")  # inherited by the child until run_process ignores it
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if blocked else None
        try:
            self.process.start()
        finally:
            if blocked:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        writer.close()  # the child holds the writing end: its exit ends the pipe
        self.events = reader
        _LIVE.add(self)

    @property
    def elapsed(self) -> float:
        """Seconds since the start, until the run ended."""
        end = self.ended if self.ended is not None else time.perf_counter()
        return end - self.started

    @property
    def report_path(self) -> Path:
        return self.workdir / f"run-{self.run_id}.html"

    @property
    def result_path(self) -> Path:
        return self.workdir / f"run-{self.run_id}.pkl"

    def _drain(self, timeout: float) -> bool:
        """Handle the events that arrive within ``timeout`` seconds; False once the pipe has ended."""
        try:
            while self.state == "running" and self.events.poll(timeout):
                self._handle(self.events.recv())
        except (EOFError, OSError):
            return False
        return True

    def poll(self) -> str:
        """Read every pending event; returns the state."""
        if self.state != "running":
            return self.state
        self._drain(0)
        if self.state == "running" and not self.process.is_alive():
            # the process has ended: its last event may still be in the pipe for a moment
            self._drain(0.5)
            if self.state == "running":
                self.error = f"the run stopped unexpectedly (exit code {self.process.exitcode})"
                self.state = "error"
        if self.state != "running":
            self.process.join(timeout=5)
            self._close_events()
        return self.state

    def _handle(self, event) -> None:
        if event[0] == "progress":
            _, self.stage, self.fraction, self.message, _ = event
        elif event[0] == "done":
            self.figures, self.state = event[1], "done"
        elif event[0] == "error":
            self.error, self.state = event[1], "error"

    def _close_events(self) -> None:
        """Release the pipe once the run is over."""
        if self.ended is None:
            self.ended = time.perf_counter()
        if self.events is not None:
            self.events.close()
            self.events = None

    def cancel(self) -> None:
        if self.state == "running":
            self.process.terminate()
            self.process.join(timeout=5)
            if self.process.is_alive():
                self.process.kill()
                self.process.join(timeout=5)
            self.state = "cancelled"
        self._close_events()

    def load_result(self):
        with open(self.result_path, "rb") as fh:
            return pickle.load(fh)


_LIVE: "weakref.WeakSet[RunHandle]" = weakref.WeakSet()


def progress_line(handle: RunHandle) -> tuple[str, float | None]:
    """(the progress line of a running run, its fraction done or None): the stage and message the
    run reported, the seconds so far and of its time limit (without one, a run is bounded by work:
    auto's own cap is a work budget, not seconds)."""
    limit = handle.spec.time_limit
    elapsed = handle.elapsed
    text = f"running {handle.spec.method}: {handle.stage}"
    if handle.message:
        text += f" ({handle.message})"
    text += f" — {elapsed:.0f} s" + (f" of {limit:g} s" if limit else "")
    fraction = handle.fraction if handle.fraction is not None else (min(elapsed / limit, 1.0) if limit else None)
    return text, fraction


def stop_all_runs() -> None:
    """Terminate every run still going (the server is stopping)."""
    for handle in list(_LIVE):
        handle.cancel()


def fmt(x, digits: int = 4) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def private_workdir() -> Path:
    """A folder only this user can read (mode 0700), for uploads, results and reports; no error
    line shows a path inside it (``private_text``)."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="microagg-app-"))
    _PRIVATE_ROOTS.update({str(path), os.path.realpath(path)})
    return path


def cleanup_workdir(path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
