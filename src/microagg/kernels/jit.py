"""The one numba switch: every kernel of the package is compiled by ``kernel`` (issue 32 item 5;
fast_hdbscan's ``variables.py`` is the model), so caching, the GIL and floating-point rules are
set here once instead of in each decorator.

* ``CACHE``: compiled kernels are written to numba's on-disk cache (``NUMBA_CACHE_DIR`` or
  ``__pycache__``) and loaded by later processes; a fresh install compiles each kernel once, on
  the first run that needs it. ``MICROAGG_NUMBA_CACHE=0`` turns the cache off (a read-only
  install that cannot write beside the package and sets no ``NUMBA_CACHE_DIR``, or debugging).
* ``NOGIL``: every kernel releases the GIL, so Dask's threaded blocks, auto's column-generation
  lane and the front ends' cancel threads run beside it.
* ``FASTMATH`` stays off: it lets LLVM reorder sums, which changes distances in the last bit and
  so labels (the tree and plain MDAV kernels are tested to give the same labels bit for bit).
* One specialisation per argument type: a kernel called from another kernel with a constant
  (``build(X, LEAF_SIZE)``, ``_take_group(..., 0, ...)``) is compiled for ``int64`` as a call
  from Python is, not once more for ``Literal[int](32)`` (``_no_literal_specialisation``).
"""

from __future__ import annotations

import contextlib
import contextvars
import os

from numba import njit, types

__all__ = [
    "kernel",
    "CACHE",
    "NOGIL",
    "FASTMATH",
    "planned_records",
    "planning",
    "warming_up",
    "in_warm_up",
    "compile_ahead",
    "tree_leaf_size",
    "uncompiled_kernels",
    "kernel_name",
]

CACHE = os.environ.get("MICROAGG_NUMBA_CACHE", "1").strip() != "0"
NOGIL = True
FASTMATH = False


def kernel(func=None, *, inline: str = "never", parallel: bool = False):
    """``@kernel`` or ``@kernel(inline="always")``: numba's ``njit`` with the package's switches.

    inline="always" inlines the function into its numba callers (small helpers of hot loops);
    parallel=True compiles ``prange`` loops for numba's threading layer."""
    options = {"cache": CACHE, "nogil": NOGIL, "fastmath": FASTMATH}
    if inline != "never":
        options["inline"] = inline
    if parallel:
        options["parallel"] = True
    decorate = njit(**options)

    def compile_kernel(f):
        return _no_literal_specialisation(decorate(f))

    return compile_kernel if func is None else compile_kernel(func)


def _no_literal_specialisation(dispatcher):
    """``dispatcher`` typed with plain types when another kernel calls it: numba types a constant
    argument in a kernel as a literal (``Literal[int](0)``) and compiles the callee once more for
    it, beside the ``int64`` version that calls from Python use. The first ``microagg demo``
    (empty cache, issue 35) compiled 13 kernels twice so (kdtree.build_subset, maxdist._grow,
    pricing._expand_node, ...); md's first run compiled 3.34 s before, 2.45 s after. The
    literal's value only let LLVM fold a constant: the results are the same."""
    typed_as = dispatcher.get_call_template

    def get_call_template(args, kws):
        return typed_as(
            tuple(types.unliteral(a) for a in args), {k: types.unliteral(v) for k, v in kws.items()}
        )

    dispatcher.get_call_template = get_call_template
    return dispatcher


_PLANNED = contextvars.ContextVar("microagg_planned_records", default=0)


@contextlib.contextmanager
def _set_within(var: contextvars.ContextVar, value):
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def planning(records: int):
    """Within the block, kernels are chosen as for ``records`` records (``planned_records``): a
    warm-up on a small sample (``methods.load_kernels``) then compiles or loads the kernels that
    the real run will call, not those of a small input."""
    return _set_within(_PLANNED, int(records))


_WARMING_UP = contextvars.ContextVar("microagg_warming_up", default=False)


def warming_up():
    """Within the block a method runs on a sample for its kernels only (``methods.load_kernels``):
    its threads need no probe of the cores (``cores.threads_to_use``: 0.1 s a probe, a tenth of
    a warm default call), since the split kernel's signature is the same on any number."""
    return _set_within(_WARMING_UP, True)


def in_warm_up() -> bool:
    return _WARMING_UP.get()


def planned_records(n: int) -> int:
    """The number of records to choose a kernel for: n, or more inside ``planning``."""
    return max(int(n), _PLANNED.get())


def tree_leaf_size(n: int, leaf_size: int, scan_max_n: int) -> int | None:
    """A KD-tree's leaf size for a kernel on ``n`` records (planned, ``planned_records``), or None
    up to ``scan_max_n``: the kernel then scans the records instead (the tree's queries return
    exactly what the scan in record order returns), and numba prunes the tree's branches, so the
    tree's kernels are not compiled for small data (``microagg demo``'s first run)."""
    return leaf_size if planned_records(n) > scan_max_n else None


def compile_ahead(dispatcher, signature: tuple) -> None:
    """Compile ``dispatcher`` for the argument types ``signature`` now, without calling it, or load
    it from numba's on-disk cache: another process (``microagg demo``'s other core) can compile a
    kernel that a long run reaches late, and the run then loads it. Worth it only when the types
    are exactly those of the real call (a kernel's one signature, declared beside it and held to
    its call by a test): other types compile a specialisation nothing calls."""
    dispatcher.compile(tuple(signature))


def uncompiled_kernels() -> int:
    """How many of the package's kernels in the modules loaded so far have no compiled (or
    cache-loaded) version yet: at most that many compile in the run ahead (numba compiles only
    what is called), the denominator of the first call's compile bar."""
    import sys

    from numba.core.registry import CPUDispatcher

    count = 0
    for name, module in list(sys.modules.items()):
        if name.startswith(f"{__package__}.") and module is not None:
            count += sum(
                1
                for obj in vars(module).values()
                if isinstance(obj, CPUDispatcher) and not obj.overloads
            )
    return count


def kernel_name(dispatcher) -> str:
    """A compiling kernel's name as a progress message shows it (``module.function``)."""
    func = getattr(dispatcher, "py_func", None)
    if func is None:
        return "a kernel"
    return f"{func.__module__.rsplit('.', 1)[-1]}.{func.__name__}"
