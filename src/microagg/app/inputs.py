"""The app's input: a data file read as the command line reads it (bounded for an upload), or a
bundled data set with its dtypes and roles; the suffixes the app reads and writes back.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def read_input(path, max_bytes: int | None = None) -> pd.DataFrame:
    """Read a data file in any format the CLI reads (the one reading function of the app);
    ``max_bytes``: an upload's bound on its decompressed bytes and its cells
    (``microagg.read_limits``)."""
    from .. import io, read_limits

    with read_limits.limited(max_bytes):
        return io.read(path).frame


# Suffixes written back in the input's own format (longest first: ".csv.gz" before ".gz").
_IO_SUFFIXES = (".csv.gz", ".tsv.gz", ".txt.gz", ".tab.gz", ".csv", ".tsv", ".txt", ".tab", ".parquet", ".pq",
                ".dta", ".sav", ".zsav", ".xpt", ".xlsx")
_READ_ONLY_AS = {".sas7bdat": ".xpt"}  # SAS data sets are written as SAS transport files


def read_suffixes() -> tuple:
    """The suffixes of the files the app reads (longest first)."""
    return _IO_SUFFIXES + tuple(_READ_ONLY_AS)


def output_suffix(input_name: str) -> str:
    """The suffix of the protected file: the input's own where it can be written, else .csv."""
    name = str(input_name).lower()
    for suffix in _IO_SUFFIXES:
        if name.endswith(suffix):
            return suffix
    return _READ_ONLY_AS.get(Path(name).suffix, ".csv")


def input_file(spec) -> Path:
    """The file a run protects: the upload, or the bundled data set's own file."""
    return dataset_path(spec.dataset) if spec.dataset else Path(spec.input_path)


def load_input(spec) -> pd.DataFrame:
    """The data of a run: a bundled data set with its dtypes, else the file read."""
    if spec.dataset:
        return load_dataset(spec.dataset)
    return read_input(spec.input_path, spec.max_bytes)


def load_dataset(name: str) -> pd.DataFrame:
    """A bundled data set with its dtypes."""
    from .. import datasets

    return datasets.load(name)


def dataset_roles(name: str) -> dict:
    from .. import datasets

    return datasets.roles(name) if hasattr(datasets, "roles") else {}


def dataset_names() -> list[str]:
    """The bundled data sets (census, tarragona, eia, and testdata once it is bundled)."""
    from .. import datasets

    return list(datasets.names())


def dataset_path(name: str) -> Path:
    from .. import datasets

    return Path(str(datasets.path(name)))
