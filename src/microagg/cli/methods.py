"""``microagg methods``: the registered methods, their papers and parameters (``-v``)."""

from __future__ import annotations

from .common import print_json


def declare(commands) -> None:
    """The methods command and its flags."""
    me = commands.add_parser("methods", help="list the registered methods")
    me.add_argument("-v", "--verbose", action="store_true")
    me.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    me.set_defaults(func=run)


def run(args) -> int:
    """microagg methods: one line per method (-v: its paper, complexity and parameters), or JSON."""
    from .. import methods as registry

    infos = registry.all_methods()
    if args.json:
        print_json(
            {
                "methods": [
                    {
                        "name": i.name,
                        "family": i.family,
                        "paper": i.paper,
                        "complexity": i.complexity,
                        "variable_size": i.variable_size,
                        "multivariate": i.multivariate,
                        "randomized": i.randomized,
                        "per_variable": i.per_variable,
                        "interruptible": i.interruptible,
                        "summary": i.summary,
                        "params": {
                            name: {
                                "kind": p.kind,
                                "default": p.default,
                                "constraint": p.constraint(),
                                "doc": p.doc,
                            }
                            for name, p in i.params.items()
                        },
                    }
                    for i in infos
                ]
            }
        )
        return 0
    for info in infos:
        size = "variable" if info.variable_size else "fixed"
        kind = (
            "per-variable"
            if info.per_variable
            else ("multivariate" if info.multivariate else "univariate")
        )
        print(f"{info.name:20s} {info.family:12s} {kind:13s} {size:8s} {info.summary}")
        if args.verbose:
            print(f"{'':20s} paper: {info.paper}; {info.complexity}")
            if not info.interruptible:
                print(f"{'':20s} runs to completion: it does not stop at the time limit")
            for p in info.params.values():
                print(f"{'':20s} --param {p.describe()}")
    return 0
