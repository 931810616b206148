"""Command line for issue 8: auto, strata merging, weights, --report, --json, --quiet, risk in evaluate."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg.cli import main, parse_weights, UserError


def run_cli(*args):
    """The command line in a subprocess, as a user runs it (a few end-to-end tests only: slow)."""
    return subprocess.run([sys.executable, "-m", "microagg.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


class Done:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def cli(capsys):
    """The command line in this process (fast): returns returncode, stdout, stderr like subprocess.run."""

    def run(*args):
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Done(code, captured.out, captured.err)

    return run


@pytest.fixture
def data_csv(tmp_path):
    """Census rows with a stratum column (one stratum too small), a sampling weight and an id."""
    df = microagg.datasets.load("census").head(150).copy()
    df.insert(0, "record_id", np.arange(len(df)))
    df["region"] = np.where(np.arange(len(df)) % 2 == 0, "north", "south")
    df.loc[:1, "region"] = "island"
    df["weight"] = np.linspace(1.0, 3.0, len(df))
    p = tmp_path / "data.csv"
    df.to_csv(p, index=False)
    return p


QI = "AGI,FEDTAX,STATETAX,FICA"


def test_protect_auto_json_is_one_object_with_the_portfolio(data_csv, tmp_path):
    out = tmp_path / "out.csv"
    done = run_cli("protect", data_csv, "-o", out, "-k", "3", "--method", "auto", "--columns", QI,
                   "--param", "portfolio=mdav,md,tsp-mhm", "--time-limit", "30", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)  # exactly one JSON object, nothing else on stdout
    assert record["method"] == "auto" and record["k"] == 3 and record["output"] == str(out)
    rows = record["extras"]["portfolio"]
    assert [r["method"] for r in rows] == ["mdav", "md", "tsp-mhm"]
    assert record["information_loss"] == pytest.approx(min(r["il"] for r in rows if r["status"] == "ok"))
    assert record["extras"]["winner"] in ("mdav", "md", "tsp-mhm")
    assert record["group_size_min"] >= 3
    assert out.exists()


def test_protect_auto_prints_the_portfolio(data_csv, tmp_path):
    out = tmp_path / "out.csv"
    done = run_cli("protect", data_csv, "-o", out, "-k", "3", "--method", "auto", "--columns", QI,
                   "--param", "portfolio=['mdav','md']", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "auto: winner" in done.stdout and "mdav" in done.stdout and " md " in done.stdout
    assert done.stderr == ""  # --quiet: no progress display


def test_protect_strata_merge_weights_and_sample_weight(cli, data_csv, tmp_path):
    out = tmp_path / "out.csv"
    bad = cli("protect", data_csv, "-o", out, "-k", "3", "--columns", QI, "--strata", "region")
    assert bad.returncode == 2 and "island (2 records)" in bad.stderr and not out.exists()
    done = cli("protect", data_csv, "-o", out, "-k", "3", "--columns", QI, "--strata", "region",
                   "--merge-small-strata", "--weights", "AGI=4", "--sample-weight", "weight", "--json", "-q")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["extras"]["merged_strata"][0]["stratum"] == "island"
    assert record["extras"]["weights"]["AGI"] == 4.0
    assert record["extras"]["sample_weight"] == "weight"
    src, res = pd.read_csv(data_csv), pd.read_csv(out)
    merged = src["region"].replace({"island": record["extras"]["merged_strata"][0]["merged_into"]})
    # every published QI combination lies inside one (merged) stratum and has >= 3 records
    keys = res[QI.split(",")].round(9).astype(str).agg("|".join, axis=1)
    assert keys.value_counts().min() >= 3
    assert (merged.groupby(keys).nunique() == 1).all()
    pd.testing.assert_series_equal(res["weight"], src["weight"])


def test_protect_report_is_written_with_the_output(cli, data_csv, tmp_path):
    out, report = tmp_path / "out.parquet", tmp_path / "report.html"
    done = cli("protect", data_csv, "-o", out, "-k", "3", "--columns", QI, "--report", report, "-q")
    assert done.returncode == 0, done.stderr
    html = report.read_text(encoding="utf-8")
    for fig in ("fig-group-sizes", "fig-pca-scatter", "fig-corr-original", "fig-corr-protected"):
        assert f'id="{fig}"' in html
    assert str(data_csv) in html
    assert f"report: {report}" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "out.parquet", "report.html"]


def test_evaluate_prints_risk_and_utility_and_json(cli, data_csv, tmp_path):
    out = tmp_path / "out.csv"
    assert cli("protect", data_csv, "-o", out, "-k", "3", "--columns", QI, "-q").returncode == 0
    text = cli("evaluate", data_csv, out, "-k", "3")
    assert text.returncode == 0, text.stderr
    for needle in ("IL1s", "record linkage", "interval disclosure", "eigenvalue", "covariance", "k-anonymous"):
        assert needle in text.stdout
    done = cli("evaluate", data_csv, out, "-k", "3", "--json", "-p", "5")
    record = json.loads(done.stdout)
    assert record["columns"] == QI.split(",")
    assert record["k_anonymous"] is True
    assert 0 <= record["risk"]["record_linkage_dbrl"] <= 1 / 3 + 1e-12
    assert record["risk"]["interval_disclosure_p"] == 5.0
    assert record["utility"]["il1s"] > 0


def test_methods_json_lists_the_registry(cli):
    done = cli("methods", "--json")
    record = json.loads(done.stdout)
    names = [m["name"] for m in record["methods"]]
    assert names == microagg.methods()
    auto = next(m for m in record["methods"] if m["name"] == "auto")
    assert "portfolio" in auto["params"]


@pytest.mark.parametrize("extra,message", [
    (["--weights", "1,2"], "weights has 2 value"),
    (["--weights", "AGI=-1"], "positive"),
    (["--weights", "AGI=0"], "positive"),
    (["--weights", "NOPE=2"], "not quasi-identifiers"),
    (["--weights", "1,x,1,1"], "not a number"),
    (["--weights", "AGI=1,2"], "mixes"),
    (["--sample-weight", "AGI"], "both quasi-identifier and sample weight"),
    (["--sample-weight", "nope"], "unknown sample_weight"),
    (["--sample-weight", "region"], "not numeric"),
    (["--strata", "region"], "island"),
    (["--strata", "nope"], "unknown strata"),
    (["--merge-small-strata"], "needs --strata"),
    (["--report", "r.txt"], ".html"),
    (["--report", "missing/r.html"], "does not exist"),
    (["--interval-p", "150"], "interval-p"),
    (["--method", "auto", "--param", "portfolio=mdav,nope"], "unknown method"),
    (["--method", "auto", "--param", "portfolio=individual-ranking"], "each variable on its own"),
    (["--param", "seed=1"], "--seed option"),
    (["--method", "vmdav", "--param", "gamma=abc"], "gamma must be a number >= 0, got 'abc'"),
    (["--method", "vmdav", "--param", "gamma=nan"], "gamma must be a finite number"),
    (["--method", "vmdav", "--param", "gamma=[1,2]"], "gamma must be a number"),
    (["--method", "vmdav", "--param", "gamma=-1"], "gamma must be a number >= 0"),
    (["--method", "vmdav", "--param", "gamma"], "NAME=VALUE"),
    (["--method", "vmdav", "--param", "nope=1"], "no parameter nope"),
    (["--method", "auto", "--param", "member_params={'vmdav': {'gamma': 2}}", "--param", "portfolio=mdav"],
     "not in the portfolio"),
])
def test_bad_options_exit_2_with_one_line_and_write_nothing(cli, data_csv, tmp_path, extra, message):
    out = tmp_path / "out.csv"
    extra = [str(tmp_path / e) if e.endswith((".txt", ".html")) else e for e in extra]
    done = cli("protect", data_csv, "-o", out, "-k", "3", "--columns", QI, "--json", *extra)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("microagg: error:"), done.stderr
    assert message in lines[0]
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_report_and_output_paths_checked_before_running(data_csv, tmp_path, capsys):
    out = tmp_path / "out.csv"
    assert main(["protect", str(data_csv), "-o", str(out), "-k", "3", "--columns", QI,
                 "--report", str(out)]) == 2
    assert main(["protect", str(data_csv), "-o", str(tmp_path / "o.json"), "-k", "3", "--columns", QI]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_parse_weights():
    assert parse_weights("1,2.5") == [1.0, 2.5]
    assert parse_weights("A=2, B=0.5") == {"A": 2.0, "B": 0.5}
    assert parse_weights(None) is None
    for bad in ("1,,2", "A=1,A=2", "A=x"):
        with pytest.raises(UserError):
            parse_weights(bad)


def test_progress_bar_does_not_touch_stdout(data_csv, tmp_path, monkeypatch):
    """With progress on (no --quiet), stdout still holds exactly one JSON object."""
    out = tmp_path / "out.csv"
    done = run_cli("protect", data_csv, "-o", out, "-k", "3", "--columns", QI, "--method", "auto",
                   "--param", "portfolio=mdav,tsp-mhm", "--json")
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)


def test_bad_option_in_a_real_process_is_one_line_without_traceback(data_csv, tmp_path):
    done = run_cli("protect", data_csv, "-o", tmp_path / "out.csv", "-k", "3", "--columns", QI,
                   "--weights", "AGI=-2")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["microagg: error: weights must be positive and finite: AGI=-2.0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_labels_out_then_init_continues_improving_the_partition(cli, tmp_path):
    """--labels-out writes the partition; --init starts icsm / colgen from it: never worse."""
    src = tmp_path / "census.csv"
    microagg.datasets.load("census").to_csv(src, index=False)
    first = cli("protect", src, "-o", tmp_path / "a.csv", "-k", 3, "--method", "mdav", "--labels-out",
                tmp_path / "a.labels", "-q", "--json")
    assert first.returncode == 0
    labels = np.loadtxt(tmp_path / "a.labels", dtype=np.int64)
    assert len(labels) == 1080
    il_first = json.loads(first.stdout)["information_loss"]
    for method in ("icsm", "colgen"):
        out = tmp_path / f"{method}.csv"
        more = cli("protect", src, "-o", out, "-k", 3, "--method", method, "--init", tmp_path / "a.labels",
                   "--time-limit", 2, "-q", "--json")
        assert more.returncode == 0, more.stderr
        assert json.loads(more.stdout)["information_loss"] <= il_first + 1e-9


@pytest.mark.parametrize("case,match", [
    ("mdav", "takes no start partition"),
    ("short", "5 labels for 1080 records"),
    ("text", "not an integer group label"),
    ("twice", "give the start partition once"),
    ("blocks", "cannot be combined"),
    ("missing", "--init file not found"),
    ("over-input", "refusing to write the labels"),
])
def test_bad_init_or_labels_out_is_one_line_before_any_work(cli, tmp_path, case, match):
    src = tmp_path / "census.csv"
    microagg.datasets.load("census").to_csv(src, index=False)
    good = tmp_path / "good.labels"
    good.write_text("\n".join(str(i // 3) for i in range(1080)) + "\n")
    (tmp_path / "short.labels").write_text("0\n0\n0\n1\n1\n")
    args = {"mdav": ["--method", "mdav", "--init", good],
            "short": ["--method", "icsm", "--init", tmp_path / "short.labels"],
            "text": ["--method", "icsm", "--init", src],
            "twice": ["--method", "colgen", "--init", good, "--param", "init=icsm"],
            "blocks": ["--method", "icsm", "--init", good, "--block-size", 300],
            "missing": ["--method", "icsm", "--init", tmp_path / "nope.labels"],
            "over-input": ["--method", "mdav", "--labels-out", src]}[case]
    done = cli("protect", src, "-o", tmp_path / "out.csv", "-k", 3, *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and match in lines[0]
    assert not (tmp_path / "out.csv").exists()
