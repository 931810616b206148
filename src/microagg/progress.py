"""One progress channel: a callback ``progress(stage, fraction=None, message="")``.

``stage`` names what runs ("mdav", "block 3/40", "auto: icsm"), ``fraction`` is the share done
in [0, 1] or None when unknown, ``message`` is free text. Methods, the portfolio, strata and
blocks all report through it; nothing in the package prints. The CLI (and ``progress=True`` in
the API) draws one bar on stderr from these calls; ``progress=callable`` receives them.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable

__all__ = [
    "ProgressCallback",
    "silent",
    "as_callback",
    "part",
    "stderr_bar",
    "channel",
    "COMPILING",
    "compile_notice",
]

ProgressCallback = Callable[..., None]

#: The stage reported while numba compiles kernels (the first run after an install, once a
#: kernel): the run's clock does not count it (``methods.uncharged_compilation``).
COMPILING = "compiling kernels"


def silent(stage: str, fraction: float | None = None, message: str = "") -> None:
    """The callback that reports nothing."""


def as_callback(progress) -> ProgressCallback:
    """None / False -> ``silent``; a callable is used as it is."""
    if progress is None or progress is False:
        return silent
    if callable(progress):
        return progress
    raise TypeError(f"progress must be a callable, True/False or None, got {progress!r}")


def compile_notice(stream=None) -> ProgressCallback:
    """The callback for a stderr that shows no bar (a log file, a pipe): one plain line when
    kernels start compiling, nothing else."""

    def notice(stage: str, fraction: float | None = None, message: str = "") -> None:
        if stage == COMPILING:
            out = sys.stderr if stream is None else stream
            print(f"microagg: {COMPILING}, {message or 'first run only'}...", file=out, flush=True)

    return notice


def part(progress: ProgressCallback, lo: float, hi: float, prefix: str = "") -> ProgressCallback:
    """A child callback whose fractions map into [lo, hi] of the parent's (a sub-task's share)."""
    if progress is silent:
        return silent

    def child(stage: str, fraction: float | None = None, message: str = "") -> None:
        f = None if fraction is None else lo + (hi - lo) * min(max(float(fraction), 0.0), 1.0)
        progress(f"{prefix}{stage}" if prefix else stage, f, message)

    return child


@contextlib.contextmanager
def stderr_bar(time_limit: float | None = None, description: str = "microagg"):
    """A rich progress bar on stderr, yielding its callback (thread-safe).

    With a fraction from the reporter the bar shows it; without one it shows elapsed / time_limit
    when there is a limit, else a spinner. The bar is transient: it leaves nothing on the terminal.
    """
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[msg]}"),
        TimeElapsedColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    )
    task = bar.add_task(description, total=1.0, msg="")
    lock = threading.Lock()
    state = {"fraction": None}
    t0 = time.monotonic()
    stop = threading.Event()

    def callback(stage: str, fraction: float | None = None, message: str = "") -> None:
        with lock:
            if fraction is not None:
                state["fraction"] = min(max(float(fraction), 0.0), 1.0)
            bar.update(
                task,
                description=f"{description}: {stage}" if stage else description,
                msg=str(message)[:60],
                completed=_completed(state["fraction"], t0, time_limit),
            )

    def tick():
        while not stop.wait(0.25):
            with lock:
                bar.update(task, completed=_completed(state["fraction"], t0, time_limit))

    thread = threading.Thread(target=tick, daemon=True)
    with bar:
        thread.start()
        try:
            yield callback
        finally:
            stop.set()
            thread.join()


def _completed(fraction, t0, time_limit) -> float:
    if fraction is not None:
        return fraction
    if time_limit:
        return min((time.monotonic() - t0) / float(time_limit), 1.0)
    return 0.0


@contextlib.contextmanager
def channel(progress, time_limit: float | None = None, description: str = "microagg"):
    """The callback for a run: ``True`` draws the stderr bar for the duration of the block."""
    if progress is True:
        with stderr_bar(time_limit, description) as callback:
            yield callback
    else:
        yield as_callback(progress)
