"""k-anonymous t-closeness through microaggregation: the three algorithms of Soria-Comas,
Domingo-Ferrer, Sanchez & Martinez, "t-Closeness through microaggregation: strict privacy with
enhanced utility preservation", IEEE TKDE 27(11):3098-3110, 2015 (arXiv 1512.02909), section 5.

* ``merge`` (k-anonymity first): the run's method groups the records, then the group with the
  largest EMD is merged with the group whose QI centroid is nearest, until every group is t-close;
* ``mdav`` (t-closeness-aware MDAV): MDAV's clusters around the record farthest from the centroid,
  each grown, while its EMD exceeds t, by the remaining record whose addition gives the smallest
  EMD (the nearest among equals);
* ``first`` (t-closeness first): records sorted by the (first) sensitive column and cut into k'
  blocks of consecutive ranks, k' = max(k, ceil(n / (2 (n - 1) t + 1))); each cluster takes from
  every block the record nearest the record farthest from the remaining centroid. A cluster with
  one record from each block has EMD at most (n - k') / (2 (n - 1) k') <= t (all values distinct;
  solve for k'). The public research code takes max(k, floor(k') + 1), one block more than needed
  when k' is an integer; we take the ceiling, as the bound gives.
* ``auto``: the three, and the one with the lowest information loss.

Every algorithm ends with ``merge``'s step, so that the partition is t-close on every sensitive
column whatever ties or a second sensitive column do to the bounds: merging never fails (the
whole file is 0-close). The distances are O(n^2 / k) passes over the records (no n x n matrix).
"""

from __future__ import annotations

import numpy as np

from ..measures.risk.closeness import SensitiveScale, group_emd

__all__ = ["ALGORITHMS", "block_count", "t_close_labels", "merge_until_close"]

#: the algorithms ``t_closeness_algorithm`` chooses from
ALGORITHMS = ("auto", "merge", "mdav", "first")


def block_count(n: int, k: int, t: float) -> int:
    """k' of the t-closeness-first algorithm: the smallest number of rank blocks whose clusters
    (one record per block) are t-close, at least k (TKDE 2015, section 5.3: a cluster of one
    record per block of n/k' consecutive ranks has EMD <= (n - k') / (2 (n - 1) k'))."""
    if n <= 1:
        return max(k, 1)
    needed = n / (2.0 * (n - 1) * t + 1.0)
    return int(min(n, max(k, int(np.ceil(needed - 1e-12)))))


def _worst(scales, labels) -> np.ndarray:
    """Each group's largest EMD over the sensitive columns."""
    return np.max([group_emd(s, labels) for s in scales], axis=0)


def merge_until_close(Z, labels, scales, t: float) -> tuple[np.ndarray, int]:
    """Merge the group of the largest EMD with the group of the nearest QI centroid until every
    group is t-close (TKDE 2015, Algorithm 1's second step). Returns (labels, merges). Each
    group keeps its records (O(n) memory); a merge costs O(G d) for the nearest centroid and
    O(s log s) for the merged group's EMD."""
    labels = np.unique(labels, return_inverse=True)[1]
    G = int(labels.max()) + 1
    order = np.argsort(labels, kind="stable")
    members = np.split(order, np.cumsum(np.bincount(labels, minlength=G))[:-1])
    sizes = np.bincount(labels, minlength=G).astype(np.float64)
    sums = np.zeros((G, Z.shape[1]))
    np.add.at(sums, labels, Z)
    centroids = sums / sizes[:, None]
    emd = _worst(scales, labels)
    alive = np.ones(G, dtype=bool)
    parent = np.arange(G)
    merges = 0
    while True:
        worst = int(np.argmax(np.where(alive, emd, -1.0)))
        if emd[worst] <= t or merges == G - 1:
            break
        d = ((centroids - centroids[worst]) ** 2).sum(axis=1)
        d[~alive] = np.inf
        d[worst] = np.inf
        other = int(np.argmin(d))
        sums[worst] += sums[other]
        sizes[worst] += sizes[other]
        centroids[worst] = sums[worst] / sizes[worst]
        members[worst] = np.concatenate((members[worst], members[other]))
        alive[other], parent[other], emd[other] = False, worst, -1.0
        rows = members[worst]
        one = np.zeros(len(rows), dtype=np.int64)
        emd[worst] = max(float(group_emd(s, one, s.codes[rows])[0]) for s in scales)
        merges += 1
    root = parent.copy()
    while not np.array_equal(root, root[root]):
        root = root[root]
    from ..labels import relabel

    return relabel(root[labels]).astype(np.int64), merges  # numbered in order of appearance


def _nearest(Z, rows, point, count):
    """The ``count`` rows nearest ``point`` (ties by position: deterministic)."""
    d = ((Z[rows] - point) ** 2).sum(axis=1)
    return rows[np.argsort(d, kind="stable")[:count]]


def _aware_mdav(Z, k: int, scales, t: float) -> np.ndarray:
    """t-closeness-aware MDAV (TKDE 2015, Algorithm 2)."""
    n = len(Z)
    labels = np.full(n, -1, dtype=np.int64)
    remaining = np.arange(n)
    g = 0
    while len(remaining) >= 2 * k:
        centroid = Z[remaining].mean(axis=0)
        far = remaining[int(np.argmax(((Z[remaining] - centroid) ** 2).sum(axis=1)))]
        cluster = list(_nearest(Z, remaining, Z[far], k))
        counts = [np.bincount(s.codes[cluster], minlength=s.m).astype(np.float64) for s in scales]
        taken = np.zeros(n, dtype=bool)
        taken[cluster] = True
        while max(s.emd_of_counts(c) for s, c in zip(scales, counts)) > t:
            left = remaining[~taken[remaining]]
            if len(left) == 0:
                break
            score = np.max(
                [s.emd_adding_each(c)[s.codes[left]] for s, c in zip(scales, counts)], axis=0
            )
            best = np.flatnonzero(score <= score.min() + 1e-12)
            pick = _nearest(Z, left[best], Z[far], 1)[0]
            cluster.append(pick)
            taken[pick] = True
            for s, c in zip(scales, counts):
                c[s.codes[pick]] += 1.0
        labels[cluster] = g
        g += 1
        remaining = remaining[~taken[remaining]]
    if len(remaining) >= k or g == 0:
        labels[remaining] = g
    elif len(remaining):  # fewer than k left: each to the nearest cluster
        _to_nearest_cluster(Z, labels, remaining)
    return labels


def _to_nearest_cluster(Z, labels, rows) -> None:
    """Give each of ``rows`` (unlabelled) the label of the nearest cluster centroid."""
    done = labels >= 0
    G = int(labels[done].max()) + 1
    sums = np.zeros((G, Z.shape[1]))
    np.add.at(sums, labels[done], Z[done])
    centroids = sums / np.bincount(labels[done], minlength=G)[:, None]
    for r in rows:
        labels[r] = int(np.argmin(((centroids - Z[r]) ** 2).sum(axis=1)))


def _closeness_first(Z, k: int, scales, t: float) -> tuple[np.ndarray, int]:
    """t-closeness first (TKDE 2015, Algorithm 3): k' rank blocks of the first sensitive column,
    one record of each block per cluster. Returns (labels, k')."""
    n = len(Z)
    kk = block_count(n, k, t)
    order = np.lexsort((np.arange(n), scales[0].codes))  # ranks; ties by position
    size, extra = divmod(n, kk)
    bounds = np.cumsum([0] + [size + (1 if b < extra else 0) for b in range(kk)])
    blocks = [list(order[bounds[b] : bounds[b + 1]]) for b in range(kk)]
    labels = np.full(n, -1, dtype=np.int64)
    left = np.ones(n, dtype=bool)
    for g in range(size):
        rows = np.flatnonzero(left)
        centroid = Z[rows].mean(axis=0)
        far = rows[int(np.argmax(((Z[rows] - centroid) ** 2).sum(axis=1)))]
        for block in blocks:
            arr = np.asarray(block)
            pick = int(_nearest(Z, arr, Z[far], 1)[0])
            block.remove(pick)
            labels[pick], left[pick] = g, False
    if left.any():  # the extra records of the first blocks (fewer than k'): nearest cluster
        _to_nearest_cluster(Z, labels, np.flatnonzero(left))
    return labels, kk


def _sse(Z, labels) -> float:
    from ..labels import sse

    return float(sse(Z, labels))


def t_close_labels(
    Z, labels, k: int, scales, t: float, algorithm: str, measured=None
) -> tuple[np.ndarray, dict]:
    """A k-anonymous t-close partition by ``algorithm`` (ALGORITHMS; ``labels``: the run's
    method's, the start of ``merge``) and its facts (the algorithm, merges, k' and, for
    ``auto``, each algorithm's SSE on the QIs' z-scores)."""
    candidates = ALGORITHMS[1:] if algorithm == "auto" else (algorithm,)
    found = {}
    for name in candidates:
        facts: dict = {}
        if name == "merge":
            start = labels
        elif name == "mdav":
            start = _aware_mdav(Z, k, scales, t)
        else:
            start, facts["blocks"] = _closeness_first(Z, k, scales, t)
        out, facts["merges"] = merge_until_close(Z, start, scales, t)
        facts["sse"] = _sse(Z if measured is None else measured, out)
        found[name] = (out, facts)
    chosen = min(found, key=lambda name: found[name][1]["sse"])  # ties: the table's order
    out, facts = found[chosen]
    emd = _worst(scales, out)
    summary = {"algorithm": chosen, **facts, "largest_emd": float(emd.max())}
    if algorithm == "auto":
        summary["candidates"] = {name: f["sse"] for name, (_, f) in found.items()}
    return out, summary


def scales_of(frame, sensitive) -> list[SensitiveScale]:
    """Each sensitive column's scale over the whole file (numeric: ordered; else equal)."""
    return [SensitiveScale.of(frame[c], c) for c in sensitive]


def stage(grouping, t: float):
    """The ``t_closeness`` run option's stage (``pipeline.Grouping``): the partition replaced by
    a k-anonymous t-close one on every sensitive column, checked (every group's EMD <= t) before
    anything is published; the model stated with its parameters."""
    from dataclasses import replace

    from ..errors import InputError

    roles, options = grouping.roles, grouping.options
    sensitive = list(roles.sensitive)
    frame = grouping.frame
    scales = scales_of(frame, sensitive)
    algorithm = options.get("t_closeness_algorithm") or "auto"
    if options.get("labels") is not None:  # a given partition (an explore run's): merged if need be
        algorithm = "merge"
    # a margin below t, so that an EMD summed in another order still reads <= t
    target = t * (1.0 - 1e-9)
    # grouped on the method's distances (weights, whitening); auto compares IL on Z
    space = grouping.Z if grouping.matrix is None else grouping.matrix
    labels, facts = t_close_labels(
        space, grouping.labels, roles.k, scales, target, algorithm, measured=grouping.Z
    )
    worst = {s.column: float(group_emd(s, labels).max()) for s in scales}
    if max(worst.values()) > t or np.bincount(labels).min() < roles.k:  # never: merging ends there
        raise InputError(f"the t-close partition failed its check (EMD {worst}): nothing written")
    model = {
        "model": "t-closeness",
        "t": float(t),
        "sensitive": [str(c) for c in sensitive],
        "ground_distance": {s.column: "ordered" if s.ordered else "equal" for s in scales},
        "largest_emd": worst,
        **{k: v for k, v in facts.items() if k != "largest_emd"},
        "holds": (
            f"{roles.k}-anonymous {t:g}-closeness on {', '.join(map(str, sensitive))}: every "
            f"group's EMD to the whole file is at most {t:g}"
        ),
        "reference": "Soria-Comas et al., IEEE TKDE 27(11), 2015",
    }
    return replace(grouping, labels=labels, models=grouping.models + (model,))
