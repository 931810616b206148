"""The record linkage of an intruder who knows the method (Nin, Herranz & Torra 2008;
measures.risk.method_aware): the expected share linked correctly is the mean of 1/f over records,
never below distance-based record linkage for published group means, and in every audit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg
from microagg.measures.risk.method_aware import method_aware_linkage


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=40))
def test_it_is_the_expected_share_of_a_uniform_pick(rows):
    frame = pd.DataFrame(rows, columns=["a", "b"])
    expected = np.mean([1.0 / sum(r == s for s in rows) for r in rows])
    assert method_aware_linkage(frame) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("method", ["mdav", "vmdav", "individual-ranking"])
def test_it_links_at_least_as_many_records_as_dbrl(method):
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(90, 3)), columns=["x", "y", "z"])
    audit = microagg.microaggregate(df, 3, method=method).audit
    assert audit["record_linkage_method_aware"] >= audit["record_linkage_dbrl"] - 1e-12
    labels = microagg.microaggregate(df, 3, method=method, audit=False).labels
    if labels.ndim == 1:  # one group per record: the intruder's pick is 1 in its group's size
        sizes = np.bincount(labels)[labels]
        assert audit["record_linkage_method_aware"] == pytest.approx(np.mean(1.0 / sizes))
