"""What involves several run options (and the method), checked before any data is read:
``check_together`` runs each named step; each raises one ParameterError naming the options
(their flags on the command line).
"""

from __future__ import annotations

from ..errors import ParameterError
from . import run_options

__all__ = ["check_together", "shown"]


def shown(name: str, cli: bool) -> str:
    """How an error names an option: its flag on the command line, its name in the API."""
    flags = run_options.option(name).flags
    return flags[0] if cli and flags else name


def check_together(v: dict, info, method_params: dict, cli: bool) -> None:
    """What involves several options (and the method), still before any data is read: each step
    raises one ParameterError naming the options (their flags on the command line)."""

    def n(name):
        return shown(name, cli)

    _check_dependent_options(v, n, cli)
    _check_given_partition(v, method_params, n)
    _check_aggregation_parameters(v, n)
    _check_column_kinds(v)
    _check_key_roles(v, n)
    _check_distance(v, info)
    _check_column_roles(v)
    _check_privacy_models(v, info, n)


def _partitioned(v: dict) -> bool:
    return v["block_size"] is not None or v["scheduler"] is not None


def _check_dependent_options(v: dict, n, cli: bool) -> None:
    """Options that only apply beside another one."""
    if v["merge_small_strata"] and not v["strata"]:
        raise ParameterError(
            f"{n('merge_small_strata')} needs {n('strata')}"
            + ("" if cli else ": pass the stratum column(s) with strata=")
        )
    if v["merged_strata"] != "recode" and not v["merge_small_strata"]:
        raise ParameterError(
            f"{n('merged_strata')} applies when small strata are merged: pass "
            f"{n('merge_small_strata')} too"
        )
    if v["shuffle_seed"] is not None and not v["shuffle"]:
        raise ParameterError(f"shuffle_seed applies with {n('shuffle')}")
    if v["household_level"] is not None and v["household"] is None:
        raise ParameterError(f"{n('household_level')} needs {n('household')}")
    if v["household"] is not None and v["keys"] and v["key_anonymity"] == "keys":
        raise ParameterError(  # by households, the keys are counted with the QIs (households.py)
            f"{n('household')} makes the keys k-anonymous by households together with the "
            f"quasi-identifiers: {n('key_anonymity')} 'keys' (sdcMicro's keys-alone semantics) "
            "is not available with it"
        )
    if v["household"] is not None and _partitioned(v):
        raise ParameterError(
            f"{n('household')} cannot be combined with the partitioned mode "
            f"({n('block_size')} / {n('scheduler')})"
        )
    if v["refine"] is not None and not _partitioned(v):
        raise ParameterError(
            f"{n('refine')} applies to the partitioned mode: pass {n('block_size')} "
            f"(or {n('scheduler')}) too"
        )


def _check_given_partition(v: dict, method_params: dict, n) -> None:
    """A partition to publish (labels) or to start from (a method's init labels) is cut afresh by
    neither the partitioned mode nor the other."""
    from ..methods.starts import given_labels

    start = given_labels(method_params)
    if v["labels"] is not None and (_partitioned(v) or start):
        raise ParameterError(
            "labels (a partition to publish) cannot be combined with the partitioned mode or a "
            "start partition"
        )
    if start and _partitioned(v):
        raise ParameterError(
            "init labels (a start partition) cannot be combined with the partitioned mode "
            f"({n('block_size')} / {n('scheduler')}): blocks are cut afresh"
        )


def _check_aggregation_parameters(v: dict, n) -> None:
    """The chosen aggregation's own parameters (``aggregation_params``) are ones it declares, each
    in its range; a run option that is some aggregation's parameter (``trim``) is given only with
    an aggregation that takes it, and not again with another value in ``aggregation_params``."""
    from ..representatives import AGGREGATIONS

    chosen = AGGREGATIONS[v["aggregation"]]
    own = chosen.check(v.get("aggregation_params") or {})
    for name, value in own.items():
        if v.get(name) is not None and float(v[name]) != value:
            raise ParameterError(
                f"{n(name)} {v[name]!r} and {n('aggregation_params')} {name}={value!r} differ: "
                "give one"
            )
    parameters = sorted(
        {name for a in AGGREGATIONS.values() for name in a.params} - set(chosen.params)
    )
    for name in parameters:
        if v.get(name) is not None:
            takers = " / ".join(repr(a.name) for a in AGGREGATIONS.values() if name in a.params)
            raise ParameterError(
                f"{n(name)} applies to aggregation={takers} only (aggregation is "
                f"{v['aggregation']!r})"
            )


def _check_distance(v: dict, info) -> None:
    """A whitening (``distance``) undoes variable weights; neither means anything to a method that
    groups each variable on its own."""
    from ..whitening import WHITENINGS

    whitened = not WHITENINGS[v["distance"]].identity
    if v["weights"] is not None and whitened:
        raise ParameterError(
            f"weights and distance={v['distance']!r} cannot be combined: whitening undoes the "
            "weights"
        )
    if info.per_variable and v["weights"] is not None:
        raise ParameterError(
            f"weights have no effect with method {info.name!r}, which groups each variable on "
            "its own"
        )
    if info.per_variable and whitened:
        raise ParameterError(
            f"distance={v['distance']!r} has no effect with method {info.name!r}, which groups "
            "each variable on its own"
        )


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
        raise ParameterError(
            f"column(s) declared both continuous and categorical/ordinal: {_listed(both)}"
        )


def _check_key_roles(v: dict, n) -> None:
    """Keys are not already key variables (QIs, strata), sensitive columns are no key at all, and
    key_importance ranks the keys only."""
    categorical, ordinal, continuous = _declared_kinds(v)
    qis = (v["strata"] or []) + (v["columns"] or []) + categorical + ordinal + continuous
    keys, sensitive = v["keys"] or [], v["sensitive"] or []
    for name, given, others, what in (
        ("keys", keys, qis, "key variables (quasi-identifiers or strata)"),
        ("sensitive", sensitive, keys + qis, "key variables: a sensitive column cannot be a key"),
    ):
        clash = [c for c in given if c in others]
        if clash:
            raise ParameterError(
                f"column(s) {_listed(clash)} given in {n(name)} are already {what}"
            )
    stray = [c for c in v["key_importance"] or [] if c not in keys]
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
            raise ParameterError(
                f"column(s) {_listed(overlap)} cannot be both quasi-identifier and stratum"
            )
        if sw is not None and sw in columns:
            raise ParameterError(f"column {sw} cannot be both quasi-identifier and sample weight")
        outside = [c for c in declared if c not in columns]
        if outside:
            raise ParameterError(
                "column(s) declared categorical/ordinal/continuous but not among the "
                f"quasi-identifier columns: {_listed(outside)}"
            )
        both = [c for c in v["household"] or [] if c in columns]
        if both:
            raise ParameterError(
                f"column(s) {_listed(both)} cannot be both quasi-identifier and household id"
            )
        stray = [c for c in v["household_level"] or [] if c not in columns]
        if stray:
            raise ParameterError(
                f"household_level names column(s) not among the quasi-identifiers: {_listed(stray)}"
            )
    excluded = [c for c in declared if c in strata + ([sw] if sw is not None else [])]
    if excluded:
        raise ParameterError(
            f"column(s) {_listed(excluded)} declared categorical/ordinal/continuous "
            "but used as stratum or sample weight"
        )


def _check_privacy_models(v: dict, info, n) -> None:
    """t-closeness and differential privacy against the other options (``microagg.privacy``)."""
    from ..privacy import check_options

    check_options(v, info, n)
