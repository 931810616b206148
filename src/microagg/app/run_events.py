"""How a run's process talks to the app: progress events through its pipe, at most five a second,
and nothing on the app's terminal. Shared by the protect and the explore workers.
"""

from __future__ import annotations

import os
import time


def progress_sender(post, t0: float):
    """A run's progress callback that posts ("progress", stage, fraction, message, elapsed) events,
    at most five a second (and the last, at fraction 1)."""
    last = [0.0]

    def progress(stage, fraction=None, message=""):
        now = time.perf_counter()
        if now - last[0] >= 0.2 or (fraction is not None and fraction >= 1):
            last[0] = now
            post(
                (
                    "progress",
                    str(stage),
                    None if fraction is None else float(fraction),
                    str(message),
                    now - t0,
                )
            )

    return progress


def silence_stdout() -> None:
    """A run's process prints nothing on the app's terminal (solver banners write to fd 1)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
