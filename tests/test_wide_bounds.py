"""Bounds that hold on wide files (issue 57): the audit's d×d figures look at the first
``AUDIT_MATRIX_COLUMNS`` continuous QIs only, so a file of many columns and few rows never builds
a d×d matrix (a 12,000-column, 6-row CSV asked for a 12,000 × 12,000 correlation matrix)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from microagg.measures.file_audit import AUDIT_MATRIX_COLUMNS, AuditRoles, audit_files


def _wide(rows: int, columns: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    original = pd.DataFrame(
        rng.integers(0, 100, size=(rows, columns)).astype(float),
        columns=[f"c{j}" for j in range(columns)],
    )
    published = original.copy()
    half = rows // 2
    published.iloc[:half] = original.iloc[:half].mean().to_numpy()
    published.iloc[half:] = original.iloc[half:].mean().to_numpy()
    return original, published


def _roles(columns: int) -> AuditRoles:
    names = [f"c{j}" for j in range(columns)]
    return AuditRoles(tuple(names), dict.fromkeys(names, "continuous"), 3)


@pytest.mark.parametrize("seed", [0])
def test_a_wide_audit_never_builds_a_columns_by_columns_matrix(seed):
    audit_files(*_wide(6, AUDIT_MATRIX_COLUMNS + 1, seed), _roles(AUDIT_MATRIX_COLUMNS + 1))
    columns = 20 * AUDIT_MATRIX_COLUMNS  # after a first audit: the modules it imports not counted
    original, published = _wide(6, columns, seed)
    roles = _roles(columns)
    tracemalloc.start()
    try:
        audit = audit_files(original, published, roles)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    one_matrix = columns * columns * np.dtype(np.float64).itemsize
    assert peak < one_matrix / 2, (peak, one_matrix)
    assert len(audit.context["matrix_columns"]) == AUDIT_MATRIX_COLUMNS
    names = {f.measure.name for f in audit.figures}
    assert "delta_r_mean" in names and "covariance_mae" in names
