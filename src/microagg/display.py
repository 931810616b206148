"""How results show themselves: a short ``__repr__`` and a small ``_repr_html_`` (a notebook's
rich display) for ``Result``, ``Audit``, the published file and the exploration, and the plots
(``Result.plot``, drawn with matplotlib when it is installed).

What a statistician reads first comes first: the information loss, the smallest group against k,
the method, the key variables' k-anonymity and the disclosure risk, then the warnings. The HTML is
self-contained (inline SVG, no script, no network) and kept small (well under 50 KB whatever the
data's size: the histogram's bars are bucketed, long lists cut).
"""

from __future__ import annotations

import html

import numpy as np

__all__ = [
    "result_repr",
    "result_html",
    "audit_repr",
    "audit_html",
    "published_repr",
    "published_html",
    "exploration_repr",
    "exploration_html",
    "il_per_variable",
    "TextTable",
    "table_html",
    "plot",
]

_STYLE = (
    "<style>.microagg-box table{border-collapse:collapse;margin:.3rem 0}"
    ".microagg-box td,.microagg-box th{padding:.1rem .6rem;text-align:left;"
    "border-bottom:1px solid #eee}.microagg-box td.num{text-align:right;"
    "font-variant-numeric:tabular-nums}.microagg-box .warn{color:#a40000}"
    ".microagg-box .small{font-size:.85em;color:#555}</style>"
)
_MAX_ROWS = 40  # table rows shown (variables, runs, warnings); the rest counted
_MAX_BARS = 40  # histogram bars: group sizes bucketed beyond this


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _num(x, digits: int = 4) -> str:
    if x is None:
        return "—"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    if isinstance(x, (float, np.floating)):
        return "—" if not np.isfinite(x) else f"{float(x):.{digits}f}"
    return _e(x)


def _box(title: str, body: str) -> str:
    return f'<div class="microagg-box">{_STYLE}<strong>{_e(title)}</strong>{body}</div>'


def _table(rows, header=None) -> str:
    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr>")
    for row in rows[:_MAX_ROWS]:
        cells = "".join(
            f'<td class="num">{v}</td>' if i else f"<td>{v}</td>" for i, v in enumerate(row)
        )
        out.append(f"<tr>{cells}</tr>")
    if len(rows) > _MAX_ROWS:
        out.append(f'<tr><td class="small">... {len(rows) - _MAX_ROWS} more</td></tr>')
    out.append("</table>")
    return "".join(out)


def _warnings_html(warnings) -> str:
    shown = list(warnings)[:_MAX_ROWS]
    more = len(warnings) - len(shown)
    return "".join(f'<p class="warn">warning: {_e(w)}</p>' for w in shown) + (
        f'<p class="small">... {more} more warnings</p>' if more > 0 else ""
    )


# --- the risk figures a statistician reads first (registered measure name, its label here) ---
_RISK = (
    ("key_smallest_frequency", "smallest key combination (records)"),
    ("key_records_below_k", "records in key combinations below k"),
    ("record_linkage_dbrl", "record linkage (distance-based), share"),
    ("interval_disclosure", "interval disclosure, share"),
    ("reidentification_expected", "re-identifications expected"),
    ("reidentification_max", "largest individual risk"),
)


def _risk_rows(audit) -> list:
    risk = audit.group("risk")
    return [(_e(label), _num(risk[name])) for name, label in _RISK if name in risk]


# --- Result ---
def result_repr(res) -> str:
    """One line: the method, k, the records, IL and the smallest group (no audit computed)."""
    a = res._run_audit
    return (
        f"<microagg.Result method={res.method!r} k={res.k} records={len(res.labels)}"
        f" QIs={len(res.columns)} IL={res.information_loss:.4f}%"
        f" smallest group={a.get('group_size_min')} groups={a.get('groups')}"
        f" seconds={res.seconds:.3f}>"
    )


def il_per_variable(res) -> dict:
    """Each QI's information loss in percent, 100·SSE_j/SST_j on the values the run measured
    (``Result.standardized``: z-scores, or the embedding's columns with categorical QIs, then
    named by embedding column; kept as codes, by QI column). Empty when the result holds no
    measured values."""
    from .onehot import OneHot, il_per_column

    Z = res.standardized
    if Z is None:
        return {}
    if isinstance(Z, OneHot):  # nominal QIs kept as codes (many levels): per QI column
        return il_per_column(Z, res.columns, res.labels)
    Z = np.asarray(Z, dtype=np.float64)
    Z = Z[:, None] if Z.ndim == 1 else Z
    labels = np.asarray(res.labels)
    names = (
        [str(c) for c in res.columns]
        if Z.shape[1] == len(res.columns)
        else [f"embedding {j}" for j in range(Z.shape[1])]
    )
    out = {}
    for j, name in enumerate(names):
        lab = labels[:, j] if labels.ndim == 2 else labels
        lab = np.unique(lab, return_inverse=True)[1].ravel()
        counts = np.bincount(lab)
        means = np.bincount(lab, weights=Z[:, j]) / np.maximum(counts, 1)
        within = float(np.sum((Z[:, j] - means[lab]) ** 2))
        total = float(np.sum((Z[:, j] - Z[:, j].mean()) ** 2))
        out[name] = 100.0 * within / total if total > 0 else 0.0
    return out


def result_html(res) -> str:
    """The Result in a notebook: the run's figures, the published data's risk, IL per variable,
    the group sizes and the warnings, and where the full report is."""
    a = res.audit
    run = [
        ("method", _e(res.method)),
        ("k", _num(res.k)),
        ("records", _num(len(res.labels))),
        ("quasi-identifiers", _e(", ".join(map(str, res.columns[:20]))) + _more(res.columns, 20)),
        ("information loss (IL, %)", _num(res.information_loss)),
        ("smallest group", _num(a.get("group_size_min"))),
        ("largest group", _num(a.get("group_size_max"))),
        ("groups", _num(a.get("groups"))),
    ]
    if res.lower_bound is not None:
        run.append(
            ("lower bound on IL (%) / gap (%)", f"{_num(res.lower_bound_il)} / {_num(res.gap, 3)}")
        )
    run.append(("seconds", _num(res.seconds, 3)))
    risk = _risk_rows(a)
    per_var = il_per_variable(res)
    body = [
        _table(run),
        ("<p>Disclosure risk of the published data</p>" + _table(risk)) if risk else "",
        _bars_svg(per_var, "IL per variable (%)") if len(per_var) > 1 else "",
        _histogram_svg(res.all_group_sizes, res.k),
        _warnings_html(a.warnings),
        '<p class="small">res.summary() in words, res.report() the full HTML report,'
        " res.audit every figure, res.plot() the figures with matplotlib.</p>",
    ]
    return _box("microagg Result", "".join(body))


def _more(items, shown: int) -> str:
    return f", ... ({len(items)} columns)" if len(items) > shown else ""


def _bars_svg(values: dict, title: str) -> str:
    """Horizontal bars, one per variable (at most _MAX_ROWS)."""
    items = list(values.items())[:_MAX_ROWS]
    W, row, left = 420, 16, 130
    H = row * len(items) + 24
    top = max(max(v for _, v in items), 1e-12)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" role="img"'
        f' aria-label="{_e(title)}"><text x="0" y="12" font-size="12">{_e(title)}</text>'
    ]
    for i, (name, v) in enumerate(items):
        y = 18 + i * row
        w = (W - left - 60) * v / top
        parts.append(
            f'<text x="{left - 4}" y="{y + 11}" font-size="11" text-anchor="end">'
            f"{_e(str(name)[:20])}</text>"
            f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{row - 4}" fill="#2b6cb0"/>'
            f'<text x="{left + w + 4:.1f}" y="{y + 11}" font-size="11">{v:.2f}</text>'
        )
    parts.append("</svg>")
    return "<div>" + "".join(parts) + "</div>"


def _size_buckets(sizes: np.ndarray) -> list:
    """(lowest size, highest size, groups) per bar: one size a bar, or equal ranges of sizes
    when there are more than _MAX_BARS sizes."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(sizes) == 0:
        return []
    lo, hi = int(sizes.min()), int(sizes.max())
    width = max(1, -(-(hi - lo + 1) // _MAX_BARS))
    counts = np.bincount((sizes - lo) // width)
    return [(lo + i * width, lo + (i + 1) * width - 1, int(c)) for i, c in enumerate(counts)]


def _histogram_svg(sizes, k: int) -> str:
    """How many groups have each size (red: below k, which a valid partition never has)."""
    buckets = _size_buckets(sizes)
    if not buckets:
        return ""
    W, H, L, B = 420, 150, 40, 30
    pw, ph = W - L - 10, H - B - 20
    top = max(c for _, _, c in buckets)
    bw = pw / len(buckets)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" role="img"'
        ' aria-label="group sizes"><text x="0" y="12" font-size="12">group sizes (number of'
        f" groups of each size; {top:,} at most)</text>"
    ]
    for i, (a, b, c) in enumerate(buckets):
        h = ph * c / top
        x = L + i * bw
        label = str(a) if a == b else f"{a}-{b}"
        parts.append(
            f'<rect x="{x + bw * 0.1:.1f}" y="{20 + ph - h:.1f}" width="{bw * 0.8:.1f}"'
            f' height="{h:.1f}" fill="{"#2b6cb0" if a >= k else "#c53030"}">'
            f"<title>size {label}: {c} group(s)</title></rect>"
        )
        if len(buckets) <= 12 or i % max(1, len(buckets) // 8) == 0:
            parts.append(
                f'<text x="{x + bw / 2:.1f}" y="{H - 14}" font-size="10"'
                f' text-anchor="middle">{label}</text>'
            )
    parts.append("</svg>")
    return "<div>" + "".join(parts) + "</div>"


# --- Audit ---
def audit_repr(audit) -> str:
    groups: dict = {}
    for f in audit.figures:
        groups[f.group] = groups.get(f.group, 0) + 1
    shown = ", ".join(f"{g}: {n} figures" for g, n in groups.items()) or "no figures"
    il = audit.get("information_loss")
    smallest = audit.get("group_size_min")
    return (
        f"<microagg Audit {shown}; IL={_num(il)}% smallest group={_num(smallest)}"
        f" warnings={len(audit.warnings)}>"
    )


def audit_html(audit) -> str:
    """Every figure by group, with its label and unit, and the warnings."""
    body = []
    for group in ("run", "utility", "risk"):
        rows = [
            (
                _e(f.measure.label) + (f" ({_e(f.measure.unit)})" if f.measure.unit else ""),
                _e(f.text()),
            )
            for f in audit.rows(group)
        ]
        if rows:
            body.append(f"<p>{group}</p>" + _table(rows))
    for c, m in list(audit.categories.items())[:_MAX_ROWS]:
        body.append(
            f"<p>categorical {_e(c)}: {100 * m['changed_share']:.2f}% of values changed,"
            f" distribution distance (TVD) {m['distribution_tvd']:.4f}</p>"
        )
    body.append(_warnings_html(audit.warnings))
    return _box("microagg Audit", "".join(body))


# --- the published file ---
def published_repr(file) -> str:
    anonymous = "k-anonymous" if file.k_anonymous else "NOT k-anonymous"
    return (
        f"<microagg PublishedFile {file.path} ({anonymous} on {len(file.key_variables)} key"
        f" variables, smallest combination {file.smallest_frequency}, read back by"
        f" {file.read_back_by})>"
    )


def published_html(file) -> str:
    rows = [
        ("file", _e(file.path)),
        ("read back by", _e(file.read_back_by)),
        (
            "key variables",
            _e(", ".join(map(str, file.key_variables[:20]))) + _more(file.key_variables, 20),
        ),
        ("k-anonymous on them", _num(bool(file.k_anonymous))),
        ("smallest key combination (records)", _num(file.smallest_frequency)),
        ("row order", "shuffled" if file.shuffled else "the input's"),
        ("columns published as they came in", _num(len(file.unchanged))),
    ]
    for name in ("manifest", "report", "labels"):
        if getattr(file, name) is not None:
            rows.append((name, _e(getattr(file, name))))
    return _box("microagg published file", _table(rows))


# --- Exploration ---
def exploration_repr(ex) -> str:
    best = ex.recommended()
    done = sum(1 for r in ex.runs if r.done)
    pick = "none" if best is None else f"run {best} (k={ex.runs[best].k}, {ex.runs[best].method})"
    return (
        f"<microagg Exploration {len(ex.runs)} runs ({done} done) on {ex.records} records,"
        f" risk={ex.risk!r}, recommended {pick}>"
    )


def exploration_html(ex) -> str:
    """The risk-utility map inline (SVG) and the runs' table."""
    best = ex.recommended()
    head = (
        "<p>recommended: "
        + (
            "none meets max_risk"
            if best is None
            else f"run {best} (k = {ex.runs[best].k}, {_e(ex.runs[best].method)},"
            f" IL {_num(ex.runs[best].il)}%)"
        )
        + "</p>"
    )
    return _box(
        f"microagg Exploration: {len(ex.runs)} runs on {ex.records:,} records",
        head + ex.map_svg(width=600, height=380) + table_html(ex),
    )


def table_html(ex, risk: str | None = None) -> str:
    """The runs' table (frontier *, recommended >)."""
    risk = risk or ex.risk
    rows = []
    for row in ex.rows(risk):
        mark = (">" if row["recommended"] else "") + ("*" if row["frontier"] else "")
        rows.append(
            (
                f"{mark}{row['id']}",
                _num(row["k"]),
                _e(row["method"]),
                _num(row["il"]),
                _num(row["risk"], 6),
                _num(row["seconds"], 2),
                _e(row["status"] + (f": {row['note']}" if row["note"] else "")),
            )
        )
    return _table(rows, ["run", "k", "method", "IL %", risk, "seconds", "status"]) + (
        '<p class="small">* on the frontier; > recommended</p>'
    )


class TextTable(str):
    """A table as text (printed, compared, written as it always was) that a notebook displays
    as HTML."""

    def __new__(cls, text: str, html_text: str = ""):
        obj = super().__new__(cls, text)
        obj._html = html_text
        return obj

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return f'<div class="microagg-box">{_STYLE}{self._html}</div>'


# --- plots ---
def plot(res, kind: str = "il", ax=None):
    """A matplotlib figure of the result: ``kind="il"`` the information loss per variable,
    ``"sizes"`` the group sizes; drawn on ``ax`` when given. Returns the Axes. matplotlib is
    optional (``pip install microagg[bench]`` or ``matplotlib``)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:  # optional: the HTML display needs none
        raise ImportError("Result.plot needs matplotlib: pip install matplotlib") from error
    from .errors import ParameterError

    if kind not in ("il", "sizes"):
        raise ParameterError(f"plot kind must be 'il' or 'sizes', got {kind!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    if kind == "il":
        per_var = il_per_variable(res)
        ax.barh(list(per_var), list(per_var.values()), color="#2b6cb0")
        ax.invert_yaxis()
        ax.set_xlabel("information loss (%)")
        ax.set_title(
            f"IL per variable ({res.method}, k = {res.k}; overall {res.information_loss:.2f}%)"
        )
    else:
        sizes = np.asarray(res.all_group_sizes)
        values, counts = np.unique(sizes, return_counts=True)
        ax.bar(values, counts, color=["#2b6cb0" if v >= res.k else "#c53030" for v in values])
        ax.set_xlabel("group size")
        ax.set_ylabel("number of groups")
        ax.set_title(f"group sizes ({res.method}, k = {res.k})")
    return ax
