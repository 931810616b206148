"""The run's options, declared once: one table of ``Param``s (the class the methods declare their
parameters with), validated once, before any data is read, on every path.

``RUN_OPTIONS`` is the table: each option's kind, range or choices, default, meaning and
command-line flag. ``validate_run`` checks a call's options and the method's parameters against
it, then what involves several of them (``_check_together``), and returns a :class:`Run`: the API
(``microaggregate``), the command line (its flags are generated from the table:
``add_arguments`` / ``from_arguments``), the out-of-core mode and the app all go through it, so
they agree on what a user error is: a ``ParameterError`` (an ``InputError``) in one line. What
needs the data (columns exist, k against n, ...) is checked right after loading by the
pipeline's ``check_params_vs_input``. ``command_line`` / ``python_call`` write the command and the
Python call that reproduce a run, from the same table.

Nothing heavy is imported here: the command line builds its parser from this module at once.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Any, Mapping

from .errors import ParameterError
from .declarations import Param

#: run options an exploration (``microagg explore``) does not take from a run's options (the command
#: line's flags and the app's Map tab leave them out): set per run, or without meaning for a grid
#: (the partitioned mode)
NOT_FOR_A_GRID = ("k", "method", "time_limit", "work", "shuffle", "household", "block_size", "scheduler", "refine")

__all__ = ["RUN_OPTIONS", "POSITIONAL", "Run", "validate_run", "split_arguments", "signature", "describe", "option",
           "LOCAL_SCHEDULERS", "add_arguments", "from_arguments", "command_line", "python_call", "parse_weights",
           "unlisted_names", "NOT_FOR_A_GRID", "GRID_OPTIONS", "given_options"]

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
        raise ValueError(f"{address} cannot be reached ({exc.strerror or exc}): start the scheduler, or check "
                         "the address") from None
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
        raise ValueError(f"{address} does not answer as a Dask scheduler: start the scheduler, or check the address")


def _scheduler(value):
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
            raise ValueError(f"must be one of {', '.join(LOCAL_SCHEDULERS)} or a scheduler address such as "
                             f"tcp://host:8786, got {value!r}")
        if value not in _REACHED:
            _reach(value, host, port)
            _REACHED.add(value)
        return value
    if callable(getattr(value, "compute", None)) and callable(getattr(value, "gather", None)):
        return value  # a dask.distributed Client
    raise ValueError(f"must be a scheduler name ({', '.join(LOCAL_SCHEDULERS)}), an address or a "
                     f"dask.distributed Client, got {value!r}")


def _number(v) -> float:
    if isinstance(v, (bool,)) or type(v).__name__ == "bool_" or not isinstance(v, numbers.Real):
        raise TypeError
    return float(v)


def _weights(value):
    """Variable weights: one positive finite number per QI column (a sequence in column order) or
    a mapping column -> weight (columns left out weigh 1). Their count and names are checked
    against the QI columns once the data are read."""
    if isinstance(value, (str, bytes)):
        raise ParameterError("weights must be numbers (one per quasi-identifier column) or a column -> weight "
                             "mapping")
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
    bad = [f"{names[j] if names else j + 1}={raw[j]!r}" for j, x in enumerate(w) if not (math.isfinite(x) and x > 0)]
    if bad:
        raise ParameterError(f"weights must be positive and finite: {', '.join(bad)}")
    if not w:
        raise ParameterError("weights is empty")
    return dict(zip(names, w)) if names is not None else w


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


def _sample_weight(value):
    """A column name, or one positive finite weight per record (its length is checked with the data)."""
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
        raise ParameterError(f"{where} must be positive and finite: {int(bad.sum())} bad value(s), "
                             f"first at row {first + 1} ({sw[first]:g})")
    return sw


def _progress(value):
    if isinstance(value, bool) or type(value).__name__ == "bool_" or value is None or callable(value):
        return value
    raise ParameterError(f"progress must be True, False or a callable, got {value!r}")


def _ordinal(value):
    """Ordinal columns: names, or a mapping column -> its levels from lowest to highest (None: the
    dtype's or the sorted order). Returned as that mapping."""
    if not isinstance(value, Mapping):
        return dict.fromkeys(value)
    out = {}
    for c, levels in value.items():
        if levels is not None:
            if isinstance(levels, (str, bytes)) or not hasattr(levels, "__iter__"):
                raise ParameterError(f"ordinal levels of {c} must be a list (lowest first), got {levels!r}")
            levels = list(levels)
            if not levels or len(set(map(repr, levels))) != len(levels):
                raise ParameterError(f"ordinal levels of {c} must be distinct and not empty, got {levels!r}")
        out[c] = levels
    return out


def _missing(value):
    """Text tokens that mean missing: a list of strings or a comma-separated string."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or any(not isinstance(t, str) for t in value):
        raise ParameterError(f"missing must be text tokens (a list or a comma-separated string), got {value!r}")
    return tuple(t.strip() for t in value if t.strip())


#: merged_strata: what the published stratum column shows for strata merged because smaller than k
MERGED_STRATA = ("recode", "suppress", "refuse")


def _column_name(value):
    if isinstance(value, str) and value:
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return value
    raise ValueError(f"must be a column name, got {value!r}")


def _given_labels(value):
    import numpy as np

    labels = np.asarray(value)
    if labels.ndim != 1 or labels.size == 0 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError("must be a 1-D array of integer group labels, one per record")
    return labels.astype(np.int64)


def _sdcmicro(kind: str, name):
    from .sdcmicro_names import hint

    return hint(kind, name)


def _distances():
    from .distances import DISTANCES

    return tuple(DISTANCES)


def _aggregations():
    from .representatives import AGGREGATIONS

    return tuple(AGGREGATIONS)


#: what a run does when the declared keys fall below k (``on_keys_below_k``; ``microagg.suppression``)
ON_KEYS_BELOW_K = ("suppress", "refuse", "report")

# --- the table ----------------------------------------------------------------------------------

RUN_OPTIONS: tuple[Param, ...] = (
    Param("k", "int", 3, "minimum group size", low=2, flags=("-k",)),
    Param("method", "method", "mdav", "method name (see 'microagg methods')", flags=("--method",),
          hint=lambda name: _sdcmicro("method", name)),
    Param("columns", "names", None, "quasi-identifier columns (default: every numeric column, strata excluded; "
          "for an array, positions)", nullable=True, flags=("--columns",), metavar="A,B"),
    Param("seed", "int", 0, "random seed of randomised methods, blocks and the robust distance", low=0,
          nullable=True, flags=("--seed",)),
    Param("standardize", "bool", True, "run the method on z-scores (--raw: on the raw values; SSE, SST and the "
          "bound are then in raw units)", flags=("--raw",), flag_value=False),
    Param("time_limit", "float", None, "the wall-clock budget of the whole call, in seconds (inf: none)", low=0.0,
          low_open=True, nullable=True, flags=("--time-limit",), metavar="SECONDS", infinite_is_none=True),
    Param("work", "float", None, "the work budget of the whole call, in the methods' deterministic units "
          "(docs/reproducibility.md): the same input, options and seed give the same output at any load; "
          "a time limit beside it is a safety cap", low=0.0, low_open=True, nullable=True, flags=("--work",),
          metavar="UNITS"),
    Param("strata", "names", None, "stratum columns: groups never cross strata", nullable=True,
          flags=("--strata",), metavar="A,B"),
    Param("block_size", "int", None, "partitioned mode: records per block (at least k)", low=1, nullable=True,
          flags=("--block-size",), metavar="N"),
    Param("scheduler", "object", None, "partitioned mode: the Dask scheduler (threads, processes, synchronous), a "
          "cluster's address (tcp://host:8786) or a dask.distributed Client", nullable=True, check=_scheduler,
          flags=("--scheduler",), parse_text=str),
    Param("refine", "float", None, "partitioned mode: share of the groups the refinement tries to improve "
          "(None: 0.05)", low=0.0, high=1.0, nullable=True, flags=("--refine",), metavar="SHARE"),
    Param("weights", "object", None, "variable weights for the distance: one positive number per QI column "
          "(W1,W2,..) or COL=W,.. (others weigh 1)", nullable=True, check=_weights, flags=("--weights",),
          metavar="W1,W2,..|COL=W,..", parse_text=parse_weights),
    Param("sample_weight", "object", None, "sampling weights for weighted group means: a column, or one "
          "positive number per record", nullable=True, check=_sample_weight, flags=("--sample-weight",),
          metavar="COLUMN", parse_text=str),
    Param("merge_small_strata", "bool", False, "merge a stratum smaller than k into the stratum with the nearest "
          "QI centroid (else such a stratum is an error)", flags=("--merge-small-strata",), flag_value=True),
    Param("categorical", "names", None, "nominal quasi-identifier columns (publish the group's mode)",
          nullable=True, flags=("--categorical",), metavar="A,B"),
    Param("ordinal", "names", None, "ordinal quasi-identifier columns (publish the median category); in the "
          "API also {column: [levels, lowest first]}", nullable=True, check=_ordinal, flags=("--ordinal",),
          metavar="C,D"),
    Param("distance", "str", "euclidean", "distance between records (distances.DISTANCES)",
          choices_from=_distances, flags=("--distance",)),
    Param("aggregation", "str", "mean", "what a group publishes for continuous columns "
          "(representatives.AGGREGATIONS)", choices_from=_aggregations, flags=("--aggregation",),
          hint=lambda name: _sdcmicro("aggregation", name)),
    Param("trim", "float", None, "share trimmed at each end with aggregation 'trimmed' (None: 0.1)", low=0.0,
          high=0.5, high_open=True, nullable=True, flags=("--trim",), metavar="SHARE"),
    Param("missing", "object", None, "text tokens that mean missing (e.g. '-,.,n/a'); a missing value in a QI "
          "is still an error, other columns are written unchanged", nullable=True, check=_missing,
          flags=("--missing",), metavar="TOKEN,...", parse_text=str),
    Param("continuous", "names", None, "quasi-identifier columns declared continuous: published as group means "
          "even when they look like category codes (value labels, an SPSS measure, few distinct integers, a "
          "code-like name), which are otherwise protected as categories", nullable=True, flags=("--continuous",),
          metavar="A,B"),
    Param("keys", "names", None, "other published categorical key variables a reader can match on (published "
          "unchanged; the audit's k-anonymity and re-identification risk include them)", nullable=True,
          flags=("--keys",), metavar="A,B"),
    Param("on_keys_below_k", "str", "suppress", "what a run does when records match fewer than k records on the "
          "declared keys (QIs and strata included; a missing value matches any): suppress (set the fewest key values "
          "missing, local suppression, docs/local-suppression.md), refuse (an error before any work), report "
          "(publish anyway, say so on stderr, exit status 3)", choices=ON_KEYS_BELOW_K, flags=("--on-keys-below-k",)),
    Param("key_importance", "names", None, "the keys in order of importance, most important first: suppressed "
          "last (default: fewer categories first, as sdcMicro's localSuppression)", nullable=True,
          flags=("--key-importance",), metavar="A,B"),
    Param("sensitive", "names", None, "sensitive columns whose l-diversity the audit measures within the key "
          "combinations", nullable=True, flags=("--sensitive",), metavar="A,B"),
    Param("merged_strata", "str", "recode", "what the published stratum column shows for strata merged because "
          "smaller than k: recode (one value per merged stratum: the value of the stratum it joined; the mapping "
          "is reported), suppress (missing), refuse (an error instead of merging)", choices=MERGED_STRATA,
          flags=("--merged-strata",)),
    Param("shuffle", "bool", False, "publish the records in a random order (a fresh random permutation, never "
          "written anywhere); households stay together when --household is given", flags=("--shuffle",),
          flag_value=True),
    Param("household", "object", None, "household id column: --shuffle keeps each household's records together",
          nullable=True, check=_column_name, flags=("--household",), metavar="COLUMN", parse_text=str),
    Param("shuffle_seed", "int", None, "a seed for the shuffle's permutation (tests only: with it and the "
          "software anyone can undo the shuffle; it is never written, not in the command nor the manifest)",
          low=0, nullable=True),
    Param("labels", "object", None, "publish this partition (one integer group label per record, e.g. an "
          "explore run's) instead of running the method: every group is checked to hold at least k records "
          "inside one stratum; the method is only named", nullable=True, check=_given_labels),
    Param("audit", "bool", True, "measure the published data (utility, k-anonymity of the key variables, "
          "re-identification risk, l-diversity, interval disclosure, row order) into Result.audit; False: the "
          "run's own figures only (the command line audits the written file instead)"),
    Param("progress", "object", False, "True: a progress bar on stderr; a callable receives "
          "progress(stage, fraction, message) (the command line: -q turns the bar off)", nullable=True,
          check=_progress),
)

_BY_NAME = {p.name: p for p in RUN_OPTIONS}
#: the options ``microaggregate`` also takes by position, after the data (the public contract's order)
POSITIONAL = ("k", "method", "columns", "seed", "standardize", "time_limit", "strata", "block_size", "scheduler")


def split_arguments(args: tuple, kwargs: dict) -> tuple[dict, dict]:
    """(run options, method parameters) of a call: positional arguments in POSITIONAL order, keyword
    arguments that name a run option, and the rest (the method's parameters)."""
    if len(args) > len(POSITIONAL):
        raise TypeError(f"microaggregate() takes at most {len(POSITIONAL) + 1} positional arguments "
                        f"({len(args) + 1} given)")
    options = dict(zip(POSITIONAL, args))
    twice = [name for name in options if name in kwargs]
    if twice:
        raise TypeError(f"microaggregate() got multiple values for argument {twice[0]!r}")
    params = {}
    for name, value in kwargs.items():
        (options if name in _BY_NAME else params)[name] = value
    return options, params


def given_options(arguments: Mapping[str, Any], names=None) -> dict:
    """The run options a call gave, from its arguments (``locals()`` of a function whose signature
    lists the options): those not left at their declared default (the very default object), so a
    call validates and records what was given, as when options came as keyword arguments.
    ``names``: the options the function takes (default: every run option)."""
    return {name: arguments[name] for name in (names or _BY_NAME) if name in arguments
            and arguments[name] is not _BY_NAME[name].default}


#: the run options ``explore`` takes, the same for every run of its grid (k and the methods are
#: its grid, the rest is set per run or has no meaning for a grid)
GRID_OPTIONS = tuple(p.name for p in RUN_OPTIONS if p.name not in NOT_FOR_A_GRID
                     and p.name not in ("progress", "labels", "audit", "shuffle_seed"))


def signature(func_name: str = "microaggregate"):
    """The call's signature from the declarations (introspection, help()): the data, the positional
    options, the keyword-only options, then the method's parameters."""
    import inspect

    P = inspect.Parameter
    ps = [P("data", P.POSITIONAL_OR_KEYWORD)]
    ps += [P(name, P.POSITIONAL_OR_KEYWORD, default=_BY_NAME[name].default) for name in POSITIONAL]
    ps += [P(p.name, P.KEYWORD_ONLY, default=p.default) for p in RUN_OPTIONS if p.name not in POSITIONAL]
    ps.append(P("params", P.VAR_KEYWORD))
    return inspect.Signature(ps)


def describe() -> str:
    """One line per run option (name, constraint, default, meaning), for docstrings and help."""
    return "\n".join(f"    {p.describe()}" for p in RUN_OPTIONS)


def option(name: str) -> Param:
    """The declaration of run option ``name``."""
    return _BY_NAME[name]


@dataclass(frozen=True)
class Run:
    """A validated run: every declared option (defaults filled), the method's registry entry and
    its parameters (validated, defaults filled; ``given``: as the caller gave them)."""

    options: Mapping[str, Any]
    info: Any  # methods.MethodInfo
    params: dict
    given: dict

    def __getattr__(self, name):
        try:
            return self.__dict__["options"][name]
        except KeyError:
            raise AttributeError(name) from None

    def with_options(self, **changes) -> "Run":
        return replace(self, options={**self.options, **changes})


def validate_run(options: Mapping[str, Any], params: Mapping[str, Any] | None = None, *, cli: bool = False) -> Run:
    """Check every run option and the method's parameters before any data is read.

    ``options``: run option name -> value (missing ones take their default); ``params``: the
    method's parameters. Unknown names are errors (a name that is neither a run option nor one of
    the method's parameters). ``cli``: errors name the command line's flags. One ParameterError
    (an InputError) for the first problem found.
    """
    from . import methods

    params = dict(params or {})
    unknown = [name for name in options if name not in _BY_NAME]
    if unknown:
        raise ParameterError(f"unknown run option(s): {', '.join(unknown)}")
    method = options.get("method", "mdav")
    p = _BY_NAME["method"]
    (replace(p, name=_shown("method", cli)) if cli else p).validate(method, None)  # sdcMicro's names: a hint
    info = methods.get(method)
    values = {}
    for p in RUN_OPTIONS:
        shown = replace(p, name=_shown(p.name, cli)) if cli else p
        values[p.name] = shown.validate(options[p.name], None) if p.name in options else p.default
    method_params = info.validate(params)
    _check_together(values, info, method_params, cli)
    return Run(values, info, method_params, params)


def _shown(name: str, cli: bool) -> str:
    """How an error names an option: its flag on the command line, its name in the API."""
    return _BY_NAME[name].flags[0] if cli and _BY_NAME[name].flags else name


def _check_together(v: dict, info, method_params: dict, cli: bool) -> None:
    """What involves several options (and the method), still before any data is read."""
    from .methods.starts import given_labels

    def n(name):
        return _shown(name, cli)

    partitioned = v["block_size"] is not None or v["scheduler"] is not None
    strata = v["strata"] or []
    if v["merge_small_strata"] and not strata:
        raise ParameterError(f"{n('merge_small_strata')} needs {n('strata')}" + (
            "" if cli else ": pass the stratum column(s) with strata="))
    if v["merged_strata"] != "recode" and not v["merge_small_strata"]:
        raise ParameterError(f"{n('merged_strata')} applies when small strata are merged: pass "
                             f"{n('merge_small_strata')} too")
    if v["shuffle_seed"] is not None and not v["shuffle"]:
        raise ParameterError(f"shuffle_seed applies with {n('shuffle')}")
    if v["household"] is not None and not v["shuffle"]:
        raise ParameterError(f"{n('household')} keeps households together when the records are shuffled: pass "
                             f"{n('shuffle')} too")
    if v["refine"] is not None and not partitioned:
        raise ParameterError(f"{n('refine')} applies to the partitioned mode: pass {n('block_size')} "
                             f"(or {n('scheduler')}) too")
    if v["labels"] is not None and (partitioned or given_labels(method_params)):
        raise ParameterError("labels (a partition to publish) cannot be combined with the partitioned mode or a "
                             "start partition")
    if given_labels(method_params) and partitioned:
        raise ParameterError("init labels (a start partition) cannot be combined with the partitioned mode "
                             f"({n('block_size')} / {n('scheduler')}): blocks are cut afresh")
    if v["trim"] is not None and v["aggregation"] != "trimmed":
        raise ParameterError(f"{n('trim')} applies to aggregation='trimmed' only (aggregation is "
                             f"{v['aggregation']!r})")
    categorical, ordinal = v["categorical"] or [], list(v["ordinal"] or {})
    continuous = v["continuous"] or []
    both = [c for c in categorical if c in ordinal]
    if both:
        raise ParameterError(f"column(s) declared both categorical and ordinal: {', '.join(map(str, both))}")
    both = [c for c in continuous if c in categorical or c in ordinal]
    if both:
        raise ParameterError(f"column(s) declared both continuous and categorical/ordinal: {', '.join(map(str, both))}")
    keys, sensitive = v["keys"] or [], v["sensitive"] or []
    for name, given, others in (("keys", keys, strata + (v["columns"] or []) + categorical + ordinal + continuous),
                                ("sensitive", sensitive, keys + strata + (v["columns"] or []) + categorical
                                 + ordinal + continuous)):
        clash = [c for c in given if c in others]
        if clash:
            raise ParameterError(f"column(s) {', '.join(map(str, clash))} given in {n(name)} are already "
                                 + ("key variables (quasi-identifiers or strata)" if name == "keys" else
                                    "key variables: a sensitive column cannot be a key"))
    stray = [c for c in (v["key_importance"] or []) if c not in keys]
    if stray:
        raise ParameterError(f"key_importance names column(s) not given in keys: {', '.join(map(str, stray))}")
    if v["weights"] is not None and v["distance"] != "euclidean":
        raise ParameterError(f"weights and distance={v['distance']!r} cannot be combined: whitening undoes the "
                             "weights")
    if info.per_variable and v["weights"] is not None:
        raise ParameterError(f"weights have no effect with method {info.name!r}, which groups each variable on "
                             "its own")
    if info.per_variable and v["distance"] != "euclidean":
        raise ParameterError(f"distance={v['distance']!r} has no effect with method {info.name!r}, which groups "
                             "each variable on its own")
    sw = v["sample_weight"] if isinstance(v["sample_weight"], str) else None
    if sw is not None and sw in strata:
        raise ParameterError(f"column {sw} cannot be both sample weight and stratum")
    columns = v["columns"]
    if columns is not None:
        overlap = [c for c in columns if c in strata]
        if overlap:
            raise ParameterError(f"column(s) {', '.join(map(str, overlap))} cannot be both quasi-identifier and "
                                 "stratum")
        if sw is not None and sw in columns:
            raise ParameterError(f"column {sw} cannot be both quasi-identifier and sample weight")
        outside = [c for c in categorical + ordinal + continuous if c not in columns]
        if outside:
            raise ParameterError(f"column(s) declared categorical/ordinal/continuous but not among the "
                                 f"quasi-identifier columns: {', '.join(map(str, outside))}")
        hh = v["household"]
        if hh is not None and hh in columns:
            raise ParameterError(f"column {hh} cannot be both quasi-identifier and household id")
    roles = strata + ([sw] if sw is not None else [])
    excluded = [c for c in categorical + ordinal + continuous if c in roles]
    if excluded:
        raise ParameterError(f"column(s) {', '.join(map(str, excluded))} declared categorical/ordinal/continuous "
                             "but used as stratum or sample weight")


# --- the command line, generated from the table -------------------------------------------------

def add_arguments(parser, skip=(), required=(), notes: Mapping[str, str] | None = None) -> None:
    """One flag per run option with flags (``skip``: names the command declares itself;
    ``required``: options the command needs given; ``notes``: what the command says instead of the
    option's default, e.g. that it needs the option); every value is read as text and typed by its
    declaration in ``from_arguments``. The help is the declaration's meaning, then what a value
    must be and the default."""
    notes = dict(notes or {})
    for p in RUN_OPTIONS:
        if not p.flags or p.name in skip:
            continue
        if p.name in notes:
            default = f"; {notes[p.name]}"
        elif p.name in required:
            default = "; required"
        else:
            default = "" if p.default is None or isinstance(p.default, bool) else f"; default {p.default}"
        shown = p.kind in ("int", "float", "str", "method")  # structured values: the doc says what they are
        text = f"{p.doc} ({p.constraint().removesuffix(' or None')}{default})" if shown else \
            f"{p.doc} ({default.removeprefix('; ')})" if default else p.doc
        if p.kind == "bool" and p.flag_value is False:  # a flag that turns a default on off (--raw)
            text = f"by default: {text}"
        if p.kind == "bool":
            parser.add_argument(*p.flags, dest=p.name, action="store_const", const=p.flag_value, default=None,
                                help=text)
        else:
            parser.add_argument(*p.flags, dest=p.name, default=None, metavar=p.metavar, help=text,
                                required=p.name in required)


def from_arguments(args, skip=()) -> dict:
    """The run options given on the command line, typed and validated by their declarations
    (errors name the flag); options not given are left out (their defaults apply)."""
    out = {}
    for p in RUN_OPTIONS:
        if not p.flags or p.name in skip:
            continue
        raw = getattr(args, p.name, None)
        if raw is None:
            continue
        shown = replace(p, name=p.flags[0])
        out[p.name] = raw if p.kind == "bool" else shown.validate(shown.parse(raw, None), None)
    return out


def _number_text(value: float) -> str:
    """A float as the shortest text that reads back as the same float ('600' for 600.0)."""
    return str(int(value)) if value.is_integer() and abs(value) < 2 ** 53 else repr(value)


def _cli_text(p: Param, value) -> str:
    if p.name == "weights":
        items = value.items() if isinstance(value, Mapping) else None
        return ",".join(f"{c}={_number_text(float(w))}" for c, w in items) if items else \
            ",".join(_number_text(float(w)) for w in value)
    if isinstance(value, Mapping):
        return ",".join(map(str, value))
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    if isinstance(value, float):
        return _number_text(value)
    return str(value)


def _flag_and_value(flag: str, text: str) -> list[str]:
    """A flag and its value as words no option parser misreads: a value starting with '-' is joined
    to its flag ('--columns=-x,b'; a short flag: '-k-1'), else two words."""
    if not text.startswith("-"):
        return [flag, text]
    return [f"{flag}={text}" if flag.startswith("--") else f"{flag}{text}"]


def command_line(input_path: str, output_path: str, options: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    """The ``microagg protect`` command that runs with these options (those that differ from their
    defaults, and k, method, columns and seed always) and method parameters. Nothing in it can be
    taken for an option: a path starting with '-' is written './-name', a value starting with '-'
    is joined to its flag ('--columns=-x'). Numbers are written exactly (the shortest text that
    reads back as the same float). Column names holding a comma cannot be listed
    (``unlisted_names``)."""
    import shlex

    q = shlex.quote
    shown = lambda path: q(path if not str(path).startswith("-") else f"./{path}")  # noqa: E731
    parts = ["microagg", "protect", shown(input_path), "-o", shown(output_path)]
    for p in RUN_OPTIONS:
        if not p.flags or p.name not in options:
            continue
        value = options[p.name]
        always = p.name in ("k", "method", "columns", "seed")
        if value is None or (not always and value == p.default):
            continue
        if p.kind == "bool":
            if value == p.flag_value:
                parts.append(p.flags[0])
            continue
        parts += [q(word) for word in _flag_and_value(p.flags[0], _cli_text(p, value))]
    for name, value in params.items():
        text = ("true" if value else "false") if isinstance(value, bool) else (
            "none" if value is None else _number_text(value) if isinstance(value, float)
            else str(value) if isinstance(value, (int, str)) else repr(value))
        parts += ["--param", q(f"{name}={text}")]
    return " ".join(parts)


def unlisted_names(options: Mapping[str, Any]) -> list:
    """Column names among the options' column lists that the command line cannot list (it splits
    a list at commas): such a run is reproduced by the Python call only."""
    out = []
    for p in RUN_OPTIONS:
        value = options.get(p.name)
        if p.flags and p.kind == "names" and value is not None and not isinstance(value, str):
            out += [c for c in value if "," in str(c) and c not in out]
    return out


def python_call(options: Mapping[str, Any], params: Mapping[str, Any], data: str = "df",
                function: str = "microaggregate") -> str:
    """The ``microagg.microaggregate`` call (or ``microagg.protect``, with ``data`` naming the input
    and output files) that runs with these options and method parameters."""
    kwargs = {name: value for name, value in options.items()
              if name in _BY_NAME and name not in ("progress", "shuffle_seed", "labels")
              and (value != _BY_NAME[name].default
                                                                or name in ("k", "method", "columns", "seed"))}
    args = ",\n    ".join(f"{k}={v!r}" for k, v in {**kwargs, **params}.items())
    return f"res = microagg.{function}(\n    {data},\n    {args},\n)\n"
