"""A script calling the public API as a user would: pyright must find nothing in it
(tests/test_typing.py). Checked, not run."""

import numpy as np

import microagg
from microagg import MicroAggregator

df = microagg.datasets.load("census")
res = microagg.microaggregate(
    df, k=3, method="mdav", columns=["AGI", "FEDTAX"], seed=1, time_limit=5.0
)
res = microagg.microaggregate(
    df, 4, "vmdav", gamma=0.3, distance="robust", aggregation="median", audit=False
)
res = microagg.microaggregate(
    np.zeros((10, 2)), k=2, progress=lambda stage, fraction, message: None
)
il: float = res.information_loss
ex = microagg.explore(df, k=[3, 5], methods=["mdav"], time_limit=10, columns=["AGI"], max_risk=0.1)
agg = MicroAggregator(k=5, method="mdav", method_params={"variant": "classic"}).set_output(
    transform="pandas"
)
print(il, ex, agg, microagg.__version__, microagg.methods.names())
