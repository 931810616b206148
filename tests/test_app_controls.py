"""microagg.app.controls: the Protect tab's controls generated from the declared run options and
method parameters, and the values they send parsed back by the same declarations."""

from __future__ import annotations

import html
import math
from dataclasses import replace

import pytest

import microagg
from microagg import options as run_options
from microagg.app import controls
from microagg.declarations import Param, invalid_values
from microagg.errors import InputError, ParameterError

pytest.importorskip("shiny")

COLUMNS = ["-x", "age", "income", "region", "w"]


def _declared():
    """Every control of the page: the run options, then every registered method's parameters."""
    from microagg import methods

    out = list(controls.option_controls(COLUMNS))
    for name in methods.names():
        out += controls.method_controls(methods.get(name))
    return out


def _ids(c):
    return f"{c.owner or 'run'}:{c.param.name}"


ALL = _declared()


def test_every_run_option_with_a_flag_has_a_control_of_its_kind():
    made = {c.param.name: c for c in controls.option_controls(COLUMNS)}
    assert list(made) == [p.name for p in run_options.RUN_OPTIONS if p.flags]
    assert made["k"].widget == "numeric" and made["time_limit"].widget == "numeric"  # numbers
    assert (
        made["standardize"].widget == "checkbox" and made["merge_small_strata"].widget == "checkbox"
    )  # booleans
    assert made["method"].widget == "select" and made["aggregation"].widget == "select"  # choices
    assert (
        made["columns"].widget == "columns" and made["strata"].widget == "columns"
    )  # column lists
    assert made["sample_weight"].widget == "column" and made["weights"].widget == "text"
    assert set(made["aggregation"].choices) == set(microagg.representatives.AGGREGATIONS)
    assert made["columns"].choices == {str(i): c for i, c in enumerate(COLUMNS)}
    assert made["k"].help.startswith("minimum group size (an integer >= 2; default 3")


@pytest.mark.parametrize("c", ALL, ids=_ids)
def test_every_control_renders_with_its_help_and_parses_its_start_back_to_the_default(c):
    from microagg.app.tabs.protect_tab import control_ui

    page = str(control_ui(c))
    assert f'id="{c.input_id}"' in page and html.escape(c.help, quote=False) in page
    got = controls.value_of(c, c.value, COLUMNS)
    assert (
        got == c.param.default
        or (got is None and c.param.default is None)
        or (isinstance(got, float) and math.isclose(got, c.param.default))
    )


def _changed(c):
    """(what the page sends for a value other than the default, the value expected back)."""
    p = c.param
    if c.widget == "columns":
        return ["0", "3"], ["-x", "region"]
    if c.widget == "column":
        return "4", "w"
    if c.widget == "checkbox":
        return (not p.default), (not p.default)
    if c.widget == "select":
        text = next(v for v in c.choices if v not in ("", c.value))
        return text, (
            p.validate(p.parse(text, c.owner), c.owner)
            if p.kind == "bool"
            else next((v for v in p.allowed() or () if str(v) == text), text)
        )
    if c.widget == "numeric":
        low = p.low if p.low is not None else 0
        value = low + (1 if p.kind == "int" else 0.25)
        value = value if p.high is None or value < p.high else (low + p.high) / 2
        return value, value
    examples = {
        "weights": ("age=2, income=0.5", {"age": 2.0, "income": 0.5}),
        "scheduler": ("threads", "threads"),
        "bounds": ("age=0:120, income=-5:1e6", {"age": (0.0, 120.0), "income": (-5.0, 1e6)}),
        "missing": ("-, n/a", ("-", "n/a")),
        "aggregation_params": ("trim=0.2, fraction=1e-3", {"trim": 0.2, "fraction": 1e-3}),
        "portfolio": ("mdav,vmdav", ["mdav", "vmdav"]),
        "member_params": ("{'vmdav': {'gamma': 0.3}}", {"vmdav": {"gamma": 0.3}}),
        "univariate_params": ("{}", {}),
        "init": ("vmdav", "vmdav"),
        "resume": None,
        "offers": None,
    }
    if (c.owner, p.name) == ("auto", "init"):  # start labels: one per record, not something to type
        return None
    return examples[p.name]


@pytest.mark.parametrize("c", ALL, ids=_ids)
def test_every_control_parses_a_changed_value_by_its_declaration(c):
    changed = _changed(c)
    if (
        changed is None
    ):  # a value only the API can give (a state, a callback): the text box takes none
        with pytest.raises(ParameterError):
            controls.value_of(c, "something", COLUMNS)
        return
    sent, expected = changed
    got = controls.value_of(c, sent, COLUMNS)
    if c.param.check is not None and c.widget == "text":
        expected = c.param.validate(expected, c.owner)
    assert got == expected


@pytest.mark.parametrize(
    "c", [c for c in ALL if c.widget in ("numeric", "text", "select")], ids=_ids
)
def test_a_bad_value_is_the_declarations_one_line(c):
    """The values the declaration rejects (params.invalid_values, the generated bad-value tests of
    the API and the command line), typed into the control, give the same ParameterError."""
    bad = [text for _, text in invalid_values(c.param) if text is not None]
    for text in bad:
        with pytest.raises(ParameterError) as error:
            controls.value_of(c, text, COLUMNS)
        assert "\n" not in str(error.value) and c.param.name in str(error.value)


def test_what_the_page_cannot_have_sent_is_one_line():
    made = {c.param.name: c for c in controls.option_controls(COLUMNS)}
    for c, raw, words in (
        (made["columns"], ["0", "99"], "unknown column for columns ('99')"),
        (made["columns"], 5, "not a column"),
        (made["columns"], [{"a": 1}], "not a column"),
        (made["sample_weight"], ["0"], "not a column"),
        (made["strata"], ["x" * 500], "unknown column for strata ('xxxxxxxxxxxxxxxxxxxx')"),
        (made["standardize"], "yes", "not true or false"),
        (made["k"], [3], "not a number for k"),
        (made["weights"], {"a": 1}, "not text for weights"),
        (made["k"], None, "k must be an integer >= 2, got None"),
        (made["method"], "nope", "unknown method 'nope'"),
    ):
        with pytest.raises(InputError) as error:
            controls.value_of(c, raw, COLUMNS)
        assert words in str(error.value) and "\n" not in str(error.value), (
            c.param.name,
            raw,
            str(error.value),
        )
    assert (
        controls.value_of(made["strata"], [], COLUMNS) is None
        and controls.value_of(made["strata"], (), COLUMNS) is None
        and controls.value_of(made["sample_weight"], "", COLUMNS) is None
    )


def test_roles_that_take_a_column_away_from_the_quasi_identifiers_come_from_the_declared_run():
    leaving = {p.name for p in run_options.RUN_OPTIONS if controls.leaves_the_quasi_identifiers(p)}
    assert {"strata", "sample_weight"} <= leaving
    assert not leaving & {"columns", "categorical", "ordinal", "k", "weights"}


NEW = (
    Param(
        "trial_shuffle",
        "bool",
        False,
        "publish the records in a seeded random order",
        flags=("--trial-shuffle",),
        flag_value=True,
    ),
    Param(
        "trial_key_policy",
        "str",
        "recode",
        "what merged strata publish",
        choices=("recode", "suppress", "refuse"),
        flags=("--trial-key-policy",),
    ),
    Param(
        "trial_sample_fraction",
        "float",
        None,
        "the sample's share of the population",
        low=0.0,
        high=1.0,
        low_open=True,
        nullable=True,
        flags=("--trial-sample-fraction",),
    ),
    Param(
        "trial_sensitive",
        "names",
        None,
        "sensitive columns (l-diversity)",
        nullable=True,
        flags=("--trial-sensitive",),
    ),
    Param(
        "trial_cluster",
        "object",
        None,
        "a cluster column",
        nullable=True,
        flags=("--trial-cluster",),
        metavar="COLUMN",
        parse_text=str,
    ),
)


def test_a_new_run_option_appears_in_the_app_with_no_edit_of_it(monkeypatch):
    """Issue 33 adds run options (shuffle, key-variable and merged-strata options, ...): declared in
    RUN_OPTIONS, each gets its control on the page, its value back from the page, its place in the
    run and in the reproduce command."""
    from microagg.app import runspec
    from microagg.app.tabs import protect_tab

    table = [*run_options.RUN_OPTIONS, *NEW]
    monkeypatch.setattr(run_options, "RUN_OPTIONS", table)
    monkeypatch.setattr(run_options.run_options, "RUN_OPTIONS", table)
    monkeypatch.setattr(run_options.run_options, "DECLARED", {p.name: p for p in table})
    # a run option without its generated field in Run yet runs: its value is in Run.added
    made = {c.param.name: c for c in controls.option_controls(COLUMNS)}
    assert [made[p.name].widget for p in NEW] == [
        "checkbox",
        "select",
        "numeric",
        "columns",
        "column",
    ]
    page = str(protect_tab.protect_ui("protect"))
    for p in NEW[:3]:  # the ones that do not need the data are on the page from the start
        assert f'id="protect-{p.name}"' in page and p.doc in page
    sent = {
        "trial_shuffle": True,
        "trial_key_policy": "suppress",
        "trial_sample_fraction": 0.25,
        "trial_sensitive": ["2"],
        "trial_cluster": "3",
    }
    values = {name: controls.value_of(made[name], raw, COLUMNS) for name, raw in sent.items()}
    assert values == {
        "trial_shuffle": True,
        "trial_key_policy": "suppress",
        "trial_sample_fraction": 0.25,
        "trial_sensitive": ["income"],
        "trial_cluster": "region",
    }
    spec = runspec.RunSpec.of("-d.csv", "-d.csv", k=3, columns=["-x", "age"], **values)
    command = spec.cli_command()
    for words in (
        "--trial-shuffle",
        "--trial-key-policy suppress",
        "--trial-sample-fraction 0.25",
        "--trial-sensitive income",
        "--trial-cluster region",
        "--columns=-x,age",
    ):
        assert words in command, command
    assert "trial_shuffle=True" in spec.python_snippet()
    assert set(spec.changed_options()) == {
        "columns",
        "trial_shuffle",
        "trial_key_policy",
        "trial_sample_fraction",
        "trial_sensitive",
        "trial_cluster",
    }
    assert replace(NEW[0]).name in [c.param.name for c in controls.option_controls()]


def test_the_apps_scheduler_is_a_local_one_and_an_address_is_never_reached(monkeypatch):
    """The app keeps the data on this machine: its scheduler control lists Dask's local schedulers;
    a cluster's address sent by a page is refused by that narrowed declaration, before anything
    tries to reach it (the command line and the API still take one)."""
    monkeypatch.setattr(
        run_options.values,
        "_reach",
        lambda *a: pytest.fail("the app tried to reach a scheduler address"),
    )
    scheduler = next(c for c in controls.option_controls() if c.param.name == "scheduler")
    assert scheduler.widget == "select" and set(scheduler.choices) == {
        "",
        *run_options.LOCAL_SCHEDULERS,
    }
    assert (
        controls.value_of(scheduler, "processes") == "processes"
        and controls.value_of(scheduler, "") is None
    )
    with pytest.raises(ParameterError, match="scheduler must be one of 'threads'"):
        controls.value_of(scheduler, "tcp://192.0.2.1:8786")
    assert (
        run_options.option("scheduler").kind == "object"
    )  # the run's own declaration is unchanged


def test_the_run_the_page_describes(tmp_path):
    """controls.run_spec: what the page sends for each generated control, as a RunSpec checked by
    the declarations; a dtype's categories declared so for the reproduce command; the first bad
    value is one line."""
    from microagg.app import column_profile, runspec

    df = microagg.datasets.load("testdata").head(200)
    loaded = {
        "df": df,
        "path": str(tmp_path / "t.csv"),
        "name": "t.csv",
        "dataset": "testdata",
        "shown": None,
        "max_bytes": None,
        "profile": column_profile.profile(df, microagg.datasets.roles("testdata")),
    }
    position = {p.name: str(i) for i, p in enumerate(loaded["profile"])}
    page = {
        "k": 4,
        "method": "vmdav",
        "columns": [position["age"], position["income"], position["sex"]],
        "strata": [position["urbrur"]],
        "aggregation": "median",
        "time_limit": None,
        "seed": 7,
        "standardize": True,
        "weights": "",
        controls.param_input_id("vmdav", "gamma"): 0.3,
    }
    spec = controls.run_spec(loaded, lambda ident: page.get(ident, controls.ABSENT))
    assert spec.k == 4 and spec.method == "vmdav" and spec.columns == ["age", "income", "sex"]
    assert spec.params == {"gamma": 0.3} and spec.option("strata") == ["urbrur"]
    assert spec.changed_options() == {
        "k": 4,
        "method": "vmdav",
        "columns": ["age", "income", "sex"],
        "seed": 7,
        "strata": ["urbrur"],
        "categorical": ["sex"],
        "aggregation": "median",
    }
    assert "--categorical sex" in spec.cli_command() and "--param gamma=0.3" in spec.cli_command()
    runspec.check_against_data(spec, df)  # the pipeline's data hook finds nothing to say
    for change, words in (
        ({"columns": []}, "choose at least one quasi-identifier column"),
        ({"sample_weight": position["urbrur"]}, "both sample weight and stratum"),
        ({"aggregation": "mean", "trim": 0.2}, "trim applies to aggregation='trimmed'"),
        ({controls.param_input_id("vmdav", "gamma"): -1}, "vmdav parameter gamma must be"),
    ):
        with pytest.raises(InputError, match=words):
            controls.run_spec(
                loaded, lambda ident, change=change: {**page, **change}.get(ident, controls.ABSENT)
            )
    too_big = controls.run_spec(
        loaded, lambda ident: {**page, "k": 500}.get(ident, controls.ABSENT)
    )
    with pytest.raises(InputError, match="larger than the number of records"):
        runspec.check_against_data(too_big, df)
