"""Compilation on a first run: announced once on the progress channel, never charged to the run's
clock (``methods.uncharged_compilation``, ``Deadline.extend``), kernels chosen for the planned size
(``kernels.jit.planning``), and the one numba switch (``kernels.jit``)."""

import io
import time

import numpy as np
import pytest
from numba import njit

import microagg
from microagg import methods
from microagg.deadline import Deadline
from microagg.progress import COMPILING, compile_notice


def test_extend_moves_start_and_end():
    d = Deadline(5.0)
    start, end = d.start, d.end
    time.sleep(0.01)
    d.extend(100.0)
    assert d.start == start + 100.0 and d.end == end + 100.0
    assert d.elapsed() < 0  # the 100 s are not the run's
    unbounded = Deadline(None)
    unbounded.extend(3.0)
    assert unbounded.end is None and unbounded.elapsed() < 0


def test_room_for_a_step():
    d = Deadline(10.0)
    assert d.room_for(5.0) and not d.room_for(11.0)
    assert Deadline(None).room_for(1e9)
    d.stop()
    assert not d.room_for(0.0)


def test_compilation_is_announced_once_and_not_charged():
    @njit  # a fresh function: its first call compiles (no cache)
    def plus_one(x):
        return x + 1

    d = Deadline(10.0)
    start, end = d.start, d.end
    heard = []
    with methods.uncharged_compilation(d, lambda *a: heard.append(a)):
        assert plus_one(1) == 2
        assert plus_one(1.5) == 2.5  # a second specialisation: compiled, not announced again
    assert heard[0] == (COMPILING, None, "first run only")  # announced once, then a bar's steps
    assert len(heard) == 2 and heard[1][0] == COMPILING and heard[1][2].endswith("plus_one")
    assert heard[1][1] is None or 0.0 <= heard[1][1] < 1.0
    moved = d.start - start
    assert moved > 0 and d.end - end == pytest.approx(moved)
    heard.clear()
    with methods.uncharged_compilation(d, lambda *a: heard.append(a)):
        plus_one(2)  # compiled already: nothing to announce or to move
    assert heard == [] and d.start - start == moved


def test_nested_runs_watch_once():
    @njit
    def twice(x):
        return 2 * x

    outer, inner = Deadline(10.0), Deadline(10.0)
    heard = []
    with methods.uncharged_compilation(outer, lambda *a: heard.append(a)):
        with methods.uncharged_compilation(inner, lambda *a: heard.append(("inner",) + a)):
            twice(3)
    assert heard == [(COMPILING, None, "first run only")]
    assert outer.start > inner.start - 1e-3  # the outer run's clock was moved, the inner's not


def test_compile_notice_writes_one_line_for_compilation_only():
    out = io.StringIO()
    notice = compile_notice(out)
    notice("mdav", 0.5, "4000 records")
    assert out.getvalue() == ""
    notice(COMPILING, None, "first run only")
    notice(COMPILING, 0.5, "kernel 2: mdav.x")  # the bar's steps: no more lines
    assert out.getvalue() == "microagg: compiling kernels, first run only...\n"


def test_cli_without_a_terminal_gets_the_compile_line(monkeypatch):
    from microagg import cli

    with cli.progress_bar(True, None, "x") as callback:  # pytest's stderr is not a terminal
        assert callback is not None
        callback("mdav", None, "")
    with cli.progress_bar(False, None, "x") as callback:  # --quiet: nothing at all
        assert callback is None


def test_reported_seconds_exclude_compilation(monkeypatch):
    """A method whose kernel compiles during the run: Result.seconds does not count it."""

    @njit
    def slow_to_compile(X):
        s = 0.0
        for i in range(X.shape[0]):
            for j in range(X.shape[1]):
                s += X[i, j] * X[i, j] - np.sqrt(abs(X[i, j])) + np.exp(-(X[i, j] ** 2))
        return s

    seen = {}

    @methods.register(
        "trial_compiles", family="test", paper="-", complexity="-", variable_size=False
    )
    def trial_compiles(X, k, *, seed, deadline, progress):
        t = time.monotonic()
        slow_to_compile(X)
        seen["call"] = time.monotonic() - t
        return np.arange(len(X)) // k

    try:
        res = microagg.microaggregate(
            np.random.default_rng(0).normal(size=(30, 2)), k=3, method="trial_compiles"
        )
    finally:
        methods._REGISTRY.pop("trial_compiles", None)
    assert seen["call"] > 0.05  # it compiled
    assert res.seconds < seen["call"] / 2


def test_planning_picks_kernels_for_the_planned_size():
    from microagg.kernels.jit import planned_records, planning

    assert planned_records(40) == 40
    with planning(10**6):
        assert planned_records(40) == 10**6
        with planning(5):
            assert planned_records(40) == 40
    assert planned_records(40) == 40


def test_one_numba_switch():
    from microagg.kernels import jit

    assert jit.CACHE and jit.NOGIL and not jit.FASTMATH
    from microagg.kernels.mdav_labels import mdav_brute_kernel

    assert (
        mdav_brute_kernel.targetoptions["nogil"]
        and type(mdav_brute_kernel._cache).__name__ != "NullCache"
    )
    import pathlib

    import microagg.kernels as package

    for path in pathlib.Path(package.__file__).parent.glob("*.py"):  # no decorator of its own
        assert "@njit" not in path.read_text() or path.name == "jit.py", path.name


def test_a_constant_argument_compiles_no_second_specialisation():
    """A kernel called from another kernel with a constant is compiled for int64, the type a call
    from Python gives, not once more for Literal[int] (kernels.jit._no_literal_specialisation)."""
    from microagg.kernels.jit import kernel

    def scaled(x, factor):
        return x * factor

    callee = kernel(scaled)

    def twice_from_a_kernel(x):
        return callee(x, 2)  # a constant: numba types it Literal[int](2)

    caller = kernel(twice_from_a_kernel)
    assert callee(3, 2) == 6 and caller(5) == 10
    assert [str(t) for t in callee.signatures[0]] == ["int64", "int64"]
    assert len(callee.signatures) == 1, callee.signatures


def test_auto_skips_a_member_that_cannot_fit_its_budget(monkeypatch):
    """auto runs a constructive member only if its least time (MEMBER_COST × MDAV's time measured
    in the run) fits in the budget left; a skipped member gets a row saying why."""
    from microagg.methods import auto_members

    monkeypatch.setattr(auto_members, "COST_MIN_N", 0)
    monkeypatch.setattr(
        auto_members, "MEMBER_COST", dict(auto_members.MEMBER_COST, vmdav=(1e9, 0.0))
    )
    X = np.random.default_rng(0).normal(size=(300, 3))
    res = microagg.microaggregate(
        X, k=3, method="auto", portfolio=["mdav", "vmdav", "mdav-mhm"], time_limit=30
    )
    rows = {r["method"]: r for r in res.extras["portfolio"]}
    assert rows["mdav"]["status"] == "ok" and rows["mdav-mhm"]["status"] == "ok"
    assert rows["vmdav"]["status"].startswith("skipped (needs about")


def test_a_method_that_cannot_stop_in_time_is_refused_before_it_starts(monkeypatch):
    """least_seconds: a method whose uninterruptible first step needs more than the time limit
    leaves is refused at once with one clear error (BudgetError, an InputError); without a time
    limit it runs; auto skips such a member and says why."""
    from microagg.methods import kward as kward_module

    X = np.random.default_rng(0).normal(size=(400, 3))
    monkeypatch.setattr(kward_module, "WARD_SECONDS_PER_N2D", 1.0)  # 400²·3 s: never fits
    with pytest.raises(
        methods.BudgetError, match="cannot finish within the time limit on 400 records"
    ):
        microagg.microaggregate(X, k=3, method="kward", time_limit=5)
    assert microagg.microaggregate(X, k=3, method="kward").labels.shape == (
        400,
    )  # no limit: it runs
    res = microagg.microaggregate(X, k=3, method="auto", portfolio=["mdav", "kward"], time_limit=5)
    row = next(r for r in res.extras["portfolio"] if r["method"] == "kward")
    assert row["status"].startswith("skipped (it needs at least about")


def test_mf_tsp_refuses_a_matrix_beyond_memory(monkeypatch):
    from microagg.errors import InputError
    from microagg.methods import tsp

    monkeypatch.setattr(tsp, "_physical_memory", lambda: 1000)
    with pytest.raises(InputError, match="mf-tsp keeps an n×n count matrix"):
        microagg.microaggregate(np.random.default_rng(0).normal(size=(60, 2)), k=3, method="mf-tsp")


#: the parallel kernels: MDAV's passes split over idle cores (``kernels.mdav_labels.split_for``)
SPLIT_KERNELS = {
    "mdav_tree._take_two_groups",
    "mdav_split._distances_select_threads",
    "mdav_split._distances_two_select_threads",
    "mdav_tree._pair_ahead",
    "mdav_tree._two_nearest",
    "kdtree_build.build_pair_threads",
}


def test_one_thread_everywhere_and_the_switches(monkeypatch):
    """No kernel is compiled for numba's threading layer (a run never waits for a second thread
    another process holds) but MDAV's split passes, run only on cores a probe finds idle
    (``kernels.cores``, issue 45); auto's second thread (the column-generation lane) has its switch,
    parallel=False, and with it auto starts no thread."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    import microagg.kernels as package

    for mod in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"microagg.kernels.{mod.name}")
        for obj in vars(module).values():
            if not isinstance(obj, CPUDispatcher):
                continue
            home = f"{obj.py_func.__module__.rsplit('.', 1)[-1]}.{obj.__name__}"  # where defined
            if home not in SPLIT_KERNELS:
                assert not obj.targetoptions.get("parallel"), f"{home} is a parallel kernel"
    from microagg.methods import auto_members

    X = np.random.default_rng(0).normal(size=(60, 2))
    methods.load_kernels("auto", X.shape)  # the warm-up runs auto with its defaults
    started = []
    monkeypatch.setattr(
        auto_members, "Lane", lambda *a, **kw: started.append(a) or pytest.fail("a lane started")
    )
    res = microagg.microaggregate(X, k=3, method="auto", time_limit=3, parallel=False)
    assert not started and res.labels.shape == (60,)


def test_load_kernels_warms_for_the_planned_size(monkeypatch):
    """The warm-up runs on a small sample but chooses kernels as for the real size, once per
    process and size class, and reports compilation on the given progress callback."""
    from microagg.kernels.jit import planned_records

    seen = []
    monkeypatch.setattr(methods, "_WARM", set())
    monkeypatch.setattr(
        methods,
        "run",
        lambda name, X, k, **kw: seen.append((name, len(X), planned_records(len(X)))),
    )
    methods.load_kernels("mdav", (20_000, 3))
    methods.load_kernels("mdav", (25_000, 3))  # the same size class: nothing to do
    methods.load_kernels("mdav", (10**6, 3))
    methods.load_kernels("mdav")
    assert seen == [("mdav", 40, 20_000), ("mdav", 40, 10**6), ("mdav", 40, 40)]


def test_a_call_that_shows_no_progress_says_it_compiles_in_a_warning():
    """The first call's first line (a notebook, a script): a CompilationWarning, once a call."""
    import warnings

    @njit
    def fresh(x):
        return x * 3

    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        with methods.uncharged_compilation(None, microagg.progress.silent):
            fresh(1)
            fresh(1.5)
    notices = [w for w in told if issubclass(w.category, microagg.CompilationWarning)]
    assert len(notices) == 1 and "microagg compile" in str(notices[0].message)


def test_the_warm_up_lets_the_compile_notice_through(monkeypatch):
    """The warm-up silences its sample's warnings, not the notice that kernels compile (the
    default call's first line: benchmarks/first_call.py found it swallowed)."""
    import warnings

    @njit
    def fresh_in_warm_up(x):
        return x - 1

    monkeypatch.setattr(methods, "_WARM", set())
    monkeypatch.setattr(methods, "run", lambda name, X, k, **kw: fresh_in_warm_up(1))
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        methods.load_kernels("mdav", (20_000, 3))
    assert [w.category for w in told] == [microagg.CompilationWarning]
