"""scikit-learn: ``MicroAggregator``, microaggregation as a transformer for ``Pipeline`` and
``ColumnTransformer``.

Microaggregation is transductive (like ``sklearn.manifold.TSNE``): it protects the records it is
given and has no rule for new ones (a new record would join no group, and one that joined a
published group would change its mean, so the published file would no longer be what was
audited). So ``fit_transform(X)`` is the call; ``transform(X)`` gives the protected data only for
the very data that were fitted (a pipeline's ``fit(X).transform(X)``) and is an error for others.
The estimator's parameters are run options of ``microagg.microaggregate`` with the same names and
defaults (``tests/test_sklearn.py`` holds them against ``options.RUN_OPTIONS``); the method's own
parameters go in ``method_params``. As scikit-learn's estimators do, it also takes
``random_state`` (an int, a ``numpy.random.Generator`` or ``RandomState``, or None: then ``seed``)
and, on a data frame, ``columns`` by name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .public_types import Aggregation, Distance

__all__ = ["MicroAggregator", "ESTIMATOR_OPTIONS", "seed_of"]

#: the run options the estimator takes as its own parameters (the rest name columns of a frame,
#: which a step of a pipeline does not see, or publish files)
ESTIMATOR_OPTIONS = (
    "k",
    "method",
    "columns",
    "seed",
    "standardize",
    "time_limit",
    "weights",
    "distance",
    "aggregation",
    "trim",
    "audit",
)


def _validate(estimator, X, reset: bool) -> np.ndarray:
    """scikit-learn's input checks (a 2-D finite numeric array, the feature count and names)."""
    try:
        from sklearn.utils.validation import validate_data
    except ImportError:  # scikit-learn < 1.6
        return np.asarray(estimator._validate_data(X, reset=reset, dtype=[np.float64, np.float32]))
    return np.asarray(validate_data(estimator, X, reset=reset, dtype=[np.float64, np.float32]))


def seed_of(random_state, seed: int | None) -> int | None:
    """The run's seed: ``seed`` when ``random_state`` is None, else scikit-learn's convention (an
    int is the seed; a ``Generator`` or ``RandomState`` gives one draw, so that a shared generator
    seeds each fit anew, as ``sklearn.utils.check_random_state`` makes estimators do)."""
    if random_state is None:
        return seed
    if isinstance(random_state, (bool, np.bool_)):
        raise ValueError(f"random_state must be an int, a Generator or None, got {random_state!r}")
    if isinstance(random_state, (int, np.integer)):
        return int(random_state)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    raise ValueError(
        f"random_state must be an int, a numpy Generator or RandomState, or None, got"
        f" {type(random_state).__name__}"
    )


def _positions(columns, names) -> list | None:
    """The QI columns as positions: names looked up among the frame's ``names``
    (``feature_names_in_``), positions as given."""
    if columns is None:
        return None
    columns = [columns] if isinstance(columns, (str, int, np.integer)) else list(columns)
    if not any(isinstance(c, str) for c in columns):
        return columns
    if names is None:
        raise ValueError(
            "columns are named, but X has no column names: give positions, or fit a data frame"
        )
    index = {str(name): j for j, name in enumerate(names)}
    unknown = [c for c in columns if isinstance(c, str) and c not in index]
    if unknown:
        raise ValueError(f"columns {unknown} are not columns of X (its columns: {list(names)})")
    return [index[c] if isinstance(c, str) else c for c in columns]


def _fingerprint(X: np.ndarray) -> str:
    data = np.ascontiguousarray(X, dtype=np.float64)
    return hashlib.sha256(repr(data.shape).encode() + data.tobytes()).hexdigest()


class MicroAggregator(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Microaggregation as a scikit-learn transformer (transductive: ``fit_transform``).

    Every record's quasi-identifier values are replaced by the representative of its group of at
    least ``k`` similar records (``microagg.microaggregate`` on the columns of ``X``). The output
    has the input's shape and feature names; ``set_output(transform="pandas")`` or ``"polars"``
    gives a data frame.

    Parameters
    ----------
    k : int, default 3
        Minimum group size.
    method : str, default "mdav"
        A registered method (``microagg.methods()``).
    columns : list of int or str, optional
        The quasi-identifier features, by position, or by name when ``X`` is a data frame
        (default: every feature); the others pass through unchanged.
    seed : int or None, default 0
        Random seed of randomised methods (``random_state``, when given, takes its place).
    standardize : bool, default True
        Run the method on z-scores (False: on the raw values).
    time_limit : float, optional
        Wall-clock budget of each fit, in seconds.
    weights : list of float, optional
        Variable weights for the distance, one per quasi-identifier.
    distance : {"euclidean", "mahalanobis", "robust"}, default "euclidean"
        Distance between records.
    aggregation : {"mean", "median", "trimmed", "onestep"}, default "mean"
        What a group publishes.
    trim : float, optional
        Share trimmed at each end with ``aggregation="trimmed"``.
    audit : bool, default True
        Measure the published data (``result_.audit``); False saves its time in a pipeline.
    method_params : dict, optional
        The method's own parameters (``microagg methods -v``), e.g. ``{"gamma": 0.2}``.
    random_state : int, numpy.random.Generator, RandomState or None, default None
        scikit-learn's name for the seed: an int is the seed, a generator gives each fit one
        draw; None: ``seed``.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Each record's group.
    group_sizes_ : ndarray
        The size of each group.
    information_loss_ : float
        IL = 100·SSE/SST on the z-scores, in percent.
    sse_ : float
        Within-group sum of squares.
    sst_ : float
        Total sum of squares.
    lower_bound_ : float or None
        A proven lower bound on the optimal SSE, when the method gives one.
    result_ : microagg.Result
        The whole run (audit, seconds, method facts).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str
        Names of the features seen in ``fit`` (when ``X`` has string column names).

    Examples
    --------
    >>> import numpy as np
    >>> from microagg import MicroAggregator
    >>> X = np.random.default_rng(0).normal(size=(30, 2))
    >>> agg = MicroAggregator(k=3)
    >>> Xp = agg.fit_transform(X)
    >>> Xp.shape, int(agg.group_sizes_.min()) >= 3
    ((30, 2), True)
    >>> np.unique(Xp, axis=0).shape[0] <= 10
    True
    """

    def __init__(
        self,
        k: int = 3,
        method: str = "mdav",
        columns: Sequence[int] | Sequence[str] | None = None,
        seed: int | None = 0,
        standardize: bool = True,
        time_limit: float | None = None,
        weights: Sequence[float] | Mapping[Hashable, float] | None = None,
        distance: Distance = "euclidean",
        aggregation: Aggregation = "mean",
        trim: float | None = None,
        audit: bool = True,
        method_params: Mapping[str, Any] | None = None,
        random_state: int | np.random.Generator | np.random.RandomState | None = None,
    ):
        self.k = k
        self.method = method
        self.columns = columns
        self.seed = seed
        self.standardize = standardize
        self.time_limit = time_limit
        self.weights = weights
        self.distance = distance
        self.aggregation = aggregation
        self.trim = trim
        self.audit = audit
        self.method_params = method_params
        self.random_state = random_state

    def fit(self, X, y=None):
        """Microaggregate ``X`` (its protected version is then ``transform(X)``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The records.
        y : None
            Ignored.

        Returns
        -------
        self : MicroAggregator
            The fitted estimator.
        """
        from .api import microaggregate

        X = _validate(self, X, reset=True)
        from .options import option

        option("k").validate(self.k, None)  # k="3": a ValueError naming k, not a comparison's
        if X.shape[0] < self.k:
            raise ValueError(
                f"n_samples = {X.shape[0]} is smaller than k = {self.k}: microaggregation needs at "
                "least k records"
            )
        options = {name: getattr(self, name) for name in ESTIMATOR_OPTIONS}
        options["seed"] = seed_of(self.random_state, self.seed)
        options["columns"] = _positions(self.columns, getattr(self, "feature_names_in_", None))
        result = microaggregate(
            np.asarray(X, dtype=np.float64), **options, **dict(self.method_params or {})
        )
        self.result_ = result
        self.labels_ = np.asarray(result.labels)
        self.group_sizes_ = np.asarray(result.group_sizes)
        self.information_loss_ = float(result.information_loss)
        self.sse_ = float(result.sse)
        self.sst_ = float(result.sst)
        self.lower_bound_ = result.lower_bound
        self._protected = np.asarray(result.data, dtype=np.float64).reshape(X.shape)
        self._fitted_on = _fingerprint(X)
        return self

    def fit_transform(self, X, y=None, **fit_params):
        """Microaggregate ``X`` and return its protected version.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The records.
        y : None
            Ignored.
        **fit_params
            Ignored (scikit-learn's signature).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The protected records, in the input's order.
        """
        return self.fit(X, y)._protected.copy()

    def transform(self, X):
        """The protected version of the data that were fitted (transductive: other data are an
        error).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The data given to ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The protected records.
        """
        check_is_fitted(self)
        X = _validate(self, X, reset=False)
        if _fingerprint(X) != self._fitted_on:
            raise ValueError(
                "MicroAggregator is transductive: it protects the records it was fitted on and has"
                " no rule for other records; call fit_transform on the data to protect"
            )
        return self._protected.copy()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.non_deterministic = False
        return tags
