"""Self-contained HTML report of one protection run: parameters, IL, bound, figures, risk.

The figures are hand-written inline SVG (no plotting library, no script, no network access
needed to view the file): a group-size histogram, original-versus-protected scatter on the
first two principal components, and the correlation matrices before and after. The file is
written atomically (temporary file in the target folder, then rename).
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import InputError
from .io import (
    atomic_write,
    atomic_write_text,
    check_folder,
)  # noqa: F401  (atomic writes: their home is io; kept importable here)
from .standardize import Standardizer, principal_axes

__all__ = [
    "render_report",
    "write_report",
    "atomic_write",
    "atomic_write_text",
    "check_report_path",
]

_MAX_POINTS = (
    4000  # scatter points per series; larger data are subsampled (seeded, stated in the caption)
)

#: the reports' style sheet (the exploration's page uses it too: ``explore.map.report_html``)
STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2rem auto;
max-width:1100px;color:#222;line-height:1.4;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}
h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0}
td,th{padding:.2rem .7rem;border-bottom:1px solid #eee;
text-align:left;vertical-align:top}th{background:#f6f6f6}
td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{display:inline-block;margin:.5rem 1rem .5rem 0;vertical-align:top}
figcaption{font-size:.85rem;color:#555;max-width:520px}
.winner{font-weight:bold}.warn{color:#a40000}.small{font-size:.85rem;color:#555}
svg text{font-family:system-ui,sans-serif}
"""


def escape(x) -> str:
    """``x`` as text safe in HTML and SVG, quotes included."""
    return html.escape(str(x), quote=True)


def _fmt(x, digits=4) -> str:
    if x is None:
        return "—"
    if isinstance(x, (float, np.floating)):
        return f"{x:.{digits}f}"
    return escape(x)


def _values(data, columns) -> np.ndarray:
    if isinstance(data, pd.DataFrame):
        return data[list(columns)].to_numpy(dtype=np.float64)
    A = np.asarray(data, dtype=np.float64)
    A = A[:, None] if A.ndim == 1 else A
    return A[:, list(columns)] if A.shape[1] != len(columns) else A


def axis_ticks(lo: float, hi: float, count: int = 5) -> np.ndarray:
    """About ``count`` round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) within [lo,
    hi]."""
    if not np.isfinite(lo) or not np.isfinite(hi) or hi <= lo:
        return np.array([lo])
    raw = (hi - lo) / count
    mag = 10 ** np.floor(np.log10(raw))
    step = min((s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw), default=raw)
    start = np.ceil(lo / step) * step
    return np.round(np.arange(start, hi + step * 1e-9, step) / step) * step + 0.0  # no "-0" labels


def _svg_histogram(sizes: np.ndarray, k: int) -> str:
    """Bar chart of how many groups have each size."""
    counts = np.bincount(sizes)
    xs = np.flatnonzero(counts)
    lo, hi = int(xs.min()), int(xs.max())
    values = list(range(lo, hi + 1))
    W, H, L, B, T, R = 520, 300, 60, 45, 20, 15
    pw, ph = W - L - R, H - B - T
    top = max(int(counts.max()), 1)
    bw = pw / len(values)
    parts = [
        (
            f'<svg id="svg-group-sizes" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}"'
            f' viewBox="0 0 {W} {H}" role="img" aria-label="group-size histogram">'
        ),
        f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#ccc"/>',
    ]
    for t in axis_ticks(0, top):
        y = T + ph - ph * t / top
        parts.append(
            f'<line x1="{L}" x2="{L + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e4e4"/>'
            f'<text x="{L - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{t:g}</text>'
        )
    for i, v in enumerate(values):
        c = int(counts[v]) if v < len(counts) else 0
        h = ph * c / top
        x = L + i * bw
        parts.append(
            f'<rect class="bar" x="{x + bw * 0.1:.1f}" y="{T + ph - h:.1f}" width="{bw * 0.8:.1f}" '
            f'height="{h:.1f}" fill="{"#2b6cb0" if v >= k else "#c53030"}"><title>size {v}: {c} '
            "group(s)</title></rect>"
        )
        if len(values) <= 30 or i % max(1, len(values) // 15) == 0:
            parts.append(
                f'<text x="{x + bw / 2:.1f}" y="{T + ph + 16}" font-size="11" '
                f'text-anchor="middle">{v}</text>'
            )
    parts.append(
        f'<text x="{L + pw / 2}" y="{H - 6}" font-size="12" text-anchor="middle">group size</text>'
        f'<text x="14" y="{T + ph / 2}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {T + ph / 2})">number of groups</text></svg>'
    )
    return "".join(parts)


def _principal_axes(Z: np.ndarray) -> np.ndarray:
    """(d, 2) loadings of the first two principal components of the standardised original, each
    axis's largest loading positive (reproducible pictures)."""
    if Z.shape[1] == 1:
        return np.array([[1.0, 0.0]])
    return principal_axes(Z, 2, sign="largest")[1]


def _svg_scatter(Z: np.ndarray, Zp: np.ndarray, seed: int = 0) -> tuple[str, int]:
    """Original (blue) and protected (orange) records on the original's first two PCs."""
    A = _principal_axes(Z)
    P, Pp = Z @ A, Zp @ A
    n = len(P)
    idx = np.arange(n)
    if n > _MAX_POINTS:
        idx = np.sort(np.random.default_rng(seed).choice(n, _MAX_POINTS, replace=False))
    both = np.vstack([P[idx], Pp[idx]])
    lo, hi = both.min(axis=0), both.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - 0.04 * span, hi + 0.04 * span
    span = hi - lo
    W, H, L, B, T, R = 520, 420, 55, 45, 20, 15
    pw, ph = W - L - R, H - B - T

    def sx(v):
        return L + pw * (v - lo[0]) / span[0]

    def sy(v):
        return T + ph - ph * (v - lo[1]) / span[1]

    parts = [
        (
            f'<svg id="svg-pca-scatter" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}"'
            f' viewBox="0 0 {W} {H}" role="img" aria-label="original versus protected on the first'
            ' two principal components">'
        ),
        f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#ccc"/>',
    ]
    for t in axis_ticks(lo[0], hi[0]):
        parts.append(
            f'<text x="{sx(t):.1f}" y="{T + ph + 15}" font-size="11"'
            f' text-anchor="middle">{t:g}</text>'
        )
    for t in axis_ticks(lo[1], hi[1]):
        parts.append(
            f'<text x="{L - 6}" y="{sy(t) + 4:.1f}" font-size="11" text-anchor="end">{t:g}</text>'
        )
    for cls, pts, colour, r in (
        ("orig", P[idx], "#2b6cb0", 2.2),
        ("prot", Pp[idx], "#dd6b20", 2.2),
    ):
        parts.append(f'<g class="series-{cls}" fill="{colour}" fill-opacity="0.55">')
        parts.extend(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="{r}"/>' for x, y in pts)
        parts.append("</g>")
    parts.append(
        f'<rect x="{L + 10}" y="{T + 8}" width="10" height="10" fill="#2b6cb0"/><text x="{L + 25}"'
        f' y="{T + 17}" font-size="12">original</text><rect x="{L + 95}" y="{T + 8}" width="10"'
        f' height="10" fill="#dd6b20"/><text x="{L + 110}" y="{T + 17}"'
        f' font-size="12">protected</text><text x="{L + pw / 2}" y="{H - 8}" font-size="12"'
        f' text-anchor="middle">first principal component</text><text x="14" y="{T + ph / 2}"'
        f' font-size="12" text-anchor="middle" transform="rotate(-90 14 {T + ph / 2})">second'
        " principal component</text></svg>"
    )
    return "".join(parts), len(idx)


def _colour(r: float) -> str:
    """Diverging blue (−1) – white (0) – red (+1)."""
    r = float(np.clip(r, -1, 1))
    if r >= 0:
        return f"rgb(255,{int(255 * (1 - r))},{int(255 * (1 - r))})"
    return f"rgb({int(255 * (1 + r))},{int(255 * (1 + r))},255)"


def _svg_heatmap(R: np.ndarray, names: list[str], ident: str, label: str) -> str:
    d = len(names)
    cell = max(14, min(36, 420 // max(d, 1)))
    L, T = 110, 20
    W, H = L + cell * d + 10, T + cell * d + 100
    parts = [
        f'<svg id="{ident}" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" role="img" aria-label="{escape(label)}">'
    ]
    for i in range(d):
        parts.append(
            f'<text x="{L - 4}" y="{T + cell * i + cell / 2 + 4:.1f}" font-size="10" '
            f'text-anchor="end">{escape(names[i])[:16]}</text>'
        )
        x = L + cell * i + cell / 2
        parts.append(
            f'<text x="{x:.1f}" y="{T + cell * d + 6}" font-size="10" text-anchor="end" '
            f'transform="rotate(-60 {x:.1f} {T + cell * d + 6})">{escape(names[i])[:16]}</text>'
        )
        for j in range(d):
            parts.append(
                f'<rect class="cell" x="{L + cell * j}" y="{T + cell * i}" width="{cell}"'
                f' height="{cell}" fill="{_colour(R[i, j])}"'
                f' stroke="#fff"><title>{escape(names[i])} × {escape(names[j])}:'
                f" {R[i, j]:.3f}</title></rect>"
            )
            if cell >= 26:
                parts.append(
                    f'<text x="{L + cell * j + cell / 2}" y="{T + cell * i + cell / 2 + 3}"'
                    f' font-size="8" text-anchor="middle">{R[i, j]:.2f}</text>'
                )
    parts.append("</svg>")
    return "".join(parts)


def _correlation(X: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        R = np.atleast_2d(np.corrcoef(X, rowvar=False))
    return np.nan_to_num(R, nan=0.0)


def _table(rows, header=None) -> str:
    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>")
    for row in rows:
        cls = ""
        if isinstance(row, tuple) and len(row) and isinstance(row[0], dict):
            cls, row = row[0].get("class", ""), row[1:]
        cells = "".join(
            (
                f'<td class="num">{_fmt(c)}</td>'
                if isinstance(c, (int, float, np.number)) and not isinstance(c, bool)
                else f"<td>{_fmt(c)}</td>"
            )
            for c in row
        )
        out.append(f'<tr class="{cls}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    out.append("</table>")
    return "".join(out)


def report_audit(result, original, p: float = 10.0):
    """The audit the report shows: the result's own (``Result.audit``: the run's figures and the
    published data's, the one object the command line and the app show), or, for a result
    audited without its file figures or with another rank-interval ``p``, that audit computed now
    (``measures.audit_files``, as the pipeline computes it). Returns (audit, X, Xp, continuous QI
    columns) with X, Xp the continuous QI values for the figures."""
    from .measures import audit_files

    cols = result.continuous_columns
    if not cols:  # the figures' tables, no drawing (the figures draw continuous values)
        n = len(result.labels)
        return result.audit, np.empty((n, 0)), np.empty((n, 0)), []
    X, Xp = _values(original, cols), _values(result.data, cols)
    if X.shape != Xp.shape:
        raise InputError(
            f"the original ({X.shape}) and protected ({Xp.shape}) QI values differ in shape"
        )
    audit = result.audit
    if (
        "utility" not in {f.group for f in audit.figures}
        or audit.get("interval_disclosure_p", p) != p
    ):
        if result.audit_roles is None or result.shuffled:
            raise InputError("this result holds no audit of its published data to report")
        import dataclasses

        columns = (
            list(original.columns)
            if isinstance(original, pd.DataFrame)
            else list(range(X.shape[1]))
        )
        roles = dataclasses.replace(result.audit_roles, p=float(p))
        files = audit_files(_frame_of(original, columns), _frame_of(result.data, columns), roles)
        audit = result.audit.with_figures(files)
    return audit, X, Xp, cols


def _frame_of(data, columns):
    """Data (a DataFrame, another frame, or an array of the input's shape) as a DataFrame with
    ``columns`` (as the pipeline's audit reads it; not imported from the pipeline, which imports
    ``Result``: ``Result.report`` imports this module)."""
    if isinstance(data, pd.DataFrame):
        return data
    if not isinstance(data, np.ndarray):  # a polars, pyarrow, ... frame
        from .frames import to_pandas

        return to_pandas(data)
    return pd.DataFrame(np.asarray(data).reshape(len(data), -1), columns=columns)


def _parameters(result, names, records, settings) -> list:
    kinds = result.publication.kinds
    qis = ", ".join(f"{c} ({kinds.get(str(c), 'continuous')})" for c in result.columns)
    rows = [
        ("method", result.method),
        ("k", result.k),
        ("records", records),
        ("quasi-identifiers", qis),
    ]
    roles = result.audit_roles
    if roles is not None:
        for label, value in (
            ("other key variables", roles.keys),
            ("sensitive columns", roles.sensitive),
        ):
            if value:
                rows.append((label, ", ".join(map(str, value))))
    rows += [(f"parameter {k}", json.dumps(v, default=str)) for k, v in result.params.items()]
    rows += [
        (k, json.dumps(v, default=str) if not isinstance(v, str) else v)
        for k, v in (settings or {}).items()
        if v is not None
    ]
    if result.weights.variable is not None:
        rows.append(("variable weights", json.dumps(result.weights.variable)))
    if result.weights.sample_weight is not None:
        rows.append(("sample weight", result.weights.sample_weight))
    for m in result.strata.merges if result.strata is not None else ():
        rows.append(
            ("merged stratum", f"{m['stratum']} ({m['size']} records) into {m['merged_into']}")
        )
    for m in result.strata.mapping if result.strata is not None else ():
        rows.append(
            (
                "published stratum",
                f"{m['stratum']}: "
                + (
                    f"published as {m['published_as']}"
                    if m["published_as"] is not None
                    else "suppressed"
                ),
            )
        )
    return rows


def _run_figures(result, audit) -> list:
    """The Information loss table: the run's figures (the registry's "run" measures)."""
    shown = {f.name: f for f in audit.rows("run")}
    rows = [
        (shown[name].measure.label, shown[name].value)
        for name in ("information_loss", "sse", "sst", "weighted_information_loss")
        if name in shown
    ]
    rows.append(
        (
            shown["lower_bound_il"].measure.label,
            "not known" if result.lower_bound is None else shown["lower_bound_il"].value,
        )
    )
    if result.gap is not None:
        rows.append((shown["gap"].measure.label, result.gap))
    rows += [
        ("groups", audit["groups"]),
        ("group sizes", f"{audit['group_size_min']} … {audit['group_size_max']}"),
        ("seconds", result.seconds),
    ]
    if not result.publication.plain:
        rows.append(("representatives", result.publication.note))
    return rows


def _portfolio_html(result) -> str:
    if result.portfolio is None:
        return ""
    rows = []
    for r in result.portfolio.rows:
        mark = {"class": "winner"} if r["method"] == result.portfolio.winner else {}
        rows.append(
            (
                mark,
                r["method"],
                r.get("il"),
                r.get("lower_bound_il"),
                r.get("seconds"),
                r.get("status"),
            )
        )
    return (
        f"<h2>Portfolio (auto)</h2><p>winner: <b>{escape(result.portfolio.winner)}</b></p>"
        + _table(rows, ["method", "IL (%)", "lower bound IL (%)", "seconds", "status"])
    )


def _strata_html(result) -> str:
    if result.strata is None or not result.strata.runs:
        return ""
    rows = [
        (run.name, run.records, run.sse, run.lower_bound, run.method_facts.get("winner", ""))
        for run in result.strata.runs
    ]
    return (
        "<h2>Strata</h2><p>Groups never cross strata; SSE on the (weighted) standardised data "
        "the method saw.</p>"
        + _table(rows, ["stratum", "records", "SSE", "lower bound", "auto winner"])
    )


def _measure_rows(audit, group: str, k: int | None = None) -> list:
    """(label, shown value, reference) per figure of a group (the registry's labels)."""
    rows = []
    for f in audit.rows(group):
        if f.name == "interval_disclosure_p" or (group == "utility" and f.name == "smallest_group"):
            continue
        value = f.value * f.measure.scale if isinstance(f.value, float) else f.value
        reference = f.measure.reference
        if f.name == "smallest_group" and k is not None:
            reference = "k-anonymous" if f.value >= k else "NOT k-anonymous"
        rows.append((f.measure.label, value, reference))
    return rows


def render_report(result, original, settings: dict | None = None, *, p: float = 10.0) -> str:
    """The report as an HTML string.

    ``result``: a ``microagg.Result``; ``original``: the data passed to ``microaggregate`` (same
    rows, a DataFrame or an array holding the result's QI columns); ``settings``: further
    run parameters to list (input file, seed, time limit, strata, ...); ``p``: the rank-interval
    percentage of the interval-disclosure measure. Every figure comes from the run's audit and
    the measure registry (``report_audit``), as the app's and the command line's do. A run of
    more than REPORT_COLUMNS quasi-identifiers is reported on the first ones
    (``measured_view``), and the report says so.
    """
    from .report_columns import measured_view

    result, note = measured_view(result)
    if note:
        settings = {**(settings or {}), "measures and figures": note}
    audit, X, Xp, cols = report_audit(result, original, p)
    names = [str(c) for c in cols]
    all_names = [str(c) for c in result.columns]
    util_rows = _measure_rows(audit, "utility")
    for c, m in audit.categories.items():
        util_rows.append(
            (
                f"categorical {c}: values changed (%) / distribution distance (TVD)",
                f"{100 * m['changed_share']:.2f} / {m['distribution_tvd']:.4f}",
                "share of records whose category changed; ½·Σ|p − p′| over the categories",
            )
        )
    risk_rows = [
        (
            (
                label
                if not label.startswith("interval disclosure")
                else f"interval disclosure at p = {p:g}% (%)"
            ),
            value,
            ref,
        )
        for label, value, ref in _measure_rows(audit, "risk", result.k)
    ]
    warn = ""
    if result.per_variable:
        warn = (
            '<p class="warn">Each variable was grouped on its own: combinations of values are NOT '
            "k-anonymous and the disclosure risk is higher than with multivariate methods.</p>"
        )
    file_lines = [
        line for line in result._audit_lines_of(audit) if not line.startswith("warning: ")
    ]
    published = (
        "<h2>The published file</h2><ul>"
        + "".join(f"<li>{escape(line)}</li>" for line in file_lines)
        + "</ul>"
        + "".join(f'<p class="warn">{escape(w)}</p>' for w in audit.warnings)
        + '<p class="small">Every figure: its definition, formula and reference in'
        " docs/audit.md.</p>"
    )
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>microagg report: {escape(result.method)}, k = {result.k}</title><style>{STYLE}</style></head>
<body>
<h1>Microaggregation report</h1>
<p class="small">microagg, {stamp}. Self-contained: figures are inline SVG.</p>
{warn}
<h2>Parameters</h2>{_table(_parameters(result, all_names, len(X), settings))}
<h2>Information loss</h2>{_table(_run_figures(result, audit))}
{_portfolio_html(result)}
{_strata_html(result)}
{published}
<h2>Disclosure risk</h2>{_table(risk_rows, ["measure", "value", "meaning"])}
<h2>Utility</h2>{_table(util_rows, ["measure", "value", "reference"])}
{_figures_html(result, X, Xp, names)}
</body></html>
"""


def _figures_html(result, X, Xp, names) -> str:
    """The figures: group sizes, original against protected on the first two principal components
    (z-scores of the original), the correlation matrices before and after; with missing values,
    on the records whose every QI is present (the audit's complete records). Without a continuous
    quasi-identifier, the group sizes only."""
    if not X.shape[1]:
        return f"""<h2>Figures</h2>
<figure id="fig-group-sizes">{_svg_histogram(result.all_group_sizes, result.k)}
<figcaption>Group sizes: number of groups of each size. No continuous quasi-identifier: the other
figures draw continuous values.</figcaption></figure>"""
    complete = ~(np.isnan(X).any(axis=1) | np.isnan(Xp).any(axis=1))
    whole = len(X)
    if not complete.all():
        X, Xp = X[complete], Xp[complete]
    zscale = Standardizer.fit(X, warn=False)
    scatter, shown = _svg_scatter(zscale.transform(X), zscale.transform(Xp))
    scatter_note = (
        "" if shown == whole else f" ({shown} of {whole} records shown, chosen at random)"
    )
    if len(X) < whole:
        scatter_note = (
            f" ({shown} of the {len(X)} records with every quasi-identifier present, of {whole})"
        )
    sizes = result.all_group_sizes
    return f"""<h2>Figures</h2>
<figure id="fig-group-sizes">{_svg_histogram(sizes, result.k)}
<figcaption>Group sizes: number of groups of each size (red: below k, which never happens in a valid
partition).</figcaption></figure>
<figure id="fig-pca-scatter">{scatter}
<figcaption>Original (blue) and protected (orange) records projected on the first two principal
components of the standardised original quasi-identifiers{scatter_note}.</figcaption></figure>
<figure id="fig-corr-original">{
        _svg_heatmap(_correlation(X), names, "svg-corr-original", "correlation matrix, original")
    }
<figcaption>Correlation matrix of the original quasi-identifiers (blue −1, white 0, red +1).
</figcaption></figure>
<figure id="fig-corr-protected">{
        _svg_heatmap(_correlation(Xp), names, "svg-corr-protected", "correlation matrix, protected")
    }
<figcaption>Correlation matrix of the protected quasi-identifiers.</figcaption></figure>"""


def check_report_path(path) -> Path:
    """The report path, if it can be written (.html, existing writable folder, not a directory);
    InputError otherwise."""
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm"):
        raise InputError(f"the report must end in .html, got {path.name}")
    if path.is_dir():
        raise InputError(f"the report is a directory: {path}")
    check_folder(path.parent, "report")
    return path


def write_report(path, result, original, settings: dict | None = None, *, p: float = 10.0) -> Path:
    """Render the report and write it atomically to ``path`` (.html); returns the path."""
    path = check_report_path(path)
    return atomic_write_text(path, render_report(result, original, settings, p=p))
