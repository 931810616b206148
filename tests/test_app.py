"""microagg app: its logic without a browser, and the whole flow in a real headless Chromium.

The browser test starts ``microagg app --no-browser`` on a free port in a subprocess and drives
Debian's chromium through selenium and /usr/bin/chromedriver (nothing is downloaded). With
MICROAGG_SCREENSHOTS=DIR it saves the README's screenshots into DIR.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import microagg
from microagg.app import (
    column_profile,
    figures,
    input_data,
    is_loopback,
    private,
    protect_worker,
    run_handle,
    runspec,
    security,
)

SRC = Path(__file__).resolve().parents[1] / "src"


# ---------------------------------------------------------------------------- logic, no browser
def test_profile_flags_identifiers_and_suggests_continuous_columns():
    n = 60
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "hid": np.arange(n) // 3,  # named like an identifier
            "row": np.arange(100, 100 + n),  # numbers the records
            "income": rng.normal(size=n),
            "spend": rng.permutation(
                np.arange(0, 3 * n, 3)
            ),  # distinct integers but not consecutive
            "sex": rng.integers(1, 3, n),  # a category code
            "name": [f"p{i}" for i in range(n)],
            "UTILITYID": rng.integers(
                0, 1000, n
            ),  # an identifier for the CLI (issue 33): the same here
        }
    )
    prof = {p.name: p for p in column_profile.profile(df)}
    assert prof["UTILITYID"].id_like and not prof["UTILITYID"].suggested
    assert prof["hid"].id_like and not prof["hid"].suggested
    assert prof["row"].id_like and not prof["row"].suggested
    assert prof["income"].suggested and not prof["income"].id_like
    assert prof["spend"].suggested and not prof["spend"].id_like
    assert not prof["sex"].suggested and "category" in prof["sex"].note
    assert not prof["name"].numeric and not prof["name"].suggested
    assert prof["income"].distinct == n and prof["sex"].distinct == 2


@pytest.mark.parametrize("n", [12, 60])
def test_profile_suggests_what_the_cli_uses_by_default(n):
    """One rule for the app and the CLI (preprocess.not_a_default_qi): the suggested columns are
    the default quasi-identifiers, on small and larger files alike."""
    import warnings

    from microagg import columns as preprocess

    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {
            "person_id": np.arange(n),
            "hhweight": rng.uniform(50, 500, n),  # a weight by its name
            "wgt": rng.uniform(50, 500, n),
            "region": rng.integers(
                1, 6, n
            ),  # codes by its name (issue 33), in small and larger files
            "rooms": rng.integers(1, 6, n),  # codes in a larger file; a QI in a file of 12 records
            "half": rng.integers(0, 4, n) + 0.5,  # few values, but not integers: an attribute
            "income": rng.lognormal(size=n),
            "age": rng.integers(16, 90, n),
            "flag": np.ones(n, dtype=int),
        }
    )
    suggested = {p.name for p in column_profile.profile(df) if p.suggested}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = set(preprocess.select_columns(df)) - {"flag"}  # a constant: never suggested
    assert suggested == default
    assert {"hhweight", "wgt", "person_id"}.isdisjoint(suggested) and {
        "income",
        "half",
    } <= suggested
    assert ("rooms" in suggested) == (n < preprocess.CODE_MIN_ROWS) and "region" not in suggested


def test_profile_reads_kinds_from_dtypes_and_roles():
    df = microagg.datasets.load("testdata")
    prof = {
        p.name: p for p in column_profile.profile(df, roles=microagg.datasets.roles("testdata"))
    }
    # age: 4580 records on ~90 integer values, repeating (codes or a discrete quantity): not
    # suggested (the CLI's rule)
    assert {name for name, p in prof.items() if p.suggested} == {"expend", "income", "savings"}
    assert "repeating integers" in prof["age"].note
    assert prof["sex"].kind == "nominal" and not prof["sex"].numeric
    assert prof["ori_hid"].id_like and "a weight" in prof["household_weights"].note
    text = pd.DataFrame(
        {"t": ["a", "b"], "o": pd.Categorical(["x", "y"], ordered=True), "b": [True, False]}
    )
    assert [column_profile.column_kind(text[c]) for c in text] == ["text", "ordinal", "nominal"]


def test_reproduce_command_with_categorical_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = microagg.datasets.load("testdata").head(300)
    df.to_csv("survey.csv", index=False)
    spec = runspec.RunSpec.of(
        "survey.csv",
        "survey.csv",
        k=3,
        method="mdav",
        columns=["sex", "relat", "age", "income"],
        categorical=["sex"],
        ordinal=["relat"],
        aggregation="median",
        distance="robust",
    )
    res = microagg.microaggregate(pd.read_csv("survey.csv"), **spec.api_kwargs())
    import shlex

    from microagg import cli

    assert cli.main(shlex.split(spec.cli_command())[1:] + ["-q"]) == 0
    pd.testing.assert_frame_equal(
        pd.read_csv(spec.output_name()),
        res.data.astype({"sex": int, "relat": int}),
        check_dtype=False,
    )


def test_reproduce_command_gives_the_apps_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an upload is named by its file name, in the user's folder
    src = tmp_path / "in put.csv"
    df = microagg.datasets.load("tarragona").head(120)
    df.to_csv(src, index=False)
    cols = list(df.columns[:4])
    spec = runspec.RunSpec.of(
        str(src),
        src.name,
        k=4,
        method="vmdav",
        columns=cols,
        gamma=0.3,
        seed=0,
        weights={cols[0]: 2.0},
    )
    res = microagg.microaggregate(df, **spec.api_kwargs())
    cmd = spec.cli_command()
    assert (
        cmd.startswith("microagg protect ") and "'in put.csv'" in cmd and "--param gamma=0.3" in cmd
    )
    out = tmp_path / spec.output_name()
    import shlex

    from microagg import cli

    argv = shlex.split(cmd)[1:]
    assert cli.main(argv + ["-q"]) == 0
    np.testing.assert_allclose(
        pd.read_csv(out)[cols].to_numpy(), res.data[cols].to_numpy(), rtol=1e-12
    )
    from_cli = out.read_bytes()
    out.unlink()
    namespace: dict = {}
    exec(spec.python_snippet().replace("print(res.summary())", ""), namespace)  # noqa: S102
    assert namespace["res"].information_loss == pytest.approx(res.information_loss, rel=1e-12)
    assert out.read_bytes() == from_cli  # the Python call writes the very file the command writes


def test_the_reproduce_command_gives_the_apps_export_byte_for_byte_with_awkward_names(
    tmp_path, monkeypatch
):
    """A file and columns whose names look like options, hold spaces or quotes, and option values
    starting with '-': the command the app shows, run from the command line, writes the very bytes
    the app exports, and so does its Python call."""
    import shlex

    from microagg import cli

    monkeypatch.chdir(tmp_path)
    df = microagg.datasets.load("testdata").head(240)
    df = df[["age", "income", "expend", "household_weights", "urbrur"]].rename(
        columns={
            "age": "-age",
            "income": "in come",
            "expend": "it's",
            "household_weights": "-w",
            "urbrur": "-zone",
        }
    )
    df["note"] = ["-", "x"] * 120  # a token declared missing: a text column, written back as it was
    src = tmp_path / "-my data.csv"
    df.to_csv(src, index=False)
    spec = runspec.RunSpec.of(
        str(src),
        src.name,
        k=3,
        method="vmdav",
        columns=["-age", "in come", "it's"],
        strata=["-zone"],
        sample_weight="-w",
        weights={"-age": 2.0},
        aggregation="median",
        missing=["-"],
        gamma=0.3,
    )
    res, _ = protect_worker.publish_run(spec, tmp_path / "app", 1)  # as the run's process does
    exported = protect_worker.published_path(
        tmp_path / "app", 1, spec
    ).read_bytes()  # the file the download serves
    command = spec.cli_command()
    for words in (
        "./-my data.csv",
        "--columns=-age,in come,it",
        "--strata=-zone",
        "--sample-weight=-w",
        "--weights=-age=2",
        "--missing=-",
        "--param gamma=0.3",
    ):
        assert words in shlex.join(shlex.split(command)), command
    assert cli.main(shlex.split(command)[1:] + ["-q"]) == 0
    out = tmp_path / spec.output_name()
    assert out.read_bytes() == exported
    out.unlink()
    exec(spec.python_snippet().replace("print(res.summary())", ""), {})  # noqa: S102
    assert out.read_bytes() == exported


def test_weights_text_and_one_line_errors():
    """The variable weights' text box is the --weights flag's declaration: the same parsing, the
    same checks, the count against the quasi-identifiers by the pipeline's data hook."""
    from microagg.app import controls

    weights = next(c for c in controls.option_controls(["a", "b"]) if c.param.name == "weights")
    assert weights.widget == "text" and controls.value_of(weights, "") is None
    assert controls.value_of(weights, "a=2, b=0.5") == {"a": 2.0, "b": 0.5}
    assert controls.value_of(weights, "2,3") == [2.0, 3.0]
    for bad in ("a=2,3", "x,y", "a=-1", "a=2,a=3"):
        with pytest.raises(microagg.InputError):
            controls.value_of(weights, bad)
    df = pd.DataFrame({"a": np.arange(9.0), "b": np.arange(9.0) ** 2})
    spec = runspec.RunSpec.of("d.csv", "d.csv", k=3, columns=["a", "b"], weights=[1.0, 2.0, 3.0])
    with pytest.raises(microagg.InputError, match="weights has 3 value"):
        runspec.check_against_data(spec, df)
    # the app and the command line agree: only the InputError family is a user error
    assert private.one_line(microagg.InputError("first\nsecond")) == "first"
    assert private.one_line(ValueError("first\nsecond")) == "internal error (ValueError): first"
    assert private.one_line(KeyError("x")).startswith("internal error (KeyError)")


def test_output_format_follows_the_input():
    assert input_data.output_suffix("a.parquet") == ".parquet"
    assert input_data.output_suffix("a.CSV") == ".csv"
    assert input_data.output_suffix("a.csv.gz") == ".csv.gz"
    assert input_data.output_suffix("b.sas7bdat") == ".xpt"
    assert input_data.output_suffix("c.unknown") == ".csv"
    spec = runspec.RunSpec.of("x", "survey.csv.gz", k=3, method="mdav", columns=["a"])
    assert spec.output_name() == "survey-mdav-k3.csv.gz"


@pytest.mark.parametrize("suffix", [".dta", ".xlsx", ".sav"])
def test_export_keeps_the_input_format(tmp_path, suffix):
    df = microagg.datasets.load("tarragona").head(60).rename(columns=lambda c: c.replace(".", "_"))
    df["label"] = [f"firm {i}" for i in range(60)]
    src = tmp_path / f"firms{suffix}"
    if suffix == ".dta":
        df.to_stata(src, write_index=False)
    elif suffix == ".xlsx":
        df.to_excel(src, index=False)
    else:
        pytest.importorskip("pyreadstat").write_sav(df, str(src))
    frame = input_data.read_input(src)
    qi = list(frame.columns[:3])
    spec = runspec.RunSpec.of(str(src), src.name, k=3, method="mdav", columns=qi)
    assert spec.output_name() == f"firms-mdav-k3{suffix}"
    res, _ = protect_worker.publish_run(spec, tmp_path / "app", 1)
    out = protect_worker.published_path(tmp_path / "app", 1, spec)
    assert out.name == spec.output_name() and out.with_name(out.name + ".manifest.json").is_file()
    back = input_data.read_input(out)
    np.testing.assert_allclose(
        back[qi].to_numpy(np.float64), res.data[qi].to_numpy(np.float64), rtol=1e-9
    )
    assert back["label"].tolist() == frame["label"].tolist()
    assert microagg.measures.smallest_group(back[qi].to_numpy(np.float64)) >= 3


def test_run_handle_runs_and_cancels(tmp_path):
    src = tmp_path / "d.csv"
    df = microagg.datasets.load("census")
    df.to_csv(src, index=False)
    spec = runspec.RunSpec.of(str(src), "d.csv", k=3, method="mdav", columns=list(df.columns))
    handle = run_handle.RunHandle(spec, tmp_path, 1)
    while handle.poll() == "running":
        time.sleep(0.1)
    assert handle.state == "done", handle.error
    expected = microagg.microaggregate(df, k=3, method="mdav")
    assert figures.headline(handle.figures) == pytest.approx(expected.information_loss, rel=1e-12)
    assert handle.load_result().data.equals(expected.data)
    assert "<svg" in handle.report_path.read_text()
    assert handle.figures["warnings"] == []
    constant = tmp_path / "c.csv"
    df.assign(C=7).to_csv(constant, index=False)
    warned = run_handle.RunHandle(
        runspec.RunSpec.of(str(constant), "c.csv", k=3, method="mdav", columns=["AGI", "C"]),
        tmp_path,
        4,
    )
    while warned.poll() == "running":
        time.sleep(0.1)
    assert any("constant" in w for w in warned.figures["warnings"]), warned.figures["warnings"]
    bad = run_handle.RunHandle(
        runspec.RunSpec.of(str(src), "d.csv", k=5000, method="mdav", columns=["AGI"]), tmp_path, 2
    )
    while bad.poll() == "running":
        time.sleep(0.1)
    assert bad.state == "error" and "\n" not in bad.error and "k" in bad.error
    auto = run_handle.RunHandle(
        runspec.RunSpec.of(
            str(src), "d.csv", k=3, method="auto", columns=list(df.columns), time_limit=3
        ),
        tmp_path,
        5,
    )
    while auto.poll() == "running":
        time.sleep(0.1)
    portfolio = auto.figures["portfolio"]
    assert auto.figures["winner"] in {row["method"] for row in portfolio}
    assert min(row["il"] for row in portfolio if row.get("status") == "ok") == pytest.approx(
        figures.headline(auto.figures), rel=1e-9
    )
    slow = run_handle.RunHandle(
        runspec.RunSpec.of(
            str(src), "d.csv", k=3, method="colgen", columns=list(df.columns), time_limit=600
        ),
        tmp_path,
        3,
    )
    time.sleep(1.0)
    slow.cancel()
    assert slow.state == "cancelled" and not slow.process.is_alive()


def test_loopback_and_upload_limit():
    import asyncio

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    from microagg.app import serve

    with pytest.raises(ValueError, match="allow-remote"):
        serve(host="0.0.0.0", open_browser=False)

    calls = []

    async def inner(scope, receive, send):
        calls.append(scope["path"])

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    app = security.UploadLimit(inner, security.UploadBudget(10))
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/session/abc/upload/def",
        "headers": [(b"content-length", b"11")],
    }
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 413 and not calls
    asyncio.run(
        app(
            {**scope, "path": "/session/abc/upload/ghi", "headers": [(b"content-length", b"10")]},
            receive,
            send,
        )
    )
    assert calls == ["/session/abc/upload/ghi"]


def test_cli_app_without_the_framework_says_how_to_install_it(capsys, monkeypatch):
    import importlib.util

    from microagg import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "shiny" else real(name, *a)
    )
    assert cli.main(["app", "--no-browser"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and 'pip install "microagg[app]"' in err


def test_cli_app_errors_are_one_line(capsys, tmp_path):
    from microagg import cli

    for argv, words in (
        (["app", "--host", "0.0.0.0", "--no-browser"], "--allow-remote"),
        (["app", str(tmp_path / "missing.csv"), "--no-browser"], "not found"),
        (["app", "--max-upload-mb", "0", "--no-browser"], "max-upload-mb"),
        (["app", "--host", "192.0.2.1", "--allow-remote", "--no-browser"], "cannot listen"),
    ):
        before = tempfile.gettempdir()
        assert cli.main(argv) == 2
        assert tempfile.gettempdir() == before  # the process's temporary folder is left as it was
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and words in err, err


# ---------------------------------------------------------------------------- the browser
def _chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _listening_addresses(port: int) -> list[str]:
    """Local addresses of the sockets listening on ``port`` (from /proc/net/tcp and tcp6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if int(port_hex, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                if len(address) == 8:
                    found.append(".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0)))
                else:
                    found.append("ipv6:" + address)
    return found


class RunningApp:
    """A ``microagg app`` subprocess: the address it printed (with its token), its port, process,
    private folder and what it wrote on stderr so far."""

    def __init__(self, url: str, port: int, proc, private: set, stderr_path: str):
        self.url, self.port, self.proc, self.private, self.stderr_path = (
            url,
            port,
            proc,
            private,
            stderr_path,
        )

    @property
    def stderr(self) -> str:
        return Path(self.stderr_path).read_text()


@contextlib.contextmanager
def running_app(*args, env=None):
    """``microagg app --no-browser ARGS`` in a subprocess (``env``: more environment variables);
    yields a RunningApp. At the end: no traceback on its stderr; stopped by the test's SIGTERM
    here, it ended cleanly and removed its private folder."""
    env = dict(
        os.environ,
        PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        PYTHONUNBUFFERED="1",
        **(env or {}),
    )
    temp = Path(tempfile.gettempdir())
    before = set(temp.glob("microagg-app-*"))
    with tempfile.NamedTemporaryFile("w", suffix=".stderr", delete=False) as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "microagg.cli", "app", "--no-browser", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    private: set = set()
    stopped_here = False
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=[A-Za-z0-9._~-]{16,}", line)
        assert match, f"no address printed: {line!r} {Path(err.name).read_text()}"
        private = set(temp.glob("microagg-app-*")) - before
        assert len(private) == 1 and (next(iter(private)).stat().st_mode & 0o777) == 0o700
        yield RunningApp(match.group(0), int(match.group(1)), proc, private, err.name)
    finally:
        stopped_here = proc.poll() is None
        if stopped_here:
            proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        text = Path(err.name).read_text()
        os.unlink(err.name)
    from microagg import cli

    if proc.returncode == -signal.SIGKILL and "Traceback" in text:
        # killed with no handler while a run's process was starting: that process, orphaned before
        # multiprocessing sent it its task, can only end in spawn's own EOFError
        assert "spawn_main" in text and "EOFError" in text and text.count("Traceback") == 1, text
    else:
        assert "Traceback" not in text and "Exception" not in text, text
    if stopped_here:
        assert proc.returncode in (0, cli.EXIT_SIGTERM), text  # stopped by SIGTERM
        assert not any(p.exists() for p in private), "the private folder outlived the app"


@pytest.fixture
def app_server():
    with running_app() as running:
        yield running.url, running.port


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = _chromium()
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--no-proxy-server",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        opts.add_argument(flag)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    opts.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    driver.execute_cdp_cmd(
        "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    driver.downloads = downloads
    try:
        yield driver
    finally:
        driver.quit()


def _ignore_stale(check, driver, stale):
    try:
        return check(driver)
    except stale:  # an output re-rendered while it was read
        return False


class Page:
    """Small helpers to drive the app's page."""

    def __init__(self, driver, shots):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        self.d, self.By, self.shots = driver, By, shots
        self.run_clicks = 0  # the page marks an error with the Run click it belongs to
        self.wait = lambda secs=90: WebDriverWait(driver, secs, poll_frequency=0.1)

    def el(self, css, secs=30):
        return self.wait(secs).until(lambda d: d.find_element(self.By.CSS_SELECTOR, css))

    def text_of(self, css, predicate, secs=90):
        from selenium.common.exceptions import StaleElementReferenceException

        def check(d):
            try:
                found = d.find_elements(self.By.CSS_SELECTOR, css)
                return found[0].text if found and predicate(found[0].text) else False
            except StaleElementReferenceException:  # the output re-rendered meanwhile
                return False

        return self.wait(secs).until(check)

    def now(self, css, secs=30) -> str:
        """The text of ``css`` as it is now (read again if its output re-renders while it is
        read)."""
        return self.text_of(css, lambda t: True, secs)

    def settled(self, check, secs=30):
        """``check(driver)`` once the elements it reads hold still (an output re-rendered between a
        find and a read makes them stale: found and read again)."""
        from selenium.common.exceptions import StaleElementReferenceException

        return self.wait(secs).until(
            lambda d: _ignore_stale(check, d, StaleElementReferenceException)
        )

    def click(self, css, secs=40):
        """Click once the element can take it (a tab's pane fades in; an output re-renders)."""
        from selenium.common.exceptions import WebDriverException

        def attempt(d):
            try:
                element = d.find_element(self.By.CSS_SELECTOR, css)
                d.execute_script(
                    "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'});", element
                )
                element.click()
                return True
            except WebDriverException:
                return False

        self.wait(secs).until(attempt)

    def tab(self, value):
        self.click(f'a[data-value="{value}"]')

    def select(self, css, value):
        from selenium.webdriver.support.ui import Select

        Select(self.el(css)).select_by_value(value)

    def type_into(self, css, text):
        box = self.el(css)
        box.clear()
        box.send_keys(text)
        box.send_keys("\t")

    def shot(self, name):
        if self.shots:
            Path(self.shots).mkdir(parents=True, exist_ok=True)
            self.d.execute_script(
                "document.documentElement.style.scrollBehavior = 'auto'; window.scrollTo(0, 0);"
            )
            time.sleep(0.3)
            self.d.save_screenshot(str(Path(self.shots) / name))

    def run(self):
        self.click("#protect-run")
        self.run_clicks += 1

    def error_of_last_run(self, secs=60):
        return self.text_of(
            f'#error-line[data-run="{self.run_clicks}"]', lambda t: len(t) > 0, secs
        )

    def run_and_wait(self, run_number, secs=240):
        self.run()

        def finished(d):
            error = d.find_elements(
                self.By.CSS_SELECTOR, f'#error-line[data-run="{self.run_clicks}"]'
            )
            if error and error[0].text:
                return "error: " + error[0].text
            heads = d.find_elements(self.By.CSS_SELECTOR, "#results-result_detail h4")
            return heads and heads[0].text.startswith(f"Run {run_number}:")

        from selenium.common.exceptions import StaleElementReferenceException

        outcome = self.wait(secs).until(
            lambda d: _ignore_stale(finished, d, StaleElementReferenceException)
        )
        assert outcome is True, outcome
        return float(self.now("#il-value"))

    def download(self, button_id, suffix, secs=30):
        before = set(self.d.downloads.iterdir())
        self.click(f"#{button_id}")

        def done(_):
            # Chromium reserves the final name with an empty file and writes to a .crdownload
            # beside it, renamed over it when complete: done when no partial file is left
            now = set(self.d.downloads.iterdir())
            if any(p.suffix == ".crdownload" for p in now):
                return False
            new = [p for p in now - before if p.suffix == suffix and p.stat().st_size > 0]
            return new[0] if new else False

        return self.wait(secs).until(done)


needs_chromium = pytest.mark.skipif(
    _chromium() is None or not Path("/usr/bin/chromedriver").exists(),
    reason="Debian's chromium and chromium-driver are not installed (.ci/run installs them)",
)


@needs_chromium
def test_app_end_to_end_in_headless_chromium(app_server, browser, tmp_path):
    pytest.importorskip("shiny")
    url, port = app_server
    assert _listening_addresses(port) == ["127.0.0.1"]
    page = Page(browser, os.environ.get("MICROAGG_SCREENSHOTS"))
    By = page.By
    census = microagg.datasets.load("census")
    census_csv = tmp_path / "census.csv"
    census.to_csv(census_csv, index=False)

    browser.get(url.split("?")[0])  # without the token: refused
    assert "needs the app's token" in browser.find_element(By.TAG_NAME, "body").text
    browser.get(url)  # the printed address: the token logs in, then leaves the address bar
    page.wait(20).until(lambda d: d.current_url == f"http://127.0.0.1:{port}/")
    # a bundled data set, then an uploaded file
    page.select("#data-dataset", "tarragona")
    page.text_of("#data-name", lambda t: t == "tarragona")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#profile-table tr")) == 1 + 13
    browser.find_element(By.ID, "data-upload").send_keys(str(census_csv))
    page.text_of("#data-name", lambda t: t == "census.csv")
    page.shot("app-data.png")

    # run 1: mdav, k = 3, every numeric column (all suggested)
    page.tab("protect")
    page.settled(
        lambda d: (
            [
                b.is_selected()
                for b in d.find_elements(By.CSS_SELECTOR, "#protect-columns input[type=checkbox]")
            ]
            == [True] * 13
        )
    )
    page.type_into("#protect-k", "3")
    page.select("#protect-method", "mdav")
    page.text_of("#method-summary", lambda t: len(t) > 0)
    il_mdav = page.run_and_wait(1, 240)
    assert page.now("#results-result_detail h4") == "Run 1: mdav, k = 3, census.csv"
    expected = microagg.microaggregate(census, k=3, method="mdav")
    assert round(il_mdav, 4) == round(expected.information_loss, 4)
    reproduce = page.now("#reproduce")
    assert "microagg protect" in reproduce and "--method mdav" in reproduce and "-k 3" in reproduce
    page.shot("app-results.png")
    browser.execute_script("document.getElementById('report-frame').scrollIntoView();")
    browser.switch_to.frame(page.el("#report-frame"))
    browser.execute_script("document.getElementById('fig-group-sizes').scrollIntoView();")
    assert page.el("#svg-group-sizes") and page.el("#svg-pca-scatter")
    if page.shots:
        time.sleep(0.3)
        browser.switch_to.default_content()
        browser.save_screenshot(str(Path(page.shots) / "app-figures.png"))
    browser.switch_to.default_content()

    # run 2: icsm, then compare the two
    page.tab("protect")
    page.select("#protect-method", "icsm")
    il_icsm = page.run_and_wait(2)
    assert il_icsm < il_mdav
    page.tab("compare")
    history = page.text_of("#history-table", lambda t: "icsm" in t)
    assert (
        len(browser.find_elements(By.CSS_SELECTOR, "#history-table tr")) == 3 and "mdav" in history
    )
    table = page.text_of("#compare-table", lambda t: "icsm" in t and "mdav" in t)
    assert f"{il_mdav:.4f}" in table and f"{il_icsm:.4f}" in table
    page.shot("app-compare.png")

    # export run 1 (A): the protected file equals the API's output
    page.click("#compare-export_a")
    page.text_of("#results-result_detail h4", lambda t: t.startswith("Run 1:"))
    path = page.download("results-download_data", ".csv")
    got = pd.read_csv(path)
    assert list(got.columns) == list(census.columns)
    np.testing.assert_allclose(
        got.to_numpy(np.float64), expected.data.to_numpy(np.float64), rtol=1e-12
    )
    assert microagg.measures.smallest_group(got.to_numpy()) >= 3
    report = page.download("results-download_report", ".html")
    assert "<svg" in report.read_text()

    # a long colgen run: progress shows, Cancel stops it, the app stays usable
    page.tab("protect")
    page.select("#protect-method", "colgen")
    page.type_into("#protect-time_limit", "600")
    page.run()
    page.text_of("#run-status", lambda t: t.startswith("running colgen"))
    time.sleep(1.5)
    page.shot("app-running.png")
    page.run()  # one run at a time
    assert "already" in page.error_of_last_run(20)
    page.tab("compare")  # the page answers while the run goes on
    page.text_of("#history-table", lambda t: "colgen" in t and "running" in t, 20)
    page.tab("protect")
    page.click("#protect-cancel")
    page.text_of("#run-status", lambda t: "cancelled" in t, 20)
    page.tab("compare")
    page.text_of("#history-table", lambda t: "cancelled" in t, 20)
    page.tab("protect")
    page.type_into("#protect-time_limit", "")

    # errors are one line, without a traceback: k larger than the data, a parameter out of its range
    page.type_into("#protect-k", "5000")
    page.select("#protect-method", "mdav")
    page.run()
    message = page.error_of_last_run()
    assert "\n" not in message and "Traceback" not in browser.page_source and "5000" in message
    page.type_into("#protect-k", "3")
    page.select("#protect-method", "vmdav")
    page.type_into("#protect-param_vmdav__gamma", "-1")
    page.run()
    message = page.error_of_last_run()
    assert (
        "\n" not in message
        and "gamma" in message
        and ">= 0" in message
        and "Traceback" not in browser.page_source
    )
    page.select("#protect-method", "mdav")

    # a file whose column name and values carry HTML: shown as text, never run
    evil = '<img src=x onerror="window.__pwned=1">'
    rng = np.random.default_rng(1)
    n = 40
    hostile = pd.DataFrame(
        {
            "id": np.arange(n),
            evil: rng.normal(size=n).round(3),
            "age": rng.integers(18, 90, n),
            "note": ["<b>bold</b>&amp;"] * n,
            "region": rng.choice(["north", "south"], n),
            "w": rng.choice([1.0, 2.0, 3.5], n),
        }
    )
    hostile_csv = tmp_path / "hostile.csv"
    hostile.to_csv(hostile_csv, index=False)
    page.tab("data")
    browser.find_element(By.ID, "data-upload").send_keys(str(hostile_csv))
    page.text_of("#data-name", lambda t: t == "hostile.csv")
    assert evil in page.now("#profile-table") and "<b>bold</b>&amp;" in page.now("#preview-table")
    assert browser.execute_script(
        "return window.__pwned === undefined && document.querySelectorAll("
        "'img[src=x], #preview-table b').length === 0"
    )
    page.tab("protect")

    def qi_boxes(d) -> dict:
        """Each quasi-identifier box's label -> ticked (read afresh: the list re-renders)."""
        return {
            b.find_element(By.XPATH, "..").text.strip(): b.is_selected()
            for b in d.find_elements(By.CSS_SELECTOR, "#protect-columns input")
            if b.is_displayed()
        }

    labels = page.settled(lambda d: list(qi_boxes(d)) or False)
    assert any(evil in t for t in labels) and any("identifier" in t for t in labels)
    # with a stratum, a sample weight and a variable weight, as the API would do it
    from selenium.webdriver.support.ui import Select

    Select(page.el("#protect-strata")).select_by_visible_text("region")
    page.settled(
        lambda d: qi_boxes(d).get("w") is True
    )  # a numeric attribute by the default-QI rule
    Select(page.el("#protect-sample_weight")).select_by_visible_text("w")
    page.settled(lambda d: qi_boxes(d).get("w") is False)  # the sample weight leaves the QIs
    page.type_into("#protect-weights", "age=2")
    page.select("#protect-aggregation", "median")
    page.type_into("#protect-k", "4")
    page.run_and_wait(4)
    assert browser.execute_script("return window.__pwned === undefined")
    got = pd.read_csv(page.download("results-download_data", ".csv"))
    for column in ("id", "note", "region", "w"):  # not quasi-identifiers: unchanged
        assert got[column].equals(hostile[column])
    qi = [evil, "age"]
    assert microagg.measures.smallest_group(got[qi].to_numpy()) >= 4
    assert (got.groupby(qi)["region"].nunique() == 1).all()  # groups never cross strata
    api = microagg.microaggregate(
        hostile,
        k=4,
        method="mdav",
        columns=qi,
        strata=["region"],
        sample_weight="w",
        weights={"age": 2.0},
        aggregation="median",
    )
    np.testing.assert_allclose(got[qi].to_numpy(), api.data[qi].to_numpy(), rtol=1e-12)
    assert round(float(page.now("#il-value")), 4) == round(api.information_loss, 4)
    page.tab("protect")  # options that are not columns stay as they are when other data are loaded
    page.select("#protect-aggregation", "mean")
    page.type_into("#protect-weights", "")

    # a bundled data set with categorical columns (testdata): a nominal QI; the reproduce command
    # run from the command line gives the file the app exports
    page.tab("data")
    page.select("#data-dataset", "testdata")
    page.text_of("#data-name", lambda t: t == "testdata")
    page.tab("protect")
    ticked = page.settled(
        lambda d: len(qi_boxes(d)) >= 14 and {t.split()[0] for t, on in qi_boxes(d).items() if on}
    )
    assert ticked == {"expend", "income", "savings"}  # age repeats: not suggested

    def tick_sex(d):
        box = next(
            b
            for b in d.find_elements(By.CSS_SELECTOR, "#protect-columns input")
            if b.find_element(By.XPATH, "..").text.split()[0] == "sex"
        )
        d.execute_script(
            "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'}); "
            "arguments[0].click();",
            box,
        )
        return True

    page.settled(tick_sex)
    page.type_into("#protect-k", "3")
    il = page.run_and_wait(5)
    testdata = microagg.datasets.load("testdata")
    qi = ["sex", "expend", "income", "savings"]
    api = microagg.microaggregate(testdata, k=3, method="mdav", columns=qi, categorical=["sex"])
    assert round(il, 4) == round(api.information_loss, 4)
    command = page.now("#reproduce").split("# Python")[0].strip().splitlines()[-1]
    assert "--categorical sex" in command
    import shlex

    from microagg import cli

    argv = shlex.split(command)[1:]
    argv[argv.index("-o") + 1] = str(tmp_path / "from-cli.csv")
    assert cli.main(argv + ["-q"]) == 0
    exported = pd.read_csv(page.download("results-download_data", ".csv"))
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "from-cli.csv"), exported)

    # the compare tab shows every run option that differs from its default (runs 4 and 5)
    page.tab("compare")
    table = page.text_of("#compare-table", lambda t: "run 4" in t and "run 5" in t)
    rows: dict = {}
    for line in table.splitlines():
        rows.setdefault(line.split(" ")[0], line)  # the option's row comes before the measures
    for option, value in (
        ("strata", "region"),
        ("sample", "w"),
        ("weights", "age=2"),
        ("aggregation", "median"),
        ("categorical", "sex"),
    ):
        assert option in rows and value in rows[option], (option, table)
    assert _listening_addresses(port) == ["127.0.0.1"]


@needs_chromium
def test_file_argument_and_upload_limit(browser, tmp_path):
    big = tmp_path / "big.csv"
    microagg.datasets.load("census").to_csv(big, index=False)  # about 80 kB
    small = tmp_path / "small.csv"
    microagg.datasets.load("census").head(20).to_csv(small, index=False)
    assert big.stat().st_size > 20_000 > small.stat().st_size
    with running_app(str(small), "--max-upload-mb", "0.02") as running:
        url = running.url
        page = Page(browser, None)
        browser.get(url)
        page.text_of(
            "#data-name", lambda t: t == "small.csv", 20
        )  # the FILE argument, loaded at start
        page.el("#data-upload").send_keys(str(big))
        page.text_of("#upload-limit", lambda t: "larger than the upload limit of 0.02 MB" in t, 20)
        time.sleep(1.0)
        assert page.now("#data-name") == "small.csv"  # still the file loaded before
        browser.refresh()
        tiny = tmp_path / "tiny.csv"
        shutil.copy(small, tiny)
        page.el("#data-upload").send_keys(str(tiny))  # under the limit: accepted
        page.text_of("#data-name", lambda t: t == "tiny.csv", 20)


@needs_chromium
def test_the_apps_downloads_are_the_published_files(app_server, browser, tmp_path):
    """Downloaded from the page, a shuffled run, a run with merged strata and a labelled SPSS
    file: every published record is its original's (by its id), the merged stratum published as
    the stratum it joined, and the file k-anonymous on its key variables as its reader groups
    them; each download is the file the command line publishes for the same options."""
    pytest.importorskip("shiny")
    pyreadstat = pytest.importorskip("pyreadstat")
    url, _ = app_server
    page = Page(browser, None)
    rng = np.random.default_rng(7)
    n = 300
    survey = pd.DataFrame(
        {
            "id": np.arange(5000, 5000 + n),
            "REGION": rng.integers(1, 4, n),
            "INCOME": np.round(rng.lognormal(10, 1, n), 2),
            "ASSETS": np.round(rng.lognormal(11, 1, n), 2),
            "DEBTS": np.round(rng.lognormal(8, 1, n), 2),
            "note": rng.choice(["x", "y", "z"], n),
        }
    )
    survey.loc[:1, "REGION"] = 7  # a stratum of 2 records: merged into its nearest
    src = tmp_path / "survey.csv"
    survey.to_csv(src, index=False)
    qi = ["INCOME", "ASSETS", "DEBTS"]
    browser.get(url)
    browser.find_element(page.By.ID, "data-upload").send_keys(str(src))
    page.text_of("#data-name", lambda t: t == "survey.csv")
    page.tab("protect")
    page.type_into("#protect-k", "3")
    page.select("#protect-method", "mdav")
    from selenium.webdriver.support.ui import Select

    Select(page.el("#protect-strata")).select_by_visible_text("REGION")
    page.click("#protect-merge_small_strata")
    page.click("#protect-shuffle")
    page.run_and_wait(1)
    downloaded = page.download("results-download_data", ".csv")
    got = pd.read_csv(downloaded)
    manifest = page.download("results-download_manifest", ".json")
    assert (
        json_of(manifest)["shuffled"] is True
        and json_of(manifest)["verified"]["k_anonymous"] is True
    )
    assert sorted(got["id"]) == sorted(survey["id"]) and not got["id"].equals(
        survey["id"]
    )  # shuffled
    reference = tmp_path / "cli.csv"
    from microagg import cli

    assert (
        cli.main(
            [
                "protect",
                str(src),
                "-o",
                str(reference),
                "-k",
                "3",
                "--columns",
                ",".join(qi),
                "--strata",
                "REGION",
                "--merge-small-strata",
                "-q",
            ]
        )
        == 0
    )
    expected = pd.read_csv(reference).set_index("id")
    mine = got.set_index("id").loc[expected.index]
    pd.testing.assert_frame_equal(mine, expected)  # every record carries its own published values
    original = survey.set_index("id").loc[expected.index]
    assert (mine["note"] == original["note"]).all()
    merged = original["REGION"] == 7
    assert (mine.loc[merged, "REGION"] != 7).all() and (
        mine.loc[~merged, "REGION"] == original.loc[~merged, "REGION"]
    ).all()
    text = pd.read_csv(downloaded, dtype=str)
    assert (
        text.groupby(["REGION", *qi]).size().min() >= 3
    )  # k-anonymous as the file's text groups it

    # a labelled SPSS file: labels kept, records their originals'
    sav = tmp_path / "labelled.sav"
    labelled = survey.drop(columns="note")
    pyreadstat.write_sav(
        labelled,
        str(sav),
        column_labels={"INCOME": "yearly income"},
        variable_value_labels={"REGION": {1.0: "north", 2.0: "south", 3.0: "east", 7.0: "isle"}},
    )
    page.tab("data")
    browser.find_element(page.By.ID, "data-upload").send_keys(str(sav))
    page.text_of("#data-name", lambda t: t == "labelled.sav")
    page.tab("protect")

    def strata_region(d):  # the list re-renders for the new file: chosen once it shows and holds
        box = Select(d.find_element(page.By.CSS_SELECTOR, "#protect-strata"))
        if not any(o.text == "REGION" for o in box.options):
            return False
        if "REGION" not in [o.text for o in box.all_selected_options]:
            box.select_by_visible_text("REGION")
            return False
        return True

    time.sleep(1.0)
    page.settled(strata_region)
    if page.el("#protect-shuffle").is_selected():  # options stay as they were for the next file
        page.click("#protect-shuffle")
    page.run_and_wait(2)
    back, meta = pyreadstat.read_sav(str(page.download("results-download_data", ".sav")))
    assert meta.column_names_to_labels["INCOME"] == "yearly income"
    assert meta.variable_value_labels["REGION"][1.0] == "north"
    assert back["id"].tolist() == labelled["id"].astype(float).tolist()
    assert back.groupby(["REGION", *qi]).size().min() >= 3


def json_of(path):
    import json

    return json.loads(Path(path).read_text())
