"""Shared fixtures and helpers of the test suite."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg import methods
from microagg.cli import main
from microagg.declarations import Param


@pytest.fixture(autouse=True)
def _trials_are_removed():
    """Every test leaves the registries as it found them: no trial extension stays registered
    (tests/trials.py: the tests' extensions take trial names, never a real one's)."""
    from trials import held_trials

    yield
    held = held_trials()
    assert not held, f"a test left trial extensions registered: {held}"


@pytest.fixture(autouse=True)
def _quiet_constant_column_warnings():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="constant quasi-identifier")
        yield


def brute_force_optimum(X: np.ndarray, k: int) -> float:
    """Minimum SSE over every partition of the rows into groups of at least k (tiny n only)."""
    X = np.asarray(X, dtype=np.float64)
    n = len(X)
    best = [np.inf]

    def group_cost(idx):
        G = X[list(idx)]
        return float(np.sum((G - G.mean(axis=0)) ** 2))

    def rec(rest, acc):
        if acc >= best[0]:
            return
        if not rest:
            best[0] = acc
            return
        first, others = rest[0], rest[1:]
        m = len(others)
        # choose the companions of `first` (at least k-1), leaving 0 or >= k records
        for mask in range(1 << m):
            size = bin(mask).count("1") + 1
            left = len(rest) - size
            if size < k or (0 < left < k):
                continue
            chosen = [first] + [others[i] for i in range(m) if mask >> i & 1]
            remaining = [others[i] for i in range(m) if not mask >> i & 1]
            rec(remaining, acc + group_cost(chosen))

    rec(list(range(n)), 0.0)
    return best[0]


@pytest.fixture
def spy_method():
    """A registered method that records the deadline and progress it receives (removed
    afterwards)."""
    calls = []

    @methods.register(
        "trial_spy",
        family="test",
        paper="-",
        complexity="-",
        variable_size=False,
        params=(Param("level", "int", 1, "a test parameter", low=0, high=3),),
    )
    def trial_spy(X, k, *, seed, deadline, progress, level):
        """Spy."""
        calls.append({"n": len(X), "remaining": deadline.remaining(), "deadline": deadline})
        progress("trial_spy", 1.0, "done")
        labels = np.arange(len(X)) // k
        labels[labels == labels.max()] = max(labels.max() - 1, 0) if len(X) % k else labels.max()
        return labels

    try:
        yield calls
    finally:
        del methods._REGISTRY["trial_spy"]


def make_data(seed, n, d):
    """Gaussian data with some integer columns (ties) and duplicated rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, ::2] = np.round(X[:, ::2] * 2)
    dup = rng.integers(0, n, size=n // 5)
    X[rng.integers(0, n, size=dup.size)] = X[dup]
    return X


def zscores(X):
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)


def _lines(n, make):
    return "".join(make(i) for i in range(n))


def run_cli(*args):
    """The command line in a subprocess, as a user runs it (a few end-to-end tests only: slow)."""
    return subprocess.run(
        [sys.executable, "-m", "microagg.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


class Done:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def cli(capsys):
    """The command line in this process (fast): returns returncode, stdout, stderr like
    subprocess.run."""

    def run(*args):
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Done(code, captured.out, captured.err)

    return run


@pytest.fixture
def data_csv(tmp_path):
    """Census rows with a stratum column (one stratum too small), a sampling weight and an id."""
    df = microagg.datasets.load("census").head(150).copy()
    df.insert(0, "record_id", np.arange(len(df)))
    df["region"] = np.where(np.arange(len(df)) % 2 == 0, "north", "south")
    df.loc[:1, "region"] = "island"
    df["weight"] = np.linspace(1.0, 3.0, len(df))
    p = tmp_path / "data.csv"
    df.to_csv(p, index=False)
    return p


QI = "AGI,FEDTAX,STATETAX,FICA"


@pytest.fixture
def census_csv(tmp_path):
    p = tmp_path / "census.csv"
    df = microagg.datasets.load("census").head(120).copy()
    df.insert(0, "record_id", np.arange(len(df)))
    df["note"] = "x"
    df.to_csv(p, index=False)
    return p


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def one_error_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("microagg: error:"), lines
    return lines[0]


def frame_for_formats(n=24):
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n).astype(np.int32),
            "income": rng.normal(3000, 800, n).round(2),
            "region": rng.integers(1, 4, n).astype(np.int8),
            "name": [f"p{i:03d}" for i in range(n)],
        }
    )


def assert_k_anonymous(frame, cols, k):
    _, counts = np.unique(frame[cols].to_numpy(np.float64), axis=0, return_counts=True)
    assert counts.min() >= k


def protect_table(table, cols, k=3):
    res = microagg.microaggregate(table.frame, k=k, columns=cols)
    return {c: res.data[c].to_numpy() for c in cols}


def _strata_frame(seed=0):
    """Three strata far apart on x; 'tiny' (2 records) lies next to 'a'."""
    rng = np.random.default_rng(seed)
    parts = []
    for name, centre, size in (("a", 0.0, 30), ("b", 50.0, 31), ("tiny", 1.0, 2)):
        parts.append(
            pd.DataFrame(
                {"x": rng.normal(centre, 1, size), "y": rng.normal(0, 1, size), "region": name}
            )
        )
    return pd.concat(parts, ignore_index=True)


def _records(seed, n, d, dup):
    Z = np.random.default_rng(seed).normal(size=(n, d))
    return np.round(Z) if dup else Z  # dup: many duplicate rows and tied projections


def brute_weighted_median_is_minimiser(x, w, m):
    """A weighted median minimises sum w|x - m| (the definition behind every tie rule)."""
    cost = lambda t: float(np.sum(w * np.abs(x - t)))  # noqa: E731
    best = min(cost(t) for t in x)
    return cost(m) <= best + 1e-9 * max(1.0, best)


def brute_trimmed(x, w, trim):
    """Drop whole records from each end while the weight dropped at that end stays <= trim·W."""
    order = np.argsort(x, kind="stable")
    x, w = x[order], w[order]
    keep = np.ones(len(x), dtype=bool)
    cut = trim * w.sum() * (1 + 1e-12)
    dropped = 0.0
    for i in range(len(x) - 1):
        if dropped + w[i] > cut:
            break
        dropped += w[i]
        keep[i] = False
    dropped = 0.0
    for i in range(len(x) - 1, 0, -1):
        if dropped + w[i] > cut or not keep[i - 1] and not keep[i]:
            break
        if keep.sum() == 1:
            break
        dropped += w[i]
        keep[i] = False
    return float(np.sum(w[keep] * x[keep]) / np.sum(w[keep]))


def brute_onestep(x):
    med = np.median(x)
    mad = 1.4826 * np.median(np.abs(x - med))
    c = 3 / 1.486
    return float(np.mean(np.clip(x, med - c * mad, med + c * mad)))


def group_rows(labels):
    return [np.flatnonzero(labels == g) for g in np.unique(labels)]
