"""The out-of-core mode at scale (outofcore.py; benchmarks/census.py runs it on a census): the same
bytes on a dask.distributed cluster of worker processes as on the local threads, the slabs'
results read back one at a time."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


def _census(tmp_path, n, parts=2):
    """A census-shaped Parquet folder of n records (benchmarks/census.py's generator)."""
    import pyarrow.parquet as pq
    from census import census_chunk

    src = tmp_path / "census"
    src.mkdir()
    per = -(-n // parts)
    for j in range(parts):
        pq.write_table(census_chunk(j, min(per, n - j * per)), src / f"part-{j}.parquet")
    return src


def _bytes(folder: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.parquet"))]


def test_a_cluster_of_worker_processes_writes_the_threads_bytes(tmp_path):
    """Slabs of 2 blocks, so that every stratum is cut and the search across the cuts runs on
    the workers too (slab_boundaries.py)."""
    from census import QIS
    from distributed import Client, LocalCluster

    from microagg.publication import publish_folder

    src = _census(tmp_path, 20_000)
    options = dict(k=3, block_size=100, columns=QIS, continuous=QIS, strata=["region"], seed=3)
    threads = publish_folder(src, tmp_path / "threads", options, {}, slab_blocks=2)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        workers = publish_folder(
            src, tmp_path / "workers", {**options, "scheduler": client}, {}, slab_blocks=2
        )
    assert threads.audit_roles.strata == ("region",)
    assert threads.method_facts["out_of_core"]["slabs"] > 2 * 16  # every stratum cut
    assert np.array_equal(threads.labels, workers.labels)
    assert _bytes(tmp_path / "threads") == _bytes(tmp_path / "workers")
    assert len(_bytes(tmp_path / "threads")) == 2


@pytest.mark.parametrize("strata", [None, ["region"]])
def test_every_slab_result_lands_on_its_records(tmp_path, strata):
    """The labels and means read back slab by slab: every record gets its group's mean of the
    input (the z-scores' group means, back in original units), each group >= k."""
    from census import QIS

    from microagg.publication import publish_folder

    src = _census(tmp_path, 6_000, parts=3)
    options = dict(k=3, block_size=100, columns=QIS, continuous=QIS, strata=strata)
    res = publish_folder(src, tmp_path / "out", options, {}, chunk_rows=1_000, slab_blocks=4)
    assert res.method_facts["out_of_core"]["slabs"] > 4
    labels = res.labels
    sizes = np.bincount(labels)
    assert sizes.min() >= 3 and np.array_equal(res.group_sizes, sizes)
    X = pd.read_parquet(src, columns=QIS).to_numpy(dtype=float)
    out = pd.read_parquet(tmp_path / "out", columns=QIS).to_numpy(dtype=float)
    means = np.zeros((len(sizes), len(QIS)))
    np.add.at(means, labels, X)
    means /= sizes[:, None]
    assert np.allclose(out, means[labels], rtol=1e-9, atol=1e-6)


def test_a_work_budget_bounds_the_search_and_gives_the_same_labels(tmp_path):
    """--work (the deterministic budget) is one of the mode's options: two runs with the same
    budget give the same labels, every group >= k, and no time cut is reported."""
    from census import QIS

    from microagg.publication import publish_folder

    src = _census(tmp_path, 4_000)
    runs = [
        publish_folder(
            src,
            tmp_path / f"out{i}",
            dict(k=3, block_size=100, columns=QIS, continuous=QIS, work=2_000 * (1 + i // 2)),
            {},
            slab_blocks=4,
        )
        for i in range(3)
    ]
    assert np.array_equal(runs[0].labels, runs[1].labels)
    for run in runs:
        assert np.bincount(run.labels).min() >= 3 and not run.time_cut
