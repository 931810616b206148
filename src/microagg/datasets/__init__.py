"""Bundled benchmark microdata (from R's sdcMicro; see README.md in this folder).

``load(name)`` returns a fresh pandas DataFrame; no network is needed.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["load", "names", "path"]

_FILES = {"census": "census.csv", "tarragona": "tarragona.csv", "eia": "eia.csv"}


def names() -> list[str]:
    return sorted(_FILES)


def path(name: str):
    """Path of the bundled CSV file for ``name``."""
    if name not in _FILES:
        raise ValueError(f"unknown data set {name!r}; bundled: {', '.join(names())}")
    return resources.files(__name__).joinpath(_FILES[name])


def load(name: str) -> pd.DataFrame:
    """Load a bundled data set: 'census' (1080×13), 'tarragona' (834×13) or 'eia' (4092×11)."""
    import pandas as pd

    with resources.as_file(path(name)) as p:
        return pd.read_csv(p)
