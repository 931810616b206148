"""Data frames beyond pandas: polars, pyarrow and every eager frame narwhals knows, in and out.

The pipeline computes on a pandas view of the input (``to_pandas``); what it publishes goes back
into the caller's own frame (``give_back``): only the columns the run changed (the
quasi-identifiers and recoded strata) are replaced, through narwhals (https://narwhals-dev.github.io/narwhals/),
so every other column keeps its values and its dtype exactly (a polars Int64 with nulls, a
pyarrow dictionary or timestamp column are never round-tripped through pandas). A changed column
keeps its own dtype where its values still fit it (a categorical QI publishes one of its own
values), and becomes Float64 where the run published means of integers, as pandas' does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["is_foreign_frame", "to_pandas", "give_back", "take_rows"]


def is_foreign_frame(data: Any) -> bool:
    """A data frame of another library than pandas that narwhals handles eagerly (polars, pyarrow,
    ...); False for pandas, numpy and anything else, without importing narwhals for them."""
    module = type(data).__module__.split(".")[0]
    if module in ("pandas", "numpy", "builtins", "pathlib", "microagg"):
        return False
    import narwhals as nw

    return isinstance(nw.from_native(data, eager_only=True, pass_through=True), nw.DataFrame)


def to_pandas(native: Any):
    """The frame as pandas, for the pipeline's computations (the caller's frame is not changed)."""
    import narwhals as nw

    return nw.from_native(native, eager_only=True).to_pandas()


def give_back(native: Any, protected, changed: list) -> Any:
    """``native`` with the ``changed`` columns taken from the pandas frame ``protected`` (same rows,
    same order): the caller's kind of frame, its other columns untouched."""
    import narwhals as nw
    import pandas as pd

    frame = nw.from_native(native, eager_only=True)
    namespace = nw.get_native_namespace(frame)
    schema = frame.schema
    columns = []
    for name in changed:
        values = protected[name]
        dtype = schema[name]
        missing = values.dtype.kind == "f" and bool(values.isna().any())
        if values.dtype.kind == "f" and dtype.is_integer() and _integral(values):
            # integers with missing values (a key's suppressed values): still its own dtype
            series = nw.new_series(
                name,
                [None if v != v else int(v) for v in values.tolist()],
                dtype,
                backend=namespace,
            )
        elif missing:  # a missing value (kept missing, or a suppressed key) is the library's null
            listed = [None if v != v else v for v in values.to_numpy(dtype=np.float64).tolist()]
            kind = nw.Float64() if not dtype.is_float() else dtype
            series = nw.new_series(name, listed, kind, backend=namespace)
        elif (
            values.dtype.kind == "f" and not dtype.is_float()
        ):  # means of integers (or recoded codes)
            series = nw.new_series(
                name, values.to_numpy(dtype=np.float64), nw.Float64(), backend=namespace
            )
        else:  # published values of the column's own: its own dtype (missing ones as None)
            listed = [None if v is None or v is pd.NA or v != v else v for v in values.tolist()]
            series = nw.new_series(name, listed, dtype, backend=namespace)
        columns.append(series)
    if not columns:
        return native
    return _arrow_types_kept(native, frame.with_columns(*columns).to_native(), changed)


def _integral(values) -> bool:
    numbers = values.to_numpy(dtype=np.float64)
    present = numbers[~np.isnan(numbers)]
    return bool(np.all(present == np.round(present)) and np.all(np.abs(present) < 2.0**63))


def _arrow_types_kept(native: Any, out: Any, changed: list) -> Any:
    """A pyarrow table's changed columns in their own Arrow types where the values fit (a
    dictionary column keeps its index type: narwhals rebuilds it with uint32 indices)."""
    if type(native).__module__.split(".")[0] != "pyarrow" or not hasattr(native, "schema"):
        return out
    import pyarrow as pa

    for name in changed:
        want, i = native.schema.field(name).type, out.schema.get_field_index(name)
        if out.schema.field(i).type == want:
            continue
        try:
            column = out.column(i).cast(want)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            continue
        out = out.set_column(i, native.schema.field(name), column)
    return out


def take_rows(native: Any, order: np.ndarray) -> Any:
    """The frame's rows in ``order`` (the published order of a shuffle)."""
    import narwhals as nw

    return nw.from_native(native, eager_only=True)[np.asarray(order).tolist()].to_native()
