"""Each column of the loaded data as the Data tab shows it: its type, distinct and missing values,
what it can be as a quasi-identifier, and whether it is suggested as one (by the library's column
rules, ``columns.not_a_default_qi``, so the app suggests what the command line uses).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

#: the Data tab shows the profiles and first rows of at most this many columns (the first ones),
#: saying so: a 5,000-column upload sent a 5,000-row table and an 8 × 5,000 preview to the page,
#: which stalled it for 17 s (issue 57); the others are profiled all the same, for the QI choice
SHOWN_COLUMNS = 200
PREVIEW_COLUMNS = 40


def shown(df: pd.DataFrame, profiles: list) -> tuple[list, pd.DataFrame, str | None]:
    """(the profiles shown, the first rows shown, the line that says what is left out, or None)."""
    width = df.shape[1]
    rows = profiles[:SHOWN_COLUMNS]
    preview = df.iloc[:8, :PREVIEW_COLUMNS]
    if width <= PREVIEW_COLUMNS:
        return rows, preview, None
    note = (
        f"the first {min(width, SHOWN_COLUMNS):,} of {width:,} columns profiled here, and the "
        f"first {PREVIEW_COLUMNS} in the first rows; every column can be chosen"
    )
    return rows, preview, note


@dataclass
class ColumnProfile:
    name: Any
    dtype: str
    distinct: int
    missing: int
    numeric: bool  # numbers (a continuous quasi-identifier unless declared a category)
    kind: (
        str  # "continuous", "nominal", "ordinal", "text" or "other": what the column can be as a QI
    )
    id_like: bool
    suggested: bool  # suggested as a quasi-identifier
    note: str

    def label(self) -> str:
        """The column as the quasi-identifier list names it: its name, and its kind when it is not
        continuous, or a possible identifier."""
        marks = [] if self.kind == "continuous" else [self.kind]
        if self.id_like:
            marks.append("identifier?")
        return f"{self.name}  ({', '.join(marks)})" if marks else str(self.name)


def column_kind(series: pd.Series) -> str:
    """What a column is as a quasi-identifier by its dtype (as ``microaggregate`` reads it)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return "ordinal" if series.dtype.ordered else "nominal"
    if pd.api.types.is_bool_dtype(series):
        return "nominal"
    if pd.api.types.is_numeric_dtype(series):
        return "continuous"
    if pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series):
        return "text"
    return "other"


def profile(df: pd.DataFrame, roles: dict | None = None) -> list[ColumnProfile]:
    """Each column's type, number of distinct values and missing values, and whether it is
    suggested as a quasi-identifier: numeric, without missing values, and a default
    quasi-identifier by the library's rule (columns.not_a_default_qi: not an identifier, a
    weight or category codes), so the app suggests what the CLI uses. ``roles`` (a bundled data
    set's ``datasets.roles``) marks identifiers and weights besides."""
    from ..columns import looks_like_identifier, looks_like_weight, not_a_default_qi
    from ..survey_rules import frame_roles

    rows = []
    roles = roles or {}
    coded = set(df.attrs.get("category_codes", ()))
    surveyed = frame_roles(df)  # household ids, record ids and weights read from the whole file
    for c in df.columns:
        s = df[c]
        kind = column_kind(s)
        numeric = kind == "continuous"
        distinct = int(s.nunique(dropna=True))
        missing = int(s.isna().sum())
        role = roles.get(str(c))
        # an identifier rather than an attribute: named like one, or integers that number the
        # records (read once: it scans the column)
        identifier = looks_like_identifier(c, s) if numeric or role is None else None
        survey_role, survey_why = surveyed.get(c, (None, None))
        if survey_role in ("household id", "identifier"):
            identifier = survey_why
        id_like = role == "id" or (role is None and identifier is not None)
        weight = role == "weight" or looks_like_weight(c) is not None or survey_role == "weight"
        why_not = (
            not_a_default_qi(c, s, labelled=c in coded, identifier=identifier) if numeric else None
        )
        notes = []
        if id_like:
            notes.append("looks like an identifier" if role is None else "an identifier")
        elif weight:
            notes.append("a weight")
        elif numeric and distinct <= 1:
            notes.append("constant")
        elif why_not:
            notes.append(f"{why_not.split(';')[0]}? declare it nominal to protect it as a category")
        if kind in ("nominal", "ordinal"):
            notes.append(f"categorical ({kind})")
        elif kind == "text":
            notes.append("text: a stratum, or a nominal quasi-identifier")
        if missing:
            notes.append(f"{missing} missing")
        suggested = numeric and not (id_like or weight or why_not or missing) and distinct > 1
        rows.append(
            ColumnProfile(
                c,
                str(s.dtype),
                distinct,
                missing,
                numeric,
                kind,
                id_like,
                suggested,
                "; ".join(notes),
            )
        )
    return rows
