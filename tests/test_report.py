"""The HTML report: self-contained, written atomically, and its figures render in a real browser."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg.report import render_report, write_report

BROWSERS = (
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
    "headless_shell",
)
FIGURES = ("fig-group-sizes", "fig-pca-scatter", "fig-corr-original", "fig-corr-protected")

# Measures, in the browser, the laid-out size of every figure and of its marks, and appends the
# result to the page as JSON (read back from --dump-dom). Injected into a COPY of the report only.
PROBE = """<script>
(function () {
  const out = {};
  const visible = (svg, sel) => Array.from(svg.querySelectorAll(sel)).filter(e => {
    const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0; }).length;
  for (const fig of document.querySelectorAll('figure')) {
    const svg = fig.querySelector('svg');
    if (!svg) { out[fig.id] = null; continue; }
    const r = svg.getBoundingClientRect();
    out[fig.id] = {width: r.width, height: r.height, bars: visible(svg, 'rect.bar'),
                   circles: visible(svg, 'circle'), cells: visible(svg, 'rect.cell'),
                   caption: (fig.querySelector('figcaption') || {}).textContent || ''};
  }
  const pre = document.createElement('pre');
  pre.id = 'layout-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def find_browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def browser_command(browser: str, profile: Path) -> list[str]:
    return [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--no-first-run",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={profile}",
    ]


@pytest.fixture(scope="module")
def protected():
    df = microagg.datasets.load("census").head(240).copy()
    df["region"] = np.where(np.arange(len(df)) % 2 == 0, "north", "south")
    res = microagg.microaggregate(df, k=3, method="auto", strata="region", portfolio=["mdav", "md"])
    small = df.drop(columns="region").head(45)  # colgen proves its bound within seconds here
    single = microagg.microaggregate(
        small, k=3, method="auto", portfolio=["mdav", "colgen"], time_limit=60
    )
    return df, res, single, small


def test_report_has_every_section_and_no_external_reference(protected):
    df, res, single, small = protected
    html = render_report(single, small, {"input": "census.csv", "seed": 0})
    for fig in FIGURES:
        assert f'id="{fig}"' in html
    for section in (
        "Parameters",
        "Information loss",
        "Portfolio (auto)",
        "Disclosure risk",
        "Utility",
    ):
        assert f">{section}</h2>" in html
    assert "lower bound on IL (%)" in html and single.lower_bound is not None
    assert f"{single.lower_bound_il:.4f}" in html
    assert "census.csv" in html
    assert "distance-based record linkage" in html and "interval disclosure" in html
    # self-contained: no script, no stylesheet link, no fetched resource (the SVG namespace is a
    # name only)
    assert (
        "<script" not in html
        and "<link" not in html
        and "url(" not in html
        and "@import" not in html
    )
    refs = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', html)
    assert refs == []
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) <= {"http://www.w3.org/2000/svg"}


def test_report_lists_merged_strata_weights_and_per_stratum_portfolio(protected):
    df, res, _, _ = protected
    html = render_report(res, df)
    assert "fig-group-sizes" in html
    assert ">Strata</h2>" in html and "north" in html and "south" in html
    w = microagg.microaggregate(df, k=3, weights=[2.0] + [1.0] * 12, columns=list(df.columns[:13]))
    html = render_report(w, df)
    assert "variable weights" in html and "weighted IL (%)" in html


def test_write_report_is_atomic_and_checks_its_path(protected, tmp_path):
    df, res, _, _ = protected
    out = write_report(tmp_path / "r.html", res, df)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temporary file left behind
    with pytest.raises(ValueError, match=r"\.html"):
        write_report(tmp_path / "r.txt", res, df)
    with pytest.raises(ValueError, match="does not exist"):
        write_report(tmp_path / "nope" / "r.html", res, df)
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_report_for_array_input_and_per_variable_method(tmp_path):
    X = np.random.default_rng(0).normal(size=(50, 3))
    res = microagg.microaggregate(X, k=3, method="individual-ranking")
    html = render_report(res, X)
    assert "NOT k-anonymous" in html or "not k-anonymous" in html.lower()
    for fig in FIGURES:
        assert f'id="{fig}"' in html


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.skipif(find_browser() is None, reason="no Chromium/Chrome installed")
def test_report_renders_in_headless_chromium(protected, tmp_path):
    _, _, single, original = protected
    report = write_report(tmp_path / "report.html", single, original, {"input": "census.csv"})
    probe = tmp_path / "probe.html"
    probe.write_text(
        report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8"
    )
    cmd = browser_command(find_browser(), tmp_path / "profile")
    done = subprocess.run(
        cmd + ["--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    match = re.search(r'<pre id="layout-probe">(.*?)</pre>', done.stdout, re.S)
    assert match, "the browser did not run the layout probe: " + done.stdout[-500:]
    layout = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    n, d = original.shape
    for fig in FIGURES:
        assert layout[fig] is not None, f"{fig} has no svg"
        assert layout[fig]["width"] > 100 and layout[fig]["height"] > 100, (fig, layout[fig])
        assert layout[fig]["caption"].strip()
    sizes = np.bincount(single.group_sizes)
    assert layout["fig-group-sizes"]["bars"] == np.count_nonzero(sizes)
    assert layout["fig-pca-scatter"]["circles"] == 2 * n
    assert layout["fig-corr-original"]["cells"] == d * d
    assert layout["fig-corr-protected"]["cells"] == d * d

    # and the untouched report itself renders to a picture of the full page
    shot = tmp_path / "report.png"
    done = subprocess.run(
        cmd + ["--window-size=1200,2400", f"--screenshot={shot}", report.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert _png_size(shot) == (1200, 2400)
    assert shot.stat().st_size > 20_000  # a blank page compresses to a few kB


def test_report_rejects_mismatched_original(protected):
    df, res, _, _ = protected
    with pytest.raises((ValueError, KeyError)):
        render_report(res, pd.DataFrame({"x": [1.0, 2.0]}))


@pytest.mark.parametrize("standardize", [True, False])
def test_report_information_loss_is_the_runs(standardize):
    from microagg.report import render_report

    df = microagg.datasets.load("tarragona").head(200)
    res = microagg.microaggregate(df, k=3, standardize=standardize)
    html = render_report(res, df)
    shown = f"{res.information_loss:.4f}"
    assert html.count(f">{shown}<") >= 2  # "Information loss" and "Utility" tables agree
    util = microagg.measures.utility_report(
        df[res.columns], res.data[res.columns], scaler=res.scaler
    )
    assert util["information_loss"] == pytest.approx(res.information_loss)
    assert res.measured(df[res.columns]) == pytest.approx(res.standardized)


def test_report_with_text_categories():
    from microagg.report import render_report

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "x": rng.normal(size=60),
            "y": rng.normal(size=60),
            "c": rng.choice(["red", "green", "blue"], size=60),
        }
    )
    res = microagg.microaggregate(df, k=3, columns=["x", "y", "c"], categorical=["c"])
    html = render_report(res, df)
    assert "categorical c" in html and "k-anonymous" in html
