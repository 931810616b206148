"""microagg.measures: utility and disclosure-risk measures against brute force and hand examples,
the registry."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import make_data
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg
from microagg import measures
from microagg.measures import categorical_report, category_distribution_distance, utility_report


def _dbrl_brute(X, Xp):
    """O(n²) reference for DBRL with 1/t for ties (on the original's standardisation)."""
    mean, std = X.mean(axis=0), np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    Z, Zp = (X - mean) / std, (Xp - mean) / std
    D = np.sqrt(((Z[:, None, :] - Zp[None, :, :]) ** 2).sum(axis=2))
    total = 0.0
    for i in range(len(Z)):
        near = D[i].min()
        tied = np.flatnonzero(D[i] <= near + 1e-9 * max(1.0, near))
        if i in tied:
            total += 1.0 / len(tied)
    return total / len(Z)


def _interval_brute(X, Xp, p):
    n, d = X.shape
    m = int(np.floor(p * n / 100))
    inside = 0
    for j in range(d):
        order = np.sort(Xp[:, j])
        for i in range(n):
            ranks = np.flatnonzero(order == Xp[i, j])
            lo, hi = order[max(ranks[0] - m, 0)], order[min(ranks[-1] + m, n - 1)]
            inside += lo <= X[i, j] <= hi
    return inside / (n * d)


@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(3, 80),
    d=st.integers(1, 4),
    k=st.integers(2, 3),
    p=st.sampled_from([0.0, 5.0, 10.0, 25.0]),
)
@settings(max_examples=25, deadline=None)
def test_risk_measures_match_brute_force(seed, n, d, k, p):
    if n < k:
        return
    X = make_data(seed, n, d)
    Xp = microagg.microaggregate(X, k=k).data
    assert measures.distance_linkage_risk(X, Xp) == pytest.approx(_dbrl_brute(X, Xp), abs=1e-12)
    assert measures.interval_disclosure_risk(X, Xp, p) == pytest.approx(
        _interval_brute(X, Xp, p), abs=1e-12
    )
    # a k-anonymous release: every record is tied with at least k-1 others
    assert measures.distance_linkage_risk(X, Xp) <= 1.0 / k + 1e-12


def test_dbrl_hand_examples():
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    assert measures.distance_linkage_risk(X, X) == 1.0
    # records 0,1 published as 0.5 (tie of 2): each links correctly with probability 1/2
    Xp = np.array([[0.5], [0.5], [10.0], [11.0]])
    assert measures.distance_linkage_risk(X, Xp) == pytest.approx((0.5 + 0.5 + 1 + 1) / 4)
    # swapped records never link to themselves
    assert measures.distance_linkage_risk(X, X[[1, 0, 3, 2]]) == 0.0


def test_interval_disclosure_hand_example():
    X = np.arange(10.0)[:, None]
    assert measures.interval_disclosure_risk(X, X, 0) == 1.0
    shifted = X + 1.5  # protected values 1.5..10.5; interval ±1 rank (p=10, n=10)
    # record i: interval [i+0.5, i+2.5] clipped at the ends; x_i = i is never inside
    assert measures.interval_disclosure_risk(X, shifted, 10) == 0.0
    # with p = 20 (±2 ranks) the interval [x'_(i-2), x'_(i+2)] = [i-0.5, i+3.5] contains i from i =
    # 2
    assert measures.interval_disclosure_risk(X, shifted, 20) == pytest.approx(8 / 10)
    with pytest.raises(ValueError, match="percentage"):
        measures.interval_disclosure_risk(X, X, 120)


def test_il1s_and_discrepancies_hand_examples():
    X = np.array([[1.0, 2.0], [3.0, 1.0], [5.0, 6.0], [7.0, 3.0]])
    Xp = X.copy()
    Xp[:, 0] = [2.0, 2.0, 6.0, 6.0]
    S = X.std(axis=0, ddof=1)
    # sdcMicro's IL1s is the sum (dUtility: sum(a, na.rm=TRUE)); il1s_per_value divides by n·p
    expected = np.sum(np.abs(X - Xp) / (np.sqrt(2) * S))
    assert measures.il1s(X, Xp) == pytest.approx(expected)
    assert measures.il1s_per_value(X, Xp) == pytest.approx(expected / X.size)
    assert measures.il1s(X, X) == 0.0
    # sdcMicro's eigen: each file on its own scale, eigenvalues of the correlation matrices, summed
    e = np.sort(np.linalg.eigvalsh(np.corrcoef(X.T)))[::-1]
    ep = np.sort(np.linalg.eigvalsh(np.corrcoef(Xp.T)))[::-1]
    assert measures.eigen_sdcmicro(X, Xp) == pytest.approx(np.sum(np.abs(e - ep) / e))
    assert measures.eigen_sdcmicro(X, X) == pytest.approx(0.0, abs=1e-12)
    assert (
        measures.eigen_sdcmicro(X, np.column_stack([Xp[:, 0], np.ones(4)])) is None
    )  # constant: R's NA
    assert measures.eigenvalue_discrepancy(X, X) == pytest.approx(0.0, abs=1e-9)
    assert measures.covariance_discrepancy(X, X) == pytest.approx((0.0, 0.0), abs=1e-12)
    # shrinking a variable towards its mean shows in the covariance and eigenvalue discrepancies
    assert measures.covariance_discrepancy(X, Xp)[0] > 0
    assert measures.eigenvalue_discrepancy(X, Xp) > 0
    mae, var = measures.covariance_discrepancy(X, Xp)
    Z = (X - X.mean(0)) / X.std(0)
    Zp = (Xp - X.mean(0)) / X.std(0)
    iu = np.triu_indices(2)
    diff = np.abs(np.cov(Z.T, bias=True) - np.cov(Zp.T, bias=True))[iu]
    assert mae == pytest.approx(diff.mean())
    assert var == pytest.approx(100 * np.mean(diff / np.abs(np.cov(Z.T, bias=True)[iu])))
    lam = np.sort(np.linalg.eigvalsh(np.cov(Z.T, bias=True)))[::-1]
    lam_p = np.sort(np.linalg.eigvalsh(np.cov(Zp.T, bias=True)))[::-1]
    assert measures.eigenvalue_discrepancy(X, Xp) == pytest.approx(
        100 * np.mean(np.abs(lam - lam_p) / lam)
    )


def test_reports_contain_every_measure():
    df = microagg.datasets.load("tarragona")
    res = microagg.microaggregate(df, k=3)
    util = measures.utility_report(df, res.data)
    for key in (
        "information_loss",
        "il1s",
        "delta_r_mean",
        "covariance_mae",
        "covariance_variation_percent",
        "eigenvalue_discrepancy_percent",
        "delta_w",
        "il1s_per_value",
        "eigen_sdcmicro",
    ):
        assert np.isfinite(util[key])
    assert util["information_loss"] == pytest.approx(res.information_loss)
    risk = measures.risk_report(df, res.data)
    assert 0 <= risk["record_linkage_dbrl"] <= 1 / 3 + 1e-12
    assert 0 <= risk["interval_disclosure"] <= 1
    assert risk["smallest_group"] >= 3


def test_category_measures():
    a = pd.Series(["x", "x", "y", "z"])
    b = pd.Series(["x", "y", "y", "y"])
    rep = categorical_report(a.to_frame("c"), b.to_frame("c"))["c"]
    assert rep["changed_share"] == pytest.approx(0.5)
    assert rep["distribution_tvd"] == pytest.approx(0.5 * (0.25 + 0.5 + 0.25))
    assert category_distribution_distance(a, a.sample(frac=1, random_state=0)) == 0.0
    X = pd.DataFrame({"v": [1.0, 2, 3, 4], "c": a})
    Xp = pd.DataFrame({"v": [1.5, 1.5, 3.5, 3.5], "c": b})
    out = utility_report(X, Xp, categorical=["c"])
    assert (
        out["categorical"]["c"]["changed_share"] == pytest.approx(0.5) and "information_loss" in out
    )


# --- the registry of measures and the audit
# ----------------------------------------------------------


def test_every_measure_is_declared_with_its_label_unit_and_reference():
    from microagg.measures import MEASURES, measures_of

    assert {"run", "utility", "risk"} == {g for m in MEASURES.values() for g in m.groups}
    for m in MEASURES.values():
        assert m.label and m.unit is not None and m.groups and callable(m.compute)
        assert m.reference or m.name in ("groups", "group_size_max")
    assert [m.name for m in measures_of("risk")][:5] == [
        "record_linkage_dbrl",
        "record_linkage_dbrl_records",
        "interval_disclosure",
        "interval_disclosure_p",
        "smallest_group",
    ]
    assert {
        "key_records_below_k",
        "reidentification_expected",
        "ldiversity_smallest_distinct",
        "interval_sdid_share",
        "interval_rmd_risk1",
        "row_order_informative_columns",
    } <= {m.name for m in measures_of("risk")}


def test_evaluate_the_report_and_json_list_every_registered_file_measure(tmp_path, capsys):
    """The command line's protect and evaluate, their --json and the report enumerate the registry:
    a new measure shows up everywhere without touching them (a file with strata, other keys,
    sampling weights, a sensitive column and a household id, so that every measure applies)."""
    import json
    from html import escape

    from microagg.cli import main
    from microagg.measures import measures_of
    from microagg.report import render_report

    df = microagg.datasets.load("testdata").head(400)
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    df.to_csv(src, index=False)
    roles = [
        "--strata",
        "urbrur",
        "--keys",
        "sex",
        "--sensitive",
        "relat",
        "--sample-weight",
        "sampling_weight",
        "--columns",
        "expend,income,savings",
        "--household",
        "ori_hid",
    ]
    assert main(["protect", str(src), "-o", str(out), "-k", "3", "-q", "--json", *roles]) == 0
    protected = json.loads(capsys.readouterr().out)
    assert main(["evaluate", str(src), str(out)]) == 0
    text = capsys.readouterr().out
    assert main(["evaluate", str(src), str(out), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    res = microagg.microaggregate(
        df,
        k=3,
        columns=["expend", "income", "savings"],
        strata="urbrur",
        keys=["sex"],
        sensitive=["relat"],
        sample_weight="sampling_weight",
        household="ori_hid",
    )
    html = render_report(res, df)
    for group in ("utility", "risk"):
        for m in measures_of(group):
            assert m.label in text
            assert m.name in record[group] and m.name in protected[group]
            assert record[group][m.name] == protected[group][m.name]  # to the last digit
            if m.name != "interval_disclosure_p":
                assert escape(m.label.split(" (")[0]) in html


def test_an_audit_keeps_a_runs_figures_and_a_comparisons_side_by_side():
    from microagg.measures import compare

    df = microagg.datasets.load("census").head(90)
    res = microagg.microaggregate(df, k=3)
    files = compare(df[res.columns], res.data[res.columns], scaler=res.scaler).audit(
        "utility", "risk"
    )
    both = res.audit.with_figures(files)
    assert both.group("run")["information_loss"] == res.information_loss
    assert both.group("utility")["information_loss"] == pytest.approx(res.information_loss)
    assert both["smallest_group"] >= 3 and set(both.group("run")) >= {
        "sse",
        "sst",
        "lower_bound",
        "gap",
        "groups",
    }


def test_dbrl_on_a_sample_links_those_records_exactly(monkeypatch):
    """Above DBRL_MAX_RECORDS, DBRL is the share of a fixed-seed sample of original records linked
    to their own protected record, each against every protected record: the full computation
    restricted to those records; the audit says how many were linked."""
    import microagg.measures as measures
    from microagg.measures import Comparison, distance_linkage_risk
    from microagg.measures.risk import linkage

    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 3))
    labels = microagg.methods.run("mdav", X, 3).labels
    cent = np.zeros((labels.max() + 1, 3))
    np.add.at(cent, labels, X)
    Xp = (cent / np.bincount(labels)[:, None])[labels]
    assert measures.dbrl_sample(600) is None
    monkeypatch.setattr(linkage, "DBRL_MAX_RECORDS", 200)
    sample = measures.dbrl_sample(600)
    assert len(sample) == 200 and np.array_equal(sample, measures.dbrl_sample(600))
    # the sample's links: the nearest protected record (ties 1/t) over all 600, by brute force, on
    # the original's standard scores
    mean, std = X.mean(axis=0), X.std(axis=0)
    Z, Zp = (X - mean) / std, (Xp - mean) / std
    d = ((Z[sample, None, :] - Zp[None, :, :]) ** 2).sum(-1) ** 0.5
    nearest = d.min(axis=1)
    own = d[np.arange(200), sample]
    tied = (d <= nearest[:, None] * (1 + 1e-9) + 1e-12).sum(axis=1)
    expected = np.mean(np.where(own <= nearest * (1 + 1e-9) + 1e-12, 1.0 / tied, 0.0))
    assert distance_linkage_risk(X, Xp, sample) == pytest.approx(expected)
    figures = {f.name: f.value for f in measures.audit(Comparison(X, Xp), "risk").figures}
    assert figures["record_linkage_dbrl_records"] == 200
    assert figures["record_linkage_dbrl"] == pytest.approx(expected)


# --- a new measure takes one module ---------------------------------------------------------------

SCRATCH_MEASURE = '''
"""A contributor's new measure (a trial name: tests/trials.py): one decorated function."""

import numpy as np

from microagg.measures.registry import measure


@measure("trial_values_changed", "published QI values that differ from the original (%)", "share",
         "a test's own measure", "risk", digits=1, scale=100.0, aligned=True)
def _values_changed(c):
    if not c.X.size:
        return None
    return float(np.mean(c.X != c.Xp))
'''


def test_a_measure_registered_in_a_scratch_module_shows_in_every_audit(tmp_path, monkeypatch):
    """Issue "Rooms and names": a new measure is one module. Registered from a module outside the
    package, it is in the file audit (after the registered risk figures), its JSON and its
    rendering, in a comparison's audit, and left out of an unaligned audit (it pairs records)."""
    import importlib.util

    from microagg.measures import AuditRoles, audit_files, compare, measures_of, registry

    monkeypatch.setattr(registry, "MEASURES", dict(registry.MEASURES))  # undone after the test
    path = tmp_path / "trial_measure.py"
    path.write_text(SCRATCH_MEASURE)
    spec = importlib.util.spec_from_file_location("trial_measure", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))

    assert [m.name for m in measures_of("risk")][-1] == "trial_values_changed"
    df = microagg.datasets.load("testdata").head(300)
    cols = ["expend", "income", "savings"]
    out = microagg.microaggregate(df, k=3, columns=cols, audit=False).data
    expected = float(np.mean(df[cols].to_numpy(np.float64) != out[cols].to_numpy(np.float64)))
    roles = AuditRoles(tuple(cols), dict.fromkeys(cols, "continuous"), 3)
    audit = audit_files(df, out, roles)
    assert audit.group("risk")["trial_values_changed"] == pytest.approx(expected)
    assert audit.to_dict()["groups"]["risk"]["trial_values_changed"] == pytest.approx(expected)
    shown = {f.name: f for f in audit.rows("risk")}["trial_values_changed"]
    assert shown.text() == f"{100 * expected:.1f}"
    assert shown.measure.reference == "a test's own measure"
    compared = compare(df[cols], out[cols]).group("risk")
    assert compared["trial_values_changed"] == pytest.approx(expected)
    assert "trial_values_changed" not in audit_files(df, out, roles, aligned=False).group("risk")


def test_the_registry_is_full_whichever_module_is_imported_first():
    """Importing any module of the package runs the package first, which imports the measures
    in their order: the registry a bare ``registry`` import sees is the package's."""
    import subprocess
    import sys

    from microagg.measures import measures_of

    code = (
        "from microagg.measures.registry import measures_of; "
        "print(','.join(m.name for g in ('run', 'utility', 'risk') for m in measures_of(g)))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    fresh = run.stdout.strip()
    assert fresh.split(",") == [m.name for g in ("run", "utility", "risk") for m in measures_of(g)]
    assert fresh.split(",")[:3] == ["information_loss", "sse", "sst"]


def test_no_module_of_the_package_imports_a_package_above_it():
    """The package ``__init__`` imports the measures (which fills the registry); a module below it
    importing it back would make a circle the import graph does not show (importing a.b runs a
    first), so none does: each imports its siblings by name."""
    import ast
    import pathlib

    root = pathlib.Path(microagg.__file__).parent / "measures"
    for path in root.rglob("*.py"):
        if path.name == "__init__.py" and path.parent == root:
            continue
        parts = path.relative_to(root.parent.parent).with_suffix("").parts
        package = parts[:-1]  # the module's own package: a package __init__ is in it too
        ancestors = {".".join(package[:i]) for i in range(2, len(package) + 1)}  # below microagg
        if path.name == "__init__.py":
            ancestors.discard(".".join(package))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = list(package[: len(package) - node.level + 1]) if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                assert target not in ancestors, (str(path), target)
            elif isinstance(node, ast.Import):
                assert not {alias.name for alias in node.names} & ancestors, str(path)
