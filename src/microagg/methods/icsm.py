"""ICSM: Iterative Constraint Satisfaction for Microaggregation (Mortazavi & Jalili 2015).

Algorithm 2 of the paper: start from a partition (MDAV by default), then repeat
  inner loop: assignment -> tour -> Tour2Assignment (Algorithm 5), SimpleHeuristic (Algorithm 3:
              1-opt migrations and 2-opt exchanges, a pool of the p_n best, applied greedily
              without touching a group twice) until nothing changes;
  ComplexHeuristic (Algorithm 4: one negative cycle of the ranked acyclic graph H′, an n-opt
  cyclic shift) until nothing changes, max_iterations rounds or the deadline.
Every applied move has an exact, strictly negative SSE delta and keeps all groups within
k..2k−1; Tour2Assignment never increases SSE. Restarts (§5.3) perturb a partition and search
again; the best valid partition found is returned at any time (anytime algorithm).
"""

from __future__ import annotations

import time

import numpy as np

from ..deadline import Deadline
from ..declarations import Param
from ..labels import check_partition, group_sizes, relabel, sse, sst
from ..progress import silent
from . import MethodOutput, get, register, step_seconds
from .starts import check_lengths, check_offers, check_start, check_starts, start_labels
from .tour import regroup

# moves with |ΔSSE| below this (relative to SST) are ignored: they are rounding noise
_REL_TOL = 1e-10
#: share of the deadline an initial method named by ``init`` may use (the search gets the rest)
INIT_SHARE = 0.3
#: with several starts, the first one's weight in the time rule (the others weigh 1 each)
FIRST_START_WEIGHT = 4.0


def _replay(X, before, applied, k, trace):
    """Debug hook: re-apply the moves of one SimpleHeuristic pass one at a time, recording the
    SSE and group sizes after each (used by the tests to check every move)."""
    labels = before.copy()
    for kind, a, b, delta in applied:
        a, b = int(a), int(b)
        if kind == 0:
            labels[a] = b
            step = "migrate"
        else:
            labels[a], labels[b] = labels[b], labels[a]
            step = "exchange"
        sizes = group_sizes(labels)
        trace.append(
            {
                "step": step,
                "sse": sse(X, labels),
                "delta": float(delta),
                "min_size": int(sizes.min()),
                "max_size": int(sizes.max()),
            }
        )


def _trace_state(X, labels, step, trace, delta=float("nan")):
    sizes = group_sizes(relabel(labels))
    trace.append(
        {
            "step": step,
            "sse": sse(X, labels),
            "delta": delta,
            "min_size": int(sizes.min()),
            "max_size": int(sizes.max()),
        }
    )


class _Steps:
    """The time rule of local_search's steps: no step starts unless the longest so far and the
    model's least time for its kind (SIMPLE_/COMPLEX_SECONDS_PER_N2D) fit in the time left; a
    pass that runs on past the deadline (Gaussian 10-d at 10^5 records: one took over 60 s) stops
    there, keeping the exact moves it found, unless the time left is under TOLERATED_OVERSHOOT
    (``step_seconds``: small data are never cut)."""

    def __init__(self, deadline, max_iterations, n, d):
        self.deadline, self.max_iterations, self.n, self.d = deadline, max_iterations, n, d
        self.longest, self.started = 0.0, time.monotonic()  # seconds; the current step's start

    def budget(self):
        """The cycles a kernel pass may run (``budget_cycles``)."""
        from ..kernels.cycles import budget_cycles

        return budget_cycles(step_seconds(self.deadline))

    def done(self, iterations, seconds_per_n2d=None):
        """Ends the current step; True if no next step of this kind (simple by default) fits, or
        ``iterations`` reached max_iterations."""
        now = time.monotonic()
        self.longest = max(self.longest, now - self.started)
        self.started = now
        per_n2d = SIMPLE_SECONDS_PER_N2D if seconds_per_n2d is None else seconds_per_n2d
        least = per_n2d * self.n * self.n * self.d
        return not self.deadline.room_for(max(self.longest, least)) or (
            self.max_iterations is not None and iterations >= self.max_iterations
        )


def _tour_step(X, labels, k, deadline, trace):
    """Tour2Assignment of ``labels``, charged as one pass over the records: (its SSE, labels)."""
    cost, labels = regroup(X, labels, k)
    deadline.charge(len(X))
    if trace is not None:
        _trace_state(X, labels, "tour", trace)
    return cost, labels


def _simple_passes(X, k, cost, labels, iterations, steps, trace, *, pool_size, tol, regroup_every):
    """Algorithm 2's inner loop (lines 4–8): SimpleHeuristic passes, each followed by
    Tour2Assignment (``regroup_every``; otherwise one is tried once no simple move applies, kept
    if it lowers SSE), until nothing changes. Returns (cost, labels, iterations)."""
    from ..kernels.icsm_moves import simple_heuristic

    deadline = steps.deadline
    while not steps.done(iterations):
        g = int(labels.max()) + 1
        before = labels.copy() if trace is not None else None
        applied, _ = simple_heuristic(X, labels, g, k, pool_size, tol, steps.budget())
        deadline.charge(len(X))  # work: one pass over the records
        if len(applied) == 0:
            if regroup_every or deadline.expired():
                break
            new_cost, new_labels = regroup(X, labels, k)
            deadline.charge(len(X))
            if not new_cost < cost - tol:
                break
            cost, labels = new_cost, new_labels
            if trace is not None:
                _trace_state(X, labels, "tour", trace)
            continue
        iterations += 1
        cost += float(applied[:, 3].sum())
        if trace is not None:
            _replay(X, before, applied, k, trace)
        # the moves keep the groups' sizes valid: a regrouping past the deadline is left out
        if regroup_every and not deadline.expired():
            cost, labels = _tour_step(X, labels, k, deadline, trace)
    return cost, labels, iterations


def local_search(
    X,
    k,
    labels,
    *,
    deadline,
    max_iterations=None,
    pool_size=100,
    complex_tries=1,
    tol=0.0,
    regroup_every=True,
    trace=None,
):
    """ICSM Algorithm 2 from ``labels`` (any assignment: the first Tour2Assignment makes it a
    partition into groups of k..2k−1). Returns (sse, labels, iterations), iterations counting
    the rounds that changed the assignment (the paper's 'Iterations').

    regroup_every=True regroups (tour + Tour2Assignment) before every SimpleHeuristic pass as
    Algorithm 2 does; False regroups only once the simple moves are exhausted (the restarts use
    this: far fewer Tour2Assignment calls for the same local optimum conditions)."""
    from ..kernels.icsm_moves import complex_heuristic

    cost, labels = regroup(X, labels, k)
    if trace is not None:
        _trace_state(X, labels, "tour", trace)
    iterations = 0
    steps = _Steps(deadline, max_iterations, *X.shape)
    simple = {"pool_size": pool_size, "tol": tol, "regroup_every": regroup_every}
    while not steps.done(iterations):
        cost, labels, iterations = _simple_passes(
            X, k, cost, labels, iterations, steps, trace, **simple
        )
        if steps.done(iterations, COMPLEX_SECONDS_PER_N2D):
            break
        g = int(labels.max()) + 1
        cycle, gain = complex_heuristic(X, labels, g, k, tol, complex_tries, steps.budget())
        deadline.charge(len(X))
        if len(cycle) == 0:
            break
        iterations += 1
        if trace is not None:
            _trace_state(X, labels, "cycle", trace, float(gain))
        if deadline.expired():  # a cycle keeps every group's size
            break
        cost, labels = _tour_step(X, labels, k, deadline, trace)
    return sse(X, labels), labels, iterations


def perturb(labels, count, rng, X=None):
    """§5.3: change the groups of ``count`` records. Without X: random records to random other
    groups (the paper; sizes may leave k..2k−1 and the next Tour2Assignment restores a valid
    partition). With X (scope 'local'): the ``count`` records nearest to a random record swap
    their groups in a random permutation, which keeps every group size and only mixes groups
    that are neighbours, so the search explores near the current partition."""
    labels = labels.copy()
    n = len(labels)
    count = min(count, n)
    if X is not None:
        center = int(rng.integers(n))
        dist = np.einsum("ij,ij->i", X - X[center], X - X[center])
        who = np.argpartition(dist, count - 1)[:count] if count < n else np.arange(n)
        labels[who] = labels[who][rng.permutation(len(who))]
        return labels
    g = int(labels.max()) + 1
    if g < 2:
        return labels
    who = rng.choice(n, size=count, replace=False)
    shift = rng.integers(1, g, size=len(who))
    labels[who] = (labels[who] + shift) % g
    return labels


class GroupPool:
    """The distinct groups of the local optima met by the restarts whose SSE is within
    ``window`` (relative) of the best so far: the columns of a set-partitioning master whose
    integral solution recombines them (ILS-SP, Subramanian, Uchoa & Ochi 2013)."""

    def __init__(self, X, window):
        self.X = X
        self.window = window
        self.groups: dict[bytes, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.groups)

    def offer(self, labels, value, best_value) -> None:
        if value > best_value * (1.0 + self.window):
            return
        from .colgen.master import groups  # highspy: only a recombining run has a pool

        for g in groups(labels):  # record ids in increasing order, so equal groups have equal keys
            self.groups.setdefault(g.tobytes(), g)

    def recombine(self, best, seconds):
        """(SSE, labels) of the integral master over the pool within ``seconds``."""
        from .colgen.master import Master, groups  # highspy only when recombining

        master = Master(self.X)
        master.add(groups(best))  # already pooled; first, so the warm start is always a solution
        master.add(list(self.groups.values()))
        labels, _, _, _ = master.solve_integral(seconds, master.indicator(best), primal=True)
        return (np.inf, None) if labels is None else (sse(self.X, labels), relabel(labels))


def check_init(init):
    """``init``: a registered method name other than icsm, labels (one group id per record), or a
    list of these (several starts)."""
    if isinstance(init, list):
        if not init:
            raise ValueError("init is an empty list: give at least one start")
        return check_starts(init, "icsm")
    return check_start(init, "icsm")


def icsm_search(X, k, *, deadline=None, progress=silent, seed=None, trace=None, **params):
    """The ICSM driver behind the registered method. ``params``: icsm's parameters as declared
    once, at its registration below (validated by the registry on a run; the declared default
    for any not given). ``trace`` (a list) receives one record per applied move / regrouping
    with the SSE and group sizes after it (a debug hook for tests). An initial method gets
    INIT_SHARE of the deadline.

    Its phases: the local search from every start; then restarts, each polishing the partitions
    another search offers, perturbing the base partition and searching again, and, with
    ``recombine``, the set partitioning over the pooled groups."""
    p = _with_declared_defaults(params)
    restarts, recombine, offers = p["restarts"], p["recombine"], p["offers"]
    X = np.ascontiguousarray(X, dtype=np.float64)
    starts = p["init"] if isinstance(p["init"], list) else [p["init"]]
    check_lengths(starts, len(X), "icsm")
    run = _IcsmRun(
        X,
        k,
        Deadline.of(deadline),
        progress,
        p["restart_from"],
        max_iterations=p["max_iterations"],
        pool_size=p["pool_size"],
    )
    run.search_from_starts(starts, seed, p["complex_tries"], trace)
    run.base = run.best if p["restart_from"] == "best" else run.first_start
    rng = np.random.default_rng(seed)
    pool = GroupPool(X, p["pool_window"]) if recombine > 0 and restarts > 0 else None
    if pool is not None:
        pool.offer(run.best, run.best_sse, run.best_sse)
        next_mip = run.deadline.elapsed() + recombine
    for r in range(restarts):
        if run.deadline.expired():
            break
        run.polish(offers() if offers is not None else (), p["complex_tries"])
        if run.deadline.expired():
            break
        progress("icsm", None, f"restart {r + 1} of {restarts}, best SSE {run.best_sse:.6g}")
        run.restart(
            perturb(run.base, p["perturbation"], rng, X if p["scope"] == "local" else None),
            p["restart_complex_tries"],
            pool,
        )
        if pool is not None and run.deadline.elapsed() >= next_mip and not run.deadline.expired():
            run.recombine(pool, recombine)
            next_mip = run.deadline.elapsed() + recombine
    return run.output(len(starts) > 1, pool is not None, offers is not None)


def _with_declared_defaults(params: dict) -> dict:
    """icsm's declared parameters: the values given, the declared defaults for the others."""
    declared = get("icsm").defaults
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise TypeError(f"icsm_search: unknown parameter(s) {', '.join(unknown)}")
    return dict(declared, **params)


class _IcsmRun:
    """One ICSM run's phases and what they found: the best partition, the base the restarts
    perturb (``restart_from``: the best, or the first start), each search's iterations."""

    def __init__(self, X, k, deadline, progress, restart_from, **search):
        self.X, self.k, self.deadline, self.progress = X, k, deadline, progress
        self.restart_from = restart_from
        self.tol = _REL_TOL * max(sst(X), 1e-300)
        self.search = dict(search, tol=self.tol)  # local_search's max_iterations, pool_size, tol
        self.best_sse, self.best, self.base = np.inf, None, None
        self.first_start, self.init_sse = None, np.inf
        self.rounds, self.run_sse = [], []
        self.done_restarts, self.polished = 0, 0
        self.recombined = {"mips": 0, "improved": 0, "columns": 0}

    def search_from_starts(self, starts, seed, complex_tries, trace) -> None:
        """The local search from every start, sharing the budget by the clock's rule, the first
        (primary) start weighing FIRST_START_WEIGHT: auto's first start is MDAV's partition, what
        icsm alone would search from."""
        X, k = self.X, self.k
        weights = [FIRST_START_WEIGHT] + [1.0] * (len(starts) - 1)
        for i, one in enumerate(starts):
            part = self.deadline.share(weights[i], sum(weights[i:]))
            start = start_labels(
                X,
                k,
                one,
                owner="icsm",
                seed=seed,
                deadline=part,
                share=INIT_SHARE,
                progress=self.progress,
            )
            if self.first_start is None:
                self.first_start = start
            if group_sizes(start).min() >= k:  # a valid start is already an answer
                value = sse(X, start)
                self.init_sse = value if i == 0 else self.init_sse
                if value < self.best_sse:
                    self.best_sse, self.best = value, start
            self.progress("icsm", None, f"local search from start {i + 1} of {len(starts)}")
            cur_sse, cur, it = local_search(
                X, k, start, deadline=part, complex_tries=complex_tries, trace=trace, **self.search
            )
            self.rounds.append(it)
            self.run_sse.append(cur_sse)
            if cur_sse < self.best_sse:
                self.best_sse, self.best = cur_sse, cur

    def improve(self, value, labels) -> bool:
        """Keep a partition lower than the best by more than rounding (tol); the restarts go on
        from it when ``restart_from`` is best."""
        if value < self.best_sse - self.tol:
            self.best_sse, self.best = value, labels
            if self.restart_from == "best":
                self.base = labels
            return True
        return False

    def polish(self, offered, complex_tries) -> None:
        """Partitions another search found meanwhile (auto's column generation): polished by a
        full local search, the restarts going on from the best."""
        for lab in offered:
            lab = np.asarray(lab, dtype=np.int64)
            if lab.shape != (len(self.X),) or self.deadline.expired():
                continue
            cur_sse, cur, _ = local_search(
                self.X,
                self.k,
                lab,
                deadline=self.deadline,
                complex_tries=complex_tries,
                **self.search,
            )
            self.polished += 1
            self.improve(cur_sse, cur)

    def restart(self, perturbed, complex_tries, pool) -> None:
        """The local search from a perturbed partition (Mortazavi & Jalili 2015 §5.3)."""
        cur_sse, cur, it = local_search(
            self.X,
            self.k,
            perturbed,
            deadline=self.deadline,
            complex_tries=complex_tries,
            regroup_every=False,
            **self.search,
        )
        self.done_restarts += 1
        self.rounds.append(it)
        if pool is not None:
            pool.offer(cur, cur_sse, self.best_sse)
        self.improve(cur_sse, cur)

    def recombine(self, pool, recombine) -> None:
        """ILS + set partitioning (Subramanian, Uchoa & Ochi 2013): the best combination of the
        pooled groups, warm-started from the best partition, so it is never worse; the MIP gets
        at most as long as the restarts before it, and half the time left."""
        self.progress("icsm", None, f"set partitioning over {len(pool)} pooled groups")
        mip_sse, mip_labels = pool.recombine(
            self.best, min(recombine, 0.5 * self.deadline.remaining())
        )
        self.recombined["mips"] += 1
        self.recombined["columns"] = len(pool)
        if mip_labels is not None and self.improve(mip_sse, mip_labels):
            self.recombined["improved"] += 1

    def output(self, several_starts, recombining, offered) -> MethodOutput:
        labels = check_partition(self.best, len(self.X), self.k, "icsm")
        extras = {
            "iterations": self.rounds[0],
            "sse_init": self.init_sse,
            "sse_first_run": self.run_sse[0],
            "restarts_done": self.done_restarts,
            "iterations_per_run": self.rounds,
        }
        if several_starts:
            extras["sse_per_start"] = self.run_sse
        if recombining:
            extras["recombined"] = self.recombined
        if offered:
            extras["offers_polished"] = self.polished
        return MethodOutput(labels, extras=extras)


#: One pass of the simple moves (SimpleHeuristic over all pairs of groups) and one of the cyclic
#: moves (ComplexHeuristic) cannot be interrupted; measured from MDAV's partition (census-like,
#: k = 3, CPU s, load 4): simple 0.45 s at 3·10^4, 5.2 s at 10^5 (3.8–4e-11 s per n²·d); complex
#: 4.6 s at 3·10^4, 62 s at 10^5 (4–4.8e-10). Lower bounds of a step's time (``local_search``) and
#: of what a time limit must leave (``least_seconds``: at least one simple pass).
SIMPLE_SECONDS_PER_N2D, COMPLEX_SECONDS_PER_N2D = 3e-11, 3.5e-10


@register(
    "icsm",
    family="local-search",
    paper="Mortazavi & Jalili 2015 (ICSM), Algorithms 2–5",
    complexity="O(n²·d) time per iteration, O(n·d) memory",
    variable_size=True,
    randomized=True,
    least_seconds=lambda n, d, k: SIMPLE_SECONDS_PER_N2D * n * n * d,
    params=(
        Param(
            "init",
            "object",
            "mdav",
            "start partition: a registered method name (it gets 30 % of the time budget), labels"
            " (one group id per record), or a list of these: a local search from each (sharing the"
            " budget), the best kept",
            check=check_init,
        ),
        Param(
            "max_iterations",
            "int",
            None,
            "rounds per run at most (None: until no change)",
            low=0,
            nullable=True,
        ),
        Param("pool_size", "int", 100, "p_n: the most negative simple moves kept per pass", low=1),
        Param(
            "complex_tries",
            "int",
            5,
            "groups tried as G_s when looking for a negative cycle (1 = the paper)",
            low=0,
        ),
        Param("restarts", "int", 0, "perturbation restarts (§5.3)", low=0),
        Param("perturbation", "int", 20, "records that change group in a restart", low=1),
        Param(
            "restart_from",
            "str",
            "best",
            "restart from the best partition so far or from the start",
            choices=("best", "init"),
        ),
        Param(
            "scope",
            "str",
            "global",
            "'global': random records to random groups (the paper); 'local': the "
            "records nearest a random record swap groups",
            choices=("local", "global"),
        ),
        Param("restart_complex_tries", "int", 1, "complex_tries inside restarts", low=0),
        Param(
            "recombine",
            "float",
            0.0,
            "seconds of restarts between set-partitioning MIPs over the groups of "
            "the local optima met (ILS-SP; 0 = never)",
            low=0.0,
        ),
        Param(
            "pool_window",
            "float",
            0.02,
            "local optima within this relative SSE of the best enter the pool",
            low=0.0,
        ),
        Param(
            "offers",
            "object",
            None,
            "a callable, asked before each restart, returning partitions (labels) that a search"
            " running beside found meanwhile (auto's column generation): each is polished by the"
            " local search, and the restarts go on from the best",
            nullable=True,
            check=check_offers,
        ),
    ),
)
def icsm(
    X,
    k,
    *,
    seed,
    deadline,
    progress,
    init,
    max_iterations,
    pool_size,
    complex_tries,
    restarts,
    perturbation,
    restart_from,
    scope,
    restart_complex_tries,
    recombine,
    pool_window,
    offers,
):
    """ICSM local search: tour regrouping, 1-opt/2-opt moves and n-opt negative cycles from a start
    partition.

    Mortazavi & Jalili 2015, Algorithm 2. ``init`` names any registered method for the start
    (default MDAV). SimpleHeuristic (Algorithm 3) scans all pairs of groups for negative
    2-cycles of H: migrations R2 + R3 (Eqs. 5, 6) and exchanges R1 + R1 (Eqs. 3, 4), all exact
    SSE deltas computed on the fly; the ``pool_size`` (p_n) most negative are applied greedily,
    no group twice. ComplexHeuristic (Algorithm 4) looks for one negative cycle in the ranked
    acyclic graph H′ (Eqs. 7, 8) by DAG shortest paths from G_s's records and node.

    Ambiguities resolved towards lower SSE: the pool keeps the p_n best moves (the paper's
    line 7 would keep the first p_n found); the most negative cycle over all sources is applied;
    Eq. 7 is read as all outgoing minus all incoming R1 weights of G_p's records; after each
    change the assignment is regrouped by tour + Tour2Assignment as in lines 5–6.
    Extensions (lower IL than the paper's settings): ``complex_tries`` (default 5; 1 = the
    paper) tries the groups of next-lowest Score as G_s when G_s gives no negative cycle, which
    reaches the paper's Table 2 figures in every cell. ``restarts`` > 0 runs §5.3's perturbation
    restarts, seeded by ``seed``: ``perturbation`` records change group, either random records
    moved to random groups (``scope='global'``, default, the paper) or the records nearest a
    random record swapping their groups (``scope='local'``, sizes kept); each restart starts
    from the best partition so far (``restart_from='best'``, default, an iterated local search)
    or from the start (``'init'``, the paper), regroups only when the simple moves are exhausted
    and uses ``restart_complex_tries`` (default 1): more restarts per second beat deeper ones.
    With ``offers`` (ours), partitions found meanwhile by another search are polished between
    restarts. Stops on no change, ``max_iterations`` rounds per run,
    or the deadline; always returns the best valid partition found.
    """
    return icsm_search(
        X,
        k,
        deadline=deadline,
        progress=progress,
        init=init,
        seed=seed,
        max_iterations=max_iterations,
        pool_size=pool_size,
        complex_tries=complex_tries,
        restarts=restarts,
        perturbation=perturbation,
        restart_from=restart_from,
        scope=scope,
        restart_complex_tries=restart_complex_tries,
        recombine=recombine,
        pool_window=pool_window,
        offers=offers,
    )
