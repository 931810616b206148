"""The runs of an exploration's grid: each run's record (``ExploreRun``), how one run is made and
audited (``run_one``), and the runs an earlier exploration of the same data and options gives
again without running them (``fingerprint``, ``reuse_runs``)."""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, RunWarning


@dataclass
class ExploreRun:
    """One run of the grid. ``status``: "ok" (``reused``: from an earlier exploration), "skipped"
    (predicted not to fit, not scalable, or the budget was spent; ``note`` says which) or
    "failed" (``note``: the one-line error). ``figures``: the audit's {group: {name: value}}."""

    id: int
    k: int
    method: str
    params: dict
    status: str = "pending"
    note: str = ""
    time_limit: float | None = None
    predicted: float | None = None
    seconds: float | None = None
    audit_seconds: float | None = None
    figures: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    labels: np.ndarray | None = field(default=None, repr=False)
    reused: bool = False
    work: float | None = None  # an anytime method's work budget (run option work)
    time_cut: bool = False  # its safety time limit ended it (not its work budget)

    @property
    def done(self) -> bool:
        return self.status == "ok"

    @property
    def il(self) -> float | None:
        return self.figures.get("run", {}).get("information_loss")

    def value(self, name: str):
        for group in ("risk", "utility", "run"):
            if name in self.figures.get(group, {}):
                return self.figures[group][name]
        return None

    @property
    def reproducible(self) -> bool:
        """Re-running gives the same labels: bounded by work, no time limit cut it (the labels
        are kept anyway)."""
        from .. import methods as registry

        if self.time_cut:
            return False
        return (
            self.work is not None
            or self.time_limit is None
            or not registry.get(self.method).interruptible
        )

    def key(self) -> str:
        return json.dumps([self.k, self.method, self.params], sort_keys=True, default=str)


def fingerprint(frame, roles, options: dict) -> str:
    """What the grid's runs depend on: the values of every column they read, and the options."""
    import pandas as pd

    columns = list(
        dict.fromkeys(
            [
                *roles.columns,
                *roles.strata,
                *roles.keys,
                *roles.sensitive,
                *([roles.sample_weight_column] if roles.sample_weight_column else []),
            ]
        )
    )
    h = hashlib.sha256()
    h.update(pd.util.hash_pandas_object(frame[columns], index=False).to_numpy().tobytes())
    h.update(json.dumps([list(map(str, columns)), options], sort_keys=True, default=str).encode())
    return h.hexdigest()


def previous_runs(previous, data_fingerprint: str) -> dict:
    """key -> ExploreRun of the finished runs of an earlier exploration (an ``Exploration``, or a
    loaded result: ``load``'s (document, labels)) whose data and options had
    ``data_fingerprint``."""
    if previous is None:
        return {}
    from .exploration import Exploration

    if isinstance(previous, Exploration):
        if previous.fingerprint != data_fingerprint:
            warnings.warn(
                "the earlier exploration was of other data or options: its runs are not reused",
                RunWarning,
                stacklevel=5,
            )
            return {}
        return {r.key(): r for r in previous.runs if r.done and r.labels is not None}
    doc, labels = previous
    if doc.get("fingerprint") != data_fingerprint:
        warnings.warn(
            "the earlier exploration was of other data or options: its runs are not reused",
            RunWarning,
            stacklevel=5,
        )
        return {}
    out = {}
    for row in doc["runs"]:
        if row["status"] == "ok" and row["id"] in labels:
            run = ExploreRun(
                row["id"],
                row["k"],
                row["method"],
                row["params"],
                "ok",
                "",
                row.get("time_limit"),
                row.get("predicted"),
                row.get("seconds"),
                row.get("audit_seconds"),
                {
                    "run": row.get("run_figures", {}),
                    "utility": row.get("utility", {}),
                    "risk": row.get("risk_figures", {}),
                },
                list(row.get("warnings", [])),
                np.asarray(labels[row["id"]], dtype=np.int64),
                work=row.get("work"),
                time_cut=bool(row.get("time_cut", False)),
            )
            out[run.key()] = run
    return out


def grid_runs(grid, frame, roles, options: dict, previous) -> tuple[list, str]:
    """(the runs of ``grid``, method by method and k by k, the data's ``fingerprint``): those an
    earlier exploration of the same data and options made are done (``reuse_runs``)."""
    runs = [
        ExploreRun(i, kv, m, dict(grid.method_params.get(m, {})))
        for i, (m, kv) in enumerate((m, kv) for m in grid.methods for kv in grid.ks)
    ]
    data_fingerprint = fingerprint(frame, roles, options)
    reuse_runs(runs, previous, data_fingerprint)
    return runs, data_fingerprint


def reuse_runs(runs: list, previous, data_fingerprint: str) -> None:
    """Mark each run an earlier exploration of the same data and options made as done, with its
    figures, warnings and kept labels (``previous_runs``): it is not run again."""
    reuse = previous_runs(previous, data_fingerprint)
    for r in runs:
        old = reuse.get(r.key())
        if old is not None:
            r.status, r.reused, r.note = "ok", True, ""
            r.time_limit, r.predicted, r.seconds, r.audit_seconds = (
                old.time_limit,
                old.predicted,
                old.seconds,
                old.audit_seconds,
            )
            r.work, r.time_cut = old.work, old.time_cut
            r.figures, r.warnings, r.labels = old.figures, old.warnings, old.labels


def run_one(r: ExploreRun, payload, source, options, cache) -> None:
    """Run ``r`` (``microaggregate`` without its audit), then audit it with the audit every front
    end shows (``measures.audit_files``, its cache shared by the grid's runs); keep its figures,
    warnings and labels. A run's own error marks it "failed" with its one line."""
    from .. import pipeline
    from ..api import microaggregate
    from ..measures import audit_files

    try:
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            res = microaggregate(
                payload,
                k=r.k,
                method=r.method,
                time_limit=r.time_limit,
                work=r.work,
                audit=False,
                **options,
                **r.params,
            )
            r.seconds = res.seconds
            r.time_cut = bool(res.time_cut)
            t1 = time.perf_counter()
            sw = res.weights.sample_weight
            files = audit_files(
                source.frame,
                pipeline.frame_of(res.data, source.frame.columns),
                res.audit_roles,
                sample_weights=(
                    None if sw is None or sw != "array" else options.get("sample_weight")
                ),
                seed=options.get("seed", 0),
                cache=cache,
            )
            r.audit_seconds = time.perf_counter() - t1
        audit = res.audit.with_figures(files)
        r.figures = audit.to_dict()["groups"]
        r.warnings = list(
            dict.fromkeys([*audit.warnings, *(" ".join(str(w.message).split()) for w in told)])
        )
        r.labels = np.asarray(res.labels, dtype=np.int64)
        r.status = "ok"
        if r.seconds is None:
            r.seconds = t1 - t0
    except (InputError, ValueError) as exc:
        r.status, r.note = "failed", (str(exc).strip().splitlines() or [type(exc).__name__])[0]
