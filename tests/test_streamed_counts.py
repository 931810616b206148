"""The out-of-core verification's exact count of key combinations (``streamed_counts``) against
the in-memory count (``measures.records.key_frequencies``, missing values one value per
column), on random files cut into random chunks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg.measures.records import key_frequencies
from microagg.publication.streamed_counts import count_combinations


@st.composite
def files(draw):
    n = draw(st.integers(1, 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    frame = pd.DataFrame(
        {
            "x": rng.integers(0, draw(st.integers(1, 5)), n).astype(float),
            "y": rng.choice(["a", "b", "c"], n),
            "s": rng.integers(0, 2, n),
        }
    )
    frame.loc[rng.random(n) < 0.1, "x"] = np.nan  # a missing value: one value of its own
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    return frame, cuts


def _chunks(frame, cuts):
    bounds = [0, *cuts, len(frame)]
    return [frame.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


@settings(max_examples=60, deadline=None)
@given(files(), st.integers(1, 4), st.booleans())
def test_the_streamed_count_is_the_in_memory_count(drawn, k, known):
    frame, cuts = drawn
    keys, qis = ["x", "y", "s"], ["x", "y"]
    counted, qi_counts, n = count_combinations(
        iter(_chunks(frame, cuts)), keys, qis, k, len(frame) if known else None
    )
    expected = key_frequencies(frame, keys, k)
    assert n == len(frame) == counted.n
    assert counted.combinations == expected.combinations
    assert counted.smallest == expected.smallest
    assert counted.records_below_k == expected.records_below_k
    assert counted.combinations_below_k == expected.combinations_below_k
    assert sorted(qi_counts) == sorted(np.bincount(key_frequencies(frame, qis, k).combination))


def test_more_records_than_expected_is_refused():
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="more than the 2 records"):
        count_combinations(iter([frame]), ["x"], ["x"], 1, 2)
