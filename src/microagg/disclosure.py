"""Disclosure audit of a published file: the measures, as pure functions.

Each function takes the published (and, where the measure needs it, the original) values and
returns a frozen result; ``microagg.audit`` registers the audit's figures from them in the one
measure registry (``measures.MEASURES``: name, label, unit, reference) and the one
``measures.Audit``. Nothing here reads files, knows the pipeline or prints. docs/audit.md
explains every figure for a statistician.

* ``key_frequencies``: k-anonymity on the key variables (QIs + strata + other categorical keys),
  grouped as a reader of the output groups them (Samarati 2001; Sweeney 2002).
* ``individual_risk``: per-record re-identification risk with sampling weights, sdcMicro's
  ``measure_risk`` / ``indivRisk`` (Benedetti & Franconi 1998; Franconi & Polettini 2004).
* ``l_diversity``: distinct and entropy l-diversity of sensitive columns (Machanavajjhala et al.
  2007; sdcMicro ``ldiversity``).
* ``interval_disclosure``: the rank intervals of ``measures.interval_disclosure_risk``,
  sdcMicro's ``dRisk`` (SDID) and ``dRiskRMD`` (intervals scaled by robust Mahalanobis
  distances, Templ & Meindl 2008).
* ``row_order`` and ``shuffle_permutation`` / ``shuffle_rows``: does the row order carry
  information, and a permutation that removes it.

Key combinations: two records share a combination when every key column holds the same value,
compared as given (the caller passes the values as the output file reads back; a float that a
text round trip changes is the caller's business). Missing values (NaN, None, pandas NA) of a
column are one value of their own. sdcMicro's ``freqCalc`` treats a missing key value as a
wildcard matching every category instead, which raises the frequencies of the records it
matches; counting it as its own value never gives a larger frequency, so it is the
conservative reading (and the one a reader grouping the published file sees).

Memory O(n·d): combinations are integer codes (``pandas.factorize``), counts are ``bincount``s,
nearest neighbours come from a KD-tree; nothing is n×n.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

__all__ = [
    "REFERENCES",
    "KeyFrequencies",
    "key_frequencies",
    "key_codes",
    "wildcard_frequencies",
    "expected_inverse_frequency",
    "IndividualRisk",
    "individual_risk",
    "LDiversity",
    "l_diversity",
    "sdid_risk",
    "RMDRisk",
    "rmd_interval_risk",
    "IntervalDisclosure",
    "interval_disclosure",
    "OrderSignal",
    "RowOrder",
    "row_order",
    "shuffle_permutation",
    "shuffle_rows",
]

#: One line of reference per measure; docs/audit.md gives the full citations.
REFERENCES = {
    "k_anonymity": "k-anonymity: Samarati (2001), IEEE TKDE 13(6); Sweeney (2002), IJUFKS 10(5); "
                   "sdcMicro freqCalc / kAnon (fk)",
    "individual_risk": "individual risk: Benedetti & Franconi (1998); Franconi & Polettini (2004), PSD 2004, "
                       "LNCS 3050, 262-272; sdcMicro measure_risk / indivRisk",
    "l_diversity": "l-diversity: Machanavajjhala, Kifer, Gehrke & Venkitasubramaniam (2007), ACM TKDD 1(1); "
                   "sdcMicro ldiversity",
    "rank_interval": "rank interval disclosure: Domingo-Ferrer & Torra (2001); Mateo-Sanz, Sebe & "
                     "Domingo-Ferrer (2004), PSD 2004, LNCS 3050",
    "sdid": "SDID: Mateo-Sanz, Sebe & Domingo-Ferrer (2004), PSD 2004, LNCS 3050; sdcMicro dRisk",
    "rmd": "RMDID: Templ & Meindl (2008), PSD 2008, LNCS 5262, 113-126; sdcMicro dRiskRMD; "
           "MCD: Rousseeuw & Van Driessen (1999), Technometrics 41(3)",
    "row_order": "record order: sdcMicro extractManipData(randomizeRecords=...); rank correlation: "
                 "Spearman (1904)",
}


# --- key combinations ----------------------------------------------------------------------------


def _key_list(frame, keys) -> list:
    keys = [keys] if isinstance(keys, str) else list(keys)
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise ValueError(f"key column(s) not in the data: {', '.join(map(str, missing))}")
    if len(set(keys)) != len(keys):
        raise ValueError("a key column is named twice")
    return keys


def _combination_codes(frame, keys: list) -> np.ndarray:
    """int64 code per row, equal for rows with the same values in every key column (missing = a value).

    Each column is factorised (``use_na_sentinel=False``: NaN / None / NA are one code) and the
    codes are combined column by column as digits of a mixed-radix number, re-factorised only when
    the next digit could overflow int64 (at 10^6 x 13 published columns: 0.85 -> 0.5 s). Codes
    number the combinations in order of first appearance. No key column: every row is in the one
    combination 0.
    """
    import pandas as pd

    n = len(frame)
    combined = np.zeros(n, dtype=np.int64)
    size = 1  # combined < size
    for key in keys:
        codes, uniques = pd.factorize(frame[key], use_na_sentinel=False)
        radix = max(len(uniques), 1)
        if size > _CODE_LIMIT // radix:
            combined, distinct = pd.factorize(combined)
            combined, size = combined.astype(np.int64), max(len(distinct), 1)
        combined = combined * radix + codes.astype(np.int64)
        size *= radix
    return pd.factorize(combined)[0].astype(np.int64)


def identical_rows(A: np.ndarray) -> np.ndarray:
    """int64 code per row of a 2-D array, equal for rows with the same values in every column
    (``_combination_codes`` over its columns; no row sort: np.unique(axis=0) took 1.0 s on 10^6 x 13)."""
    import pandas as pd

    A = np.asarray(A)
    return _combination_codes(pd.DataFrame(A, copy=False), list(range(A.shape[1])))


def distinct_records(A: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One row of A per code of ``rows`` (``identical_rows(A)``), in code order."""
    distinct = np.empty((int(rows.max()) + 1 if len(rows) else 0, A.shape[1]))
    distinct[rows] = A  # identical records write the same values
    return distinct


#: the largest mixed-radix combination code ``_combination_codes`` lets grow before re-factorising
_CODE_LIMIT = 2 ** 62


@dataclass(frozen=True)
class KeyFrequencies:
    """Sample frequencies of the key combinations (sdcMicro's ``fk``) and k-anonymity against ``k``.

    combination[i]: index (0..combinations-1) of row i's key combination; fk[i]: the number of
    rows sharing it. A record violates k-anonymity when fk < k (sdcMicro prints these counts for
    k = 2, 3, 5 as "observations violating k-anonymity"; mu-ARGUS calls combinations below its
    threshold "unsafe").
    """

    keys: tuple
    k: int
    combination: np.ndarray
    fk: np.ndarray

    @property
    def n(self) -> int:
        return int(len(self.fk))

    @property
    def sizes(self) -> np.ndarray:
        """Number of records of each combination (indexed by combination code)."""
        return np.bincount(self.combination, minlength=0)

    @property
    def combinations(self) -> int:
        return int(self.sizes.size)

    @property
    def smallest(self) -> int | None:
        """The smallest frequency of a published key combination (None for an empty file)."""
        return int(self.fk.min()) if self.n else None

    @property
    def records_below_k(self) -> int:
        return int(np.count_nonzero(self.fk < self.k))

    @property
    def combinations_below_k(self) -> int:
        return int(np.unique(self.combination[self.fk < self.k]).size)

    @property
    def is_k_anonymous(self) -> bool:
        return self.records_below_k == 0

    def warnings(self) -> tuple[str, ...]:
        if self.is_k_anonymous:
            return ()
        return (f"the published file is not {self.k}-anonymous on its key variables "
                f"({', '.join(map(str, self.keys))}): {self.records_below_k} records in "
                f"{self.combinations_below_k} combinations occur fewer than {self.k} times",)


def key_frequencies(frame, keys, k: int, *, missing: str = "value") -> KeyFrequencies:
    """k-anonymity of a published file on its key variables, grouped as its reader groups them.

    frame: the published file as read back (a pandas DataFrame); keys: its key columns (the QIs,
    the strata columns and any other published categorical key); k: the level to check.
    Values are compared exactly as given, missing values forming one value per column (see the
    module docstring for why this differs from sdcMicro's wildcard rule and is conservative).
    Samarati (2001), Sweeney (2002): the file is k-anonymous on the keys when every combination
    of key values that occurs, occurs at least k times. O(n·len(keys)) time and memory.
    missing="wildcard": a missing key value matches any value (sdcMicro's ``freqCalc``; the
    reading of a file after local suppression, ``wildcard_frequencies``): fk counts every record
    that matches.
    """
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if missing not in ("value", "wildcard"):
        raise ValueError(f"missing must be 'value' or 'wildcard', got {missing!r}")
    keys = _key_list(frame, keys)
    combination = _combination_codes(frame, keys)
    if missing == "wildcard" and keys and bool(frame[keys].isna().to_numpy().any()):
        fk = wildcard_frequencies(key_codes(frame, keys))[0]
    else:  # no missing key value: the wildcard changes nothing
        fk = np.bincount(combination)[combination].astype(np.int64)
    return KeyFrequencies(tuple(keys), int(k), combination, fk)


def key_codes(frame, keys) -> np.ndarray:
    """(n, len(keys)) int64 matrix: each key column's values as codes 0.. in order of first
    appearance, -1 where the value is missing (NaN, None, pandas NA)."""
    import pandas as pd

    keys = _key_list(frame, keys)
    out = np.empty((len(frame), len(keys)), dtype=np.int64)
    for j, key in enumerate(keys):
        out[:, j] = pd.factorize(frame[key], use_na_sentinel=True)[0]
    return out


def wildcard_frequencies(codes: np.ndarray, weights=None, fixed=None) -> tuple[np.ndarray, np.ndarray]:
    """(fk, Fk) per record when a missing key value matches ANY value (sdcMicro's ``freqCalc``,
    alpha = 1): two records share a combination when, on every key, their codes are equal or one
    of them is missing (-1). fk[i] counts the records matching record i (itself included), Fk[i]
    sums their weights (fk without weights). A record missing every key matches all n records.

    codes: ``key_codes`` of the keys; fixed: optional int codes per record that must be EQUAL
    for two records to match (published QI groups, strata: they are never suppressed).
    Exact counting by missingness pattern: for each pair of patterns (P, Q) present, the records
    of Q are counted by their codes on the keys both have, and looked up for the records of P.
    O(p² · n) time for p distinct patterns (p <= 2^keys, few in practice), O(n) memory.
    """
    codes = np.asarray(codes, dtype=np.int64)
    n, m = codes.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    present = codes >= 0
    pattern = (present * (1 << np.arange(m, dtype=np.int64))).sum(axis=1) if m else np.zeros(n, dtype=np.int64)
    base = np.zeros(n, dtype=np.int64) if fixed is None else np.unique(np.asarray(fixed), return_inverse=True)[1].astype(np.int64)
    fk = np.zeros(n)
    Fk = np.zeros(n)
    patterns = np.unique(pattern)
    rows_of = {int(P): np.flatnonzero(pattern == P) for P in patterns}
    common_codes: dict = {}
    for P in patterns:
        for Q in patterns:
            C = int(P) & int(Q)
            if C not in common_codes:
                cols = [j for j in range(m) if C >> j & 1]
                common_codes[C] = identical_rows(np.column_stack([base] + [codes[:, j] for j in cols]))
            code = common_codes[C]
            rp, rq = rows_of[int(P)], rows_of[int(Q)]
            size = int(code.max()) + 1
            fk[rp] += np.bincount(code[rq], minlength=size)[code[rp]]
            Fk[rp] += np.bincount(code[rq], weights=w[rq], minlength=size)[code[rp]]
    return fk.astype(np.int64), Fk


# --- individual re-identification risk -----------------------------------------------------------

#: terms of the series in q (t_{m+1}/t_m < q <= 1/2 there, or f >= 40: 2^-64 or 1/C(104, 64) is left)
_SERIES_TERMS = 64
#: below this f with q > 1/2 the finite expansion in 1/z is used (at most f - 1 terms, all needed)
_EXPANSION_MAX_F = 40


def expected_inverse_frequency(fk, Fk) -> np.ndarray:
    """E(1/F | f): the individual risk of Benedetti & Franconi (1998), exact, for each (f, F).

    Model (Franconi & Polettini 2004, sect. 2): given the sample frequency f >= 1 of a key
    combination, its population frequency is F = f + N with N negative binomial,
    P(F = h | f) = C(h-1, f-1) p^f q^(h-f) (h >= f), whose success probability is estimated by
    p = f / F_hat, F_hat being the sum of the sampling weights of the combination; q = 1 - p.
    The risk is r = E(1/F | f) = sum_h C(h-1, f-1) p^f q^(h-f) / h. From the generating function
    of F, r = p^f ∫_0^1 t^(f-1) (1 - q t)^(-f) dt, and with z = q / p = (F_hat - f) / f:

        r = ∫_0^1 u^(f-1) / (1 + z u) du = (p / f) · 2F1(1, 1; f + 1; q)
          = (p / f) · sum_m m! q^m / ((f+1)(f+2)...(f+m)).

    f = 1: r = (p / q)·log(1 / p); f = 2: r = p / q - (p / q)^2·log(1 / p) (the closed forms of
    sdcMicro's ``indivRisk``); the series is mu-Argus's (which stops after 7 terms). F_hat = f
    (p = 1) gives r = 1 / f. Evaluated stably: the positive series in q where it converges fast
    (q <= 1/2, or f >= 40), otherwise (q > 1/2, i.e. z > 1, f < 40) the finite expansion
    r = sum_{j=0}^{f-2} (-1)^j / (z^(j+1)(f-1-j)) + (-1)^(f-1) log(1+z) / z^f, whose terms shrink
    by 1/z. (scipy's hyp2f1 returns inf or NaN for f >= 100 and q near 0.9, hence this.)
    Vectorised over the inputs: at most 64 + 38 array passes.
    """
    f = np.asarray(fk, dtype=np.float64)
    F = np.asarray(Fk, dtype=np.float64)
    f, F = np.broadcast_arrays(f, F)
    if np.any(~np.isfinite(f) | (f < 1)) or np.any(f != np.floor(f)):
        raise ValueError("sample frequencies f must be integers >= 1")
    if np.any(~np.isfinite(F)) or np.any(F < f * (1.0 - 1e-12)):
        raise ValueError("estimated population frequencies F must be finite and at least the sample frequency f "
                         "(sampling weights are inverse inclusion probabilities, >= 1)")
    F = np.maximum(F, f)
    q = (F - f) / F
    p = f / F
    out = np.empty(f.shape, dtype=np.float64)
    series = (q <= 0.5) | (f >= _EXPANSION_MAX_F)
    if series.any():
        fs, qs = f[series], q[series]
        term = np.ones_like(fs)
        total = np.ones_like(fs)
        for m in range(_SERIES_TERMS):
            term *= (m + 1) * qs / (fs + m + 1)
            total += term
        out[series] = p[series] / fs * total
    rest = ~series
    if rest.any():
        fr = f[rest]
        z = (F[rest] - fr) / fr  # > 1 here
        with np.errstate(over="ignore"):
            acc = np.where(fr % 2 == 1, 1.0, -1.0) * np.log1p(z) / z**fr
            for j in range(_EXPANSION_MAX_F - 1):
                active = j <= fr - 2
                if not active.any():
                    break
                sign = 1.0 if j % 2 == 0 else -1.0
                acc = acc + np.where(active, sign / (z ** (j + 1) * np.maximum(fr - 1 - j, 1.0)), 0.0)
        out[rest] = acc
    return out


def _mad(x: np.ndarray) -> float:
    """Median absolute deviation scaled by 1.4826, as R's ``mad``."""
    return float(1.4826 * np.median(np.abs(x - np.median(x)))) if x.size else 0.0


@dataclass(frozen=True)
class IndividualRisk:
    """Per-record re-identification risk on categorical keys and the global figures sdcMicro reports.

    risk[i]: the record's risk; fk[i]: its combination's sample frequency; Fk[i]: the estimated
    population frequency (sum of the combination's sampling weights; = fk without weights).
    expected_reidentifications = sum of the risks (sdcMicro ``global_risk_ER``), global_risk =
    its mean (``global_risk``), in percent ``global_risk_pct``. ``records_above_threshold``:
    risk > threshold; ``higher_than_main_part``: risk > median + 2·MAD and risk > 0.1, the count
    sdcMicro prints as "observations with higher risk than the main part of the data".
    """

    keys: tuple
    weighted: bool
    method: str
    threshold: float
    risk: np.ndarray
    fk: np.ndarray
    Fk: np.ndarray

    @property
    def n(self) -> int:
        return int(len(self.risk))

    @property
    def expected_reidentifications(self) -> float:
        return float(self.risk.sum())

    @property
    def global_risk(self) -> float:
        return self.expected_reidentifications / self.n if self.n else 0.0

    @property
    def global_risk_percent(self) -> float:
        return 100.0 * self.global_risk

    @property
    def max_risk(self) -> float | None:
        return float(self.risk.max()) if self.n else None

    @property
    def records_above_threshold(self) -> int:
        return int(np.count_nonzero(self.risk > self.threshold))

    @property
    def higher_than_main_part(self) -> int:
        r = self.risk
        if not r.size:
            return 0
        return int(np.count_nonzero((r > np.median(r) + 2.0 * _mad(r)) & (r > 0.1)))

    def warnings(self) -> tuple[str, ...]:
        if self.records_above_threshold == 0:
            return ()
        return (f"{self.records_above_threshold} records have an individual re-identification risk above "
                f"{self.threshold:g} on the key variables ({', '.join(map(str, self.keys))})",)


def individual_risk(frame, keys, weights=None, *, method: str = "approx", threshold: float = 0.1,
                    missing: str = "value") -> IndividualRisk:
    """Individual re-identification risk of each record on categorical keys, as sdcMicro's ``measure_risk``.

    frame: the published file (DataFrame); keys: its categorical key columns; weights: sampling
    weights (a column name of ``frame`` or an array of n positive numbers), or None for a
    census / when weights are unknown. Frequencies: fk = records sharing the combination
    (``key_frequencies``), Fk = sum of their weights. Risk (Benedetti & Franconi 1998;
    Franconi & Polettini 2004; sdcMicro ``indivRisk``):

    * no weights: r = 1 / fk (sdcMicro ``survey=FALSE``; the sum of the risks is then the number
      of combinations);
    * weights: r = E(1/F | f) under the negative binomial model with p = fk / Fk
      (``expected_inverse_frequency``): closed forms for fk = 1, 2; for fk >= 3
      method="approx" (default, sdcMicro's ``measure_risk``) takes r = p / (fk - q), q = 1 - p,
      which is never below the exact value (a conservative approximation), and method="exact"
      the exact expectation (sdcMicro's ``indivRisk(method="exact")``). Where Fk = fk (every
      weight 1) the risk is 1 / fk, as in sdcMicro.

    missing="value" (default): a missing key value is a value of its own, as a reader grouping
    the file sees it; missing="wildcard": it matches any value, as sdcMicro's ``freqCalc``
    (alpha = 1; ``wildcard_frequencies``), for sdcMicro's figures on files with missing keys.
    Weights giving Fk < fk are an error (the model needs F >= f; sdcMicro returns numbers without
    meaning there). threshold: records with risk above it are counted.
    """
    import pandas as pd

    if method not in ("approx", "exact"):
        raise ValueError(f"method must be 'approx' or 'exact', got {method!r}")
    if not (isinstance(threshold, numbers.Real) and 0.0 <= float(threshold) <= 1.0):
        raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")
    freq = key_frequencies(frame, keys, 1)
    n = freq.n
    sizes = freq.sizes.astype(np.float64)
    unit = freq.combination  # the unit whose frequencies a record takes: its combination
    if missing == "wildcard" and not bool(frame[list(freq.keys)].isna().to_numpy().any()):
        missing = "value"  # no missing key value: the wildcard changes nothing
    if missing == "wildcard":  # each record its own unit: its matches depend on its missing keys
        unit = np.arange(n)
    elif missing != "value":
        raise ValueError(f"missing must be 'value' or 'wildcard', got {missing!r}")
    if weights is None:
        if missing == "wildcard":
            sizes = wildcard_frequencies(key_codes(frame, freq.keys))[0].astype(np.float64)
        per_combination = 1.0 / sizes if n else np.zeros(0)
        totals = sizes
    else:
        w = frame[weights] if isinstance(weights, str) else weights
        w = pd.to_numeric(pd.Series(np.asarray(w)), errors="coerce").to_numpy(dtype=np.float64)
        if w.shape != (n,):
            raise ValueError(f"weights must give one number per record ({n}), got shape {w.shape}")
        if not np.all(np.isfinite(w) & (w > 0)):
            raise ValueError("sampling weights must be positive finite numbers (missing or non-numeric weights found)")
        if missing == "wildcard":
            fk, totals = wildcard_frequencies(key_codes(frame, freq.keys), w)
            sizes = fk.astype(np.float64)
        else:
            totals = np.bincount(freq.combination, weights=w, minlength=sizes.size)
        if np.any(totals < sizes * (1.0 - 1e-12)):
            bad = int(np.count_nonzero(totals < sizes * (1.0 - 1e-12)))
            raise ValueError(f"sampling weights give {bad} key combination(s) an estimated population frequency "
                             "below their sample frequency (weights < 1): the individual risk needs F >= f")
        totals = np.maximum(totals, sizes)
        per_combination = expected_inverse_frequency(sizes, totals)
        if method == "approx":
            big = sizes > 2
            p = sizes[big] / totals[big]
            per_combination[big] = p / (sizes[big] - (1.0 - p))
        census = totals == sizes  # sdcMicro: fk == Fk -> 1 / fk, whatever the method
        per_combination[census] = 1.0 / sizes[census]
    c = unit
    return IndividualRisk(freq.keys, weights is not None, method, float(threshold), per_combination[c],
                          sizes[c].astype(np.int64), totals[c].astype(np.float64))


# --- l-diversity ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LDiversity:
    """l-diversity of one sensitive column within the key combinations.

    distinct[i]: number of distinct sensitive values in row i's combination (sdcMicro's
    ``<col>_Distinct_Ldiversity``); entropy[i]: exp of the Shannon entropy (natural log) of the
    sensitive values' shares in the combination (``<col>_Entropy_Ldiversity``): a combination is
    entropy l-diverse when entropy >= l. 1 <= entropy <= distinct <= fk.
    """

    column: str
    keys: tuple
    l: float
    combination: np.ndarray
    distinct: np.ndarray
    entropy: np.ndarray

    @property
    def n(self) -> int:
        return int(len(self.distinct))

    def _per_combination(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros(int(self.combination.max()) + 1 if self.n else 0, dtype=values.dtype)
        out[self.combination] = values
        return out

    @property
    def smallest_distinct(self) -> int | None:
        return int(self.distinct.min()) if self.n else None

    @property
    def smallest_entropy(self) -> float | None:
        return float(self.entropy.min()) if self.n else None

    @property
    def records_below_l(self) -> int:
        """Records whose combination has fewer than l distinct sensitive values."""
        return int(np.count_nonzero(self.distinct < self.l))

    @property
    def combinations_below_l(self) -> int:
        return int(np.count_nonzero(self._per_combination(self.distinct) < self.l))

    @property
    def records_below_l_entropy(self) -> int:
        """Records whose combination is not entropy l-diverse (exp(H) < l, relative tolerance 1e-12)."""
        return int(np.count_nonzero(self.entropy < self.l * (1.0 - 1e-12)))

    def warnings(self) -> tuple[str, ...]:
        if self.records_below_l == 0:
            return ()
        return (f"{self.records_below_l} records are in key combinations with fewer than {self.l:g} distinct "
                f"values of the sensitive column {self.column}: their value of {self.column} can be inferred",)


def l_diversity(frame, keys, sensitive, l: float = 2) -> dict:
    """Distinct and entropy l-diversity of each sensitive column within the key combinations.

    Machanavajjhala, Kifer, Gehrke & Venkitasubramaniam (2007), "l-Diversity: privacy beyond
    k-anonymity", ACM TKDD 1(1), Definitions 3.3 (distinct: at least l "well-represented" values,
    here counted as distinct values) and 4.1 (entropy: -sum_s p_s log p_s >= log l, p_s the share
    of value s in the combination). sdcMicro's ``ldiversity`` reports both per record.
    Missing sensitive values count as one value (sdcMicro counts them too, except in a
    combination where every value is missing, which it reports as 0 where we report 1).
    Returns {column: LDiversity}. A sensitive column may not be a key (sdcMicro refuses it too).
    O(n) memory: pair codes (combination, value) counted with ``np.unique``.
    """
    import pandas as pd

    keys = _key_list(frame, keys)
    sensitive = _key_list(frame, sensitive)
    both = sorted(set(keys) & set(sensitive), key=str)
    if both:
        raise ValueError(f"a sensitive column cannot be a key variable: {', '.join(map(str, both))}")
    if not (isinstance(l, numbers.Real) and float(l) >= 1):
        raise ValueError(f"l must be a number >= 1, got {l!r}")
    combination = _combination_codes(frame, keys)
    sizes = np.bincount(combination).astype(np.float64)
    out = {}
    for col in sensitive:
        values = pd.factorize(frame[col], use_na_sentinel=False)[0].astype(np.int64)
        width = int(values.max()) + 1 if values.size else 1
        pairs, counts = np.unique(combination * width + values, return_counts=True)
        pair_combination = pairs // width
        distinct = np.bincount(pair_combination, minlength=sizes.size).astype(np.int64)
        counts = counts.astype(np.float64)
        # H = log n_c - (1/n_c) sum_s c_s log c_s  (natural logarithm)
        weighted = np.bincount(pair_combination, weights=counts * np.log(counts), minlength=sizes.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            H = np.log(sizes) - weighted / sizes
        ent = np.minimum(np.exp(np.maximum(np.nan_to_num(H), 0.0)), distinct)  # rounding: 1 <= exp(H) <= distinct
        out[col] = LDiversity(str(col), tuple(keys), float(l), combination, distinct[combination], ent[combination])
    return out


# --- interval disclosure -------------------------------------------------------------------------


def _paired_values(X, Xp) -> tuple[np.ndarray, np.ndarray]:
    from .measures import _values

    X, Xp = _values(X), _values(Xp)
    if X.shape != Xp.shape:
        raise ValueError(f"original and protected values differ in shape: {X.shape} and {Xp.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Xp))):
        raise ValueError("interval disclosure needs finite original and protected values")
    return X, Xp


def sdid_risk(X, Xp, k: float = 0.05) -> float:
    """Standard-deviation interval disclosure (SDID) as sdcMicro's ``dRisk``: share (0..1) of records at risk.

    Mateo-Sanz, Sebé & Domingo-Ferrer (2004), "Outlier protection in continuous microdata
    masking", PSD 2004, LNCS 3050 (method SDID), in sdcMicro's form (``dRisk``, default k =
    0.05): around each protected value x'_ij the interval [x'_ij - k·s'_j, x'_ij + k·s'_j] is
    built, s'_j the sample standard deviation (n - 1) of protected variable j; a record is at
    risk when ALL its original values lie inside their intervals (bounds included). This is
    sdcMicro's rule since its 2020 fix (``rowSums(x < mi | x > ma) == 0``); before, a record was
    counted at risk while at most one value fell outside. Checked against sdcMicro 5.8.1's own
    code by benchmarks/sdcmicro_parity.py (to 1e-9).
    """
    X, Xp = _paired_values(X, Xp)
    n = len(X)
    if n == 0:
        return 0.0
    if not (isinstance(k, numbers.Real) and k >= 0):
        raise ValueError(f"k must be a number >= 0, got {k!r}")
    s = Xp.std(axis=0, ddof=1) if n > 1 else np.full(X.shape[1], np.nan)
    outside = (X < Xp - k * s) | (X > Xp + k * s)  # NaN bounds (n = 1): never outside, as R's na.rm
    return float(np.count_nonzero(~outside.any(axis=1))) / n


#: sdcMicro's dRiskRMD scales the robust Mahalanobis distance by this constant before k applies
_RMD_SCALE = 0.05


@dataclass(frozen=True)
class RMDRisk:
    """Interval disclosure with intervals scaled by robust Mahalanobis distances (sdcMicro's ``dRiskRMD``).

    rmd[i]: robust Mahalanobis distance of original record i; at_risk1[i]: some protected value
    of record i lies in its interval (RMDID1); at_risk2[i]: at risk by RMDID1 and no other
    protected record within Euclidean distance k2 (RMDID2). risk1, risk2: their shares (0..1).
    wrisk1, wrisk2: sdcMicro's weighted figures, |W|·sum_{i in W}(0.05·rmd_i)/n for the set W at
    risk (as sdcMicro computes them; not shares, kept for comparison).
    """

    k: float
    k2: float
    rmd: np.ndarray
    at_risk1: np.ndarray
    at_risk2: np.ndarray
    columns_used: int

    @property
    def n(self) -> int:
        return int(len(self.rmd))

    @property
    def risk1(self) -> float:
        return float(np.count_nonzero(self.at_risk1)) / self.n if self.n else 0.0

    @property
    def risk2(self) -> float:
        return float(np.count_nonzero(self.at_risk2)) / self.n if self.n else 0.0

    def _weighted(self, mask: np.ndarray) -> float:
        if not self.n:
            return 0.0
        return float(np.count_nonzero(mask) * np.sum(_RMD_SCALE * self.rmd[mask]) / self.n)

    @property
    def wrisk1(self) -> float:
        return self._weighted(self.at_risk1)

    @property
    def wrisk2(self) -> float:
        return self._weighted(self.at_risk2)


#: ``_near_in_order``: the records each record is compared with on each side, in the order of each
#: of the first NEAR_AXES principal axes
NEAR_WINDOW = 16
NEAR_AXES = 2


def _near_in_order(P: np.ndarray, which: np.ndarray, radius: float, chunk: int = 1 << 16) -> np.ndarray:
    """For the rows of P selected by ``which``: True where one of the NEAR_WINDOW rows before or
    after it in the order of one of P's first NEAR_AXES principal axes lies within ``radius``
    (Euclidean, as the KD-tree measures it): a certificate that another record is that near;
    False where none is (one may still be: the KD-tree decides). After individual ranking, 94 % of
    10^6 x 13 census-like records are certified in 1.5 s, which spares the KD-tree 940,000 of its
    ~40 µs queries (RMDID2: 40 s -> 4.5 s)."""
    from .standardize import principal_axes

    n = len(P)
    _, axes = principal_axes(P[:: max(1, n // 20_000)], NEAR_AXES)
    near = np.zeros(n, dtype=bool)
    for axis in axes.T:
        if near[which].all():
            break
        order = np.argsort(P @ axis, kind="stable")
        ordered = P[order]
        for offset in range(1, min(NEAR_WINDOW, n - 1) + 1):
            for a in range(0, n - offset, chunk):  # in chunks: their temporaries are reused, not faulted in
                b = min(a + chunk, n - offset)
                diff = ordered[a + offset:b + offset] - ordered[a:b]
                close = np.sqrt(np.einsum("ij,ij->i", diff, diff)) <= radius
                near[order[a:b][close]] = True
                near[order[a + offset:b + offset][close]] = True
    return near[which]


def rmd_interval_risk(X, Xp, k: float = 0.01, k2: float = 0.05, *, seed: int | None = 0,
                      scaling: str = "original", max_fit: int | None = None, distances=None,
                      published_rows=None) -> RMDRisk:
    """Robust-Mahalanobis-scaled interval disclosure (RMDID1 / RMDID2), after sdcMicro's ``dRiskRMD``.

    Templ & Meindl (2008), "Robust statistics meets SDC: new disclosure risk measures for
    continuous microdata masking", PSD 2008, LNCS 5262, 113-126. Outlying records are easier
    to re-identify, so each gets a wider interval:

    1. Both files are standardised (see ``scaling``); constant original columns are left out.
    2. RMD_i = sqrt((z_i - t)' C^-1 (z_i - t)), t and C the Minimum Covariance Determinant
       location and scatter of the standardised original (scikit-learn's ``MinCovDet`` through
       ``transforms.whiten``, ``random_state=seed``; Rousseeuw & Van Driessen 1999; robust
       directions of zero variance are dropped, i.e. a pseudo-inverse).
    3. Record i is at risk (RMDID1) when for SOME variable j |z'_ij - z_ij| < k·0.05·RMD_i
       (sdcMicro: ``apply(xm < ma & xm > mi, 1, any)``: one variable inside marks the whole
       record unsafe).
    4. RMDID2: a record at risk by 3 stays at risk only if no other protected record lies
       within Euclidean distance k2 of its protected record (in the standardised protected
       space): an intruder cannot single it out among close neighbours. After
       microaggregation every record has k - 1 identical neighbours, so RMDID2 is 0.

    Defaults k = 0.01, k2 = 0.05 are sdcMicro's. Where we differ from sdcMicro's code, and why:
    sdcMicro centres the distance at the column means (0 after ``scale()``) rather than at the
    MCD location (the robust distance of the paper uses the robust location); it standardises
    the protected file by its own mean and standard deviation, which moves each protected value
    relative to its original by an amount set by the variance its column lost (microaggregation
    reduces it), not by their closeness, against intervals ~1e-3 wide. scaling="original"
    (default) standardises both files with the original's mean and sample standard deviation
    (n - 1, as R's ``scale``), the measures' convention, so a protected value equal to its
    original is inside its interval (when RMD_i > 0); scaling="own" reproduces sdcMicro's.
    robustbase's ``covMcd`` (sdcMicro) also applies small-sample correction factors that
    scikit-learn does not, so RMDs differ by a factor near 1. sdcMicro computes an n×n distance
    matrix for RMDID2; a KD-tree gives the same nearest distances in O(n log n).
    max_fit: fit the MCD on at most this many records drawn with ``seed`` (None: on all); the
    distances are computed for every record. MCD's cost grows fast with n (2 s at 10^4 records,
    10 s at 10^5), and a robust estimate from a few thousand records is as good for scaling
    intervals. distances: the original records' robust distances when known (``RMDRisk.rmd`` of an
    earlier call on the same X, seed and max_fit: the MCD is then not fitted again).
    published_rows: codes of identical published records (``identical_rows(Xp)``) when known.
    """
    from scipy.spatial import cKDTree

    from .embedding import whiten

    if scaling not in ("original", "own"):
        raise ValueError(f"scaling must be 'original' or 'own', got {scaling!r}")
    for name, v in (("k", k), ("k2", k2)):
        if not (isinstance(v, numbers.Real) and v >= 0):
            raise ValueError(f"{name} must be a number >= 0, got {v!r}")
    X, Xp = _paired_values(X, Xp)
    n = len(X)
    if n < 2:
        return RMDRisk(float(k), float(k2), np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), 0)
    sd = X.std(axis=0, ddof=1)
    keep = sd > 0
    X, Xp, sd = X[:, keep], Xp[:, keep], sd[keep]
    if not keep.any():
        return RMDRisk(float(k), float(k2), np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), 0)
    mean = X.mean(axis=0)
    Z = (X - mean) / sd
    if scaling == "original":
        Zp = (Xp - mean) / sd
    else:
        sdp = Xp.std(axis=0, ddof=1)
        Zp = (Xp - Xp.mean(axis=0)) / np.where(sdp > 0, sdp, 1.0)
    if max_fit is not None and not (isinstance(max_fit, numbers.Integral) and max_fit >= 2):
        raise ValueError(f"max_fit must be an integer >= 2 or None, got {max_fit!r}")
    if distances is not None:
        rmd = np.asarray(distances, dtype=np.float64)
        if rmd.shape != (n,):
            raise ValueError(f"distances must give one robust distance per record ({n}), got shape {rmd.shape}")
    else:
        try:
            fit_rows = None if max_fit is None or n <= max_fit else np.sort(
                np.random.default_rng(0 if seed is None else seed).choice(n, int(max_fit), replace=False))
            W, _ = whiten(Z, "robust", seed, fit_rows=fit_rows)
        except ValueError:  # scikit-learn's "covariance of the support data is equal to 0", or whiten's InputError
            raise ValueError("the robust (MCD) covariance of the original values is zero: more than half of the "
                             "records share the same values, so robust Mahalanobis distances are not defined") from None
        rmd = np.sqrt(np.einsum("ij,ij->i", W, W))
    half = k * _RMD_SCALE * rmd
    at_risk1 = (np.abs(Zp - Z) < half[:, None]).any(axis=1)
    at_risk2 = np.zeros(n, dtype=bool)
    if at_risk1.any():
        rows = identical_rows(Zp) if published_rows is None else np.asarray(published_rows)
        if rows.shape != (n,):
            raise ValueError(f"published_rows must give one code per record ({n}), got shape {rows.shape}")
        # a record published more than once has another at distance 0, within k2. For the others:
        # the distance to the nearest OTHER distinct published record, the second neighbour in a
        # tree of the distinct ones (the first is itself, at 0); only whether it lies within k2
        # matters, so the search stops a little beyond k2 (inf there). After microaggregation no
        # tree is needed (10^6 x 13: 2.7 s -> 0.2 s)
        alone = at_risk1 & (np.bincount(rows)[rows] == 1)
        if alone.any():
            alone[alone] = ~_near_in_order(Zp, alone, k2)
        if alone.any():
            dist, _ = cKDTree(distinct_records(Zp, rows)).query(Zp[alone], k=2, distance_upper_bound=k2 * (1.0 + 1e-9) + 1e-100)
            at_risk2[alone] = dist[:, 1] > k2
    return RMDRisk(float(k), float(k2), rmd, at_risk1, at_risk2, int(keep.sum()))


@dataclass(frozen=True)
class IntervalDisclosure:
    """The three interval-disclosure figures of one (original, protected) pair of continuous QIs."""

    rank_share: float
    rank_p: float
    sdid_share: float
    sdid_k: float
    rmd: RMDRisk

    def warnings(self) -> tuple[str, ...]:
        return ()


def interval_disclosure(X, Xp, *, p: float = 10.0, sdid_k: float = 0.05, rmd_k: float = 0.01,
                        rmd_k2: float = 0.05, seed: int | None = 0) -> IntervalDisclosure:
    """The three interval-disclosure measures of continuous QIs (original X, protected Xp, same rows).

    Rank intervals (``measures.interval_disclosure_risk``, p %), SDID (``sdid_risk``, sdid_k)
    and RMDID1/2 (``rmd_interval_risk``, rmd_k, rmd_k2, MCD seed).
    """
    from .measures import interval_disclosure_risk

    X, Xp = _paired_values(X, Xp)
    return IntervalDisclosure(interval_disclosure_risk(X, Xp, p), float(p), sdid_risk(X, Xp, sdid_k), float(sdid_k),
                              rmd_interval_risk(X, Xp, rmd_k, rmd_k2, seed=seed))


# --- row order -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OrderSignal:
    """How strongly one column follows the row order.

    spearman: rank correlation of the column with the row number (rows with a missing value
    left out); ascending_share: share of strictly ascending pairs among the adjacent pairs of
    rows whose values differ (1: sorted ascending, 0: descending, ~1/2: no order); pairs: the
    number of such pairs; row_number_offset: c when the column equals the 0-based row number
    plus c on every row (an id that is the row number), else None; informative: judged by the
    thresholds of ``row_order``.
    """

    column: str
    spearman: float
    ascending_share: float
    pairs: int
    row_number_offset: float | None
    informative: bool


@dataclass(frozen=True)
class RowOrder:
    """Row-order signals of the columns examined; ``informative``: some column follows the order."""

    signals: tuple[OrderSignal, ...]

    @property
    def informative_columns(self) -> tuple[str, ...]:
        return tuple(s.column for s in self.signals if s.informative)

    @property
    def informative(self) -> bool:
        return bool(self.informative_columns)

    def warnings(self) -> tuple[str, ...]:
        if not self.informative:
            return ()
        parts = []
        for s in self.signals:
            if s.informative:
                if s.row_number_offset is not None:
                    parts.append(f"{s.column} (= row number + {s.row_number_offset:g})")
                else:
                    parts.append(f"{s.column} (rank correlation {s.spearman:+.2f}, "
                                 f"{100 * max(s.ascending_share, 1 - s.ascending_share):.0f} % of neighbours in order)")
        return ("the input's row order is informative: it follows " + ", ".join(parts)
                + "; an output in the same order lets position link a published record to its respondent: "
                  "use --shuffle",)


def _order_values(series) -> np.ndarray | None:
    """Float ranks-ready values of a column in row order (NaN = missing), or None if it cannot be ordered."""
    import pandas as pd

    s = series
    if isinstance(s.dtype, pd.CategoricalDtype):
        if s.cat.ordered:
            codes = s.cat.codes.to_numpy().astype(np.float64)
            return np.where(codes < 0, np.nan, codes)
        s = s.astype(object).where(s.notna(), None)
    if pd.api.types.is_bool_dtype(s.dtype):
        return s.astype("float64").to_numpy()
    if pd.api.types.is_datetime64_any_dtype(s.dtype) or pd.api.types.is_timedelta64_dtype(s.dtype):
        v = s.to_numpy().astype("int64").astype(np.float64)
        return np.where(s.isna().to_numpy(), np.nan, v)
    if pd.api.types.is_numeric_dtype(s.dtype):
        return pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
    # text: numbers if every present value is one, else the text itself in lexicographic order
    present = s.notna()
    as_number = pd.to_numeric(s.where(present), errors="coerce")
    if as_number[present].notna().all():
        return as_number.to_numpy(dtype=np.float64)
    text = s.where(~present, s.astype(str))
    codes, uniques = pd.factorize(text, sort=True)  # sorted codes: order-preserving; -1 = missing
    return np.where(codes < 0, np.nan, codes.astype(np.float64))


def _average_ranks(v: np.ndarray) -> np.ndarray:
    """Ranks 1..m, ties sharing their average rank (Spearman's convention)."""
    _, inverse, counts = np.unique(v, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)
    return (last - (counts - 1) / 2.0)[inverse]


def _order_signal(name, values: np.ndarray, min_spearman: float, min_share: float, min_z: float,
                  sample: int | None = None, seed: int = 0) -> OrderSignal | None:
    n = len(values)
    present = ~np.isnan(values)
    v = values[present]
    m = len(v)
    if m < 3 or np.all(v == v[0]):
        return None
    offset = None
    if m == n and np.all(v == np.floor(v)):  # exact on every row: O(n), no sort
        c = v - np.arange(n)
        if np.all(c == c[0]):
            offset = float(c[0])
    if sample is not None and m > sample:
        # a fixed-seed sample of rows (in file order) for rho and one of adjacent pairs for the
        # share: each an estimate with standard error about 1/sqrt(sample) (docs/audit.md), and
        # the z statistics below are the sample's, so a random order is still not flagged
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(m, sample, replace=False))
        rank = _average_ranks(v[rows])
        rho = float(np.corrcoef(rank, np.arange(sample))[0, 1])
        at = rng.choice(m - 1, sample, replace=False)
        step = v[at + 1] - v[at]  # the sign of a value step is that of its rank step
        m = sample
    else:
        rank = _average_ranks(v)
        rho = float(np.corrcoef(rank, np.arange(m))[0, 1])  # ranks of the values against ranks of the rows
        step = np.diff(rank)
    up, down = int(np.count_nonzero(step > 0)), int(np.count_nonzero(step < 0))
    pairs = up + down
    share = up / pairs if pairs else 0.5
    # under a random order: rho·sqrt(m-1) ~ N(0, 1); ascents among P pairs: mean P/2, variance ~(P+2)/12
    z_rho = abs(rho) * math.sqrt(m - 1)
    z_share = abs(up - pairs / 2) / math.sqrt((pairs + 2) / 12) if pairs else 0.0
    informative = (offset is not None
                   or (abs(rho) >= min_spearman and z_rho >= min_z)
                   or (max(share, 1 - share) >= min_share and z_share >= min_z))
    return OrderSignal(str(name), rho, share, pairs, offset, bool(informative))


def row_order(frame, columns=None, *, min_spearman: float = 0.5, min_monotone_share: float = 0.8,
              min_z: float = 5.0, sample: int | None = None, seed: int = 0) -> RowOrder:
    """Does the input's row order carry information? One ``OrderSignal`` per column that can be ordered.

    A file is often stored sorted by an id, a date, a region, or a quasi-identifier; an output
    written in the same order lets anyone holding the original (or any other release of it in
    that order) link records by position, and an order that follows an original QI reveals the
    ranks that microaggregation averaged away. Examined on the ORIGINAL file: for each column
    (numbers, dates, booleans, ordered categories; text as numbers when every value is one,
    else in lexicographic order; missing values left out), the Spearman rank correlation of the
    column with the row number (Spearman 1904; average ranks for ties) and the share of
    ascending steps between neighbouring rows whose values differ (catches files sorted within
    blocks, e.g. by region then income), plus an id equal to the row number up to an offset.
    A column is informative when |rho| >= min_spearman, or the share of steps in one direction
    >= min_monotone_share, each only if it is at least min_z standard deviations away from what
    a random order gives (|rho|·sqrt(m - 1) under H0; ascents among P steps: mean P/2, variance
    about (P + 2)/12, the Eulerian numbers' for distinct values), so that small files in random
    order are not flagged; or when it is the row number plus a constant. Constant columns and
    columns with fewer than 3 values carry no order and are skipped. O(n log n) per column.
    sample: above this many values in a column, rho is computed on a fixed-seed (``seed``)
    sample of that many rows kept in file order and the share on as many adjacent pairs drawn
    at random (standard error about 1/sqrt(sample) each), in O(n + sample log sample); the row
    number check stays exact. None: every row.
    """
    if columns is None:
        columns = list(frame.columns)
    else:
        columns = _key_list(frame, columns)
    signals = []
    for name in columns:
        col = frame[name]
        if getattr(col, "ndim", 1) != 1:  # duplicated header: ambiguous, skipped
            continue
        try:
            values = _order_values(col)
        except (TypeError, ValueError):
            continue
        if values is None:
            continue
        signal = _order_signal(name, values, min_spearman, min_monotone_share, min_z, sample, seed)
        if signal is not None:
            signals.append(signal)
    return RowOrder(tuple(signals))


def shuffle_permutation(n: int, seed=None, *, groups=None) -> np.ndarray:
    """A uniformly random permutation of range(n): publish ``rows[perm]`` to remove the row order.

    seed: None (default) draws fresh entropy from the operating system; an integer or a
    ``numpy.random.SeedSequence`` makes the permutation reproducible, so such a seed must never
    be published (not in the output, not in a run manifest): with it and the software anyone
    can undo the shuffle. groups: optional labels (e.g. household ids), one per row: the groups
    are put in random order and each group's rows stay together, in random order among
    themselves (sdcMicro's ``randomizeRecords = "withinHH"``). numpy ``Generator.permutation``.
    """
    import pandas as pd

    if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    rng = np.random.default_rng(seed)
    if groups is None:
        return rng.permutation(int(n)).astype(np.int64)
    codes = pd.factorize(np.asarray(groups, dtype=object) if not hasattr(groups, "dtype") else groups,
                         use_na_sentinel=False)[0]
    if len(codes) != n:
        raise ValueError(f"groups must give one label per row ({n}), got {len(codes)}")
    group_rank = rng.permutation(int(codes.max()) + 1 if n else 0)
    within = rng.permutation(int(n))
    return np.lexsort((within, group_rank[codes])).astype(np.int64)


def shuffle_rows(frame, seed=None, *, groups=None):
    """The frame's rows in random order (``shuffle_permutation``), with a fresh 0..n-1 index.

    The index is reset so that it keeps no trace of the original positions; every row is kept
    unchanged (same multiset of rows). groups: a column name or labels, as in
    ``shuffle_permutation``.
    """
    if isinstance(groups, str):
        groups = frame[groups]
    perm = shuffle_permutation(len(frame), seed, groups=groups)
    return frame.iloc[perm].reset_index(drop=True)
