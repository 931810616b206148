"""The pipeline of one run, in stages, one function each:

    load -> check_params_vs_input -> prepare -> group -> publish_values -> measure

``load`` takes the input (a DataFrame, an array, a path or an ``io.Table``) as a frame;
``check_params_vs_input`` checks the validated run options against the data (columns and their
kinds, strata, weights, k against n: the one named hook for what needs the data, run right after
loading and before any method starts); ``prepare`` builds the matrix the method sees (kinds,
missing values, z-scores, the Gower-type embedding, the distance whitening, variable weights);
``group`` runs the method (inside each stratum, in blocks in the partitioned mode), after
checking its parameters against each part (``MethodInfo.check_params_vs_input``);
``cover_missing`` merges groups where QI values are missing, so that every published mean is over
at least k present values (``missing_values``);
``publish_values`` computes what each group publishes (``representatives``) in the input's own kind,
then runs the run options' own stages on the published values (``Param.stage``,
``PublishedValues``);
``measure`` is the run's audit (``measures``: IL, SSE, SST, the bound and gap, weighted IL,
categorical changes). ``microaggregate`` (api.py) is these calls; the out-of-core mode
(outofcore.py) drives the same stages' homes over chunks. One module per part of the run:
``parts`` (the stages' results), ``inputs``, ``grouping``, ``outputs`` and ``audit_and_order``.
"""

from .audit_and_order import (
    audit,
    audit_roles,
    deferred_audit,
    frame_of,
    reorder,
    shuffle_order,
)
from .grouping import group
from .inputs import check_params_vs_input, import_dependencies, load, prepare
from .option_stages import grouped_stages
from .outputs import measure, publish_values
from .parts import (
    GROUP_MEANS,
    Grouped,
    Grouping,
    Prepared,
    Published,
    PublishedValues,
    Roles,
    Source,
)
from .present import cover_missing, note_missing

__all__ = [
    "Source",
    "Roles",
    "Prepared",
    "Grouped",
    "Published",
    "PublishedValues",
    "Grouping",
    "grouped_stages",
    "GROUP_MEANS",
    "load",
    "check_params_vs_input",
    "prepare",
    "group",
    "cover_missing",
    "note_missing",
    "publish_values",
    "measure",
    "audit_roles",
    "audit",
    "deferred_audit",
    "shuffle_order",
    "frame_of",
    "reorder",
    "import_dependencies",
]
