"""Partitioned and out-of-core microaggregation on Dask.

``partitioned_labels`` splits standardised records into spatially coherent blocks (recursive
median splits along each block's principal axis, every block holding at least
max(k, block_size) records, so fewer than 2·max(k, block_size)), runs any registered method on
every block as one Dask task and combines the labels. Groups never cross blocks, so every group
is a valid group of the block method, and the result is a valid partition of all records.

``protect_out_of_core`` does the same for data larger than memory, read from a Parquet dataset
or a CSV file in chunks: pass 1 computes the global means, deviations and covariance; pass 2
projects every record on the first principal axis (one float per record) and cuts the order
along that axis into slabs of ``slab_blocks`` blocks; pass 3 spills each slab's standardised
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
import time

import numpy as np

DEFAULT_BLOCK_SIZE = 10_000
# share of the groups (worst by mean squared distance to their centroid) pooled across blocks and
# microaggregated again; measured on census-like data (benchmarks/partitioned_il.py)
DEFAULT_REPOOL = 0.03
POOL_SEED_TAG = 2**31 - 1  # the pool's seed stream, apart from the blocks' (numbered from 0)


def _min_block(k: int, block_size) -> int:
    if block_size is None:
        block_size = DEFAULT_BLOCK_SIZE
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    return max(int(k), int(block_size))


def _principal_axis(Z: np.ndarray) -> np.ndarray:
    """Unit eigenvector of the largest eigenvalue of the covariance of Z's rows."""
    C = np.cov(Z, rowvar=False, bias=True) if len(Z) > 1 else np.eye(Z.shape[1])
    C = np.atleast_2d(C)
    if not np.all(np.isfinite(C)) or not C.any():
        return np.eye(Z.shape[1])[0]
    _, vecs = np.linalg.eigh(C)
    return vecs[:, -1]


def spatial_blocks(Z: np.ndarray, min_size: int) -> list[np.ndarray]:
    """Row indices of spatially coherent blocks of min_size..2·min_size−1 records (one if n < 2·min_size).

    Each block with at least 2·min_size records is split at the median of its projection on its
    principal axis (ties broken by row order, so halves differ by at most one record).
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
        half = len(idx) // 2
        stack.append(idx[order[half:]])
        stack.append(idx[order[:half]])
    out.sort(key=lambda b: b[0] if len(b) else -1)
    return out


def _block_seed(seed, b: int):
    if seed is None:
        return None
    return int(np.random.SeedSequence([int(seed), b]).generate_state(1)[0])


def _run_block(Zb: np.ndarray, k: int, method: str, seed, time_limit, params: dict) -> np.ndarray:
    from .methods import run

    out = run(method, np.ascontiguousarray(Zb, dtype=np.float64), k, seed=seed,
              time_limit=time_limit, **params)
    labels = np.asarray(out.labels, dtype=np.int64)
    # relabel to 0..g-1 so blocks can be offset
    _, labels = np.unique(labels, return_inverse=True)
    return labels.astype(np.int64)


def _compute(tasks: list, scheduler):
    """dask.compute with scheduler None (local threads), a name, a Client or an address string."""
    import dask

    if scheduler is None:
        return list(dask.compute(*tasks, scheduler="threads"))
    if isinstance(scheduler, str):
        if scheduler in ("threads", "processes", "synchronous", "sync", "single-threaded"):
            return list(dask.compute(*tasks, scheduler=scheduler))
        from distributed import Client

        with Client(scheduler) as client:
            return list(dask.compute(*tasks, scheduler=client))
    return list(dask.compute(*tasks, scheduler=scheduler))  # a distributed.Client


def partitioned_labels(Z, k, method, *, block_size, scheduler=None, seed=None, time_limit=None,
                       repool=DEFAULT_REPOOL, **params):
    """Labels from microaggregating spatially coherent blocks of Z independently, on Dask.

    Z: standardised (n, d) array. Every block holds at least max(k, block_size) records
    (block_size=None means 10 000). method is any registered method name with its params;
    each block gets a seed derived from (seed, block number) and the same time_limit.
    scheduler: None (Dask's local threaded scheduler; the numba kernels release the GIL),
    'threads', 'processes', 'synchronous', a dask.distributed Client, or a scheduler address.

    repool: after the blocks, the records of this share of the groups with the largest mean
    squared distance to their centroid (the records a block left without good partners: the
    remainders of dense clusters, the records by a cut) are pooled across all blocks and
    microaggregated again, in blocks if the pool is large; the new groups replace the old ones
    only if their SSE is lower. 0 turns it off.
    """
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise ValueError("Z must be a 2-D array")
    if not 0.0 <= float(repool) <= 1.0:
        raise ValueError(f"repool must be a share between 0 and 1, got {repool!r}")
    min_size = _min_block(k, block_size)
    blocks = spatial_blocks(Z, min_size)
    labels = _blockwise_labels(Z, k, method, blocks, scheduler, seed, time_limit, params)
    if repool > 0 and len(blocks) > 1:
        labels = _repool_worst(Z, labels, k, method, min_size, float(repool), scheduler, seed, time_limit, params)
    return labels


def _repool_worst(Z, labels, k, method, min_size, share, scheduler, seed, time_limit, params):
    from .partition import group_sizes, group_sse, relabel

    g_sse = group_sse(Z, labels)
    spread = g_sse / group_sizes(labels)
    n_worst = int(np.ceil(share * len(spread)))
    worst = np.zeros(len(spread), dtype=bool)
    worst[np.argsort(-spread, kind="stable")[:n_worst]] = True
    pool = np.flatnonzero(worst[labels])
    if len(pool) < 2 * k:
        return labels
    Zp = Z[pool]
    pool_seed = _block_seed(seed, POOL_SEED_TAG)
    sub = _blockwise_labels(Zp, k, method, spatial_blocks(Zp, min_size), scheduler, pool_seed, time_limit, params)
    if group_sse(Zp, sub).sum() >= g_sse[worst].sum():
        return labels
    out = labels.copy()
    out[pool] = sub + int(labels.max()) + 1
    return relabel(out)


def _blockwise_labels(Z, k, method, blocks, scheduler, seed, time_limit, params):
    import dask

    n = len(Z)
    if len(blocks) == 1:
        tasks = [dask.delayed(_run_block, pure=False)(Z, k, method, seed, time_limit, params)]
    else:
        tasks = [dask.delayed(_run_block, pure=False)(Z[b], k, method, _block_seed(seed, i), time_limit, params)
                 for i, b in enumerate(blocks)]
    results = _compute(tasks, scheduler)
    labels = np.empty(n, dtype=np.int64)
    offset = 0
    for b, lab in zip(blocks, results):
        labels[b] = lab + offset
        offset += int(lab.max()) + 1 if len(lab) else 0
    return labels


# ----------------------------------------------------------------------------- out of core


def _chunks(input_path: str, columns, chunk_rows: int):
    """Yield DataFrame chunks of the input in order (Parquet file / directory of files, or CSV)."""
    import pandas as pd

    if os.path.isdir(input_path) or input_path.endswith((".parquet", ".pq")):
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
        yield from pd.read_csv(input_path, chunksize=chunk_rows, usecols=columns)


def _qi_columns(input_path, columns, chunk_rows):
    import pandas as pd

    first = next(_chunks(input_path, None, min(chunk_rows, 1000)))
    if columns is None:
        # pandas' own test: numpy's issubdtype raises on pandas extension dtypes (strings)
        cols = [c for c in first.columns
                if pd.api.types.is_numeric_dtype(first[c]) and not pd.api.types.is_bool_dtype(first[c])]
    else:
        cols = list(columns)
        missing = [c for c in cols if c not in first.columns]
        if missing:
            raise ValueError(f"unknown column(s): {', '.join(map(str, missing))}")
    if not cols:
        raise ValueError("no numeric quasi-identifier columns in the input")
    return cols


def _slab_task(slab_dir: str, k: int, method: str, block_size, seed, params: dict):
    """Microaggregate one spilled slab; returns (rows, labels 0..g-1, group means (std units), sse)."""
    from .partition import sse

    parts = sorted(glob.glob(os.path.join(slab_dir, "*.npz")))
    Zs, rows = [], []
    for p in parts:
        with np.load(p) as f:
            Zs.append(f["Z"])
            rows.append(f["rows"])
    Z = np.concatenate(Zs)
    rows = np.concatenate(rows)
    labels = partitioned_labels(Z, k, method, block_size=block_size, scheduler="synchronous",
                                seed=seed, **params)
    g = int(labels.max()) + 1
    counts = np.bincount(labels, minlength=g).astype(np.float64)
    means = np.zeros((g, Z.shape[1]))
    for t in range(Z.shape[1]):
        means[:, t] = np.bincount(labels, weights=Z[:, t], minlength=g) / counts
    return rows, labels, means, float(sse(Z, labels)), int(counts.min())


def protect_out_of_core(input_path, output_dir, *, k, method="mdav", columns=None, block_size,
                        scheduler=None, seed=0, chunk_rows=1_000_000, slab_blocks=32, **params):
    """Microaggregate a Parquet dataset or CSV larger than memory; write Parquet partitions.

    Reads the input four times in chunks of chunk_rows (see the module docstring). Slabs of
    slab_blocks·max(k, block_size) records along the first principal axis are the Dask tasks
    (scheduler as in partitioned_labels; with a distributed cluster the workers must see the
    spill directory, which lives inside output_dir). Returns a summary dict.
    Memory on the driver: O(n) for the projections and labels plus one chunk.
    """
    import pandas as pd
    import dask

    t0 = time.perf_counter()
    input_path = os.fspath(input_path)
    output_dir = os.fspath(output_dir)
    if not os.path.exists(input_path):
        raise ValueError(f"input {input_path} does not exist")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    min_size = _min_block(k, block_size)
    cols = _qi_columns(input_path, columns, chunk_rows)
    d = len(cols)

    # pass 1: global count, mean, population std (chunk-wise merge) and covariance
    n, mean, m2 = 0, np.zeros(d), np.zeros((d, d))
    for df in _chunks(input_path, cols, chunk_rows):
        X = df[cols].to_numpy(dtype=np.float64)
        if not np.isfinite(X).all():
            raise ValueError("quasi-identifier columns contain missing or infinite values")
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
    if n < k:
        raise ValueError(f"k={k} is larger than the number of records ({n})")
    std = np.sqrt(np.diag(m2) / n)
    std[std == 0] = 1.0
    corr = m2 / n / np.outer(std, std)
    _, vecs = np.linalg.eigh(corr)
    axis = vecs[:, -1]

    # pass 2: projection of every record on the principal axis -> slab of every record
    proj = np.empty(n)
    pos = 0
    for df in _chunks(input_path, cols, chunk_rows):
        Z = (df[cols].to_numpy(dtype=np.float64) - mean) / std
        proj[pos:pos + len(Z)] = Z @ axis
        pos += len(Z)
    nslabs = max(1, n // (slab_blocks * min_size))
    order = np.argsort(proj, kind="stable")
    del proj
    slab_of = np.empty(n, dtype=np.int32)
    slab_of[order] = (np.arange(n) * nslabs // n).astype(np.int32)
    del order

    # pass 3: spill standardised quasi-identifiers per slab
    os.makedirs(output_dir, exist_ok=True)
    spill = tempfile.mkdtemp(prefix=".spill-", dir=output_dir)
    try:
        pos = 0
        for j, df in enumerate(_chunks(input_path, cols, chunk_rows)):
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

        # Dask: one task per slab
        tasks = [dask.delayed(_slab_task, pure=False)(os.path.join(spill, f"slab-{s:06d}"), k, method,
                                                      block_size, _block_seed(seed, s), params)
                 for s in range(nslabs)]
        results = _compute(tasks, scheduler)

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
        files = []
        pos = 0
        for j, df in enumerate(_chunks(input_path, None, chunk_rows)):
            lab = labels[pos:pos + len(df)]
            vals = group_means[lab]
            for t, c in enumerate(cols):
                df[c] = vals[:, t].astype(df[c].dtype) if np.issubdtype(df[c].dtype, np.floating) else vals[:, t]
            f = os.path.join(output_dir, f"part-{j:06d}.parquet")
            df.to_parquet(f, index=False)
            files.append(f)
            pos += len(df)
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    sst = float(n * np.count_nonzero(np.diag(m2) > 0))
    return {
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
        "seconds": time.perf_counter() - t0,
    }
