"""``microagg demo``: every method on a bundled data set (``microagg.demo_runs``)."""

from __future__ import annotations

from .common import UserError, stdout_to_stderr


def declare(commands) -> None:
    """The demo command and its flags."""
    de = commands.add_parser("demo", help="run every method on a bundled data set")
    de.add_argument("--dataset", default="census", help="census, tarragona or eia (default census)")
    de.add_argument("-k", type=int, default=3)
    de.add_argument(
        "--work",
        type=float,
        default=None,
        metavar="UNITS",
        help=(
            "work budget for each iterative method (default: 200 passes over the records, at "
            "most about 1 s of a quiet machine's work): the same figures at any load"
        ),
    )
    de.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a safety cap for each method (default none)",
    )
    de.set_defaults(func=run)


def run(args) -> int:
    """microagg demo: the flags checked by their declarations, then every method on the data set."""
    from dataclasses import replace

    from .. import datasets
    from ..demo_runs import run_demo
    from ..options import option

    if args.dataset not in datasets.names():
        raise UserError(
            f"unknown data set {args.dataset!r}; bundled: {', '.join(datasets.names())}"
        )
    replace(option("k"), name="-k").validate(args.k, None)
    replace(option("time_limit"), name="--time-limit").validate(args.time_limit, None)
    replace(option("work"), name="--work").validate(args.work, None)
    run_demo(args.dataset, args.k, args.time_limit, quiet_stdout=stdout_to_stderr, work=args.work)
    return 0
