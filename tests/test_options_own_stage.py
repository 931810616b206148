"""A run option is one declaration (issue "Rooms and names"): a rounding option, under the trial
name ``trial_round`` (``--trial-round``; tests/trials.py: a real ``--round`` stays free), declared
in this module alone with its own stage (``Param.stage`` at the pipeline's "published"
point), runs through every door: ``microaggregate``, ``microagg.protect``, the command line (its
flag derived from the table), the app's controls and explore; the out-of-core mode refuses it in
one line. The published values are rounded, not group means: the file holds them, is k-anonymous
on the keys as read back, and the audit measures them. No other file of the package is touched,
and the registration is removed after each test."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg.cli import build_parser, main
from microagg.declarations import Param
from microagg.errors import ParameterError
from microagg.options import GRID_OPTIONS, register, unregister
from microagg.options.run_options import DECLARED

COLUMNS = ["age", "income"]


def round_to_base(values, base: float):
    """The published continuous values rounded to the nearest multiple of ``base`` (a group's
    records share one value before, hence after: the groups stay k-anonymous)."""
    rounded = {c: np.round(v / base) * base for c, v in values.continuous.items()}
    return replace(
        values, continuous=rounded, nature=f"{values.nature} rounded to multiples of {base:g}"
    )


ROUND = Param(
    "trial_round",
    "float",
    None,
    "round the published continuous QI values to a multiple of this base",
    low=0.0,
    low_open=True,
    nullable=True,
    flags=("--trial-round",),
    metavar="BASE",
    stage=round_to_base,
)


@pytest.fixture
def rounding():
    register(ROUND)
    try:
        yield ROUND
    finally:
        unregister(ROUND.name)


def _records(n: int = 90) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame(
        {
            "id": [f"r{i:03d}" for i in range(n)],
            "age": rng.integers(18, 90, n).astype(float),
            "income": rng.normal(3000, 800, n).round(2),
            "region": rng.choice(["north", "south"], n),
        }
    )


def _il_to(original: pd.DataFrame, published: pd.DataFrame) -> float:
    """IL = 100·SSE/SST on the original's z-scores, SSE to the published values."""
    X = original[COLUMNS].to_numpy(float)
    mean, std = X.mean(axis=0), X.std(axis=0)
    Z, Zp = (X - mean) / std, (published[COLUMNS].to_numpy(float) - mean) / std
    return 100.0 * ((Z - Zp) ** 2).sum() / ((Z - Z.mean(axis=0)) ** 2).sum()


def _rounded(frame: pd.DataFrame, base: float) -> bool:
    values = frame[COLUMNS].to_numpy(float)
    return bool(np.allclose(values, np.round(values / base) * base))


def test_the_api_publishes_and_measures_the_rounded_values(rounding):
    df = _records()
    plain = microagg.microaggregate(df, 3, columns=COLUMNS)
    res = microagg.microaggregate(df, 3, columns=COLUMNS, trial_round=10.0)
    assert _rounded(res.data, 10.0) and not _rounded(plain.data, 10.0)
    assert np.array_equal(res.labels, plain.labels)  # the stage acts after the method
    assert res.data[["id", "region"]].equals(df[["id", "region"]])  # the rest as it came
    assert res.data.groupby(COLUMNS).size().min() >= 3
    assert res.information_loss == pytest.approx(_il_to(df, res.data), rel=1e-9)
    assert res.information_loss != pytest.approx(plain.information_loss, rel=1e-6)
    assert "rounded to multiples of 10" in res.publication.note


def test_protect_and_the_command_line_publish_the_same_rounded_file(tmp_path, rounding):
    src, by_api, by_cli = tmp_path / "in.csv", tmp_path / "api.csv", tmp_path / "cli.csv"
    df = _records()
    df.to_csv(src, index=False)
    res = microagg.protect(src, by_api, k=3, columns=COLUMNS, keys=["region"], trial_round=10.0)
    argv = ["protect", str(src), "-o", str(by_cli), "-k", "3", "--columns", "age,income"]
    assert main([*argv, "--keys", "region", "--trial-round", "10", "-q"]) == 0
    assert by_api.read_bytes() == by_cli.read_bytes()  # every door, one file
    back = pd.read_csv(by_cli)
    assert _rounded(back, 10.0) and res.file.k_anonymous  # as read back, on the keys too
    assert back.groupby(COLUMNS).size().min() >= 3  # a suppressed key (missing) matches any
    assert res.audit["information_loss"] == pytest.approx(_il_to(df, back), rel=1e-9)
    manifest = by_cli.with_name("cli.csv.manifest.json").read_text()
    assert "--trial-round 10" in manifest  # the reproduce command names it


def test_the_command_line_and_the_app_offer_it_only_while_registered(rounding):
    from microagg.app.controls import option_controls

    protect = build_parser()._subparsers._group_actions[0].choices["protect"]
    assert "--trial-round" in protect.format_help()
    assert "trial_round" in [control.param.name for control in option_controls()]
    unregister(ROUND.name)
    try:
        protect = build_parser()._subparsers._group_actions[0].choices["protect"]
        assert "--trial-round" not in protect.format_help()
        assert "trial_round" not in DECLARED and "trial_round" not in GRID_OPTIONS
    finally:
        register(ROUND)


def test_explore_runs_the_grid_with_the_rounded_values(tmp_path, rounding):
    df = _records()
    ex = microagg.explore(df, k=[3, 4], methods=["mdav"], columns=COLUMNS, trial_round=10.0)
    for run in ex.runs:
        single = microagg.microaggregate(df, run.k, columns=COLUMNS, trial_round=10.0)
        assert run.status == "ok" and run.il == pytest.approx(single.information_loss, rel=1e-9)
    src, saved = tmp_path / "in.csv", tmp_path / "explored.json"
    df.to_csv(src, index=False)
    argv = ["explore", str(src), "-k", "3,4", "--methods", "mdav", "--columns", "age,income"]
    assert main([*argv, "--trial-round", "10", "-o", str(saved), "-q"]) == 0
    document, _ = microagg.explore.load(saved)
    assert document["options"]["trial_round"] == 10.0  # and each run's reproduce command:
    assert all("--trial-round 10" in run["commands"]["protect"] for run in document["runs"])
    assert [run["il"] for run in document["runs"]] == pytest.approx(
        [run.il for run in ex.runs], rel=1e-9
    )


def test_the_out_of_core_mode_refuses_it_in_one_line(tmp_path, rounding):
    src = tmp_path / "in.csv"
    _records().to_csv(src, index=False)
    with pytest.raises(ParameterError, match="drop trial_round"):
        microagg.protect(
            src,
            tmp_path / "out",
            k=3,
            columns=COLUMNS,
            out_of_core=True,
            block_size=30,
            trial_round=10.0,
        )
    assert not (tmp_path / "out").exists()


def test_a_bad_value_is_one_error_before_any_work(tmp_path, rounding):
    with pytest.raises(ParameterError, match="trial_round"):
        microagg.microaggregate(Path(tmp_path / "missing.csv"), 3, trial_round=-1.0)
