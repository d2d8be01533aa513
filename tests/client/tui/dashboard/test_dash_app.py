"""The dashboard inside the real application shell (``tui/app.py``), driven headless."""

from __future__ import annotations

from pathlib import Path

import pytest
from dash_kit import eventually, make_run

from srez_client.tui.app import TuiApp
from srez_client.tui.dashboard import DashboardScreen
from srez_client.tui.dashboard.forms import CreateForm


async def test_the_app_opens_the_dashboard_and_hosts_its_dialogs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SREZ_STATE", str(tmp_path / "state"))
    results = tmp_path / "results"
    folder = make_run(results)
    app = TuiApp(results_root=results, state_dir=tmp_path / "state")
    app.first_screen(None)
    assert isinstance(app.stack[-1][0], DashboardScreen)
    await eventually(lambda: "demo · inline" in app.screen_text())
    app.feed_keys(["X"])  # the question is an overlay over the dashboard
    text = app.screen_text()
    assert "Delete managed run demo" in text and "demo · inline" in text
    app.feed_keys(["n"])
    assert len(app.stack) == 1 and folder.is_dir()
    app.feed_keys(["n"])
    await eventually(lambda: isinstance(app.stack[-1][0], CreateForm))
    app.feed_keys(["esc"])  # unhandled by the form: the app's "back"
    assert isinstance(app.stack[-1][0], DashboardScreen)
    assert app.errors == []


async def test_help_lists_the_current_screens_keys_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``?`` on the dashboard starts with the dashboard's keys (not the run viewer's), and on
    the attach list with the list's; the global keys follow, the other screens' after them."""
    monkeypatch.setenv("SREZ_STATE", str(tmp_path / "state"))
    app = TuiApp(results_root=tmp_path / "results", state_dir=tmp_path / "state")
    app.first_screen(None)
    app.feed_keys(["?"])
    text = app.screen_text()
    assert "dashboard:" in text and "create a managed run (a form)" in text
    assert "viewer:" not in text.split("dashboard:")[0]
    assert text.index("dashboard:") < text.index("global:")
    app.feed_keys(["esc", "ctrl r"])
    app.feed_keys(["?"])
    text = app.screen_text()
    assert "list:" in text and "attach to the selected run" in text
    assert "dashboard:" not in text.split("list:")[0] and "viewer:" not in text.split("list:")[0]
    app.feed_keys(["esc", "esc"])
    assert isinstance(app.stack[-1][0], DashboardScreen)
