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

from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from .declarations import Param
from .errors import ParameterError
from . import option_values as values
from .option_values import LOCAL_SCHEDULERS, MERGED_STRATA, parse_weights, positive_weights

#: run options an exploration (``microagg explore``) does not take from a run's options (the command
#: line's flags and the app's Map tab leave them out): set per run, or without meaning for a grid
#: (the partitioned mode)
NOT_FOR_A_GRID = ("k", "method", "time_limit", "work", "shuffle", "household", "block_size", "scheduler", "refine")

__all__ = ["RUN_OPTIONS", "POSITIONAL", "Run", "validate_run", "split_arguments", "signature", "describe", "option",
           "LOCAL_SCHEDULERS", "add_arguments", "from_arguments", "command_line", "python_call", "parse_weights",
           "unlisted_names", "NOT_FOR_A_GRID", "GRID_OPTIONS", "given_options", "positive_weights",
           "ON_KEYS_BELOW_K", "run_fields"]


def _sdcmicro(kind: str, name):
    from .sdcmicro_names import hint

    return hint(kind, name)


def _whitenings():
    from .whitening import WHITENINGS

    return tuple(WHITENINGS)


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
          "cluster's address (tcp://host:8786) or a dask.distributed Client", nullable=True, check=values.check_scheduler,
          flags=("--scheduler",), parse_text=str),
    Param("refine", "float", None, "partitioned mode: share of the groups the refinement tries to improve "
          "(None: 0.05)", low=0.0, high=1.0, nullable=True, flags=("--refine",), metavar="SHARE"),
    Param("weights", "object", None, "variable weights for the distance: one positive number per QI column "
          "(W1,W2,..) or COL=W,.. (others weigh 1)", nullable=True, check=values.check_weights, flags=("--weights",),
          metavar="W1,W2,..|COL=W,..", parse_text=parse_weights),
    Param("sample_weight", "object", None, "sampling weights for weighted group means: a column, or one "
          "positive number per record", nullable=True, check=values.check_sample_weight, flags=("--sample-weight",),
          metavar="COLUMN", parse_text=str),
    Param("merge_small_strata", "bool", False, "merge a stratum smaller than k into the stratum with the nearest "
          "QI centroid (else such a stratum is an error)", flags=("--merge-small-strata",), flag_value=True),
    Param("categorical", "names", None, "nominal quasi-identifier columns (publish the group's mode)",
          nullable=True, flags=("--categorical",), metavar="A,B"),
    Param("ordinal", "names", None, "ordinal quasi-identifier columns (publish the median category); in the "
          "API also {column: [levels, lowest first]}", nullable=True, check=values.check_ordinal, flags=("--ordinal",),
          metavar="C,D"),
    Param("distance", "str", "euclidean", "the distance the methods group records by: the whitening of the "
          "continuous QIs (whitening.WHITENINGS; euclidean: none)", choices_from=_whitenings, flags=("--distance",)),
    Param("aggregation", "str", "mean", "what a group publishes for continuous columns "
          "(representatives.AGGREGATIONS)", choices_from=_aggregations, flags=("--aggregation",),
          hint=lambda name: _sdcmicro("aggregation", name)),
    Param("trim", "float", None, "share trimmed at each end, a parameter of aggregation 'trimmed' (None: 0.1)", low=0.0,
          high=0.5, high_open=True, nullable=True, flags=("--trim",), metavar="SHARE"),
    Param("missing", "object", None, "text tokens that mean missing (e.g. '-,.,n/a'); a missing value in a QI "
          "is still an error, other columns are written unchanged", nullable=True, check=values.check_missing,
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
          nullable=True, check=values.check_column_name, flags=("--household",), metavar="COLUMN", parse_text=str),
    Param("shuffle_seed", "int", None, "a seed for the shuffle's permutation (tests only: with it and the "
          "software anyone can undo the shuffle; it is never written, not in the command nor the manifest)",
          low=0, nullable=True),
    Param("labels", "object", None, "publish this partition (one integer group label per record, e.g. an "
          "explore run's) instead of running the method: every group is checked to hold at least k records "
          "inside one stratum; the method is only named", nullable=True, check=values.check_labels),
    Param("audit", "bool", True, "measure the published data (utility, k-anonymity of the key variables, "
          "re-identification risk, l-diversity, interval disclosure, row order) into Result.audit; False: the "
          "run's own figures only (the command line audits the written file instead)"),
    Param("progress", "object", False, "True: a progress bar on stderr; a callable receives "
          "progress(stage, fraction, message) (the command line: -q turns the bar off)", nullable=True,
          check=values.check_progress),
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
    """A validated run: the method's registry entry and its parameters (validated, defaults
    filled; ``given``: as the caller gave them), then every run option, one typed field each
    (defaults filled), so that a misspelt option is an error for a type checker. The fields are
    RUN_OPTIONS's, in its order, typed by their kinds (``run_fields``): checked when this module
    is imported."""

    info: Any  # methods.MethodInfo
    params: dict
    given: dict
    k: int = 3
    method: str = "mdav"
    columns: list | None = None
    seed: int | None = 0
    standardize: bool = True
    time_limit: float | None = None
    work: float | None = None
    strata: list | None = None
    block_size: int | None = None
    scheduler: Any = None
    refine: float | None = None
    weights: Any = None
    sample_weight: Any = None
    merge_small_strata: bool = False
    categorical: list | None = None
    ordinal: dict | None = None
    distance: str = "euclidean"
    aggregation: str = "mean"
    trim: float | None = None
    missing: Any = None
    continuous: list | None = None
    keys: list | None = None
    on_keys_below_k: str = "suppress"
    key_importance: list | None = None
    sensitive: list | None = None
    merged_strata: str = "recode"
    shuffle: bool = False
    household: Any = None
    shuffle_seed: int | None = None
    labels: Any = None
    audit: bool = True
    progress: Any = False

    @property
    def options(self) -> dict[str, Any]:
        """Every run option by name, in RUN_OPTIONS's order."""
        return {p.name: getattr(self, p.name) for p in RUN_OPTIONS}

    def with_options(self, **changes) -> "Run":
        """This run with some options changed (not validated again)."""
        unknown = [name for name in changes if name not in _BY_NAME]
        if unknown:
            raise TypeError(f"unknown run option(s): {', '.join(unknown)}")
        return replace(self, **changes)


_TYPE_OF_KIND = {"int": "int", "float": "float", "bool": "bool", "str": "str", "method": "str", "names": "list",
                 "object": "Any"}


def run_fields() -> list[str]:
    """The run options' fields of ``Run`` as its source declares them, generated from RUN_OPTIONS:
    the kind's type ("names" normalised by a check to a mapping: dict), "| None" when nullable."""
    lines = []
    for p in RUN_OPTIONS:
        typed = "dict" if p.kind == "names" and p.check is not None else _TYPE_OF_KIND[p.kind]
        if p.nullable and typed != "Any":
            typed += " | None"
        lines.append(f"{p.name}: {typed} = {p.default!r}")
    return lines


def _check_run_fields() -> None:
    """Run's option fields are RUN_OPTIONS's (names, order, types, defaults): a new run option
    gets its field here, in this module (the line to write is in the error)."""
    declared = [f"{f.name}: {f.type} = {f.default!r}" for f in fields(Run)[3:]]
    expected = run_fields()
    if declared != expected:
        wrong = next((e for d, e in zip(declared + [""] * len(expected), expected) if d != e), None)
        raise TypeError(f"options.Run's fields must follow RUN_OPTIONS: write `{wrong}` (all: {expected})")


_check_run_fields()


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
    return Run(info, method_params, params, **values)


def _shown(name: str, cli: bool) -> str:
    """How an error names an option: its flag on the command line, its name in the API."""
    return _BY_NAME[name].flags[0] if cli and _BY_NAME[name].flags else name


def _check_together(v: dict, info, method_params: dict, cli: bool) -> None:
    """What involves several options (and the method), still before any data is read: each step
    raises one ParameterError naming the options (their flags on the command line)."""

    def n(name):
        return _shown(name, cli)

    _check_dependent_options(v, n, cli)
    _check_given_partition(v, method_params, n)
    _check_aggregation_parameters(v, n)
    _check_column_kinds(v)
    _check_key_roles(v, n)
    _check_distance(v, info)
    _check_column_roles(v)


def _partitioned(v: dict) -> bool:
    return v["block_size"] is not None or v["scheduler"] is not None


def _check_dependent_options(v: dict, n, cli: bool) -> None:
    """Options that only apply beside another one."""
    if v["merge_small_strata"] and not v["strata"]:
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
    if v["refine"] is not None and not _partitioned(v):
        raise ParameterError(f"{n('refine')} applies to the partitioned mode: pass {n('block_size')} "
                             f"(or {n('scheduler')}) too")


def _check_given_partition(v: dict, method_params: dict, n) -> None:
    """A partition to publish (labels) or to start from (a method's init labels) is cut afresh by
    neither the partitioned mode nor the other."""
    from .methods.starts import given_labels

    start = given_labels(method_params)
    if v["labels"] is not None and (_partitioned(v) or start):
        raise ParameterError("labels (a partition to publish) cannot be combined with the partitioned mode or a "
                             "start partition")
    if start and _partitioned(v):
        raise ParameterError("init labels (a start partition) cannot be combined with the partitioned mode "
                             f"({n('block_size')} / {n('scheduler')}): blocks are cut afresh")


def _check_aggregation_parameters(v: dict, n) -> None:
    """A run option that is some aggregation's parameter (``Aggregation.params``) is given only
    with an aggregation that takes it."""
    from .representatives import AGGREGATIONS

    chosen = AGGREGATIONS[v["aggregation"]]
    parameters = sorted({name for a in AGGREGATIONS.values() for name in a.params} - set(chosen.params))
    for name in parameters:
        if v.get(name) is not None:
            takers = " / ".join(repr(a.name) for a in AGGREGATIONS.values() if name in a.params)
            raise ParameterError(f"{n(name)} applies to aggregation={takers} only (aggregation is "
                                 f"{v['aggregation']!r})")


def _check_distance(v: dict, info) -> None:
    """A whitening (``distance``) undoes variable weights; neither means anything to a method that
    groups each variable on its own."""
    from .whitening import WHITENINGS

    whitened = not WHITENINGS[v["distance"]].identity
    if v["weights"] is not None and whitened:
        raise ParameterError(f"weights and distance={v['distance']!r} cannot be combined: whitening undoes the "
                             "weights")
    if info.per_variable and v["weights"] is not None:
        raise ParameterError(f"weights have no effect with method {info.name!r}, which groups each variable on "
                             "its own")
    if info.per_variable and whitened:
        raise ParameterError(f"distance={v['distance']!r} has no effect with method {info.name!r}, which groups "
                             "each variable on its own")


def _declared_kinds(v: dict) -> tuple[list, list, list]:
    """The columns declared categorical, ordinal and continuous."""
    return v["categorical"] or [], list(v["ordinal"] or {}), v["continuous"] or []


def _listed(columns) -> str:
    return ", ".join(map(str, columns))


def _check_column_kinds(v: dict) -> None:
    """A column has one declared kind."""
    categorical, ordinal, continuous = _declared_kinds(v)
    both = [c for c in categorical if c in ordinal]
    if both:
        raise ParameterError(f"column(s) declared both categorical and ordinal: {_listed(both)}")
    both = [c for c in continuous if c in categorical or c in ordinal]
    if both:
        raise ParameterError(f"column(s) declared both continuous and categorical/ordinal: {_listed(both)}")


def _check_key_roles(v: dict, n) -> None:
    """Keys are not already key variables (QIs, strata), sensitive columns are no key at all, and
    key_importance ranks the keys only."""
    categorical, ordinal, continuous = _declared_kinds(v)
    qis = (v["strata"] or []) + (v["columns"] or []) + categorical + ordinal + continuous
    keys, sensitive = v["keys"] or [], v["sensitive"] or []
    for name, given, others, what in (
            ("keys", keys, qis, "key variables (quasi-identifiers or strata)"),
            ("sensitive", sensitive, keys + qis, "key variables: a sensitive column cannot be a key")):
        clash = [c for c in given if c in others]
        if clash:
            raise ParameterError(f"column(s) {_listed(clash)} given in {n(name)} are already {what}")
    stray = [c for c in (v["key_importance"] or []) if c not in keys]
    if stray:
        raise ParameterError(f"key_importance names column(s) not given in keys: {_listed(stray)}")


def _check_column_roles(v: dict) -> None:
    """A column is at most one of quasi-identifier, stratum, sample weight and household id, and
    a column declared of a kind is a quasi-identifier."""
    strata, columns = v["strata"] or [], v["columns"]
    declared = [c for kind in _declared_kinds(v) for c in kind]
    sw = v["sample_weight"] if isinstance(v["sample_weight"], str) else None
    if sw is not None and sw in strata:
        raise ParameterError(f"column {sw} cannot be both sample weight and stratum")
    if columns is not None:
        overlap = [c for c in columns if c in strata]
        if overlap:
            raise ParameterError(f"column(s) {_listed(overlap)} cannot be both quasi-identifier and stratum")
        if sw is not None and sw in columns:
            raise ParameterError(f"column {sw} cannot be both quasi-identifier and sample weight")
        outside = [c for c in declared if c not in columns]
        if outside:
            raise ParameterError(f"column(s) declared categorical/ordinal/continuous but not among the "
                                 f"quasi-identifier columns: {_listed(outside)}")
        if v["household"] is not None and v["household"] in columns:
            raise ParameterError(f"column {v['household']} cannot be both quasi-identifier and household id")
    excluded = [c for c in declared if c in strata + ([sw] if sw is not None else [])]
    if excluded:
        raise ParameterError(f"column(s) {_listed(excluded)} declared categorical/ordinal/continuous "
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
