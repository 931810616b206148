"""The processor's cycle counter inside numba kernels, and cycle budgets from seconds: a kernel
that must stop at a time limit compares ``cycles()`` with ``budget_cycles(seconds)`` cycles after
its start (numba code cannot read the clock itself)."""

from __future__ import annotations

import time

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .jit import kernel

__all__ = ["cycles", "budget_cycles", "stop_cycle_after", "past"]


@intrinsic
def cycles(typingctx):
    """The processor's cycle counter (LLVM readcyclecounter: rdtsc on x86); only compared with
    another reading, never part of a result."""

    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(64), []), "llvm.readcyclecounter"
        )
        return builder.call(fn, [])

    return types.int64(), codegen


@kernel(inline="always")
def stop_cycle_after(budget):
    """The counter's reading at which a kernel given ``budget`` cycles stops (0: no budget)."""
    return cycles() + budget if budget > 0 else 0


@kernel(inline="always")
def past(stop_cycle):
    """Whether the counter has passed ``stop_cycle`` (never, for 0: no budget)."""
    return stop_cycle > 0 and cycles() > stop_cycle


@kernel
def _read_cycles():
    return cycles()


_CYCLES_PER_SECOND: list = []


def budget_cycles(seconds) -> int:
    """The cycles in ``seconds`` (None or not finite: 0, no budget; at least 1 otherwise, so that
    an exhausted budget still stops the kernel): the counter's rate is measured once per process
    against the monotonic clock (10 ms). Where the counter does not tick (LLVM gives 0 on some
    processors), 0: the kernel runs to completion."""
    if seconds is None or not np.isfinite(seconds):
        return 0
    if not _CYCLES_PER_SECOND:
        _read_cycles()
        t0, c0 = time.perf_counter(), _read_cycles()
        while time.perf_counter() - t0 < 0.01:
            pass
        _CYCLES_PER_SECOND.append((_read_cycles() - c0) / (time.perf_counter() - t0))
    rate = _CYCLES_PER_SECOND[0]
    if rate < 1e6:
        return 0
    cycles = seconds * rate
    if (
        cycles >= 2.0**62
    ):  # a limit beyond any run (1e12 s, 1e300 s): no budget, never an int64 overflow
        return 0
    return max(1, int(cycles))
