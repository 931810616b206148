"""Memory bounded for the whole call (issue 57): ``--max-memory-mb`` bounds what the call takes,
the process's own memory and the written file read back included, not only the read; a long
quoted field is split without a backtracking mark per character. Measured as peaks (the child's
resident high-water mark, tracemalloc), never as times."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

from microagg.io.csv.dialect import split_records
from microagg.read_limits import TEXT_MEMORY_FACTOR

MB = 1 << 20

#: the command line in a child process, printing its exit status and resident high-water mark.
#: VmHWM is the high-water mark of the process's own memory; ru_maxrss is not: Linux carries it
#: over an exec from the forking parent, so under a pytest run that has grown to 1.7 GB every
#: child reported 1.7 GB
_CHILD = """
import json, sys
from microagg.cli.running import main
code = main(sys.argv[1:])
with open("/proc/self/status") as status:
    kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"code": code, "peak": kb * 1024}))
"""


def _protect_in_a_child(*args) -> tuple[dict, str]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, "protect", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _one_long_field(path, size: int) -> None:
    with open(path, "w") as f:
        f.write("x,y,note\n")
        for i in range(6):
            f.write(f"{i},{2 * i},{'a' * size if i == 0 else 'b'}\n")


#: a budget above what a fresh process may take before it reads (0.5 GB when numba compiles the
#: kernels its cache lacks), so that the peak measured is the file's doing
BUDGET_MB = 800


def test_a_field_the_call_cannot_hold_is_refused_within_the_budget(tmp_path):
    budget_mb = BUDGET_MB
    src = tmp_path / "field.csv"
    # the text, times what a call takes per byte of it, is more than the budget
    _one_long_field(src, budget_mb * MB // (TEXT_MEMORY_FACTOR - 2))
    out = tmp_path / "o.csv"
    seen, stderr = _protect_in_a_child(
        src, "-o", out, "-k", "3", "--columns", "x,y", "--max-memory-mb", budget_mb
    )
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert seen["code"] == 2 and len(lines) == 1 and "--max-memory-mb" in lines[0], stderr
    assert seen["peak"] < budget_mb * MB, (seen, stderr)
    assert not out.exists()


def test_a_field_the_call_can_hold_is_published_within_the_budget(tmp_path):
    budget_mb = BUDGET_MB
    src = tmp_path / "field.csv"
    _one_long_field(src, budget_mb * MB // (4 * TEXT_MEMORY_FACTOR))
    out = tmp_path / "o.csv"
    seen, stderr = _protect_in_a_child(
        src, "-o", out, "-k", "3", "--columns", "x,y", "--max-memory-mb", budget_mb, "-q"
    )
    assert seen["code"] == 0, stderr
    assert seen["peak"] < budget_mb * MB, (seen, stderr)
    assert out.read_bytes().splitlines()[1].endswith(b"a" * 1000)


def test_a_long_quoted_field_is_split_in_memory_linear_in_its_size():
    """The quoted section's pattern is an unrolled loop: a 10 MB quoted field of separators and
    line breaks took 1.4 GB to split (a backtracking mark per character)."""
    size = 2 * MB
    field = '"' + "a,b\n" * (size // 4) + '"'
    text = f"x,y,note\n1,2,{field}\n3,4,c\n"
    tracemalloc.start()
    try:
        records, ends = split_records(text, ",")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [len(r) for r in records] == [3, 3, 3] and records[1][2] == field
    assert peak < 4 * len(text), (peak, len(text))
