"""Privacy models beyond k-anonymity, each an extension in its own module that declares its own
facts (``MODELS``): its run options, its reference and what it guarantees.

* ``tcloseness``: k-anonymous t-closeness through microaggregation (Soria-Comas et al., IEEE TKDE
  2015): the partition made t-close on the declared sensitive columns, verified on the published
  file as read back;
* ``dp``: an epsilon-differentially private release of the numeric QIs by microaggregation and
  Laplace noise (Soria-Comas et al., VLDB J 2014; Sanchez et al., Information Fusion 2016).

Each acts at the pipeline's "grouped" point (``Param.stage``, ``pipeline.Grouping``): the run
options are lines of ``options/run_options.py`` whose stages are ``stage_t_closeness`` and
``stage_epsilon``. This package imports nothing of ``options`` nor ``pipeline`` at import time.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PrivacyModel", "MODELS", "check_options", "stage_t_closeness", "stage_epsilon"]


@dataclass(frozen=True)
class PrivacyModel:
    """A privacy model's facts: its name, the run options that declare it, its reference."""

    name: str
    options: tuple
    reference: str


MODELS = {
    "t-closeness": PrivacyModel(
        "t-closeness",
        ("t_closeness", "t_closeness_algorithm", "sensitive"),
        "Soria-Comas, Domingo-Ferrer, Sanchez & Martinez, IEEE TKDE 27(11):3098-3110, 2015; "
        "EMD as in Li, Li & Venkatasubramanian, ICDE 2007",
    ),
    "epsilon-differential privacy": PrivacyModel(
        "epsilon-differential privacy",
        ("epsilon", "dp_mechanism", "bounds"),
        "Soria-Comas, Domingo-Ferrer, Sanchez & Martinez, VLDB J 23(5):771-794, 2014 "
        "(insensitive microaggregation); Sanchez, Domingo-Ferrer, Martinez & Soria-Comas, "
        "Information Fusion 30:1-14, 2016 (individual ranking)",
    ),
}


def check_options(v: dict, info, n) -> None:
    """The privacy options against each other and the method, before any data is read (one
    ParameterError naming the options: ``n(name)`` shows an option as the caller gave it)."""
    from ..errors import ParameterError

    if v.get("t_closeness") is not None:
        if not v.get("sensitive"):
            raise ParameterError(
                f"{n('t_closeness')} needs the sensitive column(s) it applies to: pass "
                f"{n('sensitive')}"
            )
        if v.get("keys"):
            raise ParameterError(
                f"{n('t_closeness')} cannot be combined with {n('keys')} yet: the keys would split "
                "the t-close groups"
            )
        if info.per_variable:
            raise ParameterError(
                f"{n('t_closeness')} needs a method that groups whole records, not {info.name!r}"
            )
    if v.get("epsilon") is not None or v.get("t_closeness") is not None:
        if v.get("strata") or v.get("block_size") is not None or v.get("scheduler") is not None:
            raise ParameterError(
                f"{n('t_closeness')} and {n('epsilon')} are not available with strata nor the "
                "partitioned mode (a privacy model is stated for the whole file)"
            )
    if v.get("t_closeness") is None and v.get("t_closeness_algorithm", "auto") != "auto":
        raise ParameterError(f"{n('t_closeness_algorithm')} applies with {n('t_closeness')}")
    if v.get("epsilon") is None:
        if v.get("bounds") is not None or v.get("dp_mechanism", "insensitive") != "insensitive":
            raise ParameterError(f"{n('bounds')} and {n('dp_mechanism')} apply with {n('epsilon')}")
        return
    if v.get("t_closeness") is not None:
        raise ParameterError(f"{n('epsilon')} and {n('t_closeness')} cannot be combined")
    from .dp import check_mechanism

    check_mechanism(v, info, n)


def stage_t_closeness(grouping, t):
    """The t_closeness option's stage (see ``tcloseness``)."""
    from .tcloseness import stage

    return stage(grouping, t)


def stage_epsilon(grouping, epsilon):
    """The epsilon option's stage (see ``dp``)."""
    from .dp import stage

    return stage(grouping, epsilon)
