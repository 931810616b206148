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
"""

from __future__ import annotations

import contextlib
import contextvars
import os

from numba import njit

__all__ = ["kernel", "CACHE", "NOGIL", "FASTMATH", "planned_records", "planning"]

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
    return decorate if func is None else decorate(func)


_PLANNED = contextvars.ContextVar("microagg_planned_records", default=0)


@contextlib.contextmanager
def planning(records: int):
    """Within the block, kernels are chosen as for ``records`` records (``planned_records``): a
    warm-up on a small sample (``methods.load_kernels``) then compiles or loads the kernels that
    the real run will call, not those of a small input."""
    token = _PLANNED.set(int(records))
    try:
        yield
    finally:
        _PLANNED.reset(token)


def planned_records(n: int) -> int:
    """The number of records to choose a kernel for: n, or more inside ``planning``."""
    return max(int(n), _PLANNED.get())
