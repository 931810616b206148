"""The committed best-known partitions (benchmarks/best_known/) match their certificates, and the
verifier catches a tampered cell."""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "benchmarks" / "best_known"


def _verifier():
    spec = importlib.util.spec_from_file_location(
        "verify_best_known", ROOT / "benchmarks" / "verify_best_known.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cells():
    return sorted(STORE.glob("*.json"))


pytestmark = pytest.mark.skipif(not _cells(), reason="no committed best-known certificates")


def test_committed_certificates_verify():
    out = io.StringIO()
    assert _verifier().verify(STORE, out) == 0, out.getvalue()
    assert out.getvalue().count("ok ") == len(_cells())


def _copy_smallest(tmp_path):
    """The tarragona (smallest data) cell with the fewest records per group, copied to tmp_path."""
    certs = [p for p in _cells() if p.stem.startswith("tarragona")] or _cells()
    cert = min(certs, key=lambda p: json.loads(p.read_text())["k"])
    for suffix in (".json", ".labels"):
        shutil.copy(cert.with_suffix(suffix), tmp_path / cert.with_suffix(suffix).name)
    return tmp_path / cert.name


def test_verifier_rejects_a_worse_partition_than_certified(tmp_path):
    cert = _copy_smallest(tmp_path)
    labels_path = cert.with_suffix(".labels")
    labels = np.loadtxt(labels_path, dtype=np.int64)
    # swap two records of different groups: sizes unchanged, IL changes
    a = 0
    b = int(np.flatnonzero(labels != labels[a])[0])
    labels[a], labels[b] = labels[b], labels[a]
    labels_path.write_text("".join(f"{v}\n" for v in labels))
    out = io.StringIO()
    assert _verifier().verify(tmp_path, out) == 1
    assert "IL" in out.getvalue()


def test_verifier_rejects_an_undersized_group(tmp_path):
    cert = _copy_smallest(tmp_path)
    labels_path = cert.with_suffix(".labels")
    labels = np.loadtxt(labels_path, dtype=np.int64)
    labels[0] = labels.max() + 1  # a group of one record
    labels_path.write_text("".join(f"{v}\n" for v in labels))
    out = io.StringIO()
    assert _verifier().verify(tmp_path, out) == 1
    assert "group sizes" in out.getvalue()


def test_verifier_rejects_a_missing_label(tmp_path):
    cert = _copy_smallest(tmp_path)
    labels_path = cert.with_suffix(".labels")
    labels_path.write_text("\n".join(labels_path.read_text().split()[:-1]) + "\n")
    out = io.StringIO()
    assert _verifier().verify(tmp_path, out) == 1
    assert "labels for" in out.getvalue()


def test_resume_state_survives_its_file(tmp_path, monkeypatch):
    """best_known.py --resume: the colgen state written to best_known/state/ and read back is
    taken by colgen's resume, columns and cuts included."""
    spec = importlib.util.spec_from_file_location(
        "best_known", ROOT / "benchmarks" / "best_known.py"
    )
    best_known = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(best_known)
    monkeypatch.setattr(best_known, "STORE", tmp_path)
    from microagg.methods import run

    X = np.random.default_rng(3).normal(size=(40, 2))
    state = run("colgen", X, 3, seed=0, max_rounds=2, final_mip=False, keep_state=True).extras[
        "colgen_state"
    ]
    state["cuts"] = np.array([[0, 1, 2]])
    assert best_known.load_state("census", 3) is None
    best_known.save_state("census", 3, state)
    assert [p.name for p in (tmp_path / "state").iterdir()] == ["census_k3.npz"]
    back = best_known.load_state("census", 3)
    assert back.keys() == state.keys() and back["n"] == 40 and back["k"] == 3
    for key in ("ptr", "members", "cuts"):
        np.testing.assert_array_equal(back[key], state[key])
    out = run("colgen", X, 3, seed=0, max_rounds=1, final_mip=False, resume=back, keep_state=True)
    assert out.extras["colgen_columns"] >= len(state["ptr"]) - 1 and out.extras["colgen_cuts"] >= 1


def test_region_strategy_bounds_from_the_stored_centre():
    """best_known.py --strategies region: the region bound at the stored state's smoothing centre
    is a bound (≤ colgen's best SSE) at least the centre's own Lagrangian bound, and is logged as
    a colgen-region run."""
    import pandas as pd

    spec = importlib.util.spec_from_file_location(
        "best_known", ROOT / "benchmarks" / "best_known.py"
    )
    best_known = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(best_known)
    import microagg

    rng = np.random.default_rng(4)
    X = np.vstack([rng.normal(size=(30, 2)), rng.normal(size=(6, 2)) * 8.0])
    df = pd.DataFrame(X, columns=["a", "b"])
    out = microagg.microaggregate(
        df, k=3, method="colgen", seed=0, max_rounds=6, smoothing=0.5, keep_state=True
    )
    state = out.extras["colgen_state"]
    res, info = best_known.region_run(df, 3, state, 60.0, 2.0, 5.0)
    assert (
        info["method"] == "colgen-region" and info["params"]["region_size"] == res.region_size > 0
    )
    assert state["centre_bound"] - 1e-9 <= res.bound <= out.sse * (1 + 1e-9)
    with pytest.raises(SystemExit, match="smoothing centre"):
        best_known.region_run(
            df, 3, {k: v for k, v in state.items() if not k.startswith("centre")}, 60.0, 2.0, 5.0
        )
