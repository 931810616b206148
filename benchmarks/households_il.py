"""What k-anonymity by households costs (issue 54): information loss of MDAV (k = 3, strata db040,
weights db090) on a generated EU-SILC-shaped survey (``datasets.household_survey``), plain and with
``household="db030"``, for household-level QIs only, person-level QIs only and both; with the
published groups made of one household's members in the plain run, and the seconds.

    python benchmarks/households_il.py [--households 5000] [--seed 0]

Results: benchmarks/results/households_il.{json,md}.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import md_table, write_results  # noqa: E402

QI_SETS = {
    "household-level (hy010, hy040, hy090)": ["hy010", "hy040", "hy090"],
    "person-level (py010, py090, age)": ["py010", "py090", "age"],
    "both": ["hy010", "hy040", "hy090", "py010", "py090", "age"],
}


def one_household_groups(labels: np.ndarray, homes: np.ndarray) -> int:
    """Groups whose records all belong to one household."""
    from microagg.households import households_per_group

    return int((households_per_group(labels, homes) == 1).sum())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--households", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import microagg
    from microagg.measures.risk.household_risk import household_codes

    df = microagg.datasets.household_survey(args.households, seed=args.seed)
    homes = household_codes(df, ["db030"])
    microagg.microaggregate(df.head(300), k=3, columns=["py010", "age"], household="db030")
    rows = []
    for name, columns in QI_SETS.items():
        options = dict(
            k=3,
            columns=columns,
            strata="db040",
            sample_weight="db090",
            continuous=["age"] if "age" in columns else None,
            audit=False,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            plain = microagg.microaggregate(df, **options)
            t_plain = time.perf_counter() - t
            t = time.perf_counter()
            by_households = microagg.microaggregate(df, household="db030", **options)
            t_households = time.perf_counter() - t
        rows.append(
            {
                "quasi_identifiers": name,
                "records": len(df),
                "households": int(homes.max()) + 1,
                "il_plain": round(plain.information_loss, 3),
                "il_households": round(by_households.information_loss, 3),
                "plain_groups_of_one_household": one_household_groups(plain.labels, homes),
                "plain_groups": int(plain.labels.max()) + 1,
                "household_group_multiple": by_households.method_facts.get(
                    "household_group_multiple"
                ),
                "seconds_plain": round(t_plain, 2),
                "seconds_households": round(t_households, 2),
            }
        )
        print(rows[-1], flush=True)
    write_results("households_il", rows, md_table(list(rows[0]), [list(r.values()) for r in rows]))


if __name__ == "__main__":
    main()
