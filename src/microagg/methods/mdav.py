"""The MDAV family: MDAV and V-MDAV (kernels in ``kernels/mdav*.py``, imported when a method runs,
so listing the registry stays light)."""

from __future__ import annotations

import warnings

import numpy as np

from ..declarations import Param
from ..errors import RunWarning
from . import MethodOutput, register, step_seconds

ALGORITHM = Param(
    "algorithm",
    "str",
    "auto",
    "kernel: 'plain' O(n²·d/k) reference loop, 'tree' exact KD-tree version (same labels), "
    "'auto' the tree from 3000 records on",
    choices=("auto", "plain", "tree"),
)
MDAV_ALGORITHM = Param(
    "algorithm",
    "str",
    "auto",
    "kernel (all give the same labels): 'plain' O(n²·d/k) reference loop, 'brute' "
    "vectorised brute force, 'numpy' the same in numpy (nothing to compile), 'tree' exact "
    "KD-tree version, 'auto' brute force up to 10,000 records (up to 5,000 in numpy until its "
    "kernel is compiled), else the tree handing over to brute force once measured cheaper",
    choices=("auto", "plain", "brute", "numpy", "tree"),
)


@register(
    "mdav",
    family="mdav",
    paper="Domingo-Ferrer & Torra 2005; ICSM paper Algorithm 1",
    complexity="O(n²·d/k) time worst case (KD-tree pruning: far less on real data), O(n·d) memory",
    variable_size=False,
    params=(
        Param(
            "variant",
            "str",
            "classic",
            "'classic': pairs of groups while at least 3k records remain (reproduces the published"
            " IL); 'icsm': the ICSM paper's Algorithm 1 wording (pairs while 2k remain, leftovers"
            " to the nearest group)",
            choices=("classic", "icsm"),
        ),
        MDAV_ALGORITHM,
        # the idle cores by default (issue 56): what a user waits for is the wall time, and two
        # threads on idle cores shorten it (benchmarks/results/parallel_mdav.md: 1.81-1.97x at
        # 10^6); the one-thread default of before came from file_to_file's ratio to the run, a
        # yardstick that rewarded a slower run. The probe grants one thread on busy cores.
        Param(
            "threads",
            "int",
            None,
            "threads for MDAV from 100,000 records on (the same labels on any number): None (the"
            " default) the cores a 0.1 s probe finds idle, checked as the run goes; 1 one thread"
            " throughout; n at most n",
            low=1,
            nullable=True,
        ),
    ),
)
def mdav(X, k, *, seed, deadline, progress, variant, algorithm, threads):
    """Maximum Distance to Average Vector: fixed-size groups around extreme records.

    variant='classic' is the standard MDAV (pairs of groups while at least 3k records remain),
    which reproduces the published information loss on census, tarragona and eia;
    variant='icsm' follows the ICSM paper's Algorithm 1 wording literally (pairs while 2k remain,
    leftovers to the nearest group). algorithm='plain' is the O(n²·d/k) reference loop,
    'brute' the same loop vectorised (records as columns, about one distance pass per pair of
    groups: the second seed's pass also computes the distances to a guess of the next first
    seed), 'numpy' the same brute force in numpy, 'tree' the exact KD-tree version
    (branch-and-bound nearest / farthest queries on a tree with deletions), 'auto' brute force up
    to 10,000 records (up to 5,000 in numpy on a first run, while compiling its kernel would cost
    far more than the run), else the tree handing over to brute force when that is measured cheaper
    (``kernels.mdav_tree.mdav_tree_kernel``); all give the same labels. From 100,000 records MDAV
    runs on the cores a short probe finds idle (``threads``: None, the default; n: at most n; 1:
    one thread): the tree's queries of two pairs of groups at a time on two threads, the
    brute-force passes split into ranges (the same labels, bit for bit;
    ``kernels.mdav_labels.mdav_labels``), checked against one thread as the run goes. With a time
    limit, the brute-force and tree kernels stop forming groups when it ends and the records not
    reached are grouped by median splits (``within_time``); the plain and numpy loops run to the
    end.
    """
    from ..kernels.mdav_labels import mdav_labels
    from ..onehot import OneHot

    progress("mdav", None, f"{len(X)} records")
    if isinstance(X, OneHot):  # nominal QIs with many levels, kept as codes (issue 57)
        return _mdav_codes(X, k, variant == "classic", step_seconds(deadline))
    labels = mdav_labels(X, k, variant == "classic", algorithm, step_seconds(deadline), threads)
    return within_time(X, labels, k, "mdav")


@register(
    "vmdav",
    family="mdav",
    paper="Solanas & Martínez-Ballesté 2006 (V-MDAV)",
    complexity="O(n²·d/k) time worst case (KD-tree pruning: far less on real data), O(n·d) memory",
    variable_size=True,
    params=(
        Param(
            "gamma",
            "float",
            0.2,
            "extension factor γ: the nearest unassigned record e joins the group "
            "while d_in(e) < γ·d_out(e)",
            low=0.0,
        ),
        Param(
            "centroid",
            "str",
            "remaining",
            "'remaining': the centroid of the unassigned records for every group, as MDAV;"
            " 'global': the centroid of the whole data set",
            choices=("remaining", "global"),
        ),
        ALGORITHM,
    ),
)
def vmdav(X, k, *, seed, deadline, progress, gamma, centroid, algorithm):
    """V-MDAV: MDAV groups of k extended up to 2k−1 while d_in(e) < gamma·d_out(e).

    After a group of k is formed around the record farthest from the centroid, the unassigned
    record e nearest to the group (d_in: Euclidean distance to its closest member) joins while
    d_in(e) < gamma·d_out(e), d_out being e's distance to its nearest other unassigned record.
    Fewer than k leftovers join the group with the nearest centroid. centroid='remaining'
    recomputes the centroid of the unassigned records for every group as MDAV does (lower SSE
    on census, tarragona and eia than 'global', the centroid of the whole data set).
    algorithm: 'plain' reference loop, 'tree' exact KD-tree version (same labels), 'auto' the
    tree from 3000 records on.
    """
    from ..kernels.mdav_labels import vmdav_labels

    progress("vmdav", None, f"{len(X)} records")
    return within_time(
        X,
        vmdav_labels(X, k, gamma, centroid == "global", algorithm, step_seconds(deadline)),
        k,
        "vmdav",
    )


def _mdav_codes(X, k: int, classic: bool, seconds) -> MethodOutput:
    """MDAV on a ``onehot.OneHot`` (``kernels.mdav_onehot``): the dense embedding's groups up to
    floating-point ties, in time O(n²·(p + q)/k) whatever the levels. Records a time limit left
    are grouped by median splits over the numeric columns and the codes (``within_time``)."""
    from ..kernels.mdav_labels import _mdav_budget
    from ..kernels.mdav_onehot import mdav_onehot_kernel

    budget = _mdav_budget(seconds, len(X), X.numeric.shape[1] + X.codes.shape[1])
    labels = mdav_onehot_kernel(X.numeric, X.codes, X.units**2, X.sizes, k, classic, budget)
    if (labels >= 0).all():
        return MethodOutput(labels)
    return within_time(np.hstack([X.numeric, X.codes.astype(np.float64)]), labels, k, "mdav")


def within_time(X: np.ndarray, labels: np.ndarray, k: int, name: str) -> MethodOutput:
    """The output of an MDAV kernel that may have stopped at its time limit: the records it did
    not reach (label −1) are grouped by median splits (``kernels.mdav_labels.group_unreached``;
    groups of k..2k−1, far coarser than MDAV's), with a warning and, in extras, ``reached`` (the
    share MDAV grouped) and ``stopped`` (the note)."""
    from ..kernels.mdav_labels import group_unreached

    reached = group_unreached(X, labels, k)
    if reached == 1.0:
        return MethodOutput(labels)
    note = (
        f"{name} reached the time limit after grouping {reached:.1%} of the records; the other"
        f" {1 - reached:.1%} were grouped by median splits, with a higher information loss: raise"
        " the time limit for MDAV's groups throughout"
    )
    warnings.warn(note, RunWarning, stacklevel=2)
    return MethodOutput(labels, extras={"reached": reached, "stopped": note})
