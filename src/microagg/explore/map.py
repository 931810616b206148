"""The picture of an exploration: the R-U confidentiality map (Duncan, Keller-McNulty & Stokes,
NISS technical reports 121, 2001, and 142, 2004) as inline SVG, risk on the horizontal axis and
IL on the vertical, one point per finished run; and the self-contained HTML page around it with
the table of runs and their reproduce commands (``microagg explore --report MAP.html``).

Every text drawn is escaped (``report.escape``): the app checks the SVG against the few elements
and attributes a map has before it takes it as markup (``app.explore_runs.checked_svg``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..report import STYLE, axis_ticks, escape

#: the plot area's margins in pixels: left, right, top, bottom
MARGINS = (70, 20, 30, 55)


@dataclass(frozen=True)
class _Plot:
    """The plot area within a W x H picture and the value ranges it shows (padded: 8 % of the
    risk's span, 10 % of the IL's, IL not below 0 when no run's is)."""

    W: int
    H: int
    lo_x: float
    hi_x: float
    lo_y: float
    hi_y: float

    @property
    def left(self) -> int:
        return MARGINS[0]

    @property
    def top(self) -> int:
        return MARGINS[2]

    @property
    def width(self) -> int:
        return self.W - MARGINS[0] - MARGINS[1]

    @property
    def height(self) -> int:
        return self.H - MARGINS[2] - MARGINS[3]

    def sx(self, v):
        return self.left + self.width * (v - self.lo_x) / (self.hi_x - self.lo_x)

    def sy(self, v):
        return self.top + self.height - self.height * (v - self.lo_y) / (self.hi_y - self.lo_y)

    @classmethod
    def around(cls, rows, scale: float, max_risk, W: int, H: int) -> _Plot:
        xs = np.array([row["risk"] * scale for row in rows], dtype=float)
        ys = np.array([row["il"] for row in rows], dtype=float)
        xr = [float(xs.min()), float(xs.max())] + (
            [max_risk * scale] if max_risk is not None else []
        )
        lo_x, hi_x = min(xr), max(xr)
        lo_y, hi_y = float(ys.min()), float(ys.max())
        span_x = hi_x - lo_x or max(abs(hi_x), 1.0) * 0.1
        span_y = hi_y - lo_y or max(abs(hi_y), 1.0) * 0.1
        lo_x, hi_x = lo_x - 0.08 * span_x, hi_x + 0.08 * span_x
        lo_y, hi_y = (
            max(lo_y - 0.1 * span_y, 0.0) if lo_y >= 0 else lo_y - 0.1 * span_y,
            hi_y + 0.1 * span_y,
        )
        return cls(W, H, lo_x, hi_x, lo_y, hi_y)


def svg_map(rows, risk_label: str, scale: float, max_risk, W: int, H: int) -> str:
    """The map of ``rows`` (``Exploration.rows``: those with an IL and a risk) as SVG: the axes'
    grid lines, ``max_risk`` as a dashed line, the frontier joined, one point per run (group
    ``run-N``, labelled by k and method, its values in a tooltip), the recommended run ringed.
    ``scale`` multiplies the risk where it is shown (a share shown in %: 100)."""
    L, T = MARGINS[0], MARGINS[2]
    pw, ph = W - MARGINS[0] - MARGINS[1], H - MARGINS[2] - MARGINS[3]
    parts = [
        (
            f'<svg id="svg-ru-map" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
            f'viewBox="0 0 {W} {H}" role="img" aria-label="risk-utility map">'
        ),
        f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#ccc"/>',
    ]
    if not rows:
        parts.append(
            f'<text x="{L + pw / 2}" y="{T + ph / 2}" text-anchor="middle" font-size="13">'
            "no finished run</text></svg>"
        )
        return "".join(parts)
    plot = _Plot.around(rows, scale, max_risk, W, H)
    parts += _grid_lines(plot)
    if max_risk is not None:
        parts.append(_max_risk_line(plot, max_risk * scale))
    parts += _frontier_line(plot, rows, scale)
    parts += _points(plot, rows, scale, risk_label)
    parts.append(_axis_titles(plot, risk_label))
    return "".join(parts)


def _grid_lines(plot: _Plot) -> list:
    """A grid line and its value at each tick of either axis."""
    L, T, pw, ph = plot.left, plot.top, plot.width, plot.height
    parts = []
    for t in axis_ticks(plot.lo_x, plot.hi_x):
        parts.append(
            f'<line x1="{plot.sx(t):.1f}" x2="{plot.sx(t):.1f}" y1="{T}" y2="{T + ph}" '
            f'stroke="#eee"/><text x="{plot.sx(t):.1f}" y="{T + ph + 16}" font-size="11" '
            f'text-anchor="middle">{t:g}</text>'
        )
    for t in axis_ticks(plot.lo_y, plot.hi_y):
        parts.append(
            f'<line x1="{L}" x2="{L + pw}" y1="{plot.sy(t):.1f}" y2="{plot.sy(t):.1f}" '
            f'stroke="#eee"/><text x="{L - 6}" y="{plot.sy(t) + 4:.1f}" font-size="11" '
            f'text-anchor="end">{t:g}</text>'
        )
    return parts


def _max_risk_line(plot: _Plot, shown_max: float) -> str:
    """The max risk (in the axis's unit) as a dashed vertical line, labelled."""
    x = plot.sx(shown_max)
    return (
        f'<line class="max-risk" x1="{x:.1f}" x2="{x:.1f}" y1="{plot.top}" '
        f'y2="{plot.top + plot.height}" stroke="#c53030" stroke-dasharray="5,4"/>'
        f'<text x="{x + 4:.1f}" y="{plot.top + 12}" font-size="11" '
        f'fill="#c53030">max risk {shown_max:g}</text>'
    )


def _frontier_line(plot: _Plot, rows, scale: float) -> list:
    """The runs on the frontier joined by risk (none for fewer than two)."""
    front = sorted(
        (row for row in rows if row["frontier"]), key=lambda row: (row["risk"], row["il"])
    )
    if len(front) < 2:
        return []
    pts = " ".join(f"{plot.sx(row['risk'] * scale):.1f},{plot.sy(row['il']):.1f}" for row in front)
    return [
        f'<polyline class="frontier" points="{pts}" fill="none" stroke="#2b6cb0" '
        'stroke-width="1.8"/>'
    ]


def _points(plot: _Plot, rows, scale: float, risk_label: str) -> list:
    """One point per run, its label moved down while it would overlap one placed before."""
    parts, placed = [], []

    def label_y(x, y):
        while any(abs(x - px) < 60 and abs(y - py) < 11 for px, py in placed):
            y += 11
        placed.append((x, y))
        return y

    for row in rows:
        x, y = plot.sx(row["risk"] * scale), plot.sy(row["il"])
        ty = label_y(x + 7, y - 6)
        cls = (
            "point"
            + (" frontier" if row["frontier"] else "")
            + (" recommended" if row["recommended"] else "")
        )
        colour = "#2b6cb0" if row["frontier"] else "#999"
        tip = (
            f"run {row['id']}: k = {row['k']}, {row['method']}; IL {row['il']:.4f} %; "
            f"{risk_label} {row['risk'] * scale:.6g}"
            + (
                ""
                if row.get("suppressed") is None
                else f"; {row['suppressed']} key values suppressed"
            )
        )
        parts.append(
            f'<g id="run-{row["id"]}" class="{cls}" data-run="{row["id"]}">'
            f"<title>{escape(tip)}</title>"
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{colour}"/>'
            f'<text x="{x + 7:.1f}" y="{ty:.1f}" font-size="10">'
            f"k={row['k']} {escape(row['method'])}</text></g>"
        )
        if row["recommended"]:
            parts.append(
                f'<circle class="recommended-mark" cx="{x:.1f}" cy="{y:.1f}" r="10" fill="none" '
                f'stroke="#c53030" stroke-width="2.2"/><text x="{x + 7:.1f}" y="{y + 16:.1f}" '
                'font-size="10" fill="#c53030">recommended</text>'
            )
    return parts


def _axis_titles(plot: _Plot, risk_label: str) -> str:
    """The axes' titles and the legend line; closes the picture."""
    L, T, pw, ph = plot.left, plot.top, plot.width, plot.height
    return (
        f'<text x="{L + pw / 2}" y="{plot.H - 12}" font-size="12" text-anchor="middle">'
        f'{escape(risk_label)}</text><text x="16" y="{T + ph / 2}" font-size="12" '
        'text-anchor="middle" '
        f'transform="rotate(-90 16 {T + ph / 2})">information loss (IL, %)</text>'
        f'<text x="{L}" y="{T - 10}" font-size="11" fill="#555">blue: on the frontier (no other '
        "run has both lower risk and lower IL)</text></svg>"
    )


def report_html(exploration, risk: str | None = None, result_name: str = "RESULT.json") -> str:
    """A self-contained HTML page of an ``Exploration``: the R-U map and the table with each run's
    reproduce commands."""
    risk = risk or exploration.risk
    rows = exploration.rows(risk)
    head = [
        "id",
        "k",
        "method",
        "IL (%)",
        risk,
        "suppressed key values",
        "seconds",
        "frontier",
        "status",
        "reproduce",
    ]
    body = []
    for row in rows:
        cmds = exploration.commands(row["id"], result=result_name)
        cls = ' class="winner"' if row["recommended"] else ""
        il = "—" if row["il"] is None else f"{row['il']:.4f}"
        rv = "—" if row["risk"] is None else f"{row['risk']:.6g}"
        sec = "—" if row["seconds"] is None else f"{row['seconds']:.2f}"
        sup = "—" if row.get("suppressed") is None else str(row["suppressed"])
        status = row["status"] + (": " + row["note"] if row["note"] else "")
        body.append(
            f"<tr{cls}><td>{row['id']}</td><td>{row['k']}</td><td>{escape(row['method'])}</td>"
            f'<td class="num">{il}</td><td class="num">{rv}</td><td class="num">{sup}</td>'
            f'<td class="num">{sec}</td>'
            f"<td>{'yes' if row['frontier'] else ''}</td><td>{escape(status)}</td>"
            + (
                f'<td><code>{escape(cmds["from_explore"])}</code><br><code class="small">'
                f"{escape(cmds['protect'])}</code></td></tr>"
                if cmds
                else "<td></td></tr>"
            )
        )
    best = exploration.recommended(risk)
    limit = (
        "" if exploration.max_risk is None else f" with {escape(risk)} ≤ {exploration.max_risk:g}"
    )
    rec = (
        "none meets the risk target"
        if best is None
        else (
            f"run {best}: k = {exploration.runs[best].k}, "
            f"{escape(exploration.runs[best].method)}, IL {exploration.runs[best].il:.4f} %"
        )
    )
    done = sum(r.done for r in exploration.runs)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>microagg explore: risk-utility map</title><style>{STYLE}
code{{white-space:pre-wrap;word-break:break-all;font-size:.8rem}}</style></head>
<body>
<h1>Risk-utility map</h1>
<p class="small">{exploration.records} records; {done} of {len(rows)} runs done in a
budget of {exploration.budget} s
({exploration.seconds:.1f} s used). Risk: {escape(risk)}; IL: 100·SSE/SST on z-scores.
Duncan, Keller-McNulty &amp; Stokes, the R-U confidentiality map (NISS technical reports 121,
2001, and 142, 2004).</p>
<p><b>Recommended</b> (least IL{limit}): {rec}.</p>
<figure id="fig-ru-map">{exploration.map_svg(risk)}
<figcaption>One point per run, labelled by k and method; the frontier joined; the recommended run
ringed.</figcaption></figure>
<h2>Runs</h2>
<table><tr>{"".join(f"<th>{escape(h)}</th>" for h in head)}</tr>{"".join(body)}</table>
</body></html>
"""
