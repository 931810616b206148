"""The out-of-core mode (outofcore.py, --out-of-core): every record out, in order, through the
pipeline's homes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import _lines, _records
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg
from microagg.blocks import SLAB_CUT_WINDOW, _block_seed, partitioned_labels
from microagg.cli import main
from microagg.errors import ParameterError
from microagg.labels import group_sizes, sse
from microagg.outofcore import _slab_bounds
from microagg.publication import publish_folder


def test_out_of_core_with_strata(tmp_path):
    rng = np.random.default_rng(5)
    df = pd.DataFrame(rng.normal(size=(2000, 3)), columns=list("abc"))
    df["region"] = rng.choice(["n", "s"], size=2000)
    src = tmp_path / "in.parquet"
    df.to_parquet(src)
    calls = []
    options = dict(
        k=3,
        block_size=100,
        columns=list("abc"),
        strata="region",
        scheduler="synchronous",
        time_limit=60,
    )
    res = publish_folder(
        src,
        tmp_path / "out",
        options,
        {},
        chunk_rows=700,
        slab_blocks=2,
        progress=lambda *a: calls.append(a),
    )
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == 2000 and res.group_sizes.min() >= 3 and res.file.k_anonymous
    assert (out["region"] == df["region"]).all()
    keys = out[list("abc")].round(12).astype(str).agg("|".join, axis=1)
    for _, rows in out.groupby(keys):
        assert rows["region"].nunique() == 1 and len(rows) >= 3
    assert any(c[0] == "slabs" for c in calls)


def test_out_of_core_rejects_k_1_before_reading(tmp_path):
    with pytest.raises(ParameterError, match="k must be an integer >= 2"):
        microagg.protect(
            tmp_path / "missing.parquet", tmp_path / "out", k=1, block_size=10, out_of_core=True
        )


def test_out_of_core_csv_keeps_the_text_of_other_columns(tmp_path):
    """--out-of-core read a CSV with pandas' type guessing: the zip code 00007 came out as the
    integer 7 and the distinct texts NA, null and '' all became one missing value."""
    rng = np.random.default_rng(0)
    notes = ["NA", "null", "", "x"]
    src = tmp_path / "in.csv"
    src.write_text(
        "zip,note,a,b\n"
        + _lines(40, lambda i: f"{i:05d},{notes[i % 4]},{rng.normal():.3f},{rng.normal():.3f}\n")
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(out),
                "-k",
                "3",
                "-q",
                "--out-of-core",
                "--block-size",
                "10",
                "--columns",
                "a,b",
            ]
        )
        == 0
    )
    res = pd.read_parquet(out)
    assert res["zip"].tolist() == [f"{i:05d}" for i in range(40)]
    assert res["note"].tolist() == [notes[i % 4] for i in range(40)]
    assert res[["a", "b"]].dtypes.tolist() == [np.float64, np.float64]


def test_out_of_core_default_columns_follow_the_csv_rules(tmp_path, capsys):
    """The default QIs of --out-of-core come from the same column rules as in memory: a code with
    leading zeros is not a QI (it was read as an integer and averaged)."""
    rng = np.random.default_rng(1)
    src = tmp_path / "in.csv"
    src.write_text(
        "zip,a,b\n"
        + _lines(30, lambda i: f"{(i * 7) % 30 + 1:05d},{rng.normal():.3f},{rng.normal():.3f}\n")
    )
    out = tmp_path / "out"
    assert (
        main(
            ["protect", str(src), "-o", str(out), "-k", "3", "--out-of-core", "--block-size", "10"]
        )
        == 0
    )
    res = pd.read_parquet(out)
    assert res["zip"].tolist() == [f"{(i * 7) % 30 + 1:05d}" for i in range(30)]
    assert "zip" in capsys.readouterr().err  # the warning names it (-q would print only the count)


def test_out_of_core_csv_with_semicolons(tmp_path):
    """A ';'-separated CSV was read as one text column: 'no numeric columns'."""
    rng = np.random.default_rng(2)
    src = tmp_path / "in.csv"
    src.write_text(
        "a;b;c\n" + _lines(30, lambda i: f"{rng.normal():.3f};{rng.normal():.3f};t{i}\n")
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(out),
                "-k",
                "3",
                "-q",
                "--out-of-core",
                "--block-size",
                "10",
            ]
        )
        == 0
    )
    res = pd.read_parquet(out)
    assert list(res.columns) == ["a", "b", "c"] and res["c"].tolist() == [
        f"t{i}" for i in range(30)
    ]


def test_out_of_core_csv_in_cp1252(tmp_path):
    """The in-memory reader detects cp1252 / latin-1; --out-of-core read every CSV as UTF-8 and
    failed on an accented header ('utf-8' codec can't decode byte 0xe2)."""
    src = tmp_path / "in.csv"
    src.write_bytes(
        "âge;x;région\n".encode("cp1252")
        + b"".join(f"{i};{i * 7 % 5};r\xe9g{i % 2}\n".encode("latin-1") for i in range(12))
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(out),
                "-k",
                "3",
                "-q",
                "--out-of-core",
                "--block-size",
                "4",
                "--columns",
                "âge,x",
            ]
        )
        == 0
    )
    res = pd.read_parquet(out)
    assert list(res.columns) == ["âge", "x", "région"]
    assert res["région"].tolist() == [f"rég{i % 2}" for i in range(12)]


def test_out_of_core_writes_every_row_in_order_to_a_new_folder(tmp_path, capsys):
    src = tmp_path / "in.parquet"
    df = microagg.datasets.load("tarragona").copy()
    df["name"] = [f"firm{i}" for i in range(len(df))]
    df.to_parquet(src)
    out = tmp_path / "protected"
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(out),
                "-k",
                "3",
                "--out-of-core",
                "--block-size",
                "300",
                "--scheduler",
                "synchronous",
            ]
        )
        == 0
    )
    res = pd.read_parquet(out)
    assert len(res) == len(df) and (res["name"].to_numpy() == df["name"].to_numpy()).all()
    assert microagg.measures.smallest_group(res[df.columns[:13]]) >= 3
    capsys.readouterr()
    assert (
        main(
            ["protect", str(src), "-o", str(out), "-k", "3", "--out-of-core", "--block-size", "300"]
        )
        == 2
    )
    assert "already exists" in capsys.readouterr().err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".protected.")]


@settings(max_examples=50, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(1, 2000),
    st.integers(1, 3),
    st.integers(1, 50),
    st.integers(0, 6),
    st.booleans(),
)
def test_slabs_hold_every_record_once_and_enough_of_them(seed, n, d, min_size, levels, dup):
    if n < min_size:
        return
    P = _records(seed, n, d, dup).astype(np.float32)
    order, bounds, _cuts = _slab_bounds(P, min_size, levels)
    assert np.array_equal(np.sort(order), np.arange(n))
    sizes = np.diff(bounds)
    assert bounds[0] == 0 and bounds[-1] == n and len(sizes) <= 2**levels
    assert sizes.min() >= min_size
    if (
        levels and n * (0.5 - SLAB_CUT_WINDOW) ** (levels - 1) >= 2 * min_size
    ):  # every slab large enough to cut
        assert len(sizes) == 2**levels


def _write_input(tmp_path, df, fmt):
    if fmt == "parquet":
        src = tmp_path / "in"
        src.mkdir()
        df.iloc[:1700].to_parquet(src / "part-0.parquet")
        df.iloc[1700:].to_parquet(src / "part-1.parquet")
    else:
        src = tmp_path / "in.csv"
        df.to_csv(src, index=False)
    return src


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_out_of_core(tmp_path, fmt):
    rng = np.random.default_rng(5)
    n = 3000
    df = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    df["name"] = [f"r{i}" for i in range(n)]
    df["a"] = np.round(df["a"], 1)  # ties
    src = _write_input(tmp_path, df, fmt)
    out = tmp_path / "out"
    published = publish_folder(
        src,
        out,
        dict(k=3, columns=["a", "b", "c"], block_size=200),
        {},
        chunk_rows=700,
        slab_blocks=3,
    )
    summary = published.method_facts["out_of_core"]
    res = pd.concat([pd.read_parquet(f) for f in sorted(published.data.files)], ignore_index=True)
    assert len(res) == n
    assert list(res["name"]) == list(df["name"])  # every record, in order, non-QI unchanged
    sizes = res.groupby(["a", "b", "c"]).size()
    assert sizes.min() >= 3
    assert published.group_sizes.min() >= 3 and len(published.labels) == n
    assert summary["slabs"] > 1 and published.file.smallest_frequency >= 3
    assert 0 < published.information_loss < 100
    # group means preserve the column means
    assert np.allclose(res[["a", "b", "c"]].mean(), df[["a", "b", "c"]].mean())


def test_out_of_core_one_slab_is_the_in_memory_algorithm(tmp_path):
    rng = np.random.default_rng(6)
    df = pd.DataFrame(rng.normal(size=(2500, 3)) * [1, 5, 20], columns=["a", "b", "c"])
    src = _write_input(tmp_path, df, "parquet")
    res = publish_folder(
        src,
        tmp_path / "out",
        dict(k=3, block_size=200, seed=4),
        {},
        chunk_rows=600,
        slab_blocks=100,
    )
    assert res.method_facts["out_of_core"]["slabs"] == 1
    X = df.to_numpy()
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    labels = partitioned_labels(
        Z, 3, "mdav", block_size=200, seed=_block_seed(4, 0), scheduler="synchronous"
    )
    assert len(res.group_sizes) == len(group_sizes(labels))
    assert res.sse == pytest.approx(sse(Z, labels), rel=1e-9)


def test_out_of_core_bad_input(tmp_path):
    with pytest.raises(ValueError):
        microagg.protect(
            tmp_path / "missing.parquet", tmp_path / "o", k=3, block_size=10, out_of_core=True
        )
    src = tmp_path / "in.csv"
    pd.DataFrame({"a": np.arange(50.0), "b": np.arange(50.0) % 7}).to_csv(src, index=False)
    for method, params, message in (
        ("nosuch", {}, "unknown method"),
        ("individual-ranking", {}, "one group per attribute"),
        ("mdav", {"refine": 2}, "refine must be"),
        ("mdav", {"gamma": 0.2}, "no parameter gamma"),
    ):
        with pytest.raises(ValueError, match=message):
            microagg.protect(
                src, tmp_path / "o", k=3, block_size=10, method=method, out_of_core=True, **params
            )
