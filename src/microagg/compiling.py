"""``microagg compile``: every kernel compiled once, after an install, so that a notebook's first
call is as fast as its second (issue 56).

numba compiles a kernel on its first call and keeps it in its on-disk cache
(``kernels.jit.CACHE``); a later process loads it. A first call that meets an empty cache compiles
what it runs (39.9 s for the first default call on 10^5 x 5 records at load 2.7, 0.8 s after).
``compile_all`` runs what calls run, on small samples, with the kernels chosen as for the sizes
that pick other kernels (``kernels.jit.planning``: a scan below the tree sizes, the trees and the
split passes above): each method's warm-up (``methods.load_kernels``) at every size, the default
call with its audit, and a published CSV file (the reader's and writer's kernels). Everything is
run, nothing is timed: the cache is all it leaves.
"""

from __future__ import annotations

import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np

__all__ = ["compile_all", "SIZES", "tasks"]

#: the sizes kernels are chosen for (records): a first call on a sample, then past the scan's and
#: the split's thresholds (``kernels.jit.tree_leaf_size``, ``kernels.mdav_split``)
SIZES = (40, 10**5, 10**6)


def tasks() -> list:
    """(name, function(progress)) of each step: every package method at every size, the default
    call and a published file at every size."""
    from . import methods

    steps = []
    for name in methods.names():
        info = methods.get(name)
        if not info.func.__module__.startswith(f"{methods.__name__}."):
            continue  # a caller's own method
        d = 3 if info.multivariate else 1
        for size in SIZES:
            steps.append((f"{name} ({size:,} records)", _warm(name, (size, d))))
    for size in SIZES:
        steps.append((f"the default call and its audit ({size:,} records)", _default_call(size)))
        steps.append((f"a published CSV file ({size:,} records)", _published_file(size)))
    steps.append(("a nominal column of many levels, kept as codes", _many_levels))
    steps.append(("a time limit's cycle counter", _cycle_counter))
    return steps


def _cycle_counter(report):
    """The cycle counter's rate, which a time-limited MDAV measures once a process
    (``kernels.cycles.budget_cycles``; the warm-ups run unbounded and do not reach it)."""
    from .kernels.cycles import budget_cycles

    budget_cycles(1.0)


def _many_levels(report):
    """The default call on a nominal QI whose one-hot columns pass ``onehot``'s threshold: MDAV's
    codes kernel (``kernels.mdav_onehot``), which no other step reaches."""
    from .api import microaggregate

    frame = _sample(records=300, columns=2)
    frame["level"] = [f"L{i % 100:03d}" for i in range(len(frame))]
    microaggregate(frame, k=3, categorical=["level"], progress=report).audit  # noqa: B018


def _warm(name: str, shape: tuple):
    def step(report):
        from . import methods

        methods.load_kernels(name, shape, report)

    return step


def _sample(records: int = 60, columns: int = 5):
    import pandas as pd

    rng = np.random.default_rng(0)
    return pd.DataFrame(
        rng.normal(size=(records, columns)), columns=[f"x{j}" for j in range(columns)]
    )


def _default_call(size: int):
    def step(report):
        from .api import microaggregate
        from .kernels.jit import planning

        with planning(size):
            microaggregate(_sample(), k=3, progress=report).audit  # noqa: B018 (the audit's)

    return step


def _published_file(size: int):
    def step(report):
        from .kernels.jit import planning
        from .publication import protect

        with tempfile.TemporaryDirectory(prefix=".microagg-compile.") as folder:
            source = Path(folder) / "in.csv"
            frame = _sample()
            frame.insert(0, "id", np.arange(len(frame)))
            frame.to_csv(source, index=False)
            with planning(size):
                protect(
                    source,
                    Path(folder) / "out.csv",
                    k=3,
                    columns=list(frame.columns[1:]),
                    progress=report,
                )

    return step


def compile_all(progress=None) -> dict:
    """Run every step of ``tasks()``; returns {"kernels": how many compiled (0: the cache had
    them all), "seconds": the wall time, "steps": how many ran}. ``progress``: a callback
    ``progress(stage, fraction, message)`` hears each step, or True for a bar."""
    from numba.core import event

    from .progress import channel, part

    compiled = []
    lock = threading.Lock()

    class Count(event.Listener):
        def on_start(self, ev):
            with lock:
                compiled.append(ev)

        def on_end(self, ev):
            pass

    steps = tasks()
    started = time.monotonic()
    from .methods import compiling_all

    with (
        compiling_all(),
        channel(progress, None, "microagg compile") as report,
        event.install_listener("numba:compile", Count()),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")  # the samples' own warnings are not the user's
        for i, (name, step) in enumerate(steps):
            report(name, i / len(steps), f"{len(compiled)} kernels compiled")
            # each step reports on the bar (its compile notice a message, not a warning)
            step(part(report, i / len(steps), (i + 1) / len(steps), f"{name}: "))
        report("done", 1.0, f"{len(compiled)} kernels compiled")
    return {"kernels": len(compiled), "seconds": time.monotonic() - started, "steps": len(steps)}
