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
    (["protect", "{src}", "-o", "{out}", "-k", "1"], "-k must be an integer >= 2"),
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


# --- issue 14: data in = data out, clean failure ------------------------------------------------

def one_error_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("microagg: error:"), lines
    return lines[0]


def test_csv_dialect_and_non_qi_text_survive_the_cli(tmp_path, capsys):
    rng = np.random.default_rng(5)
    rows = "".join(f'{i:05d};{"NA" if i % 3 else "null"};"a;b ""{i}""";{rng.integers(20, 70)};'
                   f'{rng.normal(3000, 500):.2f}'.replace(".", ",") + "\r\n" for i in range(30))
    text = "\ufeffzip;country;note;age;income\r\n" + rows
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_bytes(text.encode("utf-8"))
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q"]) == 0
    printed = capsys.readouterr()
    assert "protected (quasi-identifiers): age, income" in printed.out
    assert "unchanged: zip, country, note" in printed.out
    assert "zip looks like an identifier, a code or a weight" in printed.err
    before = text.split("\r\n")
    after = out.read_bytes().decode("utf-8").split("\r\n")
    assert len(after) == len(before) and after[0] == before[0]
    for a, b in zip(before[1:-1], after[1:-1]):
        assert a.rsplit(";", 2)[0] == b.rsplit(";", 2)[0]  # zip, country, note: the same characters
        assert "," in b.rsplit(";", 1)[1] or b.rsplit(";", 1)[1].lstrip("-").isdigit()  # decimal comma kept
    res = pd.read_csv(out, sep=";", decimal=",")
    assert microagg.measures.smallest_group(res[["age", "income"]]) >= 3


def test_stray_tokens_name_the_column_unless_the_qis_are_named(tmp_path, capsys):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text("a,b,c\n" + "".join(f"{i % 5},{i * i},{'-' if i == 4 else i % 7}\n" for i in range(12)))
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q"]) == 2
    assert "column c is numeric except for '-' (1x)" in one_error_line(capsys)
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--missing", "-"]) == 2
    assert "c (1 rows)" in one_error_line(capsys)
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--columns", "a,c"]) == 2
    assert "column c is not numeric: row 5 holds '-'" in one_error_line(capsys)
    assert not out.exists()
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--columns", "a,b"]) == 0
    assert out.read_text().splitlines()[5].endswith(",-")


def test_duplicated_header_is_kept_and_cannot_be_a_qi(tmp_path, capsys):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text("x,x,v\n" + "".join(f"{i},t{i},{i * 1.5}\n" for i in range(9)))
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--columns", "x"]) == 2
    assert "occur more than once" in one_error_line(capsys)
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "x,x,v" and [ln.split(",")[:2] for ln in lines[1:]] == [[str(i), f"t{i}"] for i in range(9)]


@pytest.mark.parametrize("args,needle", [
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
    (["-o", "{tmp}/outdir", "--out-of-core", "--block-size", "100", "-k", "1"], "-k must be an integer >= 2"),
])
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

    monkeypatch.setattr(microagg.api, "microaggregate", broken)
    assert main(["protect", str(census_csv), "-o", str(tmp_path / "o.csv"), "-k", "3", "-q"]) == 1
    err = capsys.readouterr().err
    assert "internal error: ValueError: a bug" in err and "Traceback" in err


def test_cli_module_imports_nothing_heavy():
    # numpy comes with the method registry (microagg/__init__); the rest loads only in the commands
    code = ("import sys, microagg.cli, microagg.io; "
            "print(sorted(m for m in ('pandas', 'numba', 'rich', 'dask', 'pyarrow', 'scipy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def _caught_signals(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt"))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc to see the handlers installed")
@pytest.mark.parametrize("signum,code,word", [(2, 130, "interrupted"), (15, 143, "terminated")])
def test_signal_mid_run_exits_cleanly_leaving_no_file(tmp_path, signum, code, word):
    import os
    import signal
    import time

    src = tmp_path / "big.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal(size=(8000, 3)), columns=["a", "b", "c"]).to_csv(src, index=False)  # icsm runs ~20 s
    proc = subprocess.Popen([sys.executable, "-m", "microagg.cli", "protect", str(src), "-o", str(tmp_path / "o.csv"),
                             "-k", "3", "--method", "icsm", "--time-limit", "30", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
    proc = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", "3", "--method", method, "--time-limit", "5",
                   "--json")
    assert proc.returncode == 0, proc.stderr
    import json

    record = json.loads(proc.stdout)
    assert record["method"] == method and record["group_size_min"] >= 3


def test_stata_file_through_the_cli_keeps_labels(tmp_path, capsys):
    import pyreadstat

    rng = np.random.default_rng(2)
    df = pd.DataFrame({"age": rng.integers(18, 80, 30).astype(np.int16), "income": rng.normal(3000, 500, 30),
                       "sex": rng.integers(1, 3, 30).astype(np.int8)})
    src, out = tmp_path / "in.dta", tmp_path / "out.dta"
    df.to_stata(src, write_index=False, value_labels={"sex": {1: "male", 2: "female"}},
                variable_labels={"income": "Monthly income"})
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "--columns", "age,income", "-q"]) == 0
    back, meta = pyreadstat.read_dta(str(out))
    assert meta.variable_value_labels["sex"] == {1: "male", 2: "female"}
    assert meta.column_names_to_labels["income"] == "Monthly income"
    assert (back["sex"].to_numpy() == df["sex"].to_numpy()).all()
    assert microagg.measures.smallest_group(back[["age", "income"]]) >= 3


def test_categorical_qi_in_a_csv_publishes_categories_as_text(tmp_path, capsys):
    rng = np.random.default_rng(4)
    regions = rng.choice(["north", "south", "east, coast"], 24)
    lines = "".join(f'{i:03d},"{r}",{rng.integers(20, 70)}\n' for i, r in enumerate(regions))
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text("code,region,age\n" + lines)
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "--columns", "region,age",
                 "--categorical", "region", "-q"]) == 0
    res = pd.read_csv(out, dtype={"code": str})
    assert list(res["code"]) == [f"{i:03d}" for i in range(24)]
    assert set(res["region"]) <= {"north", "south", "east, coast"}
    assert res.groupby(["region", "age"]).size().min() >= 3
    assert out.read_text().splitlines()[1].split(",")[1].startswith('"')  # the quoted field stays quoted
