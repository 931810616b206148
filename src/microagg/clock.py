"""One clock for a run: ``time_limit`` is the wall-clock budget of the whole call (the method's
compiled kernels are loaded before it starts, once per process: ``methods.load_kernels``; numba
compiling during the run is not counted either: ``methods.uncharged_compilation``).

A ``Deadline`` is created once, from the caller's ``time_limit``, and handed down. Whatever
divides the run (strata, blocks, portfolio members, an initial method inside a local search)
takes a child with ``share``, the one rule for sharing time:

    a sub-task worth ``weight`` of the ``remaining_weight`` still to do gets
    ``remaining_seconds · weight / remaining_weight``, starting now, and never ends after its parent.

Time a sub-task leaves unused therefore flows to the ones after it. A child of an unbounded
deadline is unbounded. Methods ask ``expired()`` between steps; a method that cannot stop inside
a step declares ``interruptible=False`` at registration (see ``microagg.methods``).
"""

from __future__ import annotations

import math
import threading
import time

__all__ = ["Deadline", "mark_command_thread", "in_command_thread"]


class Deadline:
    """An absolute end time on the monotonic clock (``None``: no limit).

    ``cap``: the end is a ceiling the call set itself (a method's ``default_budget`` when the
    caller gave no time limit), not a budget the caller asked to use: work that would only fill
    the time (auto's ``improve``) is not started for it. Children inherit it.
    """

    __slots__ = ("end", "start", "cap")

    def __init__(self, time_limit: float | None = None, cap: bool = False):
        self.start = time.monotonic()
        self.end = None if time_limit is None else self.start + max(float(time_limit), 0.0)
        self.cap = bool(cap) and self.end is not None

    @classmethod
    def of(cls, value) -> "Deadline":
        """A Deadline from a Deadline (itself), a number of seconds or None (unbounded)."""
        return value if isinstance(value, Deadline) else cls(value)

    @property
    def bounded(self) -> bool:
        return self.end is not None

    def remaining(self) -> float:
        """Seconds left (``inf`` when unbounded, 0 once expired)."""
        return math.inf if self.end is None else max(self.end - time.monotonic(), 0.0)

    def seconds(self) -> float | None:
        """Seconds left, or None when unbounded (for libraries that take a time limit)."""
        return None if self.end is None else self.remaining()

    def room_for(self, seconds: float) -> bool:
        """Whether a step expected to take ``seconds`` (e.g. the longest such step so far) can
        still start: not expired, and unbounded or at least that much time left. A method whose
        steps cannot be interrupted asks this before each one, so it overruns by at most the
        error of that expectation instead of a whole step."""
        return not self.expired() and (self.end is None or self.remaining() >= seconds)

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def expired(self) -> bool:
        return self.end is not None and time.monotonic() >= self.end

    def stop(self) -> bool:
        """End now, e.g. from another thread that proved the answer optimal: the next
        ``expired()`` is True. Children shared before keep their own end. Returns whether this
        ended it early (False: it had already expired)."""
        now = time.monotonic()
        early = self.end is None or now < self.end
        self.end = now if self.end is None else min(self.end, now)
        return early

    def extend(self, seconds: float) -> None:
        """Move the start and the end ``seconds`` later: time the call spent outside its budget
        (loading or compiling the method's kernels), which ``elapsed`` then does not count either.
        Children shared before keep their own end."""
        seconds = max(float(seconds), 0.0)
        self.start += seconds
        if self.end is not None:
            self.end += seconds

    def share(self, weight: float, remaining_weight: float = 1.0) -> "Deadline":
        """Child deadline for a sub-task worth ``weight`` of ``remaining_weight`` (module docstring)."""
        child = Deadline.__new__(Deadline)
        child.start = time.monotonic()
        child.cap = self.cap
        if self.end is None:
            child.end = None
        else:
            part = 1.0 if remaining_weight <= 0 else min(max(weight / remaining_weight, 0.0), 1.0)
            child.end = min(self.end, child.start + self.remaining() * part)
        return child

    def __reduce__(self):
        # crossing a process boundary (Dask workers): the monotonic clock is per process, so
        # send what is left and restart it on arrival
        return (Deadline, (self.seconds(), self.cap))

    def __repr__(self) -> str:
        return "Deadline(unbounded)" if self.end is None else f"Deadline({self.remaining():.3f} s left)"


def mark_command_thread(thread: threading.Thread) -> None:
    """Mark ``thread`` as running a whole command in place of the main thread (the command line
    runs each command in a worker thread, so that Ctrl-C is handled at once): what would run a
    second thread beside the main one (auto's column-generation lane) does so there too."""
    thread.microagg_command = True


def in_command_thread() -> bool:
    """The main thread, or a thread marked by ``mark_command_thread``; not a worker of a pool
    (Dask's threaded blocks, a server), where others run beside it."""
    t = threading.current_thread()
    return t is threading.main_thread() or getattr(t, "microagg_command", False)
