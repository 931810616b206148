"""In a real headless Jupyter kernel (issue 56): display(res), display(res.audit) and display(ex)
give HTML under 50 KB holding the IL and the smallest group, and progress=True draws a bar with
no warning (ipywidgets is not needed)."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

LIMIT = 50_000

CODE = textwrap.dedent(
    """
    import json, warnings
    warnings.simplefilter("always")
    import numpy as np, pandas as pd
    import microagg
    from IPython.display import display
    df = pd.DataFrame(np.random.default_rng(0).normal(size=(400, 3)), columns=list("abc"))
    res = microagg.microaggregate(df, k=4, method="mdav", progress=True)
    display(res)
    display(res.audit)
    ex = microagg.explore(df.head(120), k=[3, 4], methods=["mdav"], time_limit=30)
    display(ex)
    print(json.dumps({"il": f"{res.information_loss:.4f}",
                      "smallest": int(res.all_group_sizes.min()),
                      "ex_il": [f"{r.il:.4f}" for r in ex.runs]}))
    """
)


def _run(client, code: str, timeout: float = 300) -> list:
    msg_id = client.execute(code)
    messages = []
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return messages


@pytest.fixture(scope="module")
def kernel_output():
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(startup_timeout=120, env=dict(os.environ))
    try:
        return _run(client, CODE)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _by_type(messages, *types) -> list:
    return [m for m in messages if m["msg_type"] in types]


def test_the_kernel_ran_without_an_error(kernel_output):
    errors = _by_type(kernel_output, "error")
    assert not errors, errors[0]["content"]["traceback"] if errors else ""


def test_display_gives_small_html_with_il_and_the_smallest_group(kernel_output):
    printed = "".join(
        m["content"]["text"]
        for m in _by_type(kernel_output, "stream")
        if m["content"]["name"] == "stdout"
    )
    facts = json.loads(printed.strip().splitlines()[-1])
    pages = [
        m["content"]["data"]["text/html"]
        for m in _by_type(kernel_output, "display_data")
        if "text/html" in m["content"]["data"]
        and "microagg-box" in m["content"]["data"]["text/html"]
    ]
    result_page, audit_page, exploration_page = pages
    for page in pages:
        assert len(page.encode()) < LIMIT
    assert facts["il"] in result_page and f'class="num">{facts["smallest"]:,}' in result_page
    assert facts["il"] in audit_page and f'class="num">{facts["smallest"]}<' in audit_page
    assert "<svg" in exploration_page and all(il in exploration_page for il in facts["ex_il"])


def test_progress_true_draws_a_bar_and_warns_nothing(kernel_output):
    bars = [
        m
        for m in _by_type(kernel_output, "display_data", "update_display_data")
        if "<progress" in m["content"]["data"].get("text/html", "")
    ]
    assert bars
    stderr = "".join(
        m["content"]["text"]
        for m in _by_type(kernel_output, "stream")
        if m["content"]["name"] == "stderr"
    )
    assert "ipywidgets" not in stderr
    # a cold numba cache: the audit read by display(res) (no progress shown) may say it compiles
    told = [line for line in stderr.splitlines() if "Warning" in line]
    assert all("CompilationWarning" in line for line in told), told
