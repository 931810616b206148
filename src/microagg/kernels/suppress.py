"""Local suppression of categorical key values (``microagg.suppression``): the hot loops.

codes: (n, m) int64 key codes, -1 = missing (matches any value, sdcMicro's ``freqCalc`` with
alpha = 1); rows sorted by block (``start[b]:start[b+1]``), records of different blocks never
match (a block is a published QI group or stratum, which suppression leaves alone). ``rank[j]``:
the importance rank of key j, 0 = most important (suppressed last). fk: each record's number of
matches (itself included), kept exact as values are suppressed and restored.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel


@kernel
def _matches(codes, i, a, b, skip, value):
    """Per row r of the block [a, b): how many keys j (all keys but ``skip``; ``value`` stands for
    codes[i, skip] when skip >= 0) disagree between rows i and r, both present and different;
    returned with the last such key (to tell which single key a row misses by)."""
    m = codes.shape[1]
    miss = np.zeros(b - a, np.int64)
    last = np.full(b - a, -1, np.int64)
    for r in range(a, b):
        c = 0
        for j in range(m):
            u = value if j == skip else codes[i, j]
            v = codes[r, j]
            if u >= 0 and v >= 0 and u != v:
                c += 1
                last[r - a] = j
        miss[r - a] = c
    return miss, last


@kernel
def suppress_greedy(codes, start, fk, order, rank, k):
    """Phase 1: each record below k (in ``order``: rarest first, sdcMicro's order of decreasing
    risk) gets values suppressed until it matches k records: each time the least important key
    whose suppression alone reaches k, else the key that adds the most matches (ties: the less
    important). A record matching every record of its block is its best; if the block has fewer
    than k records it stays below k (returned count). Returns the records left below k."""
    n, m = codes.shape
    block = np.empty(n, np.int64)
    for b in range(start.size - 1):
        for r in range(start[b], start[b + 1]):
            block[r] = b
    left = 0
    for t in range(order.size):
        i = order[t]
        a, b = start[block[i]], start[block[i] + 1]
        while fk[i] < k:
            miss, last = _matches(codes, i, a, b, -1, -1)
            base = 0
            gain = np.zeros(m, np.int64)
            for r in range(b - a):
                if miss[r] == 0:
                    base += 1
                elif miss[r] == 1:
                    gain[last[r]] += 1
            best = -1
            # least important first: the first key (by decreasing rank) that reaches k alone
            for want in range(m - 1, -1, -1):
                for j in range(m):
                    if rank[j] == want and codes[i, j] >= 0 and base + gain[j] >= k and best < 0:
                        best = j
            if best < 0:
                top = -1
                for want in range(m - 1, -1, -1):
                    for j in range(m):
                        if rank[j] == want and codes[i, j] >= 0 and gain[j] > top:
                            top = gain[j]
                            best = j
            if best < 0:  # every key already missing: the block is too small
                left += 1
                break
            codes[i, best] = -1
            for r in range(b - a):
                if miss[r] == 1 and last[r] == best and a + r != i:
                    fk[a + r] += 1
            fk[i] = base + gain[best]
    return left


@kernel
def restore(codes, original, start, fk, cells_i, cells_j, k):
    """Phase 2: give back suppressed values (cells in the given order: most important keys
    first) wherever the file stays k-anonymous: the record keeps >= k matches and no record
    that matched it only through the missing value falls below k. Returns how many were restored."""
    n, m = codes.shape
    block = np.empty(n, np.int64)
    for b in range(start.size - 1):
        for r in range(start[b], start[b + 1]):
            block[r] = b
    restored = 0
    for t in range(cells_i.size):
        i, j = cells_i[t], cells_j[t]
        a, b = start[block[i]], start[block[i] + 1]
        miss, last = _matches(codes, i, a, b, j, original[i, j])
        now = 0
        ok = True
        for r in range(b - a):
            if miss[r] == 0:
                now += 1
        if now < k:
            continue
        # rows that match now (value missing) but not once restored: they miss by key j alone
        for r in range(b - a):
            if miss[r] == 1 and last[r] == j and fk[a + r] - 1 < k:
                ok = False
                break
        if not ok:
            continue
        for r in range(b - a):
            if miss[r] == 1 and last[r] == j:
                fk[a + r] -= 1
        codes[i, j] = original[i, j]
        fk[i] = now
        restored += 1
    return restored
