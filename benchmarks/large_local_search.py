"""Local search (`lsearch`) against MDAV on large synthetic data, k = 3: IL and seconds against n.

Data (``make_data``, seeded): a 30-component Gaussian mixture in 8 dimensions, meant to look
like survey microdata rather than i.i.d. noise. Component weights are Dirichlet(1) (some
clusters ten times larger than others), centres uniform in [−4, 4]^8, each component with its
own random covariance (a random rotation of scales drawn from [0.3, 1.5]). Then three columns
are made skewed, exp(0.6·x) (log-normal within a component: incomes, amounts), and two columns
are integers with many ties, round(2·x) clipped to [−6, 6] (ages in bands, counts, codes).
The matrix is z-scored column by column as the pipeline does before any method.

Each n runs MDAV (exact tree kernel) and `lsearch` (which starts from that same MDAV partition
and is given ``--budget`` × MDAV's measured seconds as its time limit, MDAV included) in one
process, so the ratios come from one run on one machine state; ``os.getloadavg()`` is
recorded with every row. Results: benchmarks/results/large_local_search.{json,md}, the README
block between the ``large-local-search`` markers and the figure
benchmarks/results/large_local_search.png (matplotlib, the bench extra).

    python benchmarks/large_local_search.py [--sizes 1e4,1e5,1e6] [--budget 4.5] [--render]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, md_table, update_readme, write_results  # noqa: E402

NAME = "large_local_search"


def make_data(n: int, seed: int = 0) -> np.ndarray:
    """z-scored (n, 8) records from the generator described in the module docstring."""
    rng = np.random.default_rng(seed)
    d, components = 8, 30
    weights = rng.dirichlet(np.ones(components))
    centres = rng.uniform(-4.0, 4.0, size=(components, d))
    comp = rng.choice(components, size=n, p=weights)
    X = np.empty((n, d))
    for c in range(components):
        rows = np.flatnonzero(comp == c)
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        scale = rng.uniform(0.3, 1.5, size=d)
        X[rows] = centres[c] + (rng.normal(size=(len(rows), d)) * scale) @ q.T
    X[:, :3] = np.exp(0.6 * X[:, :3])  # skewed (log-normal) columns
    X[:, 3:5] = np.clip(np.round(2.0 * X[:, 3:5]), -6, 6)  # integer columns with ties
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return np.ascontiguousarray(X)
