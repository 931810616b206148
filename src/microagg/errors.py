"""The user-error family. Everything a user can get wrong raises an ``InputError`` (or a subclass)
whose message is one clear line; the CLI maps exactly these to exit status 2. Any other exception
is a bug of ours and stays a traceback.
"""

from __future__ import annotations

__all__ = ["InputError", "ParameterError"]


class InputError(ValueError):
    """Bad user input (data, columns, options); the message is one line for the user."""


class ParameterError(InputError, TypeError):
    """A method parameter or a run option has the wrong type, range or choice.

    Raised by the declared-parameter validator (``microagg.params``) before any data work. It is
    both a ``ValueError`` and a ``TypeError``, as scikit-learn's ``InvalidParameterError``.
    """
