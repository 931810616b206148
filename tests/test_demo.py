"""``microagg demo``: its task graph (every method in one task, waits without a cycle) and one run
of the command end to end."""

from __future__ import annotations

import re

import pytest

import microagg
from microagg import demo_runs


def _graph():
    return demo_runs.demo_tasks(microagg.methods())


def test_every_method_runs_in_exactly_one_task():
    tasks, needs = _graph()
    listed = [
        m for t, methods in tasks.items() if t not in demo_runs._DEMO_COMPILE_TASKS for m in methods
    ]
    assert sorted(listed) == sorted(microagg.methods())
    assert set(demo_runs._DEMO_COMPILE_TASKS) <= set(tasks)  # their methods are all registered
    assert set(needs) == set(tasks)
    assert all(
        m in microagg.methods() and t in tasks for m, t in demo_runs._DEMO_TASK_OF_METHOD.items()
    )
    assert "vmdav" in tasks["column generation"]  # which compiles V-MDAV's kernel for its start


def test_task_waits_have_no_cycle_and_name_known_tasks():
    tasks, needs = _graph()
    done: set = set()
    pending = list(tasks)
    while pending:  # Kahn's order: some task must always be ready
        ready = [t for t in pending if needs[t] <= done]
        assert ready, f"tasks wait for each other: {pending}"
        done.update(ready)
        pending = [t for t in pending if t not in ready]
    # auto runs its members' kernels and those compiled ahead for its column-generation lane; the
    # univariate methods, which it does not run on the demo's data, run beside it
    from microagg.methods.auto import DEFAULT_PORTFOLIO
    from microagg.methods.auto_members import LOCAL_SEARCHES, SECOND_START

    task_of = {m: t for t, methods in tasks.items() for m in methods}
    members = {*DEFAULT_PORTFOLIO, *LOCAL_SEARCHES, SECOND_START, "colgen"}
    assert needs["portfolio"] == {task_of[m] for m in members} | set(demo_runs._DEMO_COMPILE_TASKS)
    assert "univariate" not in needs["portfolio"]
    assert not needs["local-search"]  # the longest task starts at once


def test_tasks_run_once_each_after_what_they_wait_for():
    tasks, needs = _graph()
    order = []

    def run(task, methods):
        assert needs[task] <= set(order), (task, order)
        order.append(task)
        return [(m, task) for m in methods]

    rows = demo_runs.run_demo_tasks(tasks, needs, run, workers=1)
    assert sorted(order) == sorted(tasks)
    shown = [r[0] for r in rows if r[1] not in demo_runs._DEMO_COMPILE_TASKS]
    assert sorted(shown) == sorted(microagg.methods())
    assert order[0] == "local-search"  # the heaviest first
    assert order[-1] == "portfolio"  # it waits for every other


def test_demo_prints_one_row_per_method(cli):
    done = cli("demo", "--time-limit", "0.2")
    assert done.returncode == 0, done.stderr
    for name in microagg.methods():
        row = [
            line for line in done.stdout.splitlines() if re.match(rf"^\W*{re.escape(name)}\s", line)
        ]
        assert len(row) == 1, (name, row)
        il = float(re.findall(r"\d+\.\d{3}", row[0])[0])
        assert 0.0 < il < 100.0, row
    told = [
        line for line in done.stderr.splitlines() if re.match(r"microagg demo: \[\d+/\d+\] ", line)
    ]
    assert sorted(line.rsplit(" ", 2)[1] for line in told) == sorted(
        microagg.methods()
    )  # a line per method


def test_demo_tells_each_method_and_its_compilation_on_a_plain_stderr(capsys):
    import queue

    events = queue.SimpleQueue()
    with demo_runs._progress_display(["mdav", "icsm"], events):
        for event in [
            ("start", "mdav", None),
            ("compiling", "mdav", None),
            ("done", "mdav", 0.5),
            ("start", "icsm", None),
            ("done", "icsm", 0.25),
        ]:
            events.put(event)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "microagg demo: running 2 methods (the first run after an install also compiles them)",
        "microagg demo: mdav: compiling kernels (first run only)...",
        "microagg demo: [1/2] mdav done",
        "microagg demo: [2/2] icsm done",
    ]


def test_a_compile_task_shows_no_row_and_compiles_what_colgen_then_calls():
    """The exact-pricing task compiles exact pricing and subset-row cuts ahead, for the types of
    colgen's calls: colgen run to completion on census' first 45 records (which reaches both, as
    auto's colgen lane does on the demo) adds no second specialisation."""
    import numpy as np

    from microagg import datasets
    from microagg.kernels import colgen_rounding, pricing_bnb
    from microagg.methods.colgen import column_pricing, driver

    reached = {"exact pricing": 0, "cuts": 0}

    def counted(key, func):
        def call(*args):
            reached[key] += 1
            return func(*args)

        return call

    tasks, needs = _graph()
    assert not needs["exact pricing"]  # it loads no other task's kernels: it starts at once
    assert demo_runs._demo_task("exact pricing", tasks["exact pricing"], "census", 3, None) == []
    ahead = [pricing_bnb.bnb_pricing, colgen_rounding.separate_subset_rows]
    assert all(len(kernel.signatures) == 1 for kernel in ahead)
    data = datasets.load("census")[datasets.benchmark_columns("census")].head(45)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            column_pricing, "bnb_pricing", counted("exact pricing", column_pricing.bnb_pricing)
        )
        mp.setattr(driver, "separate_subset_rows", counted("cuts", driver.separate_subset_rows))
        microagg.microaggregate(np.asarray(data, dtype=float), k=3, method="colgen", audit=False)
    assert reached["exact pricing"] > 0 and reached["cuts"] > 0, reached
    assert all(len(kernel.signatures) == 1 for kernel in ahead), [k.signatures for k in ahead]
