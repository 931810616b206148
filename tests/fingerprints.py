"""Label fingerprints of every method and the figures of their audits, for refactors to keep.

``python tests/fingerprints.py`` writes ``tests/fixtures/fingerprints.json`` from the code as it is;
``tests/test_fingerprints.py`` recomputes the same dictionary and compares. Regenerate it only when
a
change of results is intended, and say so in the commit.
"""

from __future__ import annotations

import hashlib
import json
import math
import pathlib
import sys
import tempfile
import warnings

import numpy as np
import pandas as pd

DATA = pathlib.Path(__file__).resolve().parents[1] / "src" / "microagg" / "datasets"
FIXTURE = pathlib.Path(__file__).resolve().parent / "fixtures" / "fingerprints.json"
UNIVARIATE = {"genetic", "univariate-fixed", "univariate-optimal"}


def _figures(audit) -> dict[str, float | int | None]:
    figures = {}
    for figure in audit.figures:
        value = figure.value
        if isinstance(value, float) and not math.isfinite(value):
            value = repr(value)
        figures[f"{figure.group}.{figure.measure.name}"] = value
    return figures


def _digest(labels) -> str:
    return hashlib.sha256(np.ascontiguousarray(labels, dtype=np.int64).tobytes()).hexdigest()[:16]


def compute() -> dict:
    import microagg

    warnings.simplefilter("ignore")

    tarragona = microagg.datasets.load("tarragona").iloc[:150]
    out: dict = {"methods": {}}
    for method in microagg.methods.names():
        columns = [tarragona.columns[0]] if method in UNIVARIATE else None
        result = microagg.microaggregate(
            tarragona, k=3, method=method, columns=columns, seed=0, work=2000
        )
        out["methods"][method] = {"labels": _digest(result.labels), "audit": _figures(result.audit)}
    survey = microagg.datasets.load("testdata")
    result = microagg.microaggregate(survey, k=3, seed=0)
    out["testdata_default"] = {
        "labels": _digest(result.labels),
        "audit": _figures(result.audit),
        "data": pd.util.hash_pandas_object(result.data, index=False).astype("uint64").sum().item(),
    }
    with tempfile.TemporaryDirectory() as folder:
        published = pathlib.Path(folder) / "testdata.csv"
        microagg.protect(
            DATA / "testdata.csv", published, k=3, seed=0, shuffle=True, shuffle_seed=1
        )
        out["testdata_file_sha256"] = hashlib.sha256(published.read_bytes()).hexdigest()
    return out


if __name__ == "__main__":
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n")
    sys.stdout.write(f"wrote {FIXTURE}\n")
