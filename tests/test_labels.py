"""microagg.labels: sizes, group means, SSE, SST, validity of a partition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg import labels as label_stats


@given(st.integers(0, 10_000), st.integers(2, 5), st.integers(1, 6))
@settings(max_examples=30, deadline=None)
def test_sse_plus_between_groups_equals_sst(seed, k, d):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, d))
    labels = rng.integers(0, 6, size=40)
    labels = label_stats.relabel(labels)
    C = label_stats.centroids(X, labels)
    sizes = label_stats.group_sizes(labels)
    between = float(np.sum(sizes[:, None] * (C - X.mean(axis=0)) ** 2))
    assert np.isclose(label_stats.sse(X, labels) + between, label_stats.sst(X))


def test_check_partition_rejects_small_groups_and_unassigned():
    with pytest.raises(label_stats.InvalidPartitionError):
        label_stats.check_partition(np.array([0, 0, 1]), 3, 2)
    with pytest.raises(label_stats.InvalidPartitionError):
        label_stats.check_partition(np.array([0, 0, -1]), 3, 2)
    with pytest.raises(label_stats.InvalidPartitionError):
        label_stats.check_partition(np.array([0, 0]), 3, 2)
    np.testing.assert_array_equal(
        label_stats.check_partition(np.array([7, 7, 3, 3]), 4, 2), [0, 0, 1, 1]
    )


def test_aggregate_with_sample_weights():
    X = np.array([[0.0], [10.0], [4.0], [4.0]])
    out = label_stats.aggregate(X, np.array([0, 0, 1, 1]), weights=np.array([3.0, 1.0, 1.0, 1.0]))
    np.testing.assert_allclose(out[:, 0], [2.5, 2.5, 4.0, 4.0])
