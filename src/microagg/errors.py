"""The user-error family. Everything a user can get wrong raises an ``InputError`` (or a subclass)
whose message is one clear line; the CLI maps exactly these to exit status 2. Any other exception
is a bug of ours and stays a traceback.
"""

from __future__ import annotations

__all__ = ["InputError", "ParameterError", "shown"]


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
