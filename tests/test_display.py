"""Results show themselves (issue 56): a short repr and a small HTML display for Result, Audit,
the published file and the exploration; the report from a Result; progress in a pipe."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg import display, progress

LIMIT = 50_000  # bytes: a notebook's display of any result stays under this


def _frame(n: int, d: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(size=(n, d)), columns=[f"x{j}" for j in range(d)])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(20, 400), d=st.integers(1, 6), k=st.integers(2, 6), seed=st.integers(0, 99))
def test_the_display_of_a_result_is_small_and_shows_il_and_the_smallest_group(n, d, k, seed):
    res = microagg.microaggregate(_frame(n, d, seed), k=k, method="mdav")
    html_text, text = res._repr_html_(), repr(res)
    smallest = int(np.min(res.all_group_sizes))
    assert len(html_text.encode()) < LIMIT
    assert f"{res.information_loss:.4f}" in html_text and f"{res.information_loss:.4f}" in text
    assert f'smallest group</td><td class="num">{smallest:,}' in html_text
    assert f"smallest group={smallest}" in text and "\n" not in text
    audit_html = res.audit._repr_html_()
    assert len(audit_html.encode()) < LIMIT and len(repr(res.audit)) < 300
    assert f"{res.information_loss:.4f}" in audit_html
    shown = re.search(r'smallest group[^<]*</td><td class="num">([^<]*)<', audit_html)
    assert shown and shown.group(1) == str(smallest)


def test_il_per_variable_sums_to_the_result_il_weighted_by_each_variable_sst():
    df = _frame(300, 4, 1)
    res = microagg.microaggregate(df, k=5, method="mdav")
    per_var = display.il_per_variable(res)
    Z = res.standardized
    total = sum(per_var[c] * np.sum((Z[:, j] - Z[:, j].mean()) ** 2) for j, c in enumerate(per_var))
    assert total / res.sst == pytest.approx(res.information_loss)


def test_many_group_sizes_are_bucketed_so_the_display_stays_small():
    rng = np.random.default_rng(4)
    sizes = rng.integers(3, 5000, size=3000)
    buckets = display._size_buckets(sizes)
    assert len(buckets) <= display._MAX_BARS
    assert sum(c for _, _, c in buckets) == len(sizes)
    assert len(display._histogram_svg(sizes, 3).encode()) < LIMIT / 4


def test_the_report_comes_from_the_result_as_html_or_a_file(tmp_path):
    df = _frame(120, 3, 2)
    res = microagg.microaggregate(df, k=3, method="mdav")
    page = res.report()
    assert page.startswith("<!DOCTYPE html>") and f"{res.information_loss:.4f}" in page
    path = res.report(tmp_path / "r.html")
    assert path.read_text().startswith("<!DOCTYPE html>")


def test_a_result_without_its_original_asks_for_it():
    res = microagg.microaggregate(_frame(60, 2, 3), k=3, method="mdav")
    res.audit  # noqa: B018  (the pending audit computed: the original kept for the report)
    assert res.report().startswith("<!DOCTYPE html>")
    res.__dict__.pop("_original")
    with pytest.raises(microagg.InputError, match="original"):
        res.report()


def test_an_exploration_shows_its_map_and_table():
    df = _frame(90, 2, 5)
    ex = microagg.explore(df, k=[3, 4], methods=["mdav"], time_limit=30)
    page = ex._repr_html_()
    assert len(page.encode()) < LIMIT and "<svg" in page
    for run in ex.runs:
        assert f"{run.il:.4f}" in page
    table = ex.table()
    assert isinstance(table, str) and repr(table) == str(table)
    assert "<table>" in table._repr_html_()
    assert "recommended" in repr(ex) and "\n" not in repr(ex)


def test_a_published_file_shows_itself(tmp_path):
    df = _frame(80, 2, 6)
    df.to_csv(tmp_path / "in.csv", index=False)
    res = microagg.protect(tmp_path / "in.csv", tmp_path / "out.csv", k=3)
    assert str(res.file.path) in repr(res.file)
    page = res.file._repr_html_()
    assert "k-anonymous" in page and str(res.file.smallest_frequency) in page


def test_progress_in_a_pipe_is_plain_lines_each_stage_and_tenth_once():
    out = io.StringIO()
    with progress.plain_lines("microagg test", out) as report:
        for i in range(101):
            report("stage one", i / 100)
        report(progress.COMPILING, None, "first run only")
        report("stage two", None)
    lines = out.getvalue().splitlines()
    assert len(lines) == 11 + 1 + 1
    assert lines[0] == "microagg test: stage one 0%" and lines[10].endswith("100%")
    assert progress.COMPILING in lines[11] and lines[12] == "microagg test: stage two"


def test_progress_true_outside_a_terminal_writes_lines_on_stderr(capfd):
    assert not progress.in_notebook()
    microagg.microaggregate(_frame(200, 3, 7), k=3, method="mdav", progress=True)
    out, err = capfd.readouterr()
    assert (
        out == "" and err.strip() and all(line.startswith("microagg") for line in err.splitlines())
    )


def test_plot_draws_il_per_variable_and_group_sizes():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    res = microagg.microaggregate(_frame(100, 3, 8), k=4, method="mdav")
    ax = res.plot("il")
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(c) for c in res.columns]
    ax = res.plot("sizes")
    assert sum(p.get_height() for p in ax.patches) == len(res.all_group_sizes)
    with pytest.raises(microagg.ParameterError):
        res.plot("pie")
