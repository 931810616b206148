"""Every door, one file: the API (``microagg.protect``), the command line (``microagg protect``)
and the app's run (what its download serves) publish the same file for every option that changes
a publication, in every format.

The cases come from the options table: every run option (``options.RUN_OPTIONS``) is either
exercised here or named in ``NOT_A_PUBLICATION_CHANGE`` with the reason, so an option added to
the table fails this module until it is classified. A shuffled file is compared as the multiset
of its rows (its order is random by design); every file's records are checked against their
originals by the id column, which is published unchanged.
"""

from __future__ import annotations

import shlex

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg import cli, options
from microagg.app import protect_worker, runspec

BASE = {"k": 3, "columns": ["income", "expend", "age"], "seed": 1}

#: option -> the run options exercising it (added to BASE)
CASES = {
    "plain": {},
    "method": {"method": "vmdav"},
    "work": {
        "method": "icsm",
        "work": 20_000,
    },  # a work budget: the same file at any load, through every door
    "shuffle": {"shuffle": True},
    "household": {"shuffle": True, "household": "hh"},
    "household_level": {
        "columns": ["income", "expend", "hinc"],
        "household": "hh",
        "household_level": ["hinc"],
    },
    "merged_strata=recode": {
        "strata": ["region"],
        "merge_small_strata": True,
        "merged_strata": "recode",
    },
    "merged_strata=suppress": {
        "strata": ["region"],
        "merge_small_strata": True,
        "merged_strata": "suppress",
    },
    "keys": {"keys": ["sex"]},
    "on_keys_below_k": {"keys": ["sex", "educ"], "on_keys_below_k": "suppress"},
    "key_importance": {"keys": ["sex", "educ"], "key_importance": ["educ", "sex"]},
    "key_anonymity": {"keys": ["sex", "educ"], "key_anonymity": "keys"},
    "categorical": {"columns": ["income", "expend", "region"], "categorical": ["region"]},
    "ordinal": {"columns": ["income", "expend", "educ"], "ordinal": ["educ"]},
    "continuous": {"columns": ["income", "expend", "region"], "continuous": ["region"]},
    "aggregation": {"aggregation": "median"},
    "trim": {"aggregation": "trimmed", "trim": 0.2},
    "aggregation_params": {"aggregation": "trimmed", "aggregation_params": {"trim": 0.3}},
    "sample_weight": {"sample_weight": "weight"},
    "weights": {"weights": {"income": 2.0}},
    "distance": {"distance": "mahalanobis"},
    "standardize": {"standardize": False},
    "block_size": {"block_size": 60},
    "refine": {"block_size": 60, "refine": 0.5},
    "missing": {"missing": ["n/a"]},
    "sensitive": {"sensitive": ["note"]},
    "t_closeness": {"sensitive": ["note", "weight"], "t_closeness": 0.2},
    "t_closeness_algorithm": {
        "sensitive": ["note"],
        "t_closeness": 0.2,
        "t_closeness_algorithm": "first",
    },
    "epsilon": {"epsilon": 2.0, "bounds": {"income": (0.0, 1e6), "expend": (0.0, 1e6)}},
    "dp_mechanism": {
        "method": "individual-ranking",
        "dp_mechanism": "individual-ranking",
        "epsilon": 5.0,
    },
}
#: options that do not change the published file, or that this module cannot hold fixed, and why
NOT_A_PUBLICATION_CHANGE = {
    "k": "in every case (BASE)",
    "columns": "in every case (BASE)",
    "seed": "in every case (BASE)",
    "time_limit": "a time limit stops on the wall clock: doors agree only on a work budget",
    "scheduler": (
        "how the partitioned mode's blocks are run, not what they publish (block_size is exercised)"
    ),
    "audit": "the API's audit of the run; a published file is always audited",
    "progress": "where progress is reported",
    "labels": (
        "a given partition (explore's runs): tests/test_app_map.py publishes one through every door"
    ),
    "shuffle_seed": (
        "the API's test hook for the shuffle: a publication's order comes from fresh entropy"
    ),
}
#: the cases also run in the typed formats (every case runs in CSV)
TYPED_CASES = ("plain", "shuffle", "merged_strata=recode", "categorical", "keys", "on_keys_below_k")
FORMATS = (".csv", ".parquet", ".dta", ".sav", ".xlsx")


def test_every_run_option_is_exercised_or_classified():
    exercised = {name for case in CASES.values() for name in case} | set(BASE)
    declared = {p.name for p in options.RUN_OPTIONS}
    unclassified = declared - exercised - set(NOT_A_PUBLICATION_CHANGE)
    assert not unclassified, (
        f"classify these run options in tests/test_doors.py: {sorted(unclassified)}"
    )
    assert not (set(NOT_A_PUBLICATION_CHANGE) - declared), "stale names in NOT_A_PUBLICATION_CHANGE"


def _survey(n=150, seed=3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    region = rng.integers(1, 4, n)
    region[:2] = 9  # a stratum of 2 records: merged
    return pd.DataFrame(
        {
            "id": np.arange(1000, 1000 + n),
            "region": region,
            "sex": rng.integers(1, 3, n),
            "age": rng.integers(18, 90, n),
            "income": np.round(rng.lognormal(10, 1, n), 2),
            "expend": np.round(rng.lognormal(9, 1, n), 2),
            "educ": rng.integers(1, 6, n),
            "hh": np.repeat(np.arange(n // 3 + 1), 3)[:n],
            "weight": np.round(rng.uniform(50, 500, n), 1),
            "note": rng.choice(["a", "b", "c"], n),
            "hinc": np.repeat(np.round(rng.lognormal(11, 1, n // 3 + 1), 2), 3)[:n],
        }
    )


def _write(df: pd.DataFrame, path) -> None:
    suffix = path.suffix
    if suffix == ".csv":
        df.to_csv(path, index=False)
    elif suffix == ".parquet":
        df.to_parquet(path, index=False)
    elif suffix == ".dta":
        df.to_stata(path, write_index=False)
    elif suffix == ".sav":
        import pyreadstat

        pyreadstat.write_sav(df, str(path))
    else:
        df.to_excel(path, index=False)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("doors")
    df = _survey()
    out = {}
    for suffix in FORMATS:
        path = root / f"survey{suffix}"
        _write(df, path)
        out[suffix] = path
    return df, out


def _cases():
    for suffix in FORMATS:
        for name in CASES:
            if suffix == ".csv" or name in TYPED_CASES:
                yield pytest.param(suffix, name, id=f"{name}{suffix}")


def _unstamped(path) -> bytes:
    """The file's bytes without the time its writer stamps into the header (SPSS: the creation
    date and time, bytes 92 to 108; Stata: its <timestamp> tag)."""
    import re

    data = path.read_bytes()
    if path.suffix == ".sav":
        return data[:92] + data[109:]
    if path.suffix == ".dta":
        return re.sub(
            rb"<timestamp>.{0,40}?</timestamp>",
            b"<timestamp></timestamp>",
            data,
            count=1,
            flags=re.S,
        )
    return data


def _rows(path) -> pd.DataFrame:
    """The file as its reader reads it, rows in the id's order (a shuffled file's order undone by
    its ids)."""
    frame = microagg.io.read(path).frame
    return frame.sort_values("id", kind="stable").reset_index(drop=True)


def _publish_three_ways(src, case: dict, tmp_path):
    run = {**BASE, **case}
    api = tmp_path / f"api{src.suffix}"
    microagg.protect(src, api, **run)
    command = options.command_line(str(src), str(tmp_path / f"cli{src.suffix}"), run, {})
    assert cli.main(shlex.split(command)[1:] + ["-q"]) == 0
    spec = runspec.RunSpec.of(str(src), src.name, **run)
    protect_worker.publish_run(spec, tmp_path / "app", 1)
    app = protect_worker.published_path(tmp_path / "app", 1, spec)
    return api, tmp_path / f"cli{src.suffix}", app


@pytest.mark.parametrize("suffix, name", list(_cases()))
def test_every_door_publishes_the_same_file(sources, tmp_path, suffix, name):
    _, paths = sources
    original = microagg.io.read(paths[suffix]).frame  # the input as its reader reads it
    api, cli_out, app = _publish_three_ways(paths[suffix], CASES[name], tmp_path)
    shuffled = bool(CASES[name].get("shuffle"))
    if not shuffled and suffix != ".xlsx":  # a workbook's zip stamps its members' times
        assert _unstamped(api) == _unstamped(cli_out) == _unstamped(app)
    frames = [_rows(p) for p in (api, cli_out, app)]
    for other in frames[1:]:
        pd.testing.assert_frame_equal(frames[0], other)
    published = frames[0]
    # every record is its original's: what the run did not change is the original record's, by its
    # id
    by_id = original.set_index("id").loc[published["id"]].reset_index()
    changed = (
        set(CASES[name].get("columns", BASE["columns"]))
        | {"region"}
        | set(CASES[name].get("keys", ()))
    )
    for column in original.columns:
        if column not in changed:
            np.testing.assert_array_equal(
                published[column].astype(str).to_numpy(),
                by_id[column].astype(str).to_numpy(),
                err_msg=column,
            )
    if (
        shuffled
    ):  # the shuffled file holds the records the unshuffled run publishes, each its own values
        plain = tmp_path / f"plain{suffix}"
        microagg.protect(
            paths[suffix],
            plain,
            **{
                **BASE,
                **{k: v for k, v in CASES[name].items() if k != "shuffle"},
            },
        )
        pd.testing.assert_frame_equal(_rows(plain), published)
    if name == "household":  # each household's records stay together
        order = microagg.io.read(api).frame["hh"].to_numpy()
        assert all(
            len(np.flatnonzero(np.diff(np.flatnonzero(order == h)) != 1)) == 0
            for h in np.unique(order)
        )
