"""Partitioned and out-of-core microaggregation on Dask.

``partitioned_labels`` splits standardised records into spatially coherent blocks (recursive
splits across each block's principal axis at the widest gap near the median, every block
holding max(k, block_size) to 2·max(k, block_size)−1 records), runs any registered method on
every block as one Dask task and combines the labels. Blocked methods leave poor groups behind:
the remainders of dense clusters that had to join distant records of their block, records cut
off from their neighbours. ``refine_labels`` repairs them with exact SSE-lowering moves
(dissolve a group into nearby groups, migrate a record), first inside each block's task, then
across blocks. Every move keeps every group at k records or more, so the result is a valid
partition of all records whatever the method.

``protect_out_of_core`` does the same for data larger than memory, read from a Parquet dataset
or a CSV file in chunks: pass 1 computes the global means, deviations and covariance; pass 2
projects every record on the L leading principal axes (L floats per record) and bisects the
records L times, level j across axis j, at the widest gap near the median as the blocks are
cut, into 2^L slabs of about ``slab_blocks`` blocks; pass 3 spills each slab's standardised
quasi-identifiers to disk; each slab is then one Dask task (partitioned microaggregation inside
the slab) returning labels and group means; pass 4 writes the output in input order, one
Parquet file per input chunk, quasi-identifiers replaced by their group's mean and every other
column unchanged.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
import threading

import numpy as np
from numba import njit

from .clock import Deadline
from .errors import ParameterError
from .kernels.groups import group_sums
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
    if block_size is None:
        block_size = DEFAULT_BLOCK_SIZE
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ParameterError(f"block_size must be a positive integer, got {block_size!r}")
    return max(int(k), int(block_size))


def _check_share(refine) -> None:
    if isinstance(refine, bool) or not isinstance(refine, (int, float, np.integer, np.floating)) or not 0 <= refine <= 1:
        raise ParameterError(f"refine must be a share between 0 and 1, got {refine!r}")


class BlockClock:
    """The time rule for blocks that run in parallel on ``workers`` workers: a block starting now
    gets ``deadline.share(workers · its records, records not yet started)`` (the rule of
    ``microagg.clock``, with the parallelism counted). Thread-safe; a copy sent to another
    process (Dask's process or distributed schedulers) counts from the records at sending time."""

    def __init__(self, deadline: Deadline, records: int, workers: int):
        self.deadline = deadline
        self.pending = records
        self.workers = max(int(workers), 1)
        self._lock = threading.Lock()

    def start(self, records: int) -> Deadline:
        with self._lock:
            child = self.deadline.share(min(self.workers * records, self.pending), self.pending)
            self.pending = max(self.pending - records, 0)
        return child

    def __getstate__(self):
        return {"deadline": self.deadline, "pending": self.pending, "workers": self.workers}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _principal_axis(Z: np.ndarray) -> np.ndarray:
    """Unit eigenvector of the largest eigenvalue of the covariance of Z's rows."""
    from .preprocess import principal_axes

    return principal_axes(Z, 1)[1][:, 0]


def spatial_blocks(Z: np.ndarray, min_size: int) -> list[np.ndarray]:
    """Row indices of spatially coherent blocks of min_size..2·min_size−1 records (one if n < 2·min_size).

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
    gaps = sorted_proj[lo:hi + 1] - sorted_proj[lo - 1:hi]
    widest = lo + np.flatnonzero(gaps == gaps.max())
    return int(widest[np.argmin(np.abs(widest - target))])


def _block_seed(seed, b: int):
    if seed is None:
        return None
    return int(np.random.SeedSequence([int(seed), b]).generate_state(1)[0])


def _run_block(Zb: np.ndarray, k: int, method: str, seed, clock: BlockClock, params: dict, refine: float) -> np.ndarray:
    """One Dask task: the method on one block, then the refinement inside the block."""
    from .methods import run
    from .partition import relabel

    Zb = np.ascontiguousarray(Zb, dtype=np.float64)
    out = run(method, Zb, k, seed=seed, deadline=clock.start(len(Zb)), **params)
    labels = relabel(np.asarray(out.labels, dtype=np.int64))  # 0..g-1 so blocks can be offset
    if refine > 0 and labels.ndim == 1:
        labels = refine_labels(Zb, labels, k, share=refine)
    return labels


LOCAL_SCHEDULERS = ("threads", "processes", "synchronous", "sync", "single-threaded")


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


def partitioned_labels(Z, k, method, *, block_size, scheduler=None, seed=None, time_limit=None, deadline=None,
                       progress=None, refine=DEFAULT_REFINE, **params):
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
    block (in the block's Dask task), then across blocks (on the caller). With one block the result is the method's followed by the refinement; 0 leaves
    the method's groups as they are.
    """
    from .methods import get
    from .preprocess import check_k

    Z = np.ascontiguousarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise ValueError("Z must be a 2-D array")
    k = check_k(k, len(Z))
    _check_share(refine)
    params = get(method).validate(params)  # before any block is cut
    min_size = _min_block(k, block_size)
    deadline = Deadline(time_limit) if deadline is None else deadline
    progress = as_callback(progress)
    progress("blocks", 0.0, "cutting blocks")
    blocks = spatial_blocks(Z, min_size)
    clock = BlockClock(deadline, len(Z), _workers(scheduler) if len(blocks) > 1 else 1)
    labels = _blockwise_labels(Z, k, method, blocks, scheduler, seed, clock, params, float(refine), progress)
    if refine > 0 and len(blocks) > 1 and labels.ndim == 1:
        labels = refine_labels(Z, labels, k, share=float(refine))
        labels = _search_across_blocks(Z, labels, k, seed, deadline, progress)
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
        tasks = [run_block(Z[b], k, method, _block_seed(seed, i), clock, params, refine)
                 for i, b in enumerate(blocks)]
    results = _compute(tasks, scheduler, progress, f"{method} on {len(blocks)} block(s)")
    # per-variable methods (individual ranking) give one label column per attribute
    labels = np.empty((len(Z),) + results[0].shape[1:], dtype=np.int64)
    offset = 0
    for b, lab in zip(blocks, results):
        labels[b] = lab + offset
        offset = offset + lab.max(axis=0) + 1
    return labels


# ----------------------------------------------------------------------------- refinement


@njit(cache=True, nogil=True)
def _join_cost(Z, i, sums, sizes, q):
    """SSE increase when record i joins group q: m/(m+1)·|x − c_q|²."""
    m = sizes[q]
    s = 0.0
    for t in range(Z.shape[1]):
        v = Z[i, t] - sums[q, t] / m
        s += v * v
    return m / (m + 1.0) * s


@njit(cache=True, nogil=True)
def _refine_kernel(Z, labels, g, k, candidates, nbr_start, nbr, tol):
    """Dissolve and migrate moves over the candidate groups, in order; labels updated in place.

    Dissolve: every record of group p joins one of its listed neighbour groups (the cheapest with
    room), p disappears. Migrate: a record leaves p (while p has more than k) for the cheapest
    listed group with room. "Room": fewer than 2k−1 records. A move is applied only when its exact
    SSE change is below −tol, so every group keeps at least k records and SSE only falls.
    nbr[nbr_start[i]:nbr_start[i+1]]: groups near record i (empty for non-candidates).
    Returns (groups dissolved, records migrated, SSE change).
    """
    n, d = Z.shape
    full = 2 * k - 1
    sizes, sums, start, members = group_sums(Z, labels, g)
    changed = np.zeros(g, dtype=np.bool_)  # member lists of changed groups are stale
    picked = np.zeros(g, dtype=np.int64)  # records promised to a group by the dissolve being planned
    target = np.empty(max(1, sizes.max()), dtype=np.int64)
    dissolved, migrated, total = 0, 0, 0.0
    for p in candidates:
        mp = sizes[p]
        if mp == 0:
            continue
        if not changed[p]:
            own = 0.0  # SSE of p
            for a in range(mp):
                i = members[start[p] + a]
                for t in range(d):
                    v = Z[i, t] - sums[p, t] / mp
                    own += v * v
            # plan: each record to its cheapest neighbour group with room (centroid shifts ignored)
            planned, nt = 0.0, 0
            for a in range(mp):
                i = members[start[p] + a]
                best, bq = np.inf, -1
                for b in range(nbr_start[i], nbr_start[i + 1]):
                    q = nbr[b]
                    if q == p or sizes[q] == 0 or sizes[q] + picked[q] >= full:
                        continue
                    v = _join_cost(Z, i, sums, sizes, q)
                    if v < best:
                        best, bq = v, q
                if bq < 0 or planned + best - own >= -tol:
                    break
                target[nt] = bq
                nt += 1
                picked[bq] += 1
                planned += best
            for a in range(nt):
                picked[target[a]] = 0
            if nt == mp:
                # exact change: records join one after another (a group may take two of them)
                delta = -own
                for a in range(mp):
                    i = members[start[p] + a]
                    q = target[a]
                    delta += _join_cost(Z, i, sums, sizes, q)
                    sizes[q] += 1
                    for t in range(d):
                        sums[q, t] += Z[i, t]
                if delta < -tol:
                    for a in range(mp):
                        labels[members[start[p] + a]] = target[a]
                        changed[target[a]] = True
                    sizes[p] = 0
                    dissolved += 1
                    total += delta
                    continue
                for a in range(mp):  # undo
                    i = members[start[p] + a]
                    q = target[a]
                    sizes[q] -= 1
                    for t in range(d):
                        sums[q, t] -= Z[i, t]
        for a in range(start[p], start[p + 1]):
            mp = sizes[p]
            if mp <= k:
                break
            i = members[a]
            if labels[i] != p:
                continue
            leave = 0.0
            for t in range(d):
                v = Z[i, t] - sums[p, t] / mp
                leave += v * v
            leave *= mp / (mp - 1.0)
            best, bq = np.inf, -1
            for b in range(nbr_start[i], nbr_start[i + 1]):
                q = nbr[b]
                if q == p or sizes[q] == 0 or sizes[q] >= full:
                    continue
                v = _join_cost(Z, i, sums, sizes, q)
                if v < best:
                    best, bq = v, q
            if bq >= 0 and best - leave < -tol:
                labels[i] = bq
                sizes[p] -= 1
                sizes[bq] += 1
                for t in range(d):
                    sums[p, t] -= Z[i, t]
                    sums[bq, t] += Z[i, t]
                changed[p] = True
                changed[bq] = True
                migrated += 1
                total += best - leave
    return dissolved, migrated, total


def refine_labels(Z, labels, k, *, share=DEFAULT_REFINE, passes=REFINE_PASSES,
                  neighbours=REFINE_NEIGHBOURS) -> np.ndarray:
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

    from .partition import group_means

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
        dissolved, migrated, _ = _refine_kernel(Z, labels, g, k, candidates, nbr_start, nbr, tol)
        labels = _compact(labels)
        if dissolved + migrated == 0:
            break
    return labels


def _compact(labels: np.ndarray) -> np.ndarray:
    """Group ids renumbered 0..g-1 keeping their order (ids of emptied groups removed)."""
    present = np.bincount(labels) > 0
    return (np.cumsum(present) - 1)[labels]


# ----------------------------------------------------------------------------- out of core


def _is_parquet(input_path: str) -> bool:
    return os.path.isdir(input_path) or input_path.lower().endswith((".parquet", ".pq"))


def _chunks(input_path: str, columns, chunk_rows: int, numeric=()):
    """Yield DataFrame chunks of the input in order (Parquet file / directory of files, or CSV).

    A CSV is read as text, every field exactly as written (the separator and encoding
    detected as ``io.read`` detects them), so the other columns come out as they came in (codes such as 00123,
    NA, null and blanks kept apart); the ``numeric`` columns (the QIs) are parsed as numbers (a
    blank cell is missing, and reported as such; another cell that is not a number an InputError)."""
    import pandas as pd

    if _is_parquet(input_path):
        import pyarrow.parquet as pq

        files = [input_path] if os.path.isfile(input_path) else sorted(
            glob.glob(os.path.join(input_path, "**", "*.parquet"), recursive=True))
        if not files:
            raise ValueError(f"no Parquet files found in {input_path}")
        for f in files:
            pf = pq.ParquetFile(f)
            for batch in pf.iter_batches(batch_size=chunk_rows, columns=columns):
                yield batch.to_pandas()
    else:
        from collections import defaultdict

        from .errors import InputError
        from .io import sniff_csv

        sep, encoding = sniff_csv(input_path)
        # the QIs parsed by pandas' C parser (a blank cell is missing); every other column as its text
        reader = pd.read_csv(input_path, sep=sep, encoding=encoding, chunksize=chunk_rows, usecols=columns,
                             dtype=defaultdict(lambda: str, {c: "float64" for c in numeric}),
                             keep_default_na=False, na_values={c: [""] for c in numeric} or None)
        try:
            yield from reader
        except ValueError as exc:
            raise InputError(f"a quasi-identifier column of {os.path.basename(input_path)} holds a cell that is "
                             f"not a number ({exc})") from None


def first_rows(input_path, rows: int = 1000):
    """The first rows of a Parquet dataset or CSV with its columns typed as the in-memory reader
    types them (``io.typed_text_frame`` for a CSV): the column rules apply to them before any pass."""
    input_path = os.fspath(input_path)
    first = next(_chunks(input_path, None, rows))
    if _is_parquet(input_path):
        return first
    from .io import typed_text_frame

    return typed_text_frame(first)


def _qi_columns(input_path, columns, chunk_rows, strata):
    """The QI columns: the given ones, or by default those the in-memory rules choose on the
    first rows (preprocess.select_columns: identifiers, codes and weights left out, with a
    warning naming them), strata excluded."""
    from .preprocess import select_columns

    first = first_rows(input_path, min(chunk_rows, 1000))
    if columns is None:
        return select_columns(first, exclude=strata)
    cols = list(columns)
    missing = [c for c in cols if c not in first.columns]
    if missing:
        raise ValueError(f"unknown column(s): {', '.join(map(str, missing))}")
    if not cols:
        raise ValueError("no numeric quasi-identifier columns in the input")
    return cols


def _slab_bounds(P: np.ndarray, min_size: int, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """Slabs by recursive bisection, as the blocks but across the global principal axes: level j
    cuts every slab of 2·min_size records or more in two (``_bisect`` with SLAB_CUT_WINDOW) along
    column j mod P.shape[1] of P (projections on the principal axes, largest variance first).
    Returns (order, bounds): slab s holds the records order[bounds[s]:bounds[s+1]]."""
    n = len(P)
    order = np.arange(n)
    bounds = [0, n]
    for j in range(levels):
        proj = P[:, j % P.shape[1]]
        cut_bounds = [0]
        for a, b in zip(bounds[:-1], bounds[1:]):
            if b - a >= 2 * min_size:
                seg = order[a:b]
                seg = seg[np.argsort(proj[seg], kind="stable")]
                order[a:b] = seg
                cut_bounds.append(a + _bisect(proj[seg], min_size, SLAB_CUT_WINDOW))
            cut_bounds.append(b)
        bounds = cut_bounds
    return order, np.asarray(bounds, dtype=np.int64)


def _check_slab_method(method: str, params: dict) -> dict:
    """The method's parameters, validated; per-variable methods cannot be written one mean per record."""
    from .methods import get

    info = get(method)  # ParameterError naming the known methods
    if info.per_variable:
        raise ParameterError(f"method {method!r} gives one group per attribute; the out-of-core mode writes "
                             "one group mean per record and does not support it")
    return info.validate(params)


def _slab_task(slab_dir: str, k: int, method: str, block_size, seed, params: dict, refine: float,
               clock: BlockClock):
    """Microaggregate one spilled slab; returns (rows, labels 0..g-1, group means (std units), sse, min size)."""
    from .partition import group_means, sse

    parts = sorted(glob.glob(os.path.join(slab_dir, "*.npz")))
    Zs, rows = [], []
    for p in parts:
        with np.load(p) as f:
            Zs.append(f["Z"])
            rows.append(f["rows"])
    Z = np.concatenate(Zs)
    rows = np.concatenate(rows)
    labels = partitioned_labels(Z, k, method, block_size=block_size, scheduler="synchronous", seed=seed,
                                deadline=clock.start(len(Z)), refine=refine, **params)
    return rows, labels, group_means(Z, labels), float(sse(Z, labels)), int(np.bincount(labels).min())


def _strata_pass(input_path, strata, cols, chunk_rows, k, merge_small_strata):
    """Stratum code per record (int32, input order) for the out-of-core mode and the merges: small
    strata are reported, or merged (``strata.merge_plan``, on the centroids of the raw QI values,
    summed in the same pass)."""
    from .errors import InputError
    from .strata import merge_plan, stratum_name

    index: dict = {}
    codes, sums = [], {}
    for df in _chunks(input_path, list(strata) + cols, chunk_rows, numeric=cols):
        keys = df[list(strata)].astype("object").where(df[list(strata)].notna(), "<missing>")
        c = np.fromiter((index.setdefault(t, len(index)) for t in keys.itertuples(index=False, name=None)),
                        dtype=np.int64, count=len(df))
        X = df[cols].to_numpy(dtype=np.float64)
        for s in np.unique(c):
            sums[s] = sums.get(s, 0.0) + X[c == s].sum(axis=0)
        codes.append(c)
    codes = np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64)
    names = [stratum_name(t, strata) for t in index]
    counts = np.bincount(codes, minlength=len(names))
    small = np.flatnonzero(counts < k)
    if small.size and not merge_small_strata:
        listed = [f"{names[i]} ({counts[i]} records)" for i in small[:5]]
        raise InputError(f"{small.size} stratum/strata smaller than k={k}: {', '.join(listed)}; merge them with "
                         "merge_small_strata=True (--merge-small-strata)")
    merges = []
    if small.size:
        target, _, _, merges = merge_plan(counts, np.array([sums[s] for s in range(len(names))]), names, k)
        codes = target[codes]
    return codes.astype(np.int32), merges


def protect_out_of_core(input_path, output_dir, *, k, method="mdav", columns=None, block_size,
                        scheduler=None, seed=0, chunk_rows=1_000_000, slab_blocks=32, time_limit=None,
                        progress=None, strata=None, merge_small_strata=False, refine=DEFAULT_REFINE, **params):
    """Microaggregate a Parquet dataset or CSV larger than memory; write Parquet partitions.

    Reads the input four times in chunks of chunk_rows (see the module docstring). Slabs of
    about slab_blocks·max(k, block_size) to twice as many records are the Dask tasks
    (scheduler as in partitioned_labels; with a distributed cluster the workers must see the
    spill directory, which lives inside output_dir). ``strata``: column name(s); slabs (and so
    blocks and groups) are cut inside each stratum; strata smaller than k are an error or, with
    merge_small_strata, merged into the stratum with the nearest centroid. ``time_limit`` is the
    budget of the whole call, shared among the slabs by ``BlockClock``'s rule; ``progress``
    hears of each pass and each finished slab. Every parameter is checked before the first pass.
    Returns a summary dict.
    Memory on the driver: O(n·log(slabs)) for the projections, O(n) for the labels and the
    group means (2.1 GB peak at 10^7 × 10, benchmarks/results/dask_end_to_end.md), plus one chunk.
    """
    import dask
    import pandas as pd

    from .preprocess import check_k

    deadline = Deadline(time_limit)
    progress = as_callback(progress)
    input_path = os.fspath(input_path)
    output_dir = os.fspath(output_dir)
    k = check_k(k)
    min_size = _min_block(k, block_size)
    params = _check_slab_method(method, params)  # before the passes over the data, not in the first slab task
    _check_share(refine)
    strata = [] if strata is None else ([strata] if isinstance(strata, str) else list(strata))
    if not os.path.exists(input_path):
        from .errors import InputError

        raise InputError(f"input {input_path} does not exist")
    cols = _qi_columns(input_path, columns, chunk_rows, strata)
    overlap = [c for c in cols if c in strata]
    if overlap:
        raise ParameterError(f"column(s) {', '.join(map(str, overlap))} cannot be both quasi-identifier and stratum")
    d = len(cols)

    # pass 1: global count, mean, population std (chunk-wise merge) and covariance
    progress("pass 1 of 4", 0.0, "means and covariance")
    n, mean, m2 = 0, np.zeros(d), np.zeros((d, d))
    for df in _chunks(input_path, cols, chunk_rows, numeric=cols):
        X = df[cols].to_numpy(dtype=np.float64)
        if not np.isfinite(X).all():
            from .errors import InputError

            raise InputError("quasi-identifier columns contain missing or infinite values")
        nb = len(X)
        if nb == 0:
            continue
        mb = X.mean(axis=0)
        Xc = X - mb
        delta = mb - mean
        tot = n + nb
        m2 += Xc.T @ Xc + np.outer(delta, delta) * (n * nb / tot)
        mean += delta * (nb / tot)
        n = tot
    check_k(k, n)
    stratum, merges = (_strata_pass(input_path, strata, cols, chunk_rows, k, merge_small_strata) if strata
                       else (np.zeros(n, dtype=np.int32), []))
    std = np.sqrt(np.diag(m2) / n)
    std[std == 0] = 1.0
    corr = m2 / n / np.outer(std, std)
    _, vecs = np.linalg.eigh(corr)
    # 2^levels slabs of slab_blocks·min_size to 2·slab_blocks·min_size records when cuts are even
    sizes = np.bincount(stratum)
    levels_of = [int(np.log2(m // (slab_blocks * min_size))) if m >= 2 * slab_blocks * min_size else 0
                 for m in sizes]
    levels = max(levels_of) if levels_of else 0
    axes = vecs[:, ::-1][:, :min(levels, d)] if levels else vecs[:, ::-1][:, :0]

    # pass 2: projections on the principal axes (float32: they only place the cuts) -> slabs
    progress("pass 2 of 4", 0.25, "cutting slabs")
    P = np.empty((n, axes.shape[1]), dtype=np.float32)
    pos = 0
    for df in _chunks(input_path, cols, chunk_rows, numeric=cols):
        Z = (df[cols].to_numpy(dtype=np.float64) - mean) / std
        P[pos:pos + len(Z)] = Z @ axes
        pos += len(Z)
    slab_of = np.empty(n, dtype=np.int32)
    nslabs = 0
    for s_code, m in enumerate(sizes):
        if m == 0:
            continue
        members = np.flatnonzero(stratum == s_code)
        order, bounds = _slab_bounds(P[members], min_size, levels_of[s_code])
        cuts = len(bounds) - 1
        slab_of[members[order]] = nslabs + np.repeat(np.arange(cuts, dtype=np.int32), np.diff(bounds))
        nslabs += cuts
    del P

    # pass 3: spill standardised quasi-identifiers per slab
    progress("pass 3 of 4", 0.5, f"spilling {nslabs} slab(s)")
    os.makedirs(output_dir, exist_ok=True)
    spill = tempfile.mkdtemp(prefix=".spill-", dir=output_dir)
    try:
        pos = 0
        for j, df in enumerate(_chunks(input_path, cols, chunk_rows, numeric=cols)):
            Z = (df[cols].to_numpy(dtype=np.float64) - mean) / std
            rows = np.arange(pos, pos + len(Z))
            s_of = slab_of[pos:pos + len(Z)]
            for s in np.unique(s_of):
                sel = s_of == s
                sd = os.path.join(spill, f"slab-{s:06d}")
                os.makedirs(sd, exist_ok=True)
                np.savez(os.path.join(sd, f"chunk-{j:06d}.npz"), Z=Z[sel], rows=rows[sel])
            pos += len(Z)
        del slab_of

        # Dask: one task per slab, sharing the time budget
        clock = BlockClock(deadline, n, _workers(scheduler) if nslabs > 1 else 1)
        tasks = [dask.delayed(_slab_task, pure=False)(os.path.join(spill, f"slab-{s:06d}"), k, method,
                                                      block_size, _block_seed(seed, s), params, float(refine),
                                                      clock)
                 for s in range(nslabs)]
        results = _compute(tasks, scheduler, progress, "slabs")

        labels = np.empty(n, dtype=np.int64)
        all_means = []
        offset, total_sse, min_group = 0, 0.0, n
        for rows, lab, means, s_sse, s_min in results:
            labels[rows] = lab + offset
            offset += len(means)
            all_means.append(means)
            total_sse += s_sse
            min_group = min(min_group, s_min)
        del results
        group_means = np.concatenate(all_means) * std + mean  # original units
        del all_means

        # pass 4: output in input order
        progress("pass 4 of 4", 0.9, "writing")
        files = []
        pos = 0
        for j, df in enumerate(_chunks(input_path, None, chunk_rows)):
            lab = labels[pos:pos + len(df)]
            vals = group_means[lab]
            for t, c in enumerate(cols):
                df[c] = vals[:, t].astype(df[c].dtype) if pd.api.types.is_float_dtype(df[c].dtype) else vals[:, t]
            f = os.path.join(output_dir, f"part-{j:06d}.parquet")
            df.to_parquet(f, index=False)
            files.append(f)
            pos += len(df)
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    sst = float(n * np.count_nonzero(np.diag(m2) > 0))
    summary = {
        "records": int(n),
        "columns": cols,
        "k": int(k),
        "method": method,
        "block_size": int(min_size),
        "slabs": int(nslabs),
        "groups": int(offset),
        "min_group_size": int(min_group),
        "sse": total_sse,
        "information_loss": 0.0 if sst == 0 else 100.0 * total_sse / sst,
        "files": files,
        "seconds": deadline.elapsed(),
    }
    if strata:
        summary["strata"] = strata
        summary["merged_strata"] = merges
    return summary
