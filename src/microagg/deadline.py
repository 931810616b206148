"""One clock for a run: ``time_limit`` is the wall-clock budget of the whole call (the method's
compiled kernels are loaded before it starts, once per process: ``methods.load_kernels``; numba
compiling during the run is not counted either: ``methods.uncharged_compilation``).

A ``Deadline`` is created once, from the caller's ``time_limit``, and handed down. Whatever
divides the run (strata, blocks, portfolio members, an initial method inside a local search)
takes a child with ``share``, the one rule for sharing time:

    a sub-task worth ``weight`` of the ``remaining_weight`` still to do gets
    ``remaining_seconds · weight / remaining_weight``, starting now, and never ends after its
    parent.

Time a sub-task leaves unused therefore flows to the ones after it. A child of an unbounded
deadline is unbounded. Methods ask ``expired()`` between steps; a method that cannot stop inside
a step declares ``interruptible=False`` at registration (see ``microagg.methods``).

A Deadline may also hold a **work budget** (``work``: units of deterministic work, the run option
``work``): methods ``charge`` the units each step did (what a unit is, per method:
docs/reproducibility.md) and ``expired()`` is also True once the budget is spent. Work is shared
by the same rule as time (``share``), so a run bounded by work alone stops at the same step
whatever the machine's load: it is reproducible. Kernels never see a time budget then
(``bounded`` is about the clock only), and each step runs to its end. A time limit on top is a
safety cap; when it is what ends a step, ``time_cut`` is set on the whole family and the run is
reported "stopped by the time limit: not reproducible".
"""

from __future__ import annotations

import math
import threading
import time

__all__ = [
    "Deadline",
    "mark_command_thread",
    "in_command_thread",
    "TIME_CUT_NOTE",
    "UNITS_PER_SECOND",
    "work_budget",
    "BEYOND_ANY_RUN",
    "no_bound_beyond_any_run",
]

#: A time limit of this many seconds (about 32 years) or more is beyond any run: no limit, like
#: ``inf`` (docs/publication.md). Without it, ``1e300`` would be a budget that auto's ``improve``
#: and the local searches try to fill, and a run would never end.
BEYOND_ANY_RUN = 1e9


def no_bound_beyond_any_run(seconds):
    """``seconds``, or None (no limit) for None, ``inf`` and any limit beyond any run."""
    if seconds is None or float(seconds) >= BEYOND_ANY_RUN:
        return None
    return seconds


#: Work units a quiet reference machine does in a second (one unit is about one record visited by
#: one step of a local search; each method weighs its steps to match, docs/reproducibility.md).
#: Measured with benchmarks/reproducible.py; only sizes the budgets microagg sets itself.
UNITS_PER_SECOND = 150_000.0


def work_budget(records: int, passes: float, seconds: float) -> float:
    """A work budget sized from the data: ``passes`` passes over ``records`` records, at most what
    the reference machine does in ``seconds`` (a function of the input's size alone, so a run
    bounded by it gives the same result at any load)."""
    return float(max(min(passes * max(int(records), 1), seconds * UNITS_PER_SECOND), 1.0))


#: What the summary, the audit and the manifest say when the time limit ended a run
TIME_CUT_NOTE = "stopped by the time limit: not reproducible"


class Deadline:
    """An absolute end time on the monotonic clock (``None``: no limit).

    ``cap``: the end is a ceiling the call set itself (a method's ``default_work`` when the
    caller gave no time limit), not a budget the caller asked to use: work that would only fill
    the time (auto's ``improve``) is not started for it. Children inherit it.
    """

    __slots__ = ("end", "start", "cap", "work", "spent", "parent", "family", "stopped")

    def __init__(
        self, time_limit: float | None = None, cap: bool = False, work: float | None = None
    ):
        self.start = time.monotonic()
        time_limit = no_bound_beyond_any_run(time_limit)
        self.end = None if time_limit is None else self.start + max(float(time_limit), 0.0)
        self.work = None if work is None else max(float(work), 0.0)
        self.spent = 0.0
        self.parent = None
        self.family = {"time_cut": False}  # shared by every child: did the clock end a step?
        self.stopped = False  # ended on purpose (``stop``), not by the clock
        self.cap = bool(cap) and (self.end is not None or self.work is not None)

    @classmethod
    def of(cls, value) -> Deadline:
        """A Deadline from a Deadline (itself), a number of seconds or None (unbounded)."""
        return value if isinstance(value, Deadline) else cls(value)

    @property
    def bounded(self) -> bool:
        """Bounded by the clock (a time limit); see ``limited`` for any bound."""
        return self.end is not None

    @property
    def work_bounded(self) -> bool:
        return self.work is not None

    @property
    def limited(self) -> bool:
        """Bounded by time or by work: the run stops before it converges."""
        return self.end is not None or self.work is not None

    @property
    def time_cut(self) -> bool:
        """Whether the clock ended a step of this run (or of a run sharing its family)."""
        return self.family["time_cut"]

    def charge(self, units: float) -> None:
        """Count ``units`` of work done, here and in every parent (budgets shared by ``share``)."""
        node = self
        while node is not None:
            node.spent += units
            node = node.parent

    def work_left(self) -> float:
        """Units left of the work budget (``inf`` without one, 0 once spent)."""
        return math.inf if self.work is None else max(self.work - self.spent, 0.0)

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
        if self.expired():
            return False
        if self.end is None or self.remaining() >= seconds:
            return True
        self.family["time_cut"] = True
        return False

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def expired(self) -> bool:
        if self.work is not None and self.spent >= self.work:
            return True
        if self.end is not None and time.monotonic() >= self.end:
            if not self.stopped:
                self.family["time_cut"] = True
            return True
        return False

    def out_of_time(self) -> bool:
        """Whether the clock has passed the end, whatever the work budget: asked inside a step that
        runs to its end under a work budget but must not overrun a time limit (mf-tsp's grouping).
        True marks the run cut by the clock (``time_cut``)."""
        if self.stopped or self.end is None or time.monotonic() < self.end:
            return False
        self.family["time_cut"] = True
        return True

    def clock_ended_step(self) -> None:
        """A step ended because its share of the time limit ran out (a check on the time left
        rather than ``expired``): the run is cut by the clock (``time_cut``), if it has a limit."""
        if self.end is not None and not self.stopped:
            self.family["time_cut"] = True

    def stop(self) -> bool:
        """End now, e.g. from another thread that proved the answer optimal: the next
        ``expired()`` is True. Children shared before keep their own end. Returns whether this
        ended it early (False: it had already expired)."""
        now = time.monotonic()
        early = (self.end is None or now < self.end) and not (
            self.work is not None and self.spent >= self.work
        )
        self.end = now if self.end is None else min(self.end, now)
        self.stopped = True
        return early

    def extend(self, seconds: float) -> None:
        """Move the start and the end ``seconds`` later: time the call spent outside its budget
        (loading or compiling the method's kernels), which ``elapsed`` then does not count either.
        Children shared before keep their own end."""
        seconds = max(float(seconds), 0.0)
        self.start += seconds
        if self.end is not None:
            self.end += seconds

    def share(
        self, weight: float, remaining_weight: float = 1.0, work_fraction: float | None = None
    ) -> Deadline:
        """Child deadline for a sub-task worth ``weight`` of ``remaining_weight`` (module
        docstring).

        ``work_fraction``: for sub-tasks that may run beside others (blocks on a Dask scheduler),
        the child's work budget is this fraction of the whole budget, whatever the others have
        spent meanwhile, so that it does not depend on the order in which they run."""
        part = 1.0 if remaining_weight <= 0 else min(max(weight / remaining_weight, 0.0), 1.0)
        if self.work is None:
            work = None
        elif work_fraction is None:
            work = self.work_left() * part
        else:
            work = self.work * min(max(float(work_fraction), 0.0), 1.0)
        return self._child(part, work)

    def _child(self, part: float, work: float | None) -> Deadline:
        child = Deadline.__new__(Deadline)
        child.start = time.monotonic()
        child.cap = self.cap
        child.work, child.spent, child.parent, child.family = work, 0.0, self, self.family
        child.stopped = False
        child.end = (
            None if self.end is None else min(self.end, child.start + self.remaining() * part)
        )
        return child

    def __reduce__(self):
        # crossing a process boundary (Dask workers): the monotonic clock is per process, so
        # send what is left and restart it on arrival
        # send what is left and restart it on arrival (work spent there is not counted back here:
        # a block's budget is its own ``portion``)
        return (
            Deadline,
            (self.seconds(), self.cap, None if self.work is None else self.work_left()),
        )

    def __repr__(self) -> str:
        parts = [] if self.end is None else [f"{self.remaining():.3f} s left"]
        if self.work is not None:
            parts.append(f"{self.work_left():.0f} work units left")
        return f"Deadline({', '.join(parts) or 'unbounded'})"


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
