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


@pytest.mark.parametrize("columns", [3, 5_000])
def test_the_data_tab_shows_a_bounded_part_of_a_wide_upload(columns):
    """A 5,000-column upload sent every profile and an 8 × 5,000 preview to the page (17 s)."""
    from microagg.app.column_profile import PREVIEW_COLUMNS, SHOWN_COLUMNS, profile, shown

    df = pd.DataFrame(
        np.random.default_rng(columns).normal(size=(10, columns)),
        columns=[f"c{j}" for j in range(columns)],
    )
    profiles = profile(df)
    assert len(profiles) == columns  # every column stays a choice
    rows, preview, note = shown(df, profiles)
    assert len(rows) == min(columns, SHOWN_COLUMNS) and rows == profiles[: len(rows)]
    assert preview.shape == (8, min(columns, PREVIEW_COLUMNS))
    assert (note is None) == (columns <= PREVIEW_COLUMNS)
    if note is not None:
        assert f"{columns:,}" in note
