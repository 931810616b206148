"""A census, file to file: N persons × 10 numeric QIs (plus an id, a region stratum and two text
columns) protected out of core through the command line, with its wall time, the peak memory of
the whole process tree and the machine's load.

The data: Parquet files of 10^6 rows (optionally one CSV file) under benchmarks/results/tmp/,
removed afterwards. Each person has an id (``person_id``, 0..N-1), a region code (``region``,
16 regions of unequal size: the stratum), an occupation and a municipality (text), and 10
quasi-identifiers drawn from two latent Gaussian factors (age/life stage, socio-economic
status) so that they correlate as in a census: age, years of schooling, weekly hours worked
(0 for a third), personal income (log-normal with a Pareto tail), household income, household
size, children, rooms, housing cost and commuting distance (log-normal). Integer-valued QIs are
declared continuous (``--continuous``): they are averaged, as the mode publishes group means.

The run: ``microagg protect IN -o OUT --out-of-core --block-size 5000 -k 3 --columns ...
--strata region --continuous ... [--work W]`` in a child process (``census.py --child``: the
command line's ``main``, each phase of PHASES timed with its own peak memory; the real door: its
publication reads the folder back, verifies k-anonymity on every record and audits it). Memory:
a thread samples every 0.5 s the process tree's VmRSS (summed over the processes alive at that
moment) and keeps each process's VmHWM (its own kernel-kept peak); ``peak tree MB`` is the
largest sampled sum, ``peak process MB`` the largest VmHWM. The load average is read before and
after. The check (streamed, a file at a time): as many records as the input, in order, every
non-QI column identical (arrow arrays compared), the manifest's verification (k-anonymous on
QIs and strata, counted on every record) and, up to ``--own-count`` records, our own count of
every QI+stratum combination (each >= k).

``--il-sample``: the out-of-core IL against in-memory MDAV (``microagg.microaggregate(...,
method="mdav")``) on the same records (the whole data set: use it with --n 1e6), with the same
strata and without.

    python benchmarks/census.py --n 1e7 --work-per-record 8 [--csv] [--local-cluster 2]
        [--scheduler tcp://host:8786] [--no-strata] [--il-sample] [--slab-boundaries] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, machine, md_table  # noqa: E402

QIS = [
    "age",
    "schooling_years",
    "hours_week",
    "income",
    "household_income",
    "household_size",
    "children",
    "rooms",
    "housing_cost",
    "commute_km",
]
INTEGER_QIS = ["age", "schooling_years", "hours_week", "household_size", "children", "rooms"]
REGIONS = [f"R{r:02d}" for r in range(16)]
REGION_SHARE = np.array([16, 12, 10, 9, 8, 7, 6, 6, 5, 5, 4, 4, 3, 2, 2, 1], float)
OCCUPATIONS = np.array(
    [
        "none",
        "student",
        "retired",
        "manager",
        "professional",
        "technician",
        "clerk",
        "service worker",
        "sales worker",
        "farmer",
        "craft worker",
        "machine operator",
        "labourer",
        "armed forces",
    ],
    dtype=object,
)
CHUNK = 1_000_000


def census_chunk(j: int, rows: int, seed: int = 2026):
    """Chunk j (``rows`` persons from id j·CHUNK): an arrow table, the same for the same (j, seed)."""
    import pyarrow as pa

    rng = np.random.default_rng([seed, j])
    life = rng.standard_normal(rows)  # life stage
    status = 0.3 * life + rng.standard_normal(rows)  # socio-economic status
    age = np.clip(np.round(42 + 22 * life + 3 * rng.standard_normal(rows)), 0, 104)
    adult = age >= 18
    school = np.clip(np.round(11 + 3 * status + 1.5 * rng.standard_normal(rows)), 0, 22)
    school = np.where(age < 6, 0, np.minimum(school, np.maximum(age - 5, 0)))
    works = adult & (age < 67) & (rng.random(rows) < 0.72 + 0.1 * np.tanh(status))
    hours = np.where(works, np.clip(np.round(38 + 8 * rng.standard_normal(rows)), 4, 80), 0)
    log_income = 10.1 + 0.45 * status + 0.15 * np.tanh(life) + 0.5 * rng.standard_normal(rows)
    tail = rng.random(rows) < 0.01  # the top percent: a Pareto tail (alpha 1.6)
    income = np.exp(log_income) * np.where(tail, rng.pareto(1.6, rows) + 1, 1.0)
    income = np.round(np.where(adult, income * np.where(works, 1.0, 0.45), 0.0), 2)
    size = np.clip(rng.poisson(1.6 + 0.8 * np.exp(-((life + 0.3) ** 2))), 0, 11) + 1.0
    children = np.minimum(np.where(adult, rng.poisson(0.5 * (size - 1)), 0), size - 1)
    household_income = np.round(
        income * (1 + 0.6 * (size > 1)) + np.exp(9 + 0.3 * rng.standard_normal(rows)), 2
    )
    rooms = np.clip(np.round(1 + 0.7 * size + 0.6 * status + rng.standard_normal(rows)), 1, 15)
    housing = np.round(
        np.exp(6.4 + 0.3 * status + 0.1 * rooms + 0.3 * rng.standard_normal(rows)), 2
    )
    commute = np.round(np.where(works, rng.lognormal(2.2, 0.9, rows), 0.0), 1)
    region = rng.choice(len(REGIONS), rows, p=REGION_SHARE / REGION_SHARE.sum())
    occupation = np.where(
        age < 18,
        1,
        np.where(age >= 67, 2, np.where(works, 3 + rng.integers(0, 11, rows), 0)),
    )
    municipality = region * 1000 + rng.zipf(1.7, rows) % 400
    values = dict(
        zip(
            QIS,
            [age, school, hours, income, household_income, size, children, rooms, housing, commute],
        )
    )
    columns = {"person_id": pa.array(np.arange(j * CHUNK, j * CHUNK + rows, dtype=np.int64))}
    columns["region"] = pa.DictionaryArray.from_arrays(
        pa.array(region.astype(np.int32)), pa.array(REGIONS)
    ).cast(pa.string())
    for c in QIS:
        v = values[c]
        columns[c] = pa.array(v.astype(np.int64) if c in INTEGER_QIS else v)
    columns["occupation"] = pa.array(OCCUPATIONS[occupation])
    columns["municipality"] = pa.array(np.char.add("M", municipality.astype("U6")))
    return pa.table(columns)


def generate(n: int, folder: str, csv: bool) -> str:
    """The census as Parquet files of CHUNK rows under folder/input (or one CSV file)."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    target = os.path.join(folder, "input.csv" if csv else "input")
    if not csv:
        os.makedirs(target)
    writer = None
    for j, start in enumerate(range(0, n, CHUNK)):
        table = census_chunk(j, min(CHUNK, n - start))
        if csv:
            writer = writer or pcsv.CSVWriter(target, table.schema)
            writer.write_table(table)
        else:
            pq.write_table(table, os.path.join(target, f"part-{j:05d}.parquet"))
    if writer is not None:
        writer.close()
    return target


def _status(pid: int) -> dict:
    """VmRSS and VmHWM (kB) of a process, from /proc."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return out


def _tree(pid: int) -> list[int]:
    """The process and its descendants (from /proc/<pid>/task/*/children)."""
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        seen.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return seen


def run_measured(command: list[str], env: dict, tree_root: int | None = None) -> dict:
    """Run command; its wall seconds, exit code, and the tree's peak memory (module docstring)."""
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    hwm: dict[int, int] = {}
    peak_sum = [0]

    def sample():
        while proc.poll() is None:
            total = 0
            for p in _tree(tree_root or proc.pid):
                s = _status(p)
                total += s.get("VmRSS", 0)
                hwm[p] = max(hwm.get(p, 0), s.get("VmHWM", 0))
            peak_sum[0] = max(peak_sum[0], total)
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    sampler.join()
    phases = [json.loads(x[6:]) for x in err.decode().splitlines() if x.startswith("PHASE ")]
    return {
        "seconds": round(seconds, 1),
        "phases": phases,
        "peak_phase_mb": max((p["hwm_mb"] for p in phases), default=None),
        "returncode": proc.returncode,
        "peak_tree_mb": round(peak_sum[0] / 1024),
        "peak_process_mb": round(max(hwm.values(), default=0) / 1024),
        "processes": len(hwm),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "stdout": out.decode()[-4000:],
        "stderr": err.decode()[-4000:],
    }


#: (module, function) timed in the child: the mode's passes and the publication's stages
PHASES = [
    ("microagg.outofcore", "_moments"),
    ("microagg.outofcore", "_slabs"),
    ("microagg.outofcore", "_spill"),
    ("microagg.outofcore", "_partition_slabs"),
    ("microagg.outofcore", "_write"),
    ("microagg.publication.folder", "_stream_frequencies"),
    ("microagg.publication.folder", "_sampled_audit"),
    ("microagg.publication.folder", "folder_result"),
    ("microagg.manifest", "sha256"),
]


def child(argv: list[str]) -> int:
    """The command line's protect (``microagg.cli.main``) in this process, each phase of PHASES
    timed, with its peak resident memory (VmHWM reset at its start: /proc/self/clear_refs) on a
    ``phase`` line of stderr."""
    import functools
    import importlib

    from microagg.cli import main as cli_main

    def timed(name, fn):
        @functools.wraps(fn)
        def wrapper(*a, **kw):
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass
            t0 = time.perf_counter()
            out = fn(*a, **kw)
            s = _status(os.getpid())
            line = {"phase": name, "seconds": round(time.perf_counter() - t0, 1)}
            line.update(hwm_mb=round(s.get("VmHWM", 0) / 1024), rss_mb=s.get("VmRSS", 0) // 1024)
            print("PHASE " + json.dumps(line), file=sys.stderr, flush=True)
            return out

        return wrapper

    for module, name in PHASES:
        m = importlib.import_module(module)
        setattr(m, name, timed(name, getattr(m, name)))
    return cli_main(argv)


def check_output(source: str, output: str, k: int, own_count: int) -> dict:
    """Streamed: records, order, non-QI columns identical; the manifest's verification; our own
    count of every QI + stratum combination up to own_count records."""
    import pyarrow.dataset as ds

    src = ds.dataset(source, format="csv" if source.endswith(".csv") else "parquet")
    out = ds.dataset(output, format="parquet")
    others = [c for c in src.schema.names if c not in QIS]
    records, same = 0, True
    out_batches = out.to_batches(columns=others)
    pending = None
    for batch in src.to_batches(columns=others):
        need = batch.num_rows
        parts = []
        while need:
            if pending is None:
                pending = next(out_batches)
            take = min(need, pending.num_rows)
            parts.append(pending.slice(0, take))
            pending = pending.slice(take) if take < pending.num_rows else None
            need -= take
        import pyarrow as pa

        got = pa.Table.from_batches(parts).combine_chunks()
        want = pa.Table.from_batches([batch])
        for c in others:
            same &= got.column(c).cast(want.column(c).type).equals(want.column(c))
        records += batch.num_rows
    manifest = json.load(open(output + ".manifest.json"))
    result = {
        "records_out": int(out.count_rows()),
        "records_in": records,
        "non_qi_identical_in_order": bool(same),
        "manifest_k_anonymous": manifest["verified"]["k_anonymous"],
        "manifest_smallest_frequency": manifest["verified"]["smallest_frequency"],
        "manifest_counted": manifest["verified"]["counted"],
        "information_loss": manifest["run"]["information_loss"],
        "run_seconds": manifest["run"]["seconds"],
        "output_sha256": manifest["output"]["sha256"],
    }
    if records <= own_count:
        table = out.to_table(columns=QIS + ["region"]).to_pandas()
        sizes = table.groupby(QIS + ["region"], sort=False, dropna=False).size()
        result["own_smallest_combination"] = int(sizes.min())
        result["own_combinations"] = int(len(sizes))
    return result


def il_against_memory(source: str, k: int, strata: list[str]) -> dict:
    """In-memory MDAV's IL on the same records (the whole data set), with and without strata."""
    import pandas as pd

    import microagg

    df = pd.read_parquet(source, columns=QIS + strata)
    out = {}
    for label, st in (("with strata", strata), ("no strata", None)):
        t0 = time.perf_counter()
        res = microagg.microaggregate(
            df if st else df[QIS], k=k, method="mdav", columns=QIS, strata=st, continuous=QIS
        )
        out[label] = {
            "information_loss": float(res.information_loss),
            "seconds": round(time.perf_counter() - t0, 1),
            "load_after": round(os.getloadavg()[0], 2),
        }
    return out


def slab_boundaries(source: str, n: int, k: int, block_size: int, per_record) -> list[dict]:
    """What the slab boundaries cost: the same records (no strata) out of core with the default
    slabs and as one slab (``slab_blocks`` large: the local search then crosses every block
    boundary), with and without the work budget (API: ``publication.publish_folder``, which
    takes the mode's ``slab_blocks``)."""
    import tempfile

    from microagg.publication import publish_folder

    rows = []
    for slab_blocks in (32, 10_000):
        for per in (per_record, None):
            with tempfile.TemporaryDirectory(dir=os.path.dirname(source)) as tmp:
                t0 = time.perf_counter()
                work = None if per is None else per * n
                options = dict(k=k, block_size=block_size, columns=QIS, continuous=QIS, work=work)
                res = publish_folder(
                    source, os.path.join(tmp, "out"), options, {}, slab_blocks=slab_blocks
                )
            rows.append(
                {
                    "slab_blocks": slab_blocks,
                    "slabs": res.method_facts["out_of_core"]["slabs"],
                    "work_per_record": per,
                    "information_loss": res.information_loss,
                    "seconds": round(time.perf_counter() - t0, 1),
                    "load_after": round(os.getloadavg()[0], 2),
                }
            )
            print(rows[-1], flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=float, default=1e6)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--block-size", type=int, default=5000)
    ap.add_argument("--csv", action="store_true", help="one CSV file instead of Parquet files")
    ap.add_argument("--scheduler", default=None, help="a Dask scheduler address (default threads)")
    ap.add_argument(
        "--local-cluster",
        type=int,
        default=0,
        help="start a dask.distributed LocalCluster of this many worker processes (one thread "
        "each) and give its address as --scheduler; its workers count in the process tree",
    )
    ap.add_argument("--no-strata", action="store_true")
    ap.add_argument(
        "--work-per-record",
        type=float,
        default=None,
        help="--work = this × records: the deterministic budget bounding the local search",
    )
    ap.add_argument("--il-sample", action="store_true")
    ap.add_argument(
        "--slab-boundaries",
        action="store_true",
        help="only the IL of default slabs against one slab (no strata; with --work-per-record)",
    )
    ap.add_argument("--own-count", type=float, default=1e7)
    ap.add_argument("--keep", action="store_true", help="keep the data (for a second run)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--generate-only", action="store_true", help="write the data (kept), no run")
    if sys.argv[1:2] == ["--child"]:
        sys.exit(child(sys.argv[2:]))
    args = ap.parse_args()
    n = int(args.n)
    strata = [] if args.no_strata else ["region"]
    tag = f"census-{n}{'-csv' if args.csv else ''}"
    tmp = os.path.join(str(RESULTS), "tmp", tag)
    if not args.keep or not os.path.exists(tmp):
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        t0 = time.perf_counter()
        source = generate(n, tmp, args.csv)
        generated = round(time.perf_counter() - t0, 1)
    else:
        source, generated = os.path.join(tmp, "input.csv" if args.csv else "input"), None
    if args.slab_boundaries:
        rows = slab_boundaries(source, n, args.k, args.block_size, args.work_per_record)
        (RESULTS / "census_slab_boundaries.json").write_text(
            json.dumps({"machine": machine(), "records": n, "rows": rows}, indent=2) + "\n"
        )
        return
    if args.generate_only:
        print(f"{source}: {n:,} records in {generated} s")
        return
    output = os.path.join(tmp, "output")
    shutil.rmtree(output, ignore_errors=True)
    for side in (output + ".manifest.json",):
        if os.path.exists(side):
            os.remove(side)
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        "protect",
        source,
        "-o",
        output,
    ]
    command += ["--out-of-core", "--block-size", str(args.block_size), "-k", str(args.k)]
    command += ["--columns", ",".join(QIS), "--continuous", ",".join(QIS), "--quiet"]
    if strata:
        command += ["--strata", ",".join(strata)]
    if args.scheduler:
        command += ["--scheduler", args.scheduler]
    if args.work_per_record:
        command += ["--work", f"{args.work_per_record * n:.0f}"]
    cluster = None
    if args.local_cluster:
        from distributed import LocalCluster

        cluster = LocalCluster(
            n_workers=args.local_cluster,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            memory_limit=0,
        )
        command += ["--scheduler", cluster.scheduler_address]
    try:  # the cluster's workers are this process's children: the tree is measured from here
        run = run_measured(command, dict(os.environ), tree_root=os.getpid() if cluster else None)
    finally:
        if cluster is not None:
            cluster.close()
    row = {
        "records": n,
        "qis": len(QIS),
        "format": "csv" if args.csv else "parquet",
        "strata": strata,
        "k": args.k,
        "block_size": args.block_size,
        "scheduler": (
            f"LocalCluster of {args.local_cluster} worker processes"
            if args.local_cluster
            else args.scheduler or "threads (Dask's local threaded scheduler)"
        ),
        "work_per_record": args.work_per_record,
        "generate_seconds": generated,
        "command": "microagg " + " ".join(command[3:]).replace(str(RESULTS), "benchmarks/results"),
        **run,
    }
    if run["returncode"] == 0:
        row.update(check_output(source, output, args.k, int(args.own_count)))
        if args.il_sample:
            row["in_memory_mdav"] = il_against_memory(source, args.k, strata)
    print(json.dumps(row, indent=1))
    name = args.out or f"census_{n:.0e}".replace("+0", "").replace("+", "")
    _write(name, row)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


def _write(name: str, row: dict) -> None:
    headers = ["records", "format", "scheduler", "seconds", "peak MB: tree, phases"]
    headers += ["load before, after"]
    headers += ["records out, in order, others identical", "k-anonymous (smallest)", "IL %"]
    line = [
        f"{row['records']:,}",
        row["format"],
        row["scheduler"],
        row["seconds"],
        f"{row['peak_tree_mb']}, {row.get('peak_phase_mb')}",
        f"{row['load_before'][0]}, {row['load_after'][0]}",
        f"{row.get('records_out')}, {row.get('non_qi_identical_in_order')}",
        f"{row.get('manifest_k_anonymous')} ({row.get('manifest_smallest_frequency')})",
        row.get("information_loss"),
    ]
    text = (
        f"# A census, file to file: {row['records']:,} × {row['qis']} QIs out of core\n\n"
        f"_`python benchmarks/census.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())},"
        f" {os.cpu_count()} cores shared with other jobs (load averages: 1 minute)._\n\n"
        f"Command: `{row['command']}`\n\n" + md_table(headers, [line]) + "\n"
    )
    if row.get("phases"):
        text += "\nPhases (seconds; peak resident MB of the protecting process during each):\n\n"
        text += md_table(
            ["phase", "seconds", "peak MB", "resident MB after"],
            [[p["phase"], p["seconds"], p["hwm_mb"], p["rss_mb"]] for p in row["phases"]],
        )
        text += "\n"
    if "in_memory_mdav" in row:
        text += "\nIn-memory MDAV on the same records: " + json.dumps(row["in_memory_mdav"]) + "\n"
    (RESULTS / f"{name}.json").write_text(
        json.dumps({"machine": machine(), "rows": [row]}, indent=2) + "\n"
    )
    (RESULTS / f"{name}.md").write_text(text)


if __name__ == "__main__":
    main()
