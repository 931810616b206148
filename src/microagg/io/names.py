"""The column names the run options give, found in a file's header as it spells them: checked
from the header alone (a misspelt name in a file of millions of rows is one line before the body
is read), by every door that reads a file (``publication``, ``microaggregate`` of a path)."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError

__all__ = ["NAMING_OPTIONS", "check_names", "as_in_header", "option_in_header", "options_in_header"]


#: the run options that name columns (lists, a mapping's keys, or one name)
NAMING_OPTIONS = (
    "columns",
    "strata",
    "categorical",
    "ordinal",
    "continuous",
    "keys",
    "sensitive",
    "household",
    "household_level",
    "sample_weight",
)  # weights and key_importance name QIs and keys: checked against them


def check_names(options: dict, header: list, source: Path) -> None:
    """Every column an option names is in the file's header (as :func:`as_in_header` matches
    it), found from the header alone: a misspelt name in a file of millions of rows is one line
    before the body is read."""
    for option in NAMING_OPTIONS:
        value = options.get(option)
        if value is None or (option == "sample_weight" and not isinstance(value, str)):
            continue  # (sample weights as an array of numbers, not a column)
        given = list(value) if isinstance(value, (list, tuple, dict)) else [value]
        names = [n for n in as_in_header(given, header) if n not in header]
        if names:
            shown = ", ".join(map(str, dict.fromkeys(names)))
            available = ", ".join(map(str, header))
            what = "column(s)" if option == "columns" else f"{option} column(s)"
            raise InputError(
                f"unknown {what}: {shown[:300]}; available in {source.name}: {available[:300]}"
                + ("..." if len(available) > 300 else "")
            )


def as_in_header(names, header) -> list | None:
    """Column names as given (stripped when parsed from a command line) as the file spells them: a
    name matching no column exactly takes the one column whose name it is once stripped."""
    if names is None or (isinstance(names, (list, tuple)) and not names):
        return names
    if isinstance(names, (str, int)) or not isinstance(names, (list, tuple)):
        names = [names]  # one name (or a position, for an array) as the options may give it
    out = []
    for name in names:
        if name not in header:
            near = [h for h in dict.fromkeys(header) if isinstance(h, str) and h.strip() == name]
            if len(near) == 1:
                name = near[0]
        out.append(name)
    return out


def option_in_header(option: str, value, header):
    """One run option's value with the column names it gives as the file's header spells them
    (:func:`as_in_header`): a mapping's keys (ordinal levels, weights by column), one column
    (``sample_weight``: stays one name), or a list of names (one name given alone becomes a list
    of it); numbers (weights per QI, sample weights per record) as they are."""
    if isinstance(value, dict):
        return dict(zip(as_in_header(list(value), header), value.values(), strict=True))
    if option == "sample_weight":
        return as_in_header([value], header)[0] if isinstance(value, str) else value
    if option == "weights":  # not a mapping: one number per QI
        return value
    return as_in_header(value, header) if value else value


def options_in_header(options: dict, header) -> dict:
    """The options among ``options`` that name columns (NAMING_OPTIONS and weights by column),
    each renamed by :func:`option_in_header`: the options as given (``publication.opening``) and
    the validated run's (``publication.stages``) alike."""
    return {
        name: option_in_header(name, options[name], header)
        for name in (*NAMING_OPTIONS, "weights")
        if options.get(name) is not None
    }
