"""How many cores a kernel may use now, and numba's threads for the passes it splits.

A kernel split between threads waits for its slowest thread at every pass; when other processes
hold the cores, that thread is often off the core, and the split costs more than it saves (issue
35 measured a two-thread MDAV 5–12× slower than one thread under two busy processes). So a split
is made only on cores that a short probe finds idle (``idle_cores``), on numba's OpenMP layer
where it loads (its regions start fast; workqueue's otherwise, ``_choose_layer``), and one split
runs at a time in a process (``split_threads``).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time

__all__ = [
    "usable_cores",
    "idle_cores",
    "threads_to_use",
    "split_threads",
    "start_probe",
    "end_probe",
]

#: the probe's window, in seconds: /proc/stat counts in ticks of 10 ms, so 0.1 s over two cores
#: gives 20 ticks, enough to tell 0, 1 and 2 idle cores apart
PROBE_SECONDS = 0.1
#: a core counts as free from this idle share on: 1.7 idle cores of two make two free cores, 1.6
#: make one (a thread on a core that another process holds a fifth of the time waits for it often)
IDLE_SHARE = 0.85

#: a probe started this long ago or longer (``start_probe``) is not finished: a new one is made.
#: A first call's window (its kernels loading) takes 0.5-1 s on a quiet machine, 2-7 s at load 6;
#: a longer window averages the idle cores over more time, and the run checks them as it goes
PROBE_FRESH_SECONDS = 3.0
_STARTED = contextvars.ContextVar("microagg_probe_started", default=None)

_SPLIT_LOCK = threading.Lock()  # the workqueue layer (the fallback) runs one region at a time
#: the process whose split started numba's threads: a child forked from it inherits a thread pool
#: whose threads it does not have (GNU OpenMP is not fork-safe), so it never splits
_POOL_PID: list[int] = []


def usable_cores() -> list[int]:
    """The cores this process may run on (its affinity mask, else every core)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def _idle_ticks(cores: list[int]) -> tuple[int, int] | None:
    """(idle, total) ticks so far over ``cores``, from /proc/stat (None where it cannot be read)."""
    try:
        with open("/proc/stat") as stat:
            lines = stat.read().splitlines()
    except OSError:
        return None
    idle = total = 0
    wanted = {f"cpu{c}" for c in cores}
    for line in lines:
        fields = line.split()
        if fields and fields[0] in wanted:
            ticks = [int(v) for v in fields[1:]]
            idle += ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
            total += sum(ticks[:8])  # guest time is counted within user time
    return (idle, total) if total else None


def idle_cores(cores: list[int] | None = None, seconds: float = PROBE_SECONDS) -> float:
    """How many of ``cores`` (default: the usable ones) were idle over the last ``seconds``,
    measured by sleeping that long (/proc/stat; elsewhere the load average's complement)."""
    cores = usable_cores() if cores is None else cores
    before = _idle_ticks(cores)
    if before is None:
        try:
            return max(0.0, len(cores) - os.getloadavg()[0])
        except (AttributeError, OSError):
            return 0.0
    time.sleep(seconds)
    after = _idle_ticks(cores)
    if after is None or after[1] <= before[1]:
        return 0.0
    return len(cores) * (after[0] - before[0]) / (after[1] - before[1])


def start_probe():
    """Start the probe of the idle cores now, in this thread: a call that decides its threads
    later in the same thread (``threads_to_use``, within ``PROBE_FRESH_SECONDS``) finishes it
    instead of sleeping through a probe of its own, so that the probe's window covers the work
    before the kernel (a first call's kernels loading from the cache, the data's preparation)
    rather than adding ``PROBE_SECONDS`` to the call. The CPU this thread spends meanwhile counts
    as idle: it is the core the kernel's first thread will run on, as it is while the thread
    sleeps through a probe of its own. Returns the token ``end_probe`` takes when the work that
    may decide is over."""
    cores = usable_cores()
    ticks = _idle_ticks(cores)
    started = None
    if ticks is not None:
        started = (
            threading.get_ident(),
            tuple(cores),
            ticks,
            (time.monotonic(), time.thread_time()),
        )
    return _STARTED.set(started)


def end_probe(token) -> None:
    """The probe ``start_probe`` started, if still unused, is no longer offered."""
    _STARTED.reset(token)


def _finish_probe(cores: list[int]) -> float | None:
    """The idle cores over the window ``start_probe`` opened in this thread, at least
    ``PROBE_SECONDS`` long (a sleep makes up what the work before did not take), this thread's
    CPU counted as idle; None when no fresh probe was started here (the started one is used
    once)."""
    started = _STARTED.get()
    if started is None:
        return None
    _STARTED.set(None)
    thread, probed, before, (since, cpu) = started
    if thread != threading.get_ident() or probed != tuple(cores):
        return None
    if time.monotonic() - since > PROBE_FRESH_SECONDS:
        return None
    rest = PROBE_SECONDS - (time.monotonic() - since)
    if rest > 0:
        time.sleep(rest)
    after = _idle_ticks(cores)
    if after is None or after[1] <= before[1]:
        return None
    own = (time.thread_time() - cpu) * os.sysconf("SC_CLK_TCK")  # in /proc/stat's ticks
    total = after[1] - before[1]
    return len(cores) * min(after[0] - before[0] + own, total) / total


def threads_to_use(threads: int | None) -> int:
    """The number of threads a split kernel runs on: ``threads`` if given (at most numba's), else
    the idle cores found by the probe, at least 1 (``IDLE_SHARE``)."""
    import numba

    most = numba.config.NUMBA_NUM_THREADS
    if threads is not None:
        return max(1, min(int(threads), most))
    from .jit import in_warm_up

    cores = usable_cores()
    if len(cores) < 2 or most < 2 or in_warm_up():  # nothing to split, or a warm-up: no probe
        return 1
    idle = _finish_probe(cores)
    free = int((idle_cores(cores) if idle is None else idle) / IDLE_SHARE)
    return max(1, min(free, len(cores), most))


def _choose_layer() -> None:
    """numba's OpenMP layer ('omp') where it loads, else its workqueue layer, unless the user
    chose a layer (NUMBA_THREADING_LAYER) or numba's threads already run. A region of two threads
    costs about 1.5 us to start on 'omp' (GNU OpenMP's threads spin a while, then sleep) against
    74 us on 'workqueue' (its threads sleep on a condition variable): MDAV's tree kernel starts a
    region a pair of groups (``mdav_tree._split_pair``), 1–2.5 ms of work at 10^6 records, and
    its brute-force passes one a pass. The spinning costs CPU (benchmarks/results/parallel_mdav.md
    gives the CPU seconds beside the wall) and would cost speed on a busy core: a split is made
    only on cores the probe finds idle, and the kernels' checks go back to one thread when the
    split turns slower (``mdav_split._pair_split_now``, ``mdav_split._split_now``)."""
    import numba
    from numba.np.ufunc import parallel

    if "NUMBA_THREADING_LAYER" not in os.environ and not parallel._is_initialized:
        numba.config.THREADING_LAYER_PRIORITY = ["omp", "workqueue", "tbb"]
        numba.config.THREADING_LAYER = "default"


@contextlib.contextmanager
def split_threads(threads: int):
    """Within the block, numba's parallel regions started by this thread run on ``threads``
    threads (at most numba's); yields the number granted: 1 if ``threads`` is 1, another split
    runs in the process, or the process was forked from one whose split started numba's threads
    (the caller then runs its one-thread kernel)."""
    import numba

    threads = min(threads, numba.config.NUMBA_NUM_THREADS)
    forked = bool(_POOL_PID) and _POOL_PID[0] != os.getpid()
    if threads < 2 or forked or not _SPLIT_LOCK.acquire(blocking=False):
        yield 1
        return
    try:
        _choose_layer()
        _POOL_PID[:] = [os.getpid()]
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            yield threads
        finally:
            numba.set_num_threads(before)
    finally:
        _SPLIT_LOCK.release()
