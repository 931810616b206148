"""Every Python example of docs/sdcmicro.md runs, and the guide's table comes from the script's
results."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "sdcmicro.md"
BLOCKS = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)


def test_the_guide_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_guide_example_runs(code, capsys):
    exec(compile(code, str(GUIDE), "exec"), {})


def test_guide_table_is_the_committed_results():
    rows = json.loads((ROOT / "benchmarks" / "results" / "sdcmicro_guide.json").read_text())["rows"]
    text = GUIDE.read_text()
    for row in rows:
        assert f"`{row['microagg']}` | {row['information_loss']:.4f} |" in text
