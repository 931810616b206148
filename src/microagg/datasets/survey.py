"""A generated household survey shaped like EU-SILC, with EU-SILC's own variable names: persons in
households, a household id and a person id, household and personal weights, a region, household
incomes (hy*, the same for every member) and person incomes (py*), age and sex. Not real data:
drawn from a seeded generator, for tests, benchmarks and the households tutorial.
"""

from __future__ import annotations

import numpy as np

__all__ = ["household_survey"]

#: EU-SILC's names (DESIGN.md: db030 household id, rb030 person id, db090 household weight,
#: rb050 personal weight, db040 region, hy* household incomes, py* person incomes)
COLUMNS = (
    "db030",
    "rb030",
    "db040",
    "db090",
    "rb050",
    "hy010",
    "hy040",
    "hy090",
    "py010",
    "py090",
    "age",
    "rb090",
    "hh020",
)


def household_survey(households: int = 1000, seed: int = 0, regions: int = 4):
    """A pandas DataFrame of ``households`` households (1 to 6 members each) drawn with ``seed``:
    db030 (household id, 7-digit), rb030 (person id: db030·100 + member number), db040 (region
    code "AT1".."ATn"), db090 (household weight, constant in the household), rb050 (personal
    weight, equal to db090 as in EU-SILC's cross-section), hy010 / hy040 / hy090 (household
    gross income, rental income, interest: one value per household), py010 / py090 (employee
    income, unemployment benefits: 0 for children under 16), age (years), rb090 (sex, 1 / 2) and
    hh020 (tenure status, a household's code 1..4)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    size = rng.choice(np.arange(1, 7), households, p=[0.3, 0.3, 0.17, 0.15, 0.06, 0.02])
    hid = 1_000_000 + rng.choice(9_000_000, households, replace=False)
    member = np.concatenate([np.arange(1, s + 1) for s in size])
    each = np.repeat  # a household's value for each of its members

    def household(values):
        return each(values, size)

    weight = np.round(rng.lognormal(6.0, 0.5, households), 4)
    age = np.where(
        member <= 2,
        rng.integers(18, 90, len(member)),
        rng.integers(0, 30, len(member)),
    )
    adult = age >= 16
    employee = np.where(adult, np.round(rng.lognormal(9.8, 0.7, len(member)), 2), 0.0)
    employee[adult & (rng.random(len(member)) < 0.35)] = 0.0
    benefits = np.where(
        adult & (rng.random(len(member)) < 0.1), np.round(rng.lognormal(8, 0.5, len(member)), 2), 0
    )
    frame = pd.DataFrame(
        {
            "db030": household(hid),
            "rb030": household(hid) * 100 + member,
            "db040": household(
                np.array([f"AT{r}" for r in rng.integers(1, regions + 1, households)])
            ),
            "db090": household(weight),
            "rb050": household(weight),
            "hy010": household(np.round(rng.lognormal(10.4, 0.6, households), 2)),
            "hy040": household(
                np.round(rng.lognormal(7.0, 1.2, households) * (rng.random(households) < 0.2), 2)
            ),
            "hy090": household(np.round(rng.lognormal(4.0, 1.5, households), 2)),
            "py010": employee,
            "py090": np.asarray(benefits, dtype=np.float64),
            "age": age.astype(np.int64),
            "rb090": rng.integers(1, 3, len(member)).astype(np.int64),
        },
        columns=list(COLUMNS[:-1]),
    )
    # tenure status (1 owner, 2 tenant at market rate, 3 reduced rent, 4 free): a household's code
    frame["hh020"] = household(rng.choice(np.arange(1, 5), households, p=[0.6, 0.25, 0.1, 0.05]))
    return frame
