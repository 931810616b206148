"""Choose the protection: a risk-utility map over k and methods (issue 34).

``explore(data, k=[...], methods=[...], time_limit=T)`` runs a grid of protections of one data set
with one set of roles (QIs and kinds, strata, keys, sensitive columns, sampling weights) within
ONE time budget (one ``Deadline``), audits each run with the audit every front end shows
(``measures.audit_files``), and returns an ``Exploration``: one row per run (k, method, parameters,
IL, every utility and risk figure, seconds, whether it is on the Pareto frontier of the chosen
risk measure against IL), the recommended run (the least IL among the runs whose risk is at most
``max_risk``), the R-U confidentiality map as SVG (Duncan, Keller-McNulty & Stokes, "Disclosure
risk vs. data utility: the R-U confidentiality map", NISS technical reports 121 (2001) and 142
(2004)), the table as text, JSON and CSV, and each run's reproduce command.

Runs of an earlier exploration of the same file and roles (``previous=``, or an existing result
file on the command line) are reused, not run again: widening the grid costs only the new runs.
Each run's partition (labels) is kept, in memory and beside a saved result
(``RESULT.labels.npz``), so ``microagg protect --from-explore RESULT.json --pick N`` publishes
exactly that run, even when a time-limited method would not find it again.

The package's modules, in the order of a call:

* ``grid``: the arguments checked before any run (k values, methods, risk, budget) and their
  defaults;
* ``runs``: each run's record (``ExploreRun``), how one run is made and audited, the runs an
  earlier exploration gives again;
* ``planner``: how the one budget is spent (cheap runs first, by measured cost; anytime methods
  bounded by work, so that each run is reproducible at any load);
* ``exploration``: the ``Exploration`` (frontier, recommendation, table, the saved document, the
  reproduce commands) and ``load``;
* ``map``: the picture (the R-U map as SVG) and the HTML page around it.

Framework-free pieces for the app: ``Exploration.rows()`` (the table as dicts),
``Exploration.map_svg(risk)`` (points with ids ``run-N``), ``frontier(points)`` and
``recommend(...)``.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..deadline import Deadline
from ..options import GRID_OPTIONS, given_options
from ..options.unknown_names import suggestion
from .exploration import (
    VERSION,
    Exploration,
    from_explore_command,
    frontier,
    labels_path,
    load,
    recommend,
)
from .grid import (
    DEFAULT_BUDGET,
    DEFAULT_KS,
    DEFAULT_METHODS,
    DEFAULT_RISK,
    Grid,
    checked_budget,
    checked_grid,
    checked_ks,
    checked_methods,
    checked_risk,
    risk_measures,
)
from .map import report_html
from .planner import (
    PROBE_SIZES,
    SCALABLE_EXPONENT,
    SCALABLE_N,
    probe_sizes,
    run_within_budget,
    run_work,
)
from .runs import ExploreRun, grid_runs

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..options.generated import GridOptions
    from ..public_types import DataInput, Progress

__all__ = [
    "checked_budget",
    "checked_ks",
    "checked_methods",
    "checked_risk",
    "explore",
    "Exploration",
    "ExploreRun",
    "frontier",
    "recommend",
    "DEFAULT_KS",
    "DEFAULT_METHODS",
    "DEFAULT_RISK",
    "DEFAULT_BUDGET",
    "load",
    "risk_measures",
    "labels_path",
    "from_explore_command",
    "report_html",
    "run_work",
    "probe_sizes",
    "PROBE_SIZES",
    "SCALABLE_N",
    "SCALABLE_EXPONENT",
    "VERSION",
]


def explore(  # the defaults written out for the signature a reader sees (grid.DEFAULT_*: a test)
    data: DataInput,
    k: Sequence[int] | int = (3, 4, 5, 10),
    methods: Sequence[str] | str = ("mdav", "vmdav", "mdav-mhm", "icsm", "lsearch"),
    *,
    time_limit: float = 60.0,
    risk: str = "record_linkage_dbrl",
    max_risk: float | None = None,
    method_params: Mapping[str, Mapping[str, Any]] | None = None,
    previous: Exploration | tuple | None = None,
    progress: bool | Progress | None = False,
    input_info: dict | None = None,
    **options: Unpack[GridOptions],
) -> Exploration:
    """Run the grid ``k`` × ``methods`` on ``data`` within ``time_limit`` seconds and map it.

    Every run is audited as every front end audits it; every argument is checked before any run
    (ParameterError / InputError in one line). How the budget is spent: ``explore.planner``.

    Parameters
    ----------
    data : DataFrame (pandas, polars), pyarrow.Table, numpy array, path or io.Table
        The microdata to explore, as ``microaggregate`` takes them (a path is read with its
        format's library).
    k : int or list of int, default (3, 4, 5, 10)
        The grid's k values.
    methods : str or list of str, default ("mdav", "vmdav", "mdav-mhm", "icsm", "lsearch")
        The grid's methods: registered method names (``microagg.methods()``).
    time_limit : float, default 60
        The whole exploration's budget in seconds (one deadline: cheap runs first).
    risk : str, default "record_linkage_dbrl"
        The risk measure of the frontier (``risk_measures()``).
    max_risk : float, optional
        The recommended run is the least IL among the runs whose ``risk`` is at most this (in the
        measure's unit: a share 0..1 for linkage); None: the least IL.
    method_params : dict of {method: {parameter: value}}, optional
        Each method's own parameters (``microagg methods -v``), e.g. ``{"vmdav": {"gamma": 0.2}}``.
    previous : Exploration, optional
        An earlier exploration (or a loaded result) of the same data and options: runs reused.
    progress : bool or callable, default False
        True: a bar on a terminal or in a notebook, plain lines in a pipe; a callable receives
        ``progress(stage, fraction, message)``.
    input_info : dict, optional
        What the command line and the app record of an explored file (name, sha256, format).
    **options
        The run options of ``microagg.microaggregate`` the same for every run of the grid
        (``microagg.options.generated.GridOptions``, each documented there: columns, seed,
        strata, weights, aggregation, keys, ...); another name is a TypeError.

    Returns
    -------
    Exploration
        The runs, their frontier, the recommended run, the table and the map (``map_svg()``).

    Examples
    --------
    >>> import microagg
    >>> df = microagg.datasets.load("census").head(200)
    >>> ex = microagg.explore(df, k=[3, 5], methods=["mdav"], columns=["AGI", "FEDTAX"])
    >>> [(run.k, run.method, run.status) for run in ex.runs]
    [(3, 'mdav', 'ok'), (5, 'mdav', 'ok')]
    """
    unknown = [name for name in options if name not in GRID_OPTIONS]
    if unknown:
        meant = suggestion(unknown[0], GRID_OPTIONS)
        raise TypeError(
            f"explore() got an unexpected keyword argument {unknown[0]!r}"
            + (f": did you mean {meant}?" if meant else " (not an option of a grid's runs)")
        )
    given = given_options(options, GRID_OPTIONS)
    grid = checked_grid(k, methods, time_limit, risk, max_risk, method_params, given)
    deadline = Deadline(grid.budget)
    source, roles = _checked_data(data, grid)
    given = {**grid.options, "columns": list(roles.columns)}  # the columns the roles resolved
    runs, data_fingerprint = grid_runs(grid, source.frame, roles, given, previous)
    run_within_budget(runs, grid, _payload(data, source), source, given, deadline, progress)
    return _exploration(runs, grid, roles, given, source, input_info, deadline, data_fingerprint)


def _checked_data(data, grid: Grid):
    """(the data loaded, its roles) after the checks every run makes on them (columns, kinds,
    strata, weights, each k against n): the data's own problems (missing values in a QI, ...) are
    one line before any run, not a failed grid. The column rules' warnings are given once."""
    from .. import pipeline
    from ..labels import check_k

    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        source = pipeline.load(data)
        roles = pipeline.check_params_vs_input(grid.first_run, source)
        pipeline.prepare(source, roles, grid.first_run)
    for w in told:
        warnings.warn(w.message, w.category, stacklevel=3)
    for kv in grid.ks:
        check_k(kv, len(source.frame))
    return source, roles


def _payload(data, source):
    """What each run protects: the table read (a file), the frame (a data frame), else the data."""
    return (
        source.table
        if source.table is not None
        else source.frame
        if source.kind == "native"
        else data
    )


def _exploration(runs, grid: Grid, roles, options, source, input_info, deadline, data_fingerprint):
    """The ``Exploration`` of the runs made: the audit's roles, the options as plain values, the
    budget, the seconds spent and the machine's load."""
    from .. import pipeline

    audit_roles = pipeline.audit_roles(roles, grid.validated[grid.methods[0]])
    return Exploration(
        runs,
        grid.risk,
        grid.max_risk,
        audit_roles.to_dict(),
        _plain_options(options),
        len(source.frame),
        dict(input_info or {}),
        grid.budget,
        deadline.elapsed(),
        _load(),
        data_fingerprint,
    )


def _plain_options(options: dict) -> dict:
    return {
        name: "(an array)" if isinstance(value, np.ndarray) else value
        for name, value in options.items()
    }


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


# ``microagg.explore`` is this function (the package ``microagg`` binds the name to it, not to
# this subpackage: issue 56); the subpackage's public names stay reachable from it as they were
# from the module (``microagg.explore.load(...)``), and importable (``from microagg.explore
# import load``).
for _name in __all__:
    if _name != "explore":
        setattr(explore, _name, globals()[_name])
for _name in ("exploration", "grid", "map", "planner", "runs"):  # the subpackage's modules
    setattr(explore, _name, importlib.import_module(f".{_name}", __name__))
explore.explore = explore
