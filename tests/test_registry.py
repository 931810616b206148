"""The method registry (methods/__init__.py): declarations, parameters, the trivial case, kernel
loading."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg import methods
from microagg.errors import InputError


def test_every_registered_method_is_listed():
    names = microagg.methods()
    for required in ("mdav", "vmdav", "md", "univariate-optimal", "univariate-fixed"):
        assert required in names
    assert names == sorted(names)


def test_unknown_method_and_parameter_are_errors():
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match="unknown method"):
        microagg.microaggregate(X, k=3, method="nope")
    with pytest.raises(ValueError, match=r"unknown option 'gama': did you mean gamma \(a param"):
        microagg.microaggregate(X, k=3, method="mdav", gama=0.2)
    with pytest.raises(ValueError, match="'gamma' is a parameter of method vmdav, not of 'mdav'"):
        microagg.microaggregate(X, k=3, method="mdav", gamma=0.2)


def test_every_method_declares_its_parameters_once():
    for info in methods.all_methods():
        sig = inspect.signature(info.func)
        keywords = [p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
        assert set(keywords) == {"seed", "deadline", "progress", *info.params}, info.name
        assert all(p.default is inspect.Parameter.empty for p in sig.parameters.values()), info.name
        for p in info.params.values():
            assert p.doc and p.describe()
            p.validate(p.default, info.name)  # every default passes its own declaration


def test_load_kernels_runs_a_package_method_once_per_process(monkeypatch, spy_method):
    seen = []
    real_run = methods.run

    def counting_run(name, X, k, **kwargs):
        seen.append((name, X.shape, k))
        return real_run(name, X, k, **kwargs)

    monkeypatch.setattr(methods, "_WARM", set())
    monkeypatch.setattr(methods, "run", counting_run)
    methods.load_kernels("mdav")
    methods.load_kernels("mdav")
    methods.load_kernels("univariate-optimal")
    assert seen == [("mdav", (40, 3), 3), ("univariate-optimal", (40, 1), 3)]
    # a caller's own method is never run behind its back: its one run is the real one
    microagg.microaggregate(np.arange(12.0)[:, None], k=3, method="trial_spy")
    assert len(spy_method) == 1 and seen[2:] == [("trial_spy", (12, 1), 3)]
    # a bad input is refused before any loading (one error, no work)
    df = pd.DataFrame({"x": np.arange(12.0)})
    with pytest.raises(InputError, match="unknown strata"):
        microagg.microaggregate(df, k=3, method="icsm", strata="nope")
    assert "icsm" not in methods._WARM and seen[3:] == []


def test_trivial_case_is_answered_once_with_its_exact_bound():
    X = np.random.default_rng(6).normal(size=(5, 2))
    out = methods.run("mdav", X, 3)
    assert out.extras.get("trivial") and np.all(out.labels == 0)
    assert out.lower_bound == pytest.approx(((X - X.mean(axis=0)) ** 2).sum())


@pytest.mark.parametrize(
    "method, params, match",
    [
        (
            "kward",
            {"criterion": "pv", "variable": 5},
            "kward parameter variable must be a column index in 0..1",
        ),
        ("projected", {"projection": "pv", "variable": 2}, "column index in 0..1"),
        ("colgen", {"init": [np.zeros(30, dtype=np.int64)]}, "one entry per record"),
        (
            "colgen",
            {"init": [np.r_[np.zeros(38, dtype=np.int64), 1, 1]]},
            "a group of 2 records, fewer than k = 3",
        ),
        ("lsearch", {"init": np.r_[np.zeros(39, dtype=np.int64), 1]}, "a group of 1 records"),
        ("icsm", {"init": np.zeros(7, dtype=np.int64)}, "one entry per record"),
        ("auto", {"portfolio": ["mdav", "univariate-optimal"]}, "univariate method"),
        (
            "colgen",
            {
                "resume": {
                    "n": 10,
                    "k": 3,
                    "ptr": [0],
                    "members": [],
                    "cuts": np.zeros((0, 3)),
                    "seed_nodes": 1,
                }
            },
            "not of these 40 records",
        ),
    ],
)
def test_parameters_that_do_not_fit_the_data_fail_before_any_method_starts(
    method, params, match, monkeypatch
):
    """The one named hook (MethodInfo.check_params_vs_input): ParameterErrors that colgen,
    kward, lsearch and auto raised after data work are raised before any method runs."""
    monkeypatch.setattr(methods, "load_kernels", lambda name: pytest.fail("a method started"))
    X = np.random.default_rng(0).normal(size=(40, 2))
    with pytest.raises(InputError, match=match):
        microagg.microaggregate(X, k=3, method=method, **params)


def test_a_method_is_found_importing_only_its_own_module():
    """The first call validates its method without importing every method's module (issue 56: a
    first call's seconds): a name whose module registers it imports that module alone, any other
    name still finds its method among all of them, and an unknown one lists them all."""
    import subprocess
    import sys

    script = (
        "import sys; from microagg import methods, options\n"
        "options.validate_run({'method': 'mdav'}, {})\n"
        "print(sorted(m.split('.')[-1] for m in sys.modules if m.startswith(methods.__name__)))\n"
        "print(methods._LOADED, methods.get('vmdav').name, methods.get('mdav-mhm').name)\n"
        "print(methods._LOADED, methods.names() == sorted(methods._REGISTRY))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert "mdav" in out[0] and "icsm" not in out[0] and "tsp" not in out[0]
    assert out[1] == "False vmdav mdav-mhm"  # vmdav: registered with mdav; mdav-mhm: all loaded
    assert out[2] == "True True"
    with pytest.raises(microagg.errors.ParameterError, match="known methods: .*mdav"):
        methods.get("no-such-method")
