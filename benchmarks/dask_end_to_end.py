"""End to end: N × 10 records from a Parquet dataset through a dask.distributed LocalCluster of 2
workers.

Writes N i.i.d. Gaussian records (10 quasi-identifiers plus a non-QI id column) as Parquet
files of 10^6 rows, then publishes them with microagg.protect(..., out_of_core=True) (MDAV, k = 3,
block size 5000; the whole publication: the run, the folder written, read back, counted
k-anonymous on every record, audited on a sample, with its manifest) with the cluster's Client as
scheduler, and checks the output: every record, in order, ids unchanged, every group >= k. Reports seconds and each worker's peak resident
memory (getrusage ru_maxrss inside the worker process). Results:
benchmarks/results/<out>.{json,md} (default dask_end_to_end; the 10^6 run is kept as
dask_end_to_end_1e6); data under benchmarks/results/tmp/, removed afterwards.

    python benchmarks/dask_end_to_end.py [--n 1e7] [--out dask_end_to_end]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, machine, md_table, update_readme  # noqa: E402


def worker_usage():
    """(peak resident MB, CPU seconds) of the calling worker process."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_maxrss / 1024, r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=float, default=1e7)
    ap.add_argument("--block-size", type=int, default=5000)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--out", default="dask_end_to_end")
    args = ap.parse_args()
    import pandas as pd
    import pyarrow.parquet as pq
    from distributed import Client, LocalCluster

    import microagg

    n = int(args.n)
    tmp = os.path.join(RESULTS, "tmp", f"e2e-{n}")
    src, out = os.path.join(tmp, "input"), os.path.join(tmp, "output")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(src)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    chunk = 1_000_000
    for j, a in enumerate(range(0, n, chunk)):
        m = min(chunk, n - a)
        df = pd.DataFrame(rng.normal(size=(m, 10)), columns=[f"x{t}" for t in range(10)])
        df["id"] = np.arange(a, a + m)
        df.to_parquet(os.path.join(src, f"part-{j:05d}.parquet"), index=False)
    write_s = time.perf_counter() - t0

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            memory_limit="6GB",
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        cpu_before = client.run(worker_usage)
        t0, c0 = time.perf_counter(), time.process_time()
        res = microagg.protect(
            src,
            out,
            k=args.k,
            method="mdav",
            columns=[f"x{t}" for t in range(10)],
            block_size=args.block_size,
            scheduler=client,
            out_of_core=True,
        )
        secs, driver_cpu = time.perf_counter() - t0, time.process_time() - c0
        usage = client.run(worker_usage)
    peaks = {w: usage[w][0] for w in usage}
    worker_cpu = {w: usage[w][1] - cpu_before[w][1] for w in usage}

    # check: every record, in order (group sizes >= k: min_group_size from the slab tasks)
    ids_ok = True
    pos = 0
    for f in sorted(res.data.files):
        t = pq.read_table(f).to_pandas()
        ids_ok &= bool(np.array_equal(t["id"].to_numpy(), np.arange(pos, pos + len(t))))
        pos += len(t)
    import resource

    result = {
        "n": n,
        "d": 10,
        "k": args.k,
        "block_size": args.block_size,
        "workers": 2,
        "seconds_protect": secs,
        "seconds_write_input": write_s,
        "worker_peak_mb": {str(w): v for w, v in peaks.items()},
        "worker_cpu_seconds": {str(w): v for w, v in worker_cpu.items()},
        "driver_cpu_seconds": driver_cpu,
        "driver_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "records_out": pos,
        "ids_in_order": ids_ok,
        "min_group_size": int(res.group_sizes.min()),
        "k_anonymous_counted_on_every_record": res.file.k_anonymous,
        "information_loss": res.information_loss,
        "slabs": res.method_facts["out_of_core"]["slabs"],
        "groups": len(res.group_sizes),
    }
    print(json.dumps(result, indent=1))
    wp = ", ".join(f"{v:.0f}" for v in peaks.values())
    table = md_table(
        [
            "records",
            "d",
            "k",
            "block size",
            "slabs",
            "seconds",
            "CPU seconds: workers, driver",
            "worker peak MB",
            "driver peak MB",
            "IL",
            "records out, in order",
            "min group",
        ],
        [
            [
                f"{n:,}",
                10,
                args.k,
                args.block_size,
                result["slabs"],
                f"{secs:.0f}",
                ", ".join(f"{v:.0f}" for v in worker_cpu.values()) + f", {driver_cpu:.0f}",
                wp,
                f"{result['driver_peak_mb']:.0f}",
                f"{res.information_loss:.2f}",
                f"{pos:,}, {ids_ok}",
                result["min_group_size"],
            ]
        ],
    )
    meta = machine()
    text = (
        "# End-to-end partitioned MDAV from Parquet on a dask.distributed LocalCluster (2"
        f" workers)\n\n_Produced by `python benchmarks/dask_end_to_end.py --n {args.n:g} --out"
        f" {args.out}` on {meta['date_utc']} UTC, {meta['cpus']} cores, load average"
        f" {meta['load_average_1min']} at the end of the run (the machine is shared)._\n\ni.i.d."
        " Gaussian records; microagg.protect(..., out_of_core=True) (MDAV per block, refinement"
        " inside blocks and across the blocks of each slab), one thread per worker process."
        " Seconds: the publication only (the run, the folder written, read back, counted on every"
        f" record, audited on a sample, its manifest; input written beforehand in {write_s:.0f}"
        " s). Peak memory: ru_maxrss of each worker process and of the driver. CPU seconds: each"
        " worker process's and the driver's own CPU time during the publication (wall seconds"
        " stretch with the other jobs on the machine).\n\n" + table + "\n"
    )
    with open(os.path.join(RESULTS, f"{args.out}.json"), "w") as f:
        json.dump({"machine": meta, "rows": [result]}, f, indent=2)
    with open(os.path.join(RESULTS, f"{args.out}.md"), "w") as f:
        f.write(text)
    if args.out == "dask_end_to_end":
        update_readme(
            "dask-end-to-end",
            table
            + f"\n\nProduced by `python benchmarks/dask_end_to_end.py` on {meta['date_utc']} UTC,"
            f" load average {meta['load_average_1min']} at the end (details in"
            " `benchmarks/results/dask_end_to_end.md`).",
        )
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
