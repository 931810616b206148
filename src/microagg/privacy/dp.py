"""An epsilon-differentially private release of the continuous QIs by microaggregation and Laplace
noise on the group centroids.

Mechanisms (``MECHANISMS``):

* ``insensitive`` (Soria-Comas, Domingo-Ferrer, Sanchez & Martinez, VLDB J 23(5), 2014):
  *insensitive* microaggregation, whose clusters do not depend on the data beyond one record:
  every value is clamped to its declared bounds and scaled to [0, 1], the records are put in one
  fixed total order of the domain (distance to the lower corner of the bounds box, ties by the
  scaled values in column order, then by position: a data-independent order of the points), and
  consecutive runs of k records form the clusters (the last one takes the n mod k left over);
  then Laplace noise on each cluster's centroid;
* ``individual-ranking`` (Sanchez, Domingo-Ferrer, Martinez & Soria-Comas, Information Fusion
  30, 2016): each attribute on its own, sorted, in consecutive runs of k; the budget split equally
  over the d attributes (epsilon / d each, sequential composition).

The sensitivity of each mechanism is ``sensitivity`` (its derivation there). Noise is drawn from
the run's seed (``noise_generator``), so that the release is reproducible from its manifest; the
manifest and the summary state epsilon, the mechanism, the bounds (and whether the data gave
them), the sensitivity and the Laplace scale of each attribute.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

__all__ = [
    "MECHANISMS",
    "FixedValues",
    "sensitivity",
    "laplace_scales",
    "insensitive_clusters",
    "ranked_clusters",
    "noise_generator",
    "parse_bounds",
    "check_bounds",
    "stage",
]

#: the mechanisms ``dp_mechanism`` chooses from
MECHANISMS = ("insensitive", "individual-ranking")


@dataclass(frozen=True)
class FixedValues:
    """The published continuous values a stage fixes (``pipeline.Grouping.values``): column ->
    one value per record, and their nature in words."""

    continuous: dict
    nature: str


def sensitivity(mechanism: str, n: int, k: int, ranges) -> np.ndarray:
    """The L1 sensitivity, per attribute, of the set of cluster centroids the mechanism publishes,
    for data sets of n records that differ in one record (the neighbours of bounded differential
    privacy); ``ranges``: each attribute's hi - lo (values clamped to [lo, hi]).

    Derivation. Changing one record x into y moves a cluster's centroid of attribute a by
    (value in - value out) / size only if the cluster loses one record and gains one, since the
    cluster sizes are fixed by n and k alone; so by at most Delta_a / k (size >= k).

    * ``insensitive``: the clusters are consecutive runs of k in a fixed order of the domain.
      Taking x out at rank i and putting y in at rank j shifts every record between i and j by
      one rank: each cluster between them gives its first record to its neighbour and takes one
      from the other neighbour, so each of the g = floor(n / k) clusters pairs up with the
      neighbour's cluster with at most one record changed (VLDB J 2014, section 5). All g
      centroids may move, each by at most Delta_a / k: S_a = g * Delta_a / k (a file of
      n < k records, one cluster of n: Delta_a / n).
    * ``individual-ranking``: one attribute sorted on its own. The records between i and j shift
      in the same direction, so every changed cluster gains a larger (or every one a smaller)
      value than it loses: the centroid moves all have one sign and their sum telescopes to
      (y_a - x_a) / k at most: S_a = Delta_a / k, whatever n (Information Fusion 2016, section
      4).

    The Laplace scale of attribute a is then S_a / epsilon_a, epsilon_a = epsilon / d: the d
    attributes share the budget equally (sequential composition; ``laplace_scales``).
    """
    ranges = np.asarray(ranges, dtype=np.float64)
    smallest = min(k, n)  # a file of fewer than k records is one cluster of n
    if mechanism == "insensitive":
        return max(n // k, 1) * ranges / smallest
    if mechanism == "individual-ranking":
        return ranges / smallest
    raise ValueError(f"unknown mechanism {mechanism!r}")


def laplace_scales(mechanism: str, n: int, k: int, ranges, epsilon: float) -> np.ndarray:
    """Each attribute's Laplace scale: its sensitivity over its share epsilon / d of the budget."""
    ranges = np.asarray(ranges, dtype=np.float64)
    return sensitivity(mechanism, n, k, ranges) * len(ranges) / float(epsilon)


def _clusters_of_order(order: np.ndarray, k: int) -> np.ndarray:
    """Cluster of each record from its rank: runs of k, the last taking the remainder."""
    n = len(order)
    labels = np.empty(n, dtype=np.int64)
    labels[order] = np.minimum(np.arange(n) // k, max(n // k - 1, 0))
    return labels


def insensitive_clusters(X: np.ndarray, lo, hi, k: int) -> np.ndarray:
    """Insensitive microaggregation (VLDB J 2014): ``X`` (n, d) clamped to [lo, hi], scaled to
    [0, 1]; records ordered by their distance to the lower corner, ties by the scaled values
    (column order) then by position; consecutive runs of k records."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    U = (np.clip(X, lo, hi) - lo) / (hi - lo)
    radius = np.sqrt((U**2).sum(axis=1))
    keys = [np.arange(len(U))] + [U[:, j] for j in range(U.shape[1] - 1, -1, -1)] + [radius]
    return _clusters_of_order(np.lexsort(keys), k)


def ranked_clusters(x: np.ndarray, k: int) -> np.ndarray:
    """Individual ranking of one attribute: sorted (ties by position), consecutive runs of k."""
    return _clusters_of_order(np.lexsort((np.arange(len(x)), x)), k)


def noise_generator(seed) -> np.random.Generator:
    """The noise's generator: the run's seed and a fixed stream of its own (None: fresh
    entropy, and then the release is not reproducible)."""
    return np.random.default_rng(None if seed is None else np.random.SeedSequence([seed, 4405]))


def noisy_centroids(X, labels, scales, rng) -> np.ndarray:
    """Each record's cluster centroid plus Laplace(0, scale_a) noise drawn once per cluster and
    attribute (``labels``: (n,) for all attributes, or (n, d) one column per attribute)."""
    labels = labels if labels.ndim == 2 else np.repeat(labels[:, None], X.shape[1], axis=1)
    out = np.empty_like(X)
    for a in range(X.shape[1]):
        lab = labels[:, a]
        G = int(lab.max()) + 1
        means = np.bincount(lab, weights=X[:, a], minlength=G) / np.bincount(lab, minlength=G)
        out[:, a] = (means + rng.laplace(0.0, scales[a], size=G))[lab]
    return out


def parse_bounds(text: str) -> dict:
    """``COL=LO:HI,COL2=LO:HI`` as {column: (lo, hi)}."""
    out = {}
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        name, sep, pair = part.rpartition("=")
        lo, colon, hi = pair.partition(":")
        if not sep or not colon or not name:
            raise ValueError(f"bounds must read COL=LO:HI,..., got {part!r}")
        out[name] = (float(lo), float(hi))
    return check_bounds(out)


def check_bounds(value) -> dict:
    """{column: (lo, hi)} with finite lo < hi (text: ``parse_bounds``)."""
    if isinstance(value, str):
        return parse_bounds(value)
    if not hasattr(value, "items"):
        raise ValueError("bounds must map each column to (lo, hi)")
    out = {}
    for name, pair in value.items():
        lo, hi = (float(b) for b in pair)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"the bounds of {name} must be finite with lo < hi, got {pair!r}")
        out[name] = (lo, hi)
    return out


def check_mechanism(v: dict, info, n) -> None:
    """The mechanism against the method, before any data is read."""
    from ..errors import ParameterError

    ranking = info.name == "individual-ranking"
    if (v.get("dp_mechanism") == "individual-ranking") != ranking:
        raise ParameterError(
            f"{n('dp_mechanism')} individual-ranking goes with the method individual-ranking, "
            f"and the method individual-ranking with {n('dp_mechanism')} individual-ranking "
            f"(got method {info.name!r})"
        )
    if v.get("aggregation", "mean") != "mean" or v.get("sample_weight") is not None:
        raise ParameterError(f"{n('epsilon')} publishes plain group means: no other aggregation")


def _bounds_for(frame, columns, declared: dict | None):
    """(lo, hi, where each came from) for the continuous QIs: declared, else the data's range."""
    from ..errors import InputError

    declared = dict(declared or {})
    unknown = [c for c in declared if c not in columns]
    if unknown:
        raise InputError(
            f"bounds given for {', '.join(map(str, unknown))}, which are not continuous QIs"
        )
    lo, hi, source = [], [], {}
    for c in columns:
        x = frame[c].to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isnan(x).any():
            raise InputError(f"epsilon needs {c} without missing values")
        if c in declared:
            a, b = declared[c]
            source[str(c)] = "declared"
        else:
            a, b = float(x.min()), float(x.max())
            if not a < b:
                a, b = a - 0.5, b + 0.5  # a constant column: any interval around it
            source[str(c)] = "read from the data"
        lo.append(a)
        hi.append(b)
    return np.array(lo), np.array(hi), source


def stage(grouping, epsilon: float):
    """The ``epsilon`` run option's stage (``pipeline.Grouping``): the mechanism's partition and
    its noisy centroids as the published continuous values; the model stated."""
    from ..errors import InputError

    roles, options = grouping.roles, grouping.options
    columns = [c for c in roles.columns if roles.kinds.get(c, "continuous") == "continuous"]
    if not columns:
        raise InputError("epsilon protects continuous QIs: the run has none")
    mechanism = options.get("dp_mechanism") or "insensitive"
    if mechanism == "individual-ranking" and len(columns) != len(roles.columns):
        raise InputError("epsilon by individual ranking needs every QI continuous")
    lo, hi, source = _bounds_for(grouping.frame, columns, options.get("bounds"))
    X = np.column_stack([grouping.frame[c].to_numpy(dtype=np.float64) for c in columns])
    clamped = int(np.count_nonzero((X < lo) | (X > hi)))
    X = np.clip(X, lo, hi)
    n, k = len(X), roles.k
    if mechanism == "insensitive":  # given labels (an explore run's) are these same groups
        labels = insensitive_clusters(X, lo, hi, k)
        value_labels = labels
    else:
        labels = np.column_stack([ranked_clusters(X[:, a], k) for a in range(X.shape[1])])
        value_labels = labels
    scales = laplace_scales(mechanism, n, k, hi - lo, epsilon)
    noisy = noisy_centroids(X, value_labels, scales, noise_generator(options.get("seed")))
    model = _statement(mechanism, epsilon, columns, lo, hi, source, n, k, scales, clamped)
    nature = f"{epsilon:g}-DP {mechanism} microaggregation: group means + Laplace noise"
    values = FixedValues({c: noisy[:, a] for a, c in enumerate(columns)}, nature)
    return replace(grouping, labels=labels, values=values, models=grouping.models + (model,))


def _statement(mechanism, epsilon, columns, lo, hi, source, n, k, scales, clamped) -> dict:
    """The model as the manifest records it and the summary says it."""
    sens = sensitivity(mechanism, n, k, hi - lo)
    from_data = [c for c, s in source.items() if s != "declared"]
    return {
        "model": "epsilon-differential privacy",
        "epsilon": float(epsilon),
        "mechanism": mechanism,
        "k": int(k),
        "columns": [str(c) for c in columns],
        "bounds": {str(c): [float(a), float(b)] for c, a, b in zip(columns, lo, hi)},
        "bounds_source": source,
        "sensitivity": {str(c): float(s) for c, s in zip(columns, sens)},
        "laplace_scale": {str(c): float(s) for c, s in zip(columns, scales)},
        "epsilon_per_attribute": float(epsilon) / len(columns),
        "values_clamped": clamped,
        "holds": (
            f"{epsilon:g}-differential privacy of the published values of "
            f"{', '.join(map(str, columns))} (the set of noisy centroids), given their bounds"
        ),
        "does_not_hold": (
            "the other columns are published unchanged and are not protected by it; nor is "
            "which row carries which centroid; the manifest holds the seed of the noise: "
            "published beside the file, it lets anyone remove the noise"
            + (
                f"; the bounds of {', '.join(map(str, from_data))} were read from the data: "
                "they publish each one's minimum and maximum, and the guarantee holds only "
                "for data sets with the same range"
                if from_data
                else ""
            )
        ),
        "reference": "Soria-Comas et al., VLDB J 2014"
        if mechanism == "insensitive"
        else "Sanchez et al., Information Fusion 2016",
    }
