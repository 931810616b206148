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
    assert res["file"].k_anonymous and (tmp_path / "api_out.manifest.json").is_file()


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
