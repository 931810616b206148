"""Bundled microdata (from R's sdcMicro; see README.md in this folder).

``load(name)`` returns a fresh pandas DataFrame with proper dtypes; ``roles(name)`` says what each
column is ("continuous", "ordinal", "nominal", "id" or "weight"). No network is needed.
"""

from __future__ import annotations

from importlib import resources

from .survey import household_survey

__all__ = ["load", "names", "path", "roles", "benchmark_columns", "household_survey"]

_FILES = {
    "census": "census.csv",
    "tarragona": "tarragona.csv",
    "eia": "eia.csv",
    "testdata": "testdata.csv",
}

# testdata (sdcMicro's household survey): the integer codes are nominal categories; age is kept as
# a number (years, continuous: declare ordinal=["age"] to publish a median age instead of a mean)
_ROLES = {
    "testdata": {
        "urbrur": "nominal",
        "roof": "nominal",
        "walls": "nominal",
        "water": "nominal",
        "electcon": "nominal",
        "relat": "nominal",
        "sex": "nominal",
        "age": "continuous",
        "hhcivil": "nominal",
        "expend": "continuous",
        "income": "continuous",
        "savings": "continuous",
        "ori_hid": "id",
        "sampling_weight": "weight",
        "household_weights": "weight",
    },
}

# The columns the published benchmark tables microaggregate (datasets/README.md): eia's include
# its utility id UTILITYID, which the literature treats as a numeric attribute although it is an
# identifier (by default microagg leaves it out and says so). Benchmarks, tests and the reference
# values name these columns explicitly.
_BENCHMARK_COLUMNS = {
    "eia": [
        "UTILITYID",
        "RESREVENUE",
        "RESSALES",
        "COMREVENUE",
        "COMSALES",
        "INDREVENUE",
        "INDSALES",
        "OTHREVENUE",
        "OTHRSALES",
        "TOTREVENUE",
        "TOTSALES",
    ],
}


def names() -> list[str]:
    """The bundled data sets' names (``load(name)`` reads one, ``path(name)`` gives its file)."""
    return sorted(_FILES)


def path(name: str):
    """Path of the bundled CSV file for ``name``."""
    if name not in _FILES:
        raise ValueError(f"unknown data set {name!r}; bundled: {', '.join(names())}")
    return resources.files(__name__).joinpath(_FILES[name])


def _header(name: str) -> list[str]:
    with path(name).open(encoding="utf-8") as f:  # the header line; pandas is not needed for it
        return f.readline().rstrip("\r\n").split(",")


def roles(name: str) -> dict[str, str]:
    """Column -> role ("continuous", "ordinal", "nominal", "id", "weight") of a bundled data set.

    census and tarragona are all continuous; eia's UTILITYID is an identifier ("id"), the other
    ten columns continuous (the benchmark tables average UTILITYID too: ``benchmark_columns``).
    """
    if name in _ROLES:
        return dict(_ROLES[name])
    return {c: "id" if (name, c) == ("eia", "UTILITYID") else "continuous" for c in _header(name)}


def benchmark_columns(name: str) -> list[str]:
    """The quasi-identifier columns of the published benchmark tables for ``name``: every column
    of census and tarragona, and eia's 11 columns including its utility id UTILITYID (the
    literature's choice, which reproduces its MDAV figures 0.48 / 0.67 / 1.67 / 3.84)."""
    if name not in _FILES:
        raise ValueError(f"unknown data set {name!r}; bundled: {', '.join(names())}")
    return list(_BENCHMARK_COLUMNS.get(name, _header(name)))


def load(name: str):
    """Load a bundled data set (a pandas DataFrame): 'census' (1080×13), 'tarragona' (834×13),
    'eia' (4092×11) or 'testdata' (4580×15; nominal codes as unordered pandas Categoricals,
    amounts as float)."""
    import pandas as pd

    with resources.as_file(path(name)) as p:
        df = pd.read_csv(p)
    for c, role in roles(name).items():
        if role == "nominal":
            df[c] = pd.Categorical(df[c])  # categories: the codes present, ascending
        elif role == "ordinal":
            df[c] = pd.Categorical(df[c], ordered=True)
        elif role == "continuous" and name == "testdata":
            df[c] = df[c].astype("int64" if c == "age" else "float64")
    return df
