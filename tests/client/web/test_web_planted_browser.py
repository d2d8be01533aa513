"""Planted run folders in a real browser (Debian's chromium): runs whose files claim ``1e20``
steps or rewards of ``1e308`` leave the runs list, the leaderboard, the matrix, Compare and
their own page answering and drawn, each marked damaged; the page throws nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from web_kit import console_errors, planted_copy, real_results, wait_css, wait_until

pytestmark = pytest.mark.browser
STEPS = "20270101T000000Z-0000b001"
REWARDS = ("20270101T000000Z-0000b002", "20270101T000000Z-0000b003")


def test_planted_numbers_leave_every_page_drawn_and_mark_their_runs_damaged(
    browser: Any, view: Callable[..., str], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    root = tmp_path / "results"
    ids = real_results(root)
    (original,) = [p for p in root.rglob(ids[0]) if p.is_dir()]
    planted_copy(original, STEPS, steps=1e20)
    for run_id in REWARDS:
        planted_copy(original, run_id, reward=1e308)
    console_errors(browser)  # what earlier tests left in the log
    address = view(root, "--hosted")
    browser.get(address)
    rows = wait_css(browser, "tr.run-row", len(ids) + 3)
    damaged = [r for r in rows if r.get_attribute("data-run") in (STEPS, *REWARDS)]
    assert len(damaged) == 3 and all("damaged" in r.text for r in damaged)
    base = address.split("/?")[0]
    browser.get(f"{base}/#/leaderboard")
    wait_css(browser, "#leaderboard .board-row")
    assert "Infinity" not in browser.page_source and "NaN" not in browser.page_source
    browser.get(f"{base}/#/matrix")
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#matrix td"))
    browser.get(f"{base}/#/run/{STEPS}")
    notice = wait_css(browser, "#damaged")[0].text
    assert "steps = 1e+20" in notice and "not shown or counted" in notice
    wait_css(browser, "#dialog .item")
    browser.get(f"{base}/#/compare?a={ids[0]}&b={REWARDS[0]}")
    wait_css(browser, "#compare thead th a", 2)
    assert console_errors(browser) == []
