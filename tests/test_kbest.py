"""kernels/kbest.py: the k best by (key, id), ties to the lower id, whatever the arrival order."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from microagg.kernels.kbest import k_smallest, kbest_admits, kbest_insert


@njit(cache=False)
def _keep(keys, ids, k):
    best_key = np.empty(k)
    best_id = np.empty(k, dtype=np.int64)
    filled = 0
    for t in range(keys.shape[0]):
        if kbest_admits(best_key, best_id, k, filled, keys[t], ids[t]):
            filled = kbest_insert(best_key, best_id, k, filled, keys[t], ids[t])
    return best_id[:filled].copy(), best_key[:filled].copy()


values = st.lists(st.integers(0, 4), min_size=1, max_size=60)  # small range: many ties


@settings(max_examples=60, deadline=None)
@given(values, st.integers(1, 8), st.integers(0, 10**6))
def test_kbest_equals_lexicographic_sort_in_any_arrival_order(vals, k, seed):
    keys = np.asarray(vals, dtype=np.float64)
    ids = np.random.default_rng(seed).permutation(len(keys)).astype(np.int64)  # shuffled arrival
    got_ids, got_keys = _keep(keys, ids, k)
    order = np.lexsort((ids, keys))[:k]
    assert np.array_equal(got_ids, ids[order])
    assert np.array_equal(got_keys, keys[order])


@settings(max_examples=60, deadline=None)
@given(values, st.integers(1, 8))
def test_k_smallest_positions_ties_to_lower_position(vals, k):
    v = np.asarray(vals, dtype=np.float64)
    k = min(k, len(v))
    out = np.empty(k, dtype=np.int64)
    k_smallest(v, len(v), k, out)
    assert np.array_equal(out, np.argsort(v, kind="stable")[:k])
