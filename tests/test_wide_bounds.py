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


# --- the wide paths give what the column-by-column paths give (issue 57) ------------------------


def _wide_frame(rows: int, columns: int, seed: int) -> pd.DataFrame:
    """Numeric columns of several dtypes with repeats, NaN and -0.0, and categorical texts."""
    rng = np.random.default_rng(seed)
    values = rng.integers(-2, 3, size=(rows, columns)).astype(float)
    values[rng.random((rows, columns)) < 0.15] = np.nan
    values[rng.random((rows, columns)) < 0.15] = -0.0
    frame = pd.DataFrame(values, columns=[f"c{j}" for j in range(columns)])
    frame["i"] = rng.integers(0, 3, rows)
    frame["u"] = rng.integers(0, 3, rows).astype(np.uint8)
    frame["b"] = rng.random(rows) < 0.5
    frame["t"] = pd.Categorical(rng.choice(["a", "b", None], rows), categories=["a", "b", "z"])
    frame["o"] = rng.choice(["x", "y"], rows).astype(object)
    return frame


@pytest.mark.parametrize("seed", range(6))
def test_wide_key_counts_number_combinations_as_column_by_column(seed, monkeypatch):
    from microagg.measures import records

    rng = np.random.default_rng(seed)
    frame = _wide_frame(int(rng.integers(1, 30)), records.WIDE + int(rng.integers(0, 20)), seed)
    keys = list(frame.columns)
    wide = records.combination_codes(frame, keys)
    monkeypatch.setattr(records, "WIDE", 10**9)
    monkeypatch.setattr(records, "_SORTED_ROWS", 0)
    assert np.array_equal(wide, records.combination_codes(frame, keys))


@pytest.mark.parametrize("seed", range(4))
def test_wide_qi_values_and_row_order_as_column_by_column(seed, monkeypatch):
    from microagg import columns as qi_columns
    from microagg.measures import records
    from microagg.measures.risk import order

    frame = _wide_frame(12, 70, seed).drop(columns=["t", "o"])
    names = list(frame.columns)
    fast = qi_columns.quasi_identifiers(frame, names, allow_missing=True)
    slow = qi_columns._values_column_by_column(frame, names, set())
    assert np.array_equal(fast, slow, equal_nan=True)
    signals = order.row_order(frame)
    monkeypatch.setattr(order, "WIDE", 10**9)
    assert signals == order.row_order(frame)
    assert records.WIDE <= len(names)


def test_a_wide_published_frame_is_the_frame_replaced_column_by_column():
    from microagg.io.typed_frames import _BUILT_AT_ONCE, with_columns

    frame = _wide_frame(9, _BUILT_AT_ONCE + 5, 0)
    frame.attrs["note"] = {"kept": [1]}
    rng = np.random.default_rng(1)
    new = {c: rng.normal(size=len(frame)) for c in list(frame.columns)[: _BUILT_AT_ONCE + 1]}
    new["t"] = pd.Categorical(["b"] * len(frame), dtype=frame["t"].dtype)
    built = with_columns(frame, new)
    one_by_one = frame.copy()
    for c, values in new.items():
        one_by_one[c] = values
    pd.testing.assert_frame_equal(built, one_by_one)
    assert built.attrs == frame.attrs and list(built.columns) == list(frame.columns)


@pytest.mark.parametrize("decimal", [".", ","])
def test_a_wide_csv_is_written_as_column_by_column(tmp_path, decimal, monkeypatch):
    from microagg import io
    from microagg.io.csv import writer

    rng = np.random.default_rng(len(decimal))
    rows, columns = 7, writer._FORMATTED_AT_ONCE + 3
    frame = pd.DataFrame(
        rng.integers(0, 50, size=(rows, columns)), columns=[f"c{j}" for j in range(columns)]
    )
    sep = ";" if decimal == "," else ","
    src = tmp_path / "wide.csv"
    frame.to_csv(src, index=False, sep=sep)
    table = io.read(src, decimal=decimal)
    values = rng.normal(size=(rows, columns)) * 10.0 ** rng.integers(-6, 18, size=columns)
    values[rng.random((rows, columns)) < 0.1] = np.nan
    values[:, 0] = np.round(values[:, 0])  # integral values in an integer column
    values[0, 1] = -0.0
    published = {c: values[:, j] for j, c in enumerate(frame.columns)}
    together = writer.csv_bytes(table, published, gz=False)
    monkeypatch.setattr(writer, "_FORMATTED_AT_ONCE", 10**9)
    assert together == writer.csv_bytes(table, published, gz=False)
