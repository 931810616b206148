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


def read_suffixes() -> tuple:
    """The suffixes of the files the app reads (longest first), from the format registry."""
    from .. import io

    return io.read_suffixes()


def output_suffix(input_name: str) -> str:
    """The suffix of the protected file: the input's own where it can be written, else the one
    its format is written as (CSV for an unknown one), from the format registry."""
    from .. import io

    return io.output_suffix(input_name)


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
