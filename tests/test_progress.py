"""microagg.progress: one progress channel, nothing printed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg import methods


@pytest.mark.parametrize("mode", ["plain", "strata", "partitioned", "strata+partitioned"])
def test_progress_reaches_the_callback_on_every_path(mode):
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(300, 3)), columns=list("abc"))
    df["s"] = rng.choice(["n", "s"], size=300)
    calls = []
    kwargs = {"strata": "s"} if "strata" in mode else {}
    if "partitioned" in mode:
        kwargs.update(block_size=60, scheduler="synchronous")
    microagg.microaggregate(
        df, k=3, method="mdav", columns=list("abc"), progress=lambda *a: calls.append(a), **kwargs
    )
    assert calls and all(isinstance(c[0], str) for c in calls)
    fractions = [c[1] for c in calls if c[1] is not None]
    assert all(0.0 <= f <= 1.0 for f in fractions)


def test_methods_never_print(capfd):
    X = np.random.default_rng(3).normal(size=(40, 3))
    for name in methods.names():
        info = methods.get(name)
        data = X[:, :1] if not info.multivariate else X
        microagg.microaggregate(data, k=3, method=name, time_limit=1, progress=lambda *a: None)
    out, _ = capfd.readouterr()
    assert out == ""
