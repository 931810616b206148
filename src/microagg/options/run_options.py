"""The run options' table, their one home: ``RUN_OPTIONS`` declares each option's kind, range or
choices, default, meaning, command-line flag and type (``declarations.Param``), and, for an option
no built-in stage acts on, its own stage (``Param.stage``: a hook at a named point of the
pipeline). A new run option is its ``Param`` here, nothing else: the API's keywords, ``microagg
protect``'s flag, the app's control and explore's grid options follow the table at run time, and
``python -m microagg.options.generate`` writes its typed forms (``generated.py``: the ``Run``
dataclass's fields and the ``RunOptions`` TypedDict the entry points take as ``**options``; a test
fails while that file is stale). ``register`` adds an option at run time (a plug-in, a test).
"""

from __future__ import annotations

from ..declarations import Param
from . import values

__all__ = [
    "RUN_OPTIONS",
    "POSITIONAL",
    "NOT_FOR_A_GRID",
    "GRID_OPTIONS",
    "ON_KEYS_BELOW_K",
    "KEY_ANONYMITY",
    "option",
    "DECLARED",
    "register",
    "unregister",
]

#: run options an exploration (``microagg explore``) does not take from a run's options (the command
#: line's flags and the app's Map tab leave them out): set per run, or without meaning for a grid
#: (the partitioned mode)
NOT_FOR_A_GRID = [
    "k",
    "method",
    "time_limit",
    "work",
    "shuffle",
    "block_size",
    "scheduler",
    "refine",
]


def _sdcmicro(kind: str, name):
    from ..sdcmicro_names import hint

    return hint(kind, name)


def _whitenings():
    from ..whitening import WHITENINGS

    return tuple(WHITENINGS)


def _aggregations():
    from ..representatives import AGGREGATIONS

    return tuple(AGGREGATIONS)


def _privacy_stage(name: str):
    """A privacy model's stage (``microagg.privacy``), imported when it runs."""

    def stage(grouping, value):
        from .. import privacy

        return getattr(privacy, f"stage_{name}")(grouping, value)

    return stage


def _t_algorithms():
    from ..privacy.tcloseness import ALGORITHMS

    return ALGORITHMS


def _dp_mechanisms():
    from ..privacy.dp import MECHANISMS

    return MECHANISMS


def _check_bounds(value):
    from ..privacy.dp import check_bounds

    return check_bounds(value)


#: what a run does when the declared keys fall below k (``on_keys_below_k``;
#: ``microagg.suppression``)
ON_KEYS_BELOW_K = ("suppress", "refuse", "report")

#: the privacy model of the declared keys beside the numeric QIs (``key_anonymity``;
#: ``microagg.key_classes``): "keys+qis" every combination of keys, QIs and strata occurs k times
#: (the QI groups formed inside the key classes); "keys" sdcMicro's semantics: k-anonymity on the
#: keys and strata alone, the QIs microaggregated apart
KEY_ANONYMITY = ("keys+qis", "keys")

# --- the table ----------------------------------------------------------------------------------

#: the run options, in the public contract's order (a list: ``register`` extends it at run time)
RUN_OPTIONS: list[Param] = [
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
        annotation="str | Client | None",
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
        annotation="Sequence[float] | Mapping[Hashable, float] | None",
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
        annotation="Hashable | ArrayLike | None",
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
        annotation="Columns | Mapping[Hashable, Sequence[Any]] | None",
    ),
    Param(
        "distance",
        "str",
        "euclidean",
        "the distance the methods group records by: the whitening of the "
        "continuous QIs (whitening.WHITENINGS; euclidean: none)",
        choices_from=_whitenings,
        flags=("--distance",),
        annotation="Distance",
    ),
    Param(
        "aggregation",
        "str",
        "mean",
        "what a group publishes for continuous columns (representatives.AGGREGATIONS)",
        choices_from=_aggregations,
        flags=("--aggregation",),
        hint=lambda name: _sdcmicro("aggregation", name),
        annotation="Aggregation",
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
        "aggregation_params",
        "object",
        None,
        "the chosen aggregation's own parameters (Aggregation.params), e.g. trim=0.2",
        nullable=True,
        check=values.check_aggregation_params,
        flags=("--aggregation-params",),
        metavar="NAME=VALUE,...",
        parse_text=str,
        annotation="Mapping[str, float] | None",
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
        annotation="str | Sequence[str] | None",
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
        "key_anonymity",
        "str",
        "keys+qis",
        "what the declared keys are k-anonymous with: keys+qis (every combination of keys, QIs "
        "and strata occurs k times, a missing key matching any: local suppression on the keys "
        "alone, then the QI groups formed inside the key classes it leaves), keys (sdcMicro's "
        "semantics: the keys and strata alone, the QIs microaggregated apart)",
        choices=KEY_ANONYMITY,
        flags=("--key-anonymity",),
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
        "t_closeness",
        "float",
        None,
        "make every group t-close on the sensitive columns: the Earth Mover's Distance of each "
        "group's distribution to the whole file's at most T (numeric: ordered, else equal ground "
        "distance; docs/privacy-models.md), verified on the published file",
        low=0.0,
        high=1.0,
        low_open=True,
        nullable=True,
        flags=("--t-closeness",),
        metavar="T",
        stage=_privacy_stage("t_closeness"),
        acts_on="grouped",
    ),
    Param(
        "t_closeness_algorithm",
        "str",
        "auto",
        "how groups are made t-close (Soria-Comas et al. 2015): merge (the method's groups "
        "merged), mdav (t-closeness-aware MDAV), first (t-closeness first), auto (the lowest IL)",
        choices_from=_t_algorithms,
        flags=("--t-closeness-algorithm",),
    ),
    Param(
        "epsilon",
        "float",
        None,
        "publish the continuous QIs epsilon-differentially private: microaggregation and "
        "Laplace noise on the group means (docs/privacy-models.md)",
        low=0.0,
        low_open=True,
        nullable=True,
        flags=("--epsilon",),
        metavar="E",
        stage=_privacy_stage("epsilon"),
        acts_on="grouped",
    ),
    Param(
        "dp_mechanism",
        "str",
        "insensitive",
        "the epsilon-DP mechanism: insensitive (insensitive microaggregation, VLDB J 2014; it "
        "replaces the method's groups) or individual-ranking (with the method individual-ranking, "
        "Information Fusion 2016)",
        choices_from=_dp_mechanisms,
        flags=("--dp-mechanism",),
    ),
    Param(
        "bounds",
        "object",
        None,
        "the bounds of the continuous QIs for --epsilon, COL=LO:HI,... (not given: read from the "
        "data, which publishes each range and weakens the guarantee)",
        nullable=True,
        check=_check_bounds,
        flags=("--bounds",),
        metavar="COL=LO:HI,..",
        parse_text=str,
        annotation="str | Mapping[Hashable, Sequence[float]] | None",
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
        "names",
        None,
        "household id column(s): every published combination of quasi-identifiers and keys then "
        "comes from at least k households, household-level quasi-identifiers (constant within "
        "each household) are aggregated on one record per household, and --shuffle keeps each "
        "household's records together",
        nullable=True,
        flags=("--household",),
        metavar="A,B",
    ),
    Param(
        "household_level",
        "names",
        None,
        "quasi-identifiers declared household-level (checked constant within every household; "
        "default: the continuous ones found constant in the data)",
        nullable=True,
        flags=("--household-level",),
        metavar="A,B",
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
        annotation="ArrayLike | None",
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
        annotation="bool | Progress | None",
    ),
]

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
GRID_OPTIONS = [
    p.name
    for p in RUN_OPTIONS
    if p.name not in NOT_FOR_A_GRID
    and p.name not in ("progress", "labels", "audit", "shuffle_seed")
]


def option(name: str) -> Param:
    """The declaration of run option ``name``."""
    return DECLARED[name]


def register(param: Param, *, for_a_grid: bool = True) -> None:
    """Add run option ``param`` at run time (a plug-in, a test; a built-in option is its line in
    RUN_OPTIONS): every door takes it at once (the API's keywords, the command line's flag, the
    app's control, explore's grid options unless ``for_a_grid`` is False) and its ``stage`` acts
    on the runs that give it. Type checkers know the table's options only (``generated.py``)."""
    if param.name in DECLARED:
        raise ValueError(f"run option {param.name!r} is already declared")
    RUN_OPTIONS.append(param)
    DECLARED[param.name] = param
    (GRID_OPTIONS if for_a_grid else NOT_FOR_A_GRID).append(param.name)


def unregister(name: str) -> None:
    """Remove a run option ``register`` added."""
    param = DECLARED.pop(name)
    RUN_OPTIONS.remove(param)
    for names in (GRID_OPTIONS, NOT_FOR_A_GRID):
        if name in names:
            names.remove(name)
