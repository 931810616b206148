"""A protection run as the app describes it (``RunSpec``): its input and the declared run options
of a ``microaggregate`` call (``options.RUN_OPTIONS``) and the method's parameters, with its
"reproduce" command and Python call; and the checks a run makes before its process starts.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .input_data import output_suffix

# ---------------------------------------------------------------------------- run specification
#: the run options every reproduce command and call states, even at their defaults
STATED = ("k", "method", "columns", "seed")


@dataclass(frozen=True)
class RunSpec:
    """One protection run: its input and a ``microaggregate`` call on it, as the declared run
    options (``options.RUN_OPTIONS``) and the method's declared parameters, nothing written here
    by hand. Plain data (sent to the run's process as a dict).

    ``options``: run option -> value as given (validated by ``options.validate_run``);
    ``params``: the method's parameters that differ from their defaults; ``dataset``: a bundled
    data set's name (the Python call loads it); ``shown_path``: the input as the user names it in
    a command (default ``input_name``); ``max_bytes``: an upload's reading bound; ``explored``:
    (the result file's name, the run's id) for a run of an exploration (Explore tab), whose options
    carry that run's kept partition (``labels``): it is reproduced by ``protect --from-explore``."""

    input_path: str
    input_name: str
    options: dict
    params: dict = field(default_factory=dict)
    dataset: str | None = None
    shown_path: str | None = None
    max_bytes: int | None = None
    explored: tuple | None = None

    @classmethod
    def of(
        cls,
        input_path,
        input_name,
        *args,
        dataset=None,
        shown_path=None,
        max_bytes=None,
        explored=None,
        **kwargs,
    ) -> RunSpec:
        """The run ``microaggregate(data, *args, **kwargs)`` would make (positional options in the
        contract's order; run options and method parameters by name), validated first: a bad one
        is a ParameterError in one line, the command line's."""
        from ..options import split_arguments, validate_run

        options, params = split_arguments(args, kwargs)
        run = validate_run(options, params)
        declared = run.info.params
        differing = {
            name: value
            for name, value in params.items()
            if run.params[name] != declared[name].default
            or type(run.params[name]) is not type(declared[name].default)
        }
        return cls(
            str(input_path),
            str(input_name),
            dict(options),
            differing,
            dataset,
            shown_path,
            max_bytes,
            None if explored is None else (str(explored[0]), int(explored[1])),
        )

    def option(self, name: str):
        """A run option's value (its default when not given)."""
        from ..options import option

        return self.options[name] if name in self.options else option(name).default

    @property
    def k(self) -> int:
        return self.option("k")

    @property
    def method(self) -> str:
        return self.option("method")

    @property
    def columns(self) -> list:
        return list(self.option("columns") or [])

    @property
    def time_limit(self) -> float | None:
        return self.option("time_limit")

    def run(self):
        """The validated run (``options.Run``): every option with its default, the method's
        entry."""
        from ..options import validate_run

        return validate_run(self.options, self.params)

    def api_kwargs(self) -> dict:
        """The keyword arguments of ``microaggregate`` (run options and method parameters)."""
        return {**self.options, **self.params}

    def stated_options(self) -> dict:
        """The options a reproduce command or call writes: those given, and STATED ones always."""
        return {**{name: self.option(name) for name in STATED}, **self.options}

    def changed_options(self) -> dict:
        """The run options that differ from their defaults, in declaration order."""
        from ..options import RUN_OPTIONS

        return {
            p.name: self.options[p.name]
            for p in RUN_OPTIONS
            if p.name in self.options and not _same(self.options[p.name], p.default)
        }

    def output_name(self) -> str:
        suffix = output_suffix(self.input_name)
        name = Path(self.input_name).name
        stem = name[: -len(suffix)] if name.lower().endswith(suffix) else Path(name).stem
        return f"{stem or 'data'}-{self.method}-k{self.k}{suffix}"

    def cli_command(self) -> str:
        """The ``microagg protect`` command that gives the same output (``options.command_line``:
        a name starting with '-' is './-name', a value starting with '-' is joined to its flag); for
        a run of an exploration, ``protect --from-explore RESULT.json --pick N``."""
        from ..options import command_line

        if self.explored is not None:
            from ..explore import from_explore_command

            return from_explore_command(
                self.shown_path or self.input_name, self.output_name(), *self.explored
            )
        return command_line(
            self.shown_path or self.input_name,
            self.output_name(),
            self.stated_options(),
            self.params,
        )

    def python_snippet(self) -> str:
        """The Python call that gives the same output (``options.python_call``); for a run of an
        exploration, with its kept partition read from the result (``explore.load``)."""
        from ..options import python_call

        source = (
            f"microagg.datasets.path({self.dataset!r})"
            if self.dataset
            else repr(self.shown_path or self.input_name)
        )
        files = f"{source}, {self.output_name()!r}"
        lead = "import microagg\n"
        if self.explored is not None:
            result, run_id = self.explored
            lead += f"doc, labels = microagg.explore.load({result!r})"
            lead += "  # and its .labels.npz beside it\n"
            files += f",\n    labels=labels[{run_id}]"
        # the command line's publication: written, read back, verified, with its manifest
        call = python_call(self.stated_options(), self.params, files, "protect")
        return f"{lead}{call}print(res.summary())\n"

    def reproduce_text(self) -> str:
        from ..options import unlisted_names

        note = (
            "# A time limit makes iterative methods depend on the machine's speed: the same "
            "command\n"
            "# can stop at a different point on another machine or under another load.\n"
            if self.time_limit is not None
            else ""
        )
        if self.explored is not None:
            from ..explore import labels_path

            note = (
                f"# {self.explored[0]} is the exploration's result (the Explore tab's download), "
                "its partitions in\n"
                f"# {labels_path(Path(self.explored[0]).name).name} beside it.\n"
            )
        elif unlisted_names(self.options):  # the command line splits column lists at commas
            note += (
                "# A column name holds a comma, which the command line cannot list: use the "
                "Python call.\n"
            )
        return f"# command line\n{note}{self.cli_command()}\n\n# Python\n{self.python_snippet()}\n"


def _same(a, b) -> bool:
    """Equal values of an option (a list and a tuple of the same names are the same)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    if a is None or b is None or isinstance(a, bool) != isinstance(b, bool):
        return a is b
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # e.g. an array
        return False


def with_dtype_kinds(options: dict, prof: list) -> dict:
    """The options with the quasi-identifiers whose dtype makes them categories (a pandas
    Categorical, booleans, text: nominal; an ordered Categorical: ordinal) declared as such, as
    ``microaggregate`` reads them: the reproduce command, which reads a file without dtypes, then
    makes the same run. A column the user declared keeps its declared kind."""
    kind_of = {p.name: p.kind for p in prof}
    columns = list(options.get("columns") or [])
    categorical, ordinal = (
        list(options.get("categorical") or []),
        list(options.get("ordinal") or []),
    )
    declared = set(categorical) | set(ordinal)
    categorical += [
        c for c in columns if c not in declared and kind_of.get(c) in ("nominal", "text")
    ]
    ordinal += [c for c in columns if c not in declared and kind_of.get(c) == "ordinal"]
    return {**options, "categorical": categorical or None, "ordinal": ordinal or None}


def check_against_data(spec: RunSpec, df: pd.DataFrame) -> None:
    """The checks a run makes before any method starts, made before its process starts: the
    declared options (``validate_run``) and the pipeline's data hook (``check_params_vs_input``:
    columns, kinds, strata, weights, k against n) on the loaded data, so the page shows the
    command line's one-line error at once. Warnings are the run's to report."""
    from .. import pipeline

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipeline.check_params_vs_input(spec.run(), pipeline.Source(df, "frame", df.shape))
