"""The KD-tree and brute-force MDAV / V-MDAV kernels return exactly the plain loops' labels."""

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microagg
from microagg.kernels import kdtree
from microagg.kernels.mdav_brute import mdav_brute_kernel
from microagg.kernels.mdav_labels import mdav_kernel, mdav_labels, mdav_numpy, vmdav_kernel
from microagg.kernels.mdav_tree import (
    SWITCH_ALWAYS,
    SWITCH_MEASURED,
    SWITCH_NEVER,
    SWITCH_TRIALS,
    mdav_tree_kernel,
    vmdav_tree_kernel,
)
from microagg.labels import check_partition


def _data(seed, n, d, kind):
    rng = np.random.default_rng(seed)
    if kind == "gauss":
        X = rng.normal(size=(n, d))
    elif kind == "grid":  # many exact ties and duplicated rows
        X = rng.integers(0, 3, size=(n, d)).astype(float)
    elif kind == "clusters":  # tight clusters, as census-like data resampled with noise
        base = rng.normal(size=(max(1, n // 50), d)) * 3
        X = base[rng.integers(0, len(base), n)] + 0.01 * rng.normal(size=(n, d))
    elif kind == "offset":  # far from the origin, tiny spread: rounding in the bounds matters
        X = 1e8 + rng.integers(0, 5, size=(n, d)) * 1e-3 + rng.normal(size=(n, d)) * 1e-7
    else:  # duplicated rows of a few distinct records
        base = rng.normal(size=(max(1, n // 4), d))
        X = base[rng.integers(0, len(base), n)]
    return np.ascontiguousarray(X)


cases = st.tuples(
    st.integers(0, 10**6),
    st.integers(1, 200),
    st.integers(1, 8),
    st.integers(1, 6),
    st.sampled_from(["gauss", "grid", "dup", "offset", "clusters"]),
    st.sampled_from([1, 2, 5, 16, 32]),
)


@settings(max_examples=60, deadline=None)
@given(cases)
def test_tree_mdav_equals_plain(case):
    seed, n, d, k, kind, leaf = case
    if k > n:
        return
    X = _data(seed, n, d, kind)
    for classic in (True, False):
        plain = mdav_kernel(X, k, classic)
        tree = mdav_tree_kernel(X, k, classic, leaf, SWITCH_NEVER, 0, None)
        assert np.array_equal(plain, tree)
        check_partition(tree, n, k)
        assert np.array_equal(plain, mdav_brute_kernel(X, k, classic, 0, None))
        assert np.array_equal(plain, mdav_numpy(X, k, classic))
        for switch in (
            SWITCH_MEASURED,
            SWITCH_ALWAYS,
            SWITCH_TRIALS,
        ):  # tree, then brute force or trials
            assert np.array_equal(plain, mdav_tree_kernel(X, k, classic, leaf, switch, 0, None))


@settings(max_examples=40, deadline=None)
@given(cases, st.sampled_from([0.0, 0.2, 1.0, 3.0]))
def test_tree_vmdav_equals_plain(case, gamma):
    seed, n, d, k, kind, leaf = case
    if k > n:
        return
    X = _data(seed, n, d, kind)
    for global_centroid in (False, True):
        plain = vmdav_kernel(X, k, gamma, global_centroid)
        tree = vmdav_tree_kernel(X, k, gamma, global_centroid, leaf, 0)
        assert np.array_equal(plain, tree)
        check_partition(tree, n, k)


@pytest.mark.parametrize("kind", ["gauss", "grid", "dup", "offset", "clusters"])
def test_tree_equals_plain_larger(kind):
    X = _data(7, 3000, 5, kind)
    for k in (2, 3, 7):
        plain = mdav_kernel(X, k, True)
        assert np.array_equal(plain, mdav_tree_kernel(X, k, True, 8, SWITCH_NEVER, 0, None))
        for algorithm in ("brute", "numpy", "tree", "auto"):
            assert np.array_equal(plain, mdav_labels(X, k, True, algorithm))
        for switch in (SWITCH_ALWAYS, SWITCH_TRIALS):
            assert np.array_equal(plain, mdav_tree_kernel(X, k, True, 8, switch, 0, None))
    assert np.array_equal(vmdav_kernel(X, 3, 0.2, False), vmdav_tree_kernel(X, 3, 0.2, False, 8, 0))


def test_registered_algorithms_agree_on_census():
    df = microagg.datasets.load("census")
    plain = microagg.microaggregate(df, k=3, method="mdav", algorithm="plain")
    tree = microagg.microaggregate(df, k=3, method="mdav", algorithm="tree")
    assert np.array_equal(plain.labels, tree.labels)
    assert round(tree.information_loss, 2) == 5.69
    v_plain = microagg.microaggregate(df, k=3, method="vmdav", algorithm="plain")
    v_tree = microagg.microaggregate(df, k=3, method="vmdav", algorithm="tree")
    assert np.array_equal(v_plain.labels, v_tree.labels)


def _brute_pairs_alone(X, k):
    """The pairs of groups of the brute-force kernel (``_brute_pairs``) on X: (labels, pairs,
    passes)."""
    from microagg.kernels import mdav_brute, radial, running_sum

    n, d = X.shape
    labels, alive, idx = np.full(n, -1), np.ones(n, dtype=np.bool_), np.arange(n)
    s, comp = running_sum.running_sum_init(X)
    anchors = np.empty((2, d))
    tail, prefix = radial.radial_index(X, idx, anchors, running_sum.running_mean(s, comp, n))
    _, _, g, _, _, passes = mdav_brute._brute_pairs(
        X,
        mdav_brute._columns(X, idx),
        idx,
        n,
        n,
        k,
        3 * k,
        n,
        labels,
        0,
        s,
        comp,
        np.empty(n),
        np.empty(n),
        np.empty(n, dtype=np.bool_),
        np.empty(k, dtype=np.int64),
        np.empty(2 * k, dtype=np.int64),
        alive,
        tail,
        prefix,
        anchors,
        np.zeros(2, dtype=np.int64),
        0,
        None,
    )
    return labels, g // 2, passes


@pytest.mark.parametrize("kind", ["gauss", "grid", "dup", "clusters"])
def test_brute_force_reads_the_records_once_a_pair_mostly(kind):
    """The pass to a pair's second seed s also computes the distances to a guess of the next pair's
    first seed: a right guess saves a pass, a wrong one (ties, s's group, the centroid's shift)
    costs one; both kinds occur here, and the groups are the plain loop's."""
    X = _data(11, 2000, 6, kind)
    labels, pairs, passes = _brute_pairs_alone(X, 3)
    assert pairs + 1 < passes < 2 * pairs  # guesses right and wrong
    assert passes < 1.5 * pairs  # right far more often
    plain = mdav_kernel(X, 3, True)
    grouped = labels >= 0
    assert grouped.sum() == 6 * pairs and np.array_equal(labels[grouped], plain[grouped])


def test_kernels_from_concurrent_threads():
    """Threads calling MDAV at once (Dask's threaded blocks) all get the plain loop's labels: every
    kernel is one thread, without state shared between calls."""
    from concurrent.futures import ThreadPoolExecutor

    data = [
        _data(seed, 1500, 4, kind) for seed, kind in enumerate(["gauss", "grid", "dup", "offset"])
    ]
    with ThreadPoolExecutor(4) as pool:
        got = list(
            pool.map(lambda X: mdav_tree_kernel(X, 3, True, 8, SWITCH_MEASURED, 0, None), data)
        )
    for X, labels in zip(data, got):
        assert np.array_equal(labels, mdav_kernel(X, 3, True))


def test_planned_size_picks_the_kernel(monkeypatch):
    """mdav_labels picks brute force below BRUTE_MAX_N records, the tree above; inside
    ``jit.planning(n)`` (the warm-up of a run on n records) it picks as for n records."""
    import microagg.kernels.mdav_labels as kmdav
    from microagg.kernels.jit import planning

    called = []
    monkeypatch.setattr(kmdav, "_kernel_ready", lambda dispatcher: True)
    monkeypatch.setattr(
        kmdav,
        "mdav_brute_kernel",
        lambda X, k, c, budget, split: called.append("brute") or mdav_kernel(X, k, c),
    )
    monkeypatch.setattr(
        kmdav,
        "mdav_tree_kernel",
        lambda X, k, c, leaf, sw, budget, split: (
            called.append(("tree", sw)) or mdav_kernel(X, k, c)
        ),
    )
    X = _data(11, 60, 3, "clusters")
    kmdav.mdav_labels(X, 3)
    with planning(kmdav.BRUTE_MAX_N + 1):
        kmdav.mdav_labels(X, 3)
    kmdav.mdav_labels(X, 3, True, "tree")
    assert called == ["brute", ("tree", SWITCH_MEASURED), ("tree", SWITCH_NEVER)]
    assert kmdav.mdav_labels(X, 3) is not None and called[-1] == "brute"
    # the brute-force kernel not compiled yet (a first run): numpy, nothing compiled
    monkeypatch.setattr(kmdav, "_kernel_ready", lambda dispatcher: False)
    monkeypatch.setattr(
        kmdav,
        "mdav_numpy",
        lambda X, k, c, seconds=None: called.append("numpy") or mdav_kernel(X, k, c),
    )
    kmdav.mdav_labels(X, 3)
    with planning(kmdav.NUMPY_MAX_N + 1):  # more records: the kernel is worth compiling
        kmdav.mdav_labels(X, 3)
    with planning(kmdav.BRUTE_MAX_N + 1):
        kmdav.mdav_labels(X, 3)
    assert called[-3:] == ["numpy", "brute", ("tree", SWITCH_MEASURED)]


def test_kernel_ready_reads_numba_cache():
    import microagg.kernels.mdav_labels as kmdav

    X = _data(3, 30, 2, "gauss")
    kmdav.mdav_brute_kernel(X, 3, True, 0, None)
    assert kmdav._kernel_ready(kmdav.mdav_brute_kernel)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(9, 700),
    d=st.integers(1, 6),
    k=st.integers(2, 5),
    kind=st.sampled_from(["gauss", "grid", "dup", "clusters"]),
    threads=st.integers(2, 3),
    fewest=st.sampled_from([1, 64, 200]),
    classic=st.booleans(),
)
def test_split_passes_give_the_same_labels(seed, n, d, k, kind, threads, fewest, classic):
    """The distance passes split into ranges (``split``: ranges, fewest records a split pass
    covers; here down to a pass over one record, ranges of one block or less, more ranges than
    threads) give the one-thread kernels' labels, bit for bit, on random data with ties and
    duplicated records."""
    from microagg.kernels.cores import split_threads

    X = _data(seed, n, d, kind)
    plain = mdav_kernel(X, k, classic)
    with split_threads(threads):
        split = (threads, fewest)
        assert np.array_equal(plain, mdav_brute_kernel(X, k, classic, 0, split))
        for switch in (SWITCH_NEVER, SWITCH_ALWAYS, SWITCH_TRIALS):
            assert np.array_equal(plain, mdav_tree_kernel(X, k, classic, 8, switch, 0, split))


@pytest.mark.parametrize("kind", ["gauss", "grid", "dup", "clusters"])
def test_split_pairs_give_the_same_labels_past_the_guards_checks(kind):
    """The tree kernel's split pairs (a pair's queries and the next pair's on two threads,
    answers over a superset of the records alive checked before use) give the plain
    loop's labels bit for bit over enough pairs for the guard to run pairs the other way
    (``mdav_split.PAIRS_CHECK_EVERY``), on data with ties and duplicated records."""
    from microagg.kernels.cores import split_threads
    from microagg.kernels.mdav_split import PAIRS_CHECK_EVERY, PAIRS_PROBE

    k = 2
    n = 2 * k * (3 * PAIRS_CHECK_EVERY + PAIRS_PROBE) + 5
    X = _data(7, n, 3, kind)
    plain = mdav_kernel(X, k, True)
    with split_threads(2):
        assert np.array_equal(plain, mdav_tree_kernel(X, k, True, 8, SWITCH_NEVER, 0, (2, 1)))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 600),
    d=st.integers(1, 6),
    kind=st.sampled_from(["gauss", "grid", "dup", "offset", "clusters"]),
    share=st.sampled_from([1.0, 0.6, 0.1]),
    leaf_size=st.sampled_from([1, 8, 32]),
)
def test_trees_built_on_two_threads_are_those_built_on_one(seed, n, d, kind, share, leaf_size):
    """``kdtree.build_pair_threads`` (the two trees built at once, as the tree kernel's split
    builds and rebuilds them) gives ``build_pair``'s trees array for array, over all records or
    a subset (a rebuild's alive records)."""
    from microagg.kernels.cores import split_threads

    X = _data(seed, n, d, kind)
    rng = np.random.default_rng(seed)
    members = np.sort(rng.choice(n, max(1, int(share * n)), replace=False))
    one = kdtree.build_pair(X, members, leaf_size)
    with split_threads(2):
        two = kdtree.build_pair_threads(X, members, leaf_size)
    for tree_one, tree_two in zip(one, two):
        for field in tree_one._fields:
            a, b = getattr(tree_one, field), getattr(tree_two, field)
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), field


def test_threads_option_decides_the_split(monkeypatch):
    """Small inputs run the one-thread kernel (split None); from SPLIT_MIN_N records on (planned)
    every run takes the split kernel (one compiled kernel whatever the load): threads=1 (the
    kernel's default; the method's is None) on one thread, threads=None on the threads the probe
    grants, a number as given."""
    import microagg.kernels.mdav_labels as kmdav
    from microagg.kernels import cores
    from microagg.kernels.jit import planning

    splits = []
    monkeypatch.setattr(
        kmdav,
        "mdav_brute_kernel",
        lambda X, k, c, budget, split: splits.append(split) or mdav_kernel(X, k, c),
    )
    monkeypatch.setattr(kmdav, "_kernel_ready", lambda dispatcher: True)
    monkeypatch.setattr(cores, "idle_cores", lambda *a, **kw: 2.0)
    monkeypatch.setattr(cores, "usable_cores", lambda: [0, 1])
    X = _data(5, 90, 3, "gauss")
    kmdav.mdav_labels(X, 3, algorithm="brute")
    kmdav.mdav_labels(X, 3, algorithm="brute", threads=2)
    with planning(kmdav.SPLIT_MIN_N):
        kmdav.mdav_labels(X, 3, algorithm="brute")  # the kernel's default: one thread
        kmdav.mdav_labels(X, 3, algorithm="brute", threads=None)
        monkeypatch.setattr(cores, "idle_cores", lambda *a, **kw: 1.1)  # one core busy
        kmdav.mdav_labels(X, 3, algorithm="brute", threads=None)
    one = (1, kmdav.SPLIT_MIN_RECORDS)
    assert splits == [None, None, one, (2, kmdav.SPLIT_MIN_RECORDS), one]


@pytest.mark.parametrize("algorithm", ["auto", "brute", "tree"])
def test_a_probe_that_finds_the_cores_busy_runs_what_threads_1_runs(monkeypatch, algorithm):
    """Issue 56: MDAV's default (threads=None) on busy cores is never slower than one thread
    because it is one thread: the same kernel called with the same arguments as threads=1."""
    import microagg.kernels.mdav_labels as kmdav
    from microagg.kernels import cores
    from microagg.kernels.jit import planning

    calls = []

    def recorder(kernel):
        def record(*args):
            calls.append((kernel, args[0].tobytes(), args[1:]))
            return mdav_kernel(args[0], args[1], args[2])

        return record

    for name in ("mdav_brute_kernel", "mdav_tree_kernel"):
        monkeypatch.setattr(kmdav, name, recorder(name))
    monkeypatch.setattr(kmdav, "_kernel_ready", lambda dispatcher: True)
    monkeypatch.setattr(cores, "usable_cores", lambda: [0, 1])
    monkeypatch.setattr(cores, "idle_cores", lambda *a, **kw: 0.2)  # two busy processes
    X = _data(5, 90, 3, "gauss")
    with planning(10**6):
        kmdav.mdav_labels(X, 3, algorithm=algorithm, threads=1)
        kmdav.mdav_labels(X, 3, algorithm=algorithm, threads=None)
    assert len(calls) == 2 and calls[0] == calls[1], calls


def _split_granted_here(queue):
    from microagg.kernels.cores import split_threads

    with split_threads(2) as granted:
        queue.put(granted)


def test_no_split_in_a_child_forked_after_a_split():
    """GNU OpenMP is not fork-safe: a child forked from a process whose split started numba's
    threads runs one thread (``cores.split_threads``); the parent still splits."""
    import multiprocessing

    import numba

    from microagg.kernels.cores import split_threads

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread: nothing splits")
    X = _data(3, 400, 3, "gauss")
    with split_threads(2) as granted:
        mdav_tree_kernel(X, 3, True, 8, SWITCH_NEVER, 0, (granted, 1))
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_split_granted_here, args=(queue,))
    child.start()
    child.join(60)
    assert queue.get(timeout=5) == 1
    with split_threads(2) as again:
        assert again == 2


def test_one_split_at_a_time():
    """numba's workqueue layer runs one parallel region at a time: a second split asked while one
    runs is granted one thread."""
    from microagg.kernels.cores import split_threads

    with split_threads(2) as first:
        with split_threads(2) as second:
            assert (first, second) == (2, 1)
    with split_threads(1) as alone:
        assert alone == 1


def test_bad_algorithm():
    with pytest.raises(ValueError):
        microagg.methods.run("mdav", np.zeros((5, 2)), 2, algorithm="quantum")


def test_tree_queries_match_brute_force():
    rng = np.random.default_rng(3)
    X = np.ascontiguousarray(rng.integers(0, 4, size=(400, 3)).astype(float))
    T = kdtree.build(X, 4)
    alive = np.ones(len(X), dtype=bool)
    for i in rng.permutation(len(X))[:300]:
        kdtree.delete(T, i)
        alive[i] = False
    ids = np.flatnonzero(alive)
    assert np.array_equal(kdtree.alive_indices(T), ids)
    excl = np.empty(1, dtype=np.int64)
    out_i, out_d = np.empty(5, dtype=np.int64), np.empty(5)
    for q in rng.normal(1.5, 1.5, size=(50, 3)):
        dist = ((X[ids] - q) ** 2).sum(1)
        order = np.lexsort((ids, dist))
        assert kdtree.knn(T, q, 5, out_i, out_d, excl, 0) == 5
        assert np.array_equal(out_i, ids[order[:5]])
        far = np.lexsort((ids, -dist))[0]
        assert kdtree.farthest(T, q, excl, 0)[0] == ids[far]


@settings(max_examples=40, deadline=None)
@given(cases)
def test_tree_md_equals_plain(case):
    from microagg.kernels.maxdist_groups import md_kernel

    seed, n, d, k, kind, leaf = case
    if n < k:
        return
    X = _data(seed, n, d, kind)
    for by_centroid in (True, False):
        for both in (True, False):
            assert np.array_equal(
                md_kernel(X, k, by_centroid, both, False), md_kernel(X, k, by_centroid, both, True)
            )


@settings(max_examples=30, deadline=None)
@given(cases)
def test_stopped_kernels_keep_plain_groups_then_split(case):
    """A kernel out of budget (1 cycle: one pair of groups, or one V-MDAV group) has formed the
    plain loop's first groups, leaves the rest at −1, and group_unreached makes a valid
    partition of k..2k−1-record groups over the rest."""
    from microagg.kernels.mdav_labels import group_unreached

    seed, n, d, k, kind, leaf = case
    if n < 4 * k:
        return
    X = _data(seed, n, d, kind)
    plain = mdav_kernel(X, k, True)
    runs = [mdav_brute_kernel(X, k, True, 1, None)] + [
        mdav_tree_kernel(X, k, True, leaf, s, 1, None) for s in (SWITCH_NEVER, SWITCH_ALWAYS)
    ]
    if n - 2 * k < 3 * k:  # the first pair leaves fewer than 3k records: MDAV ends, nothing to cut
        for labels in runs:
            assert np.array_equal(labels, plain)
        return
    for labels in runs:
        reached = labels >= 0
        assert 0 < reached.sum() < n
        assert np.array_equal(labels[reached], plain[reached])  # MDAV's first groups, as formed
        first_new = labels.max() + 1
        share = group_unreached(X, labels, k)
        assert share == pytest.approx(reached.mean())
        check_partition(labels, n, k)
        assert np.bincount(labels)[first_new:].max() <= 2 * k - 1
    v_plain = vmdav_kernel(X, k, 0.2, False)
    v = vmdav_tree_kernel(X, k, 0.2, False, leaf, 1)
    if (v < 0).any():
        assert np.array_equal(v[v >= 0], v_plain[v >= 0])
        group_unreached(X, v, k)
    check_partition(v, n, k)


def test_time_limited_methods_stop_and_say_so(monkeypatch):
    """mdav, vmdav and mdav-mhm given a time limit they cannot meet stop, group the rest, warn and
    say so in extras; with room they give the labels of a run without a limit."""
    import microagg.kernels.mdav_labels as kmdav
    from microagg import methods

    X = _data(5, 4000, 4, "gauss")
    free = {name: methods.run(name, X, 3).labels for name in ("mdav", "vmdav", "mdav-mhm")}
    for name in free:
        # a limit no machine reaches, however busy: the same labels as without
        assert np.array_equal(methods.run(name, X, 3, time_limit=3600).labels, free[name])
    monkeypatch.setattr(methods, "TOLERATED_OVERSHOOT", 0.0)  # what a run on 10^6 records meets
    monkeypatch.setattr(
        kmdav, "UNREACHED_SECONDS_PER_VALUE", 1.0
    )  # the reserve takes the whole budget
    for name in free:
        with pytest.warns(UserWarning, match="reached the time limit"):
            out = (
                methods.run(name, X, 3, time_limit=5, algorithm="tree")
                if name != "mdav-mhm"
                else methods.run(name, X, 3, time_limit=5)
            )
        check_partition(out.labels, len(X), 3)
        assert 0 < out.extras["reached"] < 0.05 and "median splits" in out.extras["stopped"]
    assert "before its tour" in out.extras["stopped"]


def test_idle_cores_probe():
    """The probe reads how many of the usable cores were idle: between none and all of them; one
    usable core never splits."""
    from microagg.kernels import cores

    usable = cores.usable_cores()
    assert usable and 0.0 <= cores.idle_cores(usable, 0.05) <= len(usable) + 1e-9
    assert 1 <= cores.threads_to_use(None) <= len(usable)
    assert cores.threads_to_use(1) == 1


def test_a_probe_started_before_the_work_is_finished_once_by_its_thread(monkeypatch):
    """A probe started before the work (``cores.start_probe``: the call's stages before the
    method) is finished by the decision in the same thread, once: the idle cores over its window,
    this thread's CPU counted as idle (the core the kernel runs on), no sleep once the window is
    long enough and no second probe; another thread, a probe ended or one too old gives none."""
    import threading
    import types

    import numba

    from microagg.kernels import cores

    clock = {"now": 0.0, "cpu": 0.0, "slept": []}
    fake = types.SimpleNamespace(
        monotonic=lambda: clock["now"],
        thread_time=lambda: clock["cpu"],
        sleep=lambda s: clock["slept"].append(s),
    )
    ticks = iter([(0, 0), (50, 100)])  # over the window: one core of two idle, the other ours
    monkeypatch.setattr(cores, "time", fake)
    monkeypatch.setattr(cores, "_idle_ticks", lambda c: next(ticks))
    monkeypatch.setattr(cores, "usable_cores", lambda: [0, 1])
    monkeypatch.setattr(cores, "idle_cores", lambda *a, **k: pytest.fail("probed again"))
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 2)
    token = cores.start_probe()
    clock["now"] = clock["cpu"] = 50 / os.sysconf("SC_CLK_TCK")  # this thread busy throughout
    elsewhere = []
    thread = threading.Thread(target=lambda: elsewhere.append(cores._finish_probe([0, 1])))
    thread.start()
    thread.join()
    assert elsewhere == [None]
    assert cores.threads_to_use(None) == 2
    assert clock["slept"] == []  # the window was long enough
    assert cores._finish_probe([0, 1]) is None  # used once
    cores.end_probe(token)
    monkeypatch.setattr(cores, "_idle_ticks", lambda c: (0, 0))
    cores.end_probe(cores.start_probe())
    assert cores._finish_probe([0, 1]) is None  # ended
    monkeypatch.setattr(cores, "PROBE_FRESH_SECONDS", -1.0)
    token = cores.start_probe()
    assert cores._finish_probe([0, 1]) is None  # too old
    cores.end_probe(token)


def test_no_probe_where_numba_has_one_thread(monkeypatch):
    """With numba on one thread (NUMBA_NUM_THREADS=1) the default grants one thread without the
    0.1 s probe."""
    import numba

    from microagg.kernels import cores

    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)
    monkeypatch.setattr(cores, "idle_cores", lambda *a, **k: pytest.fail("probed"))
    assert cores.threads_to_use(None) == 1


_LAYER_CODE = """
import numpy as np, numba
from microagg.kernels.cores import split_threads
from microagg.kernels.mdav_brute import mdav_brute_kernel
try:
    import numba.np.ufunc.omppool
    loads = "omp"
except ImportError:
    loads = "workqueue"
X = np.random.default_rng(0).normal(size=(300, 3))
with split_threads(2) as threads:
    mdav_brute_kernel(X, 3, True, 0, (threads, 1))
print(loads, numba.threading_layer() if threads > 1 else "none")
"""


@pytest.mark.parametrize("chosen", [None, "workqueue"])
def test_split_runs_on_omp_where_it_loads(chosen):
    """A split in a fresh process runs on numba's omp layer where it loads (its regions start
    fast), else on workqueue; a layer the user chose (NUMBA_THREADING_LAYER) is kept."""
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env.pop("NUMBA_THREADING_LAYER", None)
    if chosen:
        env["NUMBA_THREADING_LAYER"] = chosen
    out = subprocess.run(
        [sys.executable, "-c", _LAYER_CODE], env=env, capture_output=True, text=True, check=True
    )
    loads, used = out.stdout.split()[-2:]
    if used == "none":
        pytest.skip("numba has a single thread here")
    assert used == (chosen or loads)


def test_a_warm_up_keeps_the_probe_s_kernel_without_probing(monkeypatch):
    """methods.load_kernels runs MDAV on a sample for its kernels: the split kernel the probe
    would choose (split (1, ...)), and no 0.1 s probe of the cores."""
    import microagg.kernels.mdav_labels as kmdav
    from microagg.kernels import cores
    from microagg.kernels.jit import planning, warming_up

    splits, probes = [], []
    monkeypatch.setattr(
        kmdav,
        "mdav_brute_kernel",
        lambda X, k, c, budget, split: splits.append(split) or mdav_kernel(X, k, c),
    )
    monkeypatch.setattr(kmdav, "_kernel_ready", lambda dispatcher: True)
    monkeypatch.setattr(cores, "idle_cores", lambda *a, **kw: probes.append(1) or 2.0)
    monkeypatch.setattr(cores, "usable_cores", lambda: [0, 1])
    X = _data(5, 90, 3, "gauss")
    with planning(kmdav.SPLIT_MIN_N), warming_up():
        kmdav.mdav_labels(X, 3, algorithm="brute", threads=None)
    assert splits == [(1, kmdav.SPLIT_MIN_RECORDS)] and probes == []


def _pass_way(guard, spent_split, spent_single, records=1000):
    """One timed brute-force pass through the split guard (``mdav_split._split_now`` /
    ``_split_timed``) with synthetic cycle counts: whether it ran split."""
    from microagg.kernels.mdav_split import _split_now, _split_timed

    split = _split_now((2, 1), guard)[0] >= 2
    _split_timed(guard, spent_split if split else spent_single, records)
    return split


def test_split_passes_change_way_only_when_two_checks_in_a_row_agree():
    """A split pass that one check finds slower (an interrupt delayed it) is checked again at
    once and the passes stay split; two checks in a row that find it slower (another process
    holds the second core) send the passes to one thread until a check finds otherwise."""
    from microagg.kernels.mdav_split import SPLIT_CHECK_EVERY

    guard = np.array([0.0, 0.0, 0.0, 1.0, 0.0])
    ways = [_pass_way(guard, 600, 1000) for _ in range(2 * SPLIT_CHECK_EVERY)]
    assert ways.count(False) == 2  # the two checks' one-thread passes
    # one unlucky check: checked again after a split pass, and the split stands
    ways = [_pass_way(guard, 1500, 1000)] + [_pass_way(guard, 600, 1000) for _ in range(40)]
    assert ways[:5] == [True, False, True, True, False] and all(ways[5:])
    # the second core taken: two checks agree, the passes go on on one thread, but for the
    # split pass before each check's timed one, which wakes the other thread
    guard[0] = 0.0
    ways = [_pass_way(guard, 1500, 1000) for _ in range(2 * SPLIT_CHECK_EVERY + 5)]
    assert ways[:5] == [True, False, True, True, False] and ways[5:].count(True) == 4
    # the core free again: back to split after two checks that agree
    guard[0] = 0.0
    ways = [_pass_way(guard, 600, 1000) for _ in range(60)]
    assert ways[:5] == [True, False, True, True, False] and all(ways[5:])


def test_split_pairs_change_way_only_when_two_probes_in_a_row_agree():
    """The tree kernel's pair guard (``mdav_split._pair_split_now`` / ``_pair_timed``): a probe
    of PAIRS_PROBE one-thread pairs that wins by chance is run again, and the pairs stay split
    unless the second probe wins too."""
    from microagg.kernels.mdav_split import (
        PAIRS_CHECK_EVERY,
        PAIRS_PROBE,
        _pair_split_now,
        _pair_timed,
    )

    guard = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])

    def run(pairs, split_cost, single_cost_of_probe):
        ways = []
        for p in range(pairs):
            split = bool(_pair_split_now(guard))
            ways.append(split)
            _pair_timed(guard, split_cost if split else single_cost_of_probe(p))
        return ways

    ways = run(PAIRS_CHECK_EVERY + 2 * PAIRS_PROBE + 10, 100.0, lambda p: 90.0 if p < 1030 else 200)
    assert ways.count(False) == 2 * PAIRS_PROBE and all(ways[-10:])  # probed twice, stays split
    guard[:] = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    ways = run(PAIRS_CHECK_EVERY + 2 * PAIRS_PROBE + 10, 100.0, lambda p: 90.0)
    assert not any(ways[-10:])  # two probes agree: one thread
