"""The column rules (preprocess.py): which columns are quasi-identifiers; none escapes silently."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import one_error_line

import microagg
from microagg import io
from microagg.cli import main
from microagg.columns import quasi_identifiers, select_columns
from microagg.errors import InputError


@pytest.mark.parametrize(
    "cells",
    [
        [
            '"1,234"',
            '"12,500"',
            '"3,001"',
            '"45,000"',
            '"2,100"',
            '"9,999"',
        ],  # thousands separators
        ["\u22125", "\u221212", "3", "\u22127", "8", "\u22121"],  # the unicode minus sign
        ["1 234", "12 500", "3 001", "45 000", "2 100", "9 999"],  # spaces between thousands
    ],
)
def test_numbers_in_another_notation_do_not_escape_silently(tmp_path, capsys, cells):
    """A column of numbers written with thousands separators or a unicode minus was read as text
    and left unprotected with no word but its name in the 'unchanged' list."""
    src = tmp_path / "in.csv"
    src.write_text(
        "income,a,b\n" + "".join(f"{c},{i % 3},{(i * 5) % 7}\n" for i, c in enumerate(cells))
    )
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "2", "-q"]) == 0
    err = capsys.readouterr().err
    assert "warning: column income" in err and "not protected" in err
    assert (tmp_path / "out.csv").read_text().splitlines()[1].startswith(cells[0] + ",")


def test_stray_tokens_name_the_column_unless_the_qis_are_named(tmp_path, capsys):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text(
        "a,b,c\n" + "".join(f"{i % 5},{i * i},{'-' if i == 4 else i % 7}\n" for i in range(12))
    )
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q"]) == 2
    assert "column c is numeric except for '-' (1x)" in one_error_line(capsys)
    # declared missing: accepted, and written back as it was read
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--missing", "-"]) == 0
    assert out.read_text().splitlines()[5].endswith(",-")
    capsys.readouterr()  # that run's warnings: b (a square of the row number) left out as an id
    out.unlink()
    for side in out.parent.glob("out.csv.*"):
        side.unlink()
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--columns", "a,c"]) == 2
    assert "column c is not numeric: row 5 holds '-'" in one_error_line(capsys)
    assert not out.exists()
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--columns", "a,b"]) == 0
    assert out.read_text().splitlines()[5].endswith(",-")


def test_numeric_column_with_stray_tokens_is_an_error_naming_them(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text(
        "a,b\n" + "".join(f"{i},{v}\n" for i, v in enumerate(["1", "-", "3", "n/a", "5", "6"]))
    )
    frame = io.read(src).frame
    with pytest.raises(
        InputError, match=r"column b is numeric except for '-' \(1x\), 'n/a' \(1x\)"
    ):
        select_columns(frame)
    assert select_columns(frame, ["a"]) == ["a"]  # named QIs: b is simply not one
    with pytest.raises(InputError, match=r"column b is not numeric: row 2 holds '-'"):
        select_columns(frame, ["a", "b"])
    declared = io.read(src, missing=("-", "n/a")).frame
    assert declared["b"].isna().sum() == 2
    with pytest.raises(
        InputError,
        match=r"missing or infinite values in quasi-identifier column\(s\): b \(2 rows\)",
    ):
        quasi_identifiers(declared, select_columns(declared))
    kept = quasi_identifiers(declared, select_columns(declared), allow_missing=True)
    assert np.isnan(kept).sum() == 2  # the pipeline keeps them missing


def test_identifier_columns_are_never_default_qis_without_a_warning():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "person_id": rng.permutation(50) + 1000,
            "row": np.arange(50),
            "income": rng.normal(size=50),
            "UTILITYID": rng.integers(0, 500, 50),
        }
    )
    with pytest.warns(
        UserWarning
    ) as caught:  # one per column; pytest re-emits those a match= misses
        cols = select_columns(df)
    assert cols == [
        "income"
    ]  # eia's utility id (a name in capitals ending in ID) is an identifier (issue 33)
    warned = [str(w.message) for w in caught]
    # one line per rule: person_id by name, row as a running number, UTILITYID by name
    assert [m for m in warned if m.startswith("not protected, identifiers")] == [
        "not protected, identifiers (by name, or numbering the records): person_id, row, UTILITYID"
        " (declare: --columns to use them as quasi-identifiers; or remove before publishing)"
    ]
    assert select_columns(df, None, continuous=["UTILITYID"]) == ["income", "UTILITYID"]
    assert select_columns(df, ["person_id", "income"]) == ["person_id", "income"]


def test_category_codes_and_weights_are_never_default_qis_without_a_warning():
    # the household survey: its integer codes (sex, roof, ...) and weights would be averaged
    df = pd.read_csv(microagg.datasets.path("testdata"))
    with pytest.warns(UserWarning) as caught:
        cols = select_columns(df)
    assert cols == [
        "expend",
        "income",
        "savings",
    ]  # age repeats (4580 records, ~90 values): codes or a discrete quantity
    warned = {str(w.message).split(":")[0]: str(w.message) for w in caught}
    few = warned["not protected, category codes (fewer than 20 distinct integers)"]
    for c in ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"):
        assert c in few
    assert "age" in warned["not protected, repeating integers (codes, or a discrete quantity)"]
    weights = "not protected, survey weights (by name, or constant within households)"
    assert "sampling_weight, household_weights" in warned[weights]
    assert (
        "ori_hid"
        in warned["not protected, household ids (by name, or records grouped as households)"]
    )
    assert len(caught) == len(warned)  # one warning per rule
    assert select_columns(df, ["sex", "income"]) == ["sex", "income"]  # named: averaged as asked
    # not codes: fractions, many values, or too few records to tell
    rng = np.random.default_rng(1)
    other = pd.DataFrame(
        {
            "share": rng.integers(0, 4, 60) / 4.0,
            "rooms": rng.integers(1, 40, 60),
            "AFNLWGT": rng.normal(size=60),
        }
    )
    assert select_columns(other) == ["share", "rooms", "AFNLWGT"]
    assert select_columns(pd.DataFrame({"sex": [1, 2] * 10, "x": np.arange(20.0) ** 2})) == [
        "sex",
        "x",
    ]


def test_integers_beyond_2_53_are_an_error_not_a_constant():
    df = pd.DataFrame(
        {"a": np.array([2**60, 2**60 + 1, 2**60 + 2, 7], dtype=np.int64), "b": [1.0, 2, 3, 4]}
    )
    with pytest.raises(InputError, match="beyond 2\\^53"):
        quasi_identifiers(df, ["a", "b"])


def test_missing_tokens_in_the_column_rules():
    df = pd.DataFrame(
        {
            "a": [1, 2, "-", 4, 5.5, 6],
            "b": np.arange(6.0),
            "note": ["n/a", "x", "", "NA", "y", "-"],
        },
        dtype=object,
    ).astype({"b": float})
    with pytest.raises(InputError, match="column a is numeric except for '-'"):
        select_columns(df)
    assert select_columns(df, missing=["-"]) == ["a", "b"]
    with pytest.raises(InputError, match=r"a \(1 rows\)"):
        quasi_identifiers(df, ["a", "b"], missing=["-"])


def test_duplicated_numeric_columns_left_out_by_default_are_named(tmp_path, capsys):
    """Issue 31: with duplicate column names and default columns, the duplicated numeric columns
    were left unprotected without a word; a warning now names them (naming one stays an error)."""
    from microagg.cli import main

    src = tmp_path / "in.csv"
    src.write_text("x,x,v,w\n" + "".join(f"{i},{2 * i},{i * 3.5},{i % 7}.5\n" for i in range(50)))
    assert main(["protect", str(src), "-o", str(tmp_path / "out.csv"), "-k", "3", "-q"]) == 0
    err = capsys.readouterr().err
    warned = [ln for ln in err.splitlines() if "'x'" in ln]
    assert len(warned) == 1 and "occur more than once" in warned[0] and "not protected" in warned[0]


def _free1_like(n=4000, seed=43):
    """A survey shaped like sdcMicro's free1 (its codes are not shipped): integer codes under
    concatenated capital names and in another language, amounts in whole units, a weight."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "REGION": rng.integers(1, 60, n),
            "SEX": rng.integers(1, 3, n),
            "AGE": rng.integers(15, 95, n),
            "COMPCODE": rng.choice(np.arange(10, 99, 1.5).astype(int)[:57], n),
            "OCCUCODE": rng.choice(np.arange(100, 999, 4)[:226], n),
            "HHSIZE": rng.integers(1, 12, n),
            "GEMEINDE": rng.choice(np.arange(1001, 1250), n),  # municipality codes, in German
            "INCOME": rng.lognormal(10, 1, n).round(),
            "ASSETS": rng.lognormal(11, 1.5, n).round(),
            "WEIGHT": rng.uniform(50, 300, n).round(1),
        }
    )


@pytest.mark.parametrize("fmt", ["csv", "dta", "sav", "app"])
def test_code_columns_are_never_averaged_by_default(tmp_path, fmt):
    df = _free1_like()
    codes = ["REGION", "SEX", "AGE", "COMPCODE", "OCCUCODE", "HHSIZE", "GEMEINDE"]
    if fmt == "app":
        from microagg.app.column_profile import profile

        suggested = [p.name for p in profile(df) if p.suggested]
        assert suggested == ["INCOME", "ASSETS"]
        return
    path = tmp_path / f"in.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    elif fmt == "dta":
        df.to_stata(path, write_index=False)
    else:
        import pyreadstat

        pyreadstat.write_sav(df, str(path))
    with pytest.warns(UserWarning) as caught:
        res = microagg.microaggregate(path, k=3, audit=False)
    assert res.columns == ["INCOME", "ASSETS"]
    warned = " ".join(str(w.message) for w in caught)
    for c in codes:
        assert c in warned
        assert (res.data[c].to_numpy() == df[c].to_numpy()).all()
    assert len([w for w in caught if str(w.message).startswith("not protected, ")]) <= 4
