"""Out-of-core microaggregation: data larger than memory, read in chunks, through the pipeline's
homes.

``compute_chunked`` and ``write_chunked`` (the compute and write stages of the publication over
a chunked table: ``publication.folder``, the mode of ``microagg.protect(..., out_of_core=True)``
and ``--out-of-core``) read a Parquet dataset or a CSV file (the formats whose ``io`` module
has a chunked reader) chunk by chunk, and drive the same stages as ``microaggregate``, each
concept in its one home:

* options: the run's declarations (``options.validate_run``), plus what this mode cannot do
  (``check_out_of_core``: categorical QIs, weights, other aggregations or distances), before any
  pass;
* columns: the column rules on the first rows (``columns.select_columns``);
* prepare, pass 1: ``standardize.Moments`` (a ``partial_fit`` standardiser) gives the z-scores'
  ``Standardizer`` and their covariance; the principal axes come from it (``axes_of_covariance``);
* pass 2: each record's stratum code (``strata.StratumIndex``, the in-memory code: the same keys
  and the same merges of small strata, on the centroids of the z-scores) and its projection on the
  leading axes; slabs are cut inside strata by recursive bisection (as the blocks are);
* pass 3: each slab's z-scores spilled to disk; SST summed (``labels.sst`` about the mean);
* partition: one Dask task per slab, the partitioned mode inside it
  (``blocks.partitioned_labels``: its local search crosses the slab's block boundaries), SSE and
  group means per slab (``labels``), spilled beside the slab and read back one slab at a time;
  then the local search across the slabs' cuts, on bands of the groups nearest each cut
  (``slab_boundaries``);
* publish, pass 4: group means back in original units (``Standardizer.inverse``), written in input
  order, one Parquet file per input chunk, every other column unchanged;
* measure: IL from the summed SSE and SST (``labels.il_percent``).
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from dataclasses import dataclass

import numpy as np

from .blocks import (
    SLAB_CUT_WINDOW,
    BlockClock,
    _bisect,
    _block_seed,
    _compute,
    _workers,
    partitioned_labels,
)
from .deadline import Deadline
from .errors import InputError, ParameterError, option_term
from .labels import check_k, il_percent
from .progress import as_callback
from .slab_boundaries import ancestors, cuts_of
from .strata import chunk_stratum_publisher

__all__ = [
    "compute_chunked",
    "write_chunked",
    "ChunkedRun",
    "check_out_of_core",
    "SUPPORTED_OPTIONS",
]

#: the run options this mode honours (the others are refused before any pass)
SUPPORTED_OPTIONS = (
    "k",
    "method",
    "columns",
    "seed",
    "time_limit",
    "work",
    "strata",
    "block_size",
    "scheduler",
    "refine",
    "merge_small_strata",
    "merged_strata",
    "continuous",
    "progress",
    "audit",
)


def check_out_of_core(options: dict, params: dict | None = None, *, cli: bool = False):
    """The run's options and the method's parameters for this mode, before any pass: the declared
    checks (``options.validate_run``), then a block size is needed, and what the mode cannot do
    (categorical QIs, weights, other aggregations, distances, raw values, per-variable methods) is
    one error naming the options."""
    from .options import option, validate_run

    def flag(name):
        return option(name).flags[0] if cli else name

    run = validate_run(options, params or {}, cli=cli)
    unsupported = [
        flag(name)
        for name, value in run.options.items()
        if name not in SUPPORTED_OPTIONS and value != option(name).default
    ]
    if unsupported:
        raise ParameterError(
            f"{'--out-of-core' if cli else 'the out-of-core mode'} takes continuous columns and "
            f"group means only: drop {', '.join(unsupported)}, or run in memory"
        )
    if run.block_size is None:
        raise ParameterError(
            "--out-of-core needs --block-size (records per block, e.g. 5000)"
            if cli
            else "the out-of-core mode needs block_size (records per block, e.g. 5000)"
        )
    if run.info.per_variable:
        raise ParameterError(
            f"method {run.info.name!r} gives one group per attribute; the out-of-core mode writes "
            "one group mean per record and does not support it"
        )
    return run


def _columns(input_path, run, chunk_rows) -> list:
    """The QI columns: the given ones, or by default those the in-memory rules choose on the first
    rows (columns.select_columns: identifiers, codes and weights left out, with a warning
    naming them), strata excluded; named columns and strata must exist."""
    from . import io
    from .columns import select_columns

    first = io.first_rows(input_path, min(chunk_rows, 1000))
    strata = run.strata or []
    unknown = [c for c in strata if c not in first.columns]
    if unknown:
        raise InputError(f"unknown strata column(s): {', '.join(map(str, unknown))}")
    cols = select_columns(first, run.columns, exclude=strata)
    _refuse_codes(first, cols, run)
    return cols


def _refuse_codes(first, cols: list, run) -> None:
    """Named QIs the in-memory pipeline protects as categories, never averaged (category codes by
    ``embedding.column_kinds``' rules on the first rows: few distinct integers, a survey's code, a
    code-like name, integers written with a leading zero) are refused in one line: this mode
    publishes group means only. Declared continuous, they are averaged, as in memory."""
    import warnings

    from .embedding import column_kinds

    with warnings.catch_warnings():  # the in-memory warning names them; here the error does
        warnings.simplefilter("ignore", UserWarning)
        kinds = column_kinds(first, cols, continuous=run.continuous or ())
    coded = [str(c) for c in cols if kinds[c] != "continuous"]
    if coded:
        raise InputError(
            f"quasi-identifier column(s) {', '.join(coded)} look like category codes, which the "
            "out-of-core mode cannot protect (it publishes group means only): declare them "
            f"continuous ({option_term('continuous')}) to average them, or run in memory"
        )


def _slab_bounds(P: np.ndarray, min_size: int, levels: int) -> tuple[np.ndarray, np.ndarray, list]:
    """Slabs by recursive bisection, as the blocks but across the global principal axes: level j
    cuts every slab of 2·min_size records or more in two (``_bisect`` with SLAB_CUT_WINDOW) along
    column j mod P.shape[1] of P (projections on the principal axes, largest variance first).
    Returns (order, bounds, cuts): slab s holds the records order[bounds[s]:bounds[s+1]]; each cut
    is (column, a, c, b, value): order[a:c] and order[c:b] lie either side of the plane
    P[:, column] = value (``slab_boundaries.cuts_of``), in level order."""
    n = len(P)
    order = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)  # half the memory at 10^8
    bounds, cuts = [0, n], []
    for j in range(levels):
        column = j % P.shape[1]
        proj = P[:, column]
        cut_bounds = [0]
        for a, b in zip(bounds[:-1], bounds[1:]):
            if b - a >= 2 * min_size:
                seg = order[a:b]
                values = proj[seg]  # gathered once: 10^8 projections at the first level
                by_value = np.argsort(values, kind="stable")
                order[a:b] = seg[by_value]
                values = values[by_value]
                c = _bisect(values, min_size, SLAB_CUT_WINDOW)
                value = (float(values[c - 1]) + float(values[c])) / 2
                cuts.append((column, a, a + c, b, value))
                cut_bounds.append(a + c)
            cut_bounds.append(b)
        bounds = cut_bounds
    return order, np.asarray(bounds, dtype=np.int64), cuts


def _levels(m: int, slab_blocks: int, min_size: int) -> int:
    """Bisection levels for m records: 2^levels slabs of slab_blocks·min_size to twice as many."""
    return int(np.log2(m // (slab_blocks * min_size))) if m >= 2 * slab_blocks * min_size else 0


def _slab_task(
    slab_dir: str,
    k: int,
    method: str,
    block_size,
    seed,
    params: dict,
    refine: float,
    clock: BlockClock,
    cuts: list,
):
    """Microaggregate one spilled slab; its rows, labels 0..g-1 and group means (z-score units)
    go back to disk (``result.npz`` in the slab's folder: the driver reads one slab at a time, so
    it never holds every slab's result at once), and its groups nearest each bounding cut
    (``cuts``: (number, Cut)) to their bands; returns (groups, sse, min size, records banded)."""
    from .labels import group_means, sse
    from .slab_boundaries import save_band_pieces

    parts = sorted(glob.glob(os.path.join(slab_dir, "chunk-*.npz")))
    Zs, rows = [], []
    for p in parts:
        with np.load(p) as f:
            Zs.append(f["Z"])
            rows.append(f["rows"])
    Z = np.concatenate(Zs)
    rows = np.concatenate(rows)
    labels = partitioned_labels(
        Z,
        k,
        method,
        block_size=block_size,
        scheduler="synchronous",
        seed=seed,
        deadline=clock.start(len(Z)),
        refine=refine,
        **params,
    )
    means = group_means(Z, labels)
    np.savez(os.path.join(slab_dir, "result.npz"), rows=rows, labels=labels, means=means)
    banded = save_band_pieces(
        os.path.dirname(slab_dir), int(slab_dir[-6:]), cuts, Z, rows, labels, means
    )
    return len(means), float(sse(Z, labels)), int(np.bincount(labels).min()), banded


@dataclass(frozen=True)
class ChunkedRun:
    """The compute stage's value over a chunked table: the QI columns, each record's group (in
    input order), each group's published values (original units), what the stratum columns
    publish (merged strata recoded or suppressed; None: as they came) and the run's summary
    (records, k, slabs, groups, SSE, SST, IL, seconds, notes). The published values are held
    until the folder is written, then released (``write_chunked``: 2.7 GB at 10^8 × 10, k = 3),
    so that the verification's count does not hold them too."""

    run: object  # options.Run
    columns: list
    labels: np.ndarray
    held: list  # [each group's published values], emptied once written
    publisher: object
    summary: dict

    @property
    def public(self) -> np.ndarray:
        """Each group's published values (original units), until the folder is written."""
        if not self.held:
            raise RuntimeError("the published values were released once written")
        return self.held[0]


def compute_chunked(table, run, spill_parent, progress=None, slab_blocks: int = 32) -> ChunkedRun:
    """Passes 1 to 3 and the partition (module docstring) over ``table`` (``io.ChunkedTable``),
    the slabs spilled in a temporary folder inside ``spill_parent`` (a distributed cluster's
    workers must see it) and removed after."""
    deadline = Deadline(run.time_limit, work=run.work)
    progress = as_callback(progress)
    input_path, chunk_rows = os.fspath(table.path), table.chunk_rows
    cols = _columns(input_path, run, chunk_rows)
    scaler, C, n = _moments(input_path, cols, chunk_rows, progress)
    k = check_k(run.k, n)
    min_size = max(k, run.block_size)
    found, keys, slab_of, nslabs, cuts = _slabs(
        input_path, cols, chunk_rows, run, scaler, C, n, min_size, slab_blocks, progress
    )
    spill = tempfile.mkdtemp(prefix=".spill-", dir=os.fspath(spill_parent))
    try:
        total_sst = _spill(input_path, cols, chunk_rows, scaler, slab_of, spill, nslabs, progress)
        slab_sizes = np.bincount(slab_of, minlength=nslabs)
        del slab_of
        labels, public, total_sse, min_group, groups = _partition_slabs(
            spill, nslabs, slab_sizes, cuts, n, run, scaler, deadline, progress
        )
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    summary = {
        "records": int(n),
        "columns": cols,
        "k": int(k),
        "method": run.method,
        "block_size": int(min_size),
        "slabs": int(nslabs),
        "groups": int(groups),
        "min_group_size": int(min_group),
        "sse": total_sse,
        "information_loss": il_percent(total_sse, total_sst),
        "sst": total_sst,
        "seconds": deadline.elapsed(),
    }
    publisher = chunk_stratum_publisher(run, found, keys)
    return ChunkedRun(
        run, cols, labels, [public], publisher, _with_notes(summary, run, deadline, found)
    )


def write_chunked(computed: ChunkedRun, table, folder, progress=None) -> list:
    """Pass 4 (``_write``): the published folder's Parquet partitions written into ``folder``;
    the published values are then released (the folder holds them)."""
    files = _write(
        os.fspath(table.path),
        os.fspath(folder),
        computed.columns,
        table.chunk_rows,
        computed.labels,
        computed.public,
        as_callback(progress),
        computed.publisher,
    )
    computed.held.clear()
    return files


def _with_notes(summary: dict, run, deadline, found) -> dict:
    """The summary with what the run's end and its strata add: a time cut, the merged strata."""
    if deadline.time_cut:
        from .deadline import TIME_CUT_NOTE

        summary["note"] = TIME_CUT_NOTE
    if run.strata:
        summary["strata"] = run.strata
        summary["merged_strata"] = [] if found is None else found.merges
        if summary["merged_strata"]:
            summary["published_strata"] = found.mapping(run.merged_strata)
    return summary


def _values(df, cols) -> np.ndarray:
    X = df[cols].to_numpy(dtype=np.float64)
    if not np.isfinite(X).all():
        raise InputError(
            "quasi-identifier columns contain missing or infinite values: the out-of-core mode "
            "does not take missing values; protect the file in memory (without --out-of-core), "
            "which keeps them missing"
        )
    return X


def _moments(input_path, cols, chunk_rows, progress):
    """Pass 1: the z-scores' Standardizer and covariance, from moments merged chunk by chunk."""
    from . import io
    from .standardize import Moments

    progress("pass 1 of 4", 0.0, "means and covariance")
    moments = Moments(len(cols))
    for df in io.chunks(input_path, cols, chunk_rows, numeric=cols):
        moments.partial_fit(_values(df, cols))
    return moments.standardizer(cols), moments.zscore_covariance(), moments.n


def _slabs(input_path, cols, chunk_rows, run, scaler, C, n, min_size, slab_blocks, progress):
    """Pass 2: stratum codes (small strata an error or merged, as in memory) and projections on the
    leading principal axes (float32: they only place the cuts) -> the slab of every record."""
    from . import io
    from .standardize import axes_of_covariance
    from .strata import StratumIndex

    progress("pass 2 of 4", 0.25, "strata and slabs")
    strata = run.strata or []
    d = len(cols)
    top = min(
        _levels(n, slab_blocks, min_size), d
    )  # no stratum needs more levels than the whole data
    axes = axes_of_covariance(C, top)[1] if top else np.zeros((d, 0))
    index = StratumIndex(strata) if strata else None
    P = np.empty((n, axes.shape[1]), dtype=np.float32)
    codes = np.zeros(n, dtype=np.int32)  # stratum codes: int32 holds any count of strata here
    pos = 0
    for df in io.chunks(
        input_path, cols + [c for c in strata if c not in cols], chunk_rows, numeric=cols
    ):
        Z = scaler.transform(_values(df, cols))
        P[pos : pos + len(Z)] = Z @ axes
        if index is not None:
            codes[pos : pos + len(Z)] = index.encode(df, Z)
        pos += len(Z)
    found = None
    if index is not None:
        found = index.strata(codes, run.k, run.merge_small_strata, run.merged_strata == "refuse")
        codes = found.codes
    slab_of = np.empty(n, dtype=np.int32)
    nslabs, cuts = 0, []
    for _code, members in _rows_by_code(codes):
        levels = _levels(len(members), slab_blocks, min_size)
        # one stratum of every record: P itself, not a copy of it (3.6 GB at 10^8 × 9 axes)
        order, bounds, positions = _slab_bounds(
            P if len(members) == n else P[members], min_size, levels
        )
        cuts += cuts_of(positions, bounds, axes, nslabs)
        slab_of[members[order]] = nslabs + np.repeat(
            np.arange(len(bounds) - 1, dtype=np.int32), np.diff(bounds)
        )
        nslabs += len(bounds) - 1
    return found, (None if index is None else index.keys), slab_of, nslabs, cuts


def _rows_by_code(codes: np.ndarray):
    """(code, rows in input order) per non-empty code, in code order."""
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    for rows in np.split(order, bounds):
        if rows.size:
            yield int(codes[rows[0]]), rows


def _spill(input_path, cols, chunk_rows, scaler, slab_of, spill, nslabs, progress) -> float:
    """Pass 3: each slab's z-scores (and row numbers) to disk; returns SST (about the mean: the
    z-scores' mean is 0)."""
    from . import io
    from .labels import sst

    progress("pass 3 of 4", 0.5, f"spilling {nslabs} slab(s)")
    pos, total = 0, 0.0
    for j, df in enumerate(io.chunks(input_path, cols, chunk_rows, numeric=cols)):
        Z = scaler.transform(_values(df, cols))
        total += sst(Z, centre=np.zeros(Z.shape[1]))
        rows = np.arange(pos, pos + len(Z))
        s_of = slab_of[pos : pos + len(Z)]
        for s in np.unique(s_of):
            sel = s_of == s
            sd = os.path.join(spill, f"slab-{s:06d}")
            os.makedirs(sd, exist_ok=True)
            np.savez(os.path.join(sd, f"chunk-{j:06d}.npz"), Z=Z[sel], rows=rows[sel])
        pos += len(Z)
    return total


def _partition_slabs(spill, nslabs, slab_sizes, cuts, n, run, scaler, deadline, progress):
    """One Dask task per slab, sharing the time budget, then the search across the slabs' cuts
    (``slab_boundaries``): labels (input order), group means (in original units:
    ``scaler.inverse``, elementwise, slab by slab), SSE, the smallest group and the number of
    groups. The slabs' results are read back from disk one at a time into the two arrays, so the
    driver holds n labels and g means, not every slab's result at once."""
    import dask

    from .blocks import DEFAULT_REFINE
    from .slab_boundaries import apply_bands, band_records, drop_groups, new_groups, search_bands
    from .slab_boundaries import work_share as slabs_share

    refine = DEFAULT_REFINE if run.refine is None else float(run.refine)
    across = bool(cuts) and refine > 0  # refine 0: the method's groups as they are, as in memory
    bounding = [ancestors(cuts, s) if across else [] for s in range(nslabs)]  # each slab's cuts
    share = slabs_share(n, band_records(bounding, slab_sizes)) if across else 1.0
    clock = BlockClock(deadline, n, _workers(run.scheduler) if nslabs > 1 else 1, share)
    tasks = [
        dask.delayed(_slab_task, pure=False)(
            os.path.join(spill, f"slab-{s:06d}"),
            run.k,
            run.info.name,
            run.block_size,
            _block_seed(run.seed, s),
            run.params,
            refine,
            clock,
            [(c, cuts[c]) for c in bounding[s]],
        )
        for s in range(nslabs)
    ]
    results = _compute(tasks, run.scheduler, progress, "slabs")
    offsets = np.concatenate([[0], np.cumsum([g for g, *_ in results])]).astype(np.int64)
    searched = []
    if across:
        banded = sum(b for *_, b in results)
        searched = search_bands(
            spill,
            cuts,
            offsets,
            run.k,
            run.seed,
            deadline,
            run.scheduler,
            progress,
            1.0 - share,
            banded,
        )
    labels = np.empty(n, dtype=np.int64)
    public = np.empty((int(offsets[-1]) + new_groups(searched), len(scaler.mean)))
    total_sse = 0.0
    for s, (g, s_sse, *_) in enumerate(results):
        with np.load(os.path.join(spill, f"slab-{s:06d}", "result.npz")) as f:
            labels[f["rows"]] = f["labels"] + offsets[s]
            public[offsets[s] : offsets[s] + g] = scaler.inverse(f["means"])
        total_sse += s_sse
    if not searched:
        return labels, public, total_sse, min(m for _, _, m, _ in results), len(public)
    change, emptied = apply_bands(searched, labels, public, scaler.inverse, int(offsets[-1]))
    public = drop_groups(labels, public, emptied)
    sizes = np.bincount(labels, minlength=len(public))
    return labels, public, total_sse + change, int(sizes.min()), len(public)


def _write(input_path, output_dir, cols, chunk_rows, labels, means, progress, strata=None) -> list:
    """Pass 4: the output in input order, one Parquet file per input chunk, written by the Parquet
    format's writer (``io.write_part``, the one the in-memory publication uses): QI columns
    replaced by their group's mean (original units), merged strata recoded or suppressed
    (``strata``), every other column as it came (a Parquet input's arrow arrays as read)."""
    import pandas as pd

    from . import io

    progress("pass 4 of 4", 0.9, "writing")
    files = []
    pos = 0
    changed = list(cols)
    for j, (df, meta) in enumerate(io.chunks_to_write(input_path, chunk_rows)):
        vals = means[labels[pos : pos + len(df)]]
        for t, c in enumerate(cols):
            df[c] = (
                vals[:, t].astype(df[c].dtype)
                if pd.api.types.is_float_dtype(df[c].dtype)
                else vals[:, t]
            )
        if strata is not None:
            strata(df, pos)
            changed = list(dict.fromkeys([*cols, *strata.columns]))
        f = os.path.join(output_dir, f"part-{j:06d}.parquet")
        io.write_part(df, meta, f, {c: df[c].to_numpy() for c in changed})
        files.append(f)
        pos += len(df)
    return files
