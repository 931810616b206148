"""The first code a run's process executes, before any heavy import: it ties the process's life
to the app's.

A run's process is spawned (multiprocessing) and imports numpy, pandas, numba and the method
before it computes: seconds during which the app may stop (Ctrl+C, SIGTERM, a kill). Armed only
after those imports, a watch would leave the run computing for its whole time limit. So the
process's target is :func:`start` in this light module: on Linux the kernel kills the process
when the thread of the app that started it ends (``PR_SET_PDEATHSIG``); everywhere, a thread
watches that the app's process is still its parent; and a process whose app has already gone
(before either was armed) ends at once. Only then is the run's code imported.
"""

from __future__ import annotations

import os
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1


def start(parent: int, spec: dict, workdir: str, run_id: int, events, job: str = "protect") -> None:
    """multiprocessing's target: ``parent`` is the app's process id, ``spec`` a RunSpec as a dict
    (``job="explore"``: an ``explore_runs.ExploreSpec``, an exploration of the Explore tab)."""
    die_with(parent)
    if job == "explore":
        from .explore_runs import ExploreSpec, worker

        worker(ExploreSpec(**spec), workdir, run_id, events)
    else:
        from .protect_worker import worker
        from .runspec import RunSpec

        worker(RunSpec(**spec), workdir, run_id, events)


def die_with(parent: int) -> None:
    """End this process when the process ``parent`` ends (it is already gone: end now). Ctrl+C
    is the app's to handle: the app started this process with SIGINT blocked (a Ctrl+C during
    the start is pending, not a traceback on the terminal), and here it is ignored."""
    import signal

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the watch below still ends the process
            pass
    if os.getppid() != parent:  # the app ended before the kernel was told
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
