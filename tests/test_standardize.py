"""microagg.standardize: the one home of z-scores and principal axes (in memory and chunk by
chunk)."""

from __future__ import annotations

import numpy as np
import pytest

from microagg.standardize import Moments, Standardizer, axes_of_covariance, principal_axes, zscores


def test_moments_merged_chunk_by_chunk_give_the_standardizer_of_the_whole():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 4)) * [1, 10, 1e-3, 0] + [5, -3, 0, 7]  # the last column constant
    moments = Moments(4)
    for a in range(0, 1000, 137):
        moments.partial_fit(X[a : a + 137])
    streamed, whole = (
        moments.standardizer(["a", "b", "c", "d"], warn=False),
        Standardizer.fit(X, warn=False),
    )
    np.testing.assert_allclose(streamed.mean, whole.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(streamed.scale, whole.scale, rtol=1e-9)
    assert streamed.constant == ["d"] and moments.n == 1000
    np.testing.assert_allclose(streamed.transform(X), zscores(X), atol=1e-9)
    C = moments.zscore_covariance()
    np.testing.assert_allclose(C[:3, :3], np.corrcoef(X[:, :3], rowvar=False), atol=1e-9)


def test_axes_of_a_covariance_are_the_principal_axes_of_the_data():
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(400, 3)) @ np.array([[2.0, 0.5, 0], [0, 1.0, 0.3], [0, 0, 0.2]])
    vals, axes = principal_axes(Z, 2, sign="sum")
    vals_c, axes_c = axes_of_covariance(np.cov(Z, rowvar=False, bias=True), 2, sign="sum")
    np.testing.assert_allclose(vals, vals_c)
    np.testing.assert_allclose(axes, axes_c)
    assert vals[0] >= vals[1] and np.allclose(np.linalg.norm(axes, axis=0), 1.0)
    zero = axes_of_covariance(np.zeros((3, 3)), 2)
    assert np.array_equal(zero[1], np.eye(3)[:, :2]) and not zero[0].any()


def test_constant_columns_warn_once_with_their_names():
    X = np.column_stack([np.arange(5.0), np.ones(5)])
    with pytest.warns(UserWarning, match="constant quasi-identifier column.s. b"):
        Standardizer.fit(X, ["a", "b"])
