"""The method registry: one place that maps method names to functions and metadata.

Every method is a plain function over a standardised float64 array::

    fit(X: ndarray[n, d], k: int, *, seed, deadline, progress, **params)
        -> labels (int64[n], or int64[n, d] for per-variable methods) | MethodOutput

``deadline`` is a ``microagg.deadline.Deadline`` (the share of the whole call's time budget this
method may use), ``progress`` a callback ``progress(stage, fraction=None, message="")``
(``microagg.progress``). The method's own parameters are declared once, with ``params=`` at
registration (``microagg.declarations.Param``: type, range or choices, default, meaning); the
function names them as keyword-only arguments without defaults, and ``run`` validates a call's
values and fills in the defaults before the method starts. Methods never see files, DataFrames
or column names, never validate their parameters again, and never print.

``run`` also owns what every method shares: k is checked once (2 <= k <= n), the parameters
are checked against the data (``MethodInfo.check_params_vs_input``: the one named hook for
checks that need n, d or k, run before any method starts; the pipeline runs it for every
stratum before the first method runs), and the trivial case n < 2k (the only valid partition
is one group, which is optimal) is answered without calling the method, with its exact SSE as
the lower bound.

A module in this package registers its functions with ``@register(...)``; modules are
discovered automatically, so a new method is one new function registered once.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import math
import pkgutil
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..deadline import Deadline
from ..declarations import Param, provide_choices, validate
from ..errors import InputError, ParameterError
from ..progress import COMPILING, as_callback, compile_notice, silent

__all__ = [
    "MethodInfo",
    "MethodOutput",
    "Param",
    "register",
    "get",
    "names",
    "all_methods",
    "run",
    "load_kernels",
    "validate_params",
    "uncharged_compilation",
    "BudgetError",
]

#: Arguments every method receives from ``run``; everything else is a declared parameter.
COMMON_ARGUMENTS = ("seed", "deadline", "progress")


#: An uninterruptible step shorter than this runs even past the deadline (the documented overshoot
#: of ``least_seconds``): refusing a sub-second step would only refuse small inputs.
TOLERATED_OVERSHOOT = 1.0


def step_seconds(deadline: Deadline) -> float | None:
    """What a step that cannot be interrupted may still take (None: no limit): the time left, but
    at least TOLERATED_OVERSHOOT, so that a step that short is never cut or refused (a small data
    set's result is the same under any time limit)."""
    return None if not deadline.bounded else max(deadline.remaining(), TOLERATED_OVERSHOOT)


def step_fits(deadline: Deadline, seconds: float) -> bool:
    """Whether a step expected to take ``seconds``, which cannot be interrupted, may start."""
    limit = step_seconds(deadline)
    return limit is None or seconds <= limit


class BudgetError(InputError):
    """The method cannot stop within the time limit on data of this size (its ``least_seconds``):
    raised before it starts, so the user can raise the limit or pick a faster method."""


@dataclass
class MethodOutput:
    """What a method may return instead of bare labels: labels plus facts it proved."""

    labels: np.ndarray
    lower_bound: float | None = None  # proven SSE lower bound, in the units of X
    extras: dict[str, Any] = field(default_factory=dict)  # iterations, timings, ...


@dataclass(frozen=True)
class MethodInfo:
    name: str
    func: Callable[..., Any]
    family: str
    paper: str
    complexity: str
    variable_size: bool
    multivariate: bool = True  # False: only d == 1 is accepted
    randomized: bool = False  # True: the result depends on ``seed``
    per_variable: bool = False  # True: labels have shape (n, d)
    summary: str = ""
    params: dict = field(default_factory=dict)  # name -> Param, in declaration order
    interruptible: bool = True  # False: may run past its deadline (it cannot stop inside a step)
    categorical: bool = True  # False: cannot take categorical quasi-identifiers
    check_together: Callable[[dict], dict] | None = None  # checks that involve several parameters
    check_input: Callable[[dict, int, int, int], None] | None = (
        None  # its own checks against (n, d, k)
    )
    default_work: Callable[[int, int, int], float] | None = (
        None  # (n, d, k) -> its work cap without a bound
    )
    least_seconds: Callable[[int, int, int], float] | None = (
        None  # (n, d, k) -> seconds it needs before it can stop
    )

    @property
    def defaults(self) -> dict[str, Any]:
        """Each declared parameter's default."""
        return {name: p.default for name, p in self.params.items()}

    def validate(self, params: dict) -> dict:
        """All parameters for a call: the given ones validated, defaults for the rest
        (ParameterError)."""
        values = validate(self.name, self.params, params)
        if self.check_together is not None:
            try:
                values = self.check_together(values)
            except ParameterError:
                raise
            except (ValueError, TypeError) as exc:
                raise ParameterError(f"method {self.name!r}: {exc}") from None
        return values

    def check_params_vs_input(self, values: dict, n: int, d: int, k: int) -> None:
        """The checks of validated parameters against the data (n records, d columns, k), run
        before any method starts (scikit-learn's ``_check_params_vs_input``): a univariate method
        on several columns; a declared column index (``Param.data_bound == "columns"``) beyond d;
        a start partition (the ``init`` convention) without one label per record; then the
        method's own ``check_input``. ParameterError / InputError."""
        if not self.multivariate and d != 1:
            raise InputError(
                f"method {self.name!r} is univariate but the data have {d} quasi-identifier "
                "columns; select one column, or use 'projected' or 'individual-ranking'"
            )
        for name, p in self.params.items():
            value = values.get(name)
            if p.data_bound == "columns" and value is not None and value >= d:
                raise ParameterError(
                    f"{self.name} parameter {name} must be a column index in 0..{d - 1}, "
                    f"got {value!r}"
                )
        if "init" in self.params:
            from .starts import check_labels_vs_input

            check_labels_vs_input(values.get("init"), n, k, self.name)
        if self.check_input is not None:
            try:
                self.check_input(values, n, d, k)
            except (InputError, ParameterError):
                raise
            except (ValueError, TypeError) as exc:
                raise ParameterError(f"method {self.name!r}: {exc}") from None


_REGISTRY: dict[str, MethodInfo] = {}
_LOADED = False


def register(
    name: str,
    *,
    family: str,
    paper: str,
    complexity: str,
    variable_size: bool,
    multivariate: bool = True,
    randomized: bool = False,
    per_variable: bool = False,
    params: tuple = (),
    interruptible: bool = True,
    categorical: bool = True,
    check_together: Callable[[dict], dict] | None = None,
    check_input: Callable[[dict, int, int, int], None] | None = None,
    default_work: Callable[[int, int, int], float] | None = None,
    least_seconds: Callable[[int, int, int], float] | None = None,
):
    """Decorator registering ``func`` under ``name``; its docstring's first line is the summary.

    ``params``: the method's ``Param`` declarations; the function must take exactly these names
    (plus seed, deadline, progress) as keyword-only arguments. ``interruptible=False`` declares a
    method that may overrun its deadline. ``check_together(values) -> values`` checks what involves
    several parameters (it raises ValueError / ParameterError), still before any data work.
    ``check_input(values, n, d, k)`` checks them against the data, before any method starts
    (``MethodInfo.check_params_vs_input``). ``default_work(n, d, k)``: the work budget (units of
    ``Deadline.charge``) of a call with neither a time limit nor a work budget (a method that
    would otherwise run on; the pipeline shares this cap among strata as it shares a budget): a
    cap the same at any load. ``least_seconds(n, d, k)``: a measured lower bound on the
    seconds the method needs on n × d data before it can stop (a step it cannot interrupt); ``run``
    refuses it (``BudgetError``) when the time limit leaves less and it is over TOLERATED_OVERSHOOT.
    """

    def deco(func):
        if name in _REGISTRY and _REGISTRY[name].func is not func:
            raise ValueError(f"method {name!r} registered twice")
        declared = {p.name: p for p in params}
        sig = inspect.signature(func)
        keywords = [p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
        expected = list(COMMON_ARGUMENTS) + list(declared)
        if sorted(keywords) != sorted(expected):  # one declaration, no second list of defaults
            raise TypeError(
                f"method {name!r}: keyword arguments {keywords} do not match the declared "
                f"{expected}"
            )
        summary = (inspect.getdoc(func) or "").split("\n")[0]
        _REGISTRY[name] = MethodInfo(
            name,
            func,
            family,
            paper,
            complexity,
            variable_size,
            multivariate,
            randomized,
            per_variable,
            summary,
            declared,
            interruptible,
            categorical,
            check_together,
            check_input,
            default_work,
            least_seconds,
        )
        return func

    return deco


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    _LOADED = True


def names() -> list[str]:
    """Names of all registered methods, sorted."""
    _load_all()
    return sorted(_REGISTRY)


def all_methods() -> list[MethodInfo]:
    _load_all()
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def _find(name) -> MethodInfo | None:
    """The method registered as ``name``, importing no more than it needs: one registered so far,
    else the module of its name (``methods/mdav.py`` registers mdav: a first default call imports
    it alone, not every method's module and kernels), else every module; None if none has it."""
    if not isinstance(name, str):
        return None
    if name not in _REGISTRY and not _LOADED:
        part = name.replace("-", "_")
        if part.isidentifier() and importlib.util.find_spec(f"{__name__}.{part}") is not None:
            importlib.import_module(f"{__name__}.{part}")
        if name not in _REGISTRY:
            _load_all()
    return _REGISTRY.get(name)


def get(name: str) -> MethodInfo:
    """The registered method ``name``; ParameterError listing the known names otherwise."""
    if not isinstance(name, str):
        raise ParameterError(f"method must be a method name (a string), got {name!r}")
    info = _find(name)
    if info is None:
        raise ParameterError(f"unknown method {name!r}; known methods: {', '.join(names())}")
    return info


def validate_params(name: str, params: dict) -> dict:
    """Validate a call's parameters for method ``name`` before any data work (ParameterError)."""
    return get(name).validate(params)


def run(
    name: str,
    X: np.ndarray,
    k: int,
    *,
    seed: int | None = None,
    time_limit: float | None = None,
    deadline: Deadline | None = None,
    progress=None,
    **params,
) -> MethodOutput:
    """Run method ``name`` on standardised X within ``deadline`` (or ``time_limit`` seconds).

    Parameters are validated against the declarations (ParameterError) and k against n
    (InputError) before the method starts. The returned labels are not yet validated: callers
    check them with ``labels.check_partition`` (the pipeline always does).
    """
    info = get(name)
    values = info.validate(params)
    from ..onehot import OneHot

    if not (isinstance(X, OneHot) and name == "mdav"):  # MDAV reads codes (many levels, issue 57)
        X = np.ascontiguousarray(X, dtype=np.float64)  # others the dense matrix, within its bound
    if X.ndim != 2:
        raise InputError("methods take a 2-D array (n records × d attributes)")
    n = len(X)
    from ..labels import check_k

    k = check_k(k, n)
    info.check_params_vs_input(values, n, X.shape[1], k)
    if deadline is None:
        deadline = Deadline(time_limit)
    elif time_limit is not None:
        raise TypeError("pass time_limit or deadline, not both")
    if info.least_seconds is not None and deadline.bounded and n >= 2 * k:
        need = float(info.least_seconds(n, X.shape[1], k))
        if not step_fits(deadline, need):
            raise BudgetError(
                f"method {name!r} cannot finish within the time limit on {n:,} records: it needs "
                f"at least about {need:,.0f} s before it can stop "
                f"({info.complexity.split(',')[0]}), {deadline.remaining():,.0f} s left; raise the "
                "time limit, or use mdav, lsearch or auto"
            )
    if n < 2 * k and info.family != "portfolio":  # one group is the only valid partition (and so
        # optimal): no method needed; a portfolio still runs its members, whose runs answer it here
        from ..labels import sse

        shape = (n, X.shape[1]) if info.per_variable else (n,)
        labels = np.zeros(shape, dtype=np.int64)
        bound = None if info.per_variable else sse(X, labels)
        return MethodOutput(labels, lower_bound=bound, extras={"trivial": True})
    report = as_callback(progress)
    with uncharged_compilation(deadline, report):
        out = info.func(X, k, seed=seed, deadline=deadline, progress=report, **values)
    if not isinstance(out, MethodOutput):
        out = MethodOutput(np.asarray(out))
    return out


#: The warm-up run of ``load_kernels``: records (random normal), k and its time limit (seconds;
#: auto stops early once column generation proves the sample's partition optimal).
WARM_UP_RECORDS, WARM_UP_K, WARM_UP_SECONDS = 40, 3, 5.0
_WARM: set = set()  # (method, size class) warmed up in this process
_UNCHARGED = threading.local()  # .active: a run in this thread already watches numba's compilations


def _size_class(records: int) -> int:
    """Half a decade of records (kernels are chosen by size: brute force or a tree, ...)."""
    return int(2 * math.log10(max(int(records), 1)))


def load_kernels(
    name: str, shape: tuple | None = None, progress=None, deadline: Deadline | None = None
) -> None:
    """Run the package's method ``name`` on a small random input, once per process and size class,
    so that the numba kernels its run on data of ``shape`` (records, attributes) will call are
    loaded from the on-disk cache (compiled, on the first run after an install) before a caller
    starts its clock: kernels are chosen as for that many records (``kernels.jit.planning``),
    and a time limit is then spent on the search, in a fresh process as in a warm one. Measured
    (census, k = 3, time limit 1 s, fresh processes): loading counted in the limit, auto reached
    IL 4.7588 / 4.795 against icsm alone 4.791. ``progress`` (a callback, or True: one line on
    stderr) hears ``COMPILING`` once if numba compiles. Best effort: a method that cannot run on
    the sample loads its kernels at its real call, which does not charge it to its deadline
    either (``uncharged_compilation``). ``deadline``: a caller's clock, already running, moved
    later by the seconds this takes (``Deadline.extend``: loading is outside any budget)."""
    started = time.monotonic()
    try:
        _load_kernels(name, shape, progress)
    finally:
        if deadline is not None:
            deadline.extend(time.monotonic() - started)


def _load_kernels(name: str, shape: tuple | None, progress) -> None:
    info = get(name)
    records = WARM_UP_RECORDS if shape is None else int(shape[0])
    key = (name, _size_class(records))
    if key in _WARM or not info.func.__module__.startswith(__name__ + "."):
        return  # a caller's own method: not run behind its back
    _WARM.add(key)
    from ..kernels.jit import planning, warming_up

    report = compile_notice() if progress is True else as_callback(progress)
    X = np.random.default_rng(0).normal(size=(WARM_UP_RECORDS, 3 if info.multivariate else 1))
    from ..errors import CompilationWarning

    with (
        warnings.catch_warnings(),
        planning(records),
        warming_up(),
        uncharged_compilation(None, report),
    ):
        warnings.simplefilter("ignore")  # the sample's own warnings are not the caller's ...
        warnings.simplefilter("default", CompilationWarning)  # ... that it compiles is
        try:
            run(name, X, WARM_UP_K, seed=0, time_limit=WARM_UP_SECONDS)
        except Exception:  # noqa: BLE001  (its real call reports any problem)
            pass


@contextlib.contextmanager
def uncharged_compilation(deadline: Deadline | None, progress):
    """Within the block, numba compiling a kernel (the first run after an install, or a kernel
    the warm-up did not reach) is announced once on ``progress`` (stage ``COMPILING``) and not
    charged to ``deadline``: the seconds it takes move the deadline's start and end later
    (``Deadline.extend``), so neither the time limit nor the reported seconds count it. Only
    compilations in the calling thread count; nested runs in the same thread are watched once."""
    if getattr(_UNCHARGED, "active", False):
        yield
        return
    from numba.core import event

    me = threading.get_ident()
    from ..kernels.jit import kernel_name, uncompiled_kernels

    state = {"depth": 0, "since": 0.0, "announced": False, "compiled": 0, "ahead": 0}

    class Watch(event.Listener):
        def on_start(self, ev):
            if threading.get_ident() != me:
                return
            if state["depth"] == 0:
                state["since"] = time.monotonic()
            if not state["announced"]:
                state["announced"] = True
                _announce_compilation(progress)
                state["ahead"] = uncompiled_kernels()
            else:  # the bar over the kernels compiled (at most ``ahead`` compile: only what runs)
                state["compiled"] += 1
                done, ahead = state["compiled"], max(state["ahead"], state["compiled"] + 1)
                fraction = min(done / ahead, 0.99) if state["ahead"] else None
                name = kernel_name(ev.data.get("dispatcher") if ev.data else None)
                progress(COMPILING, fraction, f"kernel {done + 1}: {name}")
            state["depth"] += 1

        def on_end(self, ev):
            if threading.get_ident() != me:
                return
            state["depth"] -= 1
            if state["depth"] == 0 and deadline is not None:
                deadline.extend(time.monotonic() - state["since"])

    _UNCHARGED.active = True
    try:
        with event.install_listener("numba:compile", Watch()):
            yield
    finally:
        _UNCHARGED.active = False


#: the first call's first line when no progress is shown (a warning: ``CompilationWarning``)
COMPILING_NOTICE = (
    "microagg is compiling the numba kernels this call runs: once after an install (tens of"
    " seconds on a large input; later calls load them from the cache); `microagg compile` compiles"
    " them all ahead"
)


#: set while ``compiling.compile_all`` runs: its own bar and closing line say what compiles, and
#: the first call's notice (which names that very command) is not given. Process-wide, not a
#: context variable: a step's publication reads back and audits in threads of its own
_COMPILING_ALL = {"depth": 0}
_COMPILING_ALL_LOCK = threading.Lock()


@contextlib.contextmanager
def compiling_all():
    with _COMPILING_ALL_LOCK:
        _COMPILING_ALL["depth"] += 1
    try:
        yield
    finally:
        with _COMPILING_ALL_LOCK:
            _COMPILING_ALL["depth"] -= 1


def _announce_compilation(progress) -> None:
    """The first compilation of a call: on the progress channel, or, when it shows nothing, as a
    ``CompilationWarning`` (the notebook's and the script's first line)."""
    if progress is silent and _COMPILING_ALL["depth"]:
        return
    if progress is silent:
        from ..errors import CompilationWarning

        warnings.warn(COMPILING_NOTICE, CompilationWarning, stacklevel=_callers_level())
    else:
        progress(COMPILING, None, "first run only")


def _callers_level() -> int:
    """The stack level of the first frame outside microagg, numba and the standard library: the
    warning points at the caller's line (``res = microaggregate(...)``), not at numba's
    compiler."""
    import os
    import sysconfig

    import numba

    inside = (  # the package, numba's compiler and the standard library's context managers
        os.path.dirname(os.path.dirname(__file__)),
        os.path.dirname(numba.__file__),
        sysconfig.get_paths()["stdlib"],
    )
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 2


class _RegistryModule(types.ModuleType):
    """Lets ``microagg.methods()`` list the names while ``microagg.methods.run`` etc. stay
    usable."""

    def __call__(self) -> list[str]:
        return names()


sys.modules[__name__].__class__ = _RegistryModule
# Param(kind="method") values are checked against the registry
provide_choices("method", names, lambda name: _find(name) is not None)
