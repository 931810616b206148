"""A keyword that names nothing: an unknown option, said with the name it was probably meant as
(issue 56: ``stratta="region"`` was blamed on the method as a parameter it lacks).

The close names come from ``difflib`` over every run option and every registered method's
parameters; a few names other libraries use for an option are pointed at it (``random_state``,
scikit-learn's seed, is ``seed``).
"""

from __future__ import annotations

import difflib

from ..errors import ParameterError

__all__ = ["ALIASES", "suggestion", "unknown_keyword_error"]

#: other libraries' names for a run option (scikit-learn, pandas, sdcMicro's R arguments)
ALIASES = {
    "random_state": "seed",
    "rng": "seed",
    "n_jobs": "threads",
    "verbose": "progress",
    "quasi_identifiers": "columns",
    "qis": "columns",
    "keyVars": "keys",
    "key_vars": "keys",
    "strataVar": "strata",
    "strata_var": "strata",
    "weightVar": "sample_weight",
    "aggr": "k",
}


def suggestion(name: str, candidates) -> str | None:
    """The name ``name`` was probably meant as: an alias's target, else the closest candidate."""
    candidates = list(dict.fromkeys(candidates))
    target = ALIASES.get(name)
    if target is not None and target in candidates:
        return target
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.7)
    return close[0] if close else None


def unknown_keyword_error(
    name: str, run_options, method: str, method_params, all_params: dict, flag=None
) -> ParameterError:
    """The error for a keyword that is neither a run option nor a parameter of ``method``:
    an unknown option, with "did you mean ...?", or a parameter of other methods named as such.
    ``all_params``: method -> its parameters' names; ``flag``: how a caller writes an option
    (``--strata`` on the command line), default the name itself."""
    show = flag or (lambda option: option)
    others = sorted(m for m, params in all_params.items() if name in params and m != method)
    if others:
        return ParameterError(
            f"{method!r} has no parameter {name}: {name!r} is a parameter of method"
            f" {', '.join(others)}, not of {method!r}"
            f" (its parameters: {', '.join(method_params) or 'none'})"
        )
    meant = suggestion(name, list(run_options) + list(method_params))
    hint = f": did you mean {show(meant) if meant in run_options else meant}?" if meant else ""
    if not meant:  # another method's parameter, misspelt
        owners = {p: m for m, params in sorted(all_params.items()) for p in params}
        meant = suggestion(name, owners)
        hint = f": did you mean {meant} (a parameter of method {owners[meant]})?" if meant else ""
    return ParameterError(
        f"unknown option {name!r}{hint} (neither a run option nor a parameter of method"
        f" {method!r}; the options: microagg.options.RUN_OPTIONS, the method's: microagg methods"
        " -v)"
    )
