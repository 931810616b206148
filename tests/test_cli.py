"""Command line: protect / evaluate / methods, exit status 2 with one line on bad input."""

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg.cli import main


def run_cli(*args):
    """Run the installed entry point in a subprocess, as a user would."""
    return subprocess.run([sys.executable, "-m", "microagg.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def census_csv(tmp_path):
    p = tmp_path / "census.csv"
    df = microagg.datasets.load("census").head(120).copy()
    df.insert(0, "record_id", np.arange(len(df)))
    df["note"] = "x"
    df.to_csv(p, index=False)
    return p


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_protect_writes_output_keeping_rows_and_other_columns(census_csv, tmp_path):
    out = tmp_path / "out.csv"
    assert main(["protect", str(census_csv), "-o", str(out), "-k", "3",
                 "--columns", "AGI,FEDTAX,STATETAX"]) == 0
    src, res = pd.read_csv(census_csv), pd.read_csv(out)
    assert list(res.columns) == list(src.columns) and len(res) == len(src)
    untouched = [c for c in src.columns if c not in ("AGI", "FEDTAX", "STATETAX")]
    pd.testing.assert_frame_equal(res[untouched], src[untouched])
    assert microagg.measures.smallest_group(res[["AGI", "FEDTAX", "STATETAX"]]) >= 3


def test_protect_parquet_and_param(census_csv, tmp_path):
    out = tmp_path / "out.parquet"
    assert main(["protect", str(census_csv), "-o", str(out), "-k", "4", "--method", "vmdav",
                 "--param", "gamma=0.5", "--columns", "AGI,FEDTAX"]) == 0
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


@pytest.mark.parametrize("args,needle", [
    (["protect", "{missing}", "-o", "{out}", "-k", "3"], "not found"),
    (["protect", "{src}", "-o", "{out}", "-k", "1"], "at least 2"),
    (["protect", "{src}", "-o", "{out}", "-k", "100000"], "larger than"),
    (["protect", "{src}", "-o", "{out}", "-k", "3", "--columns", "nope"], "unknown column"),
    (["protect", "{src}", "-o", "{out}", "-k", "3", "--columns", "note"], "not numeric"),
    (["protect", "{src}", "-o", "{out}", "-k", "3", "--method", "nope"], "unknown method"),
    (["protect", "{src}", "-o", "{out}", "-k", "3", "--param", "gama=1"], "no parameter"),
    (["protect", "{src}", "-o", "{src}", "-k", "3"], "over the input"),
    (["protect", "{src}", "-o", "{out}"], "required"),
    (["protect", "{empty}", "-o", "{out}", "-k", "3"], "empty"),
    (["protect", "{nan}", "-o", "{out}", "-k", "2"], "AGI (1 rows)"),
])
def test_bad_input_exit_2_one_line_nothing_written(census_csv, tmp_path, args, needle, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    nan = tmp_path / "nan.csv"
    df = pd.read_csv(census_csv)
    df.loc[5, "AGI"] = np.nan
    df.to_csv(nan, index=False)
    paths = {"src": census_csv, "out": tmp_path / "out.csv", "missing": tmp_path / "missing.csv",
             "empty": empty, "nan": nan}
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


def test_out_of_core_writes_every_row_in_order_to_a_new_folder(tmp_path, capsys):
    src = tmp_path / "in.parquet"
    df = microagg.datasets.load("tarragona").copy()
    df["name"] = [f"firm{i}" for i in range(len(df))]
    df.to_parquet(src)
    out = tmp_path / "protected"
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "--out-of-core", "--block-size", "300",
                 "--scheduler", "synchronous"]) == 0
    res = pd.read_parquet(out)
    assert len(res) == len(df) and (res["name"].to_numpy() == df["name"].to_numpy()).all()
    assert microagg.measures.smallest_group(res[df.columns[:13]]) >= 3
    capsys.readouterr()
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "--out-of-core", "--block-size", "300"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".protected.")]
