"""microagg.declarations: declared parameters, their validation and parsing; bad values fail before
any work."""

from __future__ import annotations

import math

import numpy as np
import pytest

import microagg
from microagg import methods
from microagg.errors import InputError, ParameterError


@pytest.mark.parametrize(
    "method,params,match",
    [
        ("vmdav", {"gamma": "abc"}, "gamma must be a number"),
        ("vmdav", {"gamma": float("nan")}, "finite"),
        ("vmdav", {"gamma": -1}, ">= 0"),
        ("vmdav", {"gamma": [1, 2]}, "gamma must be a number"),
        ("vmdav", {"gamma": None}, "got None"),
        ("mdav", {"variant": "fast"}, "one of"),
        ("icsm", {"pool_size": 0}, ">= 1"),
        ("icsm", {"pool_size": 2.5}, "integer"),
        ("icsm", {"init": "icsm"}, "itself"),
        ("genetic", {"pmut": 2}, "<= 1"),
        ("auto", {"portfolio": ["mdav", "nope"]}, "unknown method"),
        ("auto", {"member_params": {"mdav": {"gama": 1}}}, "no parameter"),
        ("projected", {"univariate": "mdav", "univariate_params": {"x": 1}}, "no parameter"),
        ("mdav", {"gamma": 0.2}, "no parameter gamma"),
        ("nope", {}, "unknown method"),
    ],
)
def test_bad_parameters_fail_before_any_data_work(monkeypatch, method, params, match):
    def no_work(*args, **kwargs):
        raise AssertionError("the data were touched before the parameters were checked")

    monkeypatch.setattr(microagg.pipeline, "load", no_work)
    with pytest.raises(ParameterError, match=match):
        microagg.microaggregate(np.zeros((10, 2)), k=3, method=method, **params)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"k": 1}, "k must be an integer >= 2"),
        ({"k": 2.5}, "k must be an integer"),
        ({"time_limit": "5"}, "time_limit"),
        ({"time_limit": -1}, "time_limit"),
        ({"time_limit": -math.inf}, "time_limit"),
        ({"seed": -1}, "seed"),
        ({"columns": 5.5}, "columns"),
        ({"standardize": "no"}, "standardize"),
        ({"progress": "yes"}, "progress"),
        ({"block_size": 0}, "block_size"),
        ({"refine": 0.5}, "refine applies"),
        ({"merge_small_strata": True}, "needs strata"),
    ],
)
def test_bad_options_fail_before_the_data_are_read(monkeypatch, kwargs, match):
    monkeypatch.setattr(
        microagg.pipeline, "load", lambda *a: pytest.fail("data read before the options check")
    )
    with pytest.raises(ParameterError, match=match):
        microagg.microaggregate(np.zeros((10, 2)), **{"k": 3, **kwargs})


def test_parameter_errors_are_input_errors_and_type_errors():
    assert issubclass(ParameterError, InputError) and issubclass(ParameterError, TypeError)
    assert issubclass(InputError, ValueError)


def test_param_parses_command_line_text_by_its_declaration():
    gamma = methods.get("vmdav").params["gamma"]
    assert gamma.parse("0.5") == 0.5
    for bad in ("abc", "nan", "[1,2]", "inf"):
        with pytest.raises(ParameterError):
            gamma.validate(gamma.parse(bad), "vmdav")
    max_it = methods.get("icsm").params["max_iterations"]
    assert max_it.parse("none") is None and max_it.parse("7") == 7
    assert methods.get("kward").params["recompute"].parse("true") is True


# --- generated from the declarations (scikit-learn's check_param_validation) ----------------------


def _declared_cases():
    """(owner, Param, bad API value, bad command-line text or None) for every run option and every
    method parameter, the bad values built from each declaration (params.invalid_values)."""
    from microagg.declarations import invalid_values
    from microagg.options import RUN_OPTIONS

    cases = [(None, p, value, text) for p in RUN_OPTIONS for value, text in invalid_values(p)]
    cases += [
        (info.name, p, value, text)
        for info in methods.all_methods()
        for p in info.params.values()
        for value, text in invalid_values(p)
    ]
    return cases


CASES = _declared_cases()


def _case_id(case):
    owner, p, value, _ = case
    return f"{owner or 'run'}-{p.name}-{type(value).__name__}-{value!r:.20}"


@pytest.fixture
def no_data_work(monkeypatch):
    """The input is never loaded nor read: a bad value must be refused before."""
    import microagg.io
    import microagg.pipeline

    def refuse(*args, **kwargs):
        raise AssertionError("the data were touched before the options and parameters were checked")

    monkeypatch.setattr(microagg.pipeline, "load", refuse)
    monkeypatch.setattr(microagg.io, "read", refuse)


def test_every_option_and_parameter_is_declared_with_bad_values_to_try():
    from microagg.options import RUN_OPTIONS

    owners = {owner for owner, *_ in CASES}
    assert None in owners and set(microagg.methods()) <= owners | {
        info.name for info in methods.all_methods() if not info.params
    }
    assert {p.name for owner, p, *rest in CASES if owner is None} == {p.name for p in RUN_OPTIONS}


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_a_bad_value_fails_before_any_work_in_the_api(case, no_data_work):
    owner, p, value, _ = case
    kwargs = {p.name: value} if owner is None else {"method": owner, p.name: value}
    if p.name != "k":
        kwargs.setdefault("k", 3)
    with pytest.raises(ParameterError) as caught:
        microagg.microaggregate(np.zeros((10, 2)), **kwargs)
    message = str(caught.value)
    assert message and "\n" not in message
    assert p.name in message or (p.flags and p.flags[0] in message) or owner is not None


CLI_CASES = [c for c in CASES if c[3] is not None and (c[0] is not None or c[1].flags)]


@pytest.mark.parametrize("case", CLI_CASES, ids=[_case_id(c) for c in CLI_CASES])
def test_a_bad_value_is_one_line_exit_2_before_any_work_on_the_command_line(
    case, no_data_work, tmp_path, capsys
):
    from microagg.cli import main

    owner, p, _, text = case
    src = tmp_path / "in.csv"
    src.write_text("a,b\n1,2\n3,4\n5,6\n")
    argv = ["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "3", "-q"]
    argv += (
        [p.flags[0], text] if owner is None else ["--method", owner, "--param", f"{p.name}={text}"]
    )
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("microagg: error: ") and err.count("\n") == 1, err
    assert sorted(f.name for f in tmp_path.iterdir()) == ["in.csv"]
