"""l-diversity of sensitive columns within the key combinations: distinct and entropy l
(Machanavajjhala, Kifer, Gehrke & Venkitasubramaniam 2007; sdcMicro's ``ldiversity``)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ..records import combination_codes, key_list

__all__ = ["LDiversity", "l_diversity"]


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
    l: float  # noqa: E741 (the l of l-diversity)
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
        """Records whose combination is not entropy l-diverse (exp(H) < l, relative tolerance
        1e-12)."""
        return int(np.count_nonzero(self.entropy < self.l * (1.0 - 1e-12)))

    def warnings(self) -> tuple[str, ...]:
        if self.records_below_l == 0:
            return ()
        return (
            (
                f"{self.records_below_l} records are in key combinations with fewer than {self.l:g}"
                f" distinct values of the sensitive column {self.column}: their value of"
                f" {self.column} can be inferred"
            ),
        )


def l_diversity(frame, keys, sensitive, l: float = 2) -> dict:  # noqa: E741
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

    keys = key_list(frame, keys)
    sensitive = key_list(frame, sensitive)
    both = sorted(set(keys) & set(sensitive), key=str)
    if both:
        raise ValueError(
            f"a sensitive column cannot be a key variable: {', '.join(map(str, both))}"
        )
    if not (isinstance(l, numbers.Real) and float(l) >= 1):
        raise ValueError(f"l must be a number >= 1, got {l!r}")
    combination = combination_codes(frame, keys)
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
        weighted = np.bincount(
            pair_combination, weights=counts * np.log(counts), minlength=sizes.size
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            H = np.log(sizes) - weighted / sizes
        ent = np.minimum(
            np.exp(np.maximum(np.nan_to_num(H), 0.0)), distinct
        )  # rounding: 1 <= exp(H) <= distinct
        out[col] = LDiversity(
            str(col), tuple(keys), float(l), combination, distinct[combination], ent[combination]
        )
    return out
