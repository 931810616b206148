"""What microagg reads back of its own is untrusted: forged, truncated or swapped manifests,
explore results and labels files each give one clear line (exit 2), never a traceback, and
nothing is written (``microagg.untrusted_documents``)."""

from __future__ import annotations

import io as stdio
import json
import zipfile

import numpy as np
import pytest

import microagg


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    """A small exploration saved as RESULT.json + RESULT.labels.npz, and a protected file with its
    manifest."""
    root = tmp_path_factory.mktemp("explored")
    df = microagg.datasets.load("census").head(120)
    src = root / "data.csv"
    df.to_csv(src, index=False)
    from microagg.cli import main

    assert (
        main(
            [
                "explore",
                str(src),
                "-k",
                "3",
                "--methods",
                "mdav",
                "-o",
                str(root / "result.json"),
                "-q",
            ]
        )
        == 0
    )
    assert main(["protect", str(src), "-o", str(root / "out.csv"), "-k", "3", "-q"]) == 0
    return root


def _copy(explored, tmp_path):
    for name in (
        "data.csv",
        "result.json",
        "result.labels.npz",
        "out.csv",
        "out.csv.manifest.json",
    ):
        (tmp_path / name).write_bytes((explored / name).read_bytes())
    return tmp_path


def _refused(cli, tmp_path, *args, words=()):
    before = sorted(p.name for p in tmp_path.iterdir())
    done = cli(*args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("microagg: error: "), done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert (
        sorted(p.name for p in tmp_path.iterdir()) == before
    )  # nothing written, nothing left behind
    return lines[0]


def _pick(tmp_path):
    return [
        "protect",
        tmp_path / "data.csv",
        "-o",
        tmp_path / "pub.csv",
        "--from-explore",
        tmp_path / "result.json",
        "--pick",
        "0",
    ]


def test_a_genuine_result_publishes(explored, tmp_path, cli):
    _copy(explored, tmp_path)
    assert cli(*_pick(tmp_path)).returncode == 0
    assert (tmp_path / "pub.csv").is_file() and (tmp_path / "pub.csv.manifest.json").is_file()


def _edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda d: d["input"].pop("sha256"), ["SHA-256"]),
        (lambda d: d["input"].__setitem__("sha256", "0" * 64), ["SHA-256"]),
        (lambda d: d.pop("runs"), ["runs"]),
        (lambda d: d.__setitem__("runs", "all"), ["runs"]),
        (lambda d: d["runs"][0].__setitem__("k", "3"), ["runs.0.k"]),
        (lambda d: d["runs"][0].__setitem__("id", -1), ["runs.0.id"]),
        (lambda d: d.__setitem__("microagg_explore", 99), ["not microagg's"]),
        (lambda d: d.__setitem__("labels_file", "/etc/passwd"), ["labels file"]),
        (lambda d: d.__setitem__("labels_file", "../../x.labels.npz"), ["labels file"]),
        (lambda d: d.__setitem__("labels_file", "sub/x.labels.npz"), ["labels file"]),
        (lambda d: d["options"].__setitem__("scheduler", "tcp://10.0.0.1:8786"), ["scheduler"]),
        (lambda d: d["options"].__setitem__("columns", 5), ["column"]),
    ],
)
def test_a_forged_explore_result_is_one_line(explored, tmp_path, cli, change, words):
    _copy(explored, tmp_path)
    _edit(tmp_path / "result.json", change)
    _refused(cli, tmp_path, *_pick(tmp_path), words=words)


def test_a_result_of_another_file_of_the_same_length_is_refused(explored, tmp_path, cli):
    _copy(explored, tmp_path)
    text = (tmp_path / "data.csv").read_text()
    (tmp_path / "data.csv").write_text(text.replace("1", "2", 1))  # same length, other bytes
    _refused(cli, tmp_path, *_pick(tmp_path), words=["SHA-256"])


def test_deep_json_and_junk_are_one_line(explored, tmp_path, cli):
    _copy(explored, tmp_path)
    (tmp_path / "result.json").write_text("[" * 100_000 + "]" * 100_000)
    _refused(cli, tmp_path, *_pick(tmp_path), words=["result.json"])
    (tmp_path / "result.json").write_bytes(b"\xff\xfe not json")
    _refused(cli, tmp_path, *_pick(tmp_path), words=["result.json"])
    (tmp_path / "result.json").write_text(
        '{"microagg_explore": 1, "runs": [' + '{"a": [' * 5000 + "]}" * 5000 + "]}"
    )
    _refused(cli, tmp_path, *_pick(tmp_path), words=["result.json"])


def _npz(members: dict) -> bytes:
    buffer = stdio.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _npy_header(shape, descr="<i8") -> bytes:
    from numpy.lib import format as npy

    buffer = stdio.BytesIO()
    npy.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


@pytest.mark.parametrize(
    "content, words",
    [
        (b"PK\x03\x04 truncated", ["labels"]),
        (None, ["labels"]),  # the genuine file cut in half
        ("huge", ["labels"]),  # an .npy header claiming 10^12 labels
        ("float", ["int64"]),
        ("short", ["labels"]),
        ("foreign", ["member"]),
    ],
)
def test_a_bad_labels_file_is_one_line_before_allocation(explored, tmp_path, cli, content, words):
    _copy(explored, tmp_path)
    lp = tmp_path / "result.labels.npz"
    if content is None:
        data = lp.read_bytes()
        lp.write_bytes(data[: len(data) // 2])
    elif content == "huge":
        lp.write_bytes(_npz({"run_0.npy": _npy_header((10**12,)) + b"\0" * 64}))
    elif content == "float":
        lp.write_bytes(_npz({"run_0.npy": _npy_header((120,), "<f8") + np.zeros(120).tobytes()}))
    elif content == "short":
        lp.write_bytes(
            _npz({"run_0.npy": _npy_header((120,)) + np.zeros(10, dtype=np.int64).tobytes()})
        )
    elif content == "foreign":
        lp.write_bytes(_npz({"../evil.npy": b"x"}))
    else:
        lp.write_bytes(content)
    _refused(cli, tmp_path, *_pick(tmp_path), words=words)


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda d: d.pop("roles"), ["roles"]),
        (lambda d: d["roles"].__setitem__("columns", 5), ["roles.columns"]),
        (lambda d: d["roles"].__setitem__("k", "three"), ["roles.k"]),
        (lambda d: d["roles"]["kinds"].__setitem__("x", "weird"), ["roles.kinds"]),
        (lambda d: d["input"].__setitem__("read", {"format": "parquet"}), ["input.read"]),
        (lambda d: d["output"].pop("sha256"), ["output.sha256"]),
        (lambda d: d.__setitem__("microagg_manifest", "1"), ["not microagg's"]),
        (lambda d: d["audit"].__setitem__("groups", [1, 2]), ["audit.groups"]),
        (lambda d: d["roles"].__setitem__("sensitive", ["AGI"]), ["sensitive"]),
        (lambda d: d["roles"].__setitem__("sample_weight", "nope"), ["sample weight"]),
        (lambda d: d["roles"].__setitem__("strata", ["nope"]), ["nope"]),
    ],
)
def test_a_forged_manifest_is_one_line(explored, tmp_path, cli, change, words):
    _copy(explored, tmp_path)
    _edit(tmp_path / "out.csv.manifest.json", change)
    _refused(cli, tmp_path, "evaluate", tmp_path / "data.csv", tmp_path / "out.csv", words=words)


def test_a_manifest_nested_deep_or_too_large_is_one_line(explored, tmp_path, cli, monkeypatch):
    _copy(explored, tmp_path)
    m = tmp_path / "out.csv.manifest.json"
    m.write_text('{"microagg_manifest": 1, "roles": ' + "[" * 100_000 + "]" * 100_000 + "}")
    _refused(
        cli, tmp_path, "evaluate", tmp_path / "data.csv", tmp_path / "out.csv", words=["manifest"]
    )
    from microagg import untrusted_documents

    _copy(explored, tmp_path)
    monkeypatch.setattr(untrusted_documents, "MAX_DOCUMENT_BYTES", 100)
    _refused(
        cli, tmp_path, "evaluate", tmp_path / "data.csv", tmp_path / "out.csv", words=["bytes"]
    )


def test_a_genuine_manifest_still_evaluates(explored, tmp_path, cli):
    _copy(explored, tmp_path)
    done = cli("evaluate", tmp_path / "data.csv", tmp_path / "out.csv", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["key_variables_k_anonymous"] is True
