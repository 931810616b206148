"""microagg.options: the declared run options, their cross checks, and options honoured or
rejected."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import _strata_frame, make_data

import microagg
from microagg.errors import InputError, ParameterError


def test_options_sdcmicro_ignores_are_honoured_or_rejected_here():
    """sdcMicro issues #266 (measure='median' silently gave means) and #267 (strata had no effect
    with MDAV)."""
    df = _strata_frame()
    with pytest.raises(ValueError, match="unknown option 'measure'"):
        microagg.microaggregate(df, k=3, columns=["x", "y"], measure="median")
    # strata assigned at random: plain MDAV mixes them, MDAV within strata never does
    mixed = pd.DataFrame(make_data(8, 60, 2), columns=["x", "y"])
    mixed["region"] = np.random.default_rng(8).choice(["n", "s"], 60)
    plain = microagg.microaggregate(mixed, k=3, columns=["x", "y"])
    strat = microagg.microaggregate(mixed, k=3, columns=["x", "y"], strata="region")
    regions = mixed["region"].to_numpy()
    assert any(len(set(regions[plain.labels == g])) > 1 for g in np.unique(plain.labels))
    assert all(len(set(regions[strat.labels == g])) == 1 for g in np.unique(strat.labels))
    with pytest.raises(InputError, match="standardize"):
        microagg.microaggregate(df, k=3, columns=["x", "y"], standardize="no")
    with pytest.raises(InputError, match="progress"):
        microagg.microaggregate(df, k=3, columns=["x", "y"], progress="yes")


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(distance="cosine"), "distance"),
        (dict(aggregation="mode"), "aggregation"),
        (dict(aggregation="trimmed", trim=0.5), "trim"),
        (dict(aggregation="trimmed", trim="x"), "trim"),
        (dict(aggregation="median", trim=0.2), "trim applies"),
        (dict(categorical=["sex"], ordinal=["sex"]), "both"),
    ],
)
def test_bad_options_are_parameter_errors(bad, match):
    df = microagg.datasets.load("testdata")
    with pytest.raises(ParameterError, match=match):
        microagg.microaggregate(df, k=3, columns=["expend", "income", "sex"], **bad)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(method="individual-ranking", columns=["expend", "sex"]), "cannot take categorical"),
        (dict(columns=["expend"], categorical=["sex"]), "not among the quasi-identifier"),
        (
            dict(columns=["expend", "income"], distance="robust", weights=[1, 2]),
            "cannot be combined",
        ),
        (dict(columns=["sex", "roof"], distance="robust"), "needs continuous"),
    ],
)
def test_impossible_combinations_rejected(kwargs, match):
    df = microagg.datasets.load("testdata")
    with pytest.raises(InputError, match=match):
        microagg.microaggregate(df, k=3, **kwargs)


def test_a_stratum_named_twice_in_the_library_is_a_parameter_error():
    import microagg

    df = pd.DataFrame({"x": np.arange(12.0), "s": ["a", "b"] * 6})
    with pytest.raises(microagg.ParameterError, match="strata names a column twice: s"):
        microagg.microaggregate(df, k=3, strata=["s", "s"])


# --- the declared run options (the options package)
# ----------------------------------------------------


def test_the_signature_and_the_command_line_are_generated_from_the_declarations():
    import inspect

    from microagg.cli import build_parser
    from microagg.options import POSITIONAL, RUN_OPTIONS, option
    from microagg.options.generated import KeywordOptions

    sig = inspect.signature(microagg.microaggregate)
    names = list(sig.parameters)
    assert names == ["data", *POSITIONAL, "options"]  # the public contract's order, then **options
    assert all(sig.parameters[name].default == option(name).default for name in POSITIONAL)
    assert set(KeywordOptions.__annotations__) == {p.name for p in RUN_OPTIONS} - set(POSITIONAL)
    protect = build_parser()._subparsers._group_actions[0].choices["protect"]
    flags = {s for a in protect._actions for s in a.option_strings}
    assert {p.flags[0] for p in RUN_OPTIONS if p.flags} <= flags
    # the API's only: the shuffle's seed (tests: never on a command line), a partition to publish
    # (the
    # command line's is --from-explore), the audit switch (the command line audits the written file
    # itself) and the progress callback
    assert [p.name for p in RUN_OPTIONS if not p.flags] == [
        "shuffle_seed",
        "labels",
        "audit",
        "progress",
    ]


def test_positional_options_keep_their_order_and_a_duplicate_is_a_type_error():
    df = microagg.datasets.load("census").head(60)
    by_position = microagg.microaggregate(df, 4, "mdav", ["AGI", "FEDTAX"], 0)
    by_name = microagg.microaggregate(df, k=4, method="mdav", columns=["AGI", "FEDTAX"], seed=0)
    assert np.array_equal(by_position.labels, by_name.labels) and by_position.k == 4
    with pytest.raises(TypeError, match="multiple values"):
        microagg.microaggregate(df, 3, k=4)


@pytest.mark.parametrize(
    "scheduler, match",
    [
        ("bogus", "must be one of threads"),
        ("tcp://127.0.0.1:1", "cannot be reached"),
        ("tcp://", "scheduler address"),
    ],
)
def test_a_bad_scheduler_is_one_line_before_the_data_are_read(
    scheduler, match, monkeypatch, tmp_path, capsys
):
    """Issue 31: --scheduler bogus and an unreachable --scheduler tcp://... ended in tracebacks
    after the data were read."""
    import microagg.pipeline
    from microagg.cli import main

    monkeypatch.setattr(
        microagg.pipeline, "load", lambda *a: pytest.fail("data read before the scheduler check")
    )
    with pytest.raises(ParameterError, match=match):
        microagg.microaggregate(np.zeros((10, 2)), k=3, block_size=5, scheduler=scheduler)
    src = tmp_path / "in.csv"
    src.write_text("a,b\n1,2\n3,4\n5,6\n7,8\n")
    assert (
        main(
            [
                "protect",
                str(src),
                "-o",
                str(tmp_path / "out.csv"),
                "-k",
                "2",
                "--block-size",
                "2",
                "--scheduler",
                scheduler,
                "-q",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("microagg: error: --scheduler") and err.count("\n") == 1 and match in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_a_listener_that_is_not_a_dask_scheduler_is_refused():
    """Something answers the TCP connection, but not as a Dask scheduler (a proxy, another
    service): refused in one line, not a MemoryError inside Dask's handshake."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def answer():
        conn, _ = server.accept()
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4)
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    port = server.getsockname()[1]
    with pytest.raises(ParameterError, match="does not answer as a Dask scheduler"):
        microagg.microaggregate(
            np.zeros((10, 2)), k=3, block_size=5, scheduler=f"tcp://127.0.0.1:{port}"
        )
    server.close()


def test_the_reproduce_command_and_call_give_the_same_run(tmp_path, capsys):
    """options.command_line / python_call write what reproduces a run, from the declarations."""
    from microagg.cli import main
    from microagg.options import command_line, python_call

    df = microagg.datasets.load("tarragona").head(90)
    src, out = tmp_path / "-data.csv", tmp_path / "out.csv"
    df.to_csv(src, index=False)
    options = {
        "k": 4,
        "method": "mdav",
        "columns": list(df.columns[:4]),
        "seed": 1,
        "aggregation": "median",
        "weights": {df.columns[0]: 2.0},
    }
    command = command_line(str(src), str(out), options, {})
    assert (
        command_line("-data.csv", "out.csv", {}, {}).split()[2] == "./-data.csv"
    )  # a name, not an option
    import shlex

    argv = shlex.split(command)[1:]
    assert main(argv + ["-q"]) == 0
    capsys.readouterr()
    namespace = {"microagg": microagg, "df": df}
    exec("import microagg\n" + python_call(options, {}), namespace)
    np.testing.assert_allclose(
        pd.read_csv(out)[options["columns"]].to_numpy(),
        namespace["res"].data[options["columns"]].to_numpy(),
    )


#: a value other than the default for each structured run option ("object" kind), as the API takes
#: it; the other kinds get one from their declaration (``_example``)
_EXAMPLES = {
    "weights": {"-a": 0.1234567891, "b c": 2.0},
    "sample_weight": "-w",
    "scheduler": "threads",
    "missing": ("-", "n/a"),
    "household": "-hh",
    "bounds": {"-a": (-1.5, 2.1234567891), "b c": (0.0, 10.0)},
    "aggregation_params": {"trim": 0.1234567891, "b": -2.0},
}


def _example(p):
    """A valid value of ``p`` other than its default, awkward where it can be: names and texts that
    start with '-', numbers that need all their digits."""
    if p.name in _EXAMPLES:
        return _EXAMPLES[p.name]
    allowed = p.allowed()
    if allowed is not None:
        return next(v for v in allowed if v != p.default)
    if p.kind == "bool":
        return not p.default
    if p.kind == "method":
        return "vmdav"
    if p.kind == "names":
        return ["-x", "y z"]
    if p.kind in ("int", "float"):
        low = p.low if p.low is not None else 0
        value = low + (1 if p.kind == "int" else 0.1234567891)
        return value if p.high is None or value < p.high else (low + p.high) / 3
    raise AssertionError(f"run option {p.name} ({p.kind}): give an example value in _EXAMPLES")


@pytest.mark.parametrize(
    "name", [p.name for p in __import__("microagg.options").options.RUN_OPTIONS if p.flags]
)
def test_the_reproduce_command_reads_back_as_the_same_option(name):
    """options.command_line writes every run option so that the command line's own parser reads
    back the very value (an awkward one: names and texts starting with '-' joined to their flag,
    numbers with every digit), for every declared option: a new one is covered with no edit."""
    import shlex

    from microagg.cli import build_parser
    from microagg.options import command_line, from_arguments, option

    p = option(name)
    value = _example(p)
    expected = p.validate(value, None)
    command = command_line("-in.csv", "out.csv", {name: value}, {"gamma": 0.1234567891})
    argv = shlex.split(command)[1:]
    assert argv[1] == "./-in.csv"
    args = build_parser().parse_args(argv + ([] if name == "k" else ["-k", "3"]))
    got = from_arguments(args)
    assert got[name] == expected, (command, got[name], expected)
    assert args.param == ["gamma=0.1234567891"]


def test_unlisted_names_are_those_holding_a_comma():
    from microagg.options import unlisted_names

    assert unlisted_names({"columns": ["a,b", "c"], "strata": ["d"], "categorical": ["a,b"]}) == [
        "a,b"
    ]
    assert unlisted_names({"columns": "a,b"}) == []  # a text is already the command line's list


# --- the typed Run
# ----------------------------------------------------------------------------------------


def test_run_has_one_typed_field_per_option_in_the_table_order():
    from dataclasses import fields

    from microagg.options import RUN_OPTIONS, Run, validate_run
    from microagg.options.generate import run_fields

    names = [f.name for f in fields(Run)][3:-1]
    assert names == [p.name for p in RUN_OPTIONS] and fields(Run)[-1].name == "added"
    assert [f"{f.name}: {f.type} = {f.default!r}" for f in fields(Run)[3:-1]] == [
        line.replace('"', "'") for line in run_fields()
    ]
    run = validate_run({"k": 4, "columns": "a,b,c", "ordinal": ["c"]})
    assert (run.k, run.columns, run.ordinal, run.trim) == (4, ["a", "b", "c"], {"c": None}, None)
    assert run.options == {p.name: getattr(run, p.name) for p in RUN_OPTIONS}
    with pytest.raises(AttributeError):
        run.colums  # noqa: B018
    changed = run.with_options(k=5)
    assert changed.k == 5 and run.k == 4 and changed.info is run.info
    with pytest.raises(TypeError, match="unknown run option"):
        run.with_options(colums=["a"])


def test_the_generated_module_is_the_table_s_and_names_its_command(monkeypatch):
    """``options/generated.py`` is what ``python -m microagg.options.generate`` writes from the
    table now; a new option makes it stale, and the check says which command to run."""
    from microagg.declarations import Param
    from microagg.options import generate
    from microagg.options import run_options as table  # the run options' table

    assert generate.TARGET.read_text() == generate.source(), f"run `{generate.COMMAND}`"
    rounding = Param("trial_round", "float", None, "a base", low=0.0, low_open=True, nullable=True)
    monkeypatch.setattr(table, "RUN_OPTIONS", [*table.RUN_OPTIONS, rounding])
    monkeypatch.setitem(table.DECLARED, "trial_round", rounding)
    assert "    trial_round: float | None = None\n" in generate.source()
    assert '    trial_round: float | None\n    """a base"""' in generate.source()
    assert generate.main(["--check"]) == 1  # stale: nothing written


def test_an_option_registered_at_run_time_is_validated_and_kept_in_added():
    from microagg.declarations import Param
    from microagg.errors import ParameterError
    from microagg.options import RUN_OPTIONS, register, unregister, validate_run

    register(Param("trial_round", "float", None, "a base", low=0.0, low_open=True, nullable=True))
    try:
        run = validate_run({"k": 4, "trial_round": 10})
        assert run.added == {"trial_round": 10.0} and run.options["trial_round"] == 10.0
        assert run.with_options(trial_round=5.0).options["trial_round"] == 5.0
        with pytest.raises(ParameterError, match="trial_round"):
            validate_run({"trial_round": -1})
        with pytest.raises(ValueError, match="already declared"):
            register(RUN_OPTIONS[0])
    finally:
        unregister("trial_round")
    assert "trial_round" not in validate_run({}).options


@pytest.mark.parametrize(
    ("keyword", "meant"), [("stratta", "strata"), ("colums", "columns"), ("random_state", "seed")]
)
def test_an_unknown_keyword_is_an_unknown_option_with_the_name_meant(keyword, meant):
    df = _strata_frame()
    with pytest.raises(ParameterError) as told:
        microagg.microaggregate(df, k=3, columns=["x", "y"], **{keyword: "s"})
    message = str(told.value)
    assert f"unknown option {keyword!r}: did you mean {meant}?" in message
    assert "has no parameter" not in message


def test_the_command_line_names_the_flag_meant():
    from microagg.options.run_options import DECLARED
    from microagg.options.unknown_names import unknown_keyword_error

    error = unknown_keyword_error(
        "stratta", DECLARED, "mdav", {}, {}, flag=lambda o: DECLARED[o].flags[0]
    )
    assert f"did you mean {DECLARED['strata'].flags[0]}?" in str(error)
