"""Helpers shared by the benchmark scripts: machine description and result writing."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    return {
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_1min": round(load[0], 2),
    }


def write_results(name: str, rows: list[dict], markdown: str) -> None:
    """Write results/<name>.json (rows + machine) and results/<name>.md (the table)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = machine()
    (RESULTS / f"{name}.json").write_text(json.dumps({"machine": meta, "rows": rows}, indent=2) + "\n")
    header = (f"_Produced by `python benchmarks/{name}.py` on {meta['date_utc']} UTC, {meta['cpus']} cores, "
              f"load average {meta['load_average_1min']} at the end of the run._\n\n")
    (RESULTS / f"{name}.md").write_text(header + markdown.rstrip() + "\n")
    print(markdown)


def md_table(headers: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def update_readme(marker: str, text: str) -> None:
    """Replace the README block between <!-- marker:start --> and <!-- marker:end --> with text."""
    readme = Path(__file__).resolve().parent.parent / "README.md"
    s = readme.read_text()
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    if start not in s or end not in s:
        raise SystemExit(f"README.md has no {start} ... {end} block")
    head, rest = s.split(start, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(f"{head}{start}\n{text.rstrip()}\n{end}{tail}")
