"""Names that explain themselves (issue 56): ``microagg.explore`` is the function with its typed
signature; misspelt keywords are unknown options with the name meant."""

from __future__ import annotations

import inspect

import pytest

import microagg


def test_explore_is_a_function_with_its_signature_whatever_was_imported():
    import microagg.explore.grid  # noqa: F401  (the subpackage imported: the name stays the function's)

    assert inspect.isfunction(microagg.explore)
    parameters = inspect.signature(microagg.explore).parameters
    assert list(parameters)[:3] == ["data", "k", "methods"]
    assert parameters["options"].kind is inspect.Parameter.VAR_KEYWORD
    assert microagg.explore.__doc__.startswith("Run the grid")
    from microagg.explore import Exploration, load

    assert microagg.explore.load is load and microagg.explore.Exploration is Exploration


def test_explore_says_which_option_a_misspelt_keyword_meant():
    with pytest.raises(TypeError, match="'stratta': did you mean strata?"):
        microagg.explore([[1.0]], k=[3], stratta="REGION")
