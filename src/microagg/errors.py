"""The user-error family. Everything a user can get wrong raises an ``InputError`` (or a subclass)
whose message is one clear line; the CLI maps exactly these to exit status 2. Any other exception
is a bug of ours and stays a traceback.

The warning family: every warning the package gives is a ``MicroaggWarning`` (a ``UserWarning``),
of a category one can filter on (``warnings.filterwarnings("ignore", category=RolesWarning)``):
``RolesWarning`` (what a column is taken as), ``DisclosureWarning`` (something published
unprotected or at risk), ``OrderWarning`` (the row order), ``FormatWarning`` (what a file format
cannot hold as given), ``RunWarning`` (a method's run: stopped early, a member failed),
``CompilationWarning`` (the first call after an install compiles its kernels). A message
names an option as its caller writes it (``option_term``): ``columns=`` in Python, ``--columns``
on the command line.
"""

from __future__ import annotations

import contextlib

__all__ = [
    "InputError",
    "ParameterError",
    "shown",
    "MicroaggWarning",
    "RolesWarning",
    "DisclosureWarning",
    "OrderWarning",
    "FormatWarning",
    "RunWarning",
    "CompilationWarning",
    "option_term",
    "command_line_terms",
]


class MicroaggWarning(UserWarning):
    """Every warning of microagg (filter the package's warnings on this category)."""


class RolesWarning(MicroaggWarning):
    """What a column is taken as: category codes, a column left unprotected, a constant QI."""


class DisclosureWarning(MicroaggWarning):
    """Something published unprotected, or at a risk the caller should know of."""


class OrderWarning(MicroaggWarning):
    """The published row order tells something about the records."""


class FormatWarning(MicroaggWarning):
    """A file format cannot hold a value or a declaration as given (how it was written instead)."""


class RunWarning(MicroaggWarning, RuntimeWarning):
    """A method's run: stopped before its end, a portfolio member failed, a start repaired."""


class CompilationWarning(MicroaggWarning):
    """The first call after an install compiles the kernels it runs (``microagg compile`` does it
    ahead, once): said on the call's first line when no progress is shown."""


_TERMS = {"door": "python"}  # process-wide: the command line runs its command in a worker thread


@contextlib.contextmanager
def command_line_terms():
    """Within the block (the command line's ``main``), messages name options by their flags."""
    saved = _TERMS["door"]
    _TERMS["door"] = "command line"
    try:
        yield
    finally:
        _TERMS["door"] = saved


def option_term(name: str, flag: str | None = None, value: str | None = None) -> str:
    """How a message names the run option ``name`` to its caller: ``name=`` in Python, its flag
    (``flag``, default ``--name`` with dashes) on the command line; with ``value``, the option
    given that value (``decimal='.'``, ``--decimal .``)."""
    if _TERMS["door"] == "command line":
        named = flag or "--" + name.replace("_", "-")
        return named if value is None else f"{named} {value}"
    return f"{name}=" if value is None else f"{name}={value!r}"


class InputError(ValueError):
    """Bad user input (data, columns, options); the message is one line for the user."""


class ParameterError(InputError, TypeError):
    """A method parameter or a run option has the wrong type, range or choice.

    Raised by the declared-parameter validator (``microagg.declarations``) before any data work. It
    is
    both a ``ValueError`` and a ``TypeError``, as scikit-learn's ``InvalidParameterError``.
    """


def shown(value, limit: int = 40) -> str:
    """``repr(value)`` for a one-line message, at most about ``limit`` characters of it: a value
    read from a file may be megabytes long (a 10 MB field), and a message quotes a bounded prefix.
    """
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= limit + 2 else f"{text[:limit]}... ({len(text):,} characters)"
