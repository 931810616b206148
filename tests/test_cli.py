"""Command line: protect / evaluate / methods, exit status 2 with one line on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import QI, _lines, digest, one_error_line, run_cli

import microagg
from microagg.cli import main
from microagg.errors import ParameterError
from microagg.options import parse_weights


def test_cli_flags(tmp_path, capsys):
    from microagg.cli import main

    src = microagg.datasets.path("testdata")
    out = tmp_path / "out.csv"
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(out),
                "-k",
                "3",
                "--columns",
                "expend,income,savings,sex,age",
                "--categorical",
                "sex",
                "--ordinal",
                "age",
                "--strata",
                "urbrur",
                "--distance",
                "robust",
                "--aggregation",
                "trimmed",
                "--trim",
                "0.3",
                "-q",
            ]
        )
        == 0
    )
    assert "median category (ordinal)" in capsys.readouterr().out
    got = pd.read_csv(out)
    original = pd.read_csv(src)
    cols = ["expend", "income", "savings", "sex", "age"]
    assert got[cols].astype(str).value_counts().min() >= 3
    assert set(got["sex"]) <= set(original["sex"]) and set(got["age"]) <= set(original["age"])
    assert (
        main(["protect", str(src), "-o", str(out), "-k", "3", "--aggregation", "mode", "-q"]) == 2
    )


def test_evaluate_warns_when_the_records_are_not_in_the_same_order(tmp_path, capsys):
    """evaluate compares records row by row: a protected file in another order (sorted, shuffled)
    gave an IL of about 200 % without a word; the columns both files share and that the protection
    does not touch (an id) show the misalignment."""
    rng = np.random.default_rng(3)
    orig = tmp_path / "orig.csv"
    orig.write_text(
        "id,a,b\n" + _lines(30, lambda i: f"p{i:03d},{rng.normal():.3f},{rng.normal():.3f}\n")
    )
    prot = tmp_path / "prot.csv"
    assert main(["protect", str(orig), "-o", str(prot), "-k", "3", "-q"]) == 0
    lines = prot.read_text().splitlines()
    shuffled = tmp_path / "shuffled.csv"
    shuffled.write_text("\n".join([lines[0]] + lines[1:][::-1]) + "\n")
    capsys.readouterr()
    assert main(["evaluate", str(orig), str(prot), "-q"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["evaluate", str(orig), str(shuffled), "-q"]) == 0
    err = capsys.readouterr().err
    assert "warning: column id differs between the files" in err and "row 1" in err


def test_columns_named_on_the_command_line_match_a_header_with_spaces(tmp_path, capsys):
    """A hand-written header 'x, y, g' has the names 'x', ' y', ' g'; --columns x,y strips what it
    is given, so ' y' could not be named at all ('unknown column(s): y')."""
    src = tmp_path / "in.csv"
    src.write_text("x, y, g\n" + "".join(f"{i}, {i * i % 7}, {'ab'[i % 2]}\n" for i in range(8)))
    out = tmp_path / "out.csv"
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(out),
                "-k",
                "2",
                "-q",
                "--columns",
                "x,y",
                "--strata",
                "g",
            ]
        )
        == 0
    )
    lines = out.read_text().splitlines()
    assert lines[0] == "x, y, g" and [ln.split(",")[2] for ln in lines[1:]] == [
        f" {'ab'[i % 2]}" for i in range(8)
    ]
    capsys.readouterr()
    assert main(["evaluate", str(src), str(out), "-q", "--columns", "x, y"]) == 0


def test_the_report_is_never_written_over_the_start_partition(tmp_path, capsys):
    """--report was checked against the input and the output only: naming the --init file (an
    input of the run, here init.html) overwrote it with the report."""
    src = tmp_path / "in.csv"
    src.write_text("a,b\n1,2\n3,4\n5,6\n7,8\n")
    init = tmp_path / "init.html"
    init.write_text("0\n0\n1\n1\n")
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(tmp_path / "out.csv"),
                "-k",
                "2",
                "-q",
                "--method",
                "icsm",
                "--init",
                str(init),
                "--report",
                str(init),
            ]
        )
        == 2
    )
    assert (
        capsys.readouterr().err
        == f"microagg: error: refusing to write the report over another file of this run: {init}\n"
    )
    assert init.read_text() == "0\n0\n1\n1\n" and not (tmp_path / "out.csv").exists()


def test_the_output_is_never_written_over_the_start_partition(tmp_path, capsys):
    """-o naming the --init file (an input of the run) replaced the partition with the output."""
    src = tmp_path / "in.csv"
    src.write_text("a,b\n1,2\n3,4\n5,6\n7,8\n")
    init = tmp_path / "part.csv"
    init.write_text("0\n0\n1\n1\n")
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(init),
                "-k",
                "2",
                "-q",
                "--method",
                "icsm",
                "--init",
                str(init),
            ]
        )
        == 2
    )
    assert (
        capsys.readouterr().err
        == f"microagg: error: refusing to write the output over the --init file {init}\n"
    )
    assert init.read_text() == "0\n0\n1\n1\n"


@pytest.mark.parametrize(
    "extra, flag",
    [
        (
            ["--out-of-core", "--block-size", "4", "--labels-out", "{tmp}/labels.txt"],
            "--labels-out",
        ),
        (["--out-of-core", "--block-size", "4", "--trim", "0.2"], "--trim"),
    ],
)
def test_options_that_would_do_nothing_are_errors(tmp_path, capsys, extra, flag):
    """--labels-out and --trim were silently ignored with --out-of-core (no labels file, exit 0):
    every option is honoured or rejected (--interval-p, once the report's only, sets the audit's
    interval disclosure since issue 33: test_interval_p_sets_the_audits_rank_interval)."""
    src = tmp_path / "in.csv"
    src.write_text("a,b\n" + "".join(f"{i},{i * 3 % 7}\n" for i in range(12)))
    out = tmp_path / "out"
    args = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("microagg: error: ") and flag in err and err.count("\n") == 1
    assert not out.exists() and not (tmp_path / "labels.txt").exists()


def test_every_warning_is_one_line(tmp_path, capsys, monkeypatch):
    """pandas' Stata writer warned in 11 lines when it renamed columns; the CLI promises one line
    per warning on stderr (a log reader or grep sees the whole warning). A warning of many lines
    (as libraries write them) is one line on stderr."""
    import warnings

    import microagg.api

    real = microagg.api.compute

    def chatty(*args, **kwargs):
        warnings.warn(
            "Not all pandas column names were valid:\n\n    b c   ->   b_c\n\nmore text",
            UserWarning,
            stacklevel=2,
        )
        return real(*args, **kwargs)

    monkeypatch.setattr(microagg.api, "compute", chatty)
    src = tmp_path / "in.csv"
    src.write_text("income,b c\n1,2\n3,4\n5,6\n7,8\n")
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    renamed = [ln for ln in lines if "b c" in ln and "b_c" in ln]
    assert len(renamed) == 1 and renamed[0].startswith(
        "microagg: warning: Not all pandas column names"
    )
    assert all(ln.startswith("microagg: ") for ln in lines)


@pytest.mark.parametrize("option", ["--strata", "--columns", "--categorical", "--ordinal"])
def test_a_column_named_twice_in_an_option_is_one_error_before_reading(tmp_path, capsys, option):
    """--strata s,s was accepted as if given once; every comma-separated column option now
    rejects a repeated name with exit 2, one line, and writes nothing."""
    src = tmp_path / "in.csv"
    src.write_text("a,b,s\n" + _lines(12, lambda i: f"{i},{i % 5},{'xy'[i % 2]}\n"))
    out = tmp_path / "out.csv"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", option, "a, a"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{option} names a column twice: a" in err
    assert not out.exists()


def test_protect_auto_json_is_one_object_with_the_portfolio(data_csv, tmp_path):
    out = tmp_path / "out.csv"
    done = run_cli(
        "protect",
        data_csv,
        "-o",
        out,
        "-k",
        "3",
        "--method",
        "auto",
        "--columns",
        QI,
        "--param",
        "portfolio=mdav,md,tsp-mhm",
        "--time-limit",
        "30",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)  # exactly one JSON object, nothing else on stdout
    assert record["method"] == "auto" and record["k"] == 3 and record["output"] == str(out)
    rows = record["extras"]["portfolio"]
    assert [r["method"] for r in rows] == ["mdav", "md", "tsp-mhm"]
    assert record["information_loss"] == pytest.approx(
        min(r["il"] for r in rows if r["status"] == "ok")
    )
    assert record["extras"]["winner"] in ("mdav", "md", "tsp-mhm")
    assert record["group_size_min"] >= 3
    assert out.exists()


def test_protect_auto_prints_the_portfolio(data_csv, tmp_path):
    out = tmp_path / "out.csv"
    done = run_cli(
        "protect",
        data_csv,
        "-o",
        out,
        "-k",
        "3",
        "--method",
        "auto",
        "--columns",
        QI,
        "--param",
        "portfolio=['mdav','md']",
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    assert "auto: winner" in done.stdout and "mdav" in done.stdout and " md " in done.stdout
    assert done.stderr == ""  # --quiet: no progress display


def test_protect_strata_merge_weights_and_sample_weight(cli, data_csv, tmp_path):
    out = tmp_path / "out.csv"
    bad = cli("protect", data_csv, "-o", out, "-k", "3", "--columns", QI, "--strata", "region")
    assert bad.returncode == 2 and "island (2 records)" in bad.stderr and not out.exists()
    done = cli(
        "protect",
        data_csv,
        "-o",
        out,
        "-k",
        "3",
        "--columns",
        QI,
        "--strata",
        "region",
        "--merge-small-strata",
        "--weights",
        "AGI=4",
        "--sample-weight",
        "weight",
        "--json",
        "-q",
    )
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
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "data.csv",
        "out.parquet",
        "out.parquet.manifest.json",
        "report.html",
    ]


def test_evaluate_prints_risk_and_utility_and_json(cli, data_csv, tmp_path):
    out = tmp_path / "out.csv"
    assert cli("protect", data_csv, "-o", out, "-k", "3", "--columns", QI, "-q").returncode == 0
    text = cli("evaluate", data_csv, out, "-k", "3")
    assert text.returncode == 0, text.stderr
    for needle in (
        "IL1s",
        "record linkage",
        "interval disclosure",
        "eigenvalue",
        "covariance",
        "k-anonymous",
    ):
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


@pytest.mark.parametrize(
    "extra,message",
    [
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
        (
            ["--method", "auto", "--param", "portfolio=individual-ranking"],
            "each variable on its own",
        ),
        (["--param", "seed=1"], "--seed option"),
        (["--method", "vmdav", "--param", "gamma=abc"], "gamma must be a number >= 0, got 'abc'"),
        (["--method", "vmdav", "--param", "gamma=nan"], "gamma must be a finite number"),
        (["--method", "vmdav", "--param", "gamma=[1,2]"], "gamma must be a number"),
        (["--method", "vmdav", "--param", "gamma=-1"], "gamma must be a number >= 0"),
        (["--method", "vmdav", "--param", "gamma"], "NAME=VALUE"),
        (["--method", "vmdav", "--param", "nope=1"], "no parameter nope"),
        (
            [
                "--method",
                "auto",
                "--param",
                "member_params={'vmdav': {'gamma': 2}}",
                "--param",
                "portfolio=mdav",
            ],
            "not in the portfolio",
        ),
    ],
)
def test_bad_options_exit_2_with_one_line_and_write_nothing(
    cli, data_csv, tmp_path, extra, message
):
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
    assert (
        main(
            [
                "protect",
                str(data_csv),
                "-o",
                str(out),
                "-k",
                "3",
                "--columns",
                QI,
                "--report",
                str(out),
            ]
        )
        == 2
    )
    assert (
        main(["protect", str(data_csv), "-o", str(tmp_path / "o.json"), "-k", "3", "--columns", QI])
        == 2
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_parse_weights():
    assert parse_weights("1,2.5") == [1.0, 2.5]
    assert parse_weights("A=2, B=0.5") == {"A": 2.0, "B": 0.5}
    for bad in ("1,,2", "A=1,A=2", "A=x"):
        with pytest.raises(ParameterError):
            parse_weights(bad)


def test_progress_bar_does_not_touch_stdout(data_csv, tmp_path, monkeypatch):
    """With progress on (no --quiet), stdout still holds exactly one JSON object."""
    out = tmp_path / "out.csv"
    done = run_cli(
        "protect",
        data_csv,
        "-o",
        out,
        "-k",
        "3",
        "--columns",
        QI,
        "--method",
        "auto",
        "--param",
        "portfolio=mdav,tsp-mhm",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)


def test_bad_option_in_a_real_process_is_one_line_without_traceback(data_csv, tmp_path):
    done = run_cli(
        "protect",
        data_csv,
        "-o",
        tmp_path / "out.csv",
        "-k",
        "3",
        "--columns",
        QI,
        "--weights",
        "AGI=-2",
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "microagg: error: weights must be positive and finite: AGI=-2.0"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_labels_out_then_init_continues_improving_the_partition(cli, tmp_path):
    """--labels-out writes the partition; --init starts icsm / colgen from it: never worse."""
    src = tmp_path / "census.csv"
    microagg.datasets.load("census").to_csv(src, index=False)
    first = cli(
        "protect",
        src,
        "-o",
        tmp_path / "a.csv",
        "-k",
        3,
        "--method",
        "mdav",
        "--labels-out",
        tmp_path / "a.labels",
        "-q",
        "--json",
    )
    assert first.returncode == 0
    labels = np.loadtxt(tmp_path / "a.labels", dtype=np.int64)
    assert len(labels) == 1080
    il_first = json.loads(first.stdout)["information_loss"]
    for method in ("icsm", "colgen"):
        out = tmp_path / f"{method}.csv"
        more = cli(
            "protect",
            src,
            "-o",
            out,
            "-k",
            3,
            "--method",
            method,
            "--init",
            tmp_path / "a.labels",
            "--time-limit",
            2,
            "-q",
            "--json",
        )
        assert more.returncode == 0, more.stderr
        assert json.loads(more.stdout)["information_loss"] <= il_first + 1e-9


@pytest.mark.parametrize(
    "case,match",
    [
        ("mdav", "takes no start partition"),
        ("short", "5 labels for 1080 records"),
        ("text", "not an integer group label"),
        ("twice", "give the start partition once"),
        ("blocks", "cannot be combined"),
        ("missing", "--init file not found"),
        ("over-input", "refusing to write the labels"),
    ],
)
def test_bad_init_or_labels_out_is_one_line_before_any_work(cli, tmp_path, case, match):
    src = tmp_path / "census.csv"
    microagg.datasets.load("census").to_csv(src, index=False)
    good = tmp_path / "good.labels"
    good.write_text("\n".join(str(i // 3) for i in range(1080)) + "\n")
    (tmp_path / "short.labels").write_text("0\n0\n0\n1\n1\n")
    args = {
        "mdav": ["--method", "mdav", "--init", good],
        "short": ["--method", "icsm", "--init", tmp_path / "short.labels"],
        "text": ["--method", "icsm", "--init", src],
        "twice": ["--method", "colgen", "--init", good, "--param", "init=icsm"],
        "blocks": ["--method", "icsm", "--init", good, "--block-size", 300],
        "missing": ["--method", "icsm", "--init", tmp_path / "nope.labels"],
        "over-input": ["--method", "mdav", "--labels-out", src],
    }[case]
    done = cli("protect", src, "-o", tmp_path / "out.csv", "-k", 3, *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and match in lines[0]
    assert not (tmp_path / "out.csv").exists()


def test_protect_writes_output_keeping_rows_and_other_columns(census_csv, tmp_path):
    out = tmp_path / "out.csv"
    assert (
        main(
            [
                "protect",
                str(census_csv),
                "-o",
                str(out),
                "-k",
                "3",
                "--columns",
                "AGI,FEDTAX,STATETAX",
            ]
        )
        == 0
    )
    src, res = pd.read_csv(census_csv), pd.read_csv(out)
    assert list(res.columns) == list(src.columns) and len(res) == len(src)
    untouched = [c for c in src.columns if c not in ("AGI", "FEDTAX", "STATETAX")]
    pd.testing.assert_frame_equal(res[untouched], src[untouched])
    assert microagg.measures.smallest_group(res[["AGI", "FEDTAX", "STATETAX"]]) >= 3


def test_protect_parquet_and_param(census_csv, tmp_path):
    out = tmp_path / "out.parquet"
    assert (
        main(
            [
                "protect",
                str(census_csv),
                "-o",
                str(out),
                "-k",
                "4",
                "--method",
                "vmdav",
                "--param",
                "gamma=0.5",
                "--columns",
                "AGI,FEDTAX",
            ]
        )
        == 0
    )
    assert len(pd.read_parquet(out)) == 120


def test_evaluate_reports_measures(census_csv, tmp_path, capsys):
    out = tmp_path / "out.csv"
    main(["protect", str(census_csv), "-o", str(out), "-k", "3"])
    capsys.readouterr()
    assert main(["evaluate", str(census_csv), str(out), "-k", "3"]) == 0
    text = capsys.readouterr().out
    assert "information loss" in text and "k-anonymous" in text


def test_methods_lists_registry(capsys):
    assert main(["methods"]) == 0
    text = capsys.readouterr().out
    for name in microagg.methods():
        assert name in text


@pytest.mark.parametrize(
    "args,needle",
    [
        (["protect", "{missing}", "-o", "{out}", "-k", "3"], "not found"),
        (["protect", "{src}", "-o", "{out}", "-k", "1"], "-k must be an integer >= 2"),
        (["protect", "{src}", "-o", "{out}", "-k", "100000"], "larger than"),
        (["protect", "{src}", "-o", "{out}", "-k", "3", "--columns", "nope"], "unknown column"),
        (["protect", "{src}", "-o", "{out}", "-k", "3", "--columns", "note"], "not numeric"),
        (["protect", "{src}", "-o", "{out}", "-k", "3", "--method", "nope"], "unknown method"),
        (["protect", "{src}", "-o", "{out}", "-k", "3", "--param", "gama=1"], "no parameter"),
        (["protect", "{src}", "-o", "{src}", "-k", "3"], "over the input"),
        (["protect", "{src}", "-o", "{out}"], "required"),
        (["protect", "{empty}", "-o", "{out}", "-k", "3"], "empty"),
        # a missing value: accepted in a continuous QI, an error in a categorical one
        (["protect", "{nan}", "-o", "{out}", "-k", "2", "--categorical", "AGI"], "AGI (1 rows)"),
    ],
)
def test_bad_input_exit_2_one_line_nothing_written(census_csv, tmp_path, args, needle, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    nan = tmp_path / "nan.csv"
    df = pd.read_csv(census_csv)
    df.loc[5, "AGI"] = np.nan
    df.to_csv(nan, index=False)
    paths = {
        "src": census_csv,
        "out": tmp_path / "out.csv",
        "missing": tmp_path / "missing.csv",
        "empty": empty,
        "nan": nan,
    }
    before = digest(census_csv)
    assert main([a.format(**paths) for a in args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("microagg: error:")
    assert needle in lines[0]
    assert not (tmp_path / "out.csv").exists()
    assert digest(census_csv) == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_entry_point_error_is_one_line_without_traceback(tmp_path):
    proc = run_cli("protect", tmp_path / "missing.csv", "-o", tmp_path / "o.csv", "-k", "3")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr


def test_constant_column_warns_once_and_succeeds(tmp_path):
    src = tmp_path / "c.csv"
    pd.DataFrame({"a": np.arange(9.0), "c": np.ones(9)}).to_csv(src, index=False)
    proc = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", "3")
    assert proc.returncode == 0
    assert proc.stderr.count("constant") == 1


def test_csv_dialect_and_non_qi_text_survive_the_cli(tmp_path, capsys):
    rng = np.random.default_rng(5)
    rows = "".join(
        f'{i:05d};{"NA" if i % 3 else "null"};"a;b ""{i}""";{rng.integers(20, 70)};'
        f"{rng.normal(3000, 500):.2f}".replace(".", ",")
        + "\r\n"
        for i in range(30)
    )
    text = "\ufeffzip;country;note;age;income\r\n" + rows
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_bytes(text.encode("utf-8"))
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q"]) == 0
    printed = capsys.readouterr()
    assert "protected (quasi-identifiers): age, income" in printed.out
    assert "unchanged: zip, country, note" in printed.out
    # -q: the default columns' warning table is only counted (zip: numbers stored as text)
    assert "1 warning(s) on columns left out of the default quasi-identifiers" in printed.err
    before = text.split("\r\n")
    after = out.read_bytes().decode("utf-8").split("\r\n")
    assert len(after) == len(before) and after[0] == before[0]
    for a, b in zip(before[1:-1], after[1:-1]):
        assert a.rsplit(";", 2)[0] == b.rsplit(";", 2)[0]  # zip, country, note: the same characters
        assert (
            "," in b.rsplit(";", 1)[1] or b.rsplit(";", 1)[1].lstrip("-").isdigit()
        )  # decimal comma kept
    res = pd.read_csv(out, sep=";", decimal=",")
    assert microagg.measures.smallest_group(res[["age", "income"]]) >= 3


def test_duplicated_header_is_kept_and_cannot_be_a_qi(tmp_path, capsys):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text("x,x,v\n" + "".join(f"{i},t{i},{i * 1.5}\n" for i in range(9)))
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--columns", "x"]) == 2
    assert "occur more than once" in one_error_line(capsys)
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "x,x,v" and [ln.split(",")[:2] for ln in lines[1:]] == [
        [str(i), f"t{i}"] for i in range(9)
    ]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["-o", "{dir}"], "is a directory"),
        (["-o", "{tmp}/out.json"], "unsupported file format: out.json; supported: CSV"),
        (["-o", "{tmp}/out.sas7bdat"], ".xpt"),
        (["-o", "{tmp}/no/such/out.csv"], "does not exist"),
        (["-o", "{tmp}/out.csv", "--time-limit", "nan"], "--time-limit"),
        (["-o", "{tmp}/out.csv", "--time-limit", "-1"], "--time-limit"),
        (["-o", "{tmp}/out.csv", "--interval-p", "nan"], "--interval-p"),
        (["-o", "{tmp}/out.csv", "--sep", ";;"], "--sep"),
        (["-o", "{tmp}/out.csv", "--encoding", "klingon"], "unknown encoding"),
        (["-o", "{tmp}/out.csv", "--seed", "-3"], "--seed"),
        (
            ["-o", "{tmp}/outdir", "--out-of-core", "--block-size", "100", "-k", "1"],
            "-k must be an integer >= 2",
        ),
    ],
)
def test_bad_paths_and_options_exit_2_before_any_work(census_csv, tmp_path, capsys, args, needle):
    (tmp_path / "dir").mkdir()
    argv = ["protect", str(census_csv), "-k", "3", "-q"]
    argv += [a.format(dir=tmp_path / "dir", tmp=tmp_path) for a in args]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(argv) == 2
    assert needle in one_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_unsupported_input_format_lists_the_supported_ones(tmp_path, capsys):
    src = tmp_path / "data.json"
    src.write_text("[]")
    assert main(["protect", str(src), "-o", str(tmp_path / "o.csv"), "-k", "3"]) == 2
    line = one_error_line(capsys)
    for fmt in ("CSV", "Parquet", "Stata", "SPSS", "SAS", "Excel"):
        assert fmt in line


def test_internal_errors_are_not_user_errors(census_csv, tmp_path, capsys, monkeypatch):
    import microagg.api

    def broken(*args, **kwargs):
        raise ValueError("a bug, not the user's fault")

    monkeypatch.setattr(microagg.api, "compute", broken)
    assert main(["protect", str(census_csv), "-o", str(tmp_path / "o.csv"), "-k", "3", "-q"]) == 1
    err = capsys.readouterr().err
    assert "internal error: ValueError: a bug" in err and "Traceback" in err


def test_cli_module_imports_nothing_heavy():
    # numpy comes with the method registry (microagg/__init__); the rest loads only in the commands
    code = (
        "import sys, microagg.cli, microagg.io; print(sorted(m for m in ('pandas', 'numba', 'rich',"
        " 'dask', 'pyarrow', 'scipy') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def _caught_signals(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt"))


@pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="needs /proc to see the handlers installed"
)
@pytest.mark.parametrize("signum,code,word", [(2, 130, "interrupted"), (15, 143, "terminated")])
def test_signal_mid_run_exits_cleanly_leaving_no_file(tmp_path, signum, code, word):
    import os
    import signal
    import time

    src = tmp_path / "big.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal(size=(8000, 3)), columns=["a", "b", "c"]).to_csv(
        src, index=False
    )  # icsm runs ~20 s
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "microagg.cli",
            "protect",
            str(src),
            "-o",
            str(tmp_path / "o.csv"),
            "-k",
            "3",
            "--method",
            "icsm",
            "--time-limit",
            "30",
            "-q",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 60
    while not _caught_signals(proc.pid) & (1 << (signal.SIGTERM - 1)) and time.time() < deadline:
        time.sleep(0.05)  # wait until the handlers are installed (the command then runs)
    time.sleep(2.0)  # inside the computation
    os.kill(proc.pid, signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code
    assert err.strip().splitlines() == [f"microagg: {word}"]
    assert "Traceback" not in err and out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.csv"]


@pytest.mark.parametrize("method", ["colgen", "auto"])
def test_json_is_exactly_one_document_with_highs_methods(tmp_path, method):
    src = tmp_path / "in.csv"
    microagg.datasets.load("tarragona").head(40).to_csv(src, index=False)
    proc = run_cli(
        "protect",
        src,
        "-o",
        tmp_path / "o.csv",
        "-k",
        "3",
        "--method",
        method,
        "--time-limit",
        "5",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    import json

    record = json.loads(proc.stdout)
    assert record["method"] == method and record["group_size_min"] >= 3


def test_categorical_qi_in_a_csv_publishes_categories_as_text(tmp_path, capsys):
    rng = np.random.default_rng(4)
    regions = rng.choice(["north", "south", "east, coast"], 24)
    lines = "".join(f'{i:03d},"{r}",{rng.integers(20, 70)}\n' for i, r in enumerate(regions))
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text("code,region,age\n" + lines)
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(out),
                "-k",
                "3",
                "--columns",
                "region,age",
                "--categorical",
                "region",
                "-q",
            ]
        )
        == 0
    )
    res = pd.read_csv(out, dtype={"code": str})
    assert list(res["code"]) == [f"{i:03d}" for i in range(24)]
    assert set(res["region"]) <= {"north", "south", "east, coast"}
    assert res.groupby(["region", "age"]).size().min() >= 3
    assert (
        out.read_text().splitlines()[1].split(",")[1].startswith('"')
    )  # the quoted field stays quoted


def test_building_the_command_line_imports_nothing_heavy():
    """The run options' flags and help are generated from the declarations (their choices from the
    registries of distances and aggregations) without pandas, numba or scipy: help answers at once.
    """
    code = (
        "import sys\nfrom microagg.cli import"
        " build_parser\nbuild_parser().format_help()\nprint(sorted(m for m in ('pandas', 'numba',"
        " 'rich', 'dask', 'pyarrow', 'scipy', 'sklearn') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_interval_p_sets_the_audits_rank_interval(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text("a,b\n" + "".join(f"{i},{i * 3 % 7}\n" for i in range(12)))
    out = tmp_path / "out.csv"
    assert (
        main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--json", "--interval-p", "5"])
        == 0
    )
    record = json.loads(capsys.readouterr().out)
    assert record["risk"]["interval_disclosure_p"] == 5.0
    assert main(["evaluate", str(src), str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["risk"] == record["risk"]
