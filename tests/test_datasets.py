"""microagg.datasets: the bundled data sets, their shapes, dtypes and column roles."""

from __future__ import annotations

import numpy as np
import pandas as pd

import microagg


def test_bundled_datasets_shapes():
    shapes = {"census": (1080, 13), "tarragona": (834, 13), "eia": (4092, 11)}
    for name, shape in shapes.items():
        df = microagg.datasets.load(name)
        assert df.shape == shape
        assert df.notna().all().all()


def test_testdata_loader_dtypes_and_roles():
    df = microagg.datasets.load("testdata")
    roles = microagg.datasets.roles("testdata")
    assert df.shape == (4580, 15)
    for c in ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"):
        assert roles[c] == "nominal"
        assert isinstance(df[c].dtype, pd.CategoricalDtype) and not df[c].dtype.ordered
    assert df["age"].dtype == np.int64 and roles["age"] == "continuous"
    for c in ("expend", "income", "savings"):
        assert df[c].dtype == np.float64 and roles[c] == "continuous"
    assert roles["ori_hid"] == "id" and roles["sampling_weight"] == "weight"
    assert pd.api.types.is_numeric_dtype(df["household_weights"])
    assert set(df["urbrur"].cat.categories) == {1, 2}
