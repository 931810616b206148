"""Partitioned microaggregation on Dask (the out-of-core mode, ``outofcore.py``, runs it in every
slab).

``partitioned_labels`` splits standardised records into spatially coherent blocks (recursive
splits across each block's principal axis at the widest gap near the median, every block
holding max(k, block_size) to 2·max(k, block_size)−1 records), runs any registered method on
every block as one Dask task and combines the labels. Blocked methods leave poor groups behind:
the remainders of dense clusters that had to join distant records of their block, records cut
off from their neighbours. ``refine_labels`` repairs them with exact SSE-lowering moves
(dissolve a group into nearby groups, migrate a record), first inside each block's task, then
across blocks. Every move keeps every group at k records or more, so the result is a valid
partition of all records whatever the method.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from .deadline import Deadline
from .errors import InputError
from .kernels.blocks_refine import dissolve_and_migrate
from .options import LOCAL_SCHEDULERS
from .progress import as_callback, silent

DEFAULT_BLOCK_SIZE = 10_000
# share of the groups (worst by mean squared distance to their centroid) that the refinement tries
# to dissolve or shrink; measured on census-like data (benchmarks/partitioned_il.py)
DEFAULT_REFINE = 0.05
REFINE_PASSES = 2
REFINE_NEIGHBOURS = 8  # nearest group centroids tried for each record
# neighbour queries are approximate, within a factor 1 + REFINE_EPS of the exact distances: the
# moves are evaluated exactly anyway, and exact queries cost ~50x more at high intrinsic dimension
# (i.i.d. Gaussian 10-d) for the same IL on census-like and eia data
REFINE_EPS = 3.0
# a cut is placed at the widest gap within ±CUT_WINDOW·(block length) of the median
CUT_WINDOW = 0.25
# slabs (out of core) are cut nearer the median: on smooth data the widest gap sits at the window's
# edge, and 1:3 cuts compound over the levels into slabs far larger than the others
SLAB_CUT_WINDOW = 0.1


def _min_block(k: int, block_size) -> int:
    """Records per block at least: max(k, block_size) (block_size: the run option's declaration)."""
    from .options import option

    block_size = option("block_size").validate(block_size, None)
    return max(int(k), DEFAULT_BLOCK_SIZE if block_size is None else block_size)


#: Of a work budget (run option ``work``), the part the local search across block boundaries gets
#: (the blocks share the rest by their records): fixed parts, so that blocks run side by side in
#: any order spend the same budgets
ACROSS_WORK_SHARE = 0.2


class BlockClock:
    """The time rule for blocks that run in parallel on ``workers`` workers: a block starting now
    gets ``deadline.share(workers · its records, records not yet started)`` (the rule of
    ``microagg.deadline``, with the parallelism counted). Thread-safe; a copy sent to another
    process (Dask's process or distributed schedulers) counts from the records at sending time."""

    def __init__(self, deadline: Deadline, records: int, workers: int, work_share: float = 1.0):
        self.deadline = deadline
        self.pending = self.total = records
        self.workers = max(int(workers), 1)
        self.work_share = (
            work_share  # of a work budget, for the blocks (the rest: the search across them)
        )
        self._lock = threading.Lock()

    def start(self, records: int) -> Deadline:
        """A block's deadline; its work budget is its records' fixed part of ``work_share`` of the
        whole (not of what is left), so that blocks running in any order get the same budgets."""
        with self._lock:
            child = self.deadline.share(
                min(self.workers * records, self.pending),
                self.pending,
                work_fraction=self.work_share * records / max(self.total, 1),
            )
            self.pending = max(self.pending - records, 0)
        return child

    def __getstate__(self):
        return {
            "deadline": self.deadline,
            "pending": self.pending,
            "workers": self.workers,
            "total": self.total,
            "work_share": self.work_share,
        }

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _principal_axis(Z: np.ndarray) -> np.ndarray:
    """Unit eigenvector of the largest eigenvalue of the covariance of Z's rows."""
    from .standardize import principal_axes

    return principal_axes(Z, 1)[1][:, 0]


def spatial_blocks(Z: np.ndarray, min_size: int) -> list[np.ndarray]:
    """Row indices of spatially coherent blocks of min_size..2·min_size−1 records (one if n <
    2·min_size).

    Each block with at least 2·min_size records is cut across its principal axis at the widest
    gap between consecutive projections in the middle half of its records (``_gap_cut``), so
    cuts pass between clusters of similar records rather than through them.
    """
    n = len(Z)
    out = []
    stack = [np.arange(n)]
    while stack:
        idx = stack.pop()
        if len(idx) < 2 * min_size:
            out.append(idx)
            continue
        proj = Z[idx] @ _principal_axis(Z[idx])
        order = np.argsort(proj, kind="stable")
        cut = _bisect(proj[order], min_size, CUT_WINDOW)
        stack.append(idx[order[cut:]])
        stack.append(idx[order[:cut]])
    out.sort(key=lambda b: b[0] if len(b) else -1)
    return out


def _bisect(sorted_proj: np.ndarray, min_size: int, window: float) -> int:
    """Cut of m >= 2·min_size sorted projections in two parts of min_size records or more, at the
    widest gap within ±window·m of the median."""
    m = len(sorted_proj)
    lo = max(min_size, int(np.ceil(m * (0.5 - window))))
    hi = max(lo, min(m - min_size, int(np.floor(m * (0.5 + window)))))
    return _gap_cut(sorted_proj, lo, hi, m / 2)


def _gap_cut(sorted_proj: np.ndarray, lo: int, hi: int, target: float) -> int:
    """Cut position c in lo..hi (records [:c] | [c:]) at the widest gap of sorted_proj
    (1 <= lo <= hi < len); among equally wide gaps (duplicates) the one nearest target."""
    gaps = sorted_proj[lo : hi + 1] - sorted_proj[lo - 1 : hi]
    widest = lo + np.flatnonzero(gaps == gaps.max())
    return int(widest[np.argmin(np.abs(widest - target))])


def _block_seed(seed, b: int):
    if seed is None:
        return None
    return int(np.random.SeedSequence([int(seed), b]).generate_state(1)[0])


def _run_block(
    Zb: np.ndarray, k: int, method: str, seed, clock: BlockClock, params: dict, refine: float
) -> np.ndarray:
    """One Dask task: the method on one block, then the refinement inside the block."""
    from .labels import relabel
    from .methods import run

    Zb = np.ascontiguousarray(Zb, dtype=np.float64)
    out = run(method, Zb, k, seed=seed, deadline=clock.start(len(Zb)), **params)
    labels = relabel(np.asarray(out.labels, dtype=np.int64))  # 0..g-1 so blocks can be offset
    if refine > 0 and labels.ndim == 1:
        labels = refine_labels(Zb, labels, k, share=refine)
    return labels


def _workers(scheduler) -> int:
    """How many tasks run at once on ``scheduler`` (for the time rule)."""
    if scheduler in ("synchronous", "sync", "single-threaded"):
        return 1
    if scheduler is None or isinstance(scheduler, str) and scheduler in LOCAL_SCHEDULERS:
        return os.cpu_count() or 1
    try:  # a distributed Client: its worker threads
        return max(sum(scheduler.nthreads().values()), 1)
    except Exception:  # an address: unknown until connected; count one
        return 1


def _compute(tasks: list, scheduler, progress=silent, stage="blocks"):
    """The tasks' results in order, on scheduler None (local threads), a name, a Client or an
    address; ``progress(stage, done / total)`` as tasks finish (on the caller's side)."""
    import dask

    total = len(tasks)
    if scheduler is None or isinstance(scheduler, str) and scheduler in LOCAL_SCHEDULERS:
        from dask.callbacks import Callback

        done = [0]
        keys = {t.key for t in tasks}

        def posttask(key, result, dsk, state, worker_id):
            if key in keys:
                done[0] += 1
                progress(stage, done[0] / total, f"{done[0]} of {total}")

        with Callback(posttask=posttask):
            return list(dask.compute(*tasks, scheduler=scheduler or "threads"))
    if isinstance(scheduler, str):
        from distributed import Client

        with Client(scheduler) as client:
            return _compute_on(client, tasks, progress, stage)
    return _compute_on(scheduler, tasks, progress, stage)  # a distributed.Client


def _compute_on(client, tasks, progress, stage):
    from distributed import as_completed

    futures = client.compute(tasks)
    for i, _ in enumerate(as_completed(futures), start=1):
        progress(stage, i / len(futures), f"{i} of {len(futures)}")
    return client.gather(futures)


def partitioned_labels(
    Z,
    k,
    method,
    *,
    block_size,
    scheduler=None,
    seed=None,
    time_limit=None,
    deadline=None,
    progress=None,
    refine=DEFAULT_REFINE,
    **params,
):
    """Labels from microaggregating spatially coherent blocks of Z independently, on Dask.

    Z: standardised (n, d) array. Every block holds at least max(k, block_size) records
    (block_size=None means 10 000). method is any registered method name with its params;
    each block gets a seed derived from (seed, block number). ``deadline`` (or ``time_limit``
    seconds) is the budget of the whole call, shared among the blocks by ``BlockClock``'s rule.
    ``progress`` hears of every finished block.
    scheduler: None (Dask's local threaded scheduler; the numba kernels release the GIL),
    'threads', 'processes', 'synchronous', a dask.distributed Client, or a scheduler address.

    refine: share of the groups (those with the largest mean squared distance to their
    centroid) that ``refine_labels`` tries to dissolve or shrink into nearby groups, inside each
    block (in the block's Dask task), then across blocks (on the caller). With one block the result
    is the method's followed by the refinement; 0 leaves
    the method's groups as they are.
    """
    from .labels import check_k
    from .methods import get
    from .options import option

    Z = np.ascontiguousarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise InputError("Z must be a 2-D array")
    k = check_k(k, len(Z))
    refine = option("refine").validate(refine, None)
    refine = DEFAULT_REFINE if refine is None else refine
    params = get(method).validate(params)  # before any block is cut
    min_size = _min_block(k, block_size)
    deadline = Deadline(time_limit) if deadline is None else deadline
    progress = as_callback(progress)
    progress("blocks", 0.0, "cutting blocks")
    blocks = spatial_blocks(Z, min_size)
    across = refine > 0 and len(blocks) > 1
    clock = BlockClock(
        deadline,
        len(Z),
        _workers(scheduler) if len(blocks) > 1 else 1,
        1.0 - ACROSS_WORK_SHARE if across else 1.0,
    )
    labels = _blockwise_labels(
        Z, k, method, blocks, scheduler, seed, clock, params, float(refine), progress
    )
    if across and labels.ndim == 1:
        labels = refine_labels(Z, labels, k, share=float(refine))
        labels = _search_across_blocks(
            Z, labels, k, seed, deadline.share(1, 1, work_fraction=ACROSS_WORK_SHARE), progress
        )
    return labels


def _search_across_blocks(Z, labels, k, seed, deadline, progress):
    """The neighbourhood local search (methods/lsearch.py) over all groups of all blocks: groups
    on either side of a block boundary trade records, so the blocks cost (almost) nothing in IL."""
    from .methods.lsearch import neighbourhood_search

    progress("lsearch", None, "local search across block boundaries")
    labels, _ = neighbourhood_search(Z, k, labels, seed=seed, deadline=deadline, progress=progress)
    return labels


def _blockwise_labels(Z, k, method, blocks, scheduler, seed, clock, params, refine, progress):
    import dask

    run_block = dask.delayed(_run_block, pure=False)
    if len(blocks) == 1:
        tasks = [run_block(Z, k, method, seed, clock, params, refine)]
    else:
        tasks = [
            run_block(Z[b], k, method, _block_seed(seed, i), clock, params, refine)
            for i, b in enumerate(blocks)
        ]
    results = _compute(tasks, scheduler, progress, f"{method} on {len(blocks)} block(s)")
    # per-variable methods (individual ranking) give one label column per attribute
    labels = np.empty((len(Z),) + results[0].shape[1:], dtype=np.int64)
    offset = 0
    for b, lab in zip(blocks, results, strict=True):
        labels[b] = lab + offset
        offset = offset + lab.max(axis=0) + 1
    return labels


# ----------------------------------------------------------------------------- refinement


def refine_labels(
    Z, labels, k, *, share=DEFAULT_REFINE, passes=REFINE_PASSES, neighbours=REFINE_NEIGHBOURS
) -> np.ndarray:
    """Lower the SSE of a valid k-partition by dissolving groups and migrating records (1-opt).

    Candidates: the ceil(share·g) groups with the largest mean squared distance to their
    centroid, worst first (the groups a blocked method leaves behind: remainders of a dense
    cluster that had to join distant records, records cut off from their neighbours). A candidate
    is dissolved when each of its records can join one of the ``neighbours`` groups nearest to it
    that have fewer than 2k−1 records, for less than the candidate's own SSE; otherwise its
    records migrate one at a time while it keeps more than k and that lowers SSE. Every move is
    exact and lowers SSE, so the result is a valid k-partition if labels was. ``passes`` rounds,
    each with fresh candidates; returns labels 0..g'−1. O(n·d + c·log g) per pass, c = candidate
    records.
    """
    from scipy.spatial import cKDTree

    from .labels import group_means

    Z = np.ascontiguousarray(Z, dtype=np.float64)
    labels = _compact(np.array(labels, dtype=np.int64))
    n = len(Z)
    if share <= 0 or n < 2 * k or k < 2:
        return labels
    tol = 1e-10 * float(np.var(Z, axis=0).sum())  # rounding noise relative to the data's spread
    for _ in range(passes):
        g = int(labels.max()) + 1
        cent = group_means(Z, labels)
        dev = Z - cent[labels]
        sq = np.einsum("ij,ij->i", dev, dev)
        del dev
        spread = np.bincount(labels, weights=sq, minlength=g) / np.bincount(labels, minlength=g)
        candidates = np.argsort(-spread, kind="stable")[: int(np.ceil(share * g))].astype(np.int64)
        is_candidate = np.zeros(g, dtype=bool)
        is_candidate[candidates] = True
        rows = np.flatnonzero(is_candidate[labels])
        m = min(neighbours + 1, g)  # + 1: the record's own group is among the nearest
        _, near = cKDTree(cent).query(Z[rows], k=m, eps=REFINE_EPS)
        nbr_start = np.zeros(n + 1, dtype=np.int64)
        nbr_start[rows + 1] = m
        np.cumsum(nbr_start, out=nbr_start)
        nbr = np.ascontiguousarray(near, dtype=np.int64).reshape(-1)
        dissolved, migrated, _ = dissolve_and_migrate(
            Z, labels, g, k, candidates, nbr_start, nbr, tol
        )
        labels = _compact(labels)
        if dissolved + migrated == 0:
            break
    return labels


def _compact(labels: np.ndarray) -> np.ndarray:
    """Group ids renumbered 0..g-1 keeping their order (ids of emptied groups removed)."""
    present = np.bincount(labels) > 0
    return (np.cumsum(present) - 1)[labels]


# ----------------------------------------------------------------------------- out of core
