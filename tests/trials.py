"""The one naming convention of the tests' trial extensions (issue 58, item 5).

A test that registers an extension (a file format, a method, an aggregation, a whitening, a run
option, a measure) names it ``trial_<what it is>``, and a format's suffix ``.trial<what>``: no
real extension takes such a name, so a real ``jsonl`` format, a ``winsorized`` aggregation or a
``--round`` option is never refused as "declared already" because a test holds its name. The test
removes what it registered (monkeypatch or try/finally); ``conftest`` checks after every test that
no registry holds a trial name."""

from __future__ import annotations

import importlib

#: the prefix of every trial extension's name (a run option's flag: ``--trial-...``)
TRIAL = "trial_"
#: the start of every trial format's suffix
TRIAL_SUFFIX = ".trial"


def registries() -> dict[str, object]:
    """Every registry an extension enters, by what it holds, as it is now (a registry a test
    monkeypatched is the test's copy until the patch is undone). Nothing is loaded here: a
    registry not filled yet is read empty."""
    from microagg import embedding, methods, representatives, whitening
    from microagg.measures import registry
    from microagg.options import run_options as table

    formats = importlib.import_module("microagg.io.formats")  # microagg.io.formats: a function

    return {
        "formats": formats._REGISTRY,
        "methods": methods._REGISTRY,
        "aggregations": representatives.AGGREGATIONS,
        "whitenings": whitening.WHITENINGS,
        "whitenings (embedding's)": embedding.WHITENINGS,
        "run options": table.DECLARED,
        "run options (table)": [p.name for p in table.RUN_OPTIONS],
        "grid options": table.GRID_OPTIONS,
        "options not for a grid": table.NOT_FOR_A_GRID,
        "measures": registry.MEASURES,
    }


def held_trials() -> dict[str, list[str]]:
    """The trial names (and trial suffixes) each registry holds now; empty when every test
    removed what it registered."""
    formats = importlib.import_module("microagg.io.formats")
    held = {
        what: sorted(name for name in names if str(name).startswith(TRIAL))
        for what, names in registries().items()
    }
    held["format suffixes"] = sorted(
        s for f in formats._REGISTRY.values() for s in f.suffixes if s.startswith(TRIAL_SUFFIX)
    )
    return {what: names for what, names in held.items() if names}
