"""Issue 44: reproducible by default. Work budgets through every door, explore's planner (measured
costs, no run that fits skipped, reproduce commands as typed), protect --from-manifest."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import microagg
from microagg import explore as ex
from microagg.cli import main


@pytest.fixture
def census_csv(tmp_path):
    df = microagg.datasets.load("census").head(240)
    path = tmp_path / "census.csv"
    df.to_csv(path, index=False)
    return path


# --- the work budget ----------------------------------------------------------------------------


def test_work_is_a_run_option_of_every_door():
    from microagg.options import NOT_FOR_A_GRID, command_line, option

    p = option("work")
    assert p.flags == ("--work",) and p.default is None and "work" in NOT_FOR_A_GRID
    assert "--work 5000" in command_line(
        "in.csv", "out.csv", {"k": 3, "method": "icsm", "work": 5000.0}, {}
    )
    with pytest.raises(microagg.errors.ParameterError, match="work"):
        microagg.microaggregate(np.zeros((10, 2)), k=3, work=0)


def test_more_work_never_gives_a_worse_local_search_and_a_budget_is_spent_deterministically():
    X = np.random.default_rng(1).normal(size=(400, 3))
    small = microagg.microaggregate(
        X, k=3, method="icsm", work=2 * len(X), audit=False, restarts=10**6
    )
    again = microagg.microaggregate(
        X, k=3, method="icsm", work=2 * len(X), audit=False, restarts=10**6
    )
    large = microagg.microaggregate(
        X, k=3, method="icsm", work=40 * len(X), audit=False, restarts=10**6
    )
    assert np.array_equal(small.labels, again.labels)
    assert large.sse <= small.sse + 1e-9 and not small.time_cut


def test_partitioned_blocks_get_fixed_parts_of_the_work_whatever_their_order():
    """Blocks run side by side: each gets its records' part of the blocks' share of the work, not a
    part of what the others left, so a threaded run gives the run of a synchronous one."""
    from microagg.blocks import ACROSS_WORK_SHARE, BlockClock
    from microagg.deadline import Deadline

    clock = BlockClock(Deadline(work=1000.0), 100, workers=2, work_share=1 - ACROSS_WORK_SHARE)
    first, second = clock.start(40), clock.start(60)
    assert first.work == pytest.approx(1000 * (1 - ACROSS_WORK_SHARE) * 0.4)
    assert second.work == pytest.approx(1000 * (1 - ACROSS_WORK_SHARE) * 0.6)
    X = np.random.default_rng(3).normal(size=(700, 3))
    runs = [
        microagg.microaggregate(
            X,
            k=3,
            method="icsm",
            block_size=200,
            scheduler=s,
            work=30 * len(X),
            seed=4,
            audit=False,
        )
        for s in ("threads", "synchronous")
    ]
    assert np.array_equal(runs[0].labels, runs[1].labels)


def test_auto_without_bounds_is_capped_by_work_and_runs_its_members_in_turn():
    X = np.random.default_rng(2).normal(size=(300, 3))
    res = microagg.microaggregate(X, k=3, method="auto", seed=0, audit=False)
    assert res.extras["budget_work"] == microagg.methods.get("auto").default_work(300, 3, 3)
    assert all(row.get("lane") != "parallel" for row in res.extras["portfolio"])


def test_the_demo_bounds_every_method_by_work():
    from microagg.deadline import UNITS_PER_SECOND
    from microagg.demo_runs import DEMO_PASSES, DEMO_SECONDS, demo_work

    assert demo_work(1080) == min(DEMO_PASSES * 1080, DEMO_SECONDS * UNITS_PER_SECOND)


# --- explore ------------------------------------------------------------------------------------


def _fake_runs(monkeypatch, first_audit=10.0, later_audit=0.1, seconds=0.3):
    """Runs that take no time but report costs: the planner's bookkeeping alone is tested."""
    done = []

    def fake(r, payload, source, options, cache):
        r.status, r.seconds = "ok", seconds
        r.audit_seconds = first_audit if not done else later_audit
        r.figures = {
            "run": {"information_loss": 1.0 + r.id},
            "risk": {ex.DEFAULT_RISK: 0.1},
            "utility": {},
        }
        r.labels = np.zeros(len(source.frame), dtype=np.int64)
        done.append(r.id)

    monkeypatch.setattr(ex.planner, "run_one", fake)  # the planner runs each run through it
    return done


def test_explore_does_not_charge_every_run_the_first_audits_one_off_cost(monkeypatch):
    """The first audit fills the cache of the original's figures (9-13 s); the planner once charged
    it to every run and skipped 13 of 16. Planned by measured costs, all 16 fit in 20 s."""
    done = _fake_runs(monkeypatch)
    df = microagg.datasets.load("census").head(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = microagg.explore(
            df, k=[3, 4, 5, 10], methods=["mdav", "vmdav", "icsm", "lsearch"], time_limit=20
        )
    assert len(done) == 16 and all(r.done for r in result.runs)
    work = ex.run_work(300, 20, 16)
    assert all(r.work == work for r in result.runs)  # one budget for every run that can stop


def test_explore_skips_only_what_does_not_fit_and_says_why(monkeypatch):
    _fake_runs(monkeypatch, first_audit=1.0, later_audit=1.0, seconds=4.0)
    df = microagg.datasets.load("census").head(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = microagg.explore(df, k=[3, 4], methods=["mdav", "icsm"], time_limit=3)
    skipped = [r for r in result.runs if r.status == "skipped"]
    # every method's first run is tried (its cost is unknown); once it is known (4 s + 1 s), no more
    # fits
    assert {r.method for r in result.runs if r.done} == {"mdav", "icsm"}
    assert skipped and all("left to plan" in r.note for r in skipped)
    doc = result.to_dict()
    assert all(row["commands"] == {} for row in doc["runs"] if row["status"] != "ok")
    assert all(row["commands"]["from_explore"] for row in doc["runs"] if row["status"] == "ok")
    html = ex.report_html(result)
    assert html.count("--from-explore") == sum(r.done for r in result.runs)


def test_explore_reproduce_commands_carry_the_paths_as_typed(
    census_csv, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    assert (
        main(
            [
                "explore",
                "census.csv",
                "-o",
                "out/ex2.json",
                "-k",
                "3",
                "--methods",
                "mdav",
                "--time-limit",
                "20",
                "-q",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "--from-explore out/ex2.json --pick 0" in out and "microagg protect census.csv" in out
    assert "1 of 1 runs done" in out
    assert (
        main(
            [
                "explore",
                "census.csv",
                "-o",
                "out/ex2.json",
                "-k",
                "3",
                "--methods",
                "mdav",
                "--time-limit",
                "20",
                "-q",
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert "--from-explore out/ex2.json" in doc["runs"][0]["commands"]["from_explore"]


def test_an_explore_run_bounded_by_work_is_the_protect_run_of_its_command(census_csv):
    df = microagg.datasets.load("census").head(240)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = microagg.explore(df, k=[3], methods=["icsm"], time_limit=30)
    run = result.runs[0]
    assert run.done and run.work is not None and run.reproducible
    assert "--work" in result.commands(0)["protect"]
    again = microagg.microaggregate(df, k=3, method="icsm", work=run.work, audit=False)
    assert np.array_equal(again.labels, run.labels)


# --- protect --from-manifest ---------------------------------------------------------------------


def _protect(*args):
    return main(["protect", *map(str, args), "-q"])


def test_from_manifest_recreates_the_file_byte_for_byte(census_csv, tmp_path, capsys):
    first = tmp_path / "first.csv"
    assert (
        _protect(
            census_csv, "-o", first, "-k", "3", "--method", "icsm", "--work", "5000", "--seed", "3"
        )
        == 0
    )
    capsys.readouterr()
    again = tmp_path / "again.csv"
    assert _protect(census_csv, "-o", again, "--from-manifest", f"{first}.manifest.json") == 0
    assert "reproduced: again.csv matches first.csv" in capsys.readouterr().out
    assert again.read_bytes() == first.read_bytes()
    doc = json.loads((tmp_path / "first.csv.manifest.json").read_text())
    assert doc["run"]["reproducible"] is True and "--work 5000" in doc["command"]


def test_from_manifest_compares_a_shuffled_file_by_its_rows(census_csv, tmp_path, capsys):
    first = tmp_path / "first.csv"
    assert _protect(census_csv, "-o", first, "-k", "3", "--method", "mdav", "--shuffle") == 0
    doc = json.loads((tmp_path / "first.csv.manifest.json").read_text())
    assert doc["shuffled"] and doc["output"]["rows_sha256"]
    capsys.readouterr()
    assert (
        _protect(
            census_csv, "-o", tmp_path / "again.csv", "--from-manifest", f"{first}.manifest.json"
        )
        == 0
    )
    assert "rows (shuffled" in capsys.readouterr().out
    # an older manifest without rows_sha256: the earlier file beside it gives the rows
    del doc["output"]["rows_sha256"]
    (tmp_path / "first.csv.manifest.json").write_text(json.dumps(doc))
    assert (
        _protect(
            census_csv, "-o", tmp_path / "third.csv", "--from-manifest", f"{first}.manifest.json"
        )
        == 0
    )


def test_from_manifest_says_in_one_line_what_does_not_match(census_csv, tmp_path, capsys):
    first = tmp_path / "first.csv"
    assert _protect(census_csv, "-o", first, "-k", "3", "--method", "mdav") == 0
    manifest = tmp_path / "first.csv.manifest.json"
    doc = json.loads(manifest.read_text())
    doc["output"]["sha256"] = "0" * 64
    manifest.write_text(json.dumps(doc))
    capsys.readouterr()
    assert _protect(census_csv, "-o", tmp_path / "again.csv", "--from-manifest", manifest) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does NOT reproduce first.csv" in err
    other = tmp_path / "other.csv"
    microagg.datasets.load("census").head(200).to_csv(other, index=False)
    assert _protect(other, "-o", tmp_path / "x.csv", "--from-manifest", manifest) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not the file" in err and not (tmp_path / "x.csv").exists()
    assert (
        _protect(census_csv, "-o", tmp_path / "y.csv", "--from-manifest", manifest, "-k", "4") == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "drop -k" in err and not (tmp_path / "y.csv").exists()
