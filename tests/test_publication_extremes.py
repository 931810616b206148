"""Valid extremes are valid and hostile files are one line (issue "One publication"): a time
limit of inf or 1e300, a workbook's second sheet, a grid that cannot run, claims beyond memory."""

from __future__ import annotations

import gzip
import json
import re
import zipfile

import numpy as np
import pandas as pd
import pytest

import microagg


@pytest.fixture
def survey(tmp_path):
    df = microagg.datasets.load("census").head(90)
    src = tmp_path / "s.csv"
    df.to_csv(src, index=False)
    return src


@pytest.mark.parametrize("limit", ["inf", "1e300", "1e12"])
@pytest.mark.parametrize("method", ["mdav", "colgen", "icsm"])
def test_any_positive_time_limit_is_valid(survey, tmp_path, cli, limit, method):
    done = cli(
        "protect",
        survey,
        "-o",
        tmp_path / "o.csv",
        "-k",
        "3",
        "--method",
        method,
        "--time-limit",
        limit,
        "--columns",
        "AGI,FICA",
        "-q",
    )
    assert done.returncode == 0, done.stderr


def test_a_workbooks_second_sheet_is_protected_and_its_other_sheets_named(tmp_path, cli):
    import openpyxl

    rng = np.random.default_rng(0)
    wb = openpyxl.Workbook()
    wb.active.title = "empty"
    data = wb.create_sheet("data")
    data.append(["a", "b", "note"])
    for i in range(30):
        data.append([float(rng.normal()), float(rng.normal()), f"n{i}"])
    wb.create_sheet("originals").append(["the original values"])
    src = tmp_path / "book.xlsx"
    wb.save(src)
    done = cli(
        "protect",
        src,
        "-o",
        tmp_path / "out.xlsx",
        "-k",
        "3",
        "--sheet",
        "data",
        "--columns",
        "a,b",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert (
        record["unchanged_sheets"] == ["empty", "originals"]
        and "published as they came in" in done.stderr
    )
    back = pd.read_excel(tmp_path / "out.xlsx", sheet_name="data")
    assert back.groupby(["a", "b"]).size().min() >= 3 and back["note"].tolist() == [
        f"n{i}" for i in range(30)
    ]


def test_explore_on_data_it_cannot_run_is_one_line_and_writes_nothing(tmp_path, cli):
    df = microagg.datasets.load("census").head(60)
    df.loc[5, "AGI"] = np.nan
    src = tmp_path / "nan.csv"
    df.to_csv(src, index=False)
    # a missing value: accepted in a continuous QI, an error in a categorical one
    done = cli(
        "explore", src, "-k", "3", "--methods", "mdav", "-o", tmp_path / "r.json", "-q",
        "--categorical", "AGI",
    )  # fmt: skip
    assert (
        done.returncode == 2 and "AGI" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nan.csv"]


def test_a_gzip_bomb_is_refused_within_the_memory_budget(tmp_path, cli):
    bomb = tmp_path / "bomb.csv.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        fh.write(b"a,b,c\n")
        line = b"1,2,3\n" * 100_000
        for _ in range(100):  # 60 MB of text, 10^7 lines
            fh.write(line)
    done = cli("protect", bomb, "-o", tmp_path / "o.csv", "-k", "3", "--max-memory-mb", "200")
    assert (
        done.returncode == 2
        and "cells" in done.stderr
        and len(done.stderr.strip().splitlines()) == 1
    )
    done = cli("protect", bomb, "-o", tmp_path / "o.csv", "-k", "3", "--max-memory-mb", "abc")
    assert done.returncode == 2 and "--max-memory-mb" in done.stderr


def test_a_sheet_claiming_a_billion_rows_is_refused_at_once(tmp_path, cli):
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.append(["a", "b"])
    wb.active.append([1, 2])
    small = tmp_path / "small.xlsx"
    wb.save(small)
    claim = tmp_path / "claim.xlsx"
    with zipfile.ZipFile(small) as zin, zipfile.ZipFile(claim, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename.startswith("xl/worksheets/"):
                data = re.sub(rb'<dimension ref="[^"]*"', b'<dimension ref="A1:B1000000000"', data)
                data = (
                    data.replace(b'<row r="2"', b'<row r="1000000000"')
                    .replace(b'r="A2"', b'r="A1000000000"')
                    .replace(b'r="B2"', b'r="B1000000000"')
                )
            zout.writestr(item, data)
    done = cli("protect", claim, "-o", tmp_path / "o.xlsx", "-k", "3")
    assert done.returncode == 2 and "1,000,000,000 rows" in done.stderr


def test_error_lines_are_bounded(tmp_path, cli):
    src = tmp_path / "long.csv"
    src.write_text("a,b\n" + "1,2\n" * 5 + '"' + "x" * 200_000 + '",3\n')
    done = cli("protect", src, "-o", tmp_path / "o.csv", "-k", "3", "--columns", "a,b")
    assert (
        done.returncode == 2
        and len(done.stderr) < 1000
        and len(done.stderr.strip().splitlines()) == 1
    )
