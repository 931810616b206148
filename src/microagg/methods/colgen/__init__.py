"""Column generation for microaggregation with a proven lower bound on the optimal SSE.

Paper: the column-generation heuristic for microaggregation with a lower bound (set-partitioning
model (9), cluster cost
w_C = SSE of C (8), pricing per fixed size eta (10), ILP (14) with the node-to-node
inequalities (12), SolveHeuristicPricing, SimpleRoundingHeuristic, RoundingMSTHeuristic and
MicroaggregationHeuristicMP, Section 5). Beyond the paper (ours): exact pricing by
branch-and-bound in a KD-tree ball, subset-row cuts, and a closing enumeration + MIP that
turns the LP bound into a proof of optimality when the gap is small.

Lower bound. For any duals π, every partition P into clusters of sizes k..2k−1 (optimal
partitions only use those, Proposition 2.2) has SSE(P) = Σ_i π_i + Σ_{C∈P} rc(C), and
rc(C) = Σ_{i∈C} rc(C)/|C|; so with ρ_i ≤ rc(C)/|C| for every cluster C ∋ i,
    SSE(P) ≥ Σ_i π_i + Σ_i ρ_i                                 (per-record Lagrangian bound)
which is at least the paper-style Σπ + n·min(0, min_eta rc*_eta / eta). The issue allows a
proven bound on rc*_eta instead of its value: the branch-and-bound pricing gives every seed
(the largest-dual member of a cluster) a proven bound even when its search is cut short
(kernels/pricing.py), and ρ_i is the smallest such bound over the seeds whose ball holds i,
divided by eta. So every completed exact pass yields a bound, at any duals; at convergence
(no negative column, no seed cut short) it equals the LP value. Before any LP, the feasible
dual π_i = D_i(k−1)/(2k) (D_i(t): the t smallest squared distances from i, kernels/pricing.py)
gives the bound Σπ (the k-nearest-neighbour bound). After convergence, if the best partition
is above the bound by G, every cluster of a better partition has rc < G − (its share), so
enumerating all clusters with rc < UB − Σπ − Σρ and solving the integral master over them
proves the optimum (the bound then equals the best SSE); this closing step is ours.

Time limit. Every step checks the clock: the master LPs and MIPs get the time left (HiGHS
limits; MIPs 80 % of it, as HiGHS can overrun), the numba kernels run in slices (pricing
heuristics by chunks of starts, branch-and-bound by node budgets from the measured node rate),
the init methods get 30 % of the time left (icsm honours it; mdav, vmdav take milliseconds).
Measured slack with numba's cache warm: ≤ max(0.5 s, 10 % of the limit)
(benchmarks/results/colgen_time_limit.md). The first call after installing or editing the
kernels compiles them (seconds, not covered).

Dual smoothing, offers, kept state (ours; the ``colgen`` options of these names).
With ``smoothing`` = α > 0 (Wentges dual smoothing; not in the paper), pricing is done at
π_s = α·π_centre + (1−α)·π_LP, π_centre being the duals of the best Lagrangian bound so far
(at first the k-nearest-neighbour dual); only columns with negative reduced cost at π_LP
are added, and when there is none (a mis-price) the round prices again at π_LP. The exact
pass is then made at π_s: the Lagrangian bound is valid at any duals. Measured
(benchmarks/results/colgen_smoothing.md, k = 5): smoothing only slows column generation
down here. Census full data, 150 s: α = 0 converges in 132 s (gap 2.88 %), α = 0.5 and 0.8
do not (gaps 3.36 %, 3.72 %); 200-record subsets: convergence 4.3 / 7.3 / 10.1 s (census)
and 4.5 / 9.8 / 14.3 s (tarragona) for α = 0 / 0.5 / 0.8. So it stays off by default.
With ``offers`` (ours), partitions found meanwhile by another search are asked for every
round, telling that search colgen's best partition so far (auto's local search polishes it),
and enter the master before the final MIP (the best one is the incumbent), so the LP's path
is colgen's own (driver.take_offers says why).
With ``keep_state`` the master's columns and cuts (and the pricer's node budget per seed, and
the smoothing centre: a resumed run smoothed from the k-nearest-neighbour dual again spent
40 minutes below its predecessor's bound on eia, k = 10) are returned in extras['colgen_state'];
``resume`` puts them back in a later run, so that long runs for a bound can go on one after
another (benchmarks/best_known.py --resume).

Layout: ``master`` (the HiGHS master LP / MIP), ``column_pricing`` (the pricer; its numba kernels
are in ``microagg.kernels.pricing`` and ``microagg.kernels.pricing_bnb``), ``driver`` (the run's
state and steps; its rounding heuristics, SimpleRoundingHeuristic and RoundingMSTHeuristic, and
the subset-row cut separation are numba kernels in ``microagg.kernels.colgen_rounding``),
``closing`` (the run's last steps: the integral master over the generated columns, and the
closing enumeration), ``region`` (a bound above the LP's, at given duals, with the rows of a
region of records kept integral; benchmarks only: benchmarks/best_known.py --strategies region).
This module only registers the method: it imports none of highspy, scipy or numba, so listing
the registry stays light.
"""

from __future__ import annotations

from ...declarations import Param
from ...errors import ParameterError
from .. import register
from ..starts import check_offers

__all__ = ["colgen"]

#: branch-and-bound nodes of each integral master at most (HiGHS mip_max_nodes), the bound of the
#: final MIP and the closing MIPs of a run without a time limit in place of mip_time_limit's
#: seconds: under load a 60 s cap ended them at other points (issue 57: 2,500 records, the closing
#: MIP over the same columns ended at SSE 272.228 instead of 272.096 with two busy processes)
MIP_NODES = 20_000

#: names kept importable from here (tests, benchmarks), loaded on first use
_LAZY = {"knn_sums": ("column_pricing", "knn_sums"), "_Pricer": ("column_pricing", "Pricer")}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The first round's heuristic pricing cannot be interrupted; measured (census-like, 13 attributes,
#: k = 3, wall s at load 4, time limits 10 / 30 s): 7.0 s at 3·10^4, 53 s at 10^5 (n^1.7), after
#: 1.4 / 6.5 s of initial partitions. What a time limit must leave (``least_seconds``).
COLGEN_FIRST_ROUND_SECONDS = 8.0
STATE_KEYS = ("n", "k", "ptr", "members", "cuts", "seed_nodes")
#: the smoothing centre: the duals (π, σ) of the run's best Lagrangian bound, and that bound
CENTRE_KEYS = ("centre_pi", "centre_sigma", "centre_bound")


def _check_state(state):
    """``resume``: a dict with the keys of extras['colgen_state'] (checked against X and k in
    colgen)."""
    if state is not None and (
        not isinstance(state, dict)
        or not set(STATE_KEYS) <= set(state)
        or not set(state) <= set(STATE_KEYS + CENTRE_KEYS)
    ):
        raise ValueError(
            "must be an earlier run's extras['colgen_state'] (a dict with keys"
            f" {', '.join(STATE_KEYS)})"
        )
    return state


def _check_resume(state: dict, n: int, k: int) -> None:
    """The state's columns are clusters of k..2k−1 distinct records of these n, its cuts triples."""
    import numpy as np

    if int(state["n"]) != n or int(state["k"]) != k:
        raise ParameterError(
            f"colgen resume: a state of {state['n']} records and k = {state['k']}, "
            f"not of these {n} records and k = {k}"
        )
    ptr, members, cuts = (np.asarray(state[key]) for key in ("ptr", "members", "cuts"))
    sizes = np.diff(ptr) if ptr.ndim == 1 and len(ptr) else np.zeros(0)
    ok = (
        ptr.ndim == 1
        and len(ptr) >= 1
        and ptr[0] == 0
        and ptr[-1] == len(members)
        and members.ndim == 1
        and (sizes >= k).all()
        and (sizes <= 2 * k - 1).all()
        and cuts.ndim == 2
        and cuts.shape[1] == 3
    )
    ok = ok and all(
        a.size == 0 or (np.issubdtype(a.dtype, np.integer) and a.min() >= 0 and a.max() < n)
        for a in (members, cuts)
    )
    if ok and "centre_pi" in state:
        centre_pi, centre_sigma = np.asarray(state["centre_pi"]), np.asarray(state["centre_sigma"])
        ok = (
            centre_pi.shape == (n,)
            and centre_sigma.ndim == 1
            and len(centre_sigma) <= len(cuts)
            and np.isfinite(centre_pi).all()
            and (centre_sigma <= 0).all()
        )
    if ok and len(members):  # distinct records within each column
        column = np.repeat(np.arange(len(sizes)), sizes)
        order = np.lexsort((members, column))
        ok = not ((np.diff(members[order]) == 0) & (np.diff(column[order]) == 0)).any()
    if not ok:
        raise ParameterError(
            "colgen resume: the state's columns or cuts do not fit these records "
            "(not an extras['colgen_state'] of this data and k)"
        )


def _check_input(values, n, d, k):
    """Against the data, before any method starts: a resumed state of these records and k; start
    labels that are a partition into groups of k or more (they become columns)."""
    from ..starts import check_labels_vs_input

    if values["resume"] is not None:
        _check_resume(values["resume"], n, k)
    check_labels_vs_input(values["init"], n, k, "colgen", min_group=True)


def _parse_init(init) -> list:
    """Initial partitions: registered method names (a list or comma-separated string) and/or
    labels, one group id per record (a warm start, e.g. a committed partition)."""
    from ..starts import check_starts

    if init is None or (isinstance(init, str) and not init.strip()):
        return []
    return check_starts(init, "colgen")


def _init_methods(init) -> list:
    """The initial partitions: mdav's, vmdav's, then those of ``init`` (MicroaggregationHeuristicMP
    steps 1–4)."""
    starts = [m for m in _parse_init(init) if not isinstance(m, str) or m not in ("mdav", "vmdav")]
    return ["mdav", "vmdav"] + starts


@register(
    "colgen",
    family="column generation",
    paper="Column generation for microaggregation (set partitioning + pricing, Section 5)",
    complexity=(
        "exponential worst case (exact pricing); per round O(n²·d·k) pricing heuristics + LP; "
        "O(n·d + columns·k) memory"
    ),
    variable_size=True,
    least_seconds=lambda n, d, k: COLGEN_FIRST_ROUND_SECONDS * (d / 13) * (n / 3e4) ** 1.7,
    params=(
        Param(
            "init",
            "object",
            "",
            "further initial partitions besides mdav's and vmdav's: method names (a list or"
            " comma-separated; each gets 30 % of the time left) and/or labels, one group id per"
            " record (a warm start)",
            check=_parse_init,
        ),
        Param(
            "exact_pricing",
            "str",
            "bnb",
            "exact pricer: 'bnb' branch-and-bound in a KD-tree ball (ours), "
            "'enumeration' or 'ilp' (the paper's)",
            choices=("bnb", "enumeration", "ilp"),
        ),
        Param("max_rounds", "int", None, "column-generation rounds at most", low=1, nullable=True),
        Param(
            "close_gap",
            "bool",
            True,
            "after convergence, enumerate the clusters below the gap and prove the "
            "optimum with the integral master",
        ),
        Param(
            "final_mip",
            "bool",
            True,
            "solve the integral master over the generated columns at the end",
        ),
        Param(
            "mip_time_limit",
            "float",
            60.0,
            "seconds for the final MIP at most, under a time limit (without one, mip_nodes"
            " bounds each integral master: a clock would make the result depend on the load)",
            low=0.0,
            nullable=True,
        ),
        Param(
            "mip_nodes",
            "int",
            MIP_NODES,
            "branch-and-bound nodes of each integral master (final MIP, closing) at most: a"
            " bound the same at any load",
            low=1,
        ),
        Param(
            "max_enumerated",
            "int",
            50_000,
            "clusters enumerated by the closing step at most",
            low=1,
        ),
        Param("primal_columns", "int", 3_000, "columns kept for the primal MIP", low=1),
        Param(
            "max_nodes", "int", 5_000_000, "branch-and-bound nodes per exact pass at most", low=1
        ),
        Param(
            "seed_nodes",
            "int",
            20_000,
            "branch-and-bound nodes per seed before it is cut short",
            low=1,
        ),
        Param(
            "alternating_starts", "int", 300, "starts of the alternating pricing heuristic", low=0
        ),
        Param(
            "cuts",
            "bool",
            True,
            "subset-row cuts on triples once no column prices out (not with 'ilp')",
        ),
        Param("max_cut_rounds", "int", 30, "rounds of subset-row cuts at most", low=0),
        Param(
            "cut_tailing",
            "float",
            0.0,
            "also add subset-row cuts before convergence, after an exact pass, when the LP is"
            " within this share of its best bound (a tailing-off LP; 0: only at convergence)",
            low=0.0,
        ),
        Param(
            "smoothing",
            "float",
            0.0,
            "Wentges dual smoothing α (measured slower here)",
            low=0.0,
            high=1.0,
            high_open=True,
        ),
        Param(
            "resume",
            "object",
            None,
            "the state of an earlier run on the same records and k (its extras['colgen_state'],"
            " kept with keep_state): its columns and subset-row cuts enter the master, so that the"
            " LP and the bound go on from where that run stopped",
            nullable=True,
            check=_check_state,
        ),
        Param(
            "keep_state",
            "bool",
            False,
            "return the master's columns and cuts in extras['colgen_state'], for "
            "a later run's resume",
        ),
        Param(
            "offers",
            "object",
            None,
            "a callable, called once per round with colgen's best partition so far (labels),"
            " returning the partitions that a search running beside column generation found"
            " meanwhile (auto's other lane): their groups enter the master before the final MIP,"
            " the best one is its incumbent",
            nullable=True,
            check=check_offers,
        ),
    ),
    check_input=_check_input,
)
def colgen(
    X,
    k,
    *,
    seed,
    deadline,
    progress,
    init,
    exact_pricing,
    max_rounds,
    close_gap,
    final_mip,
    mip_time_limit,
    mip_nodes,
    max_enumerated,
    primal_columns,
    max_nodes,
    seed_nodes,
    alternating_starts,
    cuts,
    max_cut_rounds,
    cut_tailing,
    smoothing,
    resume,
    keep_state,
    offers,
):
    """Column generation over clusters of size k..2k−1 with a proven lower bound on the optimal SSE.

    The restricted master (9) (cost w_C = SSE of C, eq. (8)) starts from the groups of mdav,
    vmdav and the partitions in ``init`` (method names, or labels: a warm start whose groups
    enter the master and whose partition is the first incumbent, so the result is never worse), is
    solved by HiGHS (primal
    simplex, one thread) and grown with addCols. Pricing per size eta: the paper's
    SolveHeuristicPricing, then an alternating centre/members descent on
    rc(C) = min_z Σ(‖x_i − z‖² − π_i) from the ``alternating_starts`` largest duals; when both
    find nothing (and periodically, for the bound), an exact method: exact_pricing='bnb'
    (KD-tree ball around the largest-dual member + branch-and-bound with completion bounds,
    at most ``seed_nodes`` nodes per seed before it is cut short with a proven bound and
    retried at lower thresholds; the budget grows 4× whenever a pass finds no column but cut a
    seed; ours), 'enumeration' (the paper's complete enumeration) or 'ilp' (the paper's ILP
    (14) with node-to-node inequalities (12), solved by HiGHS; only for small n). Many disjoint
    negative columns are added per round (3 disjoint families; up to 50 while the LP value
    stalls). Every round runs SimpleRoundingHeuristic and RoundingMSTHeuristic on the LP
    solution (MSTH repairs undersized clusters instead of discarding the rounding: lower SSE).
    At the end the integral master over the generated columns is solved by HiGHS
    (``final_mip``, at most ``mip_time_limit`` s; a run stopped by ``time_limit`` keeps
    min(10 %, mip_time_limit) of it for this), and after convergence, with ``close_gap``, all
    clusters with reduced cost below the remaining gap are enumerated first so that the MIP
    proves optimality. The lower bound (module docstring) is returned as
    MethodOutput.lower_bound: the per-record Lagrangian bound of the best exact pass, the LP
    value at convergence, the closing MIP's bound, or at least the k-nearest-neighbour bound.
    With ``cuts`` (ours, not the paper's), once no column prices out, violated subset-row cuts
    Σ_{C: |C∩S|>=2} x_C <= 1 on triples S are added to the master (up to ``max_cut_rounds``
    rounds) and column generation resumes with their duals σ_S <= 0 charged to the clusters
    meeting S in two records; the bound becomes Σπ + Σσ + Σρ. Not used with
    exact_pricing='ilp'. With ``cut_tailing`` = t > 0, cuts are also added before convergence,
    in a round whose exact pass leaves the LP value within t·LP of the best bound: a tailing-off
    LP (many columns of tiny negative rc) then rises with the cuts instead (the bound stays
    valid: it is Lagrangian at any duals).
    ``smoothing``, ``offers``, ``keep_state`` and ``resume``: the package docstring.
    Ambiguities: the paper stops pricing at the first eta with a column; we price every eta
    (more columns per round, needed for the bound).
    """
    # the declared parameters, exactly (register checks the signature); init labels and resume
    # were checked against the data before any method started (_check_input)
    settings = dict(locals())
    settings["init_methods"] = _init_methods(settings.pop("init"))
    from .driver import ColumnGeneration  # highspy, scipy and numba only when colgen runs

    out = ColumnGeneration(**settings).run()
    if not out.extras.get("colgen_proven_optimal"):
        deadline.expired()  # past the time limit: the run says it was cut, whichever check ended it
    return out
