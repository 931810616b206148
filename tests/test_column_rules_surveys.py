"""Default roles that know surveys (issue 54): household and person ids, weights and codes are
never default quasi-identifiers, whether their names are a survey programme's (EU-SILC, a
labour-force survey in German, French, Spanish or Italian, IPUMS) or neutral (col1..colN: the
data-based rules on their own); the summary names each column left out with how to declare it;
and integer quantities (ages, hours, scores) named as quasi-identifiers are averaged: every
published value is its group's mean."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import microagg
from microagg.column_rules import named_code_reason
from microagg.embedding import select_qi, select_qi_roles

#: the roles of a generated household survey, and each programme's names for them
ROLES = (
    "household",
    "person",
    "household_weight",
    "person_weight",
    "region",
    "sex",
    "age",
    "hours",
    "household_size",
    "household_income",
    "person_income",
    "score",
)
NAMINGS = {
    "eu-silc": dict(
        zip(
            ROLES,
            (
                "db030",
                "rb030",
                "db090",
                "rb050",
                "db040",
                "rb090",
                "age",
                "pl060",
                "hsize",
                "hy010",
                "py010g",
                "test_score",
            ),
        )
    ),
    "german": dict(
        zip(
            ROLES,
            (
                "haushalt",
                "persnr",
                "hhgewicht",
                "gewicht",
                "bundesland",
                "geschlecht",
                "alter",
                "stunden",
                "hhgroesse",
                "hheinkommen",
                "einkommen",
                "punkte",
            ),
        )
    ),
    "french": dict(
        zip(
            ROLES,
            (
                "ident_menage",
                "noi",
                "poids_menage",
                "poids",
                "region",
                "sexe",
                "age",
                "heures",
                "taille_menage",
                "revenu_menage",
                "revenu",
                "score",
            ),
        )
    ),
    "spanish": dict(
        zip(
            ROLES,
            (
                "id_hogar",
                "id_persona",
                "factor_hogar",
                "factorel",
                "ccaa",
                "sexo",
                "edad",
                "horas",
                "tamano_hogar",
                "ingreso_hogar",
                "ingresos",
                "puntos",
            ),
        )
    ),
    "italian": dict(
        zip(
            ROLES,
            (
                "famiglia",
                "nord",
                "peso_fam",
                "coef",
                "regione",
                "sesso",
                "eta",
                "ore",
                "ncomp",
                "reddito_fam",
                "reddito",
                "voto",
            ),
        )
    ),
    "ipums": dict(
        zip(
            ROLES,
            (
                "SERIAL",
                "PERNUM",
                "HHWT",
                "PERWT",
                "REGION",
                "SEX",
                "AGE",
                "UHRSWORK",
                "NUMPREC",
                "HHINCOME",
                "INCTOT",
                "SCORE",
            ),
        )
    ),
}
#: the roles no default run may average
NEVER_AVERAGED = (
    "household",
    "person",
    "household_weight",
    "person_weight",
    "region",
    "sex",
    "household_size",
)
#: the integer quantities a user names as quasi-identifiers
QUANTITIES = ("age", "hours", "score")


def survey(seed: int, households: int = 150, ipums: bool = False) -> pd.DataFrame:
    """A generated household survey in its roles' names: consecutive members of each household,
    household ids numbered from 1 (or long digit strings), person ids household · 100 + member
    (IPUMS: the member's number), household weights with many decimals and equal personal
    weights, household incomes constant within each household, a person income missing for
    children, integer ages, hours and scores."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, households)
    n = int(sizes.sum())
    first = int(rng.choice([1, 2_019_000_001]))  # numbered from 1, or a long digit string
    home = np.repeat(np.arange(first, first + households), sizes)
    member = np.concatenate([np.arange(1, s + 1) for s in sizes])
    weight = np.repeat(rng.uniform(200, 900, households) / 3.0, sizes)
    age = np.where(member > 2, rng.integers(0, 18, n), rng.integers(18, 95, n))
    income = np.round(rng.lognormal(9.5, 0.8, n), 2)
    frame = {
        "household": home,
        "person": member if ipums else home * 100 + member,
        "household_weight": weight,
        "person_weight": weight.copy(),
        "region": np.repeat(rng.integers(1, 10, households), sizes),
        "sex": rng.integers(1, 3, n),
        "age": age,
        "hours": np.where(age >= 18, rng.integers(0, 61, n), 0),
        "household_size": np.repeat(sizes, sizes),
        "household_income": np.repeat(np.round(rng.lognormal(10.5, 0.7, households), 2), sizes),
        "person_income": np.where(age >= 16, income, np.nan),
        "score": rng.integers(200, 1000, n),
    }
    df = pd.DataFrame(frame)
    if ipums:  # an extract of one sample: constant survey codes
        df["SAMPLE"], df["YEAR"] = 201_501, 2015
    return df


def named(df: pd.DataFrame, naming: str) -> tuple[pd.DataFrame, dict]:
    """The survey under a programme's names ("neutral": col1..colN; "shuffled": neutral names and
    the records in a random order), and role -> name."""
    names = (
        {r: f"col{i + 1}" for i, r in enumerate(df.columns)}
        if naming in ("neutral", "shuffled")
        else {r: NAMINGS[naming].get(r, r) for r in df.columns}
    )
    if naming == "shuffled":
        df = df.sample(frac=1.0, random_state=int(df["household"].iloc[0]) % 1000)
        df = df.reset_index(drop=True)
    return df.rename(columns=names), names


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args, **kwargs)


@pytest.mark.parametrize("naming", [*NAMINGS, "neutral", "shuffled"])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16))
def test_no_id_weight_or_code_is_a_default_qi(naming, seed):
    df, names = named(survey(seed, ipums=naming == "ipums"), naming)
    cols, kinds, left_out = _quiet(select_qi_roles, df, None, [])
    never = {names[r] for r in NEVER_AVERAGED} | (
        {"SAMPLE", "YEAR"} if naming == "ipums" else set()
    )
    assert never.isdisjoint(cols), sorted(never & set(cols))
    assert never <= {c for c, _ in left_out}  # each left out is named, with why
    assert all(kinds[c] == "continuous" for c in cols)
    # the amounts are protected: incomes (the person's missing for children) are default QIs
    assert names["household_income"] in cols and names["person_income"] in cols
    why = dict(left_out)
    assert "household id" in why[names["household"]]  # a household id, by name or by its data


@pytest.mark.parametrize("naming", ["eu-silc", "neutral", "shuffled"])
def test_the_declared_household_finds_the_weights_within_it(naming):
    df, names = named(survey(3), naming)
    home = names["household"]
    cols, _, left_out = _quiet(select_qi_roles, df, None, [home], household=[home])
    weights = {names["household_weight"], names["person_weight"]}
    assert weights.isdisjoint(cols)
    assert all("weight" in w for c, w in left_out if c in weights)


@pytest.mark.parametrize("naming", ["eu-silc", "spanish", "neutral"])
def test_the_summary_names_each_column_left_out_and_how_to_declare_it(naming):
    df, names = named(survey(4), naming)
    df = df.drop(columns=names["person_income"])  # missing values: another part of issue 54
    res = _quiet(microagg.microaggregate, df, k=3)
    text = res.summary()
    home, weight = names["household"], names["household_weight"]
    assert f'--household {home} / household="{home}"' in text
    assert f'--sample-weight {weight} / sample_weight="{weight}"' in text
    for role in NEVER_AVERAGED:
        assert names[role] not in res.columns
        assert any(
            line.startswith("left out of the quasi-identifiers") and names[role] in line
            for line in text.splitlines()
        ), role
    # what was left out is published as it came in
    for role in NEVER_AVERAGED:
        pd.testing.assert_series_equal(res.data[names[role]], df[names[role]])


def _assert_group_means(original: pd.DataFrame, published: pd.DataFrame, columns):
    """Every published value of ``columns`` is its group's mean of the original values, a group
    being the records that publish the same values (two groups publishing the same means are one
    group with those means)."""
    groups = published[columns].astype(float).round(6).astype(str).agg("|".join, axis=1)
    assert groups.value_counts().min() >= 3
    for c in columns:
        means = original[c].astype(float).groupby(groups.to_numpy()).transform("mean")
        np.testing.assert_allclose(published[c].astype(float), means, rtol=1e-9, err_msg=c)


@pytest.mark.parametrize("naming", [*NAMINGS, "neutral"])
def test_integer_quantities_named_as_qis_are_averaged(naming):
    df, names = named(survey(5, households=250, ipums=naming == "ipums"), naming)
    columns = [names[r] for r in QUANTITIES]
    cols, kinds = _quiet(select_qi, df, columns, [])
    assert kinds == dict.fromkeys(columns, "continuous")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "look like category codes" warning
        res = microagg.microaggregate(df, k=3, columns=columns, seed=0)
    assert res.publication.kinds == kinds
    _assert_group_means(df, res.data, columns)


@pytest.mark.parametrize("suffix", [".csv", ".dta"])
def test_a_named_quantity_is_averaged_at_every_door(tmp_path, suffix):
    """microagg.protect, the command line and the app's publication, on CSV and Stata."""
    from test_doors import _publish_three_ways

    df, names = named(survey(6, households=120), "eu-silc")
    df = df.drop(columns=names["person_income"])
    src = tmp_path / f"survey{suffix}"
    df.to_csv(src, index=False) if suffix == ".csv" else df.to_stata(src, write_index=False)
    columns = [names[r] for r in QUANTITIES] + [names["household_income"]]
    for path in _publish_three_ways(src, {"k": 3, "columns": columns, "seed": 0}, tmp_path):
        published = pd.read_csv(path) if suffix == ".csv" else pd.read_stata(path)
        _assert_group_means(df, published, columns)


def test_codes_named_as_qis_are_still_categories():
    """Named, a column is codes by what codes look like: few distinct integers (unless its name
    says a quantity), a code-like name, value labels; never because its values repeat."""
    rng = np.random.default_rng(7)
    n = 600
    sex, region = pd.Series(rng.integers(1, 3, n)), pd.Series(rng.integers(1, 10, n))
    children = pd.Series(rng.integers(0, 6, n))
    occupation = pd.Series(rng.integers(1000, 9000, n))
    score = pd.Series(rng.integers(400, 1000, n))  # hundreds of values, each repeated
    assert named_code_reason("col7", sex) and named_code_reason("col8", region)
    assert named_code_reason("isco", occupation) and named_code_reason("x", score, labelled=True)
    assert named_code_reason("children", children) is None  # a count, however few its values
    assert named_code_reason("AGE_GROUP", region) is not None  # a group of ages is a code
    assert named_code_reason("api00", score) is None and named_code_reason("col9", score) is None
    # a survey programme's code variables, however many their values: EU-SILC's ISCO occupation,
    # IPUMS's state and PUMA
    isco = pd.Series(rng.choice(np.arange(11, 97), n))
    for name in ("pl051", "PL051", "STATEFIP", "PUMA"):
        assert "code" in named_code_reason(name, isco), name


@pytest.mark.parametrize("naming", ["eu-silc", "shuffled"])
def test_a_default_run_publishes_ids_weights_and_codes_unchanged_at_every_door(tmp_path, naming):
    from test_doors import _publish_three_ways

    df, names = named(survey(8, households=120), naming)
    df = df.drop(columns=names["person_income"])
    src = tmp_path / "survey.csv"
    df.to_csv(src, index=False)
    text = pd.read_csv(src, dtype=str)
    for path in _publish_three_ways(src, {"k": 3, "columns": None, "seed": 0}, tmp_path):
        published = pd.read_csv(path, dtype=str)
        for role in NEVER_AVERAGED:
            pd.testing.assert_series_equal(published[names[role]], text[names[role]])
        assert not published[names["household_income"]].equals(text[names["household_income"]])


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    distinct=st.integers(20, 400),
    n=st.integers(40, 3000),
)
def test_a_named_integer_column_of_many_values_is_a_quantity_however_they_repeat(seed, distinct, n):
    """Named under a neutral name, integers with at least FEW_VALUES distinct values are averaged
    whatever the records per value (the repetition rule of the default is not a code rule)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, distinct, n)
    shown = min(distinct, n)
    values[:shown] = np.arange(shown)  # every value at least once
    df = pd.DataFrame({"col1": values, "col2": rng.normal(size=n)})
    _, kinds = _quiet(select_qi, df, ["col1", "col2"], [])
    assert kinds["col1"] == ("continuous" if len(np.unique(values)) >= 20 else "nominal")


@pytest.mark.parametrize("naming", ["neutral", "shuffled"])
def test_ids_kept_as_doubles_are_still_ids(naming):
    """A Stata file often keeps its ids as doubles: the household id and the person id nested in
    it are told by their data all the same."""
    df, names = named(survey(9), naming)
    for role in ("household", "person"):
        df[names[role]] = df[names[role]].astype(np.float64)
    cols, _, left_out = _quiet(select_qi_roles, df, None, [])
    why = dict(left_out)
    assert "household id" in why[names["household"]]
    assert names["person"] in why and names["person"] not in cols
