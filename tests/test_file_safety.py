"""Issue 33: the published file is safe as a whole: key variables (QIs + strata) k-anonymous on the
file as its format's own library reads it back, merged strata recoded or suppressed, code columns
never averaged unless declared continuous, labelled QIs published as categories with their labels,
the row order shuffled on request, one audit everywhere (protect = evaluate with the manifest, to
the last digit), sdcMicro's names pointing to their equivalent."""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg.cli import main

FORMATS = (".csv", ".dta", ".sav", ".xlsx", ".parquet")


def _write_input(frame: pd.DataFrame, path, labels: dict) -> None:
    """``frame`` as a file of the format its suffix says, with value labels where the format
    has them."""
    suffix = path.suffix
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".dta":
        frame.to_stata(path, write_index=False, version=118, value_labels=labels)
    elif suffix == ".sav":
        import pyreadstat

        pyreadstat.write_sav(frame, str(path), variable_value_labels=labels)
    elif suffix == ".xlsx":
        frame.to_excel(path, index=False)
    else:
        frame.to_parquet(path, index=False)


def _read_back(path) -> pd.DataFrame:
    """The output as the format's own library reads it (no microagg code)."""
    suffix = path.suffix
    if suffix == ".csv":
        return pd.read_csv(path)
    if suffix == ".dta":
        return pd.read_stata(path, convert_categoricals=False)
    if suffix == ".sav":
        import pyreadstat

        return pyreadstat.read_sav(str(path))[0]
    if suffix == ".xlsx":
        return pd.read_excel(path)
    return pd.read_parquet(path)


def _smallest_combination(frame: pd.DataFrame, columns) -> int:
    """Records sharing the rarest combination of ``columns`` (a missing value is one value)."""
    keys = (
        frame[list(columns)].astype(object).where(frame[list(columns)].notna(), "<NA>").astype(str)
    )
    return int(keys.value_counts().min())


@st.composite
def _survey(draw):
    """A small mixed survey: two continuous QIs, a labelled code (a categorical QI when named), a
    region stratum with strata smaller than k, sampling weights and a text column."""
    n = draw(st.integers(12, 36))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    sizes = draw(st.lists(st.integers(1, 14), min_size=2, max_size=5))
    region = np.resize(np.repeat(np.arange(1, len(sizes) + 1), sizes), n)
    frame = pd.DataFrame(
        {
            "income": rng.lognormal(8, 1, n).round(2),
            "age": rng.integers(16, 90, n),
            "educ": rng.integers(1, 5, n),
            "region": region.astype(np.int64),
            "weight": rng.uniform(1.0, 400.0, n).round(3),
            "note": [f"r{i}" for i in rng.permutation(n)],
        }
    )
    return frame


@pytest.mark.parametrize("suffix", FORMATS)
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    frame=_survey(),
    k=st.integers(2, 4),
    how=st.sampled_from(["recode", "suppress"]),
    shuffle=st.booleans(),
)
def test_key_variables_are_k_anonymous_on_the_file_as_its_library_reads_it(
    tmp_path_factory, suffix, frame, k, how, shuffle
):
    """Property: whatever the strata sizes (merged when smaller than k), the labelled QI and the
    weights, every combination of the published QIs and stratum occurs at least k times in the file
    read back by the format's own library; the labelled code is published as its own codes (a
    category) with its labels kept; the shuffle keeps the multiset of non-QI rows."""
    if len(frame) < k:
        return
    folder = tmp_path_factory.mktemp("fmt")
    src, out = folder / f"in{suffix}", folder / f"out{suffix}"
    labels = {"educ": {1: "none", 2: "primary", 3: "secondary", 4: "tertiary"}}
    _write_input(frame, src, labels)
    args = [
        "protect",
        str(src),
        "-o",
        str(out),
        "-k",
        str(k),
        "-q",
        "--columns",
        "income,age,educ",
        "--strata",
        "region",
        "--merge-small-strata",
        "--merged-strata",
        how,
        "--sample-weight",
        "weight",
    ]
    if shuffle:
        args.append("--shuffle")
    if suffix not in (
        ".dta",
        ".sav",
    ):  # no value labels: a small file's codes are declared (few records
        args += [
            "--categorical",
            "educ",
        ]  # cannot tell codes from numbers); Stata / SPSS labels say it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args) == 0
    got = _read_back(out)
    assert len(got) == len(frame)
    assert _smallest_combination(got, ["income", "age", "educ", "region"]) >= k
    if suffix == ".csv":  # and as text, field by field
        text = pd.read_csv(out, dtype=str, keep_default_na=False)
        assert _smallest_combination(text, ["income", "age", "educ", "region"]) >= k
    assert set(got["educ"].dropna()) <= {1, 2, 3, 4}  # a category, never a mean
    if suffix == ".dta":
        with pd.io.stata.StataReader(out) as reader:
            assert reader.value_labels()["educ"] == labels["educ"]
    if suffix == ".sav":
        import pyreadstat

        assert (
            pyreadstat.read_sav(str(out), metadataonly=True)[1].variable_value_labels["educ"]
            == labels["educ"]
        )
    # every non-QI column other than the stratum comes out as it came, as a multiset of rows
    rest = ["weight", "note"]
    assert Counter(map(tuple, got[rest].astype(str).to_numpy().tolist())) == Counter(
        map(tuple, _read_back(src)[rest].astype(str).to_numpy().tolist())
    )
    manifest = json.loads((folder / f"out{suffix}.manifest.json").read_text())
    assert manifest["verified"]["k_anonymous"] and manifest["shuffled"] == shuffle


def test_merged_strata_are_recoded_suppressed_or_refused(tmp_path, capsys):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "x": np.r_[rng.normal(0, 1, 20), rng.normal(0.5, 1, 2), rng.normal(9, 1, 20)],
            "region": ["north"] * 20 + ["tiny"] * 2 + ["south"] * 20,
        }
    )
    res = microagg.microaggregate(df, k=3, strata="region", merge_small_strata=True)
    assert res.strata.published == "recode"
    (m,) = res.strata.mapping
    assert m["stratum"] == "tiny" and m["published_as"] in ("north", "south")
    assert set(res.data["region"]) == {"north", "south"} and "region" in res.changed_columns
    assert res.audit["key_records_below_k"] == 0
    assert f"stratum tiny: published as {m['published_as']}" in res.summary()
    sup = microagg.microaggregate(
        df, k=3, strata="region", merge_small_strata=True, merged_strata="suppress"
    )
    merged = sup.data["region"].isna()
    assert merged.sum() in (22,) and sup.audit["key_records_below_k"] == 0
    # unchanged when kept: what was wrong before (the stratum column published unchanged)
    from microagg.measures.records import key_frequencies

    assert (
        key_frequencies(res.data.assign(region=df["region"]), ["x", "region"], 3).records_below_k
        > 0
    )
    with pytest.raises(microagg.errors.InputError, match="refused"):
        microagg.microaggregate(
            df, k=3, strata="region", merge_small_strata=True, merged_strata="refuse"
        )
    with pytest.raises(microagg.errors.ParameterError, match="merge_small_strata"):
        microagg.microaggregate(df, k=3, strata="region", merged_strata="suppress")
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(tmp_path / "o.csv"),
                "-k",
                "3",
                "--strata",
                "region",
                "--merge-small-strata",
                "--merged-strata",
                "refuse",
                "-q",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refused" in err and not (tmp_path / "o.csv").exists()


def test_a_file_its_reader_groups_otherwise_is_not_written(tmp_path, capsys):
    """Hostile: '1' and '1.0' in a stratum column are one stratum for the run (numbers) but two for
    a reader of the text; the record written '1.0' would be alone with its group's values."""
    rng = np.random.default_rng(5)
    region = ["1"] * 15 + ["2"] * 15
    region[3] = "1.0"
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    rows = zip(rng.normal(size=30), rng.normal(size=30), region, strict=True)
    src.write_text("x,y,region\n" + "".join(f"{a:.4f},{b:.4f},{r}\n" for a, b, r in rows))
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--strata", "region"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not 3-anonymous" in err and "nothing was written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_out_of_core_recodes_merged_strata_too(tmp_path):
    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {
            "x": rng.normal(size=62),
            "y": rng.normal(size=62),
            "region": ["a"] * 30 + ["tiny"] * 2 + ["b"] * 30,
        }
    )
    src = tmp_path / "in.parquet"
    df.to_parquet(src, index=False)
    res = microagg.protect(
        src,
        tmp_path / "out",
        k=3,
        block_size=10,
        strata="region",
        merge_small_strata=True,
        scheduler="synchronous",
        out_of_core=True,
    )
    summary = res.method_facts["out_of_core"]
    got = pd.read_parquet(tmp_path / "out")
    assert "tiny" not in set(got["region"]) and summary["published_strata"][0]["stratum"] == "tiny"
    assert res.file.k_anonymous and "region" in res.changed_columns
    assert _smallest_combination(got, ["x", "y", "region"]) >= 3


# --- conservative roles --------------------------------------------------------------------------


def test_testdata_codes_are_never_averaged_by_default():
    df = pd.read_csv(
        microagg.datasets.path("testdata")
    )  # integer codes, as a user's CSV holds them
    with pytest.warns(UserWarning) as caught:
        res = microagg.microaggregate(df, k=3)
    assert res.columns == [
        "expend",
        "income",
        "savings",
    ]  # age: 4580 records on ~90 values, repeating (codes or a discrete quantity)
    warned = [str(w.message) for w in caught]
    assert (
        all(w.startswith("not protected, ") for w in warned) and len(warned) <= 5
    )  # one line per rule: household ids, weights, repeating integers, codes
    for c in (
        "urbrur",
        "roof",
        "walls",
        "water",
        "electcon",
        "relat",
        "sex",
        "hhcivil",
        "ori_hid",
        "age",
    ):
        assert any(re.search(rf"[:,] {c}\b", w) for w in warned), c
    for c in ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"):
        assert (res.data[c] == df[c]).all()


def test_named_codes_are_categories_unless_declared_continuous():
    df = pd.read_csv(microagg.datasets.path("testdata")).head(400)
    with pytest.warns(UserWarning, match="look like category codes"):
        res = microagg.microaggregate(df, k=3, columns=["income", "sex", "water"])
    assert res.publication.kinds == {"income": "continuous", "sex": "nominal", "water": "nominal"}
    assert set(res.data["sex"]) <= {1, 2} and set(res.data["water"]) <= set(df["water"])
    averaged = microagg.microaggregate(df, k=3, columns=["income", "sex"], continuous=["sex"])
    assert averaged.publication.kinds["sex"] == "continuous" and not set(averaged.data["sex"]) <= {
        1,
        2,
    }
    with pytest.raises(microagg.errors.ParameterError, match="both continuous and categorical"):
        microagg.microaggregate(df, k=3, columns=["sex"], continuous=["sex"], categorical=["sex"])


def test_eia_utility_id_is_an_identifier_and_the_benchmark_names_it():
    df = microagg.datasets.load("eia")
    with pytest.warns(UserWarning, match="not protected, identifiers .*: UTILITYID"):
        res = microagg.microaggregate(df, k=3, audit=False)
    assert "UTILITYID" not in res.columns and len(res.columns) == 10
    assert (res.data["UTILITYID"] == df["UTILITYID"]).all()
    bench = microagg.microaggregate(
        df, k=3, columns=microagg.datasets.benchmark_columns("eia"), audit=False
    )
    assert round(bench.information_loss, 2) == 0.48  # the literature's figure, UTILITYID included
    assert microagg.datasets.roles("eia")["UTILITYID"] == "id"


@pytest.mark.parametrize(
    "name, expected",
    [
        ("region", True),
        ("RegionCode", True),
        ("isco08", True),
        ("nace_2", True),
        ("zip", True),
        ("district", True),
        ("occupation", True),
        ("income", False),
        ("STATETAX", False),
        ("age", False),
        ("FIXED.ASSETS", False),
    ],
)
def test_code_like_names(name, expected):
    from microagg.columns import looks_like_code_name

    assert (looks_like_code_name(name) is not None) == expected


def test_a_region_code_with_many_values_is_not_a_default_qi():
    rng = np.random.default_rng(2)
    df = pd.DataFrame(
        {
            "region": rng.integers(1, 183, 500),
            "income": rng.lognormal(8, 1, 500),
            "UTILITYID": rng.integers(1000, 9000, 500),
            "PAID": rng.integers(0, 10**6, 500),
        }
    )
    with pytest.warns(UserWarning):
        cols = microagg.columns.select_columns(df)
    assert cols == [
        "income",
        "PAID",
    ]  # a region code (182 values), a utility id: left out; PAID is an amount


@pytest.mark.parametrize("suffix", [".dta", ".sav"])
def test_labelled_qis_are_categories_with_their_labels_kept(tmp_path, suffix):
    import pyreadstat

    rng = np.random.default_rng(3)
    n = 80
    frame = pd.DataFrame(
        {
            "income": rng.lognormal(8, 1, n).round(2),
            "educ": rng.integers(1, 8, n).astype(float),
            "grade": rng.integers(1, 5, n).astype(float),
        }
    )
    labels = {
        "educ": {
            1.0: "none",
            2.0: "primary",
            3.0: "lower secondary",
            4.0: "upper secondary",
            5.0: "tertiary",
        },  # partial labels: 6 and 7 unlabelled
        "grade": {1.0: "low", 2.0: "medium", 3.0: "high", 4.0: "very high"},
    }
    src, out = tmp_path / f"in{suffix}", tmp_path / f"out{suffix}"
    if suffix == ".dta":
        frame.to_stata(
            src,
            write_index=False,
            version=118,
            value_labels={c: {int(k): v for k, v in m.items()} for c, m in labels.items()},
        )
    else:
        pyreadstat.write_sav(
            frame,
            str(src),
            variable_value_labels=labels,
            variable_measure={"grade": "ordinal", "educ": "nominal", "income": "scale"},
        )
    table = microagg.io.read(src)
    assert set(table.frame.attrs["category_codes"]) == {"educ", "grade"}
    with pytest.warns(UserWarning):
        assert microagg.columns.select_columns(table.frame) == ["income"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
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
                    "--columns",
                    "income,educ,grade",
                ]
            )
            == 0
        )
    back = microagg.io.read(out)
    assert set(back.frame["educ"]) <= set(frame["educ"]) and set(back.frame["grade"]) <= set(
        frame["grade"]
    )
    assert back.meta.value_labels["educ"] == labels["educ"] or back.meta.value_labels["educ"] == {
        int(k): v for k, v in labels["educ"].items()
    }
    kinds = json.loads((tmp_path / f"out{suffix}.manifest.json").read_text())["roles"]["kinds"]
    assert kinds["educ"] == "nominal" and kinds["grade"] == (
        "ordinal" if suffix == ".sav" else "nominal"
    )
    assert kinds["income"] == "continuous"


def test_declared_and_file_missing_codes_are_never_a_category_level(tmp_path, capsys):
    """An ordinal 9 = 'unknown' declared SPSS user-missing is missing: never the top level (a QI
    holding it is one error naming the column), and a non-QI column keeps it as it was."""
    import pyreadstat

    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {
            "income": rng.lognormal(8, 1, 60).round(2),
            "health": np.r_[rng.integers(1, 4, 58), [9, 9]].astype(float),
        }
    )
    src = tmp_path / "in.sav"
    pyreadstat.write_sav(
        frame,
        str(src),
        variable_value_labels={"health": {1: "good", 2: "fair", 3: "poor", 9: "unknown"}},
        missing_ranges={"health": [9]},
        variable_measure={"health": "ordinal"},
    )
    table = microagg.io.read(src)
    assert table.frame["health"].isna().sum() == 2
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(tmp_path / "o.sav"),
                "-k",
                "3",
                "-q",
                "--columns",
                "income,health",
            ]
        )
        == 2
    )
    assert "health (2 rows)" in capsys.readouterr().err
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(tmp_path / "o.sav"),
                "-k",
                "3",
                "-q",
                "--columns",
                "income",
            ]
        )
        == 0
    )
    assert sorted(pyreadstat.read_sav(str(tmp_path / "o.sav"), user_missing=True)[0]["health"])[
        -2:
    ] == [9.0, 9.0]


# --- row order -----------------------------------------------------------------------------------


def test_shuffle_publishes_the_same_rows_in_a_random_order_and_keeps_households(tmp_path):
    df = pd.read_csv(microagg.datasets.path("testdata"))
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    df.to_csv(src, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
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
                    "--shuffle",
                    "--household",
                    "ori_hid",
                ]
            )
            == 0
        )
        plain = tmp_path / "plain.csv"
        plain_command = ["protect", str(src), "-o", str(plain), "-k", "3", "-q"]
        assert main([*plain_command, "--household", "ori_hid"]) == 0
    a, b = pd.read_csv(out), pd.read_csv(plain)
    assert Counter(map(tuple, a.astype(str).to_numpy().tolist())) == Counter(
        map(tuple, b.astype(str).to_numpy().tolist())
    )
    assert not a["ori_hid"].equals(df["ori_hid"])
    runs = (a["ori_hid"] != a["ori_hid"].shift()).sum()
    assert runs == df["ori_hid"].nunique()  # each household's records together
    from microagg.measures.risk import row_order

    assert not row_order(a).informative  # no trace of the original order
    manifest = (tmp_path / "out.csv.manifest.json").read_text()
    assert (
        '"shuffled": true' in manifest and 'seed": 0' in manifest
    )  # the run's seed, not the shuffle's
    assert (
        "shuffle_seed" not in manifest
        and "permutation" not in json.loads(manifest)["audit"]["context"]
    )
    assert "--shuffle" in json.loads(manifest)["command"]
    plain_manifest = json.loads((tmp_path / "plain.csv.manifest.json").read_text())
    assert plain_manifest["audit"]["groups"]["risk"]["row_order_informative_columns"] >= 1
    assert any("row order follows" in w for w in plain_manifest["audit"]["warnings"])


def test_the_api_shuffle_is_fresh_unless_seeded():
    df = microagg.datasets.load("census").head(60)
    a = microagg.microaggregate(df, k=3, shuffle=True, audit=False).data
    b = microagg.microaggregate(df, k=3, shuffle=True, audit=False).data
    c = microagg.microaggregate(df, k=3, shuffle=True, shuffle_seed=5, audit=False).data
    d = microagg.microaggregate(df, k=3, shuffle=True, shuffle_seed=5, audit=False).data
    assert not a.equals(b) and c.equals(d) and list(a.index) == list(range(60))
    plain = microagg.microaggregate(df, k=3, audit=False).data
    assert Counter(map(tuple, a.to_numpy().tolist())) == Counter(
        map(tuple, plain.to_numpy().tolist())
    )
    assert "shuffle_seed" not in microagg.options.python_call(
        {"k": 3, "shuffle": True, "shuffle_seed": 5}, {}
    )
    with pytest.raises(microagg.errors.ParameterError, match="household"):
        microagg.microaggregate(df, k=3, household_level=["AGI"])


# --- one audit: protect, evaluate with the manifest, the report ----------------------------------


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("suffix", [".csv", ".sav", ".xlsx"])
def test_evaluate_with_the_manifest_reproduces_protects_figures_exactly(
    tmp_path, capsys, suffix, shuffle
):
    df = pd.read_csv(microagg.datasets.path("testdata")).head(300)
    src, out = tmp_path / f"in{suffix}", tmp_path / f"out{suffix}"
    _write_input(df, src, {})
    args = [
        "protect",
        str(src),
        "-o",
        str(out),
        "-k",
        "3",
        "-q",
        "--json",
        "--columns",
        "expend,income,savings,sex",
        "--strata",
        "urbrur",
        "--keys",
        "roof",
        "--sensitive",
        "relat",
        "--sample-weight",
        "sampling_weight",
        "--aggregation",
        "median",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args + (["--shuffle"] if shuffle else [])) == 0
        protected = json.loads(capsys.readouterr().out)
        assert main(["evaluate", str(src), str(out), "--json"]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    for group in ("utility", "risk"):
        assert evaluated[group] == protected[group]
    assert evaluated["run"]["information_loss"] == protected["information_loss"]
    assert bool(evaluated["from_manifest"]) == shuffle and evaluated["rows_aligned"] == (
        not shuffle
    )
    assert "capture" not in capsys.readouterr().err
    # without the manifest, the alignment-free figures are recomputed the same; paired ones need
    # alignment
    assert (
        main(
            [
                "evaluate",
                str(src),
                str(out),
                "--json",
                "--no-manifest",
                "--columns",
                "expend,income,savings,sex",
                "--strata",
                "urbrur",
                "--keys",
                "roof",
                "--sensitive",
                "relat",
                "--sample-weight",
                "sampling_weight",
                "-k",
                "3",
            ]
        )
        == 0
    )
    bare = json.loads(capsys.readouterr().out)
    assert bare["risk"]["key_records_below_k"] == protected["risk"]["key_records_below_k"]
    assert ("record_linkage_dbrl" in bare["risk"]) == (not shuffle)


def test_evaluate_refuses_a_manifest_of_other_files(tmp_path, capsys):
    df = microagg.datasets.load("census").head(90)
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    df.to_csv(src, index=False)
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q"]) == 0
    out.write_text(out.read_text().replace("\n", "\r\n"))  # edited after protect
    capsys.readouterr()
    assert main(["evaluate", str(src), str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SHA-256" in err
    assert main(["evaluate", str(src), str(out), "--no-manifest"]) == 0


def test_the_manifest_holds_no_data_values(tmp_path):
    rng = np.random.default_rng(7)
    df = pd.DataFrame(
        {
            "x": rng.normal(size=40).round(6) + 1000,
            "y": rng.normal(size=40).round(6) + 5000,
            "region": ["secretville"] * 2 + ["big"] * 38,
        }
    )
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    df.to_csv(src, index=False)
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
                "--strata",
                "region",
                "--merge-small-strata",
            ]
        )
        == 0
    )
    text = (tmp_path / "out.csv.manifest.json").read_text()
    assert "secretville" not in text  # a stratum merged away is not named
    published = pd.read_csv(out)
    for value in list(df["x"]) + list(published["x"]):
        assert repr(float(value)) not in text and f"{value:.6f}" not in text
    doc = json.loads(text)
    assert {"versions", "input", "output", "run", "roles", "audit", "command"} <= set(doc)
    assert doc["merged_strata"] == {"count": 1, "published": "recode"}


def test_report_lists_every_qi_and_the_published_file(tmp_path):
    from microagg.report import render_report

    df = pd.read_csv(microagg.datasets.path("testdata")).head(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = microagg.microaggregate(
            df,
            k=3,
            columns=["expend", "income", "age", "sex", "water", "roof"],
            strata="urbrur",
            sample_weight="sampling_weight",
        )
    html = render_report(res, df)
    for c in (
        "expend (continuous)",
        "income (continuous)",
        "age (continuous)",
        "sex (nominal)",
        "water (nominal)",
        "roof (nominal)",
    ):
        assert c in html
    assert "The published file" in html and "3-anonymous on its key variables" in html


# --- sdcMicro's names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flag, name, needle",
    [
        ("--method", "rmd", "distance robust"),
        ("--method", "pca", "projection fpc"),
        ("--method", "single", "projection pv"),
        ("--method", "onedims", "individual-ranking"),
        ("--method", "simple", "no equivalent"),
        ("--method", "mcdpca", "no equivalent"),
        ("--aggregation", "trim", "aggregation trimmed"),
    ],
)
def test_sdcmicro_names_point_to_their_equivalent(tmp_path, capsys, flag, name, needle):
    src = tmp_path / "in.csv"
    microagg.datasets.load("census").head(30).to_csv(src, index=False)
    assert main(["protect", str(src), "-o", str(tmp_path / "o.csv"), "-k", "3", flag, name]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "sdcMicro's name" in err
        and needle in err
        and "docs/sdcmicro.md" in err
    )
    with pytest.raises(microagg.errors.ParameterError, match="sdcMicro's name"):
        microagg.microaggregate(microagg.datasets.load("census").head(30), k=3, **{flag[2:]: name})
