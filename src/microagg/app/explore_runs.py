"""The Explore tab's logic, without the web framework (tests/test_app_explore.py): the grid a page
explores, its exploration in the run's process, the map and the table shown for any risk
measure, and the run a click on a point of the map opens.

* ``ExploreSpec``: the Protect tab's run (its data, quasi-identifiers, kinds, strata, keys,
  sensitive columns, weights and every other run option, from the same generated controls:
  ``controls.run_spec``) less what a grid sets per run (``options.NOT_FOR_A_GRID``), and the
  grid: k values, methods, one time budget, the risk measure and an optional max risk.
* ``worker``: ``microagg.explore`` in the run's spawned process (``run_process.start``,
  ``job="explore"``), within its one deadline; the result is saved as ``protect --from-explore``
  reads it (RESULT.json and RESULT.labels.npz) and pickled for the page. An earlier exploration
  of the same data and options (``previous``) gives its runs again without running them.
* ``view``: the exploration seen on another risk measure or max risk: the frontier, the
  recommended run, the map and the table are recomputed from the kept figures, nothing runs.
* ``picked_spec``: a run of the exploration as a protect run of its kept partition (the
  ``labels`` run option), which publishes exactly what ``protect --from-explore RESULT.json
  --pick N`` writes.
* ``checked_svg``: the map's SVG is our code's (``Exploration.map_svg``, every text escaped);
  before the page takes it as markup it is checked against the few elements and attributes a
  map has, so a change that ever let a name through unescaped (a column called ``<script>``,
  an ``onmouseover=``) becomes an error line, never a script.
"""

from __future__ import annotations

import pickle
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import InputError, ParameterError
from . import run_events
from .input_data import load_input, output_suffix
from .private import one_line
from .runspec import RunSpec
from .runspec import check_against_data as check_run_against_data

#: the k values the Explore tab starts from (explore's default grid)
DEFAULT_KS_TEXT = "3,4,5,10"


@dataclass(frozen=True)
class ExploreSpec:
    """One exploration of a page: its input (as ``RunSpec`` names it), the run options
    every run of the grid shares, the grid, and the pickled exploration whose runs it reuses
    (``previous``, a path or None). Plain data (sent to the run's process as a dict)."""

    input_path: str
    input_name: str
    options: dict
    ks: list
    methods: list
    method_params: dict = field(default_factory=dict)
    budget: float = 60.0
    risk: str = "record_linkage_dbrl"
    max_risk: float | None = None
    dataset: str | None = None
    shown_path: str | None = None
    max_bytes: int | None = None
    previous: str | None = None

    def same_grid_data(self, other: ExploreSpec) -> bool:
        """Whether ``other`` explored the same input with the same shared options (its runs can
        be reused: explore checks the data's fingerprint besides)."""
        return (other.input_path, other.dataset, repr(other.options)) == (
            self.input_path,
            self.dataset,
            repr(self.options),
        )


def left_out(run: RunSpec) -> list[str]:
    """The Protect tab's options that differ from their defaults and that a grid leaves out
    (set per run: k, method, time limit, work; or without meaning for a grid: shuffle, partitioned
    mode): the Explore tab says so."""
    from ..options import NOT_FOR_A_GRID

    return [
        name.replace("_", " ")
        for name in run.changed_options()
        if name in NOT_FOR_A_GRID and name not in ("k", "method", "time_limit", "work")
    ]


def explore_spec(
    run: RunSpec, ks, methods, budget, risk: str, max_risk=None, previous: str | None = None
) -> ExploreSpec:
    """The grid of ``ks`` × ``methods`` over the Protect tab's ``run``, every value checked by
    explore's own checks (one line: ParameterError / InputError). The parameters the Protect tab
    set for its method are that method's in the grid."""
    from .. import explore
    from ..options import NOT_FOR_A_GRID

    if not isinstance(methods, (str, list, tuple)) or not all(isinstance(m, str) for m in methods):
        raise ParameterError("methods must be a list of method names")
    ks, names = explore.checked_ks(ks), explore.checked_methods(methods)
    if budget is None or (isinstance(budget, str) and not budget.strip()):
        budget = explore.DEFAULT_BUDGET
    budget = explore.checked_budget(budget)
    limit = explore.checked_risk(risk, max_risk)
    options = {name: value for name, value in run.options.items() if name not in NOT_FOR_A_GRID}
    params = {run.method: dict(run.params)} if run.params and run.method in names else {}
    return ExploreSpec(
        run.input_path,
        run.input_name,
        options,
        ks,
        names,
        params,
        budget,
        risk,
        limit,
        run.dataset,
        run.shown_path,
        run.max_bytes,
        previous,
    )


def run_of(spec: ExploreSpec, k: int, method: str, **more) -> RunSpec:
    """One run of the grid as a protect run (validated: ``RunSpec.of``)."""
    return RunSpec.of(
        spec.input_path,
        spec.input_name,
        dataset=spec.dataset,
        shown_path=spec.shown_path,
        max_bytes=spec.max_bytes,
        k=k,
        method=method,
        **spec.options,
        **spec.method_params.get(method, {}),
        **more,
    )


def check_against_data(spec: ExploreSpec, df) -> None:
    """The checks explore makes before any run, made before its process starts: each method's
    run at the smallest k, and the largest k, by the protect run's checks on the loaded data
    (``runspec.check_against_data``), so the page shows the command line's one-line error at
    once."""
    for method in spec.methods:
        check_run_against_data(run_of(spec, spec.ks[0], method), df)
    if len(spec.ks) > 1:
        check_run_against_data(run_of(spec, spec.ks[-1], spec.methods[0]), df)


# ---------------------------------------------------------------------------- the run's process
def result_name(spec: ExploreSpec) -> str:
    """The result file's name (its partitions in ``<stem>.labels.npz`` beside it)."""
    suffix = output_suffix(spec.input_name)
    name = Path(spec.input_name).name
    stem = name[: -len(suffix)] if name.lower().endswith(suffix) else Path(name).stem
    return f"{stem or 'data'}-explore.json"


def result_path(spec: ExploreSpec, workdir, run_id: int) -> Path:
    """Where exploration ``run_id`` saves its result (a folder of its own: the download's name)."""
    return Path(workdir) / f"explore-{run_id}" / result_name(spec)


def pickle_path(workdir, run_id: int) -> Path:
    return Path(workdir) / f"explore-{run_id}.pkl"


def load_exploration(path):
    """The exploration a finished ``worker`` pickled at ``path`` (``pickle_path``: its runs,
    figures and kept partitions)."""
    with open(path, "rb") as fh:
        return pickle.load(fh)


def input_info(spec: ExploreSpec) -> dict:
    """What the result says of its input: the name the commands use and the SHA-256 that
    ``protect --from-explore`` checks."""
    from ..manifest import sha256

    return {
        "name": Path(spec.shown_path or spec.input_name).name,
        "sha256": sha256(spec.input_path),
    }


def worker(spec: ExploreSpec, workdir: str, run_id: int, events) -> None:
    """Explore the grid in this (spawned) process and report through ``events``: ("progress",
    stage, fraction, message, elapsed), then ("done", {"warnings": [...]}) or ("error", message).
    Started by ``run_process.start``, which has tied this process to the app's."""
    t0 = time.perf_counter()
    post = events.send
    try:
        from .. import explore

        progress = run_events.progress_sender(post, t0)
        run_events.silence_stdout()
        post(("progress", "reading the data", None, "", 0.0))
        df = load_input(spec)
        previous = load_exploration(spec.previous) if spec.previous else None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = explore.explore(
                df,
                spec.ks,
                spec.methods,
                time_limit=spec.budget,
                risk=spec.risk,
                max_risk=spec.max_risk,
                method_params=spec.method_params,
                previous=previous,
                progress=progress,
                input_info=input_info(spec),
                **spec.options,
            )
        post(("progress", "saving the result", None, "", time.perf_counter() - t0))
        path = result_path(spec, workdir, run_id)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        result.save(path)
        with open(pickle_path(workdir, run_id), "wb") as fh:
            pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
        post(
            (
                "done",
                {"warnings": list(dict.fromkeys(one_line(w.message, (workdir,)) for w in caught))},
            )
        )
    except BaseException as exc:  # noqa: BLE001 - everything becomes one line for the page
        try:
            post(("error", one_line(exc, (workdir,))))
        except (OSError, ValueError):  # the app has gone (or cancelled the exploration)
            pass


def progress_line(handle) -> tuple[str, float | None]:
    """(the progress line of an exploration going, its fraction done): explore's stage and
    message (the run going), the seconds so far of its budget."""
    elapsed, budget = handle.elapsed, handle.spec.budget
    text = f"exploring: {handle.stage}" + (f" ({handle.message})" if handle.message else "")
    text += f" — {elapsed:.0f} s of {budget:g} s"
    return text, handle.fraction if handle.fraction is not None else min(elapsed / budget, 1.0)


# ---------------------------------------------------------------------------- what the page shows
def view(exploration, risk: str, max_risk=None):
    """The exploration seen with ``risk`` on the map's axis and ``max_risk`` (in that measure's
    unit) as the target: frontier, recommended run, map and table follow; nothing runs again."""
    from .. import explore

    return replace(exploration, risk=risk, max_risk=explore.checked_risk(risk, max_risk))


def risk_choices() -> dict:
    """The audit's risk measures a map can put on its axis (``explore.risk_measures``), name ->
    the measure registry's label."""
    from .. import explore
    from ..measures import MEASURES, measures_of

    measures_of("risk")  # loads the registry
    return {
        name: MEASURES[name].label if name in MEASURES else name for name in explore.risk_measures()
    }


def risk_scale(risk: str) -> float:
    """What a risk figure is multiplied by where it is shown (a share shown in %: 100), as on the
    map's axis (the measure registry's ``scale``)."""
    from ..measures import MEASURES, measures_of

    measures_of("risk")  # loads the registry
    return MEASURES[risk].scale if risk in MEASURES else 1.0


def has_values(exploration, risk: str) -> bool:
    """Whether a finished run of the exploration has this risk figure (l-diversity needs
    sensitive columns, re-identification risk categorical keys)."""
    return any(r.done and r.value(risk) is not None for r in exploration.runs)


def output_name(spec: ExploreSpec, exploration, run_id: int) -> str:
    """The protected file's name for a run of the exploration (as the Results tab exports it)."""
    r = exploration.runs[run_id]
    return RunSpec(spec.input_path, spec.input_name, {"k": r.k, "method": r.method}).output_name()


def table_rows(spec: ExploreSpec, shown) -> tuple[list, list]:
    """(header, rows) of the runs of an exploration ``shown`` (a ``view``): id, k, method, IL,
    the axis's risk (in the axis's unit), the key values suppressed, seconds, frontier,
    recommended, status, and the command that publishes the run exactly
    (``protect --from-explore``; none for a run not done)."""
    label, scale = risk_choices().get(shown.risk, shown.risk), risk_scale(shown.risk)
    header = [
        "run",
        "k",
        "method",
        "IL (%)",
        label,
        "suppressed key values",
        "seconds",
        "frontier",
        "recommended",
        "status",
        "reproduce",
    ]
    rows = []
    for row in shown.rows():
        status = (
            row["status"]
            + (" (reused)" if row["reused"] else "")
            + (f": {row['note']}" if row["note"] else "")
        )
        commands = shown.commands(
            row["id"],
            Path(spec.shown_path or spec.input_name).name,
            output_name(spec, shown, row["id"]),
            result_name(spec),
        )
        reproduce = commands.get("from_explore", "")  # a run not done has nothing to reproduce
        rows.append(
            (
                row["id"],
                row["k"],
                row["method"],
                row["il"],
                None if row["risk"] is None else row["risk"] * scale,
                row["suppressed"],
                row["seconds"],
                "yes" if row["frontier"] else "",
                "yes" if row["recommended"] else "",
                status,
                reproduce,
            )
        )
    return header, rows


def pick_of(raw, exploration) -> int:
    """The run a click on the map (or a row's button) asks to open, as the page sent it: the id
    of a finished run of the exploration shown, else one line."""
    text = str(raw) if isinstance(raw, (str, int)) and not isinstance(raw, bool) else ""
    if not (text.isdigit() and len(text) <= 9) or int(text) >= len(exploration.runs):
        raise InputError("the page sent an unknown run of the exploration: reload the page")
    run = exploration.runs[int(text)]
    if not run.done or run.labels is None:
        raise InputError(
            f"run {run.id} of the exploration did not finish ({run.status}): nothing to open"
        )
    return run.id


def picked_spec(spec: ExploreSpec, exploration, run_id: int) -> RunSpec:
    """Run ``run_id`` of the exploration as a protect run that publishes its kept partition (the
    ``labels`` run option: the partition is not computed again), with the exploration's options,
    as ``protect --from-explore RESULT.json --pick N`` does; its reproduce command is that one."""
    r = exploration.runs[run_id]
    options = {
        **{n: v for n, v in exploration.options.items() if v != "(an array)"},
        "k": r.k,
        "method": r.method,
        "labels": r.labels,
    }
    return RunSpec.of(
        spec.input_path,
        spec.input_name,
        dataset=spec.dataset,
        shown_path=spec.shown_path,
        max_bytes=spec.max_bytes,
        explored=(result_name(spec), run_id),
        **options,
        **r.params,
    )


# ---------------------------------------------------------------------------- the map as markup
#: what the map's SVG may hold (``Exploration.map_svg``): elements and attributes; no script,
#: no event handler, no link, no style, no entity
SVG_ELEMENTS = frozenset({"svg", "rect", "line", "text", "g", "title", "circle", "polyline"})
SVG_ATTRIBUTES = frozenset(
    {
        "id",
        "class",
        "xmlns",
        "width",
        "height",
        "viewBox",
        "role",
        "aria-label",
        "x",
        "y",
        "x1",
        "x2",
        "y1",
        "y2",
        "cx",
        "cy",
        "r",
        "points",
        "fill",
        "stroke",
        "stroke-width",
        "stroke-dasharray",
        "font-size",
        "text-anchor",
        "transform",
        "data-run",
    }
)


def checked_svg(svg: str) -> str:
    """``svg`` if it holds only the map's elements and attributes (``SVG_ELEMENTS``,
    ``SVG_ATTRIBUTES``), else an InputError: what the page takes as markup can run nothing."""
    import xml.etree.ElementTree as ET

    if "<!" in svg or "<?" in svg:  # no DOCTYPE, entity, CDATA or processing instruction
        raise InputError("the map holds markup it should not: not shown")
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as exc:
        raise InputError(f"the map is not well-formed SVG ({exc}): not shown") from None
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1]
        bad = [a for a in element.attrib if a.rsplit("}", 1)[-1] not in SVG_ATTRIBUTES]
        if tag not in SVG_ELEMENTS or bad:
            raise InputError(
                f"the map holds markup it should not (<{tag[:20]}> {' '.join(bad)[:40]}): not shown"
            )
    return svg
