"""Misspelt options: pyright must report each (tests/test_typing.py). Checked, not run."""

import microagg

df = microagg.datasets.load("census")
microagg.microaggregate(df, k=3, colums=["AGI"])  # line 6: columns
microagg.microaggregate(df, k=3, method="vmdav", gama=0.2)  # line 7: gamma, a method parameter
microagg.explore(df, k=[3], stratta="REGION")  # line 8: strata
microagg.microaggregate(df, k=3, distance="manhattan")  # line 9: not a distance
microagg.protect("in.csv", "out.csv", k=3, colums=["AGI"])  # line 10: columns, at protect
microagg.protect("in.csv", "out.csv", aggregation="means")  # line 11: not an aggregation
