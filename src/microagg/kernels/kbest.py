"""Keep the k best: a bounded list of (key, id) pairs sorted by key, ties by the lower id (numba).

One home for the selections the methods make: MDAV's k nearest records (``k_smallest``), the
KD-tree's k-nearest query (``kdtree.knn``) and md's group of the k−1 records nearest to a seed
(``maxdist._grow``). The list is ``best_key[:filled]``, ``best_id[:filled]``, in increasing
(key, id) order; k is small (a group size), so insertion into a sorted array beats a heap.
Because ties go to the lower id whatever the order in which candidates arrive, a tree search
returns exactly what a scan in index order returns.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel

__all__ = ["kbest_admits", "kbest_insert", "k_smallest", "sort_small"]


@kernel(inline="always")
def kbest_admits(best_key, best_id, k, filled, key, i):
    """Whether (key, i) enters the k best held so far (``filled`` of them)."""
    return filled < k or key < best_key[k - 1] or (key == best_key[k - 1] and i < best_id[k - 1])


@kernel(inline="always")
def kbest_insert(best_key, best_id, k, filled, key, i):
    """Insert an admitted (key, i), dropping the worst when k are held; returns the new count."""
    j = filled if filled < k else k - 1
    while j > 0 and (best_key[j - 1] > key or (best_key[j - 1] == key and best_id[j - 1] > i)):
        best_key[j] = best_key[j - 1]
        best_id[j] = best_id[j - 1]
        j -= 1
    best_key[j] = key
    best_id[j] = i
    return filled + 1 if filled < k else k


@kernel
def k_smallest(v, m, k, out):
    """Positions of the k smallest of v[:m] in increasing order; ties by lower position."""
    best = np.empty(k)
    filled = 0
    for i in range(m):
        if kbest_admits(best, out, k, filled, v[i], i):
            filled = kbest_insert(best, out, k, filled, v[i], i)
    return out


@kernel(inline="always")
def sort_small(v, m):
    """Insertion sort of v[:m], for a few values (a pair of MDAV's groups' positions, pricing's
    candidates): numba's sort would be one more kernel to compile on a first run."""
    for i in range(1, m):
        x = v[i]
        j = i
        while j > 0 and v[j - 1] > x:
            v[j] = v[j - 1]
            j -= 1
        v[j] = x
