"""protect --from-manifest against forged manifests: a manifest is data, never a command. Its
``command`` is shown, never parsed; what it names is never written or read outside the folders the
user named; its declared run is checked against the new file before anything lands, and a refused
replay writes nothing (``microagg.reproduce``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import microagg
from microagg.cli import main


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A small CSV protected (3-anonymous, MDAV) with its manifest, in a folder of its own."""
    root = tmp_path_factory.mktemp("published")
    df = microagg.datasets.load("census").head(60)
    src = root / "data.csv"
    df.to_csv(src, index=False)
    assert main(["protect", str(src), "-o", str(root / "first.csv"), "-k", "3", "-q"]) == 0
    return root


def _forged(published, tmp_path, change):
    """The manifest changed by ``change(doc)``, written in a new folder ``tmp_path/work`` beside
    an empty ``tmp_path/outside``; returns (manifest path, outside folder)."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    doc = json.loads((published / "first.csv.manifest.json").read_text())
    change(doc)
    manifest = work / "first.csv.manifest.json"
    manifest.write_text(json.dumps(doc))
    return manifest, outside


def _replay(published, manifest, output, capsys, *extra):
    capsys.readouterr()
    code = main(
        ["protect", str(published / "data.csv"), "-o", str(output), "-q"]
        + ["--from-manifest", str(manifest), *map(str, extra)]
    )
    out = capsys.readouterr()
    return code, out.out, out.err


def _files(folder):
    return sorted(p.name for p in folder.rglob("*"))


@pytest.mark.parametrize(
    "tail",
    [
        "--report {outside}/victim.html",
        "--labels-out {outside}/victim.txt",
        "-o {outside}/landed.csv",
        "--init /etc/passwd",
        "--from-manifest {manifest}",
        "--help",
    ],
)
def test_the_command_a_manifest_holds_is_never_parsed(published, tmp_path, capsys, tail):
    manifest, outside = _forged(published, tmp_path, lambda doc: None)
    doc = json.loads(manifest.read_text())
    doc["command"] += " " + tail.format(outside=outside, manifest=manifest)
    manifest.write_text(json.dumps(doc))
    output = tmp_path / "mine" / "again.csv"
    output.parent.mkdir()
    code, out, err = _replay(published, manifest, output, capsys)
    assert code == 0 and "reproduced: again.csv matches first.csv" in out, err
    assert _files(outside) == [] and "root:" not in out + err and "usage" not in out + err
    assert _files(output.parent) == ["again.csv", "again.csv.manifest.json"]
    assert output.read_bytes() == (published / "first.csv").read_bytes()


@pytest.mark.parametrize(
    "field, value",
    [("k", 5), ("method", "vmdav")],
)
def test_a_declared_run_the_file_does_not_hold_is_not_reproduced(
    published, tmp_path, capsys, field, value
):
    def change(doc):  # forged consistently: the run, its options and the roles agree
        doc["run"][field] = value
        doc["run"]["options"][field] = value
        if field == "k":
            doc["roles"]["k"] = value

    manifest, _ = _forged(published, tmp_path, change)
    output = tmp_path / "work" / "again.csv"
    sides = ("--report", output.with_name("r.html"), "--labels-out", output.with_name("l.txt"))
    code, out, err = _replay(published, manifest, output, capsys, *sides)
    assert code == 2 and err.count("\n") == 1 and "does NOT reproduce" in err
    assert "reproduced" not in out and not output.exists()
    assert _files(tmp_path / "work") == ["first.csv.manifest.json"]


@pytest.mark.parametrize("where", ["run", "roles"])
def test_a_manifest_whose_k_disagrees_with_itself_is_refused_before_any_work(
    published, tmp_path, capsys, where
):
    def change(doc):
        doc[where]["k"] = 5

    manifest, _ = _forged(published, tmp_path, change)
    output = tmp_path / "work" / "again.csv"
    code, out, err = _replay(published, manifest, output, capsys)
    assert code == 2 and err.count("\n") == 1 and "not consistent" in err and "k" in err
    assert not output.exists()


def test_roles_the_file_does_not_have_are_not_reproduced(published, tmp_path, capsys):
    def change(doc):
        doc["roles"]["keys"] = doc["roles"]["columns"][:1]

    manifest, _ = _forged(published, tmp_path, change)
    output = tmp_path / "work" / "again.csv"
    code, _, err = _replay(published, manifest, output, capsys)
    assert code == 2 and err.count("\n") == 1 and "roles" in err and not output.exists()


@pytest.mark.parametrize("name", ["../x/sh.csv", "/etc/passwd", "a/b", "a\\b"])
def test_a_path_in_place_of_a_file_name_is_one_line(published, tmp_path, capsys, name):
    def change(doc):
        doc["output"]["name"] = name

    manifest, outside = _forged(published, tmp_path, change)
    code, _, err = _replay(published, manifest, tmp_path / "work" / "again.csv", capsys)
    assert code == 2 and err.count("\n") == 1 and "output.name" in err
    assert _files(tmp_path / "work") == ["first.csv.manifest.json"]


def test_the_earlier_file_is_only_read_in_the_manifests_folder(published, tmp_path, capsys):
    """An older manifest of a shuffled file, without its rows' digest, whose earlier file is a
    link out of its folder: not read, and the replay is refused, writing nothing."""
    work = tmp_path / "work"
    work.mkdir()
    src = published / "data.csv"
    assert main(["protect", str(src), "-o", str(work / "s.csv"), "-k", "3", "--shuffle", "-q"]) == 0
    doc = json.loads((work / "s.csv.manifest.json").read_text())
    del doc["output"]["rows_sha256"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.csv").write_bytes((work / "s.csv").read_bytes())
    (work / "s.csv").unlink()
    (work / "s.csv").symlink_to(outside / "s.csv")
    (work / "s.csv.manifest.json").write_text(json.dumps(doc))
    output = tmp_path / "again.csv"
    code, _, err = _replay(published, work / "s.csv.manifest.json", output, capsys)
    assert code == 2 and err.count("\n") == 1 and "not made" in err and not output.exists()


@pytest.mark.parametrize(
    "change",
    [
        lambda doc: doc["run"]["options"].update(columns="(given)"),
        lambda doc: doc["run"]["options"].update(no_such_option=1),
        lambda doc: doc["run"]["params"].update(init="(given)"),
        lambda doc: doc["run"].update(out_of_core=True),
        lambda doc: doc["run"]["options"].update(time_limit=-1),
    ],
)
def test_a_run_that_cannot_be_replayed_is_one_line_and_writes_nothing(
    published, tmp_path, capsys, change
):
    manifest, _ = _forged(published, tmp_path, change)
    output = tmp_path / "work" / "again.csv"
    code, _, err = _replay(published, manifest, output, capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert _files(tmp_path / "work") == ["first.csv.manifest.json"]


@pytest.mark.parametrize("output", ["../x/sh.csv", "/etc/passwd", "a/b"])
def test_an_output_name_that_cannot_be_written_is_one_line(
    published, tmp_path, capsys, monkeypatch, output
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir() if output == "a/b" else None
    before = _files(tmp_path)
    code, _, err = _replay(published, published / "first.csv.manifest.json", output, capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert _files(tmp_path) == before


def test_a_replay_that_reproduces_lands_the_users_side_files_only(published, tmp_path, capsys):
    code, out, err = _replay(
        published, published / "first.csv.manifest.json", tmp_path / "again.csv", capsys
    )
    assert code == 0 and "reproduced" in out, err
    assert _files(tmp_path) == ["again.csv", "again.csv.manifest.json"]
    doc = json.loads((tmp_path / "again.csv.manifest.json").read_text())
    assert doc["run"]["k"] == 3 and np.isclose(doc["roles"]["p"], 10.0)
