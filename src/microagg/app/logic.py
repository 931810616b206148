"""What the app does, without the web framework: reading, column profiles, run specifications,
the "reproduce" snippets, the run worker process and the figures shown for a run.

Everything here is plain Python and testable without a browser (tests/test_app.py). The Shiny
page (``microagg.app.page``) only wires these functions to inputs and outputs.
"""

from __future__ import annotations

import dataclasses
import html
import math
import multiprocessing
import os
import pickle
import re
import shlex
import signal
import time
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
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


# Suffixes written back in the input's own format (longest first: ".csv.gz" before ".gz").
_IO_SUFFIXES = (".csv.gz", ".tsv.gz", ".txt.gz", ".tab.gz", ".csv", ".tsv", ".txt", ".tab", ".parquet", ".pq",
                ".dta", ".sav", ".zsav", ".xpt", ".xlsx")
_READ_ONLY_AS = {".sas7bdat": ".xpt"}  # SAS data sets are written as SAS transport files


def read_suffixes() -> tuple:
    """The suffixes of the files the app reads (longest first)."""
    return _IO_SUFFIXES + tuple(_READ_ONLY_AS)


def output_suffix(input_name: str) -> str:
    """The suffix of the protected file: the input's own where it can be written, else .csv."""
    name = str(input_name).lower()
    for suffix in _IO_SUFFIXES:
        if name.endswith(suffix):
            return suffix
    return _READ_ONLY_AS.get(Path(name).suffix, ".csv")


def write_protected(input_path, res, path) -> Path:
    """Write the protected data to ``path`` as ``microagg protect`` does: a copy of the input file
    in which only the quasi-identifier cells changed (formats, labels, text of the other cells kept)."""
    from .. import io

    published = {c: res.data[c].to_numpy() for c in res.columns}
    return io.write(io.read(input_path), Path(path), published)


def _silence_stdout() -> None:
    """A run's process prints nothing on the app's terminal (solver banners write to fd 1)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def load_input(spec) -> pd.DataFrame:
    """The data of a run: a bundled data set with its dtypes, else the file read."""
    if spec.dataset:
        from .. import datasets

        return datasets.load(spec.dataset)
    return read_input(spec.input_path, spec.max_bytes)


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
    from ..preprocess import looks_like_identifier, looks_like_weight, not_a_default_qi

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


# ---------------------------------------------------------------------------- method parameters
def method_params(info) -> dict:
    """name -> Param of a registered method (the registry's declarations)."""
    return dict(info.params)


def parse_param_text(param, text: str, method: str):
    """A parameter's value from an input box's text, typed by its declaration; '' is the default."""
    if text is None or str(text).strip() == "":
        return param.default
    return param.parse(str(text), method)


def parse_weights(text: str | None, columns: list) -> dict | None:
    """Variable weights typed as "COL=W, COL=W" (others weigh 1) or "W1, W2, ..." in QI order."""
    from ..errors import InputError

    if text is None or not text.strip():
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    named = ["=" in t for t in items]
    if any(named) and not all(named):
        raise InputError(f"variable weights mix NAME=VALUE and plain values: {text!r}")
    try:
        if all(named):
            out = {}
            for t in items:
                name, value = t.rsplit("=", 1)
                out[name.strip()] = float(value)
            return out
        values = [float(t) for t in items]
    except ValueError:
        raise InputError(f"variable weights must be numbers: {text!r}") from None
    if len(values) != len(columns):
        raise InputError(f"{len(values)} variable weight(s) for {len(columns)} quasi-identifier column(s)")
    return {c: v for c, v in zip(columns, values)}


# ---------------------------------------------------------------------------- run specification
@dataclass
class RunSpec:
    """Everything one protection run needs; picklable (sent to the worker process)."""

    input_path: str  # the file read (an upload, a bundled data set's file, or the FILE argument)
    input_name: str  # the name the user knows it by (upload's file name, data set name)
    k: int
    method: str
    columns: list
    dataset: str | None = None  # bundled data set name, for the Python snippet
    strata: list = field(default_factory=list)
    sample_weight: Any = None
    weights: dict | None = None
    params: dict = field(default_factory=dict)  # only the ones that differ from the defaults
    time_limit: float | None = None
    seed: int = 0
    shown_path: str | None = None  # the input as the user names it in a command (default input_name)
    categorical: list = field(default_factory=list)  # nominal QI columns (declared)
    ordinal: list = field(default_factory=list)  # ordinal QI columns (declared)
    distance: str = "euclidean"
    aggregation: str = "mean"
    trim: float | None = None
    max_bytes: int | None = None  # an upload's reading bound (the app's upload limit)

    def api_kwargs(self) -> dict:
        kw: dict = {"k": self.k, "method": self.method, "columns": list(self.columns), "seed": self.seed}
        if self.time_limit is not None:
            kw["time_limit"] = self.time_limit
        if self.strata:
            kw["strata"] = list(self.strata)
        if self.sample_weight is not None:
            kw["sample_weight"] = self.sample_weight
        if self.weights:
            kw["weights"] = dict(self.weights)
        if self.categorical:
            kw["categorical"] = list(self.categorical)
        if self.ordinal:
            kw["ordinal"] = list(self.ordinal)
        if self.distance != "euclidean":
            kw["distance"] = self.distance
        if self.aggregation != "mean":
            kw["aggregation"] = self.aggregation
        if self.trim is not None:
            kw["trim"] = self.trim
        kw.update(self.params)
        return kw

    def output_name(self) -> str:
        suffix = output_suffix(self.input_name)
        name = Path(self.input_name).name
        stem = name[: -len(suffix)] if name.lower().endswith(suffix) else Path(name).stem
        return f"{stem or 'data'}-{self.method}-k{self.k}{suffix}"

    def cli_command(self) -> str:
        """The ``microagg protect`` command that gives the same output. Nothing in it can be taken
        for an option: a file name starting with '-' is written './-name', an option's value
        starting with '-' is joined to it ('--columns=-x')."""

        def option(name: str, value) -> list:
            text = str(value)
            return [shlex.quote(f"{name}={text}")] if text.startswith("-") else [name, shlex.quote(text)]

        parts = ["microagg", "protect", shlex.quote(_not_an_option(self.shown_path or self.input_name)),
                 "-o", shlex.quote(_not_an_option(self.output_name())), "-k", str(self.k),
                 *option("--method", self.method), *option("--columns", ",".join(map(str, self.columns))),
                 "--seed", str(self.seed)]
        if self.time_limit is not None:
            parts += ["--time-limit", f"{self.time_limit:g}"]
        if self.strata:
            parts += option("--strata", ",".join(map(str, self.strata)))
        if self.sample_weight is not None:
            parts += option("--sample-weight", self.sample_weight)
        if self.weights:
            parts += option("--weights", ",".join(f"{c}={w:g}" for c, w in self.weights.items()))
        if self.categorical:
            parts += option("--categorical", ",".join(map(str, self.categorical)))
        if self.ordinal:
            parts += option("--ordinal", ",".join(map(str, self.ordinal)))
        if self.distance != "euclidean":
            parts += option("--distance", self.distance)
        if self.aggregation != "mean":
            parts += option("--aggregation", self.aggregation)
        if self.trim is not None:
            parts += ["--trim", f"{self.trim:g}"]
        for name, value in self.params.items():
            parts += option("--param", f"{name}={_cli_value(value)}")
        return " ".join(parts)

    def python_snippet(self) -> str:
        """The Python call that gives the same output."""
        args = ",\n    ".join(f"{k}={v!r}" for k, v in self.api_kwargs().items())
        call = f"res = microagg.microaggregate(\n    df,\n    {args},\n)\n"
        if self.dataset:
            return (f"import microagg\ndf = microagg.datasets.load({self.dataset!r})\n{call}"
                    f"res.data.to_csv({Path(self.output_name()).with_suffix('.csv').name!r}, index=False)\n"
                    "print(res.summary())")
        return (f"import microagg\ntable = microagg.io.read({self.shown_path or self.input_name!r})\n"
                f"df = table.frame\n{call}"
                "# a copy of the input in which only the quasi-identifier cells change\n"
                f"microagg.io.write(table, {self.output_name()!r}, {{c: res.data[c].to_numpy() for c in res.columns}})\n"
                "print(res.summary())")

    def reproduce_text(self) -> str:
        note = ("# A time limit makes iterative methods depend on the machine's speed: the same command\n"
                "# can stop at a different point on another machine or under another load.\n"
                if self.time_limit is not None else "")
        listed = list(self.columns) + list(self.strata) + list(self.categorical) + list(self.ordinal)
        if any("," in str(c) for c in listed):  # the command line splits column lists at commas
            note += "# A column name holds a comma, which the command line cannot list: use the Python call.\n"
        return f"# command line\n{note}{self.cli_command()}\n\n# Python\n{self.python_snippet()}\n"


def _not_an_option(path: str) -> str:
    """A relative path starting with '-' as './-name', which no option parser takes for an option."""
    return f"./{path}" if str(path).startswith("-") else str(path)


def _cli_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    return str(value) if isinstance(value, (int, float, str)) else repr(value)


# ---------------------------------------------------------------------------- figures of a run
def run_figures(res, original: pd.DataFrame, p: float = 10.0) -> dict:
    """The numbers the app shows for a finished run (JSON-safe floats and ints).

    The utility and risk measures are those of the HTML report (``microagg.report``): on the
    continuous QI columns, with IL and the smallest group of identical published values over
    every QI column when some are categorical."""
    from .. import measures

    kinds = res.extras.get("kinds", {})
    continuous = [c for c in res.columns if kinds.get(str(c), "continuous") == "continuous"]
    heterogeneous = len(continuous) < len(res.columns)
    sizes = np.concatenate(res.group_sizes) if res.per_variable else np.asarray(res.group_sizes)
    utility, risk = {}, {}
    if continuous:
        X = original[continuous].to_numpy(dtype=np.float64)
        Xp = res.data[continuous].to_numpy(dtype=np.float64)
        utility = measures.utility_report(X, Xp, scaler=None if heterogeneous else res.scaler)
        risk = measures.risk_report(X, Xp, p)
    if heterogeneous:
        utility["information_loss"] = res.information_loss
        risk["smallest_group"] = int(res.data[list(res.columns)].astype(str).value_counts().min())
    out = {
        "information_loss": float(res.information_loss),
        "sse": float(res.sse),
        "sst": float(res.sst),
        "lower_bound_il": None if res.lower_bound_il is None else float(res.lower_bound_il),
        "gap": None if res.gap is None else float(res.gap),
        "groups": int(len(sizes)),
        "group_size_min": int(sizes.min()),
        "group_size_max": int(sizes.max()),
        "seconds": float(res.seconds),
        "records": int(len(res.labels)),
        "utility": {k: _plain(v) for k, v in utility.items()},
        "risk": {k: _plain(v) for k, v in risk.items()},
        "per_variable": bool(res.per_variable),
        "categories": {c: {k: _plain(v) for k, v in m.items()} for c, m in res.extras.get("categories", {}).items()},
    }
    if "weighted_information_loss" in res.extras:
        out["weighted_information_loss"] = float(res.extras["weighted_information_loss"])
    if "portfolio" in res.extras:
        out["portfolio"] = [{k: _plain(v) for k, v in row.items()} for row in res.extras["portfolio"]]
        out["winner"] = res.extras.get("winner")
    return out


def _plain(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, np.bool_):
        return bool(v)
    return v


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


def _worker(spec: RunSpec, workdir: str, run_id: int, events) -> None:
    """Run one protection in this (spawned) process and report through ``events`` (the writing
    end of a pipe): ("progress", stage, fraction, message, elapsed), then ("done", figures) or
    ("error", message). The Result is pickled to ``workdir/run-<id>.pkl`` and the HTML report
    written next to it. Started by ``run_process.start``, which has tied this process to the app's."""
    t0 = time.perf_counter()
    post = events.send
    try:
        from .. import api
        from ..errors import InputError
        from ..report import render_report

        last = [0.0]

        def progress(stage, fraction=None, message=""):
            now = time.perf_counter()
            if now - last[0] >= 0.2 or (fraction is not None and fraction >= 1):
                last[0] = now
                post(("progress", str(stage), None if fraction is None else float(fraction), str(message), now - t0))

        _silence_stdout()
        post(("progress", "reading the data", None, "", 0.0))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = load_input(spec)
            post(("progress", spec.method, None, "", time.perf_counter() - t0))
            res = api.microaggregate(df, progress=progress, **spec.api_kwargs())
        post(("progress", "measures and report", None, "", time.perf_counter() - t0))
        view, note = measured_view(res)
        figures = run_figures(view, df)
        figures["warnings"] = list(dict.fromkeys(one_line(w.message, (workdir,)) for w in caught))
        settings = {"input": spec.input_name, "seed": spec.seed, "time limit (s)": spec.time_limit,
                    "strata": ", ".join(map(str, spec.strata)) if spec.strata else None}
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
    """One protection running in a spawned process; ``poll()`` drains its events, ``cancel()``
    terminates it (works inside a numba kernel, where no Python code can check a flag).

    The process starts in ``run_process.start``, which ties its life to this one's before any
    heavy import; events come through a one-way pipe (no semaphore left behind at a kill)."""

    def __init__(self, spec: RunSpec, workdir, run_id: int):
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
                                   args=(os.getpid(), dataclasses.asdict(spec), str(workdir), run_id, writer))
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


def stop_all_runs() -> None:
    """Terminate every run still going (the server is stopping)."""
    for handle in list(_LIVE):
        handle.cancel()


def history_row(run_id: int, spec: RunSpec, handle: RunHandle) -> dict:
    """One line of the session's history table."""
    f = handle.figures or {}
    risk = f.get("risk", {})
    return {
        "run": run_id,
        "data": spec.input_name,
        "method": spec.method,
        "k": spec.k,
        "IL %": f.get("information_loss"),
        "record linkage %": None if risk.get("record_linkage_dbrl") is None else 100 * risk["record_linkage_dbrl"],
        "interval disclosure %": None if risk.get("interval_disclosure") is None
        else 100 * risk["interval_disclosure"],
        "seconds": f.get("seconds", handle.elapsed),
        "status": handle.state if handle.state != "error" else f"error: {handle.error}",
    }


COMPARE_ROWS = (
    ("method", lambda s, f: s.method),
    ("k", lambda s, f: s.k),
    ("quasi-identifiers", lambda s, f: ", ".join(map(str, s.columns))),
    ("parameters", lambda s, f: ", ".join(f"{k}={v}" for k, v in s.params.items()) or "defaults"),
    ("IL %", lambda s, f: f["information_loss"]),
    ("lower bound IL %", lambda s, f: f["lower_bound_il"]),
    ("gap %", lambda s, f: f["gap"]),
    ("groups", lambda s, f: f["groups"]),
    ("group sizes", lambda s, f: f"{f['group_size_min']} … {f['group_size_max']}"),
    ("IL1s", lambda s, f: f["utility"].get("il1s")),
    ("correlation discrepancy Δr", lambda s, f: f["utility"].get("delta_r_mean")),
    ("eigenvalue discrepancy %", lambda s, f: f["utility"].get("eigenvalue_discrepancy_percent")),
    ("record linkage %", lambda s, f: _percent(f["risk"].get("record_linkage_dbrl"))),
    ("interval disclosure %", lambda s, f: _percent(f["risk"].get("interval_disclosure"))),
    ("smallest group of identical QI values", lambda s, f: f["risk"].get("smallest_group")),
    ("seconds", lambda s, f: f["seconds"]),
)


def _percent(x):
    return None if x is None else 100 * x


def compare_table(a: tuple, b: tuple) -> list[tuple]:
    """(label, value of run a, value of run b) for two finished runs given as (spec, figures)."""
    return [(label, get(*a), get(*b)) for label, get in COMPARE_ROWS]


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
