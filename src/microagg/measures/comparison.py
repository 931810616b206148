"""Original against protected values: the inputs of the "utility" and "risk" measures
(``Comparison``), their figures registered in the measure registry, and the reports built on them.

A figure of a comparison is one function decorated with ``@measure`` here, computed from the
comparison's values and what several measures share (the covariances, the first principal
components, the published key frequencies), computed once per comparison. The figures of a
published file that need its other columns (keys, weights, sensitive columns, row order) are
registered in ``file_risk``.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ..errors import InputError
from ..labels import il_percent, sst
from ..onehot import sq_distance
from ..standardize import covariance
from .records import as_matrix, common_scale, identical_rows, key_frequencies
from .registry import Audit, audit, measure
from .risk import linkage as dbrl
from .risk.intervals import interval_disclosure_risk
from .utility import (
    categorical_report,
    correlation_discrepancy,
    correlations,
    covariance_figures,
    eigen_sdcmicro,
    eigenvalue_figure,
    first_pc,
    il1s,
    sample_sd,
    smallest_group,
    standardised_covariance,
    weight_change,
)

__all__ = ["Comparison", "compare", "utility_report", "risk_report"]


class Comparison:
    """Original against protected continuous QI values (n, d), same rows in the same order, for
    the "utility" and "risk" measures. ``scaler``: a run's ``Standardizer`` (its IL is then the
    run's); ``p``: the rank-interval percentage of interval disclosure; ``published``: the published
    QI columns of every kind (categorical ones included), for the smallest group of identical
    published values."""

    def __init__(self, X, Xp, scaler=None, p: float = 10.0, published=None):
        self.X_all, self.Xp_all = as_matrix(X), as_matrix(Xp)
        if self.X_all.shape != self.Xp_all.shape:
            raise InputError(
                "original and protected values differ in shape: "
                f"{self.X_all.shape} and {self.Xp_all.shape}"
            )
        # missing values: IL, SSE and SST over the present values (``scaled``); the other figures
        # over the complete records, those with every continuous QI present in both files
        self.complete = ~(np.isnan(self.X_all).any(axis=1) | np.isnan(self.Xp_all).any(axis=1))
        whole = bool(self.complete.all())
        self.X = self.X_all if whole else self.X_all[self.complete]
        self.Xp = self.Xp_all if whole else self.Xp_all[self.complete]
        self.scaler, self.p, self.published = scaler, float(p), published

    # what several measures share, computed once per comparison (an audit at 10^6 x 13 computed
    # the covariances six times and the published key frequencies twice)
    @cached_property
    def scaled(self) -> tuple[np.ndarray, np.ndarray]:
        """Both files on the run's scale (``scaler``), else on the original's z-scores."""
        if self.scaler is None and self.X is self.X_all:
            return self.common
        return common_scale(self.X_all, self.Xp_all, self.scaler)

    @cached_property
    def common(self) -> tuple[np.ndarray, np.ndarray]:
        """Both files on the original's z-scores (mean and population standard deviation)."""
        return common_scale(self.X, self.Xp)

    @cached_property
    def covariances(self) -> tuple[np.ndarray, np.ndarray]:
        """The covariances of both files on the original's z-scores."""
        Z, Zp = self.common
        return covariance(Z), covariance(Zp)

    @cached_property
    def first_pcs(self) -> tuple[tuple, tuple]:
        """The first principal component (loadings, share) of each file, standardised on its own."""
        return first_pc(self.covariances[0]), first_pc(standardised_covariance(self.Xp))

    @cached_property
    def sample_sds(self) -> tuple[np.ndarray, np.ndarray]:
        """Each file's sample standard deviations (IL1s, sdcMicro's eigen, SDID)."""
        return sample_sd(self.X), sample_sd(self.Xp)

    @cached_property
    def correlations(self) -> tuple[np.ndarray, np.ndarray]:
        """Both files' correlation matrices (Δr and sdcMicro's eigen)."""
        return correlations(self.X, self.Xp)

    @cached_property
    def correlation_discrepancy(self) -> tuple[float, float]:
        """Δr's mean and standard deviation."""
        return correlation_discrepancy(self.X, self.Xp, self.correlations)

    @cached_property
    def il1s(self) -> float:
        """IL1s's sum (its figure, and its value per value)."""
        return il1s(self.X, self.Xp, self.sample_sds[0])

    @cached_property
    def published_rows(self) -> np.ndarray:
        """Codes of identical published continuous records (``records.identical_rows``)."""
        return identical_rows(self.Xp)

    @cached_property
    def published_frequencies(self):
        """Frequencies of the published QI combinations, every kind (``published``)."""
        # a missing value matches any value (sdcMicro's freqCalc; the read-back check's rule)
        return key_frequencies(self.published, list(self.published.columns), 1, missing="wildcard")

    @property
    def sse(self) -> float:
        """Squared distance of the protected values to the originals, on the common scale."""
        Z, Zp = self.scaled
        return sq_distance(Z, Zp)  # a missing value (in both files) adds nothing

    @property
    def sst(self) -> float:
        return sst(self.scaled[0])

    def audit(self, *groups) -> Audit:
        result = Audit()
        for g in groups or ("utility", "risk"):
            result = result.with_figures(audit(self, g))
        return result

    def group(self, group: str) -> dict:
        return audit(self, group).group(group)


def compare(X, Xp, scaler=None, p: float = 10.0, published=None) -> Comparison:
    """The comparison of original and protected values the file measures are computed on."""
    return Comparison(X, Xp, scaler, p, published)


@measure(
    "information_loss",
    "information loss (IL, %)",
    "%",
    "100·SSE/SST on z-scores",
    ("run", "utility"),
    aligned=True,
)
def _information_loss(inputs):
    """A run's IL, or the IL of a protected file against its original (to the published values,
    which are not always the group means), from ``inputs.sse`` and ``inputs.sst``."""
    return il_percent(inputs.sse, inputs.sst)


@measure(
    "il1s",
    "IL1s (sdcMicro dUtility: the sum)",
    "",
    "Yancey, Winkler & Creecy 2002; sdcMicro dUtility IL1s",
    "utility",
    aligned=True,
)
def _il1s(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return c.il1s


@measure(
    "il1s_per_value",
    "IL1s per value (sum / n·p)",
    "",
    "Yancey, Winkler & Creecy 2002",
    "utility",
    aligned=True,
)
def _il1s_per_value(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return c.il1s / c.X.size if c.X.size else 0.0  # utility.il1s_per_value


@measure(
    "delta_r_mean",
    "correlation discrepancy Δr (mean)",
    "",
    "Domingo-Ferrer & Mateo-Sanz 2002",
    "utility",
)
def _delta_r_mean(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return c.correlation_discrepancy[0]


@measure(
    "delta_r_std",
    "correlation discrepancy Δr (sd)",
    "",
    "Domingo-Ferrer & Mateo-Sanz 2002",
    "utility",
)
def _delta_r_std(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return c.correlation_discrepancy[1]


@measure(
    "covariance_mae", "covariance discrepancy (MAE)", "", "Domingo-Ferrer & Torra 2001", "utility"
)
def _covariance_mae(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return covariance_figures(*c.covariances)[0]


@measure(
    "covariance_variation_percent",
    "covariance mean variation (%)",
    "%",
    "Domingo-Ferrer & Torra 2001",
    "utility",
    digits=2,
)
def _covariance_variation(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return covariance_figures(*c.covariances)[1]


@measure(
    "eigenvalue_discrepancy_percent",
    "relative eigenvalue discrepancy, common scale (%)",
    "%",
    "microagg; after Templ, Kowarik & Meindl 2015",
    "utility",
    digits=2,
)
def _eigen(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return eigenvalue_figure(*c.covariances)


@measure(
    "eigen_sdcmicro",
    "eigen (sdcMicro dUtility: sum over correlation eigenvalues)",
    "",
    "Templ, Kowarik & Meindl 2015; sdcMicro dUtility eigen",
    "utility",
    digits=6,
    aligned=True,
)
def _eigen_sdcmicro(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return eigen_sdcmicro(c.X, c.Xp, c.correlations, c.sample_sds)


@measure(
    "delta_w",
    "first-PC weight change ΔW (%)",
    "%",
    "Domingo-Ferrer & Mateo-Sanz 2002",
    "utility",
    digits=3,
)
def _delta_w(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    (w, _), (wp, _) = c.first_pcs
    return weight_change(w, wp)


@measure(
    "fpc_percent_original",
    "variance on the first PC, original (%FPC)",
    "%",
    "Domingo-Ferrer & Mateo-Sanz 2002",
    "utility",
    digits=2,
)
def _fpc_original(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return 100.0 * c.first_pcs[0][1]


@measure(
    "fpc_percent_protected",
    "variance on the first PC, protected (%FPC)",
    "%",
    "Domingo-Ferrer & Mateo-Sanz 2002",
    "utility",
    digits=2,
)
def _fpc_protected(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return 100.0 * c.first_pcs[1][1]


@measure(
    "record_linkage_dbrl",
    "distance-based record linkage (DBRL, %)",
    "share",
    "share of records whose nearest protected record is their own (ties count 1/t); "
    "Domingo-Ferrer & Torra 2001",
    "risk",
    digits=2,
    scale=100.0,
    aligned=True,
)
def _dbrl(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return dbrl.linkage(*c.common, c.published_rows, dbrl.dbrl_sample(len(c.X)))


@measure(
    "record_linkage_dbrl_records",
    "DBRL: original records linked",
    "records",
    f"all records up to {dbrl.DBRL_MAX_RECORDS:,}; above, a random sample of that many "
    "(fixed seed), each linked against every protected record: the share is an estimate (standard "
    "error at most 0.5 points)",
    "risk",
    aligned=True,
)
def _dbrl_records(c: Comparison):
    if not c.X.shape[1]:
        return None
    return min(len(c.X), dbrl.DBRL_MAX_RECORDS)


@measure(
    "interval_disclosure",
    "interval disclosure (%)",
    "share",
    "share of original values inside the rank interval of their protected value; "
    "Mateo-Sanz, Sebé & Domingo-Ferrer 2004",
    "risk",
    digits=2,
    scale=100.0,
    aligned=True,
)
def _interval(c: Comparison):
    if not c.X.shape[1]:  # no continuous QI column
        return None
    return interval_disclosure_risk(c.X, c.Xp, c.p)


@measure(
    "interval_disclosure_p",
    "interval disclosure: rank interval p (%)",
    "%",
    "the interval's half-width in ranks, p% of n",
    "risk",
    digits=0,
    aligned=True,
)
def _interval_p(c: Comparison):
    return c.p


@measure(
    "smallest_group",
    "smallest group of identical published QI values",
    "records",
    "k-anonymity of the published quasi-identifiers",
    ("utility", "risk"),
)
def _smallest(c: Comparison):
    if c.published is not None:  # every QI column, categorical ones included, as published
        return c.published_frequencies.smallest
    return smallest_group(c.Xp)


def risk_report(X, Xp, p: float = 10.0) -> dict:
    """Disclosure-risk figures: DBRL and interval disclosure (both as shares in 0..1), the interval
    percentage p and the smallest group (the "risk" measures of the registry)."""
    return compare(X, Xp, p=p).group("risk")


def utility_report(X, Xp, labels=None, scaler=None, categorical=()) -> dict:
    """The standard figures comparing original and protected QI values (utility / information loss:
    the "utility" measures of the registry).

    ``scaler``: a run's ``Standardizer`` (``Result.scaler``), so that the information loss is the
    run's own (raw units with standardize=False); default: z-scores of the original.
    categorical: names of categorical QI columns (X and Xp are then DataFrames); they are measured
    by ``categorical_report`` (under "categorical") and the other figures use the other columns
    (z-scores of the original: a run's scaler also covers ordinal ranks, so it is not used).
    """
    if categorical:
        import pandas as pd

        categorical = list(categorical)
        if not (isinstance(X, pd.DataFrame) and isinstance(Xp, pd.DataFrame)):
            raise InputError(
                "categorical columns are named: pass the original and protected data as DataFrames"
            )
        rest = [c for c in X.columns if c not in categorical]
        out = utility_report(X[rest], Xp[rest], labels) if rest else {}
        out["categorical"] = categorical_report(X[categorical], Xp[categorical])
        return out
    return compare(X, Xp, scaler=scaler).group("utility")
