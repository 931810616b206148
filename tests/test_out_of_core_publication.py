"""The out-of-core mode publishes as every door does: its folder is read back with pyarrow and
counted k-anonymous on every record, audited on a seeded sample, and lands with its manifest;
``evaluate`` reproduces that audit from the manifest to the last digit."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg.publication import landing


@pytest.fixture
def big(tmp_path):
    rng = np.random.default_rng(1)
    n = 3_000
    df = pd.DataFrame(
        {
            "id": np.arange(n),
            "a": rng.normal(size=n),
            "b": rng.gamma(2.0, size=n) * 1000,
            "region": rng.integers(0, 3, n),
            "note": [f"r{i}" for i in range(n)],
        }
    )
    src = tmp_path / "big.csv"
    df.to_csv(src, index=False)
    return src


def test_out_of_core_publishes_with_its_manifest_and_evaluate_reproduces_it(big, tmp_path, cli):
    out = tmp_path / "out"
    done = cli(
        "protect",
        big,
        "-o",
        out,
        "-k",
        "3",
        "--out-of-core",
        "--block-size",
        "500",
        "--columns",
        "a,b",
        "--strata",
        "region",
        "--json",
        "-q",
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert (
        record["verified"]["k_anonymous"] is True and record["verified"]["smallest_frequency"] >= 3
    )
    m = json.loads((tmp_path / "out.manifest.json").read_text())
    assert m["output"]["sha256"] == microagg.manifest.sha256(out)
    assert m["audit"]["context"]["sampled"]["of"] == 3_000
    assert m["audit"]["groups"]["risk"]["key_records_below_k"] == 0
    # the published file itself, counted independently with pandas
    back = pd.read_parquet(out)
    counts = back.groupby(["a", "b", "region"]).size()
    assert (
        counts.min() >= 3 and m["audit"]["groups"]["risk"]["key_smallest_frequency"] == counts.min()
    )
    ev = cli("evaluate", big, out, "--json")
    assert ev.returncode == 0, ev.stderr
    assert "differ" not in ev.stderr
    figures = json.loads(ev.stdout)
    for group in ("utility", "risk"):
        for name, value in m["audit"]["groups"][group].items():
            assert figures[group][name] == value, name


def test_out_of_core_through_the_api(big, tmp_path):
    res = microagg.protect(
        big, tmp_path / "api_out", k=3, block_size=500, columns=["a", "b"], out_of_core=True
    )
    assert res.file.k_anonymous and (tmp_path / "api_out.manifest.json").is_file()
    assert isinstance(res, microagg.Result) and len(res.labels) == res.data.count_rows()
    assert res.group_sizes.min() >= 3 and res.information_loss > 0
    assert "3-anonymous" in res.summary() and res._repr_html_()


def test_the_api_door_reports_progress_and_the_manifest_the_modes_settings(big, tmp_path):
    """``microagg.protect(..., out_of_core=True)`` reports the mode's passes to ``progress=``;
    ``publish_folder``'s own settings are in the manifest's run, and reading the input in other
    chunks publishes the same labels and the same records (up to the moments' last bits), in
    more partitions."""
    from microagg.publication import publish_folder

    heard = []
    options = dict(k=3, block_size=100, columns=["a", "b"])
    whole = microagg.protect(
        big, tmp_path / "whole", out_of_core=True, progress=lambda *a: heard.append(a[0]), **options
    )
    assert "slabs" in heard and any(stage.startswith("pass") for stage in heard)
    runs = {}
    for slab_blocks in (32, 8):  # the default (one slab of these records) and a smaller one
        name = f"chunks{slab_blocks}"
        runs[slab_blocks] = publish_folder(
            big, tmp_path / name, options, {}, chunk_rows=700, slab_blocks=slab_blocks
        )
        run = json.loads((tmp_path / f"{name}.manifest.json").read_text())["run"]
        assert (run["chunk_rows"], run["slab_blocks"]) == (700, slab_blocks)
        assert run["information_loss"] == runs[slab_blocks].information_loss
    chunks = runs[32]
    assert np.array_equal(whole.labels, chunks.labels)
    assert len(chunks.data.files) > len(whole.data.files)
    # the other columns as they came; the means the same up to the last bits of the moments,
    # merged chunk by chunk (so the manifest records chunk_rows: the bytes depend on it)
    got, want = pd.read_parquet(tmp_path / "chunks32"), pd.read_parquet(tmp_path / "whole")
    others = [c for c in want.columns if c not in ("a", "b")]
    assert got[others].equals(want[others])
    assert np.allclose(got[["a", "b"]], want[["a", "b"]], rtol=1e-12, atol=0)
    assert (
        runs[8].method_facts["out_of_core"]["slabs"] > chunks.method_facts["out_of_core"]["slabs"]
    )


def test_no_folder_without_its_manifest(big, tmp_path, cli, monkeypatch):
    """A failure at the manifest (a full disk) leaves neither the folder nor the manifest."""

    def full(target, text):
        raise microagg.InputError(f"cannot write {target}: No space left on device")

    monkeypatch.setattr(landing, "stage_text", full)
    done = cli(
        "protect",
        big,
        "-o",
        tmp_path / "out",
        "-k",
        "3",
        "--out-of-core",
        "--block-size",
        "500",
        "--columns",
        "a,b",
        "-q",
    )
    assert done.returncode == 2 and "No space left" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.csv"]


def test_no_folder_when_its_manifest_cannot_be_renamed_into_place(big, tmp_path, monkeypatch):
    """The folder and its manifest land by the one landing code (``landing.land``): the manifest
    cannot be renamed into place (after the folder was), so the folder goes too."""
    import os

    real = os.replace

    def refused(src, dst):
        if str(dst).endswith(".manifest.json"):
            raise PermissionError(13, "Permission denied")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", refused)
    with pytest.raises(microagg.InputError, match="Permission denied; nothing was written"):
        microagg.protect(
            big, tmp_path / "out", k=3, block_size=500, columns=["a", "b"], out_of_core=True
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.csv"]


def test_no_file_without_its_manifest(big, tmp_path, cli, monkeypatch):
    real = landing.stage_text

    def full(target, text):
        if str(target).endswith(".manifest.json"):
            raise microagg.InputError(f"cannot write {target}: No space left on device")
        return real(target, text)

    monkeypatch.setattr(landing, "stage_text", full)
    done = cli(
        "protect",
        big,
        "-o",
        tmp_path / "pub.csv",
        "-k",
        "3",
        "--columns",
        "a,b",
        "--report",
        tmp_path / "r.html",
        "-q",
    )
    assert done.returncode == 2 and "No space left" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.csv"]


def test_a_parquet_input_keeps_every_other_column_as_read(tmp_path):
    """Each partition is written by the Parquet format's writer (``io.write_part``, the in-memory
    publication's): the columns not protected keep their arrow types, nulls and field metadata,
    chunk by chunk, and the folder's records are the input's in order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(4)
    n = 2_500
    table = pa.table(
        {
            "a": rng.normal(size=n),
            "b": rng.gamma(2.0, size=n),
            "code": pa.array(rng.integers(0, 300, n), type=pa.int16()),
            "region": pa.array([f"r{i % 7}" for i in range(n)]).dictionary_encode(),
            "when": pa.array(np.arange(n).astype("datetime64[s]")),
            "note": pa.array([None if i % 5 == 0 else f"n{i}" for i in range(n)]),
        }
    )
    field = table.schema.field("code").with_metadata({"label": "a code"})
    table = table.set_column(2, field, table.column("code"))
    src = tmp_path / "in.parquet"
    pq.write_table(table, src)
    table = pq.read_table(src)  # as read (Parquet stores seconds as milliseconds)
    res = microagg.protect(
        src, tmp_path / "out", k=3, columns=["a", "b"], block_size=400, out_of_core=True
    )
    back = res.data.to_table()
    for name in ("code", "region", "when", "note"):
        assert back.schema.field(name).type == table.schema.field(name).type, name
        assert back.column(name).equals(table.column(name)), name
    assert back.schema.field("code").metadata == {b"label": b"a code"}
    assert not np.array_equal(back.column("a").to_numpy(), table.column("a").to_numpy())
    assert res.file.k_anonymous
