"""Refactors keep results: every method's labels and every audit figure as committed."""

import json
import math

import pytest
from fingerprints import FIXTURE, compute


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


@pytest.fixture(scope="module")
def now():
    return compute()


def test_every_methods_labels_and_audit_are_as_committed(now):
    committed = json.loads(FIXTURE.read_text())
    assert sorted(now["methods"]) == sorted(committed["methods"])
    for method, expected in committed["methods"].items():
        got = now["methods"][method]
        assert got["labels"] == expected["labels"], method
        assert got["audit"].keys() == expected["audit"].keys(), method
        for name, value in expected["audit"].items():
            assert _same(got["audit"][name], value), (method, name, got["audit"][name], value)


def test_the_default_survey_run_and_its_published_file_are_as_committed(now):
    committed = json.loads(FIXTURE.read_text())
    assert now["testdata_default"]["labels"] == committed["testdata_default"]["labels"]
    assert now["testdata_default"]["data"] == committed["testdata_default"]["data"]
    for name, value in committed["testdata_default"]["audit"].items():
        assert _same(now["testdata_default"]["audit"][name], value), name
    assert now["testdata_file_sha256"] == committed["testdata_file_sha256"]
