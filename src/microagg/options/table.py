"""The run options' table, their one home: ``RUN_OPTIONS`` declares each option's kind, range or
choices, default, meaning and command-line flag (``declarations.Param``), and ``Run`` holds a
validated run's options, one typed field per option, generated from the table's kinds
(``run_fields``) and checked against it when this module is imported. A new run option is its
``Param`` here and its field in ``Run`` (the import-time check names the line to write), and the
pipeline's stage that acts on it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from ..declarations import Param
from . import values

__all__ = [
    "RUN_OPTIONS",
    "POSITIONAL",
    "NOT_FOR_A_GRID",
    "GRID_OPTIONS",
    "ON_KEYS_BELOW_K",
    "Run",
    "option",
    "run_fields",
    "DECLARED",
]

#: run options an exploration (``microagg explore``) does not take from a run's options (the command
#: line's flags and the app's Map tab leave them out): set per run, or without meaning for a grid
#: (the partitioned mode)
NOT_FOR_A_GRID = (
    "k",
    "method",
    "time_limit",
    "work",
    "shuffle",
    "household",
    "block_size",
    "scheduler",
    "refine",
)


def _sdcmicro(kind: str, name):
    from ..sdcmicro_names import hint

    return hint(kind, name)


def _whitenings():
    from ..whitening import WHITENINGS

    return tuple(WHITENINGS)


def _aggregations():
    from ..representatives import AGGREGATIONS

    return tuple(AGGREGATIONS)


#: what a run does when the declared keys fall below k (``on_keys_below_k``;
#: ``microagg.suppression``)
ON_KEYS_BELOW_K = ("suppress", "refuse", "report")

# --- the table ----------------------------------------------------------------------------------

RUN_OPTIONS: tuple[Param, ...] = (
    Param("k", "int", 3, "minimum group size", low=2, flags=("-k",)),
    Param(
        "method",
        "method",
        "mdav",
        "method name (see 'microagg methods')",
        flags=("--method",),
        hint=lambda name: _sdcmicro("method", name),
    ),
    Param(
        "columns",
        "names",
        None,
        "quasi-identifier columns (default: every numeric column, strata excluded; "
        "for an array, positions)",
        nullable=True,
        flags=("--columns",),
        metavar="A,B",
    ),
    Param(
        "seed",
        "int",
        0,
        "random seed of randomised methods, blocks and the robust distance",
        low=0,
        nullable=True,
        flags=("--seed",),
    ),
    Param(
        "standardize",
        "bool",
        True,
        "run the method on z-scores (--raw: on the raw values; SSE, SST and the "
        "bound are then in raw units)",
        flags=("--raw",),
        flag_value=False,
    ),
    Param(
        "time_limit",
        "float",
        None,
        "the wall-clock budget of the whole call, in seconds (inf: none)",
        low=0.0,
        low_open=True,
        nullable=True,
        flags=("--time-limit",),
        metavar="SECONDS",
        infinite_is_none=True,
    ),
    Param(
        "work",
        "float",
        None,
        "the work budget of the whole call, in the methods' deterministic units "
        "(docs/reproducibility.md): the same input, options and seed give the same output at any "
        "load; "
        "a time limit beside it is a safety cap",
        low=0.0,
        low_open=True,
        nullable=True,
        flags=("--work",),
        metavar="UNITS",
    ),
    Param(
        "strata",
        "names",
        None,
        "stratum columns: groups never cross strata",
        nullable=True,
        flags=("--strata",),
        metavar="A,B",
    ),
    Param(
        "block_size",
        "int",
        None,
        "partitioned mode: records per block (at least k)",
        low=1,
        nullable=True,
        flags=("--block-size",),
        metavar="N",
    ),
    Param(
        "scheduler",
        "object",
        None,
        "partitioned mode: the Dask scheduler (threads, processes, synchronous), a "
        "cluster's address (tcp://host:8786) or a dask.distributed Client",
        nullable=True,
        check=values.check_scheduler,
        flags=("--scheduler",),
        parse_text=str,
    ),
    Param(
        "refine",
        "float",
        None,
        "partitioned mode: share of the groups the refinement tries to improve (None: 0.05)",
        low=0.0,
        high=1.0,
        nullable=True,
        flags=("--refine",),
        metavar="SHARE",
    ),
    Param(
        "weights",
        "object",
        None,
        "variable weights for the distance: one positive number per QI column "
        "(W1,W2,..) or COL=W,.. (others weigh 1)",
        nullable=True,
        check=values.check_weights,
        flags=("--weights",),
        metavar="W1,W2,..|COL=W,..",
        parse_text=values.parse_weights,
    ),
    Param(
        "sample_weight",
        "object",
        None,
        "sampling weights for weighted group means: a column, or one positive number per record",
        nullable=True,
        check=values.check_sample_weight,
        flags=("--sample-weight",),
        metavar="COLUMN",
        parse_text=str,
    ),
    Param(
        "merge_small_strata",
        "bool",
        False,
        "merge a stratum smaller than k into the stratum with the nearest "
        "QI centroid (else such a stratum is an error)",
        flags=("--merge-small-strata",),
        flag_value=True,
    ),
    Param(
        "categorical",
        "names",
        None,
        "nominal quasi-identifier columns (publish the group's mode)",
        nullable=True,
        flags=("--categorical",),
        metavar="A,B",
    ),
    Param(
        "ordinal",
        "names",
        None,
        "ordinal quasi-identifier columns (publish the median category); in the "
        "API also {column: [levels, lowest first]}",
        nullable=True,
        check=values.check_ordinal,
        flags=("--ordinal",),
        metavar="C,D",
    ),
    Param(
        "distance",
        "str",
        "euclidean",
        "the distance the methods group records by: the whitening of the "
        "continuous QIs (whitening.WHITENINGS; euclidean: none)",
        choices_from=_whitenings,
        flags=("--distance",),
    ),
    Param(
        "aggregation",
        "str",
        "mean",
        "what a group publishes for continuous columns (representatives.AGGREGATIONS)",
        choices_from=_aggregations,
        flags=("--aggregation",),
        hint=lambda name: _sdcmicro("aggregation", name),
    ),
    Param(
        "trim",
        "float",
        None,
        "share trimmed at each end, a parameter of aggregation 'trimmed' (None: 0.1)",
        low=0.0,
        high=0.5,
        high_open=True,
        nullable=True,
        flags=("--trim",),
        metavar="SHARE",
    ),
    Param(
        "missing",
        "object",
        None,
        "text tokens that mean missing (e.g. '-,.,n/a'); a missing value in a QI "
        "is still an error, other columns are written unchanged",
        nullable=True,
        check=values.check_missing,
        flags=("--missing",),
        metavar="TOKEN,...",
        parse_text=str,
    ),
    Param(
        "continuous",
        "names",
        None,
        "quasi-identifier columns declared continuous: published as group means "
        "even when they look like category codes (value labels, an SPSS measure, few distinct "
        "integers, a "
        "code-like name), which are otherwise protected as categories",
        nullable=True,
        flags=("--continuous",),
        metavar="A,B",
    ),
    Param(
        "keys",
        "names",
        None,
        "other published categorical key variables a reader can match on (published "
        "unchanged; the audit's k-anonymity and re-identification risk include them)",
        nullable=True,
        flags=("--keys",),
        metavar="A,B",
    ),
    Param(
        "on_keys_below_k",
        "str",
        "suppress",
        "what a run does when records match fewer than k records on the "
        "declared keys (QIs and strata included; a missing value matches any): suppress (set the "
        "fewest key values "
        "missing, local suppression, docs/local-suppression.md), refuse (an error before any "
        "work), report "
        "(publish anyway, say so on stderr, exit status 3)",
        choices=ON_KEYS_BELOW_K,
        flags=("--on-keys-below-k",),
    ),
    Param(
        "key_importance",
        "names",
        None,
        "the keys in order of importance, most important first: suppressed "
        "last (default: fewer categories first, as sdcMicro's localSuppression)",
        nullable=True,
        flags=("--key-importance",),
        metavar="A,B",
    ),
    Param(
        "sensitive",
        "names",
        None,
        "sensitive columns whose l-diversity the audit measures within the key combinations",
        nullable=True,
        flags=("--sensitive",),
        metavar="A,B",
    ),
    Param(
        "merged_strata",
        "str",
        "recode",
        "what the published stratum column shows for strata merged because "
        "smaller than k: recode (one value per merged stratum: the value of the stratum it joined; "
        "the mapping "
        "is reported), suppress (missing), refuse (an error instead of merging)",
        choices=values.MERGED_STRATA,
        flags=("--merged-strata",),
    ),
    Param(
        "shuffle",
        "bool",
        False,
        "publish the records in a random order (a fresh random permutation, never "
        "written anywhere); households stay together when --household is given",
        flags=("--shuffle",),
        flag_value=True,
    ),
    Param(
        "household",
        "object",
        None,
        "household id column: --shuffle keeps each household's records together",
        nullable=True,
        check=values.check_column_name,
        flags=("--household",),
        metavar="COLUMN",
        parse_text=str,
    ),
    Param(
        "shuffle_seed",
        "int",
        None,
        "a seed for the shuffle's permutation (tests only: with it and the "
        "software anyone can undo the shuffle; it is never written, not in the command nor the "
        "manifest)",
        low=0,
        nullable=True,
    ),
    Param(
        "labels",
        "object",
        None,
        "publish this partition (one integer group label per record, e.g. an "
        "explore run's) instead of running the method: every group is checked to hold at least k "
        "records "
        "inside one stratum; the method is only named",
        nullable=True,
        check=values.check_labels,
    ),
    Param(
        "audit",
        "bool",
        True,
        "measure the published data (utility, k-anonymity of the key variables, "
        "re-identification risk, l-diversity, interval disclosure, row order) into Result.audit; "
        "False: the "
        "run's own figures only (the command line audits the written file instead)",
    ),
    Param(
        "progress",
        "object",
        False,
        "True: a progress bar on stderr; a callable receives "
        "progress(stage, fraction, message) (the command line: -q turns the bar off)",
        nullable=True,
        check=values.check_progress,
    ),
)

#: each run option's declaration by name
DECLARED: dict[str, Param] = {p.name: p for p in RUN_OPTIONS}
#: the options ``microaggregate`` also takes by position, after the data (the public contract's
#: order)
POSITIONAL = (
    "k",
    "method",
    "columns",
    "seed",
    "standardize",
    "time_limit",
    "strata",
    "block_size",
    "scheduler",
)

#: the run options ``explore`` takes, the same for every run of its grid (k and the methods are
#: its grid, the rest is set per run or has no meaning for a grid)
GRID_OPTIONS = tuple(
    p.name
    for p in RUN_OPTIONS
    if p.name not in NOT_FOR_A_GRID
    and p.name not in ("progress", "labels", "audit", "shuffle_seed")
)


def option(name: str) -> Param:
    """The declaration of run option ``name``."""
    return DECLARED[name]


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

    def with_options(self, **changes) -> Run:
        """This run with some options changed (not validated again)."""
        unknown = [name for name in changes if name not in DECLARED]
        if unknown:
            raise TypeError(f"unknown run option(s): {', '.join(unknown)}")
        return replace(self, **changes)


_TYPE_OF_KIND = {
    "int": "int",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "method": "str",
    "names": "list",
    "object": "Any",
}


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
        wrong = next(
            (e for d, e in zip(declared + [""] * len(expected), expected, strict=False) if d != e),
            None,
        )
        raise TypeError(
            f"options.Run's fields must follow RUN_OPTIONS: write `{wrong}` (all: {expected})"
        )


_check_run_fields()
