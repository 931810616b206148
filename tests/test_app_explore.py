"""The app's Explore tab (issue 34): its logic without a browser (``microagg.app.explore_runs``),
and the tab end to end in headless Chromium: a grid explored in the run's process, the risk axis
switched without running again, the grid widened (the runs made are reused), a click on a point of
the map opening that run in the Results tab, whose export is byte for byte what
``protect --from-explore`` writes; column names that carry HTML never run. With
MICROAGG_SCREENSHOTS=DIR it saves app-map.png.
"""

from __future__ import annotations

import json
import os
import pickle
import shlex
import time

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg import cli, explore
from microagg.app import explore_runs, protect_worker, run_events, run_handle, runspec

EVIL_SCRIPT = "<script>window.__pwned=1</script>"
EVIL_ATTRIBUTE = '"onmouseover=window.__pwned=2 x="'


class Events:
    """The writing end of a run's pipe, in this process: the events a worker posts."""

    def __init__(self):
        self.events = []

    def send(self, event):
        self.events.append(event)


@pytest.fixture
def quiet_worker(monkeypatch):
    """A worker run in the test's process keeps the test's stdout (its own process silences fd
    1)."""
    monkeypatch.setattr(run_events, "silence_stdout", lambda: None)


def _explored(tmp_path, df, name="data.csv", **grid_args):
    """(ExploreSpec, Exploration) of a grid explored by the Explore tab's worker, in this
    process."""
    src = tmp_path / name
    df.to_csv(src, index=False)
    run = runspec.RunSpec.of(
        str(src),
        name,
        k=3,
        method="mdav",
        columns=grid_args.pop("columns"),
        **grid_args.pop("run", {}),
    )
    spec = explore_runs.explore_spec(
        run,
        grid_args.pop("ks", "3,5"),
        grid_args.pop("methods", ["mdav", "vmdav"]),
        grid_args.pop("budget", 600),
        grid_args.pop("risk", explore.DEFAULT_RISK),
        **grid_args,
    )
    explore_runs.check_against_data(spec, df)
    events = Events()
    explore_runs.worker(spec, str(tmp_path), 1, events)
    assert events.events[-1][0] == "done", events.events[-1]
    return spec, explore_runs.load_exploration(explore_runs.pickle_path(tmp_path, 1))


# ---------------------------------------------------------------------------- logic, no browser
def test_explore_spec_is_the_protect_run_less_what_a_grid_sets_per_run():
    run = runspec.RunSpec.of(
        "d.csv",
        "d.csv",
        k=7,
        method="vmdav",
        columns=["a", "b"],
        strata=["s"],
        shuffle=True,
        time_limit=5.0,
        aggregation="median",
        gamma=0.4,
    )
    spec = explore_runs.explore_spec(run, "10, 3", "mdav,vmdav", 12, "interval_disclosure", 0.5)
    assert spec.ks == [3, 10] and spec.methods == ["mdav", "vmdav"] and spec.budget == 12.0
    assert spec.options == {"columns": ["a", "b"], "strata": ["s"], "aggregation": "median"}
    assert spec.method_params == {
        "vmdav": {"gamma": 0.4}
    }  # the Protect tab's parameters, for its method
    assert spec.risk == "interval_disclosure" and spec.max_risk == 0.5
    assert explore_runs.left_out(run) == ["shuffle"]  # the tab says so
    assert (
        explore_runs.explore_spec(run, "3", ["mdav"], None, explore.DEFAULT_RISK).budget
        == explore.DEFAULT_BUDGET
    )
    for ks, methods, budget, risk, max_risk, message in (
        ("3,x", ["mdav"], 10, explore.DEFAULT_RISK, None, "k must be integers"),
        ("3,3", ["mdav"], 10, explore.DEFAULT_RISK, None, "twice"),
        ("", ["mdav"], 10, explore.DEFAULT_RISK, None, "no value"),
        ("3", [], 10, explore.DEFAULT_RISK, None, "no method"),
        ("3", ["nope"], 10, explore.DEFAULT_RISK, None, "nope"),
        ("3", ["mdav"], 0, explore.DEFAULT_RISK, None, "budget"),
        ("3", ["mdav"], float("inf"), explore.DEFAULT_RISK, None, "budget"),
        ("3", ["mdav"], 10, "smallest_group", None, "risk must be one of"),
        ("3", ["mdav"], 10, explore.DEFAULT_RISK, -1.0, "max_risk"),
        ("3", ["mdav"], "ten", explore.DEFAULT_RISK, None, "budget"),
        ({"k": 3}, ["mdav"], 10, explore.DEFAULT_RISK, None, "k must be"),
        ("3", 5, 10, explore.DEFAULT_RISK, None, "methods must be"),
        ("3", [{"m": 1}], 10, explore.DEFAULT_RISK, None, "methods must be"),
        ("3", ["mdav"], 10, ["risk"], None, "risk must be one of"),
        ("3", ["mdav"], 10, explore.DEFAULT_RISK, "0.2", "max_risk"),
    ):
        with pytest.raises(microagg.InputError, match=message) as info:
            explore_runs.explore_spec(run, ks, methods, budget, risk, max_risk)
        assert "\n" not in str(info.value)


def test_grid_checks_the_data_before_its_process_starts(tmp_path):
    df = microagg.datasets.load("census").head(20)
    run = runspec.RunSpec.of("d.csv", "d.csv", k=3, columns=list(df.columns[:3]))
    with pytest.raises(microagg.InputError, match="25"):  # k larger than the data: the CLI's line
        explore_runs.check_against_data(
            explore_runs.explore_spec(run, "3,25", ["mdav"], 10, explore.DEFAULT_RISK), df
        )
    bad = runspec.RunSpec.of("d.csv", "d.csv", k=3, columns=["nope"])
    with pytest.raises(microagg.InputError, match="nope"):
        explore_runs.check_against_data(
            explore_runs.explore_spec(bad, "3", ["mdav"], 10, explore.DEFAULT_RISK), df
        )


def test_worker_saves_what_protect_from_explore_reads_and_a_pick_publishes_it_byte_for_byte(
    tmp_path, monkeypatch, quiet_worker
):
    """The Explore tab's worker saves the result beside its partitions; a picked run, published by
    the Results tab's run from its kept labels (no method runs), is the very file the command
    line's protect --from-explore writes, and the reproduce command the tab shows is that one."""
    df = microagg.datasets.load("tarragona").head(150)
    columns = list(df.columns[:4])
    spec, exploration = _explored(
        tmp_path, df, "survey.csv", columns=columns, methods=["mdav", "icsm"], budget=600
    )  # ends when every run is done: none skipped at any load
    path = explore_runs.result_path(spec, tmp_path, 1)
    assert path.name == "survey-explore.json" and explore.labels_path(path).is_file()
    doc = json.loads(path.read_text())
    assert (
        doc["input"]["name"] == "survey.csv"
        and len(doc["runs"]) == 4
        and doc["options"]["columns"] == columns
    )
    assert all(r.done for r in exploration.runs)
    pick = explore_runs.pick_of(
        "3", exploration
    )  # icsm, k = 5: a time-limited method whose labels are kept
    picked = explore_runs.picked_spec(spec, exploration, pick)
    assert (
        picked.k == 5 and picked.method == "icsm" and picked.explored == ("survey-explore.json", 3)
    )
    np.testing.assert_array_equal(picked.options["labels"], exploration.runs[3].labels)
    events = Events()
    protect_worker.worker(picked, str(tmp_path), 9, events)  # the run the Results tab shows
    assert events.events[-1][0] == "done", events.events[-1]
    with open(tmp_path / "run-9.pkl", "rb") as fh:
        res = pickle.load(fh)
    assert res.information_loss == pytest.approx(exploration.runs[3].il, rel=1e-12)
    exported = protect_worker.published_path(
        tmp_path, 9, picked
    ).read_bytes()  # the file the download serves
    command = picked.cli_command()
    assert (
        command
        == "microagg protect survey.csv -o survey-icsm-k5.csv --from-explore survey-explore.json "
        "--pick 3"
    )
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)[1:]
    argv[argv.index("--from-explore") + 1] = str(path)
    assert cli.main(argv + ["-q"]) == 0
    assert (tmp_path / "survey-icsm-k5.csv").read_bytes() == exported
    # the Python call the tab shows publishes it too
    (tmp_path / "survey-icsm-k5.csv").unlink()
    (tmp_path / "survey-explore.json").write_bytes(path.read_bytes())
    (tmp_path / "survey-explore.labels.npz").write_bytes(explore.labels_path(path).read_bytes())
    exec(picked.python_snippet().replace("print(res.summary())", ""), {})  # noqa: S102
    assert (tmp_path / "survey-icsm-k5.csv").read_bytes() == exported


def test_widening_the_grid_reuses_the_runs_made(tmp_path, quiet_worker):
    df = microagg.datasets.load("census").head(200)
    spec, first = _explored(tmp_path, df, columns=list(df.columns[:5]), ks="3,5", methods=["mdav"])
    wider = explore_runs.explore_spec(
        runspec.RunSpec.of(spec.input_path, spec.input_name, k=3, columns=list(df.columns[:5])),
        "3,4,5",
        ["mdav", "vmdav"],
        30,
        explore.DEFAULT_RISK,
    )
    assert wider.same_grid_data(spec)
    from dataclasses import replace

    wider = replace(wider, previous=str(explore_runs.pickle_path(tmp_path, 1)))
    events = Events()
    explore_runs.worker(wider, str(tmp_path), 2, events)
    second = explore_runs.load_exploration(explore_runs.pickle_path(tmp_path, 2))
    reused = {(r.k, r.method) for r in second.runs if r.reused}
    assert reused == {(3, "mdav"), (5, "mdav")} and all(r.done for r in second.runs)
    for r in second.runs:
        if r.reused:
            old = next(o for o in first.runs if (o.k, o.method) == (r.k, r.method))
            np.testing.assert_array_equal(r.labels, old.labels)
    other = explore_runs.explore_spec(
        runspec.RunSpec.of(spec.input_path, spec.input_name, k=3, columns=list(df.columns[:4])),
        "3",
        ["mdav"],
        30,
        explore.DEFAULT_RISK,
    )
    assert not other.same_grid_data(spec)  # other quasi-identifiers: nothing to reuse


def test_view_redraws_for_another_risk_measure_without_running(tmp_path, quiet_worker):
    df = microagg.datasets.load("census").head(240)
    spec, exploration = _explored(
        tmp_path,
        df,
        columns=list(df.columns[:6]),
        ks="3,4,6",
        methods=["mdav", "vmdav", "projected"],
        max_risk=0.3,
    )
    before = [r.figures for r in exploration.runs]
    for risk in ("record_linkage_dbrl", "interval_disclosure"):
        for limit in (None, 0.25):
            shown = explore_runs.view(exploration, risk, limit)
            points = [(r.value(risk), r.il) for r in exploration.runs]
            assert [row["frontier"] for row in shown.rows()] == explore.frontier(points)
            ok = [r for r in exploration.runs if limit is None or r.value(risk) <= limit]
            best = min(ok, key=lambda r: (r.il, r.value(risk), r.k, r.id)).id if ok else None
            assert shown.recommended() == best
            header, rows = explore_runs.table_rows(spec, shown)
            assert header[4] == explore_runs.risk_choices()[risk]
            scale = (
                100.0 if risk in ("record_linkage_dbrl", "interval_disclosure") else None
            )  # shares shown in %
            assert explore_runs.risk_scale(risk) == scale
            assert [row[4] for row in rows] == [r.value(risk) * scale for r in exploration.runs]
            assert [row[5] for row in rows] == [
                r.value("suppressed_key_values") for r in exploration.runs
            ]
            assert [row[8] == "yes" for row in rows] == [r.id == best for r in exploration.runs]
            assert all(row[10].endswith(f"--pick {row[0]}") for row in rows)
            svg = explore_runs.checked_svg(shown.map_svg())
            assert (
                svg.count('<g id="run-') == len(exploration.runs)
                and explore_runs.risk_choices()[risk] in svg
            )
    assert [r.figures for r in exploration.runs] == before  # nothing ran again
    assert explore_runs.has_values(exploration, "record_linkage_dbrl")
    assert not explore_runs.has_values(
        exploration, "ldiversity_records_below_l"
    )  # no sensitive column


def test_pick_takes_only_a_finished_run_of_the_exploration(tmp_path, quiet_worker):
    df = microagg.datasets.load("census").head(120)
    _, exploration = _explored(tmp_path, df, columns=list(df.columns[:3]), ks="3", methods=["mdav"])
    assert explore_runs.pick_of("0", exploration) == 0 and explore_runs.pick_of(0, exploration) == 0
    for raw in ("1", "-1", "0x0", " 0", "", "1e3", "9" * 40, True, None, 0.0, ["0"], {"run": 0}):
        with pytest.raises(microagg.InputError, match="unknown run"):
            explore_runs.pick_of(raw, exploration)
    exploration.runs[0].status = "skipped"
    with pytest.raises(microagg.InputError, match="did not finish"):
        explore_runs.pick_of("0", exploration)


def test_the_map_as_markup_runs_nothing(tmp_path, quiet_worker):
    """Column and file names that carry HTML reach the page as text: the SVG holds only the map's
    elements and attributes (checked_svg refuses anything else), and the table's cells and the
    roles are escaped by htmltools."""
    pytest.importorskip("shiny")
    from microagg.app.tabs.shared import table

    rng = np.random.default_rng(3)
    df = pd.DataFrame(
        {
            EVIL_SCRIPT: rng.normal(size=60),
            EVIL_ATTRIBUTE: rng.normal(size=60),
            "age": rng.integers(18, 90, 60),
        }
    )
    spec, exploration = _explored(
        tmp_path,
        df,
        '<img src=x onerror="alert(1)">.csv',
        columns=[EVIL_SCRIPT, EVIL_ATTRIBUTE, "age"],
        ks="3",
        methods=["mdav"],
    )
    svg = explore_runs.checked_svg(exploration.map_svg())
    assert "<script" not in svg and "onmouseover" not in svg and "onerror" not in svg
    header, rows = explore_runs.table_rows(
        spec, explore_runs.view(exploration, explore.DEFAULT_RISK)
    )
    html = str(table(header, rows))
    assert (
        "<script" not in html and "<img" not in html and "&lt;script&gt;" not in html
    )  # names only in commands
    assert EVIL_SCRIPT not in html  # the commands name the result and the input, not the columns
    picked = explore_runs.picked_spec(spec, exploration, 0)
    shown = str(table(["reproduce"], [(picked.reproduce_text(),)]))
    assert "<script" not in shown and "&lt;script&gt;" in shown and "<img" not in shown
    for bad in (
        '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><g onmouseover="alert(1)"/></svg>',
        (
            '<svg xmlns="http://www.w3.org/2000/svg"><a'
            ' href="javascript:alert(1)"><text>x</text></a></svg>'
        ),
        '<svg xmlns="http://www.w3.org/2000/svg"><circle style="x"/></svg>',
        '<!DOCTYPE svg [<!ENTITY e "x">]><svg xmlns="http://www.w3.org/2000/svg">&e;</svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><div/></foreignObject></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><text>unclosed</svg>',
    ):
        with pytest.raises(microagg.InputError, match="not shown"):
            explore_runs.checked_svg(bad)


def test_an_exploration_runs_in_its_own_process_cancels_and_dies_with_the_app(tmp_path):
    """As a protect run: its own spawned process (RunHandle, job="explore"), Cancel ends it at
    once, and a killed app (SIGKILL: no handler) leaves no exploration computing."""
    import subprocess
    import sys

    from test_app_security import SRC, _wait_gone

    df = microagg.datasets.load("census")
    src = tmp_path / "census.csv"
    df.to_csv(src, index=False)
    run = runspec.RunSpec.of(str(src), "census.csv", k=3, columns=list(df.columns))
    spec = explore_runs.explore_spec(run, "3,10", ["mdav"], 30, explore.DEFAULT_RISK)
    handle = run_handle.RunHandle(spec, tmp_path, 1, job="explore")
    while handle.poll() == "running":
        time.sleep(0.1)
    assert handle.state == "done", handle.error
    exploration = explore_runs.load_exploration(explore_runs.pickle_path(tmp_path, 1))
    assert [(r.k, r.method, r.status) for r in exploration.runs] == [
        (3, "mdav", "ok"),
        (10, "mdav", "ok"),
    ]
    np.testing.assert_array_equal(
        exploration.runs[0].labels, microagg.microaggregate(df, k=3).labels
    )
    slow = run_handle.RunHandle(
        explore_runs.explore_spec(run, "3,4,5", ["colgen"], 600, explore.DEFAULT_RISK),
        tmp_path,
        2,
        job="explore",
    )
    deadline = time.monotonic() + 60
    while slow.poll() == "running" and slow.stage != "explore" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert slow.stage == "explore" and explore_runs.progress_line(slow)[0].startswith(
        "exploring: explore (run "
    )
    slow.cancel()
    assert slow.state == "cancelled" and not slow.process.is_alive()
    script = (
        "import time\n"
        "from microagg.app import explore_runs, run_handle, runspec\n"
        f"run = runspec.RunSpec.of({str(src)!r}, 'census.csv', k=3, columns={list(df.columns)!r})\n"
        "spec = explore_runs.explore_spec(run, '3,4,5', ['colgen'], 600, 'record_linkage_dbrl')\n"
        f"h = run_handle.RunHandle(spec, {str(tmp_path)!r}, 3, job='explore')\n"
        "print(h.process.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    parent = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True
    )
    worker = int(parent.stdout.readline())
    time.sleep(4.0)  # exploring by now
    parent.kill()
    parent.wait()
    assert _wait_gone([worker]) == []


def test_a_given_partition_is_named_not_printed():
    from microagg.app.figures import option_text

    assert option_text(np.zeros(1200, dtype=np.int64)) == "a given partition (1,200 records)"


# ---------------------------------------------------------------------------- the browser
import test_app  # noqa: E402
from test_app import Page, _chromium  # noqa: E402

app_server, browser = test_app.app_server, test_app.browser  # its fixtures

needs_chromium = pytest.mark.skipif(
    _chromium() is None or not os.path.exists("/usr/bin/chromedriver"),
    reason="Debian's chromium and chromium-driver are not installed (.ci/run installs them)",
)


def _set_grid(page, ks, methods, budget):
    page.type_into("#explore-ks", ks)
    By = page.By
    for box in page.d.find_elements(By.CSS_SELECTOR, "#explore-methods input[type=checkbox]"):
        if box.is_selected() != (box.get_attribute("value") in methods):
            page.d.execute_script(
                "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'}); "
                "arguments[0].click();",
                box,
            )
    page.settled(
        lambda d: (
            sorted(
                b.get_attribute("value")
                for b in d.find_elements(By.CSS_SELECTOR, "#explore-methods input[type=checkbox]")
                if b.is_selected()
            )
            == sorted(methods)
        )
    )
    page.type_into("#explore-budget", str(budget))


def _explore(page, number, secs=120):
    page.click("#explore-run")
    return page.text_of("#explore-view h4", lambda t: t.startswith(f"Exploration {number}:"), secs)


def _run_rows(page) -> list[list[str]]:
    """The cells of the table of runs as text (read again if it re-renders meanwhile)."""
    By = page.By
    return page.settled(
        lambda d: (
            [
                [c.text for c in tr.find_elements(By.TAG_NAME, "td")]
                for tr in d.find_elements(By.CSS_SELECTOR, "#explore-table tr")[1:]
            ]
            or False
        )
    )


def _click_point(page, run_ids):
    """Click, with the mouse, the point of the first run whose point is not covered by another's
    label; returns its id."""
    for run_id in run_ids:
        hit = page.d.execute_script(
            "var c = document.querySelector('#map-figure #run-' + arguments[0] + '"
            " circle');c.scrollIntoView({block: 'center', behavior: 'instant'});var r ="
            " c.getBoundingClientRect();var e = document.elementFromPoint(r.left + r.width / 2,"
            " r.top + r.height / 2);return e && e.closest('g[data-run]') ?"
            " e.closest('g[data-run]').getAttribute('data-run') : null;",
            str(run_id),
        )
        if hit == str(run_id):
            page.click(f"#map-figure #run-{run_id} circle")
            return run_id
    raise AssertionError("every point is covered")


@needs_chromium
def test_explore_tab_end_to_end_in_headless_chromium(app_server, browser, tmp_path):
    pytest.importorskip("shiny")
    url, port = app_server
    page = Page(browser, os.environ.get("MICROAGG_SCREENSHOTS"))
    By = page.By
    census = microagg.datasets.load("census")
    census_csv = tmp_path / "census.csv"
    census.to_csv(census_csv, index=False)
    browser.get(url)
    page.wait(20).until(lambda d: d.current_url == f"http://127.0.0.1:{port}/")
    browser.find_element(By.ID, "data-upload").send_keys(str(census_csv))
    page.text_of("#data-name", lambda t: t == "census.csv")
    page.tab("protect")  # the roles: every numeric column of census (all suggested)
    page.settled(
        lambda d: (
            [
                b.is_selected()
                for b in d.find_elements(By.CSS_SELECTOR, "#protect-columns input[type=checkbox]")
            ]
            == [True] * 13
        )
    )

    # a small grid, explored in the run's process
    page.tab("explore")
    page.text_of(
        "#explore-roles", lambda t: "census.csv" in t and "1,080 records" in t and "FICA" in t
    )
    _set_grid(page, "3,5", ["mdav", "vmdav"], 600)  # ends when done: none skipped at any load
    _explore(page, 1)
    rows = _run_rows(page)
    assert [(r[1], r[2]) for r in rows] == [
        ("3", "mdav"),
        ("5", "mdav"),
        ("3", "vmdav"),
        ("5", "vmdav"),
    ]
    expected = microagg.microaggregate(census, k=5, method="mdav")
    assert rows[1][3] == f"{expected.information_loss:.4f}"
    assert all(
        r[10].startswith("microagg protect census.csv -o census-") and r[10].endswith(f"--pick {i}")
        for i, r in enumerate(rows)
    )
    assert "distance-based record linkage" in page.now("#explore-table tr")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#map-figure g[data-run]")) == 4

    # the risk axis switched: the map and the table redrawn, nothing run again
    page.select("#explore-risk", "interval_disclosure")
    page.text_of("#explore-table tr", lambda t: "interval disclosure" in t)
    assert "interval disclosure" in page.now("#map-figure")
    assert page.now("#explore-view h4").startswith("Exploration 1:")
    page.select("#explore-risk", "record_linkage_dbrl")
    page.type_into("#explore-max_risk", "0.2")
    page.text_of("#explore-recommended", lambda t: "%) ≤ 20): run" in t)  # 0.2: a share, shown in %

    # the grid widened: the four runs made are reused
    _set_grid(page, "3,4,5,10", ["mdav", "vmdav", "icsm"], 600)
    _explore(page, 2, 180)
    rows = _run_rows(page)
    assert len(rows) == 12 and sum("(reused)" in r[9] for r in rows) == 4
    assert all(r[9].startswith("ok") for r in rows), rows
    recommended = [r for r in rows if r[8] == "yes"]
    assert len(recommended) == 1 and float(recommended[0][4]) <= 20
    page.shot("app-map.png")

    # a click on a point opens that run in the Results tab, from its kept partition
    run_id = _click_point(page, [int(recommended[0][0].split()[-1]), *range(12)])
    row = rows[run_id]
    head = page.text_of("#results-result_detail h4", lambda t: t.startswith("Run 1:"), 60)
    assert head == f"Run 1: {row[2]}, k = {row[1]}, census.csv"
    assert f"{float(page.now('#il-value')):.4f}" == row[3]
    assert f"Run {run_id} of the exploration" in page.now("#result-explored")
    assert page.now("#reproduce").splitlines()[3] == row[10]
    exported = page.download("results-download_data", ".csv")

    # the exploration's result, downloaded: the CLI's protect --from-explore writes the same bytes
    page.tab("explore")
    result = page.download("explore-download_result", ".json")
    labels = page.download("explore-download_labels", ".npz")
    assert (result.name, labels.name) == ("census-explore.json", "census-explore.labels.npz")
    argv = shlex.split(row[10])[1:]
    argv[argv.index("protect") + 1] = str(census_csv)
    argv[argv.index("-o") + 1] = str(tmp_path / "from-cli.csv")
    argv[argv.index("--from-explore") + 1] = str(result)
    assert cli.main(argv + ["-q"]) == 0
    assert (tmp_path / "from-cli.csv").read_bytes() == exported.read_bytes()

    # a bad grid is one line before anything starts; a long exploration shows its progress and
    # Cancel stops it; the exploration shown stays the last finished one
    _set_grid(page, "3,x", ["mdav"], 30)
    page.click("#explore-run")
    message = page.text_of("#error-line", lambda t: "k must be integers" in t, 20)
    assert "\n" not in message and page.now("#explore-status") == "ready"
    _set_grid(page, "3,4,5,10", ["colgen"], 600)
    page.click("#explore-run")
    page.text_of("#explore-status", lambda t: t.startswith("exploring:") and "of 600 s" in t, 60)
    page.click("#explore-cancel")
    page.text_of("#explore-status", lambda t: t == "exploration 3 cancelled", 20)
    assert page.now("#explore-view h4").startswith("Exploration 2:")

    # column names that carry HTML: shown as text, never run
    rng = np.random.default_rng(2)
    hostile = pd.DataFrame(
        {
            EVIL_SCRIPT: rng.normal(size=40).round(3),
            EVIL_ATTRIBUTE: rng.normal(size=40).round(3),
            "age": rng.integers(18, 90, 40),
        }
    )
    hostile_csv = tmp_path / "hostile.csv"
    hostile.to_csv(hostile_csv, index=False)
    page.tab("data")
    browser.find_element(By.ID, "data-upload").send_keys(str(hostile_csv))
    page.text_of("#data-name", lambda t: t == "hostile.csv")
    page.tab("protect")
    page.settled(
        lambda d: (
            len(d.find_elements(By.CSS_SELECTOR, "#protect-columns input[type=checkbox]")) == 3
        )
    )
    page.tab("explore")
    page.text_of("#explore-roles", lambda t: EVIL_SCRIPT in t and EVIL_ATTRIBUTE in t)
    _set_grid(page, "3", ["mdav"], 20)
    _explore(page, 4)
    for point in browser.find_elements(By.CSS_SELECTOR, "#map-figure circle"):
        browser.execute_script(
            "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'});", point
        )
        from selenium.webdriver.common.action_chains import ActionChains

        ActionChains(browser).move_to_element(point).perform()
    time.sleep(0.3)
    assert browser.execute_script(
        "return window.__pwned === undefined && document.querySelectorAll("
        "'#explore-view script, [onmouseover]').length === 0"
    )
    assert "Traceback" not in browser.page_source
