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
    (RESULTS / f"{name}.json").write_text(
        json.dumps({"machine": meta, "rows": rows}, indent=2) + "\n"
    )
    header = (
        f"_Produced by `python benchmarks/{name}.py` on {meta['date_utc']} UTC, {meta['cpus']}"
        f" cores, load average {meta['load_average_1min']} at the end of the run._\n\n"
    )
    (RESULTS / f"{name}.md").write_text(header + markdown.rstrip() + "\n")
    print(markdown)


def measured_rows(cases, measure) -> list[dict]:
    """``measure(case)`` for every case, each row printed as it comes (a long run shows progress)."""
    rows = []
    for case in cases:
        rows.append(measure(case))
        print(rows[-1], flush=True)
    return rows


def md_table(headers: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def marked_page(marker: str) -> Path:
    """The page holding the block <!-- marker:start --> ... <!-- marker:end -->: README.md or a page
    of the documentation site (docs/**/*.md), where README's sections moved."""
    root = Path(__file__).resolve().parent.parent
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    for page in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        s = page.read_text()
        if start in s and end in s:
            return page
    raise SystemExit(f"neither README.md nor docs/**/*.md has a {start} ... {end} block")


def update_readme(marker: str, text: str) -> None:
    """Replace the block between <!-- marker:start --> and <!-- marker:end --> (in README.md or the
    docs page that holds it) with text."""
    page = marked_page(marker)
    s = page.read_text()
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    head, rest = s.split(start, 1)
    _, tail = rest.split(end, 1)
    page.write_text(f"{head}{start}\n{text.rstrip()}\n{end}{tail}")
