"""An explore pick's manifest records the budget its run used (issue 57: it omitted the work
budget, said reproducible, and its re-run gave IL 1.2210 instead of 1.2369): the run options in
the manifest's run section re-run to the same bytes."""

from __future__ import annotations

import json

import microagg
from microagg.cli.running import main


def test_a_picks_manifest_holds_the_work_its_run_used_and_re_runs_to_the_same_bytes(
    tmp_path, capsys
):
    df = microagg.datasets.load("tarragona").head(240)
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    result = tmp_path / "result.json"
    argv = ["explore", str(src), "-k", "3", "--methods", "icsm", "--time-limit", "30"]
    assert main([*argv, "-o", str(result), "-q"]) == 0
    row = next(r for r in json.loads(result.read_text())["runs"] if r["status"] == "ok")
    assert row["work"] is not None and row["reproducible"]
    picked = tmp_path / "pick.csv"
    pick = ["--from-explore", str(result), "--pick", str(row["id"]), "-q"]
    assert main(["protect", str(src), "-o", str(picked), *pick]) == 0
    run = json.loads((tmp_path / "pick.csv.manifest.json").read_text())["run"]
    assert run["options"]["work"] == row["work"] and run["reproducible"]
    again = tmp_path / "again.csv"
    replay = [
        "-k",
        str(run["k"]),
        "--method",
        run["method"],
        "--work",
        repr(run["options"]["work"]),
    ]
    assert (
        main(["protect", str(src), "-o", str(again), *replay, "--seed", str(run["seed"]), "-q"])
        == 0
    )
    assert again.read_bytes() == picked.read_bytes()
    capsys.readouterr()
