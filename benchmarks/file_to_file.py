"""``microagg protect`` file to file against the run inside it, and the CSV reader and writer
against pandas' and pyarrow's on the same file (issue 45).

Census-like data (``mdav_scaling.make_data``'s resampling of the CASC Census file, 6 of its
columns, rounded to integers) with an id and a text column, as CSV and as its Parquet copy, at
10^5 and 10^6 records. For each file:

* ``protect``: ``microagg protect FILE -k 3 --columns <the 6 QIs> -o OUT --json`` in a fresh
  process, its wall time and peak RSS (``wait4``), and the ``seconds`` the run inside it
  reports (the method, the run's own figure; a run on 1,000 records first, so that no measured
  run compiles); the ratio wall / run is the file parts' cost (reading, column rules, writing,
  the read-back check, the audit);
* for CSV, in one process: ``microagg.io.read`` against ``pyarrow.csv.read_csv`` and
  ``pandas.read_csv`` (C engine) of the same file, the byte-preserving write of the published
  columns to a file (``io.csv.writer.write_same``, as protect writes it; the 6 QIs replaced by
  means of groups of 3) against ``pyarrow.csv.write_csv`` of the same frame, and the read-back
  check (the output read again, its key variables grouped as protect's check groups them,
  k-anonymity counted) against the write. CPU seconds and wall seconds, best of 3;
* the reader's memory: in a fresh process whose kernels are loaded (a 1,000-record file read
  first), the peak resident memory while ``microagg.io.read`` reads the file, over the resident
  memory just before (the peak reset there, ``/proc/self/clear_refs``), against the file's size.
  Rows measured before 2026-12-08 took the growth of the process's peak instead, which a higher
  peak reached before (the imports, the first read) hides.

``--busy N`` starts N busy-loop processes (``while True: pass``; N = 2 is one per core) before
measuring and stops them after, as ``benchmarks/parallel_mdav.py`` does. Rows accumulate in
results/file_to_file.json keyed by that count and the size (a run replaces the rows of its own
count and sizes); the .md shows them all.

The load average is recorded before and after every measurement: the machine is shared, so
compare the ratios measured side by side, not the seconds across runs.

    python benchmarks/file_to_file.py [--sizes 1e5,1e6] [--folder /tmp/f2f] [--busy 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import md_table, write_results  # noqa: E402

QIS = ["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX"]
TOWNS = ["Tarragona", "Reus", "Lleida", "Girona", "Vic", "Manresa", "Tortosa", "Valls"]


def make_files(n: int, folder: Path) -> tuple[Path, Path]:
    import numpy as np
    import pandas as pd

    import microagg

    csv, parquet = folder / f"census_like_{n}.csv", folder / f"census_like_{n}.parquet"
    if csv.exists() and parquet.exists():
        return csv, parquet
    rng = np.random.default_rng(0)
    census = microagg.datasets.load("census")[QIS]
    values = census.to_numpy()[rng.integers(0, len(census), n)]
    values = np.round(values * (1 + 0.01 * rng.normal(size=values.shape))).astype(np.int64)
    frame = pd.DataFrame(values, columns=QIS)
    frame.insert(0, "id", np.arange(1, n + 1))
    frame["town"] = np.array(TOWNS)[rng.integers(0, len(TOWNS), n)]
    frame.to_csv(csv, index=False)
    frame.to_parquet(parquet, index=False)
    return csv, parquet


def load() -> float:
    return round(os.getloadavg()[0], 2)


def run_protect(path: Path, folder: Path, runs: int = 1) -> dict:
    """The last of ``runs`` runs: wall, peak RSS, the run's own seconds."""
    out = folder / f"out_{path.name}"
    command = [
        sys.executable,
        "-m",
        "microagg.cli",
        "protect",
        str(path),
        "-k",
        "3",
        "--columns",
        ",".join(QIS),
        "-o",
        str(out),
        "--json",
        "-q",
    ]
    for _ in range(runs):
        for stale in (out, Path(f"{out}.manifest.json")):
            stale.unlink(missing_ok=True)
        before = load()
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout = proc.stdout.read()
        stderr = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if status != 0:
            raise SystemExit(f"protect failed on {path}: {stderr.decode()[-2000:]}")
    record = json.loads(stdout)
    return {
        "file": path.name,
        "format": path.suffix.lstrip("."),
        "mb": round(path.stat().st_size / 1e6, 1),
        "protect_wall_s": round(wall, 2),
        "run_s": round(float(record["seconds"]), 2),
        "ratio": round(wall / float(record["seconds"]), 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "load_before": before,
        "load_after": load(),
    }


def _best(fn, repeat: int = 3) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds) of ``fn``."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def library_child(path: str) -> None:
    """In a fresh process: our CSV reader and writer against pyarrow's and pandas' (JSON on
    stdout)."""

    import numpy as np
    import pandas as pd
    import pyarrow.csv as pacsv

    from microagg import io
    from microagg.measures.records import key_frequencies

    p = Path(path)
    small = p.with_name("census_like_1000.csv")
    io.read(small if small.exists() else p)  # compiles / loads the kernels
    before = _reset_peak_mb()
    table = io.read(p)
    reader_mb = _status_mb("VmHWM") - before
    # published values as a microaggregation gives them: the mean of groups of 3 (records taken in
    # the
    # order of their first QI), n / 3 distinct values per column
    groups = np.argsort(np.argsort(table.frame[QIS[0]].to_numpy(), kind="stable")) // 3
    published = {
        c: (
            pd.Series(table.frame[c].to_numpy(dtype=float))
            .groupby(groups)
            .transform("mean")
            .to_numpy()
        )
        for c in QIS
    }
    out = p.with_name(f"written_{p.name}")
    from microagg.io.csv import writer

    written = writer.write_same(table, published, out, out)  # as protect writes it
    arrow = pacsv.read_csv(p)
    rows = {"file": p.name, "load_before": load()}
    rows["reader_peak_mb"] = round(reader_mb, 1)
    rows["reader_peak_over_file"] = round(reader_mb / (p.stat().st_size / 1e6), 2)
    rows["ours_read"] = _best(lambda: io.read(p))
    rows["pyarrow_read"] = _best(lambda: pacsv.read_csv(p))
    rows["pandas_read"] = _best(lambda: pd.read_csv(p))
    mine = p.with_name("ours_written.csv")
    rows["ours_write"] = _best(lambda: writer.write_same(table, published, mine, mine))
    frame = table.frame.assign(**published)
    rows["pyarrow_write"] = _best(
        lambda: pacsv.write_csv(
            arrow.from_pandas(frame, preserve_index=False), str(p.with_name("pyarrow_written.csv"))
        )
    )

    def read_back():  # as protect's check does it: the writer's codes for the written columns
        back = io.read(out, written=written)
        keys = io.key_view(back, QIS, written)
        assert key_frequencies(keys, QIS, 3).smallest is not None

    rows["read_back_check"] = _best(read_back)
    rows["load_after"] = load()
    print(json.dumps(rows))


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(field)


def _reset_peak_mb() -> float:
    """The resident memory now, with the process's peak (VmHWM) reset to it (Linux's
    /proc/self/clear_refs, "5"), so that the peak read after a step is the step's own; where the
    peak cannot be reset, the peak so far (its growth over a step, a lower bound)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return _status_mb("VmHWM")
    return _status_mb("VmRSS")


def busy_loops(count: int) -> list:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def measure(sizes: list, folder: Path, busy: int) -> tuple[list, list, dict]:
    """(protect rows, library rows, the 1,000-record baseline), with ``busy`` busy loops running
    through the measurements (not through making the files)."""
    protect_rows, library_rows = [], []
    for n in sizes:
        make_files(n, folder)
    hogs = busy_loops(busy)
    try:
        if hogs:
            time.sleep(2.0)
        baseline = run_protect(
            make_files(1000, folder)[0], folder, runs=2
        )  # the kernels compiled or loaded once
        baseline["busy"] = busy
        for n in sizes:
            csv, parquet = make_files(n, folder)
            child = subprocess.run(
                [sys.executable, __file__, "--child", str(csv)],
                capture_output=True,
                text=True,
                check=True,
            )
            library = json.loads(child.stdout)
            library.update(n=n, busy=busy)
            library_rows.append(library)
            for path in (csv, parquet):
                row = run_protect(path, folder)
                row.update(n=n, busy=busy)
                protect_rows.append(row)
                print(row, flush=True)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    return protect_rows, library_rows, baseline


def kept_rows(name: str, busy: int, sizes=()) -> list:
    """The committed rows of ``name`` measured with another number of busy processes or, with
    as many, at another size than ``sizes``."""
    from _common import RESULTS

    path = RESULTS / "file_to_file.json"
    if not path.exists():
        return []
    rows = json.loads(path.read_text())["rows"]
    kept = rows.get(name, []) if isinstance(rows, dict) else []
    return [
        r
        for r in kept
        if isinstance(r, dict)
        and "busy" in r
        and (r["busy"] != busy or ("n" in r and r["n"] not in sizes))
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1e5,1e6")
    ap.add_argument("--folder", default="/tmp/microagg_file_to_file")
    ap.add_argument(
        "--busy", type=int, default=0, help="busy-loop processes to start before measuring"
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        library_child(args.child)
        return
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    protect_rows, library_rows, baseline = measure(sizes, folder, args.busy)

    def key(r):
        return (r["busy"], r["n"])

    protect_rows = sorted(kept_rows("protect", args.busy, sizes) + protect_rows, key=key)
    library_rows = sorted(kept_rows("library", args.busy, sizes) + library_rows, key=key)
    baselines = sorted(kept_rows("baseline", args.busy) + [baseline], key=lambda r: r["busy"])
    write_results(
        "file_to_file",
        {"protect": protect_rows, "library": library_rows, "baseline": baselines},
        markdown(protect_rows, library_rows, baselines),
    )


def pair(ours, theirs) -> str:
    return (
        f"{ours[0]:.2f} / {theirs[0]:.2f} ({theirs[0] / ours[0]:.2f}x); cpu {ours[1]:.2f} /"
        f" {theirs[1]:.2f}"
    )


def markdown(protect_rows: list, library_rows: list, baselines: list) -> str:
    table1 = md_table(
        [
            "busy",
            "records",
            "file",
            "MB",
            "protect wall (s)",
            "run inside (s)",
            "wall / run",
            "peak RSS (MB)",
            "load before / after",
        ],
        [
            [
                r["busy"],
                f"{r['n']:,}",
                r["format"],
                r["mb"],
                r["protect_wall_s"],
                r["run_s"],
                r["ratio"],
                r["peak_rss_mb"],
                f"{r['load_before']} / {r['load_after']}",
            ]
            for r in protect_rows
        ],
    )
    table2 = md_table(
        [
            "busy",
            "records",
            "read: ours / pyarrow (speed vs pyarrow)",
            "read: ours / pandas",
            "write: ours / pyarrow",
            "read-back check / our write",
            "reader's peak memory, MB (× the file)",
            "load before / after",
        ],
        [
            [
                r["busy"],
                f"{r['n']:,}",
                pair(r["ours_read"], r["pyarrow_read"]),
                pair(r["ours_read"], r["pandas_read"]),
                pair(r["ours_write"], r["pyarrow_write"]),
                f"{r['read_back_check'][0]:.2f} / {r['ours_write'][0]:.2f}",
                f"{r['reader_peak_mb']} ({r['reader_peak_over_file']}x)",
                f"{r['load_before']} / {r['load_after']}",
            ]
            for r in library_rows
        ],
    )
    small = ", ".join(f"{b['peak_rss_mb']} MB with {b['busy']} busy" for b in baselines)
    return (
        "`microagg protect` file to file (census-like, 6 QIs, an id and a text column; k = 3,"
        " MDAV), a fresh process each, numba's cache warm; 'busy': busy-loop processes running"
        f" on the 2 cores (`--busy N`):\n\n{table1}\n\nA protect of 1,000 records peaks at"
        f" {small} (the interpreter and its libraries).\n\nThe CSV reader and writer on the"
        " same file (wall seconds, best of 3; 'speed vs pyarrow': pyarrow's time over ours,"
        " so 0.5 is half pyarrow's speed; the read-back check: the written file read again,"
        " its key variables grouped as the read-back check groups them, k-anonymity counted;"
        " the reader's memory: its peak resident memory over the resident memory before the"
        " read, the peak reset there, kernels loaded; rows before 2026-12-08: the growth of"
        f" the process's peak, which an earlier peak hides):\n\n{table2}\n"
    )


if __name__ == "__main__":
    main()
