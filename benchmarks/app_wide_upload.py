"""A wide upload in the app's page (issue 57: "a 5,000-column upload stalls the app's page for
17 s"): ``microagg app --no-browser`` in a subprocess, driven by Debian's headless chromium
through selenium and /usr/bin/chromedriver (as tests/test_app.py's browser test; nothing is
downloaded). A CSV of 40 records x d columns (normal values, 3 decimals) is uploaded; timed from
the file given to the upload control to the Data tab showing its name and its profile table.
While it loads, the page is asked for a value every 0.1 s (a script round trip): the longest
wait for an answer is how long the page stalled.

    python benchmarks/app_wide_upload.py [--widths 500,5000]

Results: benchmarks/results/app_wide_upload.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import md_table, write_results  # noqa: E402

NAME = "app_wide_upload"
ROOT = Path(__file__).resolve().parent.parent


def wide_csv(d: int, folder: Path) -> Path:
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame(
        np.random.default_rng(d).normal(size=(40, d)).round(3),
        columns=[f"c{i}" for i in range(d)],
    )
    path = folder / f"wide{d}.csv"
    frame.to_csv(path, index=False)
    return path


def browser(folder: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-dev-shm-usage",
        "--no-proxy-server",
        "--window-size=1400,1000",
        f"--user-data-dir={folder / 'profile'}",
    ):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def upload(driver, path: Path, d: int) -> dict:
    from selenium.webdriver.common.by import By

    def name_shown() -> bool:
        found = driver.find_elements(By.ID, "data-name")
        rows = driver.find_elements(By.CSS_SELECTOR, "#profile-table tr")
        return bool(found) and found[0].text == path.name and len(rows) > 1

    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    driver.find_element(By.ID, "data-upload").send_keys(str(path))
    longest, done = 0.0, None
    while time.perf_counter() - t0 < 600:
        asked = time.perf_counter()
        driver.execute_script("return document.readyState")
        longest = max(longest, time.perf_counter() - asked)
        if name_shown():
            done = time.perf_counter() - t0
            break
        time.sleep(0.1)
    rows = len(driver.find_elements(By.CSS_SELECTOR, "#profile-table tr")) - 1
    return {
        "columns": d,
        "seconds_to_shown": None if done is None else round(done, 2),
        "longest_page_wait_seconds": round(longest, 2),
        "profile_rows_shown": rows,
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="500,5000")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONUNBUFFERED="1")
    rows = []
    with tempfile.TemporaryDirectory(prefix="microagg-upload-") as tmp:
        folder = Path(tmp)
        app = subprocess.Popen(
            [sys.executable, "-m", "microagg.cli", "app", "--no-browser"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        driver = None
        try:
            line = app.stdout.readline()
            url = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
            if url is None:
                raise SystemExit(f"no address printed: {line!r}")
            driver = browser(folder)
            driver.get(url.group(0))
            time.sleep(3)  # the page connected
            for d in (int(x) for x in args.widths.split(",") if x):
                rows.append(upload(driver, wide_csv(d, folder), d))
                print(rows[-1], flush=True)
        finally:
            if driver is not None:
                driver.quit()
            app.terminate()  # the app this script started, by its handle
            app.wait(timeout=30)
    table = md_table(
        [
            "records x columns",
            "upload to shown (s)",
            "longest page wait (s)",
            "profiles shown",
            "load before / after",
        ],
        [
            [
                f"40 x {r['columns']:,}",
                r["seconds_to_shown"],
                r["longest_page_wait_seconds"],
                r["profile_rows_shown"],
                f"{r['load_before']} / {r['load_after']}",
            ]
            for r in rows
        ],
    )
    write_results(NAME, rows, table)


if __name__ == "__main__":
    main()
