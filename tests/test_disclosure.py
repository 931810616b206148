"""The disclosure audit's measures (microagg.measures.risk): hand-computed values, sdcMicro's own
test values, brute force on tiny inputs, and invariants (hypothesis)."""

from __future__ import annotations

import json
import math
from collections import Counter
from math import comb, log

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg.measures import risk as D

# --- 1. key-variable k-anonymity -----------------------------------------------------------------


def test_key_frequencies_by_hand():
    # combinations: (1,m) rows 0,1 | (1,f) row 2 | (2,f) rows 3,4 | (NaN,m) rows 5,6 | (3,m) row 7
    df = pd.DataFrame(
        {
            "region": [1, 1, 1, 2, 2, np.nan, np.nan, 3],
            "sex": ["m", "m", "f", "f", "f", "m", "m", "m"],
            "other": range(8),
        }
    )
    kf = D.key_frequencies(df, ["region", "sex"], k=2)
    assert kf.fk.tolist() == [2, 2, 1, 2, 2, 2, 2, 1]
    assert kf.combinations == 5
    assert kf.smallest == 1
    assert kf.records_below_k == 2  # rows 2 and 7
    assert kf.combinations_below_k == 2  # (1,f) and (3,m)
    assert not kf.is_k_anonymous
    assert "not 2-anonymous" in kf.warnings()[0]
    # the two NaN regions are one value: (NaN, m) has 2 records, like (1, m)
    assert kf.combination[5] == kf.combination[6] != kf.combination[0]
    assert D.key_frequencies(df, ["region", "sex"], k=1).is_k_anonymous


def test_key_frequencies_compare_values_as_given():
    # 0.1 + 0.2 != 0.3 in float64: a reader of a file holding both texts sees two values;
    # -0.0 == 0.0 and None / NaN are one missing value
    df = pd.DataFrame(
        {"x": [0.1 + 0.2, 0.3, -0.0, 0.0], "t": pd.Series(["a", "a", None, np.nan], dtype=object)}
    )
    kf = D.key_frequencies(df, ["x", "t"], k=2)
    assert kf.fk.tolist() == [1, 1, 2, 2]


def test_key_frequencies_categorical_unused_levels_and_no_keys():
    df = pd.DataFrame({"c": pd.Categorical(["a", "a", "b"], categories=["a", "b", "never"])})
    kf = D.key_frequencies(df, "c", k=2)
    assert kf.combinations == 2 and kf.fk.tolist() == [2, 2, 1]
    none = D.key_frequencies(df, [], k=3)  # no key: the whole file is one combination
    assert none.fk.tolist() == [3, 3, 3] and none.is_k_anonymous
    empty = D.key_frequencies(df.iloc[:0], ["c"], k=3)
    assert empty.smallest is None and empty.records_below_k == 0


def test_combination_codes_past_int64_and_identical_rows():
    # 8 columns of up to 400 values: their mixed-radix code would overflow int64, so the codes are
    # re-factorised on the way; they must still number the distinct rows in order of first
    # appearance
    rng = np.random.default_rng(3)
    base = rng.integers(0, 400, size=(300, 8)).astype(float)
    A = base[rng.integers(0, 300, 900)]
    first = {}
    expected = np.array([first.setdefault(tuple(row), len(first)) for row in A.tolist()])
    np.testing.assert_array_equal(D.identical_rows(A), expected)
    freq = D.key_frequencies(pd.DataFrame(A, columns=list("abcdefgh")), list("abcdefgh"), 2)
    np.testing.assert_array_equal(freq.combination, expected)
    np.testing.assert_array_equal(freq.fk, np.bincount(expected)[expected])


def test_key_frequencies_bad_arguments():
    df = pd.DataFrame({"a": [1, 2]})
    with pytest.raises(ValueError, match="not in the data"):
        D.key_frequencies(df, ["b"], 2)
    with pytest.raises(ValueError, match="named twice"):
        D.key_frequencies(df, ["a", "a"], 2)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="k must be"):
            D.key_frequencies(df, ["a"], bad)


def test_key_frequencies_testdata_cross_check():
    # sdcMicro's testdata (4580 persons) with the 7 categorical keys of sdcMicro's examples:
    # the SDC Practice Guide's sdcMicro chapter prints "violating 2-anonymity: 157, 3-anonymity:
    # 281" for a 4580-record file (its printed key names differ from its code, so this is a
    # cross-check of the counting rule, not a definition).
    import microagg

    df = microagg.datasets.load("testdata")
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    assert D.key_frequencies(df, keys, 2).records_below_k == 157
    assert D.key_frequencies(df, keys, 3).records_below_k == 281


_key_value = st.one_of(st.integers(0, 3), st.just(float("nan")))


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(_key_value, _key_value), min_size=1, max_size=40), k=st.integers(1, 5)
)
def test_key_frequencies_properties(rows, k):
    df = pd.DataFrame(rows, columns=["a", "b"])
    kf = D.key_frequencies(df, ["a", "b"], k)
    # brute force: count identical tuples, NaN as one value
    norm = [
        tuple("NA" if (isinstance(v, float) and math.isnan(v)) else float(v) for v in r)
        for r in rows
    ]
    count = Counter(norm)
    assert kf.fk.tolist() == [count[r] for r in norm]
    assert kf.sizes.sum() == kf.n == len(rows)  # the frequencies of the combinations sum to n
    assert math.isclose(np.sum(1.0 / kf.fk), kf.combinations)
    assert (kf.records_below_k == 0) == (
        kf.smallest >= k
    )  # no violation iff the rarest occurs k times
    assert (kf.combinations_below_k == 0) == (kf.records_below_k == 0)


# --- 2. individual re-identification risk --------------------------------------------------------

# sdcMicro's own test frame (tests/testthat/test_indivRisk.R): keys A, B, C and sampling weights.
# Combinations, sample frequency f and F = sum of the weights:
#   (2,3,1) rows 1, 3, 8: f = 3, F = 18 + 39 + 51 = 108    p = 3/108 = 1/36, q = 35/36
#   (3,3,3) row 2:        f = 1, F = 45.5                   p = 2/91
#   (2,3,2) row 4:        f = 1, F = 17                     p = 1/17
#   (3,3,1) rows 5, 6:    f = 2, F = 92 + 8 = 100           p = 1/50
#   (1,4,1) row 7:        f = 1, F = 123.5                  p = 2/247
SDC_FRAME = pd.DataFrame(
    {
        "A": [2, 3, 2, 2, 3, 3, 1, 2],
        "B": [3, 3, 3, 3, 3, 3, 4, 3],
        "C": [1, 3, 1, 2, 1, 1, 1, 1],
        "weight": [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51.0],
    }
)


def _f1(F):  # f = 1: r = (p/q) log(1/p), p = 1/F  ->  log(F) / (F - 1)
    return log(F) / (F - 1)


def _f2(F):  # f = 2: r = p/q - (p/q)^2 log(1/p), p = 2/F  ->  p/q = 2/(F - 2)
    a = 2 / (F - 2)
    return a - a * a * log(F / 2)


def test_individual_risk_worked_example_approx():
    # f = 3, approx: r = p / (f - q) = (1/36) / (3 - 35/36) = (1/36) / (73/36) = 1/73
    expected = [1 / 73, _f1(45.5), 1 / 73, _f1(17), _f2(100), _f2(100), _f1(123.5), 1 / 73]
    # by hand: log(45.5)/44.5 = 3.8177123/44.5 = 0.0857913; log(17)/16 = 2.8332133/16 = 0.1770758;
    # 1/49 - (1/49)^2 log 50 = 0.0204082 - 0.0004165 * 3.9120230 = 0.0187788; log(123.5)/122.5 =
    # 0.0393163
    ir = D.individual_risk(SDC_FRAME, ["A", "B", "C"], "weight")
    np.testing.assert_allclose(ir.risk, expected, rtol=1e-12)
    # sdcMicro's expected values in its test (8 digits)
    np.testing.assert_allclose(
        ir.risk,
        [
            0.01369863,
            0.08579129,
            0.01369863,
            0.17707583,
            0.01877883,
            0.01877883,
            0.03931625,
            0.01369863,
        ],
        rtol=2e-7,
    )
    assert ir.fk.tolist() == [3, 1, 3, 1, 2, 2, 1, 3]
    assert ir.Fk.tolist() == [108, 45.5, 108, 17, 100, 100, 123.5, 108]
    # expected re-identifications = 3/73 + 0.0857913 + 0.1770758 + 2 * 0.0187788 + 0.0393163 =
    # 0.3808369
    assert ir.expected_reidentifications == pytest.approx(sum(expected), rel=1e-12)
    assert ir.expected_reidentifications == pytest.approx(0.3808369, abs=1e-7)
    assert ir.global_risk_percent == pytest.approx(100 * sum(expected) / 8, rel=1e-12)
    assert ir.records_above_threshold == 1  # only row 4 (0.177) is above 0.1
    assert ir.max_risk == pytest.approx(_f1(17))


def test_individual_risk_worked_example_exact():
    # f = 3 exactly (mu-Argus's closed form, Franconi & Polettini 2004):
    #   r = p / (2 q^3) * (q (3q - 2) - 2 p^2 log p)  with p = 1/36, q = 35/36
    p, q = 1 / 36, 35 / 36
    r3 = p / (2 * q**3) * (q * (3 * q - 2) - 2 * p * p * log(p))
    ir = D.individual_risk(SDC_FRAME, ["A", "B", "C"], "weight", method="exact")
    np.testing.assert_allclose(ir.risk[[0, 2, 7]], r3, rtol=1e-12)
    assert r3 == pytest.approx(0.01355297, abs=5e-9)  # sdcMicro's test value for method = "exact"
    np.testing.assert_allclose(
        ir.risk[[1, 3, 4, 6]], [_f1(45.5), _f1(17), _f2(100), _f1(123.5)], rtol=1e-12
    )


def test_individual_risk_without_weights_is_one_over_fk():
    ir = D.individual_risk(SDC_FRAME, ["A", "B", "C"])
    np.testing.assert_allclose(ir.risk, [1 / 3, 1, 1 / 3, 1, 1 / 2, 1 / 2, 1, 1 / 3])
    assert ir.expected_reidentifications == pytest.approx(5.0)  # = number of combinations
    assert ir.records_above_threshold == 8
    assert ir.Fk.tolist() == ir.fk.tolist()
    # weights all 1 (a census): F = f, risk 1/f, as sdcMicro's fk == Fk rule
    ones = D.individual_risk(
        SDC_FRAME.assign(weight=1.0), ["A", "B", "C"], "weight", method="exact"
    )
    np.testing.assert_allclose(ones.risk, ir.risk)


def test_expected_inverse_frequency_hand_values():
    # f = 3, F = 6 (p = q = 1/2, z = q/p = 1): r = ∫ u^2 / (1 + u) du = ∫ (u - 1 + 1/(1+u)) du = 1/2
    # - 1 + log 2
    assert D.expected_inverse_frequency(3, 6) == pytest.approx(log(2) - 0.5, rel=1e-14)
    # F = f: r = 1/f for every f
    np.testing.assert_allclose(
        D.expected_inverse_frequency([1, 2, 7, 50], [1, 2, 7, 50]), [1, 1 / 2, 1 / 7, 1 / 50]
    )
    # f = 2, F = 4 (p = 1/2): p/q - (p/q)^2 log(1/p) = 1 - log 2
    assert D.expected_inverse_frequency(2, 4) == pytest.approx(1 - log(2), rel=1e-14)


def _brute_force(f, F, terms=4000):
    """E(1/F | f) = sum_h C(h-1, f-1) p^f q^(h-f) / h, by summing the definition."""
    p = f / F
    q = 1 - p
    return sum(comb(h - 1, f - 1) * p**f * q ** (h - f) / h for h in range(f, f + terms))


@pytest.mark.parametrize(
    "f,F",
    [
        (1, 2.5),
        (2, 3),
        (3, 9),
        (4, 10),
        (5, 7.5),
        (6, 24),
        (12, 30),
        (39, 100),
        (40, 100),
        (45, 60),
    ],
)
def test_expected_inverse_frequency_brute_force(f, F):
    # both evaluation branches (q <= 1/2 or f >= 40: series in q; else the expansion in 1/z)
    assert D.expected_inverse_frequency(f, F) == pytest.approx(_brute_force(f, F), rel=1e-12)


def test_expected_inverse_frequency_extremes_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    for f in (1, 2, 3, 39, 40, 150, 10**5):
        for ratio in (1 + 1e-9, 1.9, 2.1, 1e3, 1e9):
            F = f * ratio
            exact = mpmath.hyp2f1(1, 1, f + 1, mpmath.mpf(F - f) / F) * mpmath.mpf(f) / F / f
            assert D.expected_inverse_frequency(f, F) == pytest.approx(float(exact), rel=1e-12)


@settings(max_examples=80, deadline=None)
@given(f=st.integers(1, 300), ratio=st.floats(1.0, 1e6))
def test_expected_inverse_frequency_properties(f, ratio):
    F = f * ratio
    r = float(D.expected_inverse_frequency(f, F))
    assert 0 < r <= 1 / f * (1 + 1e-12)
    # decreasing in F
    assert float(D.expected_inverse_frequency(f, F * 1.5)) <= r * (1 + 1e-12)
    if f > 2:  # sdcMicro's approximation never falls below the exact value (conservative)
        p = f / F
        assert p / (f - (1 - p)) >= r * (1 - 1e-12)


def test_individual_risk_bad_input():
    with pytest.raises(ValueError, match="below their sample frequency"):
        D.individual_risk(SDC_FRAME.assign(weight=0.5), ["A", "B", "C"], "weight")
    with pytest.raises(ValueError, match="positive finite"):
        D.individual_risk(SDC_FRAME.assign(weight=np.nan), ["A", "B", "C"], "weight")
    with pytest.raises(ValueError, match="one number per record"):
        D.individual_risk(SDC_FRAME, ["A"], np.ones(3))
    with pytest.raises(ValueError, match="method"):
        D.individual_risk(SDC_FRAME, ["A"], method="exactly")
    with pytest.raises(ValueError, match="frequencies f must be integers"):
        D.expected_inverse_frequency(0.5, 3)


@settings(max_examples=50, deadline=None)
@given(
    data=st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 2), st.floats(1.0, 500.0)),
        min_size=1,
        max_size=40,
    )
)
def test_individual_risk_properties(data):
    df = pd.DataFrame(data, columns=["a", "b", "w"])
    plain = D.individual_risk(df, ["a", "b"])
    assert plain.expected_reidentifications == pytest.approx(len(set(zip(df.a, df.b))))
    for method in ("approx", "exact"):
        ir = D.individual_risk(df, ["a", "b"], "w", method=method)
        assert np.all((ir.risk > 0) & (ir.risk <= 1.0))
        assert np.all(ir.risk <= 1.0 / ir.fk * (1 + 1e-12))  # weights only lower the risk
        assert np.all(ir.Fk >= ir.fk)
    approx = D.individual_risk(df, ["a", "b"], "w").risk
    exact = D.individual_risk(df, ["a", "b"], "w", method="exact").risk
    assert np.all(approx >= exact * (1 - 1e-12))


# --- 3. l-diversity ------------------------------------------------------------------------------


def test_l_diversity_by_hand():
    df = pd.DataFrame(
        {"key": list("aaabbcccc"), "disease": ["x", "y", "z", "x", "x", "x", "x", "y", np.nan]}
    )
    # a: x, y, z          -> distinct 3, shares 1/3 each: H = log 3, exp(H) = 3
    # b: x, x             -> distinct 1, exp(H) = 1
    # c: x, x, y, missing -> distinct 3 (missing counts), shares 1/2, 1/4, 1/4:
    #                        H = 1/2 log 2 + 2 * 1/4 log 4 = 1.5 log 2, exp(H) = 2^1.5 = 2.8284271
    ld = D.l_diversity(df, ["key"], ["disease"], l=2)["disease"]
    assert ld.distinct.tolist() == [3, 3, 3, 1, 1, 3, 3, 3, 3]
    np.testing.assert_allclose(ld.entropy, [3, 3, 3, 1, 1] + [2**1.5] * 4, rtol=1e-12)
    assert ld.smallest_distinct == 1 and ld.smallest_entropy == pytest.approx(1.0)
    assert ld.records_below_l == 2 and ld.combinations_below_l == 1
    assert ld.records_below_l_entropy == 2
    assert "disease" in ld.warnings()[0]
    ld3 = D.l_diversity(df, ["key"], ["disease"], l=3)["disease"]
    assert ld3.records_below_l == 2  # only b has fewer than 3 distinct values
    assert ld3.records_below_l_entropy == 6  # b (1) and c (2.83) are below 3; a (exactly 3) is not


def test_l_diversity_sdcmicro_case():
    # sdcMicro's tests/testthat/test_ldiversity.R: missing occupation is one key value;
    # distinct l-diversity 3, 3, 3, 2, 2, 2, 2
    df = pd.DataFrame(
        {
            "sex": ["female", "female", "female", "male", "male", "female", "female"],
            "occupation": [None, None, None, "teacher", "teacher", "nurse", "nurse"],
            "ethnicity": ["other"] * 5 + ["majority"] * 2,
            "sensitive": [1, 0, 2, 1, 0, 0, 1],
            "sens2": list("ABAXYZZ"),
        }
    )
    res = D.l_diversity(df, ["sex", "occupation", "ethnicity"], ["sensitive", "sens2"])
    assert res["sensitive"].distinct.tolist() == [3, 3, 3, 2, 2, 2, 2]
    assert res["sens2"].distinct.tolist() == [2, 2, 2, 2, 2, 1, 1]
    with pytest.raises(ValueError, match="cannot be a key"):
        D.l_diversity(df, ["sex"], ["sex"])


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 3), st.one_of(st.integers(0, 4), st.just(float("nan")))),
        min_size=1,
        max_size=40,
    ),
    l=st.integers(1, 4),
)
def test_l_diversity_properties(rows, l):  # noqa: E741 (l-diversity's l)
    df = pd.DataFrame(rows, columns=["k", "s"])
    ld = D.l_diversity(df, ["k"], ["s"], l=l)["s"]
    fk = D.key_frequencies(df, ["k"], 1).fk
    assert (
        np.all(1 <= ld.entropy) and np.all(ld.entropy <= ld.distinct) and np.all(ld.distinct <= fk)
    )
    assert (ld.records_below_l == 0) == (ld.smallest_distinct >= l)
    assert ld.records_below_l <= ld.records_below_l_entropy


# --- 4. interval disclosure ----------------------------------------------------------------------


def test_sdid_by_hand():
    Xp = np.array([[0.0, 10], [0, 10], [2, 10], [2, 14]])
    # s'_0: mean 1, deviations ±1, sum of squares 4, variance 4/3, s = 1.1547; k s = 0.5 * 1.1547 =
    # 0.5774
    # s'_1: mean 11, deviations -1, -1, -1, 3, sum of squares 12, variance 4, s = 2; k s = 1
    X = np.array(
        [
            [0.5, 10.5],  # |0.5| <= 0.577 in, |0.5| <= 1 in: 0 outside -> at risk
            [1.0, 12.0],  # |1.0| > 0.577 out, |2| > 1 out: 2 outside -> safe
            [2.0, 13.0],  # 0 in, |3| > 1 out: 1 outside -> safe (sdcMicro since 2020: all inside)
            [1.0, 14.0],
        ]
    )  # |-1| out, 0 in: 1 outside -> safe
    assert D.sdid_risk(X, Xp, k=0.5) == pytest.approx(1 / 4)
    # one variable moved far away: no record inside its interval
    assert D.sdid_risk(X[:, :1], Xp[:, :1] + 100, k=0.5) == 0.0
    # bounds included: a value exactly on the interval's edge is inside
    assert D.sdid_risk(np.array([[0.0], [2.0]]), np.array([[0.0], [2.0]]), k=0.0) == 1.0


def _standardised(X):
    return (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)


def test_rmd_distances_are_mcd_mahalanobis():
    from sklearn.covariance import MinCovDet

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3)) @ np.array([[2.0, 0.5, 0], [0, 1, 0.3], [0, 0, 0.5]]) + [
        10,
        50,
        -3,
    ]
    X[:5] *= 8  # outliers
    res = D.rmd_interval_risk(X, X, seed=0)
    Z = _standardised(X)
    squared = MinCovDet(random_state=0).fit(Z).mahalanobis(Z)  # (z - t)' C^-1 (z - t), MCD t and C
    np.testing.assert_allclose(res.rmd, np.sqrt(squared), rtol=1e-8)
    assert res.rmd[:5].min() > np.median(res.rmd)  # outliers are far
    # X' = X: every difference is 0 < k·0.05·RMD_i, so every record is at risk by RMDID1
    assert res.risk1 == 1.0


def test_rmd_interval_rule():
    # the interval of record i is z_i ± k·0.05·RMD_i on the original's scale (mean, sd with n - 1):
    # shift record i's first value by half (inside) or twice (outside) its half-width, alternately
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 2)) * [3.0, 0.2] + [100, 1]
    k = 0.01
    rmd = D.rmd_interval_risk(X, X, k=k).rmd
    half = k * 0.05 * rmd * X[:, 0].std(ddof=1)  # in raw units of column 0
    factor = np.where(np.arange(200) % 2 == 0, 0.5, 2.0)
    Xp = X.copy()
    Xp[:, 0] += factor * half
    Xp[:, 1] += 1.0  # column 1 far outside everywhere
    res = D.rmd_interval_risk(X, Xp, k=k)
    assert res.at_risk1.tolist() == (factor < 1).tolist()
    assert res.risk1 == pytest.approx(0.5)
    # any ONE variable inside marks the record (sdcMicro: apply(..., 1, any))
    Xq = X.copy()
    Xq[:, 0] += 10.0
    assert D.rmd_interval_risk(X, Xq, k=k).risk1 == 1.0
    assert D.rmd_interval_risk(X, X + [10.0, 10.0], k=k).risk1 == 0.0


def test_rmd_risk2_by_hand():
    # X' = X (all records at risk by RMDID1). Records 0-3 form two close pairs, 0.01 apart in raw
    # units (< 0.01 standardised, below k2 = 0.05: safe by RMDID2); the other 40 are the points of a
    # 7 x 6 grid of spacing 1 without the two pair sites (sd about 1.7-2: at least 0.5 apart
    # standardised, so isolated and at risk)
    grid = [
        (float(a), float(b)) for a in range(7) for b in range(6) if (a, b) not in ((0, 0), (6, 5))
    ]
    X = np.array([(0.0, 0.0), (0.01, 0.0), (6.0, 5.0), (6.0, 5.01)] + grid)
    Z = _standardised(X)
    nearest = np.array(
        [np.min(np.delete(np.linalg.norm(Z - Z[i], axis=1), i)) for i in range(len(X))]
    )
    assert nearest[:4].max() < 0.01 and nearest[4:].min() > 0.4
    res = D.rmd_interval_risk(X, X, k2=0.05)
    assert res.at_risk1.all()
    assert res.at_risk2.tolist() == [False] * 4 + [True] * 40
    assert res.risk2 == pytest.approx(40 / 44)
    # sdcMicro's weighted figures: |W| · sum_{i in W} 0.05·RMD_i / n
    assert res.wrisk2 == pytest.approx(40 * np.sum(0.05 * res.rmd[4:]) / 44)
    assert res.wrisk1 == pytest.approx(44 * np.sum(0.05 * res.rmd) / 44)


@pytest.mark.parametrize("seed", range(4))
def test_rmd_risk2_matches_all_pairs(seed):
    # clusters of near (some identical) published records and isolated ones, more records than the
    # certificate's window: RMDID2 (identical rows, the principal-axis certificate, the KD-tree)
    # against every pair's distance
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(60, 4)) * 3
    X = np.vstack(
        [
            centres[rng.integers(0, 60, 240)] + rng.normal(scale=0.02, size=(240, 4)),
            rng.normal(size=(60, 4)) * 4,
        ]
    )
    Xp = X + rng.normal(scale=0.001, size=X.shape)
    Xp[:20] = Xp[20:40]  # identical published records
    for k2 in (0.01, 0.05, 0.3):
        res = D.rmd_interval_risk(X, Xp, k=0.5, k2=k2)
        Zp = (Xp - X.mean(axis=0)) / X.std(axis=0, ddof=1)
        dist = np.linalg.norm(Zp[:, None, :] - Zp[None, :, :], axis=2)
        np.fill_diagonal(dist, np.inf)
        expected = res.at_risk1 & (dist.min(axis=1) > k2)
        assert 0 < expected.sum() < res.at_risk1.sum()
        np.testing.assert_array_equal(res.at_risk2, expected)


def test_rmd_after_microaggregation_and_scaling():
    import microagg

    df = microagg.datasets.load("census").iloc[:300, :4]
    out = microagg.microaggregate(df, k=3, method="mdav").data
    res = D.rmd_interval_risk(df, out)
    assert res.risk2 == 0.0  # every published record has 2 identical neighbours
    assert 0.0 <= res.risk1 <= 1.0
    own = D.rmd_interval_risk(df, out, scaling="own")
    np.testing.assert_array_equal(own.rmd, res.rmd)  # the distances depend on the original only
    with pytest.raises(ValueError, match="scaling"):
        D.rmd_interval_risk(df, out, scaling="mine")


def test_rmd_degenerate_inputs():
    const = np.ones((10, 2))
    assert D.rmd_interval_risk(const, const).risk1 == 0.0  # no varying column: nothing to measure
    X = np.zeros((20, 2))
    X[:3] = [[1, 2], [3, 1], [2, 5]]
    with pytest.raises(ValueError, match="robust"):  # 17 identical records: MCD scatter 0
        D.rmd_interval_risk(X, X)
    with pytest.raises(ValueError, match="shape"):
        D.rmd_interval_risk(np.ones((3, 2)), np.ones((4, 2)))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(8, 60), noise=st.floats(0.0, 2.0))
def test_interval_disclosure_ranges(seed, n, noise):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Xp = X + noise * rng.normal(size=(n, 3))
    res = D.interval_disclosure(X, Xp)
    for value in (res.rank_share, res.sdid_share, res.rmd.risk1, res.rmd.risk2):
        assert 0.0 <= value <= 1.0
    assert np.all(res.rmd.at_risk2 <= res.rmd.at_risk1)


# --- 5. row order --------------------------------------------------------------------------------


def test_row_order_by_hand():
    # values 3, 1, 2, 5, 4 at rows 1..5: d = rank - row = 2, -1, -1, 1, -1, sum d^2 = 8,
    # rho = 1 - 6·8 / (5·24) = 0.6; steps down, up, up, down: ascending share 2/4
    sig = D.row_order(pd.DataFrame({"x": [3, 1, 2, 5, 4]})).signals[0]
    assert sig.spearman == pytest.approx(0.6)
    assert sig.ascending_share == 0.5 and sig.pairs == 4
    assert not sig.informative  # 5 rows cannot show an order (z = 0.6·2 = 1.2)
    # ties: 1, 1, 2, 2 -> average ranks 1.5, 1.5, 3.5, 3.5; rho = 4 / sqrt(4·5) = 0.894427;
    # one step up among the pairs that differ
    tie = D.row_order(pd.DataFrame({"x": [1, 1, 2, 2]})).signals[0]
    assert tie.spearman == pytest.approx(4 / math.sqrt(20))
    assert tie.ascending_share == 1.0 and tie.pairs == 1


def test_row_order_detects_sorted_files():
    rng = np.random.default_rng(0)
    n = 1000
    region = np.sort(rng.integers(1, 6, n))
    income = np.concatenate(
        [np.sort(rng.lognormal(10, 1, np.count_nonzero(region == r))) for r in range(1, 6)]
    )
    df = pd.DataFrame(
        {
            "id": np.arange(n) + 101,  # = row number + 101
            "region": region,  # sorted
            "income": income,  # sorted within region
            "age": rng.integers(18, 90, n),  # random
            "name": sorted(f"p{i:05d}" for i in rng.permutation(n)),
            "date": pd.date_range("2020-01-01", periods=n, freq="h")[::-1],  # descending
            "sex": rng.choice(["m", "f"], n),
            "const": 1,
        }
    )
    ro = D.row_order(df)
    by = {s.column: s for s in ro.signals}
    assert set(ro.informative_columns) == {"id", "region", "income", "name", "date"}
    assert by["id"].row_number_offset == 101 and by["id"].spearman == pytest.approx(1.0)
    assert by["date"].spearman == pytest.approx(-1.0) and by["date"].ascending_share == 0.0
    assert abs(by["income"].spearman) < 0.5 < by["income"].ascending_share  # caught by neighbours
    assert "const" not in by
    assert "--shuffle" in ro.warnings()[0] and "id (= row number + 101)" in ro.warnings()[0]
    assert len(ro.informative_columns) == 5
    # after a shuffle nothing follows the row order any more
    assert not D.row_order(D.shuffle_rows(df, seed=1)).informative


def test_row_order_text_numbers_missing_and_categories():
    n = 200
    df = pd.DataFrame(
        {
            "code": [str(i) for i in range(1, n + 1)],  # "10" < "9" as text, not as numbers
            "gap": [float(i) if i % 3 else np.nan for i in range(n)],
            "level": pd.Categorical(
                ["low"] * 100 + ["high"] * 100, categories=["low", "high"], ordered=True
            ),
        }
    )
    by = {s.column: s for s in D.row_order(df).signals}
    assert by["code"].row_number_offset == 1 and by["code"].spearman == pytest.approx(1.0)
    assert (
        by["gap"].spearman == pytest.approx(1.0) and by["gap"].informative
    )  # missing rows left out
    assert by["level"].informative and by["level"].ascending_share == 1.0
    assert D.row_order(df, columns=["gap"]).informative_columns == ("gap",)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_order_is_not_flagged(seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x": rng.normal(size=300), "c": rng.integers(0, 4, 300)})
    assert not D.row_order(df).informative


# --- shuffle -------------------------------------------------------------------------------------


def test_shuffle_keeps_the_rows_and_is_seeded():
    df = pd.DataFrame(
        {"a": [1, 2, 2, 3, 4, 5], "b": list("xyyzwv")}, index=[10, 11, 12, 13, 14, 15]
    )
    out = D.shuffle_rows(df, seed=7)
    assert list(out.index) == list(range(6))  # no trace of the old positions
    assert Counter(map(tuple, out.to_numpy())) == Counter(map(tuple, df.to_numpy()))
    assert out.equals(D.shuffle_rows(df, seed=7))  # reproducible with a seed
    perm = D.shuffle_permutation(6, seed=7)
    assert sorted(perm.tolist()) == list(range(6))
    fresh = [tuple(D.shuffle_permutation(60)) for _ in range(2)]  # no seed: OS entropy
    assert fresh[0] != fresh[1]
    with pytest.raises(ValueError):
        D.shuffle_permutation(-1)


def test_shuffle_groups_stay_together():
    hid = np.repeat([5, 3, 9, 1, 7], [3, 1, 4, 2, 2])
    perm = D.shuffle_permutation(len(hid), seed=2, groups=hid)
    shuffled = hid[perm]
    # each household is one contiguous block
    blocks = [h for i, h in enumerate(shuffled) if i == 0 or shuffled[i - 1] != h]
    assert sorted(blocks) == [1, 3, 5, 7, 9]
    df = pd.DataFrame({"hid": hid, "x": range(len(hid))})
    out = D.shuffle_rows(df, seed=2, groups="hid")
    assert out["hid"].tolist() == shuffled.tolist()


@settings(max_examples=50, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 3), st.text(max_size=2)), max_size=30),
    seed=st.integers(0, 2**32 - 1),
)
def test_shuffle_property(rows, seed):
    df = pd.DataFrame(rows, columns=["a", "b"])
    out = D.shuffle_rows(df, seed=seed)
    assert Counter(map(tuple, out.to_numpy().tolist())) == Counter(
        map(tuple, df.to_numpy().tolist())
    )
    assert list(out.columns) == ["a", "b"] and list(out.index) == list(range(len(df)))


# --- 6. the audit's result: one object (measures.Audit), the measures registered
# -------------------


def test_the_audit_serialises_and_reads_back():
    from microagg.measures import MEASURES, Audit, Figure

    figures = (
        Figure(MEASURES["key_smallest_frequency"], np.int64(3), "risk"),
        Figure(MEASURES["interval_rmd_risk1"], np.float64("nan"), "risk"),
        Figure(MEASURES["il1s"], np.float32(0.25), "utility"),
    )
    audit = Audit(figures, {"c": {"changed_share": 0.5}}, ("careful",), {"key_variables": ["a"]})
    doc = json.loads(json.dumps(audit.to_dict(), allow_nan=False))
    assert doc["groups"] == {
        "risk": {"key_smallest_frequency": 3, "interval_rmd_risk1": None},
        "utility": {"il1s": 0.25},
    }
    assert type(doc["groups"]["risk"]["key_smallest_frequency"]) is int
    back = Audit.from_dict(doc)
    assert back["key_smallest_frequency"] == 3 and back.warnings == ("careful",)
    assert back.rows("risk")[0].measure is MEASURES["key_smallest_frequency"]
    assert back.to_dict() == doc
    unknown = Audit.from_dict({"groups": {"risk": {"from_a_later_version": 1.5}}})
    assert unknown["from_a_later_version"] == 1.5
    with pytest.raises(KeyError):
        audit["missing"]


def test_audit_collects_every_measure():
    import microagg
    from microagg.measures import MEASURES, AuditRoles, audit_files, measures_of

    df = microagg.datasets.load("testdata").iloc[:600]
    cols = ["expend", "income", "savings"]
    out = microagg.microaggregate(df, k=3, columns=cols, strata="urbrur", audit=False).data
    roles = AuditRoles(
        tuple(cols),
        dict.fromkeys(cols, "continuous"),
        3,
        ("urbrur",),
        ("roof", "sex"),
        ("relat",),
        "sampling_weight",
        household=("ori_hid",),
    )
    audit = audit_files(df, out, roles)
    risk = audit.group("risk")
    assert set(risk) == {m.name for m in measures_of("risk")}  # every registered risk measure
    assert set(audit.group("utility")) == {m.name for m in measures_of("utility")}
    keys = cols + ["urbrur", "roof", "sex"]
    assert risk["key_records_below_k"] == D.key_frequencies(out, keys, 3).records_below_k
    ir = D.individual_risk(out, ["urbrur", "roof", "sex"], "sampling_weight")
    assert risk["reidentification_expected"] == ir.expected_reidentifications
    from microagg.measures.risk.household_risk import hierarchical_risk, household_codes

    homes = household_codes(out, ["ori_hid"])
    assert risk["household_risk_expected"] == hierarchical_risk(ir.risk, homes).sum()
    ld = D.l_diversity(out, keys, ["relat"])["relat"]
    assert risk["ldiversity_records_below_l"] == ld.records_below_l
    assert risk["interval_rmd_risk2"] == 0.0 and risk["interval_sdid_share"] == D.sdid_risk(
        df[cols], out[cols]
    )
    assert all(MEASURES[name].reference and MEASURES[name].unit for name in risk)
    assert any("ori_hid" in w for w in audit.warnings)  # testdata is stored sorted by household
    assert audit.context["key_variables"] == keys
    # the audit of the published file's rows in another order: the measures that pair records are
    # left out
    shuffled = audit_files(df, D.shuffle_rows(out, seed=1), roles, aligned=False)
    assert not any(f.measure.aligned for f in shuffled.figures)
    assert shuffled.group("risk")["key_records_below_k"] == risk["key_records_below_k"]
    assert not any("ori_hid" in w for w in shuffled.warnings)
    # a shuffled file's audit: the paired measures alone give what combine takes from the full audit
    from microagg.measures import combine

    paired_only = audit_files(df, out, roles, paired_only=True)
    assert (
        paired_only.figures
        and all(f.measure.aligned for f in paired_only.figures)
        and not paired_only.warnings
    )
    assert combine(paired_only, shuffled).to_dict() == combine(audit, shuffled).to_dict()


def test_row_order_on_a_sample_estimates_the_exact_signals():
    """Above ``sample`` rows, rho and the ascending share are estimated on a fixed-seed sample
    (issue 45): within a few standard errors (1/sqrt(sample)) of the exact figures, the same
    flags, the row-number id still found exactly, and the same figures on every call."""
    rng = np.random.default_rng(5)
    n, m = 60_000, 5_000
    frame = pd.DataFrame(
        {
            "sorted": np.sort(rng.normal(size=n)),  # follows the order
            "noisy": np.arange(n) + rng.normal(scale=n / 3, size=n),  # rho about 0.7
            "random": rng.normal(size=n),  # no order
            "within_blocks": np.concatenate([np.sort(rng.normal(size=n // 60)) for _ in range(60)]),
            "id": np.arange(n) + 7,
        }
    )
    exact = {s.column: s for s in D.row_order(frame).signals}
    sampled = {s.column: s for s in D.row_order(frame, sample=m).signals}
    assert sampled == {s.column: s for s in D.row_order(frame, sample=m).signals}  # fixed seed
    for name, s in exact.items():
        est = sampled[name]
        assert abs(est.spearman - s.spearman) < 5 / np.sqrt(m), name
        assert abs(est.ascending_share - s.ascending_share) < 5 * 0.5 / np.sqrt(m), name
        assert est.informative == s.informative, name
        assert est.row_number_offset == s.row_number_offset, name
    assert sampled["id"].row_number_offset == 7.0
    assert not sampled["random"].informative and sampled["within_blocks"].informative
    assert (
        exact["random"].pairs == n - 1 and sampled["random"].pairs == m
    )  # the pairs the share counts
