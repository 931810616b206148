"""Start partitions (warm starts): the ``init`` parameter of icsm, lsearch and colgen.

A start is a registered method's name (run with a share of the caller's deadline) or labels, one
group id per record, e.g. a committed partition to improve further. ``check_starts`` validates
the declaration before any data work; ``start_labels`` makes the labels at run time.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..labels import relabel


def check_start(init, owner: str):
    """One start: a registered method name (not ``owner`` itself, not per-variable) or a 1-D
    array of integer labels (returned as int64)."""
    if isinstance(init, str):
        from . import get

        if init == owner:
            raise ValueError(f"{owner} cannot start from itself; choose another init method")
        if get(init).per_variable:
            raise ValueError(
                f"init {init!r} groups each variable on its own: not a start partition"
            )
        return init
    labels = np.asarray(init)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer) or labels.size == 0:
        raise ValueError("init must be a method name or a 1-D array of integer group labels")
    return labels.astype(np.int64)


def check_starts(init, owner: str) -> list:
    """A list of starts (or one start, or a comma-separated string of method names)."""
    if isinstance(init, str):
        init = [s.strip() for s in init.split(",") if s.strip()]
    elif not isinstance(init, (list, tuple)):
        init = [init]
    return [check_start(one, owner) for one in init]


def check_offers(offers):
    """``offers``: a callable returning partitions (labels) found meanwhile by a search running
    beside (auto's two lanes exchange their partitions so), or None."""
    if offers is not None and not callable(offers):
        raise ValueError("must be a callable returning a list of partitions (labels), or None")
    return offers


def check_lengths(starts: list, n: int, owner: str) -> None:
    """Given labels must have one entry per record: checked before any start is computed."""
    for one in starts:
        if not isinstance(one, str) and np.shape(one) != (n,):
            raise ParameterError(
                f"{owner} init labels must have one entry per record ({n}), got shape"
                f" {np.shape(one)}"
            )


def given_starts(init) -> list:
    """The label arrays among ``init``'s starts (method names left out)."""
    starts = init if isinstance(init, list) else [init]
    return [s for s in starts if s is not None and not isinstance(s, str)]


def check_labels_vs_input(init, n: int, k: int, owner: str, *, min_group: bool = False) -> None:
    """Given start labels against the data, before any method starts: one label per record, and
    with ``min_group`` no group of fewer than k records (methods whose columns or moves need a
    valid partition: colgen, lsearch; icsm and auto repair such a start)."""
    for one in given_starts(init):
        if np.shape(one) != (n,):
            raise ParameterError(
                f"{owner} init labels must have one entry per record ({n}), got shape"
                f" {np.shape(one)}"
            )
        if min_group:
            sizes = np.bincount(relabel(np.asarray(one, dtype=np.int64)))
            if sizes.min() < k:
                raise ParameterError(
                    f"{owner} init labels have a group of {int(sizes.min())} records, "
                    f"fewer than k = {k}"
                )


def start_labels(X, k, init, *, owner: str, seed, deadline, share: float, progress) -> np.ndarray:
    """The labels of one start: ``init``'s partition (the method gets ``share`` of ``deadline``)
    or the given labels, relabelled 0..g-1; labels of the wrong length are a ParameterError."""
    if isinstance(init, str):
        from . import run

        progress(owner, 0.0, f"initial partition ({init})")
        start = run(init, X, k, seed=seed, deadline=deadline.share(share)).labels
    else:
        start = init
    start = np.asarray(start, dtype=np.int64)
    if start.shape != (len(X),):
        raise ParameterError(
            f"{owner} init labels must have one entry per record ({len(X)}), got shape"
            f" {start.shape}"
        )
    return relabel(start)


def given_labels(params: dict) -> bool:
    """Does ``params["init"]`` hold labels (rather than only method names)?"""
    return bool(given_starts(params.get("init")))


def restricted(params: dict, rows) -> dict:
    """``params`` for a subset of the records (a stratum): given start labels cut to ``rows``."""
    if not given_labels(params):
        return params
    init = params["init"]
    cut = [
        s if isinstance(s, str) else np.asarray(s)[rows]
        for s in (init if isinstance(init, list) else [init])
    ]
    return dict(params, init=cut if isinstance(init, list) else cut[0])
