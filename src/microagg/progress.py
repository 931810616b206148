"""One progress channel: a callback ``progress(stage, fraction=None, message="")``.

``stage`` names what runs ("mdav", "block 3/40", "auto: icsm"), ``fraction`` is the share done
in [0, 1] or None when unknown, ``message`` is free text. Methods, the portfolio, strata and
blocks all report through it; nothing in the package prints. ``progress=True`` in the API shows
the calls where the caller looks (``channel``): a bar on a terminal's stderr (rich), an HTML bar
in a notebook (IPython's display, updated in place: no ipywidgets needed, no warning), and
plain lines on stderr when it is a pipe or a log file; ``progress=callable`` receives them.
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
    "in_notebook",
    "notebook_bar",
    "plain_lines",
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

    told = []

    def notice(stage: str, fraction: float | None = None, message: str = "") -> None:
        if stage == COMPILING and not told:  # once: the kernels' steps that follow are not lines
            told.append(stage)
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


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython's ZMQ shell: Jupyter, VS Code, ...)."""
    if "ipykernel" not in sys.modules or "IPython" not in sys.modules:
        return False
    shell = sys.modules["IPython"].get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def channel(progress, time_limit: float | None = None, description: str = "microagg"):
    """The callback for a run: ``True`` shows the progress for the duration of the block where
    the caller looks: a notebook's HTML bar, a terminal's bar, or plain lines on stderr."""
    if progress is not True:
        yield as_callback(progress)
        return
    if in_notebook():
        shown = notebook_bar(time_limit, description)
    elif _isatty(sys.stderr):
        shown = stderr_bar(time_limit, description)
    else:
        shown = plain_lines(description)
    with shown as callback:
        yield callback


@contextlib.contextmanager
def plain_lines(description: str = "microagg", stream=None):
    """Progress as plain lines on ``stream`` (stderr): a line when the stage changes or its share
    done passes another tenth, and the compile notice; nothing redrawn (a pipe, a log file)."""
    lock = threading.Lock()
    last = {"stage": None, "tenth": -1}

    def callback(stage: str, fraction: float | None = None, message: str = "") -> None:
        out = sys.stderr if stream is None else stream
        tenth = -1 if fraction is None else int(10 * min(max(float(fraction), 0.0), 1.0))
        with lock:
            if stage == last["stage"] and tenth <= last["tenth"]:
                return
            last["stage"], last["tenth"] = stage, tenth
        if stage == COMPILING:
            line = f"{description}: {COMPILING}, {message or 'first run only'}..."
        else:
            share = "" if fraction is None else f" {10 * max(tenth, 0)}%"
            line = f"{description}: {stage}{share}" + (f" ({message})" if message else "")
        print(line, file=out, flush=True)

    yield callback


@contextlib.contextmanager
def notebook_bar(time_limit: float | None = None, description: str = "microagg"):
    """A progress bar in a notebook: an HTML ``<progress>`` element shown with IPython's display
    and updated in place (at most five times a second), left showing the time taken."""
    import html

    from IPython.display import HTML, display

    state = {"fraction": None, "text": description, "shown": 0.0}
    t0 = time.monotonic()
    handle = display(HTML(_bar_html(0.0, description, 0.0)), display_id=True)
    lock = threading.Lock()

    def draw(force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - state["shown"] < 0.2:
            return
        state["shown"] = now
        done = _completed(state["fraction"], t0, time_limit)
        handle.update(HTML(_bar_html(done, html.escape(state["text"]), now - t0)))

    def callback(stage: str, fraction: float | None = None, message: str = "") -> None:
        with lock:
            if fraction is not None:
                state["fraction"] = min(max(float(fraction), 0.0), 1.0)
            text = f"{description}: {stage}" if stage else description
            state["text"] = f"{text} {str(message)[:60]}".strip()
            draw(force=stage == COMPILING)

    try:
        yield callback
    finally:
        state["fraction"], state["text"] = 1.0, f"{description}: done"
        draw(force=True)


def _bar_html(done: float, text: str, seconds: float) -> str:
    return (
        f'<div class="microagg-progress"><progress value="{done:.3f}" max="1"'
        f' style="width:40%"></progress> <span>{text} ({seconds:.1f} s)</span></div>'
    )
