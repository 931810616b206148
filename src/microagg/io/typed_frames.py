"""What the typed formats (Parquet, Stata, SPSS, SAS, Excel) share: the table made from a typed
frame, the frame the pipeline sees, and the frame written with the published QI columns.

Non-QI columns keep their dtype and values; a QI column keeps its integer dtype when every
published value is integral (and fits), otherwise it becomes float64.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import InputError
from .file_table import Meta, Table

__all__ = [
    "need",
    "typed_table",
    "published_frame",
    "is_numeric",
    "is_missing",
    "integral",
    "user_missing",
]


def need(module: str, what: str):
    """Import a format's library, or one line saying how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(
            f"{what} needs the {module} package: pip install 'microagg[formats]' "
            f"(or pip install {module})"
        ) from None


def typed_table(
    frame,
    fmt: str,
    p: Path,
    meta: Meta,
    missing=(),
    value_labels=None,
    missing_ranges=None,
    measures=None,
) -> Table:
    """The Table of a typed frame: duplicated names kept apart (in the header only), the
    pipeline's view (``_pipeline_view``) with declared ``missing`` tokens missing, and numeric
    columns of category codes marked (``attrs["category_codes"]``: value labels on their values,
    ``_coded_columns``, or an SPSS measure nominal / ordinal; ``attrs["ordinal"]``: measure
    ordinal), for the column rules (``columns``) and the QI kinds (``embedding``)."""
    names = [str(c) for c in frame.columns]
    counts: dict = {}
    for c in names:
        counts[c] = counts.get(c, 0) + 1
    dup = [c for c, k in counts.items() if k > 1]
    pipeline = frame.loc[:, [c not in dup for c in names]] if dup else frame
    view = _pipeline_view(pipeline, missing_ranges or {})
    if missing:
        view = _declare_missing(view, missing)
    import pandas as pd

    codes = _coded_columns(view, value_labels or {})
    measured = {
        c: m
        for c, m in (measures or {}).items()
        if m in ("nominal", "ordinal")
        and c in view.columns
        and pd.api.types.is_numeric_dtype(view[c].dtype)
    }
    codes += [c for c in measured if c not in codes]
    if (
        codes
    ):  # the column rules (columns.select_columns) leave category codes out of the default QIs
        view = view.copy() if view is frame else view
        view.attrs["category_codes"] = codes
        view.attrs["ordinal"] = [c for c, m in measured.items() if m == "ordinal"]
    return Table(
        frame=view, format=fmt, path=p, header=names, duplicates=dup, original=frame, meta=meta
    )


#: a value label that marks a special or missing value rather than a category
_SPECIAL_LABEL = re.compile(
    r"unknown|don.?t know|refus|missing|not applicable|\bn/?a\b|no answer|not stated|"
    r"top.?cod|bottom.?cod|censored|suppressed",
    re.IGNORECASE,
)


def _coded_columns(frame, value_labels: dict) -> list:
    """Numeric columns whose values carry category labels: every observed value labelled, or at
    least two observed values labelled as categories making at least half of the distinct values
    (partial labels, such as an education code with labels on 1-5 and 6, 7 unlabelled). A label
    that marks a special value ("top coded", "refused", "unknown") does not count: an income with
    a labelled 99999 is still an amount."""
    import numpy as np
    import pandas as pd

    coded = []
    for col, mapping in value_labels.items():
        if (
            col not in frame.columns
            or not mapping
            or not pd.api.types.is_numeric_dtype(frame[col].dtype)
        ):
            continue
        values = pd.unique(frame[col].dropna())
        try:
            keys = {float(k) for k in mapping}
            categories = {
                float(k) for k, label in mapping.items() if not _SPECIAL_LABEL.search(str(label))
            }
        except (TypeError, ValueError):
            continue
        if not len(values) or not np.isfinite(values.astype(float)).all():
            continue
        labelled = sum(float(v) in categories for v in values)
        if all(float(v) in keys for v in values) or (labelled >= 2 and 2 * labelled >= len(values)):
            coded.append(col)
    return coded


def _pipeline_view(frame, ranges: dict):
    """The frame the pipeline sees: SPSS user-missing values (``ranges``) become missing there (a
    continuous QI keeps them missing, written back as the codes they were), and decimal columns
    (Parquet decimal128, read as Python Decimals) are float64 numbers there, while the file is
    written from the original values."""
    decimals = [c for c in frame.columns if _is_decimal_column(frame[c])]
    if not ranges and not decimals:
        return frame
    import numpy as np
    import pandas as pd

    view = frame.copy()
    for col in decimals:
        view[col] = np.array(
            [np.nan if v is None else float(v) for v in frame[col]], dtype=np.float64
        )
    for col, spec in ranges.items():
        if col not in view.columns or not pd.api.types.is_numeric_dtype(view[col].dtype):
            continue  # (numpy's issubdtype fails on pandas' string dtype)
        x = view[col].to_numpy(np.float64, copy=True)
        x[user_missing(x, spec)] = np.nan
        view[col] = x
    return view


def user_missing(x, spec):
    """Which of the numbers ``x`` are SPSS user-missing under ``spec`` (pyreadstat's
    missing_ranges of one column: {'lo', 'hi'} ranges or single values)."""
    import numpy as np

    hit = np.zeros(len(x), dtype=bool)
    for r in spec:
        lo, hi = (r["lo"], r["hi"]) if isinstance(r, dict) else (r, r)
        try:
            hit |= (x >= float(lo)) & (x <= float(hi))
        except (TypeError, ValueError):  # a text column's missing values
            continue
    return hit


def _is_decimal_column(col) -> bool:
    """An object column of decimal.Decimal numbers (None for missing)."""
    import decimal

    if col.dtype != object:
        return False
    values = [v for v in col if v is not None]
    return bool(values) and all(isinstance(v, decimal.Decimal) for v in values)


def _declare_missing(frame, missing):
    """Typed formats: text cells equal to a declared missing token become missing."""
    import numpy as np

    tokens = {str(t).strip() for t in missing}
    view = frame.copy()
    for c in view.columns:
        if view[c].dtype == object or str(view[c].dtype).startswith(("str", "string")):
            col = view[c].astype(object)
            hit = col.map(lambda v: isinstance(v, str) and v.strip() in tokens).to_numpy(bool)
            if hit.any():
                view[c] = col.where(~hit, np.nan)
    return view


def integral(values, missing_ok: bool = False) -> bool:
    """Every value is a finite integer (``missing_ok``: NaN values left aside)."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    if missing_ok:
        v = v[~np.isnan(v)]
    return bool(np.all(np.isfinite(v)) and np.all(v == np.round(v)))


def is_numeric(values) -> bool:
    """Published values that are numbers (a continuous or numeric-coded QI), not categories."""
    import numpy as np

    dtype = getattr(values, "dtype", None)
    if dtype is not None and dtype != np.dtype(object):
        return np.issubdtype(dtype, np.number) and not np.issubdtype(dtype, np.bool_)
    return all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
        for v in values
    )


def is_missing(v) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def published_frame(frame, published: dict, read=None):
    """A copy of ``frame`` with the published columns replaced: the column's integer dtype is kept
    when every published value is integral and fits it (with missing values, a suppressed key's:
    pandas' nullable integer of the same width), else float64. ``read``: the frame as the
    pipeline read it; a published value missing where it was missing there too is written as
    ``frame`` holds it (an SPSS user-missing code stays that code)."""
    import numpy as np
    import pandas as pd

    if read is not None:
        published = {c: _missing_as_read(frame, read, c, v) for c, v in published.items()}
    out, dtypes = {}, dict(zip(frame.columns, frame.dtypes, strict=True))
    for name, values in published.items():
        dtype = dtypes[name] if frame.columns.is_unique else frame[name].dtype
        if not is_numeric(
            values
        ):  # a categorical QI: the group's category, in the column's own dtype
            try:
                out[name] = pd.Series(list(values), index=frame.index, dtype=dtype)
            except (TypeError, ValueError):
                out[name] = pd.Series(list(values), index=frame.index, dtype=object)
            continue
        values = np.asarray(pd.array(values, dtype="Float64").to_numpy(na_value=np.nan))
        if pd.api.types.is_integer_dtype(dtype) and integral(values, missing_ok=True):
            width = np.dtype(getattr(dtype, "numpy_dtype", dtype))  # numpy or nullable integers
            info, present = np.iinfo(width), values[~np.isnan(values)]
            if not len(present) or (present.min() >= info.min and present.max() <= info.max):
                if len(present) == len(values):
                    out[name] = values.astype(width)
                else:  # a key's suppressed values: pandas' nullable integer of the same width
                    nullable = width.name.replace("uint", "UInt").replace("int", "Int")
                    out[name] = pd.array(
                        [None if v != v else int(v) for v in values.tolist()], dtype=nullable
                    )
                continue
        out[name] = values
    return with_columns(frame, out)


#: from this many replaced columns on, the new frame is built in one call: one column replaced at
#: a time cost ~0.4 ms each (a 20,000-column file: ~8 s; issue 57)
_BUILT_AT_ONCE = 64


def with_columns(frame, new: dict):
    """A copy of ``frame`` with the columns of ``new`` replaced by its values (the frame's order,
    index, attrs and flags kept)."""
    import pandas as pd

    if len(new) < _BUILT_AT_ONCE or not (frame.columns.is_unique and frame.index.is_unique):
        out = frame.copy()
        for c, values in new.items():
            out[c] = values
        return out
    data = {c: new[c] if c in new else frame[c] for c in frame.columns}
    return pd.DataFrame(data, index=frame.index, columns=frame.columns).__finalize__(frame)


def _missing_as_read(frame, read, name, values):
    """``values`` with each missing value whose input was missing for the pipeline but is a
    number in ``frame`` (an SPSS user-missing code) set back to that number."""
    import numpy as np
    import pandas as pd

    if not is_numeric(values) or name not in read.columns:
        return values
    values = np.asarray(values, dtype=np.float64)
    if not np.isnan(values).any():  # nothing missing to set back (before a Series is made)
        return values
    source = frame[name]
    if not pd.api.types.is_numeric_dtype(source.dtype) or pd.api.types.is_bool_dtype(source.dtype):
        return values
    kept = source.to_numpy(dtype=np.float64, na_value=np.nan)
    back = np.isnan(values) & read[name].isna().to_numpy() & ~np.isnan(kept)
    if not back.any():
        return values
    values = values.copy()
    values[back] = kept[back]
    return values
