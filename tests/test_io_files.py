"""microagg.io.files and the registry: atomic writes, paths checked before any work, formats
listed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from microagg import io
from microagg.cli import main
from microagg.errors import InputError


def test_an_interrupt_right_after_the_temporary_file_is_created_removes_it(tmp_path, monkeypatch):
    """atomic_write created its temporary file, then registered it for the Ctrl+C handler: a
    signal between the two (the handler runs in the main thread while the command writes in a
    worker) left the file behind. Creating and registering are now one step for the handler."""
    import tempfile
    import threading

    from microagg import io

    real_mkstemp = tempfile.mkstemp
    seen = {}

    def interrupted_handler():  # what the signal handler does before os._exit
        io.remove_temporaries()
        seen["left"] = sorted(p.name for p in tmp_path.glob(".*.tmp"))

    handler = threading.Thread(target=interrupted_handler)

    def mkstemp(*args, **kwargs):
        made = real_mkstemp(*args, **kwargs)
        handler.start()  # the signal arrives now
        handler.join(0.2)
        return made

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)

    def fill(tmp):
        handler.join()
        Path(tmp).write_text("done")

    io.atomic_write(tmp_path / "out.csv", fill)
    assert seen["left"] == []


@pytest.mark.parametrize("out_of_core", [False, True])
def test_the_output_is_never_written_inside_the_input_dataset_folder(tmp_path, capsys, out_of_core):
    """A Parquet dataset is a folder: an output inside it (data/out.parquet) added a file to the
    input dataset, which then read back with every record twice."""
    data = tmp_path / "data"
    data.mkdir()
    pd.DataFrame({"a": np.arange(12) * 1.0, "b": np.arange(12) % 5 * 1.0}).to_parquet(
        data / "part-0.parquet"
    )
    out = data / ("out" if out_of_core else "out.parquet")
    extra = ["--out-of-core", "--block-size", "4"] if out_of_core else []
    assert main(["protect", str(data), "-o", str(out), "-k", "3", "-q", *extra]) == 2
    assert (
        capsys.readouterr().err
        == f"microagg: error: refusing to write the output inside the input folder {data}\n"
    )
    assert [p.name for p in data.iterdir()] == ["part-0.parquet"]


@pytest.mark.parametrize(
    "option, name", [("--labels-out", "labels.txt"), ("--report", "report.html")]
)
def test_side_files_are_never_written_inside_the_input_dataset_folder(
    tmp_path, capsys, option, name
):
    """--labels-out / --report inside a Parquet dataset folder put a text file among the data
    files: pyarrow then fails to read the dataset ('Parquet magic bytes not found')."""
    data = tmp_path / "data"
    data.mkdir()
    pd.DataFrame({"a": np.arange(12) * 1.0, "b": np.arange(12) % 5 * 1.0}).to_parquet(
        data / "part-0.parquet"
    )
    assert (
        main(
            [
                "protect",
                str(data),
                "-o",
                str(tmp_path / "out.parquet"),
                "-k",
                "3",
                "-q",
                option,
                str(data / name),
            ]
        )
        == 2
    )
    assert "inside the input folder" in capsys.readouterr().err
    assert [p.name for p in data.iterdir()] == ["part-0.parquet"] and not (
        tmp_path / "out.parquet"
    ).exists()


def test_unsupported_format_and_read_only_format_are_one_line_errors(tmp_path):
    bad = tmp_path / "data.json"
    bad.write_text("{}")
    with pytest.raises(InputError, match=r"unsupported file format: data.json; supported: CSV"):
        io.read(bad)
    with pytest.raises(InputError, match=r"\.xpt"):
        io.check_output_path(tmp_path / "out.sas7bdat")
    with pytest.raises(InputError, match="is a directory"):
        io.check_output_path(tmp_path)
    with pytest.raises(InputError, match="over the input"):
        io.check_output_path(bad, bad)


def test_an_unwritable_output_folder_is_one_line_before_any_work(tmp_path, capsys, monkeypatch):
    """Issue 31: an output to an unwritable place was an internal error after the whole run. The
    folder is now tried (a probe file) before the data are read: /proc accepts os.access for root
    but no file."""
    import microagg.api
    from microagg.cli import main

    monkeypatch.setattr(
        microagg.api, "compute", lambda *a, **k: pytest.fail("ran before the output check")
    )
    src = tmp_path / "in.csv"
    src.write_text("a,b\n1,2\n3,4\n5,6\n")
    assert main(["protect", str(src), "-o", "/proc/microagg-out.csv", "-k", "2", "-q"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("microagg: error: output folder is not writable: /proc")
        and err.count("\n") == 1
    )


def test_a_write_that_fails_late_is_one_input_error_and_leaves_nothing(tmp_path, monkeypatch):
    """A disk that fills or a folder that becomes read-only during the run: one user error line,
    no temporary file left."""
    from microagg import io

    def full(tmp):
        raise OSError(28, "No space left on device")

    with pytest.raises(InputError, match="No space left on device"):
        io.atomic_write(tmp_path / "out.csv", full)
    assert list(tmp_path.iterdir()) == []


def test_the_supported_list_and_the_readers_come_from_the_format_registry():
    """Each format is one module of microagg.io declaring FORMATS; the supported list, the suffix
    lookup and the out-of-core readers enumerate them."""
    import pkgutil

    from microagg import io
    from microagg.cli import build_parser
    from microagg.io.formats import get as get_format

    modules = {m.name for m in pkgutil.iter_modules(io.__path__) if not m.name.startswith("_")}
    for fmt in io.formats():
        assert fmt.read.__module__.split(".")[2] in modules  # declared by a module of microagg.io
        assert fmt.label in io.supported_text() and fmt.suffixes
        for suffix in fmt.suffixes:
            assert io.format_of(f"data{suffix.upper()}") == fmt.name
        assert (fmt.write is None) == bool(fmt.read_only_hint)
        if fmt.read_only:  # the hint names the format it is written as, and every writable one
            target = get_format(fmt.written_as)
            assert (
                not target.read_only
                and f"{target.suffixes[0]} ({target.label})" in fmt.read_only_hint
            )
            assert all(f.suffixes[0] in fmt.read_only_hint for f in io.formats() if not f.read_only)
    assert {"csv", "parquet"} <= {f.name for f in io.formats() if f.chunks is not None}
    assert io.SUPPORTED == io.supported_text()
    shown = " ".join(build_parser().format_help().split())  # the protect command's line in the help
    assert all(fmt.label in shown for fmt in io.formats())


def test_table_metadata_is_a_dataclass_per_format_family(tmp_path):
    """Table.meta is the format family's dataclass (no dict of string keys)."""
    import dataclasses

    from microagg import io
    from microagg.io.csv import CsvMeta
    from microagg.io.labelled import LabelledMeta

    src = tmp_path / "in.csv"
    src.write_text("a;b\n1,5;2\n3,0;4\n")
    table = io.read(src)
    assert isinstance(table.meta, CsvMeta) and dataclasses.is_dataclass(table.meta)
    assert (table.meta.dialect.sep, table.meta.dialect.decimal) == (";", ",")
    out = tmp_path / "out.dta"
    io.write(table, out, {})
    assert isinstance(io.read(out).meta, LabelledMeta)
