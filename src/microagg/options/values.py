"""The values of structured run options, checked: each function takes what a user gave
(an API value, or command-line text for ``parse_weights``) and returns it normalised, or raises
ValueError / ParameterError with its reason. ``options.run_options.RUN_OPTIONS`` names them as its
declarations' ``check`` and ``parse_text``.

Nothing heavy is imported here (numpy, dask.distributed: when a value needs them).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

from ..errors import ParameterError

__all__ = [
    "LOCAL_SCHEDULERS",
    "SCHEDULER_TIMEOUT",
    "MERGED_STRATA",
    "parse_weights",
    "positive_weights",
    "check_scheduler",
    "check_weights",
    "check_sample_weight",
    "check_progress",
    "check_ordinal",
    "check_missing",
    "check_column_name",
    "check_labels",
]

#: Dask's local schedulers by name (anything else is a dask.distributed address or Client)
LOCAL_SCHEDULERS = ("threads", "processes", "synchronous", "sync", "single-threaded")
#: seconds to wait for a scheduler address to answer before the run is refused
SCHEDULER_TIMEOUT = 3.0


# --- checks of structured options (each raises ValueError / ParameterError with its reason) ------

_REACHED: set = set()  # scheduler addresses that answered as Dask schedulers in this process


def _reach(address: str, host: str, port: int) -> None:
    """A TCP connection, then a dask.distributed handshake, each within SCHEDULER_TIMEOUT: an
    address where nothing listens, or something that is not a Dask scheduler, is one line."""
    import socket

    try:
        socket.create_connection((host, port), timeout=SCHEDULER_TIMEOUT).close()
    except OSError as exc:
        raise ValueError(
            f"{address} cannot be reached ({exc.strerror or exc}): start the scheduler, or check "
            "the address"
        ) from None
    import asyncio
    import logging

    from distributed.core import rpc

    async def identity():
        async with rpc(address, timeout=SCHEDULER_TIMEOUT) as scheduler:
            return await scheduler.identity()

    quiet = logging.getLogger("distributed")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        answer = asyncio.run(asyncio.wait_for(identity(), SCHEDULER_TIMEOUT))
    except Exception:  # noqa: BLE001  (whatever answered, it is not a scheduler we can use)
        answer = None
    finally:
        quiet.setLevel(level)
    if not isinstance(answer, dict) or answer.get("type") != "Scheduler":
        raise ValueError(
            f"{address} does not answer as a Dask scheduler: start the scheduler, or check the "
            "address"
        )


def check_scheduler(value):
    """A local scheduler name, a dask.distributed Client, or an address that answers now (a TCP
    connection within SCHEDULER_TIMEOUT): an unreachable cluster is one line before any work."""
    if isinstance(value, str):
        if value in LOCAL_SCHEDULERS:
            return value
        from urllib.parse import urlsplit

        scheme, _, rest = value.partition("://") if "://" in value else ("tcp", "", value)
        if scheme == "inproc":  # a cluster in this very process (tests, notebooks)
            return value
        try:
            parts = urlsplit(f"//{rest}")
            host, port = parts.hostname, parts.port
        except ValueError:
            host = port = None
        if scheme not in ("tcp", "tls", "ws", "wss") or not host or port is None:
            raise ValueError(
                f"must be one of {', '.join(LOCAL_SCHEDULERS)} or a scheduler address such as "
                f"tcp://host:8786, got {value!r}"
            )
        if value not in _REACHED:
            _reach(value, host, port)
            _REACHED.add(value)
        return value
    if callable(getattr(value, "compute", None)) and callable(getattr(value, "gather", None)):
        return value  # a dask.distributed Client
    raise ValueError(
        f"must be a scheduler name ({', '.join(LOCAL_SCHEDULERS)}), an address or a "
        f"dask.distributed Client, got {value!r}"
    )


def _number(v) -> float:
    if isinstance(v, (bool,)) or type(v).__name__ == "bool_" or not isinstance(v, numbers.Real):
        raise TypeError
    return float(v)


def check_weights(value):
    """Variable weights: one positive finite number per QI column (a sequence in column order) or
    a mapping column -> weight (columns left out weigh 1). Their count and names are checked
    against the QI columns once the data are read."""
    if isinstance(value, (str, bytes)):
        raise ParameterError(
            "weights must be numbers (one per quasi-identifier column) or a column -> weight "
            "mapping"
        )
    if isinstance(value, Mapping):
        names, raw = list(value), list(value.values())
    else:
        try:
            import numpy as np

            raw = list(np.ravel(np.asarray(value, dtype=object)))
        except (TypeError, ValueError):
            raise ParameterError(f"weights must be numbers, got {value!r}") from None
        names = None
    try:
        w = [_number(v) for v in raw]
    except TypeError:
        raise ParameterError(f"weights must be numbers, got {raw!r}") from None
    bad = [
        f"{names[j] if names else j + 1}={raw[j]!r}"
        for j, x in enumerate(w)
        if not (math.isfinite(x) and x > 0)
    ]
    if bad:
        raise ParameterError(f"weights must be positive and finite: {', '.join(bad)}")
    if not w:
        raise ParameterError("weights is empty")
    return dict(zip(names, w, strict=True)) if names is not None else w


def parse_weights(text: str):
    """--weights: "2,1,0.5" (one per QI column, in order) or "AGI=2,INCOME=0.5" (others weigh 1)."""
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise ParameterError(f"--weights has an empty item: {text!r}")
    named = ["=" in t for t in items]
    if any(named) and not all(named):
        raise ParameterError(f"--weights mixes NAME=VALUE and plain values: {text!r}")

    def number(raw, what):
        try:
            return float(raw)
        except ValueError:
            raise ParameterError(f"--weights: {what} is not a number: {raw!r}") from None

    if all(named):
        pairs = [t.split("=", 1) for t in items]
        names = [a.strip() for a, _ in pairs]
        if len(set(names)) != len(names):
            raise ParameterError(f"--weights names a column twice: {text!r}")
        return {a.strip(): number(b.strip(), f"the weight of {a.strip()}") for a, b in pairs}
    return [number(t, "a weight") for t in items]


def check_sample_weight(value):
    """A column name, or one positive finite weight per record (their count is checked with the
    data)."""
    if isinstance(value, str):
        return value
    import numpy as np

    try:
        sw = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("sample_weight must be a column name or an array of numbers") from None
    if sw.ndim != 1:
        raise ParameterError(f"sample_weight must have one value per record, got shape {sw.shape}")
    return positive_weights(sw, "sample_weight")


def positive_weights(sw, where: str):
    """Sampling weights must be positive and finite: one line naming the first bad row otherwise."""
    import numpy as np

    bad = ~(np.isfinite(sw) & (sw > 0))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ParameterError(
            f"{where} must be positive and finite: {int(bad.sum())} bad value(s), "
            f"first at row {first + 1} ({sw[first]:g})"
        )
    return sw


def check_progress(value):
    if (
        isinstance(value, bool)
        or type(value).__name__ == "bool_"
        or value is None
        or callable(value)
    ):
        return value
    raise ParameterError(f"progress must be True, False or a callable, got {value!r}")


def check_ordinal(value):
    """Ordinal columns: names, or a mapping column -> its levels from lowest to highest (None: the
    dtype's or the sorted order). Returned as that mapping."""
    if not isinstance(value, Mapping):
        return dict.fromkeys(value)
    out = {}
    for c, levels in value.items():
        if levels is not None:
            if isinstance(levels, (str, bytes)) or not hasattr(levels, "__iter__"):
                raise ParameterError(
                    f"ordinal levels of {c} must be a list (lowest first), got {levels!r}"
                )
            levels = list(levels)
            if not levels or len(set(map(repr, levels))) != len(levels):
                raise ParameterError(
                    f"ordinal levels of {c} must be distinct and not empty, got {levels!r}"
                )
        out[c] = levels
    return out


def check_missing(value):
    """Text tokens that mean missing: a list of strings or a comma-separated string."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or any(not isinstance(t, str) for t in value):
        raise ParameterError(
            f"missing must be text tokens (a list or a comma-separated string), got {value!r}"
        )
    return tuple(t.strip() for t in value if t.strip())


#: merged_strata: what the published stratum column shows for strata merged because smaller than k
MERGED_STRATA = ("recode", "suppress", "refuse")


def check_column_name(value):
    if isinstance(value, str) and value:
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return value
    raise ValueError(f"must be a column name, got {value!r}")


def check_labels(value):
    import numpy as np

    labels = np.asarray(value)
    if labels.ndim != 1 or labels.size == 0 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError("must be a 1-D array of integer group labels, one per record")
    return labels.astype(np.int64)


def check_aggregation_params(value):
    """The chosen aggregation's own parameters: a mapping name -> number, or 'NAME=VALUE,...'
    (the command line's text). Which names the aggregation takes and their ranges are checked
    with it (``together``)."""
    if isinstance(value, str):
        pairs = [part.split("=", 1) for part in value.split(",") if part.strip()]
        if any(len(pair) != 2 for pair in pairs):
            raise ParameterError(
                f"aggregation_params must be NAME=VALUE pairs separated by commas, got {value!r}"
            )
        value = {name.strip(): number.strip() for name, number in pairs}
    if not isinstance(value, Mapping) or any(not isinstance(n, str) for n in value):
        raise ParameterError(
            f"aggregation_params must map parameter names to numbers, got {value!r}"
        )
    out = {}
    for name, number in value.items():
        try:
            out[name] = float(number)
        except (TypeError, ValueError):
            raise ParameterError(
                f"aggregation_params {name} must be a number, got {number!r}"
            ) from None
    return out
