"""``microagg compile`` (issue 56): every package method at every size, the default call and a
published file; each step heard on the progress channel, the kernels it compiled counted."""

from __future__ import annotations

from numba import njit

from microagg import compiling, methods


def test_the_steps_cover_every_package_method_at_every_size():
    names = [name for name, _ in compiling.tasks()]
    for method in methods.names():
        for size in compiling.SIZES:
            assert f"{method} ({size:,} records)" in names
    assert sum("default call" in n for n in names) == len(compiling.SIZES)
    assert sum("published CSV" in n for n in names) == len(compiling.SIZES)


def test_compile_all_reports_each_step_and_counts_what_compiled(monkeypatch):
    @njit
    def fresh(x):  # compiled by the first step, loaded by none (no cache)
        return x + 2

    steps = [
        ("one", lambda _: fresh(1)),
        ("two", lambda _: fresh(2)),
        ("three", lambda _: fresh(0.5)),
    ]
    monkeypatch.setattr(compiling, "tasks", lambda: steps)
    heard = []
    done = compiling.compile_all(lambda *a: heard.append(a))
    assert done["steps"] == 3 and done["kernels"] == 2  # int64 and float64: two specialisations
    assert [h[0] for h in heard] == ["one", "two", "three", "done"]
    assert [h[1] for h in heard] == [0.0, 1 / 3, 2 / 3, 1.0]


def test_a_step_s_compile_notice_goes_to_the_bar_not_to_a_warning(monkeypatch):
    import warnings

    import microagg

    @njit
    def fresh_step(x):
        return x * 5

    def step(report):
        with methods.uncharged_compilation(None, report):
            fresh_step(1)

    monkeypatch.setattr(compiling, "tasks", lambda: [("the step", step)])
    heard = []
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        compiling.compile_all(lambda *a: heard.append(a))
    assert not [w for w in told if issubclass(w.category, microagg.CompilationWarning)]
    assert ("the step: compiling kernels", None, "first run only") in heard


def test_the_command_line_has_the_command():
    from microagg.cli import build_parser

    args = build_parser().parse_args(["compile", "-q"])
    assert args.quiet and args.func.__module__ == "microagg.cli.compile"


def test_the_many_levels_step_runs_mdav_s_codes_kernel():
    from microagg.kernels import mdav_onehot

    step = dict(compiling.tasks())["a nominal column of many levels, kept as codes"]
    step(lambda *args: None)
    assert mdav_onehot.mdav_onehot_kernel.signatures  # compiled, or loaded from the cache


def test_a_silent_inner_call_gives_no_notice_under_microagg_compile(monkeypatch, capsys):
    """A step's inner call that shows no progress (the read-back of a published file) compiles
    without the first call's notice, which would name `microagg compile` to its own user."""
    from microagg.cli.running import main
    from microagg.progress import silent

    @njit
    def fresh_inner(x):
        return x * 7

    def step(report):
        import warnings

        from microagg import CompilationWarning

        with warnings.catch_warnings():
            # as a method's warm-up lets its notice through (methods._load_kernels)
            warnings.simplefilter("default", CompilationWarning)
            with methods.uncharged_compilation(None, silent):
                fresh_inner(1)

    monkeypatch.setattr(compiling, "tasks", lambda: [("the step", step)])
    assert main(["compile", "-q"]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err and "1 kernels compiled" in captured.out
