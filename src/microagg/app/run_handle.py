"""The app's runs as the page holds them: a ``RunHandle`` per protection or exploration running in
its own spawned process (``run_process.start`` is the process's target), its events read from a
one-way pipe, Cancel terminating it at once; and every run stopped with the server.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import pickle
import signal
import time
import weakref
from pathlib import Path


class RunHandle:
    """One protection (or, ``job="explore"``, one exploration: ``app.explore_runs``) running in a
    spawned process; ``poll()`` drains its events, ``cancel()`` terminates it (works inside a numba
    kernel, where no Python code can check a flag).

    The process starts in ``run_process.start``, which ties its life to this one's before any
    heavy import; events come through a one-way pipe (no semaphore left behind at a kill)."""

    def __init__(self, spec, workdir, run_id: int, job: str = "protect"):
        from . import run_process

        ctx = multiprocessing.get_context("spawn")
        self.spec = spec
        self.run_id = run_id
        self.workdir = Path(workdir)
        self.started = time.perf_counter()
        self.ended: float | None = None
        self.state = "running"  # running | done | error | cancelled
        self.stage, self.fraction, self.message = "starting", None, ""
        self.figures: dict | None = None
        self.error: str | None = None
        reader, writer = ctx.Pipe(duplex=False)
        # the spec goes as plain data: unpickling it must not import this (heavy) module first
        self.process = ctx.Process(
            target=run_process.start,
            daemon=True,
            args=(os.getpid(), dataclasses.asdict(spec), str(workdir), run_id, writer, job),
        )
        blocked = hasattr(
            signal, "pthread_sigmask"
        )  # inherited by the child until run_process ignores it
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if blocked else None
        try:
            self.process.start()
        finally:
            if blocked:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        writer.close()  # the child holds the writing end: its exit ends the pipe
        self.events = reader
        _LIVE.add(self)

    @property
    def elapsed(self) -> float:
        """Seconds since the start, until the run ended."""
        end = self.ended if self.ended is not None else time.perf_counter()
        return end - self.started

    @property
    def report_path(self) -> Path:
        return self.workdir / f"run-{self.run_id}.html"

    @property
    def result_path(self) -> Path:
        return self.workdir / f"run-{self.run_id}.pkl"

    def _drain(self, timeout: float) -> bool:
        """Handle the events that arrive within ``timeout`` seconds; False once the pipe has
        ended."""
        try:
            while self.state == "running" and self.events.poll(timeout):
                self._handle(self.events.recv())
        except (EOFError, OSError):
            return False
        return True

    def poll(self) -> str:
        """Read every pending event; returns the state."""
        if self.state != "running":
            return self.state
        self._drain(0)
        if self.state == "running" and not self.process.is_alive():
            # the process has ended: its last event may still be in the pipe for a moment
            self._drain(0.5)
            if self.state == "running":
                self.error = f"the run stopped unexpectedly (exit code {self.process.exitcode})"
                self.state = "error"
        if self.state != "running":
            self.process.join(timeout=5)
            self._close_events()
        return self.state

    def _handle(self, event) -> None:
        if event[0] == "progress":
            _, self.stage, self.fraction, self.message, _ = event
        elif event[0] == "done":
            self.figures, self.state = event[1], "done"
        elif event[0] == "error":
            self.error, self.state = event[1], "error"

    def _close_events(self) -> None:
        """Release the pipe once the run is over."""
        if self.ended is None:
            self.ended = time.perf_counter()
        if self.events is not None:
            self.events.close()
            self.events = None

    def cancel(self) -> None:
        if self.state == "running":
            self.process.terminate()
            self.process.join(timeout=5)
            if self.process.is_alive():
                self.process.kill()
                self.process.join(timeout=5)
            self.state = "cancelled"
        self._close_events()

    def load_result(self):
        with open(self.result_path, "rb") as fh:
            return pickle.load(fh)


_LIVE: weakref.WeakSet[RunHandle] = weakref.WeakSet()


def progress_line(handle: RunHandle) -> tuple[str, float | None]:
    """(the progress line of a running run, its fraction done or None): the stage and message the
    run reported, the seconds so far and of its time limit (without one, a run is bounded by work:
    auto's own cap is a work budget, not seconds)."""
    limit = handle.spec.time_limit
    elapsed = handle.elapsed
    text = f"running {handle.spec.method}: {handle.stage}"
    if handle.message:
        text += f" ({handle.message})"
    text += f" — {elapsed:.0f} s" + (f" of {limit:g} s" if limit else "")
    fraction = (
        handle.fraction
        if handle.fraction is not None
        else (min(elapsed / limit, 1.0) if limit else None)
    )
    return text, fraction


def stop_all_runs() -> None:
    """Terminate every run still going (the server is stopping)."""
    for handle in list(_LIVE):
        handle.cancel()
