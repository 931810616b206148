"""microagg.app.figures: what the app shows for a run comes from the run's audit and the measure
registry (results, history, compare, portfolio), with no list of measures or options by hand."""

from __future__ import annotations

import pytest

import microagg
from microagg import measures
from microagg.app import figures, runspec
from microagg.report import report_audit


@pytest.fixture(scope="module")
def census():
    return microagg.datasets.load("census").head(150)


def _spec(**options):
    return runspec.RunSpec.of("census.csv", "census.csv", **options)


def _figures(df, spec):
    res = microagg.microaggregate(df, **spec.api_kwargs())
    return res, figures.run_figures(res, df)


def test_the_figures_of_a_run_are_its_audit_with_the_registrys_labels(census):
    res, f = _figures(census, _spec(k=3, columns=list(census.columns[:5])))
    expected = report_audit(res, census)[0]
    audit = figures.audit_of(f)
    assert [(g.group, g.name, g.value) for g in audit.figures] == [
        (g.group, g.name, pytest.approx(g.value) if isinstance(g.value, float) else g.value)
        for g in expected.figures
    ]
    assert all(g.measure is measures.MEASURES[g.name] for g in audit.figures)
    assert figures.headline(f) == res.information_loss
    rows = figures.figure_rows(audit)
    assert list(rows)[0] == "run" and {"risk", "utility"} <= set(rows)
    names = [g.name for group in rows.values() for g in group]
    assert len(names) == len(set(names))  # each measure once (IL, the smallest group)
    assert {g.name for g in expected.figures} == set(names)


def test_a_run_without_continuous_quasi_identifiers_keeps_its_run_figures_and_smallest_group():
    df = microagg.datasets.load("testdata").head(300)
    res, f = _figures(df, _spec(k=3, columns=["sex", "relat"], categorical=["sex", "relat"]))
    audit = figures.audit_of(f)
    assert audit["information_loss"] == res.information_loss
    assert audit["smallest_group"] == int(
        df.assign(**{c: res.data[c] for c in ("sex", "relat")})[["sex", "relat"]]
        .astype(str)
        .value_counts()
        .min()
    )
    assert set(audit.categories) == {"sex", "relat"} and figures.category_rows(audit)


def test_a_measure_added_to_the_registry_appears_in_results_history_and_compare(
    census, monkeypatch
):
    """Issue 33 adds measures to the audit: they reach the app with no edit of it."""
    monkeypatch.setattr(measures.registry, "MEASURES", dict(measures.MEASURES))

    @measures.measure(
        "trial_linkage",
        "trial linkage risk (%)",
        "share",
        "a test's own measure",
        "risk",
        digits=1,
        scale=100.0,
    )
    def _toy(c):
        return 0.25

    spec_a, spec_b = (
        _spec(k=3, columns=list(census.columns[:4])),
        _spec(k=5, columns=list(census.columns[:4])),
    )
    _, fa = _figures(census, spec_a)
    _, fb = _figures(census, spec_b)
    shown = {
        g.name: g for group in figures.figure_rows(figures.audit_of(fa)).values() for g in group
    }
    assert (
        shown["trial_linkage"].text() == "25.0"
        and shown["trial_linkage"].measure.label == "trial linkage risk (%)"
    )
    header, rows = figures.history_rows(
        [(1, spec_a, "done", None, fa), (2, spec_b, "running", None, None)]
    )
    column = header.index("trial linkage risk (%)")
    assert rows[0][column] == "25.0" and rows[1][column] is None and rows[1][-1] == "running"
    assert (
        "information loss (IL, %)" in header and "distance-based record linkage (DBRL, %)" in header
    )
    compared = {label: (a, b) for label, a, b in figures.compare_rows((spec_a, fa), (spec_b, fb))}
    assert compared["trial linkage risk (%)"] == ("25.0", "25.0") and compared["k"] == ("3", "5")


def test_compare_lists_every_option_that_differs_from_its_default(census):
    """'parameters: defaults' hid weights, median aggregation and declared kinds (issue 33, item
    4)."""
    df = microagg.datasets.load("testdata").head(400)
    plain = _spec(k=3, columns=["age", "income"])
    other = _spec(
        k=3,
        method="vmdav",
        columns=["age", "income", "sex"],
        categorical=["sex"],
        aggregation="median",
        weights={"age": 2.0},
        sample_weight="household_weights",
        gamma=0.3,
    )
    _, fa = _figures(df, plain)
    _, fb = _figures(df, other)
    compared = {label: (a, b) for label, a, b in figures.compare_rows((plain, fa), (other, fb))}
    assert compared["method"] == ("mdav", "vmdav") and compared["columns"] == (
        "age, income",
        "age, income, sex",
    )
    assert compared["categorical"] == ("none", "sex") and compared["aggregation"] == (
        "mean",
        "median",
    )
    assert compared["weights"] == ("none", "age=2") and compared["sample weight"] == (
        "none",
        "household_weights",
    )
    assert compared["parameter gamma"] == ("default", "0.3")
    assert "strata" not in compared and "distance" not in compared  # at their defaults in both runs
    assert compared["categorical sex: values changed (%)"][0] is None
    assert compared["weighted IL (%)"][0] is None and compared["weighted IL (%)"][1] is not None


@pytest.mark.parametrize("aggregation", ["mean", "median"])
def test_the_portfolio_table_agrees_with_the_headline(census, aggregation):
    """auto's members are compared on their partitions (to the group means); under median
    aggregation the run's IL is measured to the published medians: the table gives the winner's
    IL to the published values, the headline, and says why the two differ."""
    spec = _spec(
        k=3,
        method="auto",
        columns=list(census.columns[:5]),
        aggregation=aggregation,
        portfolio=["mdav", "vmdav"],
        improve=False,
        parallel=False,
    )
    res, f = _figures(census, spec)
    header, rows, caption = figures.portfolio_table(f)
    winner = next(row for row in rows if row[0].startswith("* "))
    headline = f"{figures.headline(f):.4f}"
    if aggregation == "mean":
        assert caption is None and "IL to the published values (%)" not in header
        assert winner[header.index("IL of its partition (%)")] == headline
    else:
        assert caption and winner[header.index("IL to the published values (%)")] == headline
        assert winner[header.index("IL of its partition (%)")] != headline
        assert all(
            row[header.index("IL to the published values (%)")] is None
            for row in rows
            if row is not winner
        )
    assert figures.portfolio_table({"figures": []}) is None
