"""Input handling: which columns are quasi-identifiers (the rules of ``column_rules`` applied)
and the QI values.

Every problem with the input is reported as one InputError whose message says what is
wrong and where (column names, row counts); nothing is dropped or coerced silently.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .column_rules import (  # noqa: F401  (importable from here: the app and the tests use them)
    CAPITALS_CODE_PARTS,
    CODE_MIN_ROWS,
    CODE_NAME_WORDS,
    CONSTANT_REASON,
    FEW_VALUES,
    MANY_VALUES,
    REPEATS,
    code_columns,
    leading_zero_codes,
    looks_like_code_name,
    looks_like_codes,
    looks_like_identifier,
    looks_like_weight,
    not_a_default_qi,
)
from .errors import InputError, RolesWarning, option_term, shown
from .labels import check_k  # noqa: F401  (importable from here: the app uses it)
from .standardize import (
    Standardizer,
    principal_axes,
    zscores,
)  # noqa: F401  (their home is standardize)

__all__ = [
    "InputError",
    "read_table",
    "select_columns",
    "default_columns",
    "quasi_identifiers",
    "looks_like_identifier",
    "looks_like_codes",
    "leading_zero_codes",
    "looks_like_code_name",
    "not_a_default_qi",
    "looks_like_weight",
    "code_columns",
    "Standardizer",
    "zscores",
    "principal_axes",
    "check_k",
]


def read_table(path: str | Path, **options) -> pd.DataFrame:
    """Read a data file into the frame the pipeline uses (any format of ``microagg.io``; options
    such as ``sep``, ``decimal``, ``encoding``, ``missing`` go to ``io.read``)."""
    from . import io

    return io.read(path, **options).frame


#: A column with numbers in the majority and at most this many distinct other tokens (or with
#: numbers in 90 % of its cells) is "numeric except for a few tokens": an error, never silent text.
_FEW_TOKENS = 5


def given_twice(names) -> list[str]:
    """The names that occur more than once in ``names`` (a list of column names), sorted, as
    text."""
    names = list(names)
    return sorted({str(c) for c in names if names.count(c) > 1})


def _number(value, missing=()) -> tuple[bool, bool, float]:
    """(is_missing, is_number, value) of one cell of an object column."""
    if value is None or (isinstance(value, float) and value != value) or value is pd.NA:
        return True, False, np.nan
    if isinstance(value, (bool, np.bool_)):
        return False, False, np.nan
    if isinstance(value, (int, float, np.integer, np.floating)):
        return False, True, value
    if isinstance(value, str):
        v = value.strip()
        if v == "" or v in missing:
            return True, False, np.nan
        if _NUMBER_TEXT.fullmatch(v):
            return False, True, float(v)
    return False, False, np.nan


_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
#: Numbers in a notation the readers do not parse: thousands separators (1,234 / 1.234 / 1 234 /
#: 1'234), a decimal comma, the unicode minus, a currency sign or a percent sign.
_FORMATTED_NUMBER = re.compile(
    r"[$€£¥]?\s*[+\-\u2212]?\s*[$€£¥]?"
    r"(?:\d{1,3}([,.'\s\u00a0\u202f])\d{3}(?:\1\d{3})*(?:[.,]\d+)?|\d+(?:[.,]\d+)?|[.,]\d+)"
    r"\s*[%$€£¥]?"
)


def _is_text_column(col: pd.Series) -> bool:
    return col.dtype == object or pd.api.types.is_string_dtype(col.dtype)


def _tokens(col: pd.Series, missing=()) -> tuple[int, dict]:
    """(numeric cells, {token: count}) of an object column: the non-numeric, non-missing cells."""
    numbers, tokens = 0, {}
    for v in col.to_numpy(dtype=object):
        is_missing, is_number, _ = _number(v, missing)
        if is_number:
            numbers += 1
        elif not is_missing:
            key = v.strip() if isinstance(v, str) else repr(v)
            tokens[key] = tokens.get(key, 0) + 1
    return numbers, tokens


def first_non_number(col: pd.Series, missing=()) -> tuple[int, object] | None:
    """(row counted from 1, value) of the first cell of a text column that is neither a number nor
    missing; None when every cell is one (the column is numbers written as text)."""
    missing = {str(t).strip() for t in missing or ()}
    for i, v in enumerate(col.to_numpy(dtype=object)):
        is_missing, is_number, _ = _number(v, missing)
        if not (is_missing or is_number):
            return i + 1, v
    return None


#: The rules that leave a numeric column out of the default QIs, as ``skipped_table`` names them:
#: (text its reason holds, the rule's line, how to declare such columns)
SKIP_RULES = (
    ("more than once", "duplicated names", "columns"),
    ("household id", "household ids (by name, or records grouped as households)", "household"),
    ("identifier", "identifiers (by name, or numbering the records)", "columns"),
    ("running number", "identifiers (by name, or numbering the records)", "columns"),
    ("record id", "identifiers (by name, or numbering the records)", "columns"),
    ("person id", "identifiers (by name, or numbering the records)", "columns"),
    ("survey weight", "survey weights (by name, or constant within households)", "weight"),
    ("within each household", "survey weights (by name, or constant within households)", "weight"),
    (
        "value labels",
        "category codes (value labels, or an SPSS measure nominal / ordinal)",
        "codes",
    ),
    ("repeating integers", "repeating integers (codes, or a discrete quantity)", "repeats"),
    (
        "distinct integer values",
        f"category codes (fewer than {FEW_VALUES} distinct integers)",
        "codes",
    ),
    ("says category codes", "category codes (a code-like name)", "codes"),
    ("one value in every record", "constant (one value in every record)", "columns"),
    ("stored as text", "numbers stored as text (such as codes with leading zeros)", "columns"),
)


def _declare(how: str, cols: list) -> str:
    """How to declare the columns of one rule, as an option (command line / API)."""
    first = cols[0]
    if how == "household":
        return (
            f'--household {first} / household="{first}" for a household-aware run;'
            " --columns to use them as quasi-identifiers"
        )
    if how == "weight":
        return (
            f'--sample-weight {first} / sample_weight="{first}" to weight the group means;'
            " --columns to use them as quasi-identifiers"
        )
    if how == "codes":
        return "--categorical to protect them as categories, --continuous to average them"
    if how == "repeats":
        return (
            "--columns or --continuous to average them, --categorical to protect them as categories"
        )
    return "--columns to use them as quasi-identifiers"


def skipped_table(skipped) -> list[str]:
    """The default selection's warnings as one short table: one line per rule, with its columns
    and how to declare them (``skipped``: (column, reason) pairs of ``not_a_default_qi``)."""
    rows: dict = {}
    order = [label for _, label, _ in SKIP_RULES] + ["other reasons"]
    for c, why in skipped:
        _, label, how = next((r for r in SKIP_RULES if r[0] in why), ("", "other reasons", ""))
        rows.setdefault((label, how), []).append(str(c))
    lines = []
    for (label, how), cols in sorted(rows.items(), key=lambda kv: order.index(kv[0][0])):
        lines.append(
            f"not protected, {label}: {', '.join(cols)} (declare: {_declare(how, cols)}; or remove"
            " before publishing)"
        )
    return lines


def select_columns(
    df: pd.DataFrame,
    columns=None,
    exclude=(),
    missing=(),
    allow_empty: bool = False,
    continuous=(),
    household=None,
) -> list[str]:
    """The quasi-identifier columns.

    ``columns`` given: those columns, each of which must be numeric (a text cell that is not a
    number is an error naming its row and value). Default: every numeric column not excluded,
    except columns that look like identifiers (skipped with a warning naming them); a column
    numeric but for a few tokens (``-``, ``.``, ``n/a``, ...) is an error naming the column and the
    tokens. ``missing``: text tokens that mean "missing" (a QI holding them is still an error).
    ``allow_empty``: no numeric column is not an error (other QIs were declared).
    ``continuous``: columns declared continuous: default QIs even if they look like codes.
    ``household``: the declared household id (column or columns), within which a constant
    positive fractional column is a weight (``survey_rules.frame_roles``).
    """
    missing = {str(t).strip() for t in missing or ()}
    if columns is None:
        cols, skipped = default_columns(df, exclude, missing, allow_empty, continuous, household)
        return cols
    return _named_columns(df, columns, missing)


def default_columns(
    df: pd.DataFrame, exclude=(), missing=(), allow_empty=False, continuous=(), household=None
) -> tuple[list, list]:
    """(the default QI columns, (column, why) of the numeric columns the rules left out), with one
    warning per rule naming them (``select_columns`` without ``columns``)."""
    missing = {str(t).strip() for t in missing or ()}
    return _default_columns(df, set(exclude), missing, allow_empty, set(continuous), household)


def _default_columns(
    df: pd.DataFrame, exclude: set, missing: set, allow_empty: bool, continuous: set, household
) -> tuple[list, list]:
    """Every column the rules make a quasi-identifier, and the numeric ones they left out, with
    why; those left out are named in warnings."""
    from .survey_rules import frame_roles

    cols, skipped, formatted, categories = [], [], [], []
    coded = set(
        df.attrs.get("category_codes", ())
    )  # io: every value has a value label (Stata, SPSS)
    surveyed = frame_roles(df, exclude | continuous, household)  # household ids, weights by data
    for c in df.columns:
        if c in exclude:
            continue
        if c in surveyed:
            skipped.append((c, surveyed[c][1]))
            continue
        refuse_mixed_marks(df, c)
        role, detail = _default_role(c, df[c], missing, c in continuous, c in coded)
        if role == "qi":
            cols.append(c)
        elif role == "skipped":
            skipped.append((c, detail))
        elif role == "categories":
            categories.append(c)
        elif role == "formatted":
            formatted.append((c, detail))
    if not cols:  # constant columns only: the run's QIs as they were (averaging leaves them be)
        constant = [c for c, why in skipped if why == CONSTANT_REASON]
        cols, skipped = constant, [(c, why) for c, why in skipped if c not in constant]
    _warn_left_out(skipped, categories, formatted)
    if not cols and not allow_empty:
        hint = (
            ""
            if not formatted
            else (
                f": column(s) {', '.join(str(c) for c, _ in formatted)} hold numbers in a notation "
                "not read as "
                f"numbers, such as {shown(formatted[0][1])}; write them as plain numbers, or set "
                "the decimal mark "
                f"with {option_term('decimal')}"
            )
        )
        raise InputError("no numeric columns to use as quasi-identifiers" + hint)
    return cols, skipped


def _default_role(
    c, col, missing: set, declared_continuous: bool, labelled: bool
) -> tuple[str, object]:
    """(role, detail) of one column under the default rules: "qi"; "skipped" (detail: why);
    "categories" (a pandas Categorical: a QI only when named); "formatted" (numbers in another
    notation; detail: an example); "other" (not numeric: published unchanged). A column numeric
    but for a few tokens is an error."""
    if isinstance(col, pd.DataFrame):  # a duplicated name: ambiguous, never a default QI
        return "skipped", "its name occurs more than once"
    if pd.api.types.is_bool_dtype(col.dtype):
        return "other", None
    if isinstance(col.dtype, pd.CategoricalDtype):
        return "categories", None
    if pd.api.types.is_numeric_dtype(col.dtype):
        why = None if declared_continuous else not_a_default_qi(c, col, labelled=labelled)
        return ("skipped", why) if why else ("qi", None)
    if not _is_text_column(col):
        return "other", None
    numbers, tokens = _tokens(col, missing)
    if numbers and not tokens:
        if any(isinstance(v, str) and _number(v, missing)[1] for v in col.to_numpy(dtype=object)):
            # numbers written as text, e.g. codes with leading zeros (00123)
            return "skipped", "its numbers are stored as text, such as codes with leading zeros"
        return (
            "qi",
            None,
        )  # numbers with declared-missing tokens, or integers beyond int64: checked as QIs
    if (
        numbers
        and numbers >= sum(tokens.values())
        and (len(tokens) <= _FEW_TOKENS or numbers >= 9 * sum(tokens.values()))
    ):
        ranked = sorted(tokens.items(), key=lambda x: -x[1])
        listed = ", ".join(f"{shown(t)} ({k}x)" for t, k in ranked[:_FEW_TOKENS])
        if len(ranked) > _FEW_TOKENS:
            listed += f" and {len(ranked) - _FEW_TOKENS} more"
        raise InputError(
            f"column {c} is numeric except for {listed}: declare the token(s) missing "
            f"({option_term('missing')}) or name the quasi-identifiers ({option_term('columns')})"
        )
    if tokens and all(
        _FORMATTED_NUMBER.fullmatch(t) for t in tokens
    ):  # not text: numbers, written otherwise
        return "formatted", next(iter(tokens))
    return "other", None


def _warn_left_out(skipped: list, categories: list, formatted: list) -> None:
    """One warning per rule that left columns unprotected, naming them."""
    for line in skipped_table(skipped):  # one line per rule, with its columns
        warnings.warn(line, RolesWarning, stacklevel=5)
    if categories:
        warnings.warn(
            f"column(s) {', '.join(map(str, categories))} hold categories (pandas Categorical): "
            "they "
            f"are not protected; name them in {option_term('categorical')}"
            f" (or {option_term('ordinal')}) to "
            "protect "
            "them as categories, or remove them before publishing",
            RolesWarning,
            stacklevel=5,
        )
    for c, example in formatted:
        warnings.warn(
            f"column {c} holds numbers in a notation that is not read as numbers, such as "
            f"{shown(example)} (thousands separators, a decimal comma, the unicode minus, currency "
            "or "
            "percent signs): it is not protected; write them as plain numbers (or set the decimal "
            f"mark with {option_term('decimal')}) to protect it, or remove it before publishing",
            RolesWarning,
            stacklevel=5,
        )


def _named_columns(df: pd.DataFrame, columns, missing: set) -> list:
    """The named quasi-identifier columns: each given once, present and numeric."""
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    elif isinstance(columns, (int, float, np.integer, np.floating)) or not hasattr(
        columns, "__iter__"
    ):
        raise InputError(f"columns must be a list of column names, got {columns!r}")
    columns = list(columns)
    if not columns:
        raise InputError("no quasi-identifier columns given")
    twice = given_twice(columns)
    if twice:
        raise InputError(f"quasi-identifier column(s) given twice: {', '.join(twice)}")
    missing_cols = [c for c in columns if c not in df.columns]
    if missing_cols:
        raise InputError(
            f"unknown column(s): {', '.join(map(str, missing_cols))}; available: "
            f"{', '.join(map(str, df.columns))}"
        )
    for c in columns:
        refuse_mixed_marks(df, c)
        _check_named_column(c, df[c], missing)
    return columns


def refuse_mixed_marks(df: pd.DataFrame, c) -> None:
    """A CSV column whose numbers mix decimal marks (12,5 beside 70.5) is read as its text
    (``io.csv.fields.MIXED_MARKS``): published unchanged, it comes out byte for byte; as a
    quasi-identifier, named or by the default rules, no reading of its numbers is safe."""
    why = df.attrs.get("mixed_marks", {}).get(c)
    if why is not None:
        raise InputError(why)


def _check_named_column(c, col, missing: set) -> None:
    """A named quasi-identifier column holds numbers (text cells that read as numbers included)."""
    if isinstance(col, pd.DataFrame):
        raise InputError(
            f"column name {c!r} occurs more than once: a duplicated name cannot be a "
            "quasi-identifier"
        )
    if pd.api.types.is_bool_dtype(col.dtype):
        raise InputError(f"quasi-identifier column {c} is not numeric (true/false values)")
    if pd.api.types.is_numeric_dtype(col.dtype):
        if pd.api.types.is_complex_dtype(col.dtype):
            raise InputError(f"quasi-identifier column {c} is not numeric (complex values)")
        return
    if not _is_text_column(col):
        raise InputError(f"quasi-identifier column {c} is not numeric (dtype {col.dtype})")
    bad = first_non_number(col, missing)
    if bad is not None:
        raise InputError(
            f"quasi-identifier column {c} is not numeric: row {bad[0]} holds {shown(bad[1])}"
        )


#: float64 holds every integer up to 2**53 exactly; beyond, distinct integers may become equal.
_EXACT_INTEGERS = 2**53


def quasi_identifiers(
    df: pd.DataFrame, columns: list, missing=(), allow_missing: bool = False
) -> np.ndarray:
    """QI values as float64 (n, d); inf is an error naming the column and row count, and so is NaN
    unless ``allow_missing`` (a missing value: an empty cell, NA or a ``missing`` token, kept as
    NaN), and so are integers beyond 2**53 (float64 cannot hold them exactly: distinct values
    would merge)."""
    missing = {str(t).strip() for t in missing or ()}
    X = _plain_numeric_values(df, columns)
    if X is None:
        X = _values_column_by_column(df, columns, missing)
    bad = np.isinf(X) if allow_missing else ~np.isfinite(X)
    if bad.any():
        parts = [
            f"{columns[j]} ({int(bad[:, j].sum())} rows)" for j in np.flatnonzero(bad.any(axis=0))
        ]
        what = "infinite values" if allow_missing else "missing or infinite values"
        raise InputError(f"{what} in quasi-identifier column(s): " + ", ".join(parts))
    return X


def _plain_numeric_values(df: pd.DataFrame, columns: list) -> np.ndarray | None:
    """The QI values when every QI column is of a plain numpy numeric dtype and no integer passes
    2**53: one conversion per dtype, not one per column (a 12,000-column file paid ~1 ms of pandas
    per column, five times an audit). None otherwise: the column-by-column path then converts
    and says what is wrong, as it always did."""
    if not columns or not df.columns.is_unique:
        return None
    positions = df.columns.get_indexer(columns)
    if (positions < 0).any():
        return None
    dtypes = df.dtypes.to_numpy()[positions]
    if not all(isinstance(t, np.dtype) and t.kind in "biuf" for t in dtypes):
        return None
    X = np.empty((len(df), len(columns)), dtype=np.float64)
    for dtype in set(dtypes):
        where = np.flatnonzero(dtypes == dtype)
        block = df.iloc[:, positions[where]].to_numpy(dtype=dtype)
        if dtype.kind in "iu" and (np.abs(block) > _EXACT_INTEGERS).any():
            return None
        X[:, where] = block
    return X


def _values_column_by_column(df: pd.DataFrame, columns: list, missing: set) -> np.ndarray:
    n = len(df)
    X = np.empty((n, len(columns)), dtype=np.float64)
    for j, c in enumerate(columns):
        col = df[c]
        if pd.api.types.is_integer_dtype(col.dtype) and n:
            big = np.flatnonzero((col.abs() > _EXACT_INTEGERS).fillna(False).to_numpy(dtype=bool))
            if big.size:
                i = int(big[0])
                raise InputError(
                    f"quasi-identifier column {c} holds integers beyond 2^53 that float64 cannot"
                    f" hold exactly ({big.size} rows, first row {i + 1}: {col.iloc[i]}); rescale it"
                    " or leave it out"
                )
            X[:, j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
        elif pd.api.types.is_numeric_dtype(col.dtype):
            X[:, j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            cells = col.to_numpy(dtype=object)
            for i, v in enumerate(cells):
                is_missing, is_number, value = _number(v, missing)
                if isinstance(value, (int, np.integer)) and abs(int(value)) > _EXACT_INTEGERS:
                    raise InputError(
                        f"quasi-identifier column {c} holds integers beyond 2^53 that float64"
                        f" cannot hold exactly (row {i + 1}: {value}); rescale it or leave it out"
                    )
                if not (is_missing or is_number):
                    raise InputError(
                        f"quasi-identifier column {c} is not numeric: row {i + 1} holds {shown(v)}"
                    )
                X[i, j] = float(value) if is_number else np.nan
    return X
