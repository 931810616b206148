"""The demo: every registered method on a bundled data set, one table (``microagg demo``).

Methods that share numba kernels run as one task in one worker process, and a task waits for the
tasks whose kernels it calls, so nothing is compiled twice at once and the rows show the methods'
own times, not numba's compilation.
"""

from __future__ import annotations

import os

from . import datasets
from . import methods as registry
from .api import microaggregate

_DEMO_TASK_OF_FAMILY = {"tour": "local-search", "projection": "univariate", "per-variable": "univariate"}
#: column generation starts from V-MDAV and compiles its kernel (3 s) itself: the vmdav row runs
#: in its task, after it, rather than in the mdav task beside it, which compiled the same kernel at
#: the same time (measured from an empty cache: the demo 29.4 -> 27.7 s)
_DEMO_TASK_OF_METHOD = {"vmdav": "column generation"}
#: A task starts only once the tasks whose kernels its methods call have finished, so it loads
#: those kernels from numba's on-disk cache instead of compiling them again: auto runs the other
#: methods. (MDAV's kernels are not among them: on the demo's few records MDAV, the start of icsm,
#: lsearch and mdav-mhm, and column generation's split of oversized groups run in numpy while the
#: brute-force kernel is not compiled, ``kernels.mdav.NUMPY_MAX_N``; compiling it for them had
#: cost 9 s.) Column generation is the longest task: from an empty cache its compilation bounds
#: the demo's wall time.
_DEMO_TASK_NEEDS = {"portfolio": ("*",)}
#: Heaviest compilation first (the longest task bounds the wall time); unknown tasks go first.
_DEMO_TASK_COST = ("column generation", "local-search", "mdav", "tsp", "fixed-size", "univariate", "hierarchical",
                   "portfolio")
#: A demo run during which numba compiled outside the calling thread is repeated, at most this
#: many times in all (see _demo_task).
_DEMO_MAX_RUNS = 6


def _demo_inputs(info, df, dataset: str = ""):
    """The data a method gets in the demo (the benchmark tables' columns, which for eia include
    its utility id), and the note on its row."""
    if dataset in datasets.names():
        roles = datasets.roles(dataset)
        df = df[datasets.benchmark_columns(dataset)]
        first = next(c for c in df.columns if roles.get(c) == "continuous")
    else:
        first = df.columns[0]
    if not info.multivariate:
        return df[[first]], f"univariate: column {first} only"
    if info.per_variable:
        return df, "each variable on its own: not k-anonymous"
    return df, ""


#: Each iterative method's work budget in the demo: DEMO_PASSES passes over the records, at most what
#: the reference machine does in DEMO_SECONDS (``clock.work_budget``): the same table at any load
DEMO_PASSES, DEMO_SECONDS = 200, 1.0


def demo_work(records: int) -> float:
    """The demo's work budget per method on ``records`` records."""
    from .clock import work_budget

    return work_budget(records, DEMO_PASSES, DEMO_SECONDS)


def _demo_task(task: str, names: list, dataset: str, k: int, time_limit, work=None) -> list:
    """Run the methods ``names`` of ``task`` as the demo shows them (runs in a worker process).

    Each method first runs once, untimed and to completion, on the first few records. That loads
    its kernels from numba's on-disk cache, or compiles them, which would otherwise be counted
    in its row; run to completion, an anytime method also reaches (and caches) the code paths
    that a time-limited run reaches only when its kernels are already compiled, so the second
    demo after an install does not compile again. The row's seconds are the run's own
    (``Result.seconds``, which never counts what numba compiles in the calling thread:
    ``methods.uncharged_compilation``); a run during which numba compiled in another thread
    (auto's column-generation lane) is run again, until a run compiles nothing there. Returns
    one row (name, IL %, lower bound IL % or None, seconds, note) per method.
    """
    import threading

    from numba.core import event

    df = datasets.load(dataset)
    me = threading.get_ident()
    elsewhere = []  # compilations outside this thread, which Result.seconds counts

    class CompiledElsewhere(event.Listener):
        def on_start(self, ev):
            if threading.get_ident() != me:
                elsewhere.append(ev)

        def on_end(self, ev):
            pass

    rows = []
    with event.install_listener("numba:compile", CompiledElsewhere()):
        for name in names:
            data, note = _demo_inputs(registry.get(name), df, dataset)
            microaggregate(data.head(max(3 * k, 30)), k=k, method=name, seed=0, columns=list(data.columns),
                           audit=False)
            for _ in range(_DEMO_MAX_RUNS):
                before = len(elsewhere)
                res = microaggregate(data, k=k, method=name, seed=0, time_limit=time_limit,
                                     work=demo_work(len(data)) if work is None else work,
                                     columns=list(data.columns), audit=False)
                if len(elsewhere) == before:
                    break
            rows.append((name, res.information_loss, res.lower_bound_il, res.seconds, note))
    return rows


def demo_tasks(names) -> dict:
    """{task: [method names]} and {task: tasks it waits for}, the heaviest tasks first."""
    tasks: dict = {}
    for name in names:
        family = registry.get(name).family
        task = _DEMO_TASK_OF_METHOD.get(name) or _DEMO_TASK_OF_FAMILY.get(family, family)
        tasks.setdefault(task, []).append(name)
    needs = {}
    for task in tasks:
        wanted = _DEMO_TASK_NEEDS.get(task, ())
        needs[task] = {t for t in tasks if t != task and ("*" in wanted or t in wanted)}
    cost = {t: _DEMO_TASK_COST.index(t) if t in _DEMO_TASK_COST else -1 for t in tasks}
    order = sorted(tasks, key=lambda t: (cost[t], t))
    return {t: tasks[t] for t in order}, needs


def run_demo_tasks(tasks: dict, needs: dict, run, workers: int) -> list:
    """Run ``run(task, task_methods)`` for every task on ``workers`` processes, each task once the
    tasks in needs[task] are done; a task that others name in _DEMO_TASK_NEEDS starts first,
    then the heaviest first (the order of ``tasks``). Returns the rows of all tasks."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    unblocks = {t: sum(t in _DEMO_TASK_NEEDS.get(u, ()) for u in tasks) for t in tasks}
    pending = sorted(tasks, key=lambda t: -unblocks[t])  # stable: keeps the cost order
    done: set = set()
    rows: list = []
    if workers < 2:  # one core: in this process, in dependency order
        while pending:
            task = next(t for t in pending if needs[t] <= done)
            pending.remove(task)
            rows += run(task, tasks[task])
            done.add(task)
        return rows
    running: dict = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        while pending or running:
            for task in [t for t in pending if needs[t] <= done][: workers - len(running)]:
                pending.remove(task)
                running[pool.submit(run, task, tasks[task])] = task
            if not running:
                raise RuntimeError(f"demo tasks wait for each other: {pending}")
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                rows += future.result()
                done.add(running.pop(future))
    return rows


def run_demo(dataset: str, k: int, time_limit=None, quiet_stdout=None, work=None) -> None:
    """Run every method on ``dataset`` and print the table (stdout); the status line is on stderr.
    Each method's budget is ``work`` (None: ``demo_work``), so the IL figures are the same at any
    load; ``time_limit`` (seconds, None: none) is a safety cap.
    ``quiet_stdout``: a context manager that keeps third-party output (HiGHS' banner, also from
    the worker processes, which inherit the file descriptors) off stdout while the methods run."""
    import contextlib
    from functools import partial

    from rich.console import Console
    from rich.table import Table

    df = datasets.load(dataset)
    tasks, needs = demo_tasks(registry.names())
    run = partial(_demo_task, dataset=dataset, k=k, time_limit=time_limit, work=work)
    workers = min(len(tasks), os.cpu_count() or 1)
    # numba compiles on one thread and a fresh install has nothing cached: the tasks run in
    # parallel worker processes, which write numba's on-disk cache (fast on later runs)
    with quiet_stdout() if quiet_stdout is not None else contextlib.nullcontext(), \
            Console(stderr=True).status("running every method (the first run also compiles them)"):
        rows = {row[0]: row for row in run_demo_tasks(tasks, needs, run, workers)}
    budget = f"work {demo_work(len(df)) if work is None else work:,.0f} per method"
    table = Table(title=f"microagg demo: {dataset} ({len(df)}×{df.shape[1]}), k = {k}, {budget}")
    for col in ("method", "IL %", "lower bound %", "seconds", "note"):
        table.add_column(col, justify="left" if col in ("method", "note") else "right")
    for name in registry.names():
        _, il, lb, secs, note = rows[name]
        table.add_row(name, f"{il:.3f}", "" if lb is None else f"{lb:.3f}", f"{secs:.2f}", note)
    Console().print(table)


