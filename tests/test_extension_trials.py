"""Extension points that leave room (issue 58, item 5): the tests' own extensions take trial
names (tests/trials.py), remove what they register, and never hold the name a real extension
would take; each registry still refuses a second extension of one name."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from trials import TRIAL, TRIAL_SUFFIX, held_trials, registries

from microagg import methods, options, whitening
from microagg import representatives as reps
from microagg.declarations import Param
from microagg.measures import registry as measure_registry

formats = importlib.import_module("microagg.io.formats")  # microagg.io.formats: a function


def _load_every_registry() -> None:
    """Fill the registries that load on first use, as a run would."""
    formats.all_formats()
    methods.all_methods()


def _read(path, *, missing=()):
    raise AssertionError("a stand-in format is never read here")


def _method(X, k, *, seed, deadline, progress):
    """A stand-in method."""
    return np.arange(len(X)) // k


def _other_method(X, k, *, seed, deadline, progress):
    """Another stand-in method."""
    return np.arange(len(X)) // k


#: for each registry: the name a real extension would take (the one the tests' fixtures took
#: before issue 58), how to register a stand-in under it, how to remove it, what a second
#: registration is refused with, and the names the registry holds
KINDS = {
    "format": (
        "jsonl",
        lambda name: formats.register(
            formats.Format(name, "JSON lines", (f".{name}",), _read, None, family=name)
        ),
        formats.unregister,
        "declared already",
        lambda: formats._REGISTRY,
    ),
    "method": (
        "winsorized_mdav",
        lambda name: methods.register(
            name, family="stand-in", paper="-", complexity="-", variable_size=False
        )(_method),
        lambda name: methods._REGISTRY.pop(name),
        "registered twice",
        lambda: methods._REGISTRY,
    ),
    "aggregation": (
        "winsorized",
        lambda name: reps.register(
            reps.Aggregation(name, "a stand-in", "-", lambda a: name, compute=lambda *a: None)
        ),
        lambda name: reps.AGGREGATIONS.pop(name),
        "already registered",
        lambda: reps.AGGREGATIONS,
    ),
    "whitening": (
        "diagonal",
        lambda name: whitening.register(whitening.Whitening(name, "a stand-in", "-", None)),
        lambda name: whitening.WHITENINGS.pop(name),
        "already registered",
        lambda: whitening.WHITENINGS,
    ),
    "run option": (
        "round",
        lambda name: options.register(Param(name, "float", None, "a stand-in", nullable=True)),
        options.unregister,
        "already declared",
        lambda: options.run_options.DECLARED,
    ),
    "measure": (
        "values_changed",
        lambda name: measure_registry.measure(name, "a stand-in", "share", "-", "risk")(
            lambda inputs: None
        ),
        lambda name: measure_registry.MEASURES.pop(name),
        "registered twice",
        lambda: measure_registry.MEASURES,
    ),
}

#: a second stand-in of the same name (a method or a measure of the same function is the same
#: registration, imported twice; another function under its name is refused)
SECOND = {
    "method": lambda name: methods.register(
        name, family="stand-in", paper="-", complexity="-", variable_size=False
    )(_other_method),
    "measure": lambda name: measure_registry.measure(name, "another", "share", "-", "risk")(
        lambda inputs: 0.0
    ),
}


def test_no_registry_holds_a_trial_name():
    _load_every_registry()
    assert held_trials() == {}
    assert set(registries()) >= {
        "formats",
        "methods",
        "aggregations",
        "whitenings",
        "run options",
        "measures",
    }


def test_the_trial_fixtures_take_trial_names():
    """The extensions the tests declare at import (the others take their trial name where they
    register it, and ``conftest`` finds any left registered)."""
    from test_app_controls import NEW
    from test_io_format_registry import JSONL
    from test_options_own_stage import ROUND

    for declared in (JSONL, ROUND, *NEW):
        assert declared.name.startswith(TRIAL), declared.name
    assert all(s.startswith(TRIAL_SUFFIX) for s in JSONL.suffixes)
    assert all(flag.startswith("--trial-") for p in (ROUND, *NEW) for flag in p.flags)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_real_extension_takes_a_name_the_tests_once_held_and_only_once(kind):
    """The name a real extension would take is free (or a real one of the package holds it):
    a stand-in of a real module registers under it once, a second is refused, and the registry
    is left as it was found."""
    name, register, unregister, refused, held = KINDS[kind]
    _load_every_registry()
    before = list(held())
    if name in before:  # a real extension took it since: it is the package's own
        pytest.skip(f"the package declares a {kind} {name!r}")
    register(name)
    try:
        assert name in held()
        with pytest.raises(ValueError, match=refused):
            SECOND.get(kind, register)(name)
    finally:
        unregister(name)
    assert list(held()) == before
