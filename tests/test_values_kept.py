"""A value is changed only when asked (issue 57, part 1): CSV numbers follow the column's decimal
mark and thousands separator, a column whose marks disagree is refused, keys and every non-QI
column keep their text (CSV) or their type (typed formats, frames) apart from suppressed values."""

from __future__ import annotations

import numpy as np
import pytest

import microagg
from microagg import io
from microagg.cli import main


def _comma(x: float, places: int) -> str:
    return f"{x:.{places}f}".replace(".", ",")


def _protect(capsys, *args):
    capsys.readouterr()
    code = main(["protect", *map(str, args), "-q"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_points_between_thousands_under_a_given_decimal_comma_are_thousands(tmp_path, capsys):
    rng = np.random.default_rng(5)
    big = rng.integers(10_000, 999_999, 30)
    small = rng.normal(size=30).round(2)
    grouped = [f"{v:,}".replace(",", ".") for v in big.tolist()]  # 95.250, 123.456
    src = tmp_path / "in.csv"
    src.write_text(
        "income;x;id\n"
        + "".join(f"{g};{_comma(s, 2)};r{i}\n" for i, (g, s) in enumerate(zip(grouped, small)))
    )
    for given in (",", None):  # given, or detected: the decimal commas of x say it
        frame = io.read(src, decimal=given).frame
        assert frame["income"].tolist() == pytest.approx(big.astype(float).tolist())
        assert frame["x"].tolist() == pytest.approx(small.tolist())
    out = tmp_path / "out.csv"
    code, _, err = _protect(capsys, src, "-o", out, "-k", "3", "--decimal", ",")
    assert code == 0, err
    published = io.read(out, decimal=",").frame
    # group means keep each group's total: the published incomes add up to the true ones
    assert published["income"].sum() == pytest.approx(float(big.sum()))


def test_a_column_whose_decimal_marks_disagree_is_refused_before_anything_is_written(
    tmp_path, capsys
):
    rng = np.random.default_rng(6)
    values = [_comma(v, 2) for v in rng.normal(size=200)] + [
        f"{v:.1f}" for v in rng.normal(size=40)
    ]
    src = tmp_path / "in.csv"
    src.write_text(
        "x;y\n" + "".join(f"{v};{_comma(w, 2)}\n" for v, w in zip(values, rng.normal(size=240)))
    )
    for given in ([], ["--decimal", ","]):
        code, _, err = _protect(capsys, src, "-o", tmp_path / "out.csv", "-k", "3", *given)
        assert code == 2 and err.count("\n") == 1
        assert "column x mixes decimal marks" in err and "in.csv" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_a_column_whose_marks_disagree_is_published_unchanged_when_it_is_no_quasi_identifier(
    tmp_path, capsys
):
    rng = np.random.default_rng(8)
    notes = [_comma(v, 1) for v in rng.normal(size=30)] + [f"{v:.2f}" for v in rng.normal(size=30)]
    rng.shuffle(notes)
    src = tmp_path / "in.csv"
    src.write_text(
        "note;x;y\n"
        + "".join(
            f"{n};{_comma(a, 2)};{_comma(b, 2)}\n"
            for n, a, b in zip(notes, rng.normal(size=60), rng.normal(size=60))
        )
    )
    out = tmp_path / "out.csv"
    code, _, err = _protect(capsys, src, "-o", out, "-k", "3", "--columns", "x,y", "--decimal", ",")
    assert code == 0, err
    published = [line.split(";")[0] for line in out.read_text().splitlines()[1:]]
    assert published == notes  # the text as written, each mark as it was
    # named as a quasi-identifier, it is refused in one line, and nothing is written
    again = tmp_path / "again.csv"
    code, _, err = _protect(
        capsys, src, "-o", again, "-k", "3", "--columns", "x,note", "--decimal", ","
    )
    assert code == 2 and err.count("\n") == 1
    assert "column note mixes decimal marks" in err and "in.csv" in err
    assert not again.exists()


@pytest.mark.parametrize("decimal", [",", "."])
def test_keys_keep_their_text_apart_from_suppressed_values(tmp_path, capsys, decimal):
    rng = np.random.default_rng(7)
    n = 48
    mark = (lambda s: s.replace(".", ",")) if decimal == "," else (lambda s: s)
    sep = ";" if decimal == "," else ","
    keys = [mark(t) for t in ("37.50", "8", "4", "2.5")]
    rows = [
        sep.join(
            [mark(f"{rng.normal():.3f}"), mark(f"{rng.normal():.3f}"), keys[i % 4], str(i % 2)]
        )
        for i in range(n)
    ]
    rows[-1] = sep.join(rows[-1].split(sep)[:2] + [mark("99.25"), "1"])  # a key value alone
    src = tmp_path / "in.csv"
    src.write_text(sep.join(["x", "y", "key", "stratum"]) + "\n" + "\n".join(rows) + "\n")
    out = tmp_path / "out.csv"
    code, _, err = _protect(
        capsys,
        src,
        "-o",
        out,
        "-k",
        "3",
        "--columns",
        "x,y",
        "--keys",
        "key",
        "--on-keys-below-k",
        "suppress",
        "--decimal",
        decimal,
    )
    assert code == 0, err
    before = [r.split(sep)[2:] for r in src.read_text().splitlines()[1:]]
    after = [r.split(sep)[2:] for r in out.read_text().splitlines()[1:]]
    suppressed = [a[0] == "" for a in after]
    assert any(suppressed) and not all(suppressed)
    for b, a, gone in zip(before, after, suppressed):
        assert a[1] == b[1]  # the stratum, never asked to change
        assert gone or a[0] == b[0]  # '37,50' stays '37,50', '8' stays '8', '4' stays '4'


def test_an_int16_parquet_key_stays_int16_with_suppressed_values(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rng = np.random.default_rng(8)
    n = 40
    table = pa.table(
        {
            "x": rng.normal(size=n),
            "y": rng.normal(size=n),
            "key": pa.array(rng.integers(1, 25, n).astype(np.int16)),
            "cat": pa.array(rng.choice(["a", "b", "c"], n)).dictionary_encode(),
        }
    )
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, src)
    res = microagg.protect(
        src, out, k=3, columns=["x", "y", "cat"], keys=["key"], on_keys_below_k="suppress"
    )
    assert res.suppression.per_key["key"] > 0
    back = pq.read_table(out)
    assert back.schema.field("key").type == pa.int16()
    assert back.schema.field("cat").type == table.schema.field("cat").type
    kept = back.column("key").to_pylist()
    original = table.column("key").to_pylist()
    assert all(k is None or k == o for k, o in zip(kept, original))


def test_frames_keep_a_dictionarys_index_type_and_an_integer_keys_type():
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(9)
    n = 40
    table = pa.table(
        {
            "x": rng.normal(size=n),
            "y": rng.normal(size=n),
            "key": pa.array(rng.integers(1, 25, n).astype(np.int16)),
            "cat": pa.array(rng.choice(["a", "b", "c"], n)).dictionary_encode(),
        }
    )
    assert table.schema.field("cat").type.index_type == pa.int32()
    res = microagg.microaggregate(
        table, k=3, columns=["x", "y", "cat"], keys=["key"], on_keys_below_k="suppress"
    )
    assert res.data.schema.field("cat").type == table.schema.field("cat").type
    assert res.data.schema.field("key").type == pa.int16()
    assert res.data.column("key").null_count > 0


@pytest.mark.parametrize(
    "dtype, nullable", [("int16", "Int16"), ("uint8", "UInt8"), ("int64", "Int64")]
)
def test_a_pandas_integer_key_with_suppressed_values_keeps_its_width(dtype, nullable):
    import pandas as pd

    rng = np.random.default_rng(10)
    n = 40
    df = pd.DataFrame({"x": rng.normal(size=n), "key": rng.integers(1, 25, n).astype(dtype)})
    res = microagg.microaggregate(df, k=3, columns=["x"], keys=["key"], on_keys_below_k="suppress")
    assert res.data["key"].isna().any()
    assert res.data["key"].dtype == pd.api.types.pandas_dtype(nullable)


@pytest.mark.parametrize("out_suffix", [".dta", ".csv", ".parquet"])
def test_a_stata_int16_key_with_suppressed_values_stays_an_integer(tmp_path, out_suffix):
    import pandas as pd

    rng = np.random.default_rng(11)
    n = 40
    df = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "y": rng.normal(size=n),
            "key": rng.integers(1, 25, n).astype("int16"),
        }
    )
    src, out = tmp_path / "in.dta", tmp_path / f"out{out_suffix}"
    df.to_stata(src, write_index=False)
    res = microagg.protect(
        src, out, k=3, columns=["x", "y"], keys=["key"], on_keys_below_k="suppress"
    )
    assert res.suppression.per_key["key"] > 0
    if out_suffix == ".dta":
        import pyreadstat

        _, meta = pyreadstat.read_dta(out)
        assert meta.readstat_variable_types["key"] == "int16"
    elif out_suffix == ".csv":
        texts = [r.split(",")[2] for r in out.read_text().splitlines()[1:]]
        assert all(t == "" or t.isdigit() for t in texts)  # '6', never '6.0'
    else:
        import pyarrow.parquet as pq

        assert str(pq.read_schema(out).field("key").type) == "int16"
