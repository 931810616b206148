"""Best-known partitions and proven lower bounds on the 12 standard cells (issue 16), resumable.

Per cell (census, tarragona, eia × k = 3, 4, 5, 10) the best partition found so far is kept in
``benchmarks/best_known/<data>_k<k>.labels`` (one group label per line, record order) and its
certificate in ``<data>_k<k>.json``: IL, SSE, SST (z-scored QIs), the best proven lower bound on
the optimal SSE (as SSE and IL), the gap, which run found the partition and which proved the
bound (method, parameters, time limit, seed, machine load, date), and a log of every run.
Each invocation starts from the stored state and runs the chosen strategies per cell:

- ``icsm``: ICSM perturbation restarts (iterated local search, §5.3) seeded from the stored
  labels (first time: from ``auto``'s partition), ``--scope`` local / global (default: they
  alternate from run to run), a new seed each run; ``--recombine S``: every S seconds of restarts a
  set-partitioning MIP over the groups of the local optima met (icsm's ILS-SP option; census
  k = 10: 11.4308 -> 11.3806 in 2100 s with S = 60);
- ``colgen``: column generation with a time limit, for its lower bound (and its partition),
  warm-started from the stored labels (their groups enter the master, they are the first
  incumbent; ``--no-warm``: only the ``--colgen-init`` methods; ``--smoothing α``: Wentges dual
  smoothing, against the degenerate master a warm start gives; ``--verbose``: the LP per round);
  ``--resume``: the run also starts from the columns and subset-row cuts the cell's last
  ``--resume`` run ended with (``best_known/state/``, not committed), so that runs of an hour
  each go on raising one LP and its bound instead of rebuilding the columns every time;
  ``--cut-tailing t``: subset-row cuts already once an exact pass leaves the LP within t of its
  bound (eia k = 10, resumed: the plain LP converged at 836.41 in 2900 s, its cut round lifted
  it to 842.1, and it settled at 839.12 with them, while the smoothed bound, restarted from the
  k-nearest-neighbour centre, stopped at 826 for its last 77 minutes; the state now keeps the
  centre);
- ``colgen-icsm``: colgen, then ICSM restarts from colgen's partition and the stored one;
- ``auto``: auto continuing from the stored labels (``init``), column generation beside ICSM's
  restarts, which polish its partitions;
- ``region``: the region bound (``microagg.methods.colgen.region``) at the smoothing centre of the
  cell's stored ``--resume`` state: colgen's Lagrangian bound with the rows of the records of
  z-norm > ``--region-norm`` kept integral, every cluster meeting them with reduced cost below
  ``--region-threshold`` enumerated, and a set-partitioning MIP over their intersections.

Tried and dropped: fix-and-optimise regions (whole groups around a random one) re-solved by colgen
warm-started from their groups; census k = 10, regions of 150 records, 30 s each: 4 regions in
90 s, none improved or proven (colgen does not converge on 50–100 records at k = 10 in 30–60 s).

Where eia k = 10's gap lies (diagnostics, not kept): its tail. The 30 groups holding a record of
z-norm > 5 (335 records) carry 692.4 of the best partition's SSE 869.6; colgen on them alone
converges in 27–44 s to LP 661.4 (31 of the whole gap of 38.4 under the plain LP 831.1), the
128 records of the groups with a record of norm > 10 to 523.6 against 546.0. Their partition is
a deep local optimum: ICSM restarts with recombination on the 335 records (3 × 120 s, 18,000
restarts each) and the MIP over colgen's columns find nothing better. The LP is what is weak
there: 160 fractional columns cover 265 of the 335 records; subset-row cuts on triples raise it
to 666.5 only (500 s, 210 rounds with cuts); enumerating the clusters below the gap (closing)
reaches
thresholds of 0.6 (335 records) and 8.3 (128) with 200,000 clusters, against the 31 and 22
needed; with 3 million on the 128 records it had not ended after 13 minutes. A "tail closing" (a
set-partitioning MIP in reduced costs over the clusters touching the records of largest duals,
whose value adds to Σπ) finds zero-cost covers of those records, or no threshold above 0.54.

What did raise eia k = 10's bound is the region bound (``--strategies region``): at the smoothing
centre of a fresh 3300 s colgen run (plain bound 837.02), the 112 records of z-norm > 10 kept
integral add Δ_R = 7.95 (all 505,175 clusters meeting them with reduced cost below 8
enumerated, 9,623 distinct intersections, a 14 s MIP; 64 s in all): 845.00, gap 3.58 % -> 2.82 %.
Then z-norm > 12 (92 records): Δ_R = 8.52 (below 12: 124,227 clusters, 25,907 parts; 61 s),
845.55, gap 2.76 %. Others did not beat them: z-norm > 9 (122 records) 844.89; z-norm > 8 (142
records) did not end in 1300 s; z-norm > 6 (205 records) overflowed the enumeration (36 million
clusters below 8; the threshold fell to 3.6, 842.39). A further 1800 s resumed from that centre
did not move it. Then the records outside R were bounded over the clusters that avoid R only
(ρ', region.py): z-norm > 12 at G = 12 gave 846.14, and z-norm > 10 at G = 12 Δ_R = 11.95
(6,761,679 clusters, 34,816 parts; 293 s, load 2.0): 849.73, gap 2.27 %; with the cuts kept
that a cluster avoiding R can hit, z-norm > 9.5 (117 records, a buffer of 16 million clusters
per call) Δ_R = 11.67 (30,684,611 clusters; 604 s, load 1.0): 849.90, gap 2.25 %.
Then the enumeration kept only the least rc per part (``region_part_pricing``: R's candidates
branched on first, a part's subtree pruned at its least rc so far): at a new 3300 s state's
centre (plain bound 836.79), z-norm > 10 at G = 12 took 6.3 s against 304.7 s (the same 33,602
parts and bound, 848.67; load 2.0). And Δ_R sat at G − 0.152 at G = 8 and at 12: the best cover
took the relaxation of the parts not enumerated beside parts of negative rc, which the old rule
(z < G) read as Δ_R found. Deepened to G = 18: Δ_R = 17.85 (167,694 parts; enumeration 11 s,
MIP 1104 s; load 1.0), 854.67, gap 1.71 %. Still G − 0.152: a deeper G would prove more, but
the MIP's time grows about 1.7-fold per unit of G (45 s at 12). z-norm > 12 at G = 18 ends with
Δ_R = 8.73 from enumerated parts only (845.52): that region is exhausted; z-norm > 7 (166
records) has 6.7 million parts below 12, too many for the MIP.

Tried and dropped for the region bound: the duals of the LP of the records outside R alone
(colgen on the 4,000 records of z-norm ≤ 12, resumed from the state's columns that avoid R,
1500 s: bound 517.09 against their 365.89 at the centre) mixed in on those records: λ = 0.1 gave
841.28, as they make R's clusters with its near records cheap (Δ_R = −11.8). And on the primal
side, a set-partitioning MIP over the stored partition's groups, the state's columns and the
124,227 clusters meeting z-norm > 12 with reduced cost below 12 proved the stored partition
optimal among them (869.506, 842 s). Reduced-cost fixing in the cover MIP (its LP solved by
column generation over the parts, the parts with rc ≥ G − z_LP dropped): its LP is −0.13 against
the MIP's 11.52 (z-norm > 9.5, G = 12), so it drops nothing; the gain is all integrality.

A partition replaces the stored one only when it is valid (every record labelled, every group
of k..2k−1 records) and strictly better; the largest bound is kept. ``--import-bounds`` takes
the proven bounds of the committed column-generation runs (``results/colgen_full.json``, their
run recorded as the bound's source). ``--render`` writes the README block from the certificates.
Check the files with ``benchmarks/verify_best_known.py``.

    nohup nice -n 19 python benchmarks/best_known.py --cells census:3 tarragona:4 --seconds 90 &
    python benchmarks/best_known.py --strategies colgen --cells census:3 --seconds 300
    python benchmarks/best_known.py --render
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

import microagg

HERE = Path(__file__).resolve().parent
STORE = HERE / "best_known"
DATA = ("census", "tarragona", "eia")
KS = (3, 4, 5, 10)
#: ICSM paper (Mortazavi & Jalili 2015), Table 4: the best published IL, min(ICSM, LS)
PUBLISHED = {
    ("census", 3): 4.75,
    ("census", 4): 6.21,
    ("census", 5): 7.50,
    ("census", 10): 11.74,
    ("tarragona", 3): 14.54,
    ("tarragona", 4): 17.18,
    ("tarragona", 5): 20.25,
    ("tarragona", 10): 30.23,
    ("eia", 3): 0.35,
    ("eia", 4): 0.49,
    ("eia", 5): 0.74,
    ("eia", 10): 1.95,
}
#: restarts larger than any run reaches: the time limit stops ICSM
MANY = 10**7


def paths(data: str, k: int) -> tuple[Path, Path]:
    return STORE / f"{data}_k{k}.labels", STORE / f"{data}_k{k}.json"


def load_cell(data: str, k: int) -> tuple[np.ndarray | None, dict | None]:
    lab_path, cert_path = paths(data, k)
    if not cert_path.exists():
        return None, None
    cert = json.loads(cert_path.read_text())
    labels = np.loadtxt(lab_path, dtype=np.int64, ndmin=1) if lab_path.exists() else None
    return labels, cert


def plain(value):
    """numpy scalars in a method's extras as JSON numbers."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def save_cell(data: str, k: int, labels: np.ndarray | None, cert: dict) -> None:
    """Write labels then certificate, each through a temporary file (an interrupted run leaves
    the previous pair or the new labels with the previous certificate, which the next run or
    the verifier notices)."""
    STORE.mkdir(parents=True, exist_ok=True)
    lab_path, cert_path = paths(data, k)
    if labels is not None:
        tmp = lab_path.with_suffix(".labels.tmp")
        tmp.write_text("".join(f"{int(v)}\n" for v in labels))
        tmp.replace(lab_path)
    tmp = cert_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(cert, indent=1, default=plain) + "\n")
    tmp.replace(cert_path)


def valid_sizes(labels: np.ndarray, k: int) -> bool:
    sizes = np.bincount(np.unique(labels, return_inverse=True)[1])
    return bool(sizes.min() >= k and sizes.max() <= 2 * k - 1)


def canonical(labels: np.ndarray) -> np.ndarray:
    """Groups numbered 0, 1, ... in order of first appearance (the file format's convention)."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inverse]


def run_info(
    method: str, params: dict, seconds: float | None, seed: int | None, elapsed: float
) -> dict:
    return {
        "method": method,
        "params": params,
        "time_limit": seconds,
        "seed": seed,
        "seconds": round(elapsed, 2),
        "load_1min": round(os.getloadavg()[0], 2),
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }


def new_cert(data: str, k: int, n: int, sst: float) -> dict:
    return {
        "data": data,
        "k": k,
        "n": n,
        "sst": sst,
        "il": None,
        "sse": None,
        "found_by": None,
        "lower_bound_sse": None,
        "lower_bound_il": None,
        "bound_by": None,
        "gap_percent": None,
        "published_il": PUBLISHED[(data, k)],
        "runs": [],
    }


def offer(cert: dict, best: np.ndarray | None, labels, sse: float, bound, info: dict, k: int):
    """Keep ``labels`` when valid and strictly better, and ``bound`` when larger; returns the
    best labels and a note for the run log."""
    note = {}
    if labels is not None:
        labels = np.asarray(labels, dtype=np.int64)
        il = 100.0 * sse / cert["sst"]
        note["il"] = il
        if not valid_sizes(labels, k):
            note["rejected"] = "a group outside k..2k-1"
        elif cert["sse"] is None or sse < cert["sse"] * (1 - 1e-12):
            note["improved_from"] = cert["il"]
            best = canonical(labels)
            cert.update(il=il, sse=sse, found_by=info)
    if bound is not None:
        note["bound_il"] = 100.0 * bound / cert["sst"]
        if cert["lower_bound_sse"] is None or bound > cert["lower_bound_sse"]:
            note["bound_raised_from"] = cert["lower_bound_il"]
            cert.update(
                lower_bound_sse=float(bound),
                lower_bound_il=100.0 * bound / cert["sst"],
                bound_by=info,
            )
    if cert["sse"] is not None and cert["lower_bound_sse"] is not None:
        if cert["lower_bound_sse"] > cert["sse"] * (1 + 1e-9):
            raise SystemExit(
                f"{cert['data']} k={cert['k']}: bound {cert['lower_bound_sse']} above the best SSE "
                f"{cert['sse']}: a method's bound or partition is wrong"
            )
        cert["gap_percent"] = 100.0 * (cert["sse"] - cert["lower_bound_sse"]) / cert["sse"]
    cert["runs"].append({**info, **note})
    return best


def icsm_run(df, k, start, seconds, seed, scope, perturbation, recombine=0.0):
    params = {
        "init": "auto" if start is None else "stored labels",
        "restarts": MANY,
        "scope": scope,
        "perturbation": perturbation,
        "restart_from": "best",
    }
    if recombine:
        params["recombine"] = recombine
    t = time.perf_counter()
    res = microagg.microaggregate(
        df,
        k=k,
        method="icsm",
        time_limit=seconds,
        seed=seed,
        columns=list(df.columns),
        init="auto" if start is None else start.copy(),
        restarts=MANY,
        scope=scope,
        perturbation=perturbation,
        recombine=recombine,
    )
    params["restarts_done"] = res.extras.get("restarts_done")
    if recombine:
        params["recombined"] = res.extras.get("recombined")
    return res, run_info("icsm", params, seconds, seed, time.perf_counter() - t)


def state_path(data: str, k: int) -> Path:
    return STORE / "state" / f"{data}_k{k}.npz"


def load_state(data: str, k: int) -> dict | None:
    path = state_path(data, k)
    if not path.exists():
        return None
    with np.load(path) as z:
        arrays = {key: z[key] for key in z.files}  # each member decompressed once
    return {key: a if a.ndim else a.item() for key, a in arrays.items()}


def save_state(data: str, k: int, state: dict) -> None:
    path = state_path(data, k)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez_compressed(tmp, **state)
    tmp.replace(path)


def colgen_run(
    df,
    k,
    seconds,
    seed,
    init,
    mip_time_limit,
    start=None,
    smoothing=0.0,
    verbose=False,
    resume=None,
    cut_tailing=0.0,
):
    """colgen with a time limit; ``start`` (the stored labels, when given) is a warm start: its
    groups enter the restricted master and it is the first incumbent; ``resume`` (a stored
    state, or {} to start one): the master's columns and cuts go on from it and the run's are
    returned in extras['colgen_state']."""
    methods = [m.strip() for m in init.split(",") if m.strip()]
    t = time.perf_counter()
    res = microagg.microaggregate(
        df,
        k=k,
        method="colgen",
        time_limit=seconds,
        seed=seed,
        columns=list(df.columns),
        init=([start.copy()] if start is not None else []) + methods,
        mip_time_limit=mip_time_limit,
        smoothing=smoothing,
        cut_tailing=cut_tailing,
        resume=resume or None,
        keep_state=resume is not None,
        progress=log_progress if verbose else False,
    )
    ex = res.extras
    params = {
        "init": (["stored labels"] if start is not None else []) + methods,
        "mip_time_limit": mip_time_limit,
        "converged": ex.get("colgen_converged"),
        "bound_from": ex.get("colgen_bound_from"),
        "proven_optimal": ex.get("colgen_proven_optimal"),
        "best_from": ex.get("colgen_best_from"),
        "rounds": ex.get("colgen_rounds"),
        "columns": ex.get("colgen_columns"),
        "lp_value_il": (
            None if ex.get("colgen_lp_value") is None else 100.0 * ex["colgen_lp_value"] / res.sst
        ),
        "exact_passes": ex.get("colgen_exact_passes"),
        "cuts": ex.get("colgen_cuts"),
        "closing": ex.get("colgen_closing"),
        "smoothing": smoothing,
        "cut_tailing": cut_tailing,
        "resumed_columns": None if not resume else len(resume["ptr"]) - 1,
        "resumed_cuts": None if not resume else len(resume["cuts"]),
        "phase_seconds": {
            p: round(v, 1) for p, v in (ex.get("colgen_phase_seconds") or {}).items()
        },
    }
    return res, run_info("colgen", params, seconds, seed, time.perf_counter() - t)


def region_run(
    df,
    k,
    state: dict | None,
    seconds: float,
    norm: float,
    threshold: float,
    max_threshold: float = np.inf,
):
    """The region bound (microagg.methods.colgen.region) at the smoothing centre of the cell's
    stored colgen state (the duals of its best Lagrangian bound, with its cuts), the records
    farther than ``norm`` from the centre of the z-scored data kept integral."""
    from microagg.columns import zscores
    from microagg.deadline import Deadline
    from microagg.methods.colgen.region import outlying_records, region_bound

    if not state or "centre_pi" not in state:
        raise SystemExit(
            "--strategies region needs a stored colgen state with its smoothing centre "
            "(a colgen run with --resume and --smoothing)"
        )
    Z = zscores(df.to_numpy(dtype=np.float64))
    pi, sigma = np.asarray(state["centre_pi"]), np.asarray(state["centre_sigma"])
    cuts = np.asarray(state["cuts"]).reshape(-1, 3)[
        : len(sigma)
    ]  # cuts are appended: the centre's come first
    region = outlying_records(Z, norm)
    t = time.perf_counter()
    res = region_bound(
        Z,
        k,
        pi,
        sigma,
        cuts,
        region,
        threshold,
        Deadline(seconds),
        int(state["seed_nodes"]),
        max_threshold,
    )
    if res is None:
        raise SystemExit(f"region bound: out of time after {seconds} s (no bound proven)")
    params = {
        "duals": "stored colgen state's smoothing centre",
        "centre_bound": float(state["centre_bound"]),
        "region_norm": norm,
        "cuts": len(cuts),
        **res.as_dict(),
    }
    return res, run_info("colgen-region", params, seconds, None, time.perf_counter() - t)


def auto_run(df, k, start, seconds, seed, verbose=False):
    """auto continuing from the stored labels (its ``init``): the local search and column
    generation start from them; ICSM's restarts polish column generation's partitions."""
    t = time.perf_counter()
    res = microagg.microaggregate(
        df,
        k=k,
        method="auto",
        time_limit=seconds,
        seed=seed,
        columns=list(df.columns),
        init=None if start is None else start.copy(),
        progress=log_progress if verbose else False,
    )
    rows = {r["method"]: r for r in res.extras["portfolio"] if r.get("status") == "ok"}
    params = {
        "init": "stored labels" if start is not None else None,
        "winner": res.extras.get("winner"),
        "polished_colgen": rows.get("icsm", {}).get("polished_colgen"),
        "rows": {m: round(r["il"], 5) for m, r in rows.items()},
    }
    return res, run_info("auto", params, seconds, seed, time.perf_counter() - t)


def log_progress(stage, fraction=None, message=""):
    """--verbose: every progress message on stdout, with the wall clock (UTC)."""
    if message:
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} {stage}: {message}", flush=True)


def improve(
    data: str,
    k: int,
    strategies: list[str],
    seconds: float,
    scope: str,
    perturbation: int,
    colgen_init: str,
    mip_time_limit: float,
    warm: bool = True,
    fixed_seed: int | None = None,
    recombine: float = 0.0,
    smoothing: float = 0.0,
    verbose: bool = False,
    resume: bool = False,
    cut_tailing: float = 0.0,
    region_norm: float = 10.0,
    region_threshold: float = 8.0,
    region_max_threshold: float = np.inf,
) -> None:
    df = microagg.datasets.load(data)
    best, cert = load_cell(data, k)
    if cert is None:
        sst = microagg.microaggregate(df, k=k, method="mdav", columns=list(df.columns)).sst
        cert = new_cert(data, k, len(df), sst)
    if best is not None and len(best) != len(df):
        raise SystemExit(f"{paths(data, k)[0]}: {len(best)} labels for {len(df)} records")
    for strategy in strategies:
        seed = (
            len(cert["runs"]) if fixed_seed is None else fixed_seed
        )  # by default a new seed every run
        if strategy == "icsm":
            sc = (
                scope
                if scope != "alternate"
                else ("global", "local")[sum(r["method"] == "icsm" for r in cert["runs"]) % 2]
            )
            res, info = icsm_run(df, k, best, seconds, seed, sc, perturbation, recombine)
            best = offer(cert, best, res.labels, res.sse, None, info, k)
        elif strategy == "auto":
            res, info = auto_run(df, k, best, seconds, seed, verbose)
            best = offer(cert, best, res.labels, res.sse, res.lower_bound, info, k)
        elif strategy in ("colgen", "colgen-icsm"):
            res, info = colgen_run(
                df,
                k,
                seconds,
                seed,
                colgen_init,
                mip_time_limit,
                best if warm else None,
                smoothing,
                verbose,
                (load_state(data, k) or {}) if resume else None,
                cut_tailing,
            )
            best = offer(cert, best, res.labels, res.sse, res.lower_bound, info, k)
            if resume:
                save_state(data, k, res.extras["colgen_state"])
            if strategy == "colgen-icsm":
                starts = [res.labels] + (
                    [] if best is None or np.array_equal(best, canonical(res.labels)) else [best]
                )
                t = time.perf_counter()
                sc = "global" if scope == "alternate" else scope
                res2 = microagg.microaggregate(
                    df,
                    k=k,
                    method="icsm",
                    time_limit=seconds,
                    seed=seed,
                    columns=list(df.columns),
                    init=starts,
                    restarts=MANY,
                    scope=sc,
                    perturbation=perturbation,
                )
                info2 = run_info(
                    "icsm",
                    {
                        "init": (
                            "colgen's partition" + (" + stored labels" if len(starts) > 1 else "")
                        ),
                        "restarts": MANY,
                        "scope": sc,
                        "perturbation": perturbation,
                        "restarts_done": res2.extras.get("restarts_done"),
                    },
                    seconds,
                    seed,
                    time.perf_counter() - t,
                )
                best = offer(cert, best, res2.labels, res2.sse, None, info2, k)
        elif strategy == "region":
            res, info = region_run(
                df,
                k,
                load_state(data, k),
                seconds,
                region_norm,
                region_threshold,
                region_max_threshold,
            )
            best = offer(cert, best, None, 0.0, res.bound, info, k)
        else:
            raise SystemExit(f"unknown strategy {strategy!r}")
        last = cert["runs"][-1]
        print(
            f"{data} k={k} {last['method']} {last.get('params', {}).get('scope', '')}: run IL "
            f"{last.get('il', float('nan')):.4f}, best {cert['il']:.4f}, bound "
            f"{cert['lower_bound_il'] if cert['lower_bound_il'] is not None else '-'}, "
            f"{last['seconds']} s, load {last['load_1min']}",
            flush=True,
        )
        save_cell(data, k, best, cert)


def import_bounds() -> None:
    """Proven bounds of the committed column-generation runs (results/colgen_full.json)."""
    src = HERE / "results" / "colgen_full.json"
    doc = json.loads(src.read_text())
    for row in doc["rows"]:
        data, k = row["data"], int(row["k"])
        best, cert = load_cell(data, k)
        if cert is None:
            continue
        bound = float(row["lower_bound"])
        info = {
            "method": "colgen",
            "params": {
                "init": row.get("init"),
                "mip_time_limit": row.get("mip_time_limit"),
                "bound_from": row.get("bound_from"),
            },
            "time_limit": row["time_limit"],
            "seed": 0,
            "seconds": round(row["seconds"], 1),
            "load_1min": doc["machine"].get("load_average_1min"),
            "date_utc": doc["machine"]["date_utc"],
            "imported_from": "benchmarks/results/colgen_full.json",
        }
        if abs(row["sst"] - cert["sst"]) > 1e-9 * cert["sst"]:
            raise SystemExit(
                f"{data} k={k}: SST {row['sst']} in {src.name} differs from {cert['sst']}"
            )
        best = offer(cert, best, None, 0.0, bound, info, k)
        save_cell(data, k, best, cert)
        print(f"{data} k={k}: bound IL {cert['lower_bound_il']:.4f} (gap {cert['gap_percent']})")


def outlier_gap_text() -> str:
    """A sentence on where a cell's gap lies, from ``benchmarks/results/outlier_gap.json`` (if
    any)."""
    path = HERE / "results" / "outlier_gap.json"
    if not path.exists():
        return ""
    rows = json.loads(path.read_text())["rows"]
    parts = [
        f"{r['groups']} groups ({r['records']} records, {100 * r['subset_sse_share_of_cell']:.0f} %"
        f" of the cell's SSE): gap {r['subset_gap_percent']:.2f} % after {r['seconds']:g} s,"
        f" {'an improved' if r['best_sse'] < r['start_sse'] else 'the same'} partition"
        for r in rows
    ]
    r = rows[0]
    return (
        f"\n\nWhere {r['data']} k = {r['k']}'s gap lies: column generation on the groups of its"
        " outliers alone (`python benchmarks/outlier_gap.py`, `results/outlier_gap.md`): "
        + "; ".join(parts)
        + "."
    )


def render() -> str:
    rows = [
        (
            "| data | k | best published IL | our best IL | our bound IL | gap % | found by | bound"
            " by |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]

    def source(run):
        if run is None:
            return "–"
        p = run.get("params", {})
        what = run["method"]
        if run["method"] == "icsm":
            what += f" restarts ({p.get('scope')}) from {p.get('init')}"
            if p.get("recombine"):
                what += f", set partitioning every {p['recombine']:g} s"
        elif run["method"] == "auto" and p.get("init"):
            what += f" from the {p['init']}"
        elif run["method"] == "colgen" and "stored labels" in (p.get("init") or []):
            what += " warm-started from the stored labels"
        if run["method"] == "colgen" and p.get("smoothing"):
            what += f", smoothing α = {p['smoothing']:g}"
        if run["method"] == "colgen" and p.get("resumed_columns"):
            what += (
                f", resumed from {p['resumed_columns']} columns and {p['resumed_cuts']} cuts"
                " (`--resume`)"
            )
        if run["method"] == "colgen" and p.get("cut_tailing"):
            what += f", cuts once the LP is within {100 * p['cut_tailing']:g} % of its bound"
        if run["method"] == "colgen-region":
            return (
                "colgen's Lagrangian bound at its `--resume` state's smoothing centre, with the "
                f"{p['region_size']} records of z-norm > {p['region_norm']:g} kept integral "
                f"(`--strategies region`: the least reduced cost of each of the {p['parts']:,} "
                f"intersections with them below {p['threshold']:g}, {run['seconds']:.0f} s)"
            )
        what = f"{what}, {run['time_limit']:g} s"
        return what + (" (`results/colgen_full.json`)" if run.get("imported_from") else "")

    for data in DATA:
        for k in KS:
            _, cert = load_cell(data, k)
            if cert is None or cert["il"] is None:
                rows.append(f"| {data} | {k} | {PUBLISHED[(data, k)]:.2f} | – | – | – | – | – |")
                continue
            rounded = round(cert["il"], 2)
            mark = (
                " ✓"
                if rounded < PUBLISHED[(data, k)]
                else " ="
                if rounded == PUBLISHED[(data, k)]
                else " ✗"
            )
            bound = "–" if cert["lower_bound_il"] is None else f"{cert['lower_bound_il']:.4f}"
            gap = "–" if cert["gap_percent"] is None else f"{cert['gap_percent']:.2f}"
            rows.append(
                f"| {data} | {k} | {PUBLISHED[(data, k)]:.2f} | {cert['il']:.4f}{mark} | {bound} |"
                f" {gap} | {source(cert['found_by'])} | {source(cert['bound_by'])} |"
            )
    text = (
        "Best-known partitions (IL on z-scores) beside the best published figure (ICSM paper, Table"
        " 4, min of ICSM and LS), with the best proven lower bound on the optimal SSE as IL and the"
        " gap 100·(SSE − bound)/SSE. ✓ / = / ✗: below / equal to / above the published figure at 2"
        " decimals. The partitions and their certificates (run, time limit, seed, machine load) are"
        " committed under `benchmarks/best_known/`; `python benchmarks/verify_best_known.py`"
        " recomputes every IL from the bundled data and checks the group sizes (k..2k−1).\n\n"
        + "\n".join(rows)
        + "\n\nProduced by `python benchmarks/best_known.py` (resumable: each run starts from the"
        " stored partition; `--render` writes this block)."
    )
    text += outlier_gap_text()
    figures = [
        f
        for d in DATA
        if (f := HERE.parent / "docs" / "figures" / f"time_to_quality_{d}.png").exists()
    ]
    if figures:
        text += (
            "\n\nTime to quality (k = 3): IL reached by mdav, icsm, colgen and auto at time limits"
            " 1–60 s (`python benchmarks/time_to_quality.py`, data in"
            " `benchmarks/results/time_to_quality.json`; k = 4, 5, 10 in"
            " `docs/figures/time_to_quality_<data>_k<k>.png`; auto against every member alone: the"
            ' `auto-vs-members` table under "What a statistician needs").\n\n'
        )
        text += "\n".join(
            f"![time to quality, {f.stem.removeprefix('time_to_quality_')}](docs/figures/{f.name})"
            for f in figures
        )
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--cells",
        nargs="+",
        default=[f"{d}:{k}" for d in DATA for k in KS],
        help="data:k pairs (default: all 12)",
    )
    ap.add_argument(
        "--strategies",
        nargs="+",
        default=["icsm"],
        choices=("icsm", "colgen", "colgen-icsm", "auto", "region"),
    )
    ap.add_argument("--seconds", type=float, default=90.0, help="time limit per run")
    ap.add_argument("--scope", default="alternate", choices=("alternate", "local", "global"))
    ap.add_argument("--perturbation", type=int, default=20)
    ap.add_argument(
        "--recombine",
        type=float,
        default=0.0,
        help=(
            "icsm: seconds of restarts between set-partitioning MIPs over the pooled groups (0:"
            " none)"
        ),
    )
    ap.add_argument("--colgen-init", default="icsm,mdav-mhm")
    ap.add_argument(
        "--smoothing", type=float, default=0.0, help="colgen: Wentges dual smoothing α (0: off)"
    )
    ap.add_argument(
        "--verbose", action="store_true", help="print every progress message (the LP per round)"
    )
    ap.add_argument("--mip-time-limit", type=float, default=60.0)
    ap.add_argument(
        "--seed", type=int, default=None, help="seed of every run (default: the cell's run count)"
    )
    ap.add_argument(
        "--no-warm",
        dest="warm",
        action="store_false",
        help="colgen without the stored labels as a warm start (by default they are one)",
    )
    ap.add_argument(
        "--resume",
        action="store_true",
        help=(
            "colgen: go on from the columns and cuts of the cell's last --resume run"
            " (best_known/state/)"
        ),
    )
    ap.add_argument(
        "--cut-tailing",
        type=float,
        default=0.0,
        help=(
            "colgen: subset-row cuts also once the LP is within this share of its bound "
            "(0: at convergence)"
        ),
    )
    ap.add_argument(
        "--region-norm",
        type=float,
        default=10.0,
        help="region: the records farther than this from the centre of the z-scored data",
    )
    ap.add_argument(
        "--region-threshold",
        type=float,
        default=8.0,
        help=(
            "region: enumerate the clusters meeting the region with reduced cost below this "
            "(deepened while it binds and time allows)"
        ),
    )
    ap.add_argument(
        "--region-max-threshold",
        type=float,
        default=np.inf,
        help="region: deepen the threshold up to this at most",
    )
    ap.add_argument("--import-bounds", action="store_true")
    ap.add_argument(
        "--render", action="store_true", help="write the README block from the certificates"
    )
    args = ap.parse_args()
    if args.render:
        from _common import update_readme

        update_readme("best-known", render())
        return
    if args.import_bounds:
        import_bounds()
        return
    for cell in args.cells:
        data, k = cell.split(":")
        if data not in DATA or int(k) not in KS:
            raise SystemExit(f"unknown cell {cell!r}: data in {DATA}, k in {KS}")
    for cell in args.cells:
        data, k = cell.split(":")
        improve(
            data,
            int(k),
            args.strategies,
            args.seconds,
            args.scope,
            args.perturbation,
            args.colgen_init,
            args.mip_time_limit,
            args.warm,
            args.seed,
            args.recombine,
            args.smoothing,
            args.verbose,
            args.resume,
            args.cut_tailing,
            args.region_norm,
            args.region_threshold,
            args.region_max_threshold,
        )


if __name__ == "__main__":
    main()
