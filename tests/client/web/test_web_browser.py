"""``srez view`` in a real browser: Debian's chromium, driven through chromedriver by Selenium,
against the real command on loopback. Screenshots are saved under ``$SREZ_TEST_ARTIFACTS``
(default: the test's own temporary folder); ``make view-screens`` writes the README's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from web_kit import (
    HOSTILE_ID,
    SCRIPT,
    SLOW_AGENT,
    click_css,
    console_errors,
    hostile_run,
    real_results,
    reference_edit,
    wait_css,
    wait_until,
)

pytestmark = pytest.mark.browser


def _artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("SREZ_TEST_ARTIFACTS", tmp_path / "artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    real_results(root)
    hostile_run(root)
    return root


def test_browse_filter_and_read_a_run(
    browser: Any, view: Callable[..., str], results: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    console_errors(browser)  # what earlier tests left in the log
    address = view(results)
    browser.get(address)
    rows = wait_css(browser, "tr.run-row", 7)
    assert len(rows) == 7
    token = address.split("token=")[1]
    assert token not in browser.current_url and token not in browser.page_source
    Select(browser.find_element(By.ID, "filter-task")).select_by_value("sre-011")
    wait_until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.run-row")) == 2)
    # two agents on one task, side by side
    assert browser.find_element(By.ID, "compare").get_attribute("disabled") is not None
    for box in browser.find_elements(By.CSS_SELECTOR, "tr.run-row input.pick"):
        box.click()
    assert browser.find_element(By.ID, "compare").text == "Compare (2/2)"
    browser.find_element(By.ID, "compare").click()
    heads = [e.text.split("\n")[0] for e in wait_css(browser, "#compare thead th a", 2)]
    assert sorted(heads) == ["heuristic", "scripted"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#compare tr.check-row")) == 5
    task_row = browser.find_element(By.CSS_SELECTOR, "#compare tr[data-row='task']")
    assert task_row.text.count("sre-011 (hard)") == 2
    assert browser.find_elements(By.ID, "compare-note") == []
    assert "null" not in browser.find_element(By.ID, "main").text
    browser.save_screenshot(str(_artifacts(tmp_path) / "view-compare.png"))
    browser.back()
    wait_until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.run-row")) == 2)
    Select(browser.find_element(By.ID, "filter-agent")).select_by_value("scripted")
    wait_until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.run-row")) == 1)
    browser.save_screenshot(str(_artifacts(tmp_path) / "view-runs.png"))
    click_css(browser, "tr.run-row a")
    titles = [e.text for e in wait_css(browser, "#dialog .item .title", 4)]
    assert titles[0] == "Session started: scripted · none · sre-011" and titles[1] == "Task prompt"
    assert browser.find_element(By.ID, "footer-state").text.startswith("Session complete")
    assert browser.find_element(By.ID, "task").text == "sre-011 (hard)"
    browser.find_element(By.ID, "more-details").click()
    assert "the gateway SLO has been breached" in browser.find_element(By.ID, "details").text
    path, value = reference_edit("sre-011")
    assert [c.get_attribute("data-path") for c in wait_css(browser, "#changes .card")] == [path]
    assert value in browser.find_element(By.CSS_SELECTOR, "#changes .diff .add").text
    browser.find_element(By.CSS_SELECTOR, "button[data-side='truth']").click()
    assert "REFERENCE FIX" in wait_css(browser, ".banner")[0].text
    browser.find_element(By.CSS_SELECTOR, "button[data-side='split']").click()
    assert len(wait_css(browser, "#split .card", 2)) == 2
    assert browser.find_element(By.ID, "similarity").get_attribute("class") == "green"
    browser.save_screenshot(str(_artifacts(tmp_path) / "view-run.png"))
    browser.find_element(By.CSS_SELECTOR, "button[data-area='evaluation']").click()
    checks = wait_css(browser, "#evaluation .check", 5)
    assert [c.get_attribute("data-check") for c in checks] == [
        "valid",
        "func",
        "safe",
        "intent",
        "rca",
    ]
    assert all(c.text.startswith("✓") for c in checks)
    assert browser.find_element(By.ID, "reward").text.startswith("reward 1.000")
    browser.find_element(By.ID, "nav-leaderboard").click()
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#leaderboard, #main .error"))
    assert console_errors(browser) == [], browser.find_element(By.ID, "main").text
    board = wait_css(browser, "#leaderboard .board-row", 2)
    assert [row.text.split()[1] for row in board] == ["scripted", "heuristic"]
    browser.find_element(By.ID, "nav-matrix").click()
    assert len(wait_css(browser, "#matrix tbody tr", 3)) == 3
    for box in browser.find_elements(By.CSS_SELECTOR, "#matrix tr[data-task='sre-007'] input.pick"):
        box.click()  # a matrix row's two agents
    browser.find_element(By.ID, "compare").click()
    assert len(wait_css(browser, "#compare tr.check-row", 5)) == 5
    task_row = browser.find_element(By.CSS_SELECTOR, "#compare tr[data-row='task']")
    assert task_row.text.count("sre-007") == 2
    assert console_errors(browser) == []


def test_what_an_agent_wrote_is_text_on_the_page(
    browser: Any, view: Callable[..., str], results: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(view(results, "--hosted"))
    wait_css(browser, "tr.run-row")
    browser.get(browser.current_url.split("#")[0] + f"#/run/{HOSTILE_ID}")
    items = wait_css(browser, "#dialog .item", 4)
    assert SCRIPT in browser.find_element(By.CSS_SELECTOR, "#dialog .item.tool .title").text
    assert SCRIPT in browser.find_element(By.CSS_SELECTOR, "#dialog .item.assistant .body").text
    assert browser.find_elements(By.CSS_SELECTOR, "#dialog script, #dialog img, #dialog a") == []
    assert browser.execute_script("return window.__pwned === undefined") is True
    browser.save_screenshot(str(_artifacts(tmp_path) / "view-hostile.png"))
    assert len(items) >= 4


def test_hosted_mode_offers_no_stop_no_terminal_and_reads_no_link(
    browser: Any, view: Callable[..., str], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    hostile_run(tmp_path / "results", planted_link_to=secret)
    browser.get(view(tmp_path / "results", "--hosted"))
    assert browser.find_element(By.ID, "mode").text == "hosted · read-only" or wait_css(
        browser, "tr.run-row"
    )
    wait_css(browser, "tr.run-row")
    assert browser.find_element(By.ID, "mode").text == "hosted · read-only"
    click_css(browser, "tr.run-row a")
    wait_css(browser, "#areas button", 3)
    assert [b.text for b in browser.find_elements(By.CSS_SELECTOR, "#areas button")] == [
        "Changes",
        "Evaluation",
        "Logs",
    ]
    assert browser.find_elements(By.CSS_SELECTOR, "#actions button") == []
    assert "TOP SECRET" not in browser.page_source
    status = browser.execute_script(
        "return fetch(location.pathname.replace(/[^/]*$/, '') + 'api/runs/' + arguments[0] + '/stop', "
        "{method: 'POST', headers: {Authorization: 'Bearer ' + localStorage.getItem('srez-view-secret')}})"
        ".then(r => r.status)",
        HOSTILE_ID,
    )
    assert status == 403


def test_follow_a_live_local_run_and_use_its_terminal(
    browser: Any, view: Callable[..., str], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    console_errors(browser)  # what earlier tests left in the log
    results = tmp_path / "results"
    results.mkdir()
    (tmp_path / "slow.py").write_text(SLOW_AGENT)
    env = {**os.environ, "SREZ_STATE": str(tmp_path / "state"), "SREZ_TUI_BACKENDS": "local"}
    address = view(results, "--backend", "local")
    run = subprocess.Popen(
        [
            sys.executable, "-m", "srez_client.cli", "run", "--backend", "local", "--task", "sre-001",
            "--agent", "cmd:slow", "--agent-cmd", f"{sys.executable} {tmp_path / 'slow.py'}",
            "--results", str(results),
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    try:
        browser.get(address)
        wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.run-row"))
        browser.find_element(By.CSS_SELECTOR, "button[data-tab='running']").click()
        click_css(browser, "tr.run-row a")
        wait_until(browser, lambda d: "Live" in d.find_element(By.ID, "footer-state").text)
        wait_css(browser, "#dialog .item.tool")
        assert browser.find_element(By.ID, "source").text == "from its daemon"
        assert browser.find_elements(By.CSS_SELECTOR, "#actions button[data-action='stop']")
        browser.find_element(By.CSS_SELECTOR, "button[data-area='terminal']").click()
        screen = wait_css(browser, "#terminal")[0]
        wait_until(
            browser, lambda d: d.find_element(By.ID, "terminal").text.strip() != ""
        )  # a prompt
        screen.send_keys("echo hello-$((6*7))-view\n")
        wait_until(browser, lambda d: "hello-42-view" in d.find_element(By.ID, "terminal").text)
        browser.save_screenshot(str(_artifacts(tmp_path) / "view-live.png"))
        wait_until(
            browser,
            lambda d: d.find_element(By.ID, "footer-state").text.startswith("Session complete"),
        )
        # the run ends, and the page reads it from its results folder without a reload
        wait_until(browser, lambda d: d.find_element(By.ID, "source").text == "from results", 60)
        assert browser.find_elements(By.CSS_SELECTOR, "#actions button") == []
        assert [b.text for b in browser.find_elements(By.CSS_SELECTOR, "#areas button")] == [
            "Changes",
            "Evaluation",
            "Logs",
        ]
        assert browser.find_element(By.ID, "phase").text == "phase done"
        assert browser.find_element(
            By.CSS_SELECTOR, "button[data-side='truth']"
        )  # read from results
        _, err = run.communicate(timeout=60)
        assert run.returncode == 0, err
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()  # closes its pipes, whatever ended the test
    # the page asks for the run's results until they are mirrored: those 404s are expected
    assert [e for e in console_errors(browser) if "404" not in e and "WebSocket" not in e] == []
