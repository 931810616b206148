"""The result of an exploration: its runs, their Pareto frontier of a risk measure against IL, the
recommended run, the table (text, dicts, CSV), the document saved as ``RESULT.json`` with the
runs' partitions in ``RESULT.labels.npz`` beside it, and each run's reproduce commands.

The map (``Exploration.map_svg``) is the R-U confidentiality map of Duncan, Keller-McNulty &
Stokes, "Disclosure risk vs. data utility: the R-U confidentiality map", NISS technical reports
121 (2001) and 142 (2004), drawn by ``explore.map``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .grid import risk_measures

#: the result document's version (``microagg_explore``)
VERSION = 1


#: the audit's count of suppressed key values (local suppression), shown beside IL and risk
SUPPRESSED = "suppressed_key_values"


def frontier(points) -> list[bool]:
    """Whether each (risk, il) point is on the Pareto frontier: no other point has both a lower
    risk and a lower IL (issue 34's definition; points with an unknown value are not on it).
    O(n log n): sorted by risk, a point is dominated when a point of strictly lower risk has a
    strictly lower IL."""
    pts = [(r, il) for r, il in points]
    known = [
        i
        for i, (r, il) in enumerate(pts)
        if r is not None and il is not None and math.isfinite(r) and math.isfinite(il)
    ]
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
    ok = [
        r
        for r in rows
        if r["status"] == "ok"
        and r["il"] is not None
        and r["risk"] is not None
        and (max_risk is None or r["risk"] <= max_risk)
    ]
    if not ok:
        return None
    return min(ok, key=lambda r: (r["il"], r["risk"], r["k"], r["id"]))["id"]


@dataclass
class Exploration:
    """The runs of a grid, their frontier for ``risk`` and the recommended run for ``max_risk``."""

    runs: list
    risk: str
    max_risk: float | None
    roles: dict
    options: dict
    records: int
    input: dict = field(
        default_factory=dict
    )  # name, sha256, format, read options (a file explored)
    budget: float | None = None
    seconds: float | None = None
    load: float | None = None
    fingerprint: str = ""

    def __repr__(self) -> str:
        """One line: the runs, the records, the risk measure and the recommended run."""
        from ..display import exploration_repr

        return exploration_repr(self)

    def _repr_html_(self) -> str:
        """A notebook's display: the recommended run, the risk-utility map (SVG) and the table."""
        from ..display import exploration_html

        return exploration_html(self)

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
        rows = [
            {
                "id": r.id,
                "k": r.k,
                "il": r.il,
                "risk": r.value(risk),
                "status": "ok" if r.done else r.status,
            }
            for r in self.runs
        ]
        return recommend(rows, limit)

    def rows(self, risk: str | None = None) -> list[dict]:
        """One dict per run (JSON-ready): id, k, method, params, status, note, seconds, IL, the
        chosen risk, every utility and risk figure, frontier, recommended, reproducible, time
        limit."""
        risk = risk or self.risk
        front = self.on_frontier(risk)
        best = self.recommended(risk)
        out = []
        for r, f in zip(self.runs, front, strict=True):
            out.append(
                {
                    "id": r.id,
                    "k": r.k,
                    "method": r.method,
                    "params": r.params,
                    "status": r.status,
                    "note": r.note,
                    "reused": r.reused,
                    "time_limit": r.time_limit,
                    "work": r.work,
                    "time_cut": r.time_cut,
                    "predicted": r.predicted,
                    "seconds": r.seconds,
                    "audit_seconds": r.audit_seconds,
                    "il": r.il,
                    "risk": r.value(risk),
                    "suppressed": r.value(SUPPRESSED),
                    "frontier": bool(f),
                    "recommended": r.id == best,
                    "reproducible": r.reproducible,
                    "utility": dict(r.figures.get("utility", {})),
                    "risk_figures": dict(r.figures.get("risk", {})),
                    "run_figures": dict(r.figures.get("run", {})),
                    "warnings": list(r.warnings),
                }
            )
        return out

    def commands(
        self,
        run_id: int,
        input_name: str = "INPUT",
        output: str = "OUTPUT",
        result: str = "RESULT.json",
    ) -> dict:
        """The reproduce commands of one run: ``protect`` with its options (exact for a run
        bounded by work that no time limit cut), ``protect --from-explore`` (exact always: the
        kept labels) and the Python call. A run that was not done has none (empty dict)."""
        from ..options import command_line, python_call

        r = self.runs[run_id]
        if not r.done:
            return {}
        options = {**self.options, "k": r.k, "method": r.method}
        if r.work is not None:
            options["work"] = r.work
        elif r.time_limit is not None:
            options["time_limit"] = r.time_limit
        shown = input_name if input_name != "INPUT" else self.input.get("name", "INPUT")
        return {
            "protect": command_line(shown, output, options, r.params),
            "from_explore": from_explore_command(shown, output, result, run_id),
            "python": python_call(options, r.params),
        }

    def table(self, risk: str | None = None) -> str:
        """The table as text, one line per run (frontier *, recommended >); a notebook displays it
        as an HTML table (``TextTable``)."""
        risk = risk or self.risk
        lines = [
            f"{'':2s}{'id':>3s} {'k':>3s} {'method':14s} {'IL %':>9s} {risk:>24s} "
            f"{'suppressed':>10s} {'seconds':>8s}  status"
        ]
        for row in self.rows(risk):
            mark = (">" if row["recommended"] else " ") + ("*" if row["frontier"] else " ")
            il = "—" if row["il"] is None else f"{row['il']:.4f}"
            rv = "—" if row["risk"] is None else f"{row['risk']:.6g}"
            sec = "—" if row["seconds"] is None else f"{row['seconds']:.2f}"
            sup = "—" if row["suppressed"] is None else f"{int(row['suppressed']):d}"
            status = (
                row["status"]
                + (" (reused)" if row["reused"] else "")
                + (f": {row['note']}" if row["note"] else "")
            )
            lines.append(
                f"{mark}{row['id']:>3d} {row['k']:>3d} {row['method']:14s} {il:>9s} {rv:>24s} "
                f"{sup:>10s} {sec:>8s}  {status}"
            )
        best = self.recommended(risk)
        limit = "" if self.max_risk is None else f" with {risk} <= {self.max_risk:g}"
        lines.append(
            f"* on the frontier of {risk} against IL; > recommended: least IL{limit}: "
            + (
                "none meets it"
                if best is None
                else f"run {best} (k = {self.runs[best].k}, {self.runs[best].method})"
            )
        )
        from ..display import TextTable, table_html

        return TextTable("\n".join(lines), table_html(self, risk))

    def to_dict(self, risk: str | None = None, result_name: str = "RESULT.json") -> dict:
        risk = risk or self.risk
        rows = self.rows(risk)
        for row in rows:
            row["commands"] = self.commands(row["id"], result=result_name)
        return {
            "microagg_explore": VERSION,
            "input": self.input,
            "records": self.records,
            "roles": self.roles,
            "options": self.options,
            "fingerprint": self.fingerprint,
            "budget": self.budget,
            "seconds": self.seconds,
            "load_1min": self.load,
            "risk": risk,
            "max_risk": self.max_risk,
            "risk_measures": risk_measures(),
            "recommended": self.recommended(risk),
            "runs": rows,
        }

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
        writer.writerow(
            [
                "id",
                "k",
                "method",
                "params",
                "status",
                "seconds",
                "information_loss",
                risk or self.risk,
                SUPPRESSED,
                "frontier",
                "recommended",
                *figure_names,
            ]
        )
        for row in rows:
            values = []
            for col in figure_names:
                group, name = col.split(":", 1)
                values.append(
                    row["utility" if group == "utility" else "risk_figures"].get(name, "")
                )
            writer.writerow(
                [
                    row["id"],
                    row["k"],
                    row["method"],
                    json.dumps(row["params"], sort_keys=True),
                    row["status"],
                    _num(row["seconds"]),
                    _num(row["il"]),
                    _num(row["risk"]),
                    _num(row["suppressed"]),
                    int(row["frontier"]),
                    int(row["recommended"]),
                    *[_num(v) for v in values],
                ]
            )
        return buffer.getvalue()

    def map_svg(self, risk: str | None = None, *, width: int = 760, height: int = 500) -> str:
        """The R-U map: ``risk`` on the horizontal axis, IL on the vertical, one point per finished
        run (id ``run-N``, labelled by k and method, its values in a tooltip), the frontier joined,
        the recommended run ringed, ``max_risk`` drawn as a dashed line."""
        from ..measures import MEASURES, measures_of
        from .map import svg_map

        measures_of("risk")  # loads the registry
        risk = risk or self.risk
        m = MEASURES.get(risk)
        scale = m.scale if m is not None else 1.0
        label = m.label if m is not None else risk
        rows = [row for row in self.rows(risk) if row["il"] is not None and row["risk"] is not None]
        return svg_map(
            rows,
            label,
            scale,
            None if self.max_risk is None or risk != self.risk else self.max_risk,
            width,
            height,
        )

    def save(self, path, risk: str | None = None) -> Path:
        """Write the result (JSON) and the runs' labels beside it (``<name>.labels.npz``),
        atomically."""
        from ..io import atomic_write, atomic_write_text

        path = Path(path)
        labels = {f"run_{r.id}": r.labels for r in self.runs if r.labels is not None}
        atomic_write(labels_path(path), lambda tmp: _save_npz(tmp, labels))
        doc = self.to_dict(risk, result_name=path.name)
        doc["labels_file"] = labels_path(path).name
        from ..manifest import json_safe

        return atomic_write_text(
            path, json.dumps(json_safe(doc), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
        )


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
    return (
        f"microagg protect {_quote(input_name)} -o {_quote(output)} "
        f"--from-explore {_quote(result)} --pick {run_id}"
    )


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text if not str(text).startswith("-") else f"./{text}")


def load(path, runs=None) -> tuple[dict, dict]:
    """(result document, {run id: labels}) of a saved exploration, read as untrusted
    (``documents``: its schema, its labels file beside it, each array's header checked before it
    is read); ``runs``: the ids whose labels to read (default: every finished run's). One
    InputError line otherwise."""
    from ..untrusted_documents import labels_file, read_explore_result, read_labels

    p = Path(path)
    doc = read_explore_result(p)
    wanted = (
        [row["id"] for row in doc["runs"] if row["status"] == "ok"] if runs is None else list(runs)
    )
    labels = read_labels(
        labels_file(p, doc),
        wanted,
        doc.get("records") if isinstance(doc.get("records"), int) else None,
    )
    return doc, labels
