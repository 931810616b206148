"""Choose the protection: a risk-utility map over k and methods (issue 34).

``explore(data, k=[...], methods=[...], time_limit=T)`` runs a grid of protections of one data set
with one set of roles (QIs and kinds, strata, keys, sensitive columns, sampling weights) within
ONE time budget (one ``Deadline``), audits each run with the audit every front end shows
(``audit.audit_files``), and returns an ``Exploration``: one row per run (k, method, parameters,
IL, every utility and risk figure, seconds, whether it is on the Pareto frontier of the chosen
risk measure against IL), the recommended run (the least IL among the runs whose risk is at most
``max_risk``), the R-U confidentiality map as SVG (Duncan, Keller-McNulty & Stokes, "Disclosure
risk vs. data utility: the R-U confidentiality map", NISS technical reports 121 (2001) and 142
(2004)), the table as text, JSON and CSV, and each run's reproduce command.

How the budget is spent (cheap runs first, by measured cost):

* cost: above PROBE_SIZES[-1] records every method is first timed on two seeded subsamples
  (``probe_sizes``: n/20 records, 1,600 to 20,000, and a quarter of that; at the smallest k),
  which gives its cost at n by the measured growth exponent; a method that
  cannot stop at a deadline (``interruptible=False``) is run only when its predicted cost fits
  in what is left, and above SCALABLE_N records a method whose cost grows as n^SCALABLE_EXPONENT
  or faster is left out ("not scalable", with its exponent). Below, each method's smallest-k run
  goes first and its seconds order the others.
* an anytime method gets a work budget (``run_work``: the same for every run, sized from the
  records, the budget and the grid's size alone), so that each run done is reproducible at any
  load; what is left of the budget is only its safety cap (a run it cuts is marked);
* runs are planned within 90 % of the budget (``SLACK``), again after every run: the next run is
  the first that fits by its expected cost (its method's last run, or the probes' prediction)
  and its audit's (the first audit's one-off cost, which fills the cache of the original's
  figures, is not expected of the others), so no run that fits is skipped; the slack absorbs the
  last run's overrun (a mis-predicted run that cannot stop, an anytime method's start, an
  audit): ``benchmarks/explore_budget.py`` measures the overshoot. As in
  ``microaggregate``, loading the methods' compiled kernels (compiling them on a first run after
  an install) is outside the budget.

Runs of an earlier exploration of the same file and roles (``previous=``, or an existing result
file on the command line) are reused, not run again: widening the grid costs only the new runs.
Each run's partition (labels) is kept, in memory and beside a saved result
(``RESULT.labels.npz``), so ``microagg protect --from-explore RESULT.json --pick N`` publishes
exactly that run, even when a time-limited method would not find it again.

Framework-free pieces for the app: ``Exploration.rows()`` (the table as dicts),
``Exploration.map_svg(risk)`` (points with ids ``run-N``), ``frontier(points)`` and
``recommend(...)``.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Hashable, Mapping, Sequence

import numpy as np

from .errors import InputError, ParameterError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .typed import Aggregation, Columns, DataInput, Distance, MergedStrata, OnKeysBelowK, Progress

__all__ = ["explore", "Exploration", "ExploreRun", "frontier", "recommend", "DEFAULT_KS", "DEFAULT_METHODS",
           "DEFAULT_RISK", "load", "risk_measures"]

DEFAULT_KS = (3, 4, 5, 10)
#: the default grid's methods: fast fixed-size and variable-size heuristics and the two local searches
DEFAULT_METHODS = ("mdav", "vmdav", "mdav-mhm", "icsm", "lsearch")
#: the default risk axis: distance-based record linkage, the risk continuous microaggregation moves
DEFAULT_RISK = "record_linkage_dbrl"
DEFAULT_BUDGET = 60.0
#: subsample sizes the methods are timed on before a large grid: n/20 records (at least 1,600, at most
#: 20,000) and a quarter of that; below PROBE_SIZES[-1] records nothing is probed
PROBE_SIZES = (400, 1600)
PROBE_MAX = 20_000


def probe_sizes(n: int) -> tuple[int, int]:
    """The two subsample sizes a method is timed on for data of n records: the larger, the closer
    the growth measured between them to the method's at scale (400 -> 1,600 records predicted
    mdav-mhm at 0.9 s for 22 s at 10^5; 1,250 -> 5,000 at 5.3 s; the first run of a method then
    corrects the prediction of its others: benchmarks/results/explore_budget.md)."""
    big = int(min(max(n // 20, PROBE_SIZES[1]), PROBE_MAX))
    return big // 4, big
#: from this many records, a method whose measured cost grows as n^SCALABLE_EXPONENT or faster is left out
SCALABLE_N = 20_000
SCALABLE_EXPONENT = 1.7
VERSION = 1


#: risk-group figures that are not a risk (a parameter) or where a higher value is safer: not an axis
_NOT_AN_AXIS = ("interval_disclosure_p", "smallest_group", "key_smallest_frequency", "key_combinations",
                "ldiversity_smallest_distinct", "ldiversity_smallest_entropy")


def risk_measures() -> list:
    """The names of the audit's risk measures a map can put on its axis: the registry's "risk"
    group, less the figures where a higher value means less risk (the smallest frequency, l)."""
    from .measures import measures_of

    return [m.name for m in measures_of("risk") if m.name not in _NOT_AN_AXIS]


# --- frontier and recommendation (pure) ----------------------------------------------------------------

def frontier(points) -> list[bool]:
    """Whether each (risk, il) point is on the Pareto frontier: no other point has both a lower
    risk and a lower IL (issue 34's definition; points with an unknown value are not on it).
    O(n log n): sorted by risk, a point is dominated when a point of strictly lower risk has a
    strictly lower IL."""
    pts = [(r, il) for r, il in points]
    known = [i for i, (r, il) in enumerate(pts) if r is not None and il is not None
             and math.isfinite(r) and math.isfinite(il)]
    out = [False] * len(pts)
    order = sorted(known, key=lambda i: pts[i][0])
    best_below = math.inf  # least IL among points of strictly lower risk
    j = 0
    while j < len(order):
        r = pts[order[j]][0]
        same = [i for i in order[j:] if pts[i][0] == r]
        for i in same:
            out[i] = not pts[i][1] > best_below
        best_below = min(best_below, min(pts[i][1] for i in same))
        j += len(same)
    return out


def recommend(rows, max_risk: float | None) -> int | None:
    """The recommended run among ``rows`` (dicts with "id", "il", "risk", "status"): the least IL
    among the finished runs whose risk is at most ``max_risk`` (every finished run when None);
    ties go to the lower risk, then the smaller k, then the earlier run."""
    ok = [r for r in rows if r["status"] == "ok" and r["il"] is not None and r["risk"] is not None
          and (max_risk is None or r["risk"] <= max_risk)]
    if not ok:
        return None
    return min(ok, key=lambda r: (r["il"], r["risk"], r["k"], r["id"]))["id"]


# --- results --------------------------------------------------------------------------------------

@dataclass
class ExploreRun:
    """One run of the grid. ``status``: "ok" (``reused``: from an earlier exploration), "skipped"
    (predicted not to fit, not scalable, or the budget was spent; ``note`` says which) or
    "failed" (``note``: the one-line error). ``figures``: the audit's {group: {name: value}}."""

    id: int
    k: int
    method: str
    params: dict
    status: str = "pending"
    note: str = ""
    time_limit: float | None = None
    predicted: float | None = None
    seconds: float | None = None
    audit_seconds: float | None = None
    figures: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    labels: np.ndarray | None = field(default=None, repr=False)
    reused: bool = False
    work: float | None = None  # an anytime method's work budget (run option work)
    time_cut: bool = False  # its safety time limit ended it (not its work budget)

    @property
    def done(self) -> bool:
        return self.status == "ok"

    @property
    def il(self) -> float | None:
        return self.figures.get("run", {}).get("information_loss")

    def value(self, name: str):
        for group in ("risk", "utility", "run"):
            if name in self.figures.get(group, {}):
                return self.figures[group][name]
        return None

    @property
    def reproducible(self) -> bool:
        """Re-running gives the same labels: bounded by work, no time limit cut it (the labels
        are kept anyway)."""
        from . import methods as registry

        if self.time_cut:
            return False
        return self.work is not None or self.time_limit is None or not registry.get(self.method).interruptible

    def key(self) -> str:
        return json.dumps([self.k, self.method, self.params], sort_keys=True, default=str)


@dataclass
class Exploration:
    """The runs of a grid, their frontier for ``risk`` and the recommended run for ``max_risk``."""

    runs: list
    risk: str
    max_risk: float | None
    roles: dict
    options: dict
    records: int
    input: dict = field(default_factory=dict)  # name, sha256, format, read options (a file explored)
    budget: float | None = None
    seconds: float | None = None
    load: float | None = None
    fingerprint: str = ""

    # --- the table ---
    def points(self, risk: str | None = None) -> list:
        risk = risk or self.risk
        return [(r.value(risk), r.il) if r.done else (None, None) for r in self.runs]

    def on_frontier(self, risk: str | None = None) -> list[bool]:
        return frontier(self.points(risk))

    def recommended(self, risk: str | None = None, max_risk: float | None = None) -> int | None:
        """The recommended run's id for ``risk`` and ``max_risk`` (default: the exploration's)."""
        risk = risk or self.risk
        limit = self.max_risk if max_risk is None else max_risk
        rows = [{"id": r.id, "k": r.k, "il": r.il, "risk": r.value(risk), "status": "ok" if r.done else r.status}
                for r in self.runs]
        return recommend(rows, limit)

    def rows(self, risk: str | None = None) -> list[dict]:
        """One dict per run (JSON-ready): id, k, method, params, status, note, seconds, IL, the chosen
        risk, every utility and risk figure, frontier, recommended, reproducible, time limit."""
        risk = risk or self.risk
        front = self.on_frontier(risk)
        best = self.recommended(risk)
        out = []
        for r, f in zip(self.runs, front):
            out.append({"id": r.id, "k": r.k, "method": r.method, "params": r.params, "status": r.status,
                        "note": r.note, "reused": r.reused, "time_limit": r.time_limit, "work": r.work,
                        "time_cut": r.time_cut, "predicted": r.predicted,
                        "seconds": r.seconds, "audit_seconds": r.audit_seconds, "il": r.il, "risk": r.value(risk),
                        "frontier": bool(f), "recommended": r.id == best, "reproducible": r.reproducible,
                        "utility": dict(r.figures.get("utility", {})), "risk_figures": dict(r.figures.get("risk", {})),
                        "run_figures": dict(r.figures.get("run", {})), "warnings": list(r.warnings)})
        return out

    def commands(self, run_id: int, input_name: str = "INPUT", output: str = "OUTPUT",
                 result: str = "RESULT.json") -> dict:
        """The reproduce commands of one run: ``protect`` with its options (exact for a run
        bounded by work that no time limit cut), ``protect --from-explore`` (exact always: the
        kept labels) and the Python call. A run that was not done has none (empty dict)."""
        from .options import command_line, python_call

        r = self.runs[run_id]
        if not r.done:
            return {}
        options = {**self.options, "k": r.k, "method": r.method}
        if r.work is not None:
            options["work"] = r.work
        elif r.time_limit is not None:
            options["time_limit"] = r.time_limit
        shown = input_name if input_name != "INPUT" else self.input.get("name", "INPUT")
        return {"protect": command_line(shown, output, options, r.params),
                "from_explore": from_explore_command(shown, output, result, run_id),
                "python": python_call(options, r.params)}

    def table(self, risk: str | None = None) -> str:
        """The table as text, one line per run (frontier *, recommended >)."""
        risk = risk or self.risk
        lines = [f"{'':2s}{'id':>3s} {'k':>3s} {'method':14s} {'IL %':>9s} {risk:>24s} {'seconds':>8s}  status"]
        for row in self.rows(risk):
            mark = (">" if row["recommended"] else " ") + ("*" if row["frontier"] else " ")
            il = "—" if row["il"] is None else f"{row['il']:.4f}"
            rv = "—" if row["risk"] is None else f"{row['risk']:.6g}"
            sec = "—" if row["seconds"] is None else f"{row['seconds']:.2f}"
            status = row["status"] + (" (reused)" if row["reused"] else "") + (f": {row['note']}" if row["note"]
                                                                               else "")
            lines.append(f"{mark}{row['id']:>3d} {row['k']:>3d} {row['method']:14s} {il:>9s} {rv:>24s} {sec:>8s}  "
                         f"{status}")
        best = self.recommended(risk)
        limit = "" if self.max_risk is None else f" with {risk} <= {self.max_risk:g}"
        lines.append(f"* on the frontier of {risk} against IL; > recommended: least IL{limit}: "
                     + ("none meets it" if best is None else f"run {best} (k = {self.runs[best].k}, "
                                                              f"{self.runs[best].method})"))
        return "\n".join(lines)

    def to_dict(self, risk: str | None = None, result_name: str = "RESULT.json") -> dict:
        risk = risk or self.risk
        rows = self.rows(risk)
        for row in rows:
            row["commands"] = self.commands(row["id"], result=result_name)
        return {"microagg_explore": VERSION, "input": self.input, "records": self.records, "roles": self.roles,
                "options": self.options, "fingerprint": self.fingerprint, "budget": self.budget,
                "seconds": self.seconds, "load_1min": self.load, "risk": risk, "max_risk": self.max_risk,
                "risk_measures": risk_measures(), "recommended": self.recommended(risk), "runs": rows}

    def to_csv(self, risk: str | None = None) -> str:
        """One line per run: id, k, method, status, seconds, IL, the chosen risk, frontier,
        recommended, then every utility and risk figure (columns: the union over runs)."""
        import csv
        import io

        rows = self.rows(risk)
        figure_names = []
        for row in rows:
            for group in ("utility", "risk_figures"):
                for name in row[group]:
                    col = f"{'utility' if group == 'utility' else 'risk'}:{name}"
                    if col not in figure_names:
                        figure_names.append(col)
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["id", "k", "method", "params", "status", "seconds", "information_loss", risk or self.risk,
                         "frontier", "recommended", *figure_names])
        for row in rows:
            values = []
            for col in figure_names:
                group, name = col.split(":", 1)
                values.append(row["utility" if group == "utility" else "risk_figures"].get(name, ""))
            writer.writerow([row["id"], row["k"], row["method"], json.dumps(row["params"], sort_keys=True),
                             row["status"], _num(row["seconds"]), _num(row["il"]), _num(row["risk"]),
                             int(row["frontier"]), int(row["recommended"]), *[_num(v) for v in values]])
        return buffer.getvalue()

    def map_svg(self, risk: str | None = None, *, width: int = 760, height: int = 500) -> str:
        """The R-U map: ``risk`` on the horizontal axis, IL on the vertical, one point per finished
        run (id ``run-N``, labelled by k and method, its values in a tooltip), the frontier joined,
        the recommended run ringed, ``max_risk`` drawn as a dashed line."""
        from .measures import MEASURES, _load_registry

        _load_registry()
        risk = risk or self.risk
        m = MEASURES.get(risk)
        scale = m.scale if m is not None else 1.0
        label = m.label if m is not None else risk
        rows = [row for row in self.rows(risk) if row["il"] is not None and row["risk"] is not None]
        return _svg_map(rows, label, scale, None if self.max_risk is None or risk != self.risk else self.max_risk,
                        width, height)

    def save(self, path, risk: str | None = None) -> Path:
        """Write the result (JSON) and the runs' labels beside it (``<name>.labels.npz``), atomically."""
        from .io import atomic_write, atomic_write_text

        path = Path(path)
        labels = {f"run_{r.id}": r.labels for r in self.runs if r.labels is not None}
        atomic_write(labels_path(path), lambda tmp: _save_npz(tmp, labels))
        doc = self.to_dict(risk, result_name=path.name)
        doc["labels_file"] = labels_path(path).name
        from .manifest import json_safe

        return atomic_write_text(path, json.dumps(json_safe(doc), indent=1, ensure_ascii=False, allow_nan=False)
                                 + "\n")


def _save_npz(tmp, labels: dict) -> None:
    with open(tmp, "wb") as fh:
        np.savez_compressed(fh, **labels)


def labels_path(result_path) -> Path:
    p = Path(result_path)
    return p.with_name(p.name.removesuffix(".json") + ".labels.npz")


def _num(v):
    if v is None or v == "":
        return ""
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ""
    return v


def from_explore_command(input_name: str, output: str, result: str, run_id: int) -> str:
    """The command that publishes run ``run_id`` of the exploration saved as ``result`` exactly."""
    return f"microagg protect {_quote(input_name)} -o {_quote(output)} --from-explore {_quote(result)} --pick {run_id}"


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text if not str(text).startswith("-") else f"./{text}")


def load(path, runs=None) -> tuple[dict, dict]:
    """(result document, {run id: labels}) of a saved exploration, read as untrusted
    (``documents``: its schema, its labels file beside it, each array's header checked before it
    is read); ``runs``: the ids whose labels to read (default: every finished run's). One
    InputError line otherwise."""
    from .documents import labels_file, read_explore_result, read_labels

    p = Path(path)
    doc = read_explore_result(p)
    wanted = [row["id"] for row in doc["runs"] if row["status"] == "ok"] if runs is None else list(runs)
    labels = read_labels(labels_file(p, doc), wanted, doc.get("records") if isinstance(doc.get("records"), int)
                         else None)
    return doc, labels


# --- the map -------------------------------------------------------------------------------------------

def _svg_map(rows, risk_label: str, scale: float, max_risk, W: int, H: int) -> str:
    from .report import _axis_ticks, _esc

    L, R, T, B = 70, 20, 30, 55
    pw, ph = W - L - R, H - T - B
    parts = [f'<svg id="svg-ru-map" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'viewBox="0 0 {W} {H}" role="img" aria-label="risk-utility map">',
             f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#ccc"/>']
    if not rows:
        parts.append(f'<text x="{L + pw / 2}" y="{T + ph / 2}" text-anchor="middle" font-size="13">no finished run'
                     '</text></svg>')
        return "".join(parts)
    xs = np.array([row["risk"] * scale for row in rows], dtype=float)
    ys = np.array([row["il"] for row in rows], dtype=float)
    xr = [float(xs.min()), float(xs.max())] + ([max_risk * scale] if max_risk is not None else [])
    lo_x, hi_x = min(xr), max(xr)
    lo_y, hi_y = float(ys.min()), float(ys.max())
    span_x = hi_x - lo_x or max(abs(hi_x), 1.0) * 0.1
    span_y = hi_y - lo_y or max(abs(hi_y), 1.0) * 0.1
    lo_x, hi_x = lo_x - 0.08 * span_x, hi_x + 0.08 * span_x
    lo_y, hi_y = max(lo_y - 0.1 * span_y, 0.0) if lo_y >= 0 else lo_y - 0.1 * span_y, hi_y + 0.1 * span_y

    def sx(v):
        return L + pw * (v - lo_x) / (hi_x - lo_x)

    def sy(v):
        return T + ph - ph * (v - lo_y) / (hi_y - lo_y)

    for t in _axis_ticks(lo_x, hi_x):
        parts.append(f'<line x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{T}" y2="{T + ph}" stroke="#eee"/>'
                     f'<text x="{sx(t):.1f}" y="{T + ph + 16}" font-size="11" text-anchor="middle">{t:g}</text>')
    for t in _axis_ticks(lo_y, hi_y):
        parts.append(f'<line x1="{L}" x2="{L + pw}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="#eee"/>'
                     f'<text x="{L - 6}" y="{sy(t) + 4:.1f}" font-size="11" text-anchor="end">{t:g}</text>')
    if max_risk is not None:
        x = sx(max_risk * scale)
        parts.append(f'<line class="max-risk" x1="{x:.1f}" x2="{x:.1f}" y1="{T}" y2="{T + ph}" stroke="#c53030" '
                     f'stroke-dasharray="5,4"/><text x="{x + 4:.1f}" y="{T + 12}" font-size="11" fill="#c53030">'
                     f'max risk {max_risk * scale:g}</text>')
    front = sorted((row for row in rows if row["frontier"]), key=lambda row: (row["risk"], row["il"]))
    if len(front) > 1:
        pts = " ".join(f"{sx(row['risk'] * scale):.1f},{sy(row['il']):.1f}" for row in front)
        parts.append(f'<polyline class="frontier" points="{pts}" fill="none" stroke="#2b6cb0" stroke-width="1.8"/>')
    placed: list = []  # label positions so far: a label that would overlap one moves down

    def label_y(x, y):
        while any(abs(x - px) < 60 and abs(y - py) < 11 for px, py in placed):
            y += 11
        placed.append((x, y))
        return y

    for row in rows:
        x, y = sx(row["risk"] * scale), sy(row["il"])
        ty = label_y(x + 7, y - 6)
        cls = "point" + (" frontier" if row["frontier"] else "") + (" recommended" if row["recommended"] else "")
        colour = "#2b6cb0" if row["frontier"] else "#999"
        tip = (f"run {row['id']}: k = {row['k']}, {row['method']}; IL {row['il']:.4f} %; "
               f"{risk_label} {row['risk'] * scale:.6g}")
        parts.append(f'<g id="run-{row["id"]}" class="{cls}" data-run="{row["id"]}"><title>{_esc(tip)}</title>'
                     f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{colour}"/>'
                     f'<text x="{x + 7:.1f}" y="{ty:.1f}" font-size="10">k={row["k"]} {_esc(row["method"])}'
                     f'</text></g>')
        if row["recommended"]:
            parts.append(f'<circle class="recommended-mark" cx="{x:.1f}" cy="{y:.1f}" r="10" fill="none" '
                         f'stroke="#c53030" stroke-width="2.2"/><text x="{x + 7:.1f}" y="{y + 16:.1f}" '
                         f'font-size="10" fill="#c53030">recommended</text>')
    parts.append(f'<text x="{L + pw / 2}" y="{H - 12}" font-size="12" text-anchor="middle">{_esc(risk_label)}</text>'
                 f'<text x="16" y="{T + ph / 2}" font-size="12" text-anchor="middle" '
                 f'transform="rotate(-90 16 {T + ph / 2})">information loss (IL, %)</text>'
                 f'<text x="{L}" y="{T - 10}" font-size="11" fill="#555">blue: on the frontier (no other run has '
                 f'both lower risk and lower IL)</text></svg>')
    return "".join(parts)


def report_html(exploration: Exploration, risk: str | None = None, result_name: str = "RESULT.json") -> str:
    """A self-contained HTML page: the R-U map and the table with each run's reproduce commands."""
    from .report import _CSS, _esc

    risk = risk or exploration.risk
    rows = exploration.rows(risk)
    head = ["id", "k", "method", "IL (%)", risk, "seconds", "frontier", "status", "reproduce"]
    body = []
    for row in rows:
        cmds = exploration.commands(row["id"], result=result_name)
        cls = ' class="winner"' if row["recommended"] else ""
        il = "—" if row["il"] is None else f"{row['il']:.4f}"
        rv = "—" if row["risk"] is None else f"{row['risk']:.6g}"
        sec = "—" if row["seconds"] is None else f"{row['seconds']:.2f}"
        status = row["status"] + (": " + row["note"] if row["note"] else "")
        body.append(f"<tr{cls}><td>{row['id']}</td><td>{row['k']}</td><td>{_esc(row['method'])}</td>"
                    f'<td class="num">{il}</td><td class="num">{rv}</td><td class="num">{sec}</td>'
                    f"<td>{'yes' if row['frontier'] else ''}</td><td>{_esc(status)}</td>"
                    + (f"<td><code>{_esc(cmds['from_explore'])}</code><br><code class=\"small\">"
                       f"{_esc(cmds['protect'])}</code></td></tr>" if cmds else "<td></td></tr>"))
    best = exploration.recommended(risk)
    limit = "" if exploration.max_risk is None else f" with {_esc(risk)} ≤ {exploration.max_risk:g}"
    rec = "none meets the risk target" if best is None else (
        f"run {best}: k = {exploration.runs[best].k}, {_esc(exploration.runs[best].method)}, IL "
        f"{exploration.runs[best].il:.4f} %")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>microagg explore: risk-utility map</title><style>{_CSS}
code{{white-space:pre-wrap;word-break:break-all;font-size:.8rem}}</style></head>
<body>
<h1>Risk-utility map</h1>
<p class="small">{exploration.records} records; {sum(r.done for r in exploration.runs)} of {len(rows)} runs done in a
budget of {exploration.budget} s
({exploration.seconds:.1f} s used). Risk: {_esc(risk)}; IL: 100·SSE/SST on z-scores. Duncan, Keller-McNulty &amp;
Stokes, the R-U confidentiality map (NISS technical reports 121, 2001, and 142, 2004).</p>
<p><b>Recommended</b> (least IL{limit}): {rec}.</p>
<figure id="fig-ru-map">{exploration.map_svg(risk)}
<figcaption>One point per run, labelled by k and method; the frontier joined; the recommended run ringed.
</figcaption></figure>
<h2>Runs</h2>
<table><tr>{''.join(f'<th>{_esc(h)}</th>' for h in head)}</tr>{''.join(body)}</table>
</body></html>
"""


# --- the grid -------------------------------------------------------------------------------------------

def _ks(k) -> list[int]:
    from .options import option

    values = [k] if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else k
    if isinstance(values, str):
        values = [v for v in values.split(",") if v.strip()]
    try:
        values = list(values)
    except TypeError:
        raise ParameterError(f"k must be an integer or a list of integers, got {k!r}") from None
    if not values:
        raise ParameterError("k names no value")
    out = []
    for v in values:
        if isinstance(v, str):
            try:
                v = int(v.strip())
            except ValueError:
                raise ParameterError(f"k must be integers, got {v!r}") from None
        out.append(option("k").validate(v, None))
    if len(set(out)) != len(out):
        raise ParameterError(f"k lists a value twice: {out}")
    return sorted(out)


def _methods(methods) -> list[str]:
    from .options import option

    values = [m.strip() for m in methods.split(",") if m.strip()] if isinstance(methods, str) else list(methods)
    if not values:
        raise ParameterError("methods names no method")
    for m in values:
        option("method").validate(m, None)  # unknown names, sdcMicro's names: one line
    if len(set(values)) != len(values):
        raise ParameterError(f"methods lists a method twice: {values}")
    return values


def _check_risk(risk, max_risk):
    names = risk_measures()
    if risk not in names:
        raise ParameterError(f"risk must be one of the audit's risk measures ({', '.join(names)}), got {risk!r}")
    if max_risk is not None:
        if isinstance(max_risk, bool) or not isinstance(max_risk, (int, float, np.integer, np.floating)) \
                or not math.isfinite(float(max_risk)) or float(max_risk) < 0:
            raise ParameterError(f"max_risk must be a number >= 0 in the risk measure's own unit (a share: "
                                 f"0..1), got {max_risk!r}")
        return float(max_risk)
    return None


def _fingerprint(frame, roles, options: dict) -> str:
    """What the grid's runs depend on: the values of every column they read, and the options."""
    import pandas as pd

    columns = list(dict.fromkeys([*roles.columns, *roles.strata, *roles.keys, *roles.sensitive,
                                  *([roles.sample_weight_column] if roles.sample_weight_column else [])]))
    h = hashlib.sha256()
    h.update(pd.util.hash_pandas_object(frame[columns], index=False).to_numpy().tobytes())
    h.update(json.dumps([list(map(str, columns)), options], sort_keys=True, default=str).encode())
    return h.hexdigest()


def _previous_runs(previous, fingerprint: str) -> dict:
    """key -> (row dict, labels) of an earlier exploration of the same data and options."""
    if previous is None:
        return {}
    if isinstance(previous, Exploration):
        if previous.fingerprint != fingerprint:
            warnings.warn("the earlier exploration was of other data or options: its runs are not reused",
                          UserWarning, stacklevel=3)
            return {}
        return {r.key(): r for r in previous.runs if r.done and r.labels is not None}
    doc, labels = previous
    if doc.get("fingerprint") != fingerprint:
        warnings.warn("the earlier exploration was of other data or options: its runs are not reused", UserWarning,
                      stacklevel=3)
        return {}
    out = {}
    for row in doc["runs"]:
        if row["status"] == "ok" and row["id"] in labels:
            run = ExploreRun(row["id"], row["k"], row["method"], row["params"], "ok", "", row.get("time_limit"),
                             row.get("predicted"), row.get("seconds"), row.get("audit_seconds"),
                             {"run": row.get("run_figures", {}), "utility": row.get("utility", {}),
                              "risk": row.get("risk_figures", {})}, list(row.get("warnings", [])),
                             np.asarray(labels[row["id"]], dtype=np.int64), work=row.get("work"),
                             time_cut=bool(row.get("time_cut", False)))
            out[run.key()] = run
    return out


def explore(
    data: DataInput,
    k: Sequence[int] | int = DEFAULT_KS,
    methods: Sequence[str] | str = DEFAULT_METHODS,
    *,
    time_limit: float = DEFAULT_BUDGET,
    risk: str = DEFAULT_RISK,
    max_risk: float | None = None,
    method_params: Mapping[str, Mapping[str, Any]] | None = None,
    previous: Exploration | tuple | None = None,
    progress: bool | Progress | None = False,
    input_info: dict | None = None,
    columns: Columns | None = None,
    seed: int | None = 0,
    standardize: bool = True,
    strata: Columns | None = None,
    weights: Sequence[float] | Mapping[Hashable, float] | None = None,
    sample_weight: Hashable | ArrayLike | None = None,
    merge_small_strata: bool = False,
    categorical: Columns | None = None,
    ordinal: Columns | Mapping[Hashable, Sequence[Any]] | None = None,
    distance: Distance = "euclidean",
    aggregation: Aggregation = "mean",
    trim: float | None = None,
    missing: str | Sequence[str] | None = None,
    continuous: Columns | None = None,
    keys: Columns | None = None,
    on_keys_below_k: OnKeysBelowK = "suppress",
    key_importance: Columns | None = None,
    sensitive: Columns | None = None,
    merged_strata: MergedStrata = "recode",
) -> Exploration:
    """Run the grid ``k`` × ``methods`` on ``data`` within ``time_limit`` seconds and map it.

    Every run is audited with the audit every front end shows; the result holds one row per run
    (k, method, IL, every utility and risk figure, seconds, whether it is on the Pareto frontier
    of ``risk`` against IL), the recommended run and the risk-utility map. Every option, k,
    method and parameter is checked before any run (ParameterError / InputError in one line).
    How the budget is spent: the module's docstring.

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame, pyarrow.Table, numpy.ndarray, str or io.Table
        As ``microagg.microaggregate`` takes it.
    k : int or list of int, default (3, 4, 5, 10)
        The k values of the grid.
    methods : str or list of str, default ("mdav", "vmdav", "mdav-mhm", "icsm", "lsearch")
        Registered method names.
    time_limit : float, default 60
        The whole exploration's budget in seconds (one deadline: cheap runs first, anytime methods
        share what is left).
    risk : str, default "record_linkage_dbrl"
        The risk measure of the frontier and the recommendation (``risk_measures()``).
    max_risk : float, optional
        Recommend the least IL among the runs whose risk is at most this (in the measure's own
        unit: a share 0..1 for record linkage).
    method_params : dict, optional
        ``{method: {parameter: value}}``.
    previous : Exploration, optional
        An earlier exploration (or a loaded result) of the same data and options: its runs are
        reused, not run again.
    progress : bool or callable, default False
        True: a progress bar on stderr; a callable receives ``progress(stage, fraction, message)``.
    input_info : dict, optional
        What the command line and the app record of an explored file (name, sha256, format).
    columns, seed, standardize, strata, weights, sample_weight, merge_small_strata, categorical, ordinal, distance, aggregation, trim, missing, continuous, keys, on_keys_below_k, key_importance, sensitive, merged_strata
        The run options of ``microagg.microaggregate`` (the same for every run of the grid).

    Returns
    -------
    Exploration
        The runs, their frontier, the recommended run (``recommended()``), the table
        (``table()``, ``rows()``, ``to_csv()``) and the map (``map_svg()``).

    Examples
    --------
    >>> import microagg
    >>> df = microagg.datasets.load("census").head(200)
    >>> ex = microagg.explore(df, k=[3, 5], methods=["mdav"], time_limit=30, columns=["AGI", "FEDTAX"])
    >>> [(run.k, run.method, run.status) for run in ex.runs]
    [(3, 'mdav', 'ok'), (5, 'mdav', 'ok')]
    """
    from .options import GRID_OPTIONS, given_options

    options = given_options(locals(), GRID_OPTIONS)
    from . import pipeline
    from .deadline import Deadline
    from .options import validate_run
    from .partition import check_k
    from .progress import channel

    ks, names = _ks(k), _methods(methods)
    risk_limit = _check_risk(risk, max_risk)
    time_limit = _check_budget(time_limit)
    method_params = {m: dict(p) for m, p in (method_params or {}).items()}
    unknown = [m for m in method_params if m not in names]
    if unknown:
        raise ParameterError(f"method_params names method(s) not in the grid: {', '.join(unknown)}")
    validated = {m: validate_run({**options, "k": ks[0], "method": m}, method_params.get(m, {})) for m in names}
    deadline = Deadline(time_limit)
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        source = pipeline.load(data)
        roles = pipeline.check_params_vs_input(validated[names[0]].with_options(k=ks[0]), source)
        # the data's own problems (missing values in a QI, ...) are one line before any run, not a failed grid
        pipeline.prepare(source, roles, validated[names[0]].with_options(k=ks[0]))
    for w in told:  # the column rules' warnings, once
        warnings.warn(w.message, w.category, stacklevel=2)
    n = len(source.frame)
    for kv in ks:
        check_k(kv, n)
    grid_options = {**options, "columns": list(roles.columns)}
    fingerprint = _fingerprint(source.frame, roles, grid_options)
    reuse = _previous_runs(previous, fingerprint)
    payload = source.table if source.table is not None else source.frame if source.kind == "native" else data
    runs = [ExploreRun(i, kv, m, dict(method_params.get(m, {}))) for i, (m, kv) in
            enumerate((m, kv) for m in names for kv in ks)]
    for r in runs:
        old = reuse.get(r.key())
        if old is not None:
            r.status, r.reused, r.note = "ok", True, ""
            r.time_limit, r.predicted, r.seconds, r.audit_seconds = old.time_limit, old.predicted, old.seconds, \
                old.audit_seconds
            r.work, r.time_cut = old.work, old.time_cut
            r.figures, r.warnings, r.labels = old.figures, old.warnings, old.labels
    cache: dict = {}
    from . import methods as registry

    to_run = [m for m in names if any(not r.done for r in runs if r.method == m)]
    for m in to_run:  # their kernels load outside the budget
        registry.load_kernels(m, (n, len(roles.columns)), progress, deadline)
    with channel(progress, time_limit, "microagg explore") as report:
        from .methods import get as method_info

        costs = _probe_costs(to_run, payload, source, roles, grid_options, method_params, ks[0], deadline,
                             report) if n > PROBE_SIZES[-1] else {}
        _run_grid(runs, costs, payload, source, grid_options, n, deadline, report, cache, method_info,
                  time_limit)
    audit_roles = pipeline.audit_roles(roles, validated[names[0]])
    return Exploration(runs, risk, risk_limit, audit_roles.to_dict(), _plain_options(grid_options), n,
                       dict(input_info or {}), time_limit, deadline.elapsed(), _load(), fingerprint)


def _check_budget(time_limit) -> float:
    """The exploration's time budget: a finite number of seconds > 0 (ParameterError otherwise)."""
    if time_limit is None or isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) \
            or not math.isfinite(time_limit) or time_limit <= 0:
        raise ParameterError(f"time_limit (the exploration's budget) must be a number of seconds > 0, got "
                             f"{time_limit!r}")
    return float(time_limit)


def _plain_options(options: dict) -> dict:
    out = {}
    for name, value in options.items():
        if isinstance(value, np.ndarray):
            out[name] = "(an array)"
        else:
            out[name] = value
    return out


def _load() -> float | None:
    import os

    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _probe_costs(methods, payload, source, roles, options, method_params, k, deadline, report) -> dict:
    """method -> (seconds predicted at n, growth exponent) from timed runs on two seeded subsamples
    of ``probe_sizes(n)`` records (after one untimed run that loads the method's compiled kernels)."""
    from .api import microaggregate
    from .methods import get as method_info

    n = len(source.frame)
    sizes = probe_sizes(n)
    rng = np.random.default_rng(0)
    rows = [np.sort(rng.choice(n, m, replace=False)) for m in sizes]
    probe_options = {name: options[name] for name in ("columns", "categorical", "ordinal", "continuous", "distance",
                                                      "aggregation", "standardize", "weights", "trim", "seed",
                                                      "missing") if name in options}
    out = {}
    for i, m in enumerate(methods):
        if deadline.expired():
            break
        report("probing costs", i / max(len(methods), 1), f"{m} on {sizes[0]} and {sizes[1]} records")
        info = method_info(m)
        limit = None if not info.interruptible else max(min(2.0, deadline.remaining() / (4 * len(methods))), 0.05)
        times = []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for j, sub in enumerate([rows[0], *rows]):
                    frame = source.frame.iloc[sub].reset_index(drop=True)
                    t0 = time.perf_counter()
                    microaggregate(frame, k=k, method=m, time_limit=limit, audit=False, **probe_options,
                                   **method_params.get(m, {}))
                    if j:  # the first call loads the kernels
                        times.append(max(time.perf_counter() - t0, 1e-3))
        except (InputError, ValueError) as exc:
            out[m] = (None, None, str(exc).splitlines()[0], sizes)
            continue
        exponent = min(max(math.log(times[1] / times[0]) / math.log(sizes[1] / sizes[0]), 1.0), 3.0)
        out[m] = (times[1] * (n / sizes[1]) ** exponent, exponent, None, sizes)
    return out


def _run_grid(runs, costs, payload, source, options, n, deadline, report, cache, method_info, budget) -> None:
    """Run the pending runs, cheapest first, each audited; mark what cannot run."""
    pending = [r for r in runs if not r.done]
    for r in pending:
        cost = costs.get(r.method)
        if cost is not None:
            r.predicted = cost[0]
            if cost[2] is not None:
                r.status, r.note = "failed", cost[2]
            elif n >= SCALABLE_N and cost[1] >= SCALABLE_EXPONENT:
                r.status, r.note = "skipped", (f"not scalable: its cost grows as n^{cost[1]:.2f} (measured on "
                                               f"{cost[3][0]} and {cost[3][1]} records)")
    pending = [r for r in pending if r.status == "pending"]
    # every anytime run gets the same work budget, sized from the data and the grid alone: its
    # result does not depend on the load, nor on which runs were done before it
    work = run_work(n, budget, len(runs))
    state = {"audits": [], "measured": {}, "budget": budget, "work": work}
    _plan_and_run(pending, runs, options, payload, source, deadline, report, cache, method_info, state)


#: the share of the budget kept free when planning runs: it absorbs the last run's overrun (a
#: mis-predicted run that cannot stop, an anytime method's start, an audit)
SLACK = 0.1
#: an anytime run's work budget: RUN_PASSES passes over the records, at most what the reference
#: machine does in its even share of the budget (``clock.work_budget``)
RUN_PASSES = 200
#: before a second audit is measured, a later audit is expected to take this share of the first
#: (the first fills the cache of the original's figures: measured 9-13 s against 0.15 s after it)
LATER_AUDIT_SHARE = 0.1


def run_work(n: int, budget: float, runs: int) -> float:
    """The work budget of each anytime run of a grid of ``runs`` runs on n records within
    ``budget`` seconds (a function of these alone: the grid's runs are reproducible)."""
    from .deadline import work_budget

    return work_budget(n, RUN_PASSES, (1.0 - SLACK) * budget / max(int(runs), 1))


def _audit_estimate(audits: list) -> float:
    """A later run's audit seconds: the least measured after the first (which has one-off costs)."""
    if len(audits) > 1:
        return min(audits[1:])
    return LATER_AUDIT_SHARE * audits[0] if audits else 0.0


def _expected(r, state) -> float | None:
    """A run's expected seconds: its method's own last run, else the probes' prediction."""
    known = [v for v in (r.predicted, state["measured"].get(r.method)) if v is not None]
    return (state["measured"][r.method] if r.method in state["measured"] else max(known)) if known else None


def _plan_and_run(pending, runs, options, payload, source, deadline, report, cache, method_info, state):
    """Plan again after every run: the next run is the first, in order (a method not run yet
    first, the non-interruptible ones before the others; then by expected seconds, k, id), whose
    expected cost and audit fit in what is left of the budget less the slack; a run whose cost is
    not known yet fits. Runs that never fit are skipped at the end, with the reason."""
    waiting = list(pending)

    def order(r):
        measured = r.method in state["measured"]
        expected = _expected(r, state)
        return (measured, method_info(r.method).interruptible if not measured else True,
                math.inf if expected is None and measured else (expected or 0.0), r.k, r.id)

    while waiting:
        plan = deadline.remaining() - SLACK * state["budget"]
        if plan <= 0:
            break
        audit = _audit_estimate(state["audits"])
        chosen = next((r for r in sorted(waiting, key=order)
                       if _expected(r, state) is None or _expected(r, state) + audit <= plan), None)
        if chosen is None:
            break
        waiting.remove(chosen)
        r = chosen
        info = method_info(r.method)
        if info.interruptible:
            # its work budget bounds it; what is left of the budget is the safety cap (a run it cuts
            # is marked not reproducible)
            r.work, r.time_limit = state["work"], max(plan, 0.05)
        finished = sum(1 for p in runs if p.status != "pending")
        report("explore", finished / len(runs), f"run {r.id}: k = {r.k}, {r.method}")
        _run_one(r, payload, source, options, cache)
        if r.done:
            if not state["audits"]:  # the first audit's one-off cost is the process's, as compiling
                deadline.extend((1.0 - LATER_AUDIT_SHARE) * (r.audit_seconds or 0.0))
            state["audits"].append(r.audit_seconds or 0.0)
            state["measured"][r.method] = r.seconds
    plan = deadline.remaining() - SLACK * state["budget"]
    audit = _audit_estimate(state["audits"])
    for r in waiting:
        expected = _expected(r, state)
        r.status = "skipped"
        r.note = ("the budget was spent" if plan <= 0 or expected is None else
                  f"expected {expected + audit:.1f} s with its audit, {max(plan, 0):.1f} s left to plan")


def _run_one(r: ExploreRun, payload, source, options, cache) -> None:
    from . import pipeline
    from .api import microaggregate
    from .audit import audit_files

    try:
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            res = microaggregate(payload, k=r.k, method=r.method, time_limit=r.time_limit, work=r.work, audit=False,
                                 **options, **r.params)
            r.seconds = res.seconds
            r.time_cut = bool(res.time_cut)
            t1 = time.perf_counter()
            sw = res.weights.sample_weight
            files = audit_files(source.frame, pipeline.frame_of(res.data, source.frame.columns), res.audit_roles,
                                sample_weights=None if sw is None or sw != "array" else options.get("sample_weight"),
                                seed=options.get("seed", 0), cache=cache)
            r.audit_seconds = time.perf_counter() - t1
        audit = res.audit.with_figures(files)
        r.figures = audit.to_dict()["groups"]
        r.warnings = list(dict.fromkeys([*audit.warnings, *(" ".join(str(w.message).split()) for w in told)]))
        r.labels = np.asarray(res.labels, dtype=np.int64)
        r.status = "ok"
        if r.seconds is None:
            r.seconds = t1 - t0
    except (InputError, ValueError) as exc:
        r.status, r.note = "failed", (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class _CallableModule(types.ModuleType):
    """``microagg.explore(...)`` is this module's ``explore``: the module and the function share
    the name (as ``microagg.methods()`` lists the registry), whichever was imported first."""

    def __call__(self, *args, **kwargs) -> Exploration:
        return explore(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
