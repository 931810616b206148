import warnings

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _quiet_constant_column_warnings():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="constant quasi-identifier")
        yield


def brute_force_optimum(X: np.ndarray, k: int) -> float:
    """Minimum SSE over every partition of the rows into groups of at least k (tiny n only)."""
    X = np.asarray(X, dtype=np.float64)
    n = len(X)
    best = [np.inf]

    def group_cost(idx):
        G = X[list(idx)]
        return float(np.sum((G - G.mean(axis=0)) ** 2))

    def rec(rest, acc):
        if acc >= best[0]:
            return
        if not rest:
            best[0] = acc
            return
        first, others = rest[0], rest[1:]
        m = len(others)
        # choose the companions of `first` (at least k-1), leaving 0 or >= k records
        for mask in range(1 << m):
            size = bin(mask).count("1") + 1
            left = len(rest) - size
            if size < k or (0 < left < k):
                continue
            chosen = [first] + [others[i] for i in range(m) if mask >> i & 1]
            remaining = [others[i] for i in range(m) if not mask >> i & 1]
            rec(remaining, acc + group_cost(chosen))

    rec(list(range(n)), 0.0)
    return best[0]
