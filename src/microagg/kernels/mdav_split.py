"""MDAV's split distance passes: the columns cut into ranges computed at once, one a thread
(numba's threading layer), each range's selections merged after into those of the pass over all
columns; and the guards that check, as the kernels go, that split passes (``_split_now``) and
split pairs of groups (``_pair_split_now``) still beat one thread."""

from __future__ import annotations

import numpy as np
from numba import prange

from .jit import kernel
from .kbest import kbest_admits, kbest_insert
from .mdav_passes import (
    BRUTE_BLOCK,
    _block_distances,
    _block_distances_two,
    _block_farthest,
    _block_k_smallest,
    _distances_select,
    _distances_two_select,
)

__all__ = ["SPLIT_MIN_RECORDS", "PAIRS_CHECK_EVERY", "PAIRS_PROBE"]

#: a distance pass over at least this many records is split into ranges, one a thread, when the
#: kernel runs with threads (``split``); below, waking a second thread costs more than it saves
SPLIT_MIN_RECORDS = 50_000


#: passes between two checks of the split passes against one thread (``_split_now``)
SPLIT_CHECK_EVERY = 128


#: pairs of groups between two checks of the tree kernel's split pairs against one thread
PAIRS_CHECK_EVERY = 1024
#: pairs of groups a check runs the other way (an even number: split pairs alternate between
#: three queries' time and none, ``mdav_tree._split_pair``)
PAIRS_PROBE = 4


@kernel
def _pair_split_now(guard):
    """Whether the next pair of groups runs on two threads. guard = [1.0 while splitting, pairs
    run so since the last check, their cycles, pairs left to run the other way, their cycles,
    their count, 1.0 while a check is in doubt]: every PAIRS_CHECK_EVERY pairs, PAIRS_PROBE run
    the other way, timed, and the faster way per pair goes on (``_pair_timed``). When another
    process takes the second core, split pairs wait for it and turn slower than one thread's: the
    kernel goes on on one thread until a check finds the core free again."""
    return (guard[0] > 0) != (guard[3] > 0)


@kernel
def _pair_timed(guard, spent):
    """Record a pair of groups that took ``spent`` cycles (``_pair_split_now``). A probe that finds
    the other way faster is run again at once, and the way changes only if the second agrees: a
    few pairs' queries vary with where the records lie, and a probe that lost by chance cost
    PAIRS_CHECK_EVERY pairs the slower way (measured at 10^6 Gaussian 10-d records on an idle
    machine: about 2,000 of 110,000 pairs on one thread, two probes lost by chance in one run)."""
    if guard[3] > 0:
        guard[4] += spent
        guard[5] += 1
        guard[3] -= 1
        if guard[3] == 0:
            other_faster = guard[4] / guard[5] < guard[2] / max(guard[1], 1.0)
            if other_faster and guard[6] == 0:  # in doubt: probe again, the same reference
                guard[6] = 1.0
                guard[3], guard[4], guard[5] = PAIRS_PROBE, 0.0, 0.0
                return
            if other_faster:
                guard[0] = 1.0 - guard[0]
            guard[1], guard[2], guard[4], guard[5], guard[6] = 0.0, 0.0, 0.0, 0.0, 0.0
    else:
        guard[1] += 1
        guard[2] += spent
        if guard[1] >= PAIRS_CHECK_EVERY:
            guard[3] = PAIRS_PROBE


@kernel(inline="always")
def _split_now(split, guard):
    """The split of the next timed pass. Every SPLIT_CHECK_EVERY timed passes, one is split and the
    next one is not, both timed (``_split_timed``); in between, the passes run as the faster of the
    two did, except that the pass before the timed split one is split too, so that waking a
    thread left idle over a pass (it may have gone to sleep) is not charged to the timed pass
    (a precaution, not measured apart from the checks that agree in a row). guard =
    [timed passes, cycles per record split, the same on one thread, 1.0 while splitting, 1.0
    while a check is in doubt]. When another process takes the second core, split passes wait
    for it and turn slower than one thread's: the kernel goes on on one thread until a check
    finds the core free again."""
    turn = int(guard[0]) % SPLIT_CHECK_EVERY
    if turn == 0 or turn == SPLIT_CHECK_EVERY - 1 or (turn != 1 and guard[3] > 0):
        return split
    return (1, split[1])


@kernel(inline="always")
def _split_timed(guard, spent, records):
    """Record a timed pass over ``records`` records that took ``spent`` cycles (``_split_now``).
    A check that finds the other way faster is made again at once, and the way changes only if
    the second agrees: one pass is a millisecond or two, and one delayed by an interrupt sent
    SPLIT_CHECK_EVERY passes the slower way (measured on an idle machine at 4·10^5 Gaussian 10-d
    records: split passes took 0.63–0.70 of one thread's time, and 12–15 % of checks found them
    slower)."""
    turn = int(guard[0]) % SPLIT_CHECK_EVERY
    if turn == 0:
        guard[1] = spent / max(records, 1)
    elif turn == 1:
        guard[2] = spent / max(records, 1)
        split_faster = 1.0 if guard[1] < guard[2] else 0.0
        if split_faster == guard[3]:
            guard[4] = 0.0
        elif guard[4] > 0:
            guard[3], guard[4] = split_faster, 0.0
        else:  # in doubt: checked again after one split pass (``_split_now``)
            guard[4] = 1.0
            guard[0] += SPLIT_CHECK_EVERY - 3
    guard[0] += 1


@kernel(inline="always")
def _split_current(split, guard):
    """The split of an untimed pass: as the last check decided."""
    return split if guard[3] > 0 else (1, split[1])


@kernel(inline="always")
def _range_two_select(Xc, i0, i1, p, q, out_q, k, pos, best, pos_q, best_q, parts, j):
    """_distances_two_select over the columns i0..i1−1 alone (positions absolute): the k smallest
    for p in pos[j], best[j], for q in pos_q[j], best_q[j]; their counts, q's largest and its
    position in parts[j] = (filled, filled_q, top, far)."""
    filled, filled_q, top, far = 0, 0, -np.inf, 0
    scratch = np.empty(BRUTE_BLOCK)
    for b0 in range(i0, i1, BRUTE_BLOCK):
        b1 = min(b0 + BRUTE_BLOCK, i1)
        o, u = scratch[: b1 - b0], out_q[b0:b1]
        _block_distances_two(Xc, b0, b1, p, q, o, u)
        filled = _block_k_smallest(o, b0, k, pos[j], best[j], filled)
        filled_q = _block_k_smallest(u, b0, k, pos_q[j], best_q[j], filled_q)
        top, far = _block_farthest(u, b0, top, far)
    parts[j, 0], parts[j, 1], parts[j, 2], parts[j, 3] = filled, filled_q, top, far


@kernel(inline="always")
def _range_select(Xc, i0, i1, p, out, k, pos, best, farthest, parts, j):
    """_distances_select over the columns i0..i1−1 alone, as _range_two_select for p alone:
    parts[j] = (filled, 0, top, far)."""
    filled, top, far = 0, -np.inf, 0
    for b0 in range(i0, i1, BRUTE_BLOCK):
        b1 = min(b0 + BRUTE_BLOCK, i1)
        o = out[b0:b1]
        _block_distances(Xc, b0, b1, p, o)
        filled = _block_k_smallest(o, b0, k, pos[j], best[j], filled)
        if farthest:
            top, far = _block_farthest(o, b0, top, far)
    parts[j, 0], parts[j, 1], parts[j, 2], parts[j, 3] = filled, 0, top, far


@kernel(inline="always")
def _merge_ranges(part_pos, part_best, parts, column, k, pos, best):
    """The k smallest of the ranges' k smallest (counts in parts[:, column]), into pos and best:
    by (distance, position), as the pass over all columns keeps them (``kbest``)."""
    filled = 0
    for j in range(parts.shape[0]):
        for e in range(int(parts[j, column])):
            if kbest_admits(best, pos, k, filled, part_best[j, e], part_pos[j, e]):
                filled = kbest_insert(best, pos, k, filled, part_best[j, e], part_pos[j, e])


@kernel(inline="always")
def _farthest_of_ranges(parts):
    """The first position of the largest distance over the ranges (the earlier range on ties)."""
    top, far = -np.inf, 0
    for j in range(parts.shape[0]):
        if parts[j, 2] > top:
            top, far = parts[j, 2], int(parts[j, 3])
    return far


@kernel(inline="always")
def _range_step(m, threads):
    """Columns per range: m split into ``threads`` ranges of whole blocks."""
    blocks = (m + BRUTE_BLOCK - 1) // BRUTE_BLOCK
    return (blocks + threads - 1) // threads * BRUTE_BLOCK


@kernel(parallel=True)
def _distances_select_threads(Xc, m, p, out, k, pos, best, farthest, split):
    """_distances_select, the columns split into ``threads`` ranges computed at once (numba's
    threading layer, one range a thread), each range's k smallest and largest merged after: the
    same distances (each one computed alone, by the same operations) and the same selections.
    split = (threads, fewest columns to split): fewer columns, one thread."""
    threads, fewest = split
    if threads < 2 or m < fewest:
        return _distances_select(Xc, m, p, out, k, pos, best, farthest)
    step = _range_step(m, threads)
    ranges = (m + step - 1) // step
    part_pos, part_best = np.empty((ranges, k), dtype=np.int64), np.empty((ranges, k))
    parts = np.empty((ranges, 4))
    for j in prange(ranges):
        _range_select(
            Xc,
            j * step,
            min(j * step + step, m),
            p,
            out,
            k,
            part_pos,
            part_best,
            farthest,
            parts,
            j,
        )
    _merge_ranges(part_pos, part_best, parts, 0, k, pos, best)
    return _farthest_of_ranges(parts) if farthest else 0


@kernel(parallel=True)
def _distances_two_select_threads(Xc, m, p, q, out_q, k, pos, best, pos_q, best_q, split):
    """_distances_two_select split as _distances_select_threads."""
    threads, fewest = split
    if threads < 2 or m < fewest:
        return _distances_two_select(Xc, m, p, q, out_q, k, pos, best, pos_q, best_q)
    step = _range_step(m, threads)
    ranges = (m + step - 1) // step
    part_pos, part_best = np.empty((ranges, k), dtype=np.int64), np.empty((ranges, k))
    part_pos_q, part_best_q = np.empty((ranges, k), dtype=np.int64), np.empty((ranges, k))
    parts = np.empty((ranges, 4))
    for j in prange(ranges):
        _range_two_select(
            Xc,
            j * step,
            min(j * step + step, m),
            p,
            q,
            out_q,
            k,
            part_pos,
            part_best,
            part_pos_q,
            part_best_q,
            parts,
            j,
        )
    _merge_ranges(part_pos, part_best, parts, 0, k, pos, best)
    _merge_ranges(part_pos_q, part_best_q, parts, 1, k, pos_q, best_q)
    return _farthest_of_ranges(parts)
