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


def _coded_frame():
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(3)
    return pd.DataFrame({"x": rng.normal(size=200), "code": rng.integers(0, 5, size=200)})


def test_warnings_have_the_package_s_categories_and_speak_python_in_python():
    import warnings

    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        microagg.microaggregate(_coded_frame(), k=3, columns=["x", "code"])
    codes = [w for w in told if "look like category codes" in str(w.message)]
    assert codes and issubclass(codes[0].category, microagg.RolesWarning)
    assert issubclass(microagg.RolesWarning, microagg.MicroaggWarning)
    assert issubclass(microagg.MicroaggWarning, UserWarning)
    assert "continuous=" in str(codes[0].message) and "--continuous" not in str(codes[0].message)
    for name in ("DisclosureWarning", "OrderWarning", "FormatWarning", "RunWarning"):
        assert issubclass(getattr(microagg, name), microagg.MicroaggWarning)


def test_the_command_line_s_warnings_name_its_flags(tmp_path, capsys):
    from microagg.cli import main

    _coded_frame().to_csv(tmp_path / "in.csv", index=False)
    code = main(
        ["protect", str(tmp_path / "in.csv"), "-o", str(tmp_path / "out.csv"), "-k", "3",
         "--columns", "x,code", "-q"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0 and "look like category codes" in err
    assert "--continuous" in err and "continuous=" not in err
    from microagg.errors import option_term

    assert option_term("columns") == "columns="  # the command line's terms end with its call


def test_explore_s_written_out_defaults_are_the_grid_s():
    from microagg.explore import grid

    parameters = inspect.signature(microagg.explore).parameters
    assert tuple(parameters["k"].default) == tuple(grid.DEFAULT_KS)
    assert tuple(parameters["methods"].default) == tuple(grid.DEFAULT_METHODS)
    assert parameters["time_limit"].default == grid.DEFAULT_BUDGET
    assert parameters["risk"].default == grid.DEFAULT_RISK
