"""Issue 34: the risk-utility map. The frontier against brute force, the recommended run, byte-for-
byte reproduction with protect --from-explore, the budget's bookkeeping, reuse when the grid is
widened, the table as text / JSON / CSV, the map as SVG in headless Chromium."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_report import browser_command, find_browser

import microagg
from microagg import explore as ex
from microagg.cli import main
from microagg.errors import InputError, ParameterError

# --- pure parts: frontier and recommendation ------------------------------------------------------


def _brute_frontier(points):
    out = []
    for i, (r, il) in enumerate(points):
        if r is None or il is None:
            out.append(False)
            continue
        out.append(
            not any(
                j != i and q is not None and m is not None and q < r and m < il
                for j, (q, m) in enumerate(points)
            )
        )
    return out


_value = st.one_of(
    st.sampled_from([0.0, 0.1, 0.1, 0.2, 0.5]), st.floats(0, 1, allow_nan=False), st.none()
)


@settings(max_examples=300, deadline=None)
@given(points=st.lists(st.tuples(_value, _value), max_size=25))
def test_frontier_is_the_brute_force_one(points):
    assert ex.frontier(points) == _brute_frontier(points)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from([2, 3, 5]),
            st.floats(0, 50, allow_nan=False),
            st.floats(0, 1, allow_nan=False),
            st.sampled_from(["ok", "ok", "skipped"]),
        ),
        max_size=15,
    ),
    limit=st.one_of(st.none(), st.floats(0, 1, allow_nan=False)),
)
def test_recommended_is_the_least_il_meeting_the_target(rows, limit):
    table = [
        {"id": i, "k": k, "il": il, "risk": r, "status": s} for i, (k, il, r, s) in enumerate(rows)
    ]
    best = ex.recommend(table, limit)
    meeting = [t for t in table if t["status"] == "ok" and (limit is None or t["risk"] <= limit)]
    if not meeting:
        assert best is None
        return
    chosen = table[best]
    assert chosen in meeting and chosen["il"] == min(t["il"] for t in meeting)


# --- a grid on the bundled census
# --------------------------------------------------------------------


@pytest.fixture(scope="module")
def census_grid():
    df = microagg.datasets.load("census")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = microagg.explore(
            df,
            k=[3, 4, 5, 10],
            methods=["mdav", "vmdav", "mdav-mhm", "icsm", "lsearch"],
            time_limit=60,
            max_risk=0.2,
        )
    return df, result


def test_every_run_is_audited_as_protect_audits_it(census_grid):
    df, result = census_grid
    assert {r.status for r in result.runs} <= {"ok", "skipped"}
    done = [r for r in result.runs if r.done]
    assert {(r.k, r.method) for r in done} >= {(k, "mdav") for k in (3, 4, 5, 10)}
    for r in done:
        if (
            r.method == "mdav"
        ):  # deterministic: the API's own audit of the same run, figure for figure
            res = microagg.microaggregate(df, k=r.k, method="mdav")
            assert r.figures == res.audit.to_dict()["groups"]
            assert np.array_equal(r.labels, res.labels)
        assert set(r.figures["risk"]) >= {
            "record_linkage_dbrl",
            "key_records_below_k",
            "interval_rmd_risk1",
        }
        assert r.figures["risk"]["key_records_below_k"] == 0


def test_the_table_frontier_and_recommendation_agree_with_brute_force(census_grid):
    _, result = census_grid
    for risk in ("record_linkage_dbrl", "interval_disclosure", "interval_sdid_share"):
        rows = result.rows(risk)
        points = [(row["risk"], row["il"]) for row in rows]
        assert [row["frontier"] for row in rows] == _brute_frontier(points)
        best = result.recommended(risk)
        meeting = [row for row in rows if row["status"] == "ok" and (row["risk"] <= 0.2)]
        if best is not None:
            assert rows[best]["il"] == min(row["il"] for row in meeting)
    best = result.recommended()
    assert best is not None and result.runs[best].value("record_linkage_dbrl") <= 0.2


def test_text_json_and_csv_hold_the_same_table(census_grid, tmp_path):
    _, result = census_grid
    text = result.table()
    doc = json.loads(json.dumps(result.to_dict()))
    table = list(csv.DictReader(io.StringIO(result.to_csv())))
    assert len(doc["runs"]) == len(table) == len(result.runs) == len(text.splitlines()) - 2
    for row, line in zip(doc["runs"], table):
        assert int(line["id"]) == row["id"] and line["method"] == row["method"]
        assert (
            int(line["frontier"]) == row["frontier"]
            and int(line["recommended"]) == row["recommended"]
        )
        if row["il"] is not None:
            assert float(line["information_loss"]) == row["il"]
            assert (
                float(line["risk:record_linkage_dbrl"])
                == row["risk_figures"]["record_linkage_dbrl"]
            )
        if row["status"] == "ok":
            assert row["commands"]["from_explore"].endswith(f"--pick {row['id']}")
        else:  # a run not done has nothing to reproduce
            assert row["commands"] == {}
    assert doc["recommended"] == result.recommended() and doc["risk"] == "record_linkage_dbrl"


def test_the_map_marks_points_frontier_and_recommendation(census_grid):
    _, result = census_grid
    svg = result.map_svg()
    done = [r for r in result.runs if r.done]
    assert len(re.findall(r'<g id="run-\d+" class="point', svg)) == len(done)
    assert svg.count('class="point frontier') == sum(result.on_frontier())
    assert (
        'class="recommended-mark"' in svg
        and 'class="frontier"' in svg
        and 'class="max-risk"' in svg
    )
    other = result.map_svg("interval_sdid_share")
    assert "records at risk by SDID" in other and 'class="max-risk"' not in other


# --- reproduce ----------------------------------------------------------------------------------


def test_protect_from_explore_publishes_the_run_byte_for_byte(tmp_path, capsys):
    df = microagg.datasets.load("tarragona").head(300)
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    result = tmp_path / "result.json"
    assert (
        main(
            [
                "explore",
                str(src),
                "-k",
                "3,4",
                "--methods",
                "mdav,icsm",
                "--time-limit",
                "20",
                "-o",
                str(result),
                "-q",
            ]
        )
        == 0
    )
    doc = json.loads(result.read_text())
    assert (tmp_path / "result.labels.npz").is_file()
    for row in doc["runs"]:
        if row["status"] != "ok":
            continue
        picked = tmp_path / f"pick{row['id']}.csv"
        assert (
            main(
                [
                    "protect",
                    str(src),
                    "-o",
                    str(picked),
                    "--from-explore",
                    str(result),
                    "--pick",
                    str(row["id"]),
                    "-q",
                ]
            )
            == 0
        )
        if (
            row["method"] == "mdav"
        ):  # deterministic: the run's own protect command gives the same bytes
            again = tmp_path / f"again{row['id']}.csv"
            assert (
                main(
                    [
                        "protect",
                        str(src),
                        "-o",
                        str(again),
                        "-k",
                        str(row["k"]),
                        "--method",
                        "mdav",
                        "-q",
                    ]
                )
                == 0
            )
            assert picked.read_bytes() == again.read_bytes()
        # the published file is the kept partition's: its IL is the run's
        manifest = json.loads((tmp_path / f"pick{row['id']}.csv.manifest.json").read_text())
        assert manifest["audit"]["groups"]["run"]["information_loss"] == row["il"]
        assert manifest["audit"]["groups"]["risk"] == row["risk_figures"]
    capsys.readouterr()


def test_from_explore_refuses_what_would_not_be_the_run(tmp_path, capsys):
    df = microagg.datasets.load("census").head(120)
    src, other = tmp_path / "in.csv", tmp_path / "other.csv"
    df.to_csv(src, index=False)
    df.iloc[::-1].to_csv(other, index=False)
    result = tmp_path / "r.json"
    assert (
        main(
            [
                "explore",
                str(src),
                "-k",
                "3",
                "--methods",
                "mdav",
                "--time-limit",
                "20",
                "-o",
                str(result),
                "-q",
            ]
        )
        == 0
    )
    capsys.readouterr()
    for args, needle in (
        (["--pick", "7"], "has runs 0 to 0"),
        (["--pick", "0", "-k", "4"], "drop -k"),
        ([], "go together"),
    ):
        extra = ["--from-explore", str(result)] if "--pick" in args or not args else []
        if not args:
            extra = ["--pick", "0"]
        assert main(["protect", str(src), "-o", str(tmp_path / "o.csv"), *extra, *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and needle in err, err
    assert (
        main(
            [
                "protect",
                str(other),
                "-o",
                str(tmp_path / "o.csv"),
                "--from-explore",
                str(result),
                "--pick",
                "0",
            ]
        )
        == 2
    )
    assert "SHA-256" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_given_labels_are_checked():
    df = microagg.datasets.load("census").head(30)
    good = microagg.microaggregate(df, k=3).labels
    res = microagg.microaggregate(df, k=3, labels=good)
    assert np.array_equal(res.labels, good) and res.method_facts == {"given_labels": True}
    bad = good.copy()
    bad[bad == bad[0]] = 99
    bad[0] = 98
    with pytest.raises(InputError, match="fewer than k"):
        microagg.microaggregate(df, k=3, labels=bad)
    with pytest.raises(InputError, match="one group per record"):
        microagg.microaggregate(df, k=3, labels=good[:-1])
    strata = df.assign(s=["a"] * 15 + ["b"] * 15)
    across = np.arange(30) // 3 - (
        np.arange(30) == 15
    )  # record 15 (stratum b) joins a group of stratum a
    across[16:18] = across[18]
    with pytest.raises(InputError, match="cross strata"):
        microagg.microaggregate(strata, k=3, strata="s", labels=np.where(across < 0, 0, across))
    with pytest.raises(ParameterError):
        microagg.microaggregate(df, k=3, labels="0,1,2")


# --- budget, reuse, errors
# --------------------------------------------------------------------------


def test_a_spent_budget_skips_runs_and_says_why():
    df = microagg.datasets.load("census")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = microagg.explore(
            df, k=[3, 4, 5, 10], methods=["mdav", "icsm", "colgen"], time_limit=0.5
        )
    statuses = {r.status for r in result.runs}
    assert statuses <= {"ok", "skipped"} and "skipped" in statuses
    for r in result.runs:
        if r.status == "skipped":
            assert r.note and r.labels is None and r.il is None
        else:
            assert r.labels is not None and r.il is not None
        if r.method != "mdav" and r.time_limit is not None:
            assert r.time_limit <= 0.5  # an anytime method gets a share of what is left


def test_widening_the_grid_reuses_the_runs_done(tmp_path, monkeypatch):
    df = microagg.datasets.load("census").head(200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = microagg.explore(df, k=[3], methods=["mdav"], time_limit=20)
        calls = []
        real = microagg.api.microaggregate

        def counting(*args, **kwargs):
            calls.append((kwargs.get("k"), kwargs.get("method")))
            return real(*args, **kwargs)

        monkeypatch.setattr(microagg.api, "microaggregate", counting)
        wider = microagg.explore(
            df, k=[3, 4], methods=["mdav", "vmdav"], time_limit=20, previous=first
        )
        other = microagg.explore(
            df.head(150), k=[3], methods=["mdav"], time_limit=20, previous=first
        )
    reused = [r for r in wider.runs if r.reused]
    assert [(r.k, r.method) for r in reused] == [(3, "mdav")]
    assert (3, "mdav") not in calls[:-1] and {(4, "mdav"), (3, "vmdav"), (4, "vmdav")} <= set(calls)
    assert reused[0].figures == first.runs[0].figures and np.array_equal(
        reused[0].labels, first.runs[0].labels
    )
    assert not any(r.reused for r in other.runs)  # other data: nothing reused
    # saved and loaded: the same reuse from the files
    path = tmp_path / "r.json"
    first.save(path)
    loaded = ex.load(path)
    assert np.array_equal(loaded[1][0], first.runs[0].labels)
    again = microagg.explore(df, k=[3, 4], methods=["mdav"], time_limit=20, previous=loaded)
    assert [r.reused for r in again.runs] == [True, False]


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"k": [3, 3]}, "twice"),
        ({"k": [1]}, "k must be"),
        ({"methods": ["rmd"]}, "sdcMicro"),
        ({"risk": "nope"}, "risk must be one of"),
        ({"max_risk": -1}, "max_risk"),
        ({"time_limit": 0}, "budget"),
        ({"method_params": {"colgen": {}}}, "not in the grid"),
        ({"columns": ["nope"]}, "unknown column"),
        ({"k": [5000]}, "larger than"),
    ],
)
def test_bad_grids_fail_before_any_run(kwargs, needle):
    df = microagg.datasets.load("census").head(100)
    call = {"k": [3], "methods": ["mdav"], "time_limit": 5, **kwargs}
    with pytest.raises(InputError, match=needle):
        microagg.explore(df, **call)


def test_an_option_set_per_run_is_not_a_grid_option():
    """explore's signature lists the grid's options (options.GRID_OPTIONS): one set per run, such as
    shuffle, is refused by Python itself (and by a type checker before the call)."""
    df = microagg.datasets.load("census").head(100)
    with pytest.raises(TypeError, match="shuffle"):
        microagg.explore(df, k=[3], methods=["mdav"], time_limit=5, shuffle=True)


def test_the_command_line_writes_json_csv_map_and_report(tmp_path, capsys):
    df = microagg.datasets.load("census").head(150)
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    files = {
        flag: tmp_path / name
        for flag, name in (("--csv", "t.csv"), ("--map", "m.svg"), ("--report", "r.html"))
    }
    args = [
        "explore",
        str(src),
        "-k",
        "3,5",
        "--methods",
        "mdav,vmdav",
        "--time-limit",
        "20",
        "--json",
        "-q",
        "--max-risk",
        "0.25",
        "--param",
        "vmdav:gamma=0.4",
    ]
    for flag, path in files.items():
        args += [flag, str(path)]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["params"] for r in doc["runs"]] == [{}, {}, {"gamma": 0.4}, {"gamma": 0.4}]
    assert files["--map"].read_text().startswith("<svg") and "run-0" in files["--map"].read_text()
    assert "Risk-utility map" in files["--report"].read_text() and files[
        "--csv"
    ].read_text().startswith("id,k,")
    for bad, needle in (
        (["--param", "nope=1"], "no method of the grid"),
        (["--risk", "x"], "risk must be"),
        (["--map", str(tmp_path / "m.png")], "must end in .svg"),
        (["-k", "a"], "integers"),
    ):
        assert main(["explore", str(src), "-q", *bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and needle in err, err


@pytest.mark.skipif(find_browser() is None, reason="no Chromium/Chrome installed")
def test_the_map_renders_in_headless_chromium(census_grid, tmp_path):
    """The report's map laid out by a browser: one visible mark per finished run, the frontier and
    the recommended run; screenshots for docs/ when MICROAGG_SCREENSHOTS names a folder."""
    _, result = census_grid
    page = tmp_path / "explore.html"
    page.write_text(ex.report_html(result), encoding="utf-8")
    probe = tmp_path / "probe.html"
    probe.write_text(
        page.read_text(encoding="utf-8").replace(
            "</body>",
            """<script>
(function () {
  const svg = document.querySelector('#svg-ru-map');
  const r = svg.getBoundingClientRect();
  const shown = sel => Array.from(svg.querySelectorAll(sel)).filter(e => {
      const b = e.getBoundingClientRect();
      return b.width > 0 && b.height > 0; }).length;
  const pre = document.createElement('pre'); pre.id = 'probe';
  pre.textContent = JSON.stringify({width: r.width, height: r.height,
    points: shown('g.point circle'), frontier: shown('polyline.frontier'),
    ring: shown('circle.recommended-mark')});
  document.body.appendChild(pre);
})();
</script></body>""",
        ),
        encoding="utf-8",
    )
    cmd = browser_command(find_browser(), tmp_path / "profile")
    done = subprocess.run(
        cmd + ["--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    layout = json.loads(
        re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S).group(1).replace("&quot;", '"')
    )
    assert layout["width"] > 300 and layout["height"] > 200
    assert (
        layout["points"] == sum(r.done for r in result.runs)
        and layout["frontier"] == 1
        and layout["ring"] == 1
    )
    folder = os.environ.get("MICROAGG_SCREENSHOTS")
    shot = Path(folder) / "explore-map.png" if folder else tmp_path / "explore-map.png"
    done = subprocess.run(
        cmd + ["--window-size=1100,1000", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and shot.stat().st_size > 20_000
    assert math.isfinite(result.seconds)
