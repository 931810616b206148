"""The published data's file audit (``audit``, deferred to its first read by
``deferred_audit``) and the order the records are published in (``shuffle_order``, ``reorder``)."""

from __future__ import annotations

import numpy as np

from ..options import Run
from .parts import Prepared, Published, Roles, Source

# --- the published file's audit and its row order ------------------------------------------------


def audit_roles(roles: Roles, run: Run, p: float = 10.0):
    """The roles the file audit needs (``measures.AuditRoles``), from the run's."""
    from ..measures import AuditRoles

    sw = roles.sample_weight_column
    return AuditRoles(
        tuple(roles.columns),
        dict(roles.kinds),
        roles.k,
        tuple(roles.strata),
        tuple(roles.keys),
        tuple(roles.sensitive),
        sw,
        dict(run.ordinal or {}),
        bool(run.standardize),
        p=float(p),
        household=tuple(roles.household),
        household_level=tuple(roles.households.level) if roles.households is not None else (),
        missing=tuple(str(t) for t in run.missing or ()),
    )


def frame_of(data, columns) -> object:
    """Data (a DataFrame, or an array of the input's shape) as a DataFrame with ``columns``."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if not isinstance(data, np.ndarray):  # a polars, pyarrow, ... frame
        from ..frames import to_pandas

        return to_pandas(data)
    return pd.DataFrame(np.asarray(data).reshape(len(data), -1), columns=columns)


def audit(
    source: Source,
    roles: Roles,
    prepared: Prepared,
    published: Published,
    run: Run,
    p: float = 10.0,
):
    """The published data's audit (``measures.audit_files``: utility and disclosure risk on the key
    variables, grouped as the data are given), in the input's row order; the run's embedding of
    the original is the audit's (not built again: 1.5 s at 10^6 x 13)."""
    from ..measures.file_audit import audit_files, embedding_key

    frame = frame_of(published.data, source.frame.columns)
    given = audit_roles(roles, run, p)
    return audit_files(
        source.frame,
        frame,
        given,
        sample_weights=roles.sample_weights if roles.sample_weight_column is None else None,
        seed=run.seed,
        cache={embedding_key(given): prepared.embedding},
    )


def deferred_audit(
    source: Source, roles: Roles, prepared: Prepared, published: Published, run: Run
):
    """``audit`` of this run, computed when ``Result.audit`` is first read
    (``result.PendingAudit``), on the input and the published data as they are now: pandas'
    copy-on-write keeps a shallow copy of a frame from the caller's later edits (free), an array
    is copied."""
    from dataclasses import replace

    from ..result import PendingAudit

    def snapshot(data):
        if hasattr(data, "iloc"):
            return data.copy(deep=False)
        if isinstance(data, np.ndarray):
            return np.array(data, copy=True)
        return data  # a pyarrow or polars frame: immutable, every edit makes a new one

    return PendingAudit(
        audit,
        replace(source, frame=snapshot(source.frame)),
        roles,
        prepared,
        replace(published, data=snapshot(published.data)),
        run,
        embedding=prepared.embedding,
    )


def shuffle_order(run: Run, frame) -> np.ndarray | None:
    """The order the records are published in: None (the input's), or with ``shuffle`` a uniformly
    random permutation (``measures.risk.shuffle_permutation``; households together when a household
    column is given), from fresh operating-system entropy unless the API's ``shuffle_seed`` is
    given. The permutation is never kept or written: with it (or the seed) anyone could undo it."""
    if not run.shuffle:
        return None
    from ..measures.risk.order import shuffle_permutation

    groups = None
    if run.household:
        from ..households import household_codes

        groups = household_codes(frame, run.household)
    return shuffle_permutation(len(frame), run.shuffle_seed, groups=groups)


def reorder(data, order: np.ndarray):
    """``data``'s rows in ``order`` (a DataFrame gets a fresh 0..n-1 index: no trace of the old
    positions)."""
    if hasattr(data, "iloc"):
        return data.iloc[order].reset_index(drop=True)
    if not isinstance(data, np.ndarray):  # a polars, pyarrow, ... frame
        from ..frames import take_rows

        return take_rows(data, order)
    return np.asarray(data)[order]
