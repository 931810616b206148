"""colgen's integral masters are bounded by work, not by the clock, in a run without a time limit
(issue 57: with two busy processes a default run's closing MIP, over the same columns, ended at
another partition): each gets HiGHS's node limit ``mip_nodes`` and no time limit, so the same
input gives the same bytes at any load."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import microagg
from microagg.methods import run
from microagg.methods.colgen import MIP_NODES
from microagg.methods.colgen import master as master_module


@pytest.fixture
def integral_masters(monkeypatch):
    """The (time limit, node limit) of every integral master a run solves."""
    seen = []
    real = master_module.Master.solve_integral

    def recording(self, time_limit, incumbent, abs_gap=0.0, primal=False, max_nodes=None):
        seen.append((time_limit, max_nodes))
        return real(self, time_limit, incumbent, abs_gap, primal, max_nodes)

    monkeypatch.setattr(master_module.Master, "solve_integral", recording)
    return seen


def _survey(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.lognormal(size=n), rng.normal(size=n), rng.gamma(2.0, size=n)])


@pytest.mark.parametrize("n, seed", [(45, 2), (90, 3)])  # data whose optimum needs the closing
def test_without_a_time_limit_every_integral_master_is_bounded_by_nodes(integral_masters, n, seed):
    X = _survey(n, seed)
    run("colgen", X, 3, seed=0)
    assert integral_masters, "no integral master was solved"
    assert all(limit >= 1e9 and nodes == MIP_NODES for limit, nodes in integral_masters), (
        integral_masters
    )


def test_under_a_time_limit_the_clock_still_caps_them(integral_masters):
    from microagg.deadline import Deadline

    X = _survey(45, 2)
    run("colgen", X, 3, seed=0, mip_time_limit=5.0, deadline=Deadline(60.0))
    assert integral_masters and all(limit <= 5.0 for limit, _ in integral_masters)


def _busy_processes(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def test_the_same_bytes_with_two_busy_processes(tmp_path):
    df = microagg.datasets.load("census").head(120)[["AGI", "FICA", "TAXINC"]]
    quiet = microagg.microaggregate(df, k=3, method="colgen", audit=False).labels
    busy = _busy_processes(2)
    try:
        loaded = microagg.microaggregate(df, k=3, method="colgen", audit=False).labels
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert np.asarray(quiet).tobytes() == np.asarray(loaded).tobytes()
