"""Many category levels (issue 57): nominal QIs kept as codes (``onehot.OneHot``) give what the
dense one-hot embedding gives (its matrix, SSE, SST, distances, MDAV's groups), and what needs
the dense matrix gets it within a bound or one error line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg
from microagg import onehot
from microagg.embedding import embed
from microagg.errors import InputError
from microagg.kernels.mdav_labels import mdav_kernel
from microagg.kernels.mdav_onehot import mdav_onehot_kernel
from microagg.labels import group_sums, sse, sst

KINDS = {"x": "continuous", "c": "nominal", "y": "continuous", "o": "ordinal", "d": "nominal"}


def _frame(seed: int, n: int, levels: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "c": [f"L{v}" for v in rng.integers(0, levels, n)],
            "y": rng.exponential(size=n),
            "o": rng.integers(0, 3, n),
            "d": rng.integers(0, 4, n).astype(str),
        }
    )


def _both(df: pd.DataFrame):
    cols = list(KINDS)
    return embed(df, cols, KINDS, compact=False), embed(df, cols, KINDS, compact=True)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(4, 120),
    k=st.integers(2, 5),
    levels=st.integers(1, 8),
    classic=st.booleans(),
)
def test_mdav_on_codes_gives_the_dense_groups(seed, n, k, levels, classic):
    """The codes' kernel and the plain dense loop: the same labels, or (a floating-point tie
    broken otherwise) the same SSE within 1e-9 relative."""
    if k > n:
        return
    dense, codes = _both(_frame(seed, n, levels))
    Z = codes.matrix
    expected = mdav_kernel(dense.matrix, k, classic)
    labels = mdav_onehot_kernel(Z.numeric, Z.codes, Z.units**2, Z.sizes, k, classic, 0)
    assert np.bincount(labels).min() >= k
    if not np.array_equal(labels, expected):
        assert sse(Z, labels) == pytest.approx(sse(dense.matrix, expected), rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 80), levels=st.integers(1, 9))
def test_codes_hold_the_dense_embedding_and_its_figures(seed, n, levels):
    """OneHot.dense is the dense embedding; SSE, SST and squared distances (weighted too) from the
    codes are the dense ones."""
    df = _frame(seed, n, levels)
    dense, codes = _both(df)
    Z, D = codes.matrix, dense.matrix
    np.testing.assert_allclose(Z.dense(), D, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(Z), Z.dense())
    labels = np.random.default_rng(seed).integers(0, max(n // 3, 1), n)
    labels = np.unique(labels, return_inverse=True)[1]
    assert sse(Z, labels) == pytest.approx(sse(D, labels), rel=1e-9, abs=1e-9)
    assert sst(Z) == pytest.approx(sst(D), rel=1e-9, abs=1e-9)
    weights = np.random.default_rng(seed).uniform(0.5, 2.0, n)
    for a, b in zip(group_sums(Z, labels, None, weights), group_sums(D, labels, None, weights)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    other = _frame(seed + 1, n, levels)
    other["c"] = df["c"].sample(frac=1.0, random_state=seed % 1000).to_numpy()
    other["d"] = df["d"].to_numpy()[::-1]
    other["o"] = df["o"].to_numpy()[::-1]
    Zp, Dp = codes.embed(*codes.values_of(other)), dense.embed(*dense.values_of(other))
    assert onehot.sq_distance(Z, Zp) == pytest.approx(onehot.sq_distance(D, Dp), rel=1e-9)
    w = np.repeat(np.arange(1.0, 6.0), dense.widths())
    assert onehot.sq_distance(Z, Zp, w) == pytest.approx(onehot.sq_distance(D, Dp, w), rel=1e-9)
    assert sst(onehot.scaled(Z, w)) == pytest.approx(sst(onehot.scaled(D, w)), rel=1e-9)


def _levels_frame(seed: int, n: int) -> pd.DataFrame:
    """A numeric x and a nominal c of more one-hot columns than ``onehot.WIDE_ONEHOT``."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "c": [f"L{v:03d}" for v in rng.integers(0, 3 * onehot.WIDE_ONEHOT, n)],
        }
    )


def _run(df, monkeypatch, wide: int, **options):
    monkeypatch.setattr(onehot, "WIDE_ONEHOT", wide)
    columns = [c for c in ("x", "y", "c") if c in df.columns]
    params = options.pop("params", {})
    return microagg.microaggregate(df, k=3, columns=columns, categorical=["c"], **options, **params)


def test_missing_values_on_codes(monkeypatch):
    """Missing continuous values with the codes kept: every published mean over >= k present
    values, and the run's SSE is the dense matrices' squared distance over the present values."""
    df = _levels_frame(8, 300)
    df.loc[::7, "x"] = np.nan
    res = _run(df, monkeypatch, onehot.WIDE_ONEHOT)
    assert np.bincount(res.labels).min() >= 3
    Z = res.standardized
    emb = embed(df, ["x", "c"], {"x": "continuous", "c": "nominal"}, compact=False)
    published = res.data[["x", "c"]]
    Dp = emb.embed(*emb.values_of(published))
    assert res._run_audit.get("sse") == pytest.approx(onehot.sq_distance(Z.dense(), Dp), rel=1e-9)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"weights": {"x": 2.0, "c": 0.5}},
        {"distance": "mahalanobis"},
        {"variant": "icsm"},
        {"strata": "s", "merge_small_strata": True},
        {"keys": ["g"], "key_anonymity": "keys+qis"},
    ],
)
def test_a_run_on_codes_is_the_dense_run(monkeypatch, options):
    """Through microaggregate: the wide column kept as codes gives the dense run's groups and
    figures (IL, SSE, SST), and the published file's audit agrees."""
    df = _levels_frame(3, 400)
    rng = np.random.default_rng(4)
    df["y"] = rng.normal(size=len(df))
    df["s"] = np.where(np.arange(len(df)) < 2, "tiny", rng.choice(["a", "b", "c"], len(df)))
    df["g"] = rng.choice(["u", "v"], len(df))
    if "variant" in options:
        options = {"params": {"variant": options["variant"]}}
    wide = _run(df, monkeypatch, onehot.WIDE_ONEHOT, **options)
    assert isinstance(wide.standardized, onehot.OneHot)
    narrow = _run(df, monkeypatch, 10**9, **options)
    assert isinstance(narrow.standardized, np.ndarray)
    np.testing.assert_array_equal(wide.labels, narrow.labels)
    for name in ("information_loss", "sse", "sst", "weighted_information_loss"):
        a, b = wide._run_audit.get(name), narrow._run_audit.get(name)
        assert (a is None and b is None) or a == pytest.approx(b, rel=1e-9)
    assert wide.audit.get("information_loss") == pytest.approx(
        narrow.audit.get("information_loss"), rel=1e-9
    )


def test_few_levels_keep_the_dense_matrix():
    """Below ``WIDE_ONEHOT`` one-hot columns nothing changes (every fingerprint as it was)."""
    dense, _ = _both(_frame(0, 50, 5))
    assert not dense.compact
    assert isinstance(embed(_frame(0, 50, 5), list(KINDS), KINDS).matrix, np.ndarray)


def test_what_needs_the_dense_matrix_gets_it_or_one_line(monkeypatch):
    """Another method gets the dense embedding within DENSE_MAX_CELLS; beyond it, one InputError
    line naming the column, its levels, what needed it and what handles it."""
    df = _levels_frame(5, 300)
    res = _run(df, monkeypatch, onehot.WIDE_ONEHOT, method="vmdav")
    assert isinstance(res.standardized, np.ndarray)
    monkeypatch.setattr(onehot, "DENSE_MAX_CELLS", 1000)
    levels = df["c"].nunique()
    with pytest.raises(InputError) as caught:
        _run(df, monkeypatch, onehot.WIDE_ONEHOT, method="vmdav")
    line = str(caught.value)
    assert "\n" not in line
    assert f"column c has {levels} levels" in line
    assert "method 'vmdav'" in line and "method mdav" in line
    assert _run(df, monkeypatch, onehot.WIDE_ONEHOT).labels.shape == (len(df),)


def test_the_command_line_on_codes_and_its_refusal(cli, tmp_path, monkeypatch):
    """microagg protect: many levels run (exit 0, the published file read back and audited on
    the codes); a method that needs the dense matrix beyond its bound is one error line, exit 2,
    nothing written."""
    source = tmp_path / "levels.csv"
    _levels_frame(9, 300).to_csv(source, index=False)
    out = tmp_path / "out.csv"
    args = [source, "-o", out, "-k", "3", "--columns", "x,c", "--categorical", "c", "-q"]
    monkeypatch.setattr(onehot, "DENSE_MAX_CELLS", 1000)  # nothing of the default run densifies
    done = cli("protect", *args)
    assert done.returncode == 0, done.stderr
    assert out.exists()
    refused = tmp_path / "refused.csv"
    done = cli("protect", *args[:1], "-o", refused, *args[3:], "--method", "vmdav")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("microagg: error: categorical column c has")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [source.name, out.name, f"{out.name}.manifest.json"]
    )
