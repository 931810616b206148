"""Individual re-identification risk on categorical key variables, with sampling weights, as
sdcMicro's ``measure_risk`` / ``indivRisk`` (Benedetti & Franconi 1998; Franconi & Polettini
2004)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ..records import KeyFrequencies, key_codes, key_frequencies, wildcard_frequencies

__all__ = ["expected_inverse_frequency", "IndividualRisk", "individual_risk"]


#: terms of the series in q (t_{m+1}/t_m < q <= 1/2 there, or f >= 40: 2^-64 or 1/C(104, 64) is
#: left)
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
        raise ValueError(
            "estimated population frequencies F must be finite and at least the sample frequency f "
            "(sampling weights are inverse inclusion probabilities, >= 1)"
        )
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
                acc = acc + np.where(
                    active, sign / (z ** (j + 1) * np.maximum(fr - 1 - j, 1.0)), 0.0
                )
        out[rest] = acc
    return out


def _mad(x: np.ndarray) -> float:
    """Median absolute deviation scaled by 1.4826, as R's ``mad``."""
    return float(1.4826 * np.median(np.abs(x - np.median(x)))) if x.size else 0.0


@dataclass(frozen=True)
class IndividualRisk:
    """Per-record re-identification risk on categorical keys and the global figures sdcMicro
    reports.

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
        return (
            (
                f"{self.records_above_threshold} records have an individual re-identification risk "
                "above "
                f"{self.threshold:g} on the key variables ({', '.join(map(str, self.keys))})"
            ),
        )


def individual_risk(
    frame,
    keys,
    weights=None,
    *,
    method: str = "approx",
    threshold: float = 0.1,
    missing: str = "value",
) -> IndividualRisk:
    """Individual re-identification risk of each record on categorical keys, as sdcMicro's
    ``measure_risk``.

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
    (alpha = 1; ``wildcard_frequencies``), for sdcMicro's figures on files with missing keys,
    with its rule for records missing every key (with two keys or more they count every record
    and are not counted by the records missing none: ``addAllNAtoKeys = FALSE``).
    Weights giving Fk < fk are an error (the model needs F >= f; sdcMicro returns numbers without
    meaning there). threshold: records with risk above it are counted.
    """
    if method not in ("approx", "exact"):
        raise ValueError(f"method must be 'approx' or 'exact', got {method!r}")
    if not (isinstance(threshold, numbers.Real) and 0.0 <= float(threshold) <= 1.0):
        raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")
    freq = key_frequencies(frame, keys, 1)
    if missing == "wildcard" and not bool(frame[list(freq.keys)].isna().to_numpy().any()):
        missing = "value"  # no missing key value: the wildcard changes nothing
    if missing not in ("value", "wildcard"):
        raise ValueError(f"missing must be 'value' or 'wildcard', got {missing!r}")
    # the unit whose frequencies a record takes: its combination, or (wildcard) the record itself,
    # whose matches depend on its missing keys
    wildcard = missing == "wildcard"
    unit = np.arange(freq.n) if wildcard else freq.combination
    codes = key_codes(frame, freq.keys) if wildcard else None
    if weights is None:
        sizes = (
            wildcard_frequencies(codes, all_missing_matches_complete=False)[0]
            if wildcard
            else freq.sizes
        ).astype(np.float64)
        risk, totals = (1.0 / sizes if freq.n else np.zeros(0)), sizes
    else:
        w = _sampling_weights(frame, weights, freq.n)
        sizes, totals = _weighted_frequencies(freq, codes, w)
        risk = _weighted_risk(sizes, totals, method)
    return IndividualRisk(
        freq.keys,
        weights is not None,
        method,
        float(threshold),
        risk[unit],
        sizes[unit].astype(np.int64),
        totals[unit].astype(np.float64),
    )


def _sampling_weights(frame, weights, n: int) -> np.ndarray:
    """The sampling weights (a column name or n numbers) as n positive finite floats."""
    import pandas as pd

    w = frame[weights] if isinstance(weights, str) else weights
    w = pd.to_numeric(pd.Series(np.asarray(w)), errors="coerce").to_numpy(dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"weights must give one number per record ({n}), got shape {w.shape}")
    if not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError(
            "sampling weights must be positive finite numbers (missing or non-numeric weights "
            "found)"
        )
    return w


def _weighted_frequencies(
    freq: KeyFrequencies, codes, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(fk, Fk) per unit: per combination, or per record when a missing key value is a wildcard
    (``codes``: the keys' codes then); Fk >= fk is required by the model (weights >= 1)."""
    if codes is not None:
        fk, totals = wildcard_frequencies(codes, w, all_missing_matches_complete=False)
        sizes = fk.astype(np.float64)
    else:
        sizes = freq.sizes.astype(np.float64)
        totals = np.bincount(freq.combination, weights=w, minlength=sizes.size)
    if np.any(totals < sizes * (1.0 - 1e-12)):
        bad = int(np.count_nonzero(totals < sizes * (1.0 - 1e-12)))
        raise ValueError(
            f"sampling weights give {bad} key combination(s) an estimated population frequency "
            "below their sample frequency (weights < 1): the individual risk needs F >= f"
        )
    return sizes, np.maximum(totals, sizes)


def _weighted_risk(sizes: np.ndarray, totals: np.ndarray, method: str) -> np.ndarray:
    """E(1/F | f) per unit; method="approx": sdcMicro's p / (fk - q) for fk >= 3; fk == Fk: 1 / fk,
    whatever the method (as sdcMicro)."""
    risk = expected_inverse_frequency(sizes, totals)
    if method == "approx":
        big = sizes > 2
        p = sizes[big] / totals[big]
        risk[big] = p / (sizes[big] - (1.0 - p))
    census = totals == sizes
    risk[census] = 1.0 / sizes[census]
    return risk
