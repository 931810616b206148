"""Many category levels (issue 57): whether a run keeps its nominal QIs as codes
(``onehot.OneHot``) or needs their dense one-hot embedding, built within ``onehot.DENSE_MAX_CELLS``
values or refused in one line before any work."""

from __future__ import annotations

from ..options import Run
from .parts import Roles


def needs_dense(roles: Roles, run: Run) -> str | None:
    """What of this run reads the dense embedding (None: nothing, codes are kept): any method
    other than mdav, a household id, the partitioned mode, a privacy model. (Strata and key
    classes run MDAV on the codes of their records; strata's centroids are group sums of the
    codes, ``OneHot.group_sums``.)"""
    from ..options import RUN_OPTIONS

    if run.info.name != "mdav":
        return f"method {run.info.name!r}"
    if roles.households is not None:
        return "a household id"
    if run.block_size is not None or run.scheduler is not None:
        return "the partitioned mode"
    given = run.options
    for p in RUN_OPTIONS:
        if p.stage is not None and p.acts_on == "grouped":
            if _given(given[p.name], p.default):
                return f"{p.name} (a privacy model)"
    return None


def _given(value, default) -> bool:
    """A value other than the default (``stages.grouped_stages``'s rule)."""
    same = isinstance(value, (int, float, str)) and value == default
    return not (value is default or same)


def dense_if_needed(emb, roles: Roles, run: Run):
    """The embedding as the run needs it: codes kept when nothing needs the dense matrix, else
    the dense matrix (``OneHot.dense``: one error line beyond its bound, naming ``why``)."""
    if not emb.compact or (why := needs_dense(roles, run)) is None:
        return emb
    from dataclasses import replace

    return replace(emb, matrix=emb.matrix.dense(why), compact=False)
