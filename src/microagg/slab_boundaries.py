"""The local search across slab boundaries (the out-of-core mode, ``outofcore.py``).

Slabs are cut by recursive bisection along the principal axes (``outofcore._slab_bounds``), so
every cut is a plane {z : z·a = v} in z-score space, and the slabs are microaggregated
independently: groups on either side of a plane never trade records there. After the slabs,
every cut gets a band: from each slab on either side, whole groups whose centroids lie nearest
the plane (up to ``BAND_SHARE`` of the slab, shared among its cuts), and the neighbourhood local
search (``methods/lsearch.py``) runs on the band. A group joins the band of one cut at most (its
first, lowest-level cut), so the bands are disjoint and run as independent Dask tasks, in any
order with the same result. Every move of the search keeps every group at k records or more,
and a band never holds two strata (cuts are made inside strata), so the partition stays valid.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

import numpy as np

#: share of a slab's records its bands take at most (whole groups nearest each cut bounding it,
#: the share split evenly among those cuts). Measured on 10^6 census records without strata (4
#: slabs, work 8 per record): IL 1.1417 % without the bands, 1.1362 % with this share, 1.1330 % in
#: one slab; at 10^8 (5 cuts bound each slab) the bands hold about 16 % of the records
BAND_SHARE = 0.16

__all__ = [
    "Cut",
    "cuts_of",
    "ancestors",
    "save_band_pieces",
    "band_records",
    "work_share",
    "search_bands",
    "new_groups",
    "apply_bands",
    "drop_groups",
]


@dataclass(frozen=True)
class Cut:
    """One bisection: the plane {z : z·axis = value} (z-score units) between the slabs
    [left[0], left[1]) and [right[0], right[1]) (slab numbers)."""

    axis: np.ndarray
    value: float
    left: tuple[int, int]
    right: tuple[int, int]


def cuts_of(cut_positions: list, bounds: np.ndarray, axes: np.ndarray, first_slab: int) -> list:
    """Cuts of one stratum's bisection: ``cut_positions`` are (axis column, a, c, b, value) from
    ``outofcore._slab_bounds`` (records order[a:c] and order[c:b] on either side), ``bounds`` its
    final slab bounds, ``axes`` the principal axes (columns), ``first_slab`` the stratum's first
    slab number. In the order made, level by level."""
    cuts = []
    for column, a, c, b, value in cut_positions:
        lo, mid, hi = (first_slab + int(np.searchsorted(bounds, x)) for x in (a, c, b))
        cuts.append(Cut(np.ascontiguousarray(axes[:, column]), float(value), (lo, mid), (mid, hi)))
    return cuts


def ancestors(cuts: list, slab: int) -> list:
    """Numbers of the cuts that bound ``slab`` (it lies on one side of them), in level order."""
    return [
        i
        for i, cut in enumerate(cuts)
        if cut.left[0] <= slab < cut.left[1] or cut.right[0] <= slab < cut.right[1]
    ]


def _per_cut(records: int, cuts: int) -> int:
    """Records a slab of ``records`` gives each of the ``cuts`` bounding it."""
    return int(np.ceil(BAND_SHARE * records / max(cuts, 1)))


def _nearest_groups(
    distance: np.ndarray, sizes: np.ndarray, free: np.ndarray, records: int
) -> np.ndarray:
    """The free groups nearest the plane (by ``distance`` of their centroids), until they hold
    ``records`` (the group that reaches it included)."""
    candidates = np.flatnonzero(free)
    candidates = candidates[np.argsort(distance[candidates], kind="stable")]
    reach = np.cumsum(sizes[candidates])
    return candidates[: int(np.searchsorted(reach, records)) + 1]


def save_band_pieces(spill: str, slab: int, cuts: list, Z, rows, labels, means) -> int:
    """In a slab's task: for each cut bounding the slab (``cuts``: (number, Cut) in level order),
    the z-scores, row numbers and slab-local labels of the slab's groups in that cut's band,
    saved as ``band-<cut>/slab-<slab>.npz`` in ``spill``; returns the records saved (the bands'
    share of the work budget is counted from them, ``search_bands``)."""
    sizes = np.bincount(labels, minlength=len(means))
    free = np.ones(len(means), dtype=bool)
    saved = 0
    for number, cut in cuts:
        distance = np.abs(means @ cut.axis - cut.value)
        picked = _nearest_groups(distance, sizes, free, _per_cut(len(Z), len(cuts)))
        if not len(picked):  # every group of the slab is in another cut's band
            continue
        free[picked] = False
        members = np.isin(labels, picked)
        saved += int(members.sum())
        folder = os.path.join(spill, f"band-{number:06d}")
        os.makedirs(folder, exist_ok=True)
        np.savez(
            os.path.join(folder, f"slab-{slab:06d}.npz"),
            Z=Z[members],
            rows=rows[members],
            labels=labels[members],
        )
    return saved


def _band_task(folder: str, offsets: np.ndarray, k: int, seed, clock) -> tuple:
    """One band's search (a Dask task): its pieces joined with global group numbers (slab-local
    label + the slab's ``offsets``), the neighbourhood search, the result saved as
    ``result.npz`` in ``folder`` (rows, the band's groups, their new labels and z-score means);
    returns (records, SSE before, SSE after)."""
    from .labels import group_means, sse
    from .methods.lsearch import neighbourhood_search

    Zs, rows, groups = [], [], []
    for path in sorted(glob.glob(os.path.join(folder, "slab-*.npz"))):
        slab = int(os.path.basename(path)[5:-4])
        with np.load(path) as f:
            Zs.append(f["Z"])
            rows.append(f["rows"])
            groups.append(f["labels"] + offsets[slab])
    Z, rows = np.concatenate(Zs), np.concatenate(rows)
    uniq, start = np.unique(np.concatenate(groups), return_inverse=True)
    before = sse(Z, start)
    if len(uniq) < 2:  # one group: nothing to trade
        new = start
    else:
        new, _ = neighbourhood_search(Z, k, start, seed=seed, deadline=clock.start(len(Z)))
    after = sse(Z, new)
    np.savez(
        os.path.join(folder, "result.npz"),
        rows=rows,
        groups=uniq,
        labels=new,
        means=group_means(Z, new),
    )
    return len(Z), before, after


def band_records(bounding: list, slab_sizes: np.ndarray) -> int:
    """Records the bands will hold, about: BAND_SHARE of every slab bounded by a cut
    (``bounding``: each slab's cuts, ``ancestors``), before the slabs run: the work budget is
    shared by records (``work_share``)."""
    return int(
        sum(
            len(slab_cuts) * _per_cut(int(size), len(slab_cuts))
            for slab_cuts, size in zip(bounding, slab_sizes, strict=True)
        )
    )


def work_share(records: int, banded: int) -> float:
    """Of a work budget, the slabs' part: the slabs' records and the bands' records get the same
    work each."""
    return records / (records + banded)


def search_bands(
    spill, cuts, offsets, k, seed, deadline, scheduler, progress, share, records
) -> list:
    """The bands' searches on ``scheduler`` (one Dask task per cut with a band), sharing ``share``
    of the run's work budget by their ``records`` (what ``save_band_pieces`` saved); returns the
    folders of the bands searched and their (records, SSE before, SSE after)."""
    import dask

    from .blocks import BlockClock, _block_seed, _compute, _workers

    folders = [os.path.join(spill, f"band-{i:06d}") for i in range(len(cuts))]
    folders = [f for f in folders if os.path.isdir(f)]
    if not folders:
        return []
    clock = BlockClock(deadline, records, _workers(scheduler), share)
    tasks = [
        dask.delayed(_band_task, pure=False)(
            folder, offsets, k, _block_seed(seed, 1_000_000 + int(folder[-6:])), clock
        )
        for folder in folders
    ]
    return list(zip(folders, _compute(tasks, scheduler, progress, "slab boundaries"), strict=True))


def _made(labels: np.ndarray) -> int:
    return int(labels.max()) + 1 if len(labels) else 0


def new_groups(searched: list) -> int:
    """Groups the bands' searches made beyond the groups they started with (the search's
    regrouping may split a group of 2k records or more in two)."""
    extra = 0
    for folder, _ in searched:
        with np.load(os.path.join(folder, "result.npz")) as f:
            extra += max(_made(f["labels"]) - len(f["groups"]), 0)
    return extra


def apply_bands(searched: list, labels, public, inverse, first_new: int) -> tuple:
    """The bands' results into the global ``labels`` and published values ``public`` (rows by
    group number, with room for ``new_groups`` from ``first_new`` on; ``inverse``: z-scores to
    original units), in place; returns (SSE change, the group numbers left empty)."""
    change, emptied = 0.0, []
    for folder, (_records, before, after) in searched:
        with np.load(os.path.join(folder, "result.npz")) as f:
            groups, new = f["groups"], f["labels"]
            made = _made(new)
            if made > len(groups):
                fresh = np.arange(first_new, first_new + made - len(groups), dtype=np.int64)
                groups, first_new = np.concatenate([groups, fresh]), first_new + len(fresh)
            labels[f["rows"]] = groups[new]
            public[groups[:made]] = inverse(f["means"])
            emptied.append(groups[made:])
        change += after - before
    return change, (np.concatenate(emptied) if emptied else np.empty(0, dtype=np.int64))


def drop_groups(labels, public, emptied) -> np.ndarray:
    """Renumber the groups without the ``emptied`` ones (bands may dissolve groups): ``labels``
    in place, and ``public`` compacted in place; returns the kept rows of ``public`` (a view)."""
    if not len(emptied):
        return public
    keep = np.ones(len(public), dtype=bool)
    keep[emptied] = False
    number = np.cumsum(keep) - 1
    kept = np.flatnonzero(keep)
    step = 1 << 20  # in place, forward: a kept group's new number is never above its old one
    for a in range(0, len(kept), step):
        part = kept[a : a + step]
        public[number[part]] = public[part]
    for a in range(0, len(labels), step):
        labels[a : a + step] = number[labels[a : a + step]]
    return public[: len(kept)]
