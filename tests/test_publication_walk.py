"""The walk of one publication (issue 58): ``protect in.csv -o out.csv -k 3``, its functions
wrapped and their calls counted. Each stage runs once, ``io`` never calls the publication, the
options are validated once, the file is read twice (the input, then the output back), the Result
is made once and never changed after."""

from __future__ import annotations

import ast
import collections
import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg import api, io, options, pipeline
from microagg.errors import ParameterError
from microagg.measures import file_audit
from microagg.publication import folder, stages
from microagg.result import Result

SOURCE = Path(microagg.__file__).parent


def _counting(monkeypatch, counts, owner, name, label):
    real = getattr(owner, name)

    @functools.wraps(real)
    def counted(*args, **kwargs):
        counts[label] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


@pytest.fixture
def walk(monkeypatch):
    """The calls counted, and the Result instances' attribute changes after they were made."""
    counts: collections.Counter = collections.Counter()
    for owner, name in [
        (stages, "plan"),
        (stages, "compute"),
        (stages, "write"),
        (stages, "read_back"),
        (stages, "verify"),
        (stages, "audit"),
        (stages, "land"),
        (api, "compute"),
        (api, "microaggregate"),
        (io, "read"),
        (io, "write_staged"),
        (io, "stage_folder"),
        (io, "write_part"),
        (pipeline, "measure"),
        (pipeline, "shuffle_order"),
        (pipeline, "deferred_audit"),
        (pipeline, "audit_roles"),
        (folder, "folder_roles"),
        (file_audit, "FileAudit"),
        (microagg.manifest, "rows_digest"),
    ]:
        _counting(monkeypatch, counts, owner, name, f"{owner.__name__.split('.')[-1]}.{name}")
    for owner in (microagg.measures, file_audit):  # the package's name and the module's
        _counting(monkeypatch, counts, owner, "audit_files", "audit_files")
    # validate_run is imported by name where it is called: count it in each of its homes
    for owner in (options, api, microagg.publication):
        if hasattr(owner, "validate_run"):
            _counting(monkeypatch, counts, owner, "validate_run", "validate_run")
    made, changed = [], []
    post_init = Result.__post_init__

    def marked(self):
        post_init(self)
        object.__setattr__(self, "_walk_made", True)
        made.append(self)

    def watched(self, name, value):
        if self.__dict__.get("_walk_made"):
            changed.append(name)
        object.__setattr__(self, name, value)

    monkeypatch.setattr(Result, "__post_init__", marked)
    monkeypatch.setattr(Result, "__setattr__", watched)
    return counts, made, changed


@pytest.mark.parametrize("shuffle", [False, True])
def test_each_stage_runs_once(walk, census_csv, tmp_path, shuffle):
    counts, made, changed = walk
    res = microagg.protect(census_csv, tmp_path / "out.csv", k=3, shuffle=shuffle)
    for stage in ("plan", "compute", "write", "read_back", "verify", "audit", "land"):
        assert counts[f"stages.{stage}"] == 1, stage
    assert counts["api.compute"] == 1 and counts["api.microaggregate"] == 0
    assert counts["validate_run"] == 1
    assert counts["io.read"] == 2  # the input, then the written file back
    assert counts["io.write_staged"] == 1
    assert counts["pipeline.measure"] == 1  # the run's figures (IL among them) once
    assert counts["pipeline.shuffle_order"] == 1
    assert counts["pipeline.deferred_audit"] == 0  # no audit built to be thrown away
    assert counts["pipeline.audit_roles"] == 1  # the audit's roles, made in compute, passed on
    assert counts["manifest.rows_digest"] == 0  # a shuffled file's digest: the read-back frame
    # the file audit, once: the file as it is, and (shuffled) its records put back in order
    assert counts["audit_files"] == 1
    assert counts["file_audit.FileAudit"] == (2 if shuffle else 1)
    assert made == [res] and changed == []  # the Result made once, in land, never changed
    assert res.file.k_anonymous and res.file.shuffled is shuffle


def test_the_command_line_walks_the_same_stages(walk, census_csv, tmp_path):
    """``microagg protect IN -o OUT -k 3 --shuffle``: the same stages, each once."""
    from microagg.cli import main

    counts, made, changed = walk
    out = tmp_path / "out.csv"
    assert main(["protect", str(census_csv), "-o", str(out), "-k", "3", "--shuffle", "-q"]) == 0
    for stage in ("plan", "compute", "write", "read_back", "verify", "audit", "land"):
        assert counts[f"stages.{stage}"] == 1, stage
    assert counts["validate_run"] == 1 and counts["io.read"] == 2
    assert counts["audit_files"] == 1 and counts["api.microaggregate"] == 0
    assert len(made) == 1 and changed == []


def test_out_of_core_goes_through_the_same_stages(walk, tmp_path):
    """The out-of-core mode composes the same stages over a chunked table: each once, its
    partitions written by the Parquet format's writer, the same Result type, made once."""
    import numpy as np
    import pandas as pd

    counts, made, changed = walk
    rng = np.random.default_rng(2)
    src = tmp_path / "in.csv"
    pd.DataFrame({"a": rng.normal(size=900), "b": rng.normal(size=900)}).to_csv(src, index=False)
    res = microagg.protect(src, tmp_path / "out", k=3, block_size=200, out_of_core=True)
    for stage in ("plan", "compute", "write", "read_back", "verify", "audit", "land"):
        assert counts[f"stages.{stage}"] == (0 if stage == "plan" else 1), stage
    assert counts["io.stage_folder"] == 1 and counts["io.write_part"] >= 1
    assert counts["io.write_staged"] == 0 and counts["api.compute"] == 0
    assert counts["folder.folder_roles"] == 1  # the audit's roles, made in compute, passed on
    assert isinstance(res, Result) and made == [res] and changed == []
    assert res.file.k_anonymous and res.data.count_rows() == 900


def test_io_never_calls_the_publication():
    """No module of ``microagg.io`` imports the publication (or the API, or the pipeline): a
    writer only writes, a reader only reads."""
    for path in (SOURCE / "io").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level >= 2 and node.module:
                assert node.module.split(".")[0] not in (
                    "publication",
                    "api",
                    "pipeline",
                    "reproduce",
                ), f"{path.name} imports {node.module}"
    import inspect

    assert "check" not in inspect.signature(io.write).parameters


def test_the_manifest_digest_of_a_shuffled_file_is_the_file_read(census_csv, tmp_path):
    """The rows' digest comes from the read-back frame; ``evaluate`` reads the file itself."""
    import json

    out = tmp_path / "out.csv"
    microagg.protect(census_csv, out, k=3, shuffle=True)
    doc = json.loads(out.with_name("out.csv.manifest.json").read_text())
    assert doc["output"]["rows_sha256"] == microagg.manifest.rows_digest(out, doc["output"]["read"])


def test_an_array_of_sample_weights_is_refused_before_any_work(tmp_path):
    """microaggregate takes sample weights as an array; a published file names its column (an
    array can be neither read beside the file nor written in the manifest's command)."""
    src = tmp_path / "in.csv"
    pd.DataFrame({"a": np.arange(30.0), "b": np.arange(30.0) % 7}).to_csv(src, index=False)
    with pytest.raises(ParameterError, match="sample_weight= names a column of the input file"):
        microagg.protect(src, tmp_path / "out.csv", k=3, sample_weight=np.ones(30))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_distance_weights_as_an_array_are_published_and_recorded(tmp_path):
    """weights= (one number per QI) as a numpy array: the manifest's command writes its numbers."""
    src = tmp_path / "in.csv"
    pd.DataFrame({"a": np.arange(30.0), "b": np.arange(30.0) % 7}).to_csv(src, index=False)
    as_list = microagg.protect(src, tmp_path / "list.csv", k=3, weights=[1.0, 2.0])
    as_array = microagg.protect(src, tmp_path / "array.csv", k=3, weights=np.array([1.0, 2.0]))
    assert (tmp_path / "list.csv").read_bytes() == (tmp_path / "array.csv").read_bytes()
    assert np.array_equal(as_list.labels, as_array.labels)
    assert "--weights" in (tmp_path / "array.csv.manifest.json").read_text()
