"""Code reading a run's options: pyright must report the misspelt option and the wrong type
(tests/test_typing.py). Checked, not run."""

from microagg.options import validate_run

run = validate_run({"k": 3, "aggregation": "trimmed"})
k: int = run.k
trim: float | None = run.trim
print(run.colums)  # line 9: columns
limit: float = run.time_limit  # line 10: float | None
run.with_options(k=4).strata  # noqa: B018 (pyright reads this line)
