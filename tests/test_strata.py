"""Strata (strata.py and the pipeline's partition stage): groups never cross strata; small strata
reported or merged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import _strata_frame, make_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg import labels as label_stats
from microagg.errors import InputError
from microagg.labels import check_partition


def test_strata_keep_groups_inside_one_stratum():
    df = microagg.datasets.load("census").head(300).copy()
    df["sex"] = np.where(np.arange(300) % 3 == 0, "f", "m")
    res = microagg.microaggregate(df, k=3, strata="sex")
    for g in np.unique(res.labels):
        assert df.loc[res.labels == g, "sex"].nunique() == 1
    assert "sex" not in res.columns


def test_strata_with_blocks_never_cross_strata():
    rng = np.random.default_rng(4)
    df = pd.DataFrame(rng.normal(size=(900, 3)), columns=list("abc"))
    df["region"] = rng.choice(["n", "s", "e", "tiny"], p=[0.4, 0.3, 0.298, 0.002], size=900)
    res = microagg.microaggregate(
        df, k=3, columns=list("abc"), strata="region", block_size=100, merge_small_strata=True
    )
    check_partition(res.labels, 900, 3)
    merged = df["region"].to_numpy().copy()
    for m in res.extras.get("merged_strata", []):
        merged[merged == m["stratum"]] = m["merged_into"]
    for g in np.unique(res.labels):
        assert len(set(merged[res.labels == g])) == 1


def test_small_stratum_is_an_error_naming_it():
    df = _strata_frame()
    with pytest.raises(InputError, match=r"tiny \(2 records\).*merge_small_strata"):
        microagg.microaggregate(df, k=3, strata="region")


def test_small_stratum_merged_with_the_nearest_stratum():
    df = _strata_frame()
    res = microagg.microaggregate(df, k=3, strata="region", merge_small_strata=True)
    assert res.extras["merged_strata"] == [{"stratum": "tiny", "size": 2, "merged_into": "a"}]
    merged = df["region"].replace({"tiny": "a"})
    for g in np.unique(res.labels):
        assert merged[res.labels == g].nunique() == 1
    assert "merged into a" in res.summary()


@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(6, 120),
    k=st.integers(2, 4),
    s=st.integers(1, 6),
    method=st.sampled_from(["mdav", "auto", "individual-ranking"]),
)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_strata_keep_every_group_inside_one_merged_stratum(seed, n, k, s, method):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(make_data(seed, n, 3), columns=["a", "b", "c"])
    df["s1"] = rng.integers(0, s, n).astype(str)
    df["s2"] = rng.integers(0, 2, n)
    params = {"portfolio": ["mdav", "tsp-mhm"]} if method == "auto" else {}
    res = microagg.microaggregate(
        df,
        k=k,
        method=method,
        strata=["s1", "s2"],
        merge_small_strata=True,
        columns=["a", "b", "c"],
        continuous=["a", "b", "c"],
        time_limit=5,
        **params,
    )
    # (make_data's rounded columns look like integer codes: declared continuous, they are averaged)
    # map every original stratum to the merged stratum it ended in
    final = {}
    for entry in res.extras["strata"]:
        for part in entry["members"]:
            final[part] = entry["stratum"]
    key = "s1=" + df["s1"].astype(str) + ", s2=" + df["s2"].astype(str)
    merged = key.map(final)
    assert merged.notna().all()
    labels = res.labels if res.labels.ndim == 2 else res.labels[:, None]
    for j in range(labels.shape[1]):
        for g in np.unique(labels[:, j]):
            assert merged[labels[:, j] == g].nunique() == 1
        assert label_stats.group_sizes(labels[:, j]).min() >= k
    assert sum(e["records"] for e in res.extras["strata"]) == n


def test_strata_with_auto_report_each_portfolio():
    df = _strata_frame()
    res = microagg.microaggregate(
        df, k=3, method="auto", strata="region", merge_small_strata=True, portfolio=["mdav", "md"]
    )
    assert all("portfolio" in e["extras"] for e in res.extras["strata"])
    assert res.summary().count("auto: winner") == 2


def test_merge_small_strata_needs_strata_and_a_bool():
    df = _strata_frame()
    with pytest.raises(InputError, match="needs strata"):
        microagg.microaggregate(df.drop(columns="region"), k=3, merge_small_strata=True)
    with pytest.raises(InputError, match="true or false"):
        microagg.microaggregate(df, k=3, strata="region", merge_small_strata="yes")


def test_start_labels_are_cut_per_stratum():
    """init= labels with strata: each stratum's search starts from its own records' labels."""
    df = microagg.datasets.load("census")
    df["half"] = np.arange(len(df)) % 2
    start = microagg.microaggregate(df, k=3, method="mdav", strata="half")
    more = microagg.microaggregate(df, k=3, method="icsm", strata="half", init=start.labels)
    assert more.sse <= start.sse + 1e-9
    halves = df["half"].to_numpy()
    assert all(len(set(halves[more.labels == g])) == 1 for g in np.unique(more.labels))
    with pytest.raises(microagg.ParameterError, match="partitioned mode"):
        microagg.microaggregate(df, k=3, method="icsm", block_size=300, init=start.labels)


def test_given_labels_with_strata_measure_each_stratum_without_a_warning():
    """labels= with strata: each stratum's SSE from its own groups (the given labels number them
    across strata), equal to the run's, and no 0/0 warning from the other strata's numbers."""
    import warnings

    df = microagg.datasets.load("census")
    df["half"] = np.arange(len(df)) % 2
    first = microagg.microaggregate(df, k=3, method="mdav", strata="half")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        again = microagg.microaggregate(df, k=3, strata="half", labels=first.labels)
    assert np.array_equal(again.labels, first.labels)
    assert again.sse == pytest.approx(first.sse, rel=1e-12)


# --- one home for stratum keys and merges (strata.StratumIndex)
# ---------------------------------------


def test_stratum_codes_are_the_same_whatever_the_chunking():
    """The out-of-core mode encodes strata chunk by chunk: the codes, names, counts and sums are
    those of the whole frame at once."""
    from microagg.strata import StratumIndex

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"r": rng.choice(["n", "s", "e", None], 500), "u": rng.integers(0, 3, 500)})
    Z = rng.normal(size=(500, 2))
    whole = StratumIndex(["r", "u"])
    codes = whole.encode(df, Z)
    chunked = StratumIndex(["r", "u"])
    parts = [chunked.encode(df.iloc[a : a + 37], Z[a : a + 37]) for a in range(0, 500, 37)]
    assert np.array_equal(np.concatenate(parts), codes)
    assert chunked.names == whole.names and "r=<missing>, u=0" in whole.names
    assert np.array_equal(chunked.counts, whole.counts)
    np.testing.assert_allclose(chunked.sums, whole.sums)


def test_out_of_core_merges_small_strata_as_the_in_memory_pipeline(tmp_path):
    """Issue 32: the out-of-core mode merged small strata on raw-unit centroids, the in-memory
    pipeline on the z-scores the method sees, so the two could merge differently. Both now merge
    through StratumIndex on z-scores: the same merges."""
    rng = np.random.default_rng(8)
    df = pd.DataFrame(rng.normal(size=(300, 2)) * [1.0, 1000.0], columns=["a", "b"])
    df["s"] = rng.choice(["p", "q", "r"], 300)
    df.loc[:1, "s"] = "tiny"  # 2 records < k
    df.loc[0, ["a", "b"]] = [3.0, -2500.0]
    df.loc[1, ["a", "b"]] = [3.2, -2400.0]
    src = tmp_path / "in.parquet"
    df.to_parquet(src)
    memory = microagg.microaggregate(
        df, k=3, columns=["a", "b"], strata="s", merge_small_strata=True
    )
    res = microagg.protect(
        src,
        tmp_path / "out",
        k=3,
        columns=["a", "b"],
        strata="s",
        block_size=50,
        merge_small_strata=True,
        out_of_core=True,
    )
    assert (
        res.method_facts["out_of_core"]["merged_strata"]
        == memory.extras["merged_strata"]
        == list(memory.strata.merges)
    )
