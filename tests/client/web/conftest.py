"""Fixtures of the browser tests: ``srez view`` started as a user starts it, and one headless
Debian chromium per module, driven by Selenium through chromedriver."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def view(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Starts ``srez view`` on a results folder; returns the address it printed."""
    started: list[tuple[subprocess.Popen[str], str]] = []

    def start(root: Path, *flags: str) -> str:
        proc = subprocess.Popen(
            [sys.executable, "-m", "srez_client.cli", "view", "--results", str(root), *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "SREZ_STATE": str(tmp_path / "state")},
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line + (proc.stderr.read() if proc.stderr else "")
        address = line.split(": ", 1)[1].strip()
        started.append((proc, address.split("token=")[1]))
        return address

    yield start
    for proc, token in started:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
        assert "Traceback" not in err, err
        assert token not in out + err  # printed once, in the address, and never logged
        assert "srez view stopped" in err


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1400,900",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        yield driver
    finally:
        driver.quit()
