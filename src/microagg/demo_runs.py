"""The demo: every registered method on a bundled data set, one table (``microagg demo``).

Methods that share numba kernels run as one task in one worker process, and a task waits for the
tasks whose kernels it calls, so nothing is compiled twice at once and the rows show the methods'
own times, not numba's compilation.
"""

from __future__ import annotations

import contextlib
import os
import queue

from . import datasets
from . import methods as registry
from .api import microaggregate
from .progress import COMPILING

_DEMO_TASK_OF_FAMILY = {
    "tour": "local-search",
    "projection": "univariate",
    "per-variable": "univariate",
}
#: column generation starts from V-MDAV and compiles its kernel (3 s) itself: the vmdav row runs
#: in its task, after it, rather than in the mdav task beside it, which compiled the same kernel at
#: the same time (measured from an empty cache: the demo 29.4 -> 27.7 s)
_DEMO_TASK_OF_METHOD = {"vmdav": "column generation"}
#: A task starts only once the tasks whose kernels its methods call have finished, so it loads
#: those kernels from numba's on-disk cache instead of compiling them again: auto runs the other
#: methods, those of the tasks holding ``_DEMO_TASK_NEEDS``'s methods (auto's members on
#: multivariate data, ``methods.auto``; the compile-only tasks, for its column-generation lane),
#: so the univariate methods, which it does not run, can fill the other core beside it. (MDAV's
#: kernels are not among them: on the demo's few records MDAV, the start of icsm, lsearch and
#: mdav-mhm, and column generation's split of oversized groups run in numpy while the brute-force
#: kernel is not compiled, ``kernels.mdav_labels.NUMPY_MAX_N``; compiling it for them had cost 9 s.)
_DEMO_TASK_NEEDS = {"portfolio": ("auto's members",)}
#: Tasks that show no row: they compile kernels ahead (``kernels.jit.compile_ahead``) that only
#: auto reaches. Column generation's exact pricing (``kernels.pricing_bnb.bnb_pricing``, a third
#: of column generation's compilation) and its subset-row cuts
#: (``kernels.colgen_rounding.separate_subset_rows``): the colgen row, bounded by its work budget,
#: reaches neither; auto's column-generation lane reaches both, in a thread of its own, so the
#: portfolio task compiled them last (and then ran auto again, ``_demo_task``). Here they compile
#: on the core column generation does not use, while it compiles the rest.
_DEMO_COMPILE_TASKS = {
    "exact pricing": (
        ("pricing_bnb", "bnb_pricing", "BNB_PRICING_TYPES"),
        ("colgen_rounding", "separate_subset_rows", "SEPARATE_SUBSET_ROWS_TYPES"),
    )
}
#: The order tasks start in (unknown tasks first). From an empty cache, compilation is nearly all
#: of the demo's time, so the order balances the two cores, the longest first (measured:
#: benchmarks/demo_tasks.py): local-search on one core; column generation, then what only auto
#: reaches, on the other; the small tasks fill the cores' ends; the portfolio last. (The k-d
#: trees the local search and column generation once shared are not compiled for the demo's
#: records: ``kernels.jit.tree_leaf_size``.)
_DEMO_TASK_COST = (
    "local-search",
    "column generation",
    "exact pricing",
    "tsp",
    "fixed-size",
    "hierarchical",
    "univariate",
    "mdav",
    "portfolio",
)
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


#: Each iterative method's work budget in the demo: DEMO_PASSES passes over the records, at most
#: what the reference machine does in DEMO_SECONDS (``deadline.work_budget``): the same table at
#: any load
DEMO_PASSES, DEMO_SECONDS = 200, 1.0


def demo_work(records: int) -> float:
    """The demo's work budget per method on ``records`` records."""
    from .deadline import work_budget

    return work_budget(records, DEMO_PASSES, DEMO_SECONDS)


def _demo_task(task: str, names: list, dataset: str, k: int, time_limit, work=None) -> list:
    """Run the methods ``names`` of ``task`` as the demo shows them (runs in a worker process).

    Each method runs once, bounded by its work budget: the same code paths on every demo, so
    what it compiles on the first demo after an install (the warm-up of ``methods.load_kernels``
    compiles the kernels the run calls, before its clock starts) is in numba's on-disk cache for
    the next. (A run to completion on the first rows before it compiled code paths the rows
    never reach: column generation's exact pricing, on the longest task; those auto needs are
    compiled ahead by ``_DEMO_COMPILE_TASKS``.) The row's seconds are the run's own
    (``Result.seconds``, which never counts what numba compiles in the calling thread:
    ``methods.uncharged_compilation``); a run during which numba compiled in another thread
    (auto's column-generation lane) is run again, until a run compiles nothing there. Returns
    one row (name, IL %, lower bound IL % or None, seconds, note) per method; a task of
    ``_DEMO_COMPILE_TASKS`` compiles its kernels and returns none.
    """
    import threading

    from numba.core import event

    if task in _DEMO_COMPILE_TASKS:
        import importlib

        from .kernels.jit import compile_ahead

        for module, name, types in _DEMO_COMPILE_TASKS[task]:
            kernels = importlib.import_module(f"{__package__}.kernels.{module}")
            compile_ahead(getattr(kernels, name), getattr(kernels, types))
        return []
    df = datasets.load(dataset)
    me = threading.get_ident()
    elsewhere = []  # compilations outside this thread, which Result.seconds counts

    class CompiledElsewhere(event.Listener):
        def on_start(self, ev):
            if threading.get_ident() != me:
                elsewhere.append(ev)

        def on_end(self, ev):
            pass

    current = {"name": None, "announced": set()}

    class CompileNotice(event.Listener):  # any thread of this worker: the method's kernels compile
        def on_start(self, ev):
            name = current["name"]
            if name is not None and name not in current["announced"]:
                current["announced"].add(name)
                _tell("compiling", name)

        def on_end(self, ev):
            pass

    rows = []
    with (
        event.install_listener("numba:compile", CompiledElsewhere()),
        event.install_listener("numba:compile", CompileNotice()),
    ):
        for name in names:
            current["name"] = name
            _tell("start", name)
            data, note = _demo_inputs(registry.get(name), df, dataset)
            for _ in range(_DEMO_MAX_RUNS):
                before = len(elsewhere)
                res = microaggregate(
                    data,
                    k=k,
                    method=name,
                    seed=0,
                    time_limit=time_limit,
                    work=demo_work(len(data)) if work is None else work,
                    columns=list(data.columns),
                    audit=False,
                )
                if len(elsewhere) == before:
                    break
            rows.append((name, res.information_loss, res.lower_bound_il, res.seconds, note))
            current["name"] = None
            _tell("done", name, res.seconds)
    return rows


#: where a worker's events go ("start" / "compiling" / "done", method, seconds): the parent's
#: queue in a worker process (``_listen``), a callback when the tasks run in this process
_EVENTS = None


def _listen(events) -> None:
    """Worker-process initializer: send this worker's events to ``events`` (a queue)."""
    global _EVENTS
    _EVENTS = events.put


def _tell(kind: str, name: str, seconds: float | None = None) -> None:
    if _EVENTS is not None:
        _EVENTS((kind, name, seconds))


def demo_tasks(names) -> dict:
    """{task: [method names]} and {task: tasks it waits for}, in the order they start
    (``_DEMO_TASK_COST``), the tasks of ``_DEMO_COMPILE_TASKS`` (no method) included."""
    tasks: dict = {}
    for name in names:
        family = registry.get(name).family
        task = _DEMO_TASK_OF_METHOD.get(name) or _DEMO_TASK_OF_FAMILY.get(family, family)
        tasks.setdefault(task, []).append(name)
    tasks.update({task: [] for task in _DEMO_COMPILE_TASKS})
    members = _auto_members()
    needs = {}
    for task in tasks:
        wanted = _DEMO_TASK_NEEDS.get(task, ())
        needs[task] = {
            t
            for t in tasks
            if t != task
            and (
                t in wanted
                or "auto's members" in wanted
                and (t in _DEMO_COMPILE_TASKS or members.intersection(tasks[t]))
            )
        }
    cost = {t: _DEMO_TASK_COST.index(t) if t in _DEMO_TASK_COST else -1 for t in tasks}
    order = sorted(tasks, key=lambda t: (cost[t], t))
    return {t: tasks[t] for t in order}, needs


def _auto_members() -> set:
    """The methods auto may run on multivariate data (``methods.auto``): its default members, the
    local searches and column generation."""
    from .methods.auto import DEFAULT_PORTFOLIO
    from .methods.auto_members import LOCAL_SEARCHES, SECOND_START

    return {*DEFAULT_PORTFOLIO, *LOCAL_SEARCHES, SECOND_START, "colgen"}


def run_demo_tasks(tasks: dict, needs: dict, run, workers: int, events=None) -> list:
    """Run ``run(task, task_methods)`` for every task on ``workers`` processes, each task once the
    tasks in needs[task] are done; a task that others wait for starts first, then the heaviest
    first (the order of ``tasks``). ``events``: a multiprocessing queue that
    hears each method's start, compilation and end (``_tell``). Returns the rows of all tasks."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    global _EVENTS

    unblocks = {t: sum(t in needs[u] for u in tasks) for t in tasks}
    pending = sorted(tasks, key=lambda t: -unblocks[t])  # stable: keeps the cost order
    done: set = set()
    rows: list = []
    if workers < 2:  # one core: in this process, in dependency order
        _EVENTS = None if events is None else events.put
        try:
            while pending:
                task = next(t for t in pending if needs[t] <= done)
                pending.remove(task)
                rows += run(task, tasks[task])
                done.add(task)
        finally:
            _EVENTS = None
        return rows
    running: dict = {}
    initializer = {} if events is None else {"initializer": _listen, "initargs": (events,)}
    with ProcessPoolExecutor(max_workers=workers, **initializer) as pool:
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
    import multiprocessing
    from functools import partial

    from rich.console import Console
    from rich.table import Table

    df = datasets.load(dataset)
    tasks, needs = demo_tasks(registry.names())
    run = partial(_demo_task, dataset=dataset, k=k, time_limit=time_limit, work=work)
    workers = min(len(tasks), os.cpu_count() or 1)
    # numba compiles on one thread and a fresh install has nothing cached: the tasks run in
    # parallel worker processes, which write numba's on-disk cache (fast on later runs)
    events = multiprocessing.get_context().Queue() if workers >= 2 else queue.SimpleQueue()
    with (
        quiet_stdout() if quiet_stdout is not None else contextlib.nullcontext(),
        _progress_display(registry.names(), events),
    ):
        rows = {row[0]: row for row in run_demo_tasks(tasks, needs, run, workers, events)}
    budget = f"work {demo_work(len(df)) if work is None else work:,.0f} per method"
    table = Table(title=f"microagg demo: {dataset} ({len(df)}×{df.shape[1]}), k = {k}, {budget}")
    for col in ("method", "IL %", "lower bound %", "seconds", "note"):
        table.add_column(col, justify="left" if col in ("method", "note") else "right")
    for name in registry.names():
        _, il, lb, secs, note = rows[name]
        table.add_row(name, f"{il:.3f}", "" if lb is None else f"{lb:.3f}", f"{secs:.2f}", note)
    Console().print(table)


@contextlib.contextmanager
def _progress_display(names: list, events):
    """What the demo is doing, on stderr, from the workers' events: in a terminal one bar per
    method (waiting, compiling, running, done) under a bar of the methods done; otherwise one
    line when a method's kernels compile and one when it is done, so a log shows why a first run
    takes longer."""
    import sys
    import threading

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    total = len(names)
    finished = []
    if console.is_terminal:
        bars = Progress(
            TextColumn("{task.description:16s}"),
            BarColumn(bar_width=24),
            TextColumn("{task.fields[state]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        overall = bars.add_task("microagg demo", total=total, state=f"0 of {total} methods")
        rows = {name: bars.add_task(name, total=1, state="waiting", start=False) for name in names}

        def show(kind, name, seconds):
            if kind == "start":
                bars.start_task(rows[name])
                bars.update(rows[name], state="running")
            elif kind == "compiling":
                bars.update(rows[name], state="compiling kernels (first run only)")
            else:
                finished.append(name)
                bars.update(rows[name], completed=1, state=f"done, {seconds:.2f} s")
                bars.update(
                    overall, completed=len(finished), state=f"{len(finished)} of {total} methods"
                )

        context = bars
    else:

        def show(kind, name, seconds):
            if kind == "compiling":
                print(
                    f"microagg demo: {name}: {COMPILING} (first run only)...",
                    file=sys.stderr,
                    flush=True,
                )
            elif kind == "done":
                finished.append(name)
                print(
                    f"microagg demo: [{len(finished)}/{total}] {name} done",
                    file=sys.stderr,
                    flush=True,
                )

        context = contextlib.nullcontext()
        print(
            f"microagg demo: running {total} methods (the first run after an install also compiles"
            " them)",
            file=sys.stderr,
            flush=True,
        )

    def pump():
        while (event := events.get()) is not None:  # None: the demo is over
            show(*event)

    with context:
        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        try:
            yield
        finally:
            events.put(None)
            thread.join(timeout=5)
