"""Every error one true line (the file the user named, the option the user gave, nothing written
before it), and the summary of any valid run succeeds (issue 57, part 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg.cli import main


def _csv_text(rows: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    lines = ["a,b,c"] + [
        f"{rng.integers(10, 99)},{rng.integers(10, 99)},x{i % 3}" for i in range(rows)
    ]
    return "\n".join(lines) + "\n"


def _run(capsys, *args):
    capsys.readouterr()
    code = main(["protect", *map(str, args), "-q"])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("given", ["utf-16-le", "utf-16", "UTF_16"])
def test_utf16_without_a_byte_order_mark_is_read_as_given_and_written_without_one(
    tmp_path, capsys, given
):
    text = _csv_text(30, 1)
    src = tmp_path / "le.csv"
    src.write_bytes(text.encode("utf-16-le"))
    out = tmp_path / "out.csv"
    code, _, err = _run(capsys, src, "-o", out, "-k", "3", "--encoding", given)
    assert code == 0, err
    written = out.read_bytes()
    assert not written.startswith((b"\xff\xfe", b"\xfe\xff"))
    lines = written.decode("utf-16-le").splitlines()
    assert lines[0] == "a,b,c" and [r.split(",")[2] for r in lines[1:]] == [
        r.split(",")[2] for r in text.splitlines()[1:]
    ]


@pytest.mark.parametrize("order", ["le", "be"])
def test_utf16_with_its_byte_order_mark_keeps_it_under_utf16(tmp_path, capsys, order):
    text = _csv_text(30, 2)
    src = tmp_path / "bom.csv"
    src.write_bytes(("\ufeff" + text).encode(f"utf-16-{order}"))
    out = tmp_path / "out.csv"
    code, _, err = _run(capsys, src, "-o", out, "-k", "3", "--encoding", "utf-16")
    assert code == 0, err
    assert out.read_bytes()[:2] == src.read_bytes()[:2]


@pytest.mark.parametrize("k", [2, 3, 4])
def test_the_summary_of_a_run_whose_only_qi_is_constant_succeeds(tmp_path, capsys, k):
    src = tmp_path / "constant.csv"
    src.write_text("x\n" + "5\n" * 4)
    out = tmp_path / "out.csv"
    code, stdout, err = _run(capsys, src, "-o", out, "-k", k)
    assert code == 0 and "Traceback" not in err and "information loss" in stdout
    res = microagg.microaggregate(pd.DataFrame({"x": [5.0] * 4}), k=k)
    assert "records" in res.summary() and "records" in str(res)


def test_a_header_whose_every_name_is_duplicated_says_so(tmp_path, capsys):
    src = tmp_path / "dup.csv"
    src.write_text("a,a\n" + "".join(f"{i},{2 * i}\n" for i in range(6)))
    code, _, err = _run(capsys, src, "-o", tmp_path / "out.csv", "-k", "3")
    assert code == 2 and err.count("\n") == 1
    assert "more than once" in err and "no data rows" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup.csv"]


def test_a_nested_column_written_to_a_format_that_cannot_hold_it_is_named(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    n = 12
    rng = np.random.default_rng(0)
    nested = pa.array([None] + [[i, i + 1] for i in range(n - 1)])
    table = pa.table({"x": rng.normal(size=n), "y": rng.normal(size=n), "nest": nested})
    src = tmp_path / "nested.parquet"
    pq.write_table(table, src)
    for suffix in (".sav", ".dta", ".xlsx", ".csv"):
        out = tmp_path / f"out{suffix}"
        code, _, err = _run(capsys, src, "-o", out, "-k", "3", "--columns", "x,y")
        assert code == 2 and err.count("\n") == 1 and "nest" in err, (suffix, err)
        assert not out.exists()
    code, _, err = _run(capsys, src, "-o", tmp_path / "out.parquet", "-k", "3", "--columns", "x,y")
    assert code == 0, err


@pytest.mark.parametrize("k", ["3", 3.5, None, [3]])
def test_a_transformers_k_of_the_wrong_type_is_a_value_error_naming_k(k):
    from microagg.sklearn import MicroAggregator

    X = np.random.default_rng(0).normal(size=(12, 2))
    with pytest.raises(ValueError, match=r"\bk\b"):
        MicroAggregator(k=k).fit_transform(X)


def test_an_upload_named_like_an_option_is_named_as_the_user_has_it_in_its_commands(tmp_path):
    """'-data.csv' is kept on the server as 'data.csv'; the reproduce command and the Python call
    name the user's file, '-data.csv', guarded as './-data.csv' on the command line."""
    import shlex

    from microagg.app import input_data, runspec, websocket

    kept = websocket.safe_file_name("-data.csv", input_data.read_suffixes())
    shown = websocket.safe_file_name("-data.csv", input_data.read_suffixes(), options=True)
    assert (kept, shown) == ("data.csv", "-data.csv")
    src = tmp_path / "upload-1" / kept
    src.parent.mkdir()
    microagg.datasets.load("census").head(30).to_csv(src, index=False)
    spec = runspec.RunSpec.of(str(src), kept, shown_path=shown, k=3)
    words = shlex.split(spec.cli_command())
    assert words[:3] == ["microagg", "protect", "./-data.csv"]
    assert "'-data.csv'" in spec.python_snippet()


@pytest.mark.parametrize("option", ["strata", "columns", "keys"])
def test_a_bad_column_name_through_the_api_is_found_from_the_header_alone(
    tmp_path, monkeypatch, option
):
    src = tmp_path / "data.csv"
    microagg.datasets.load("census").head(60).to_csv(src, index=False)

    def no_body(*args, **kwargs):
        raise AssertionError("the body was read")

    monkeypatch.setattr(microagg.io, "read", no_body)
    with pytest.raises(microagg.InputError, match="no_such_column") as caught:
        microagg.microaggregate(src, k=3, **{option: ["no_such_column"]})
    assert "\n" not in str(caught.value)


def test_a_full_disk_at_the_manifest_leaves_no_temporary_file(tmp_path, capsys, monkeypatch):
    import errno

    from microagg.publication import landing

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(landing.os, "fsync", full)
    src = tmp_path / "data.csv"
    microagg.datasets.load("census").head(60).to_csv(src, index=False)
    code, _, err = _run(capsys, src, "-o", tmp_path / "out.csv", "-k", "3")
    assert code == 2 and err.count("\n") == 1 and "No space left" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_out_of_core_reads_the_decimal_comma_the_in_memory_mode_reads(tmp_path, capsys):
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    x, y = rng.normal(size=90).round(3), rng.normal(size=90).round(2)
    lines = ["x;y;id"] + [f"{a};{b};r{i}".replace(".", ",") for i, (a, b) in enumerate(zip(x, y))]
    src = tmp_path / "comma.csv"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "folder"
    code, _, err = _run(capsys, src, "-o", out, "-k", "3", "--out-of-core", "--block-size", "30")
    assert code == 0, err
    published = pq.read_table(out).to_pandas()
    assert published["x"].dtype.kind == "f" and published["id"].tolist() == [
        f"r{i}" for i in range(90)
    ]
    # the published means are the means of the values the comma stands for: the same total
    assert published["x"].sum() == pytest.approx(x.sum()) and published["y"].sum() == pytest.approx(
        y.sum()
    )
    # the decimal comma given, as the in-memory mode takes it: the same folder
    again = tmp_path / "again"
    code, _, err = _run(
        capsys, src, "-o", again, "-k", "3", "--out-of-core", "--block-size", "30", "--decimal", ","
    )
    assert code == 0, err
    assert pq.read_table(again).equals(pq.read_table(out))


def test_a_summary_that_fails_lands_nothing(tmp_path, monkeypatch):
    from microagg.result import Result

    def broken(self):
        raise TypeError("a summary that cannot be written")

    monkeypatch.setattr(Result, "summary", broken)
    src = tmp_path / "data.csv"
    microagg.datasets.load("census").head(60).to_csv(src, index=False)
    with pytest.raises(TypeError):
        microagg.protect(src, tmp_path / "out.csv", k=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]
