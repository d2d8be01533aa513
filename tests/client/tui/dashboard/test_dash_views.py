"""The dashboard's widgets rendered to a canvas: what the text says, and how keys reach them."""

from __future__ import annotations

from pathlib import Path

from dash_kit import FakeShell, checkpoint, make_run, record

from srez_client.models_catalog import parse_catalog
from srez_client.tui.dashboard import DashboardScreen, MonitorScreen, PickerModel, PickerView
from srez_client.tui.dashboard.managed_source import ManagedApiSource
from srez_client.tui.dashboard.widgets import ConfirmDialog, render_text

CATALOG = parse_catalog(
    "| slug | default | note |\n|---|---|---|\n"
    + "".join(f"| p/m{i:02d} | {'yes' if i < 2 else ''} | note {i} |\n" for i in range(30))
)


def picker_view() -> tuple[PickerView, list[list[str] | None]]:
    done: list[list[str] | None] = []
    return PickerView(PickerModel.from_catalog(CATALOG), done.append), done


def test_picker_view_renders_checkboxes_numbers_and_footer() -> None:
    view, _ = picker_view()
    text = render_text(view, (100, 20))
    assert "[x]  1. p/m00  note 0" in text
    assert "[ ]  3. p/m02  note 2" in text
    assert "2 selected" in text and "Space toggle" in text


def test_picker_view_page_size_follows_the_height() -> None:
    view, _ = picker_view()
    render_text(view, (100, 20))
    small = view.model.page_size
    assert small >= 5
    assert f"page 1/{-(-30 // small)}" in render_text(view, (100, 20))
    text = render_text(view, (100, 40))
    assert view.model.page_size == small + 20
    assert "30. p/m29" in text and "page 1/1" in text


def test_picker_view_keys_prompt_and_accept() -> None:
    view, done = picker_view()
    size = (100, 20)
    render_text(view, size)
    for key in [":", *"select 3", "enter", "down", " "]:
        assert view.keypress(size, key) is None
    text = render_text(view, size)
    assert "selected 1 row(s)" not in text  # the message was cleared by the next key
    assert "[ ]  2. p/m01" in text and "[x]  3. p/m02" in text
    for key in ["/", *"m2"]:
        view.keypress(size, key)
    assert "/m2▏" in render_text(view, size)
    view.keypress(size, "enter")
    view.keypress(size, "enter")
    assert done == [["p/m00", "p/m02"]]


def test_picker_view_passes_unbound_keys_and_cancels_on_esc() -> None:
    view, done = picker_view()
    assert view.keypress((100, 20), "ctrl q") == "ctrl q"
    assert view.keypress((100, 20), "esc") is None
    assert done == [None]


def test_picker_view_shows_typed_errors_in_the_footer() -> None:
    view, _ = picker_view()
    for key in [":", *"drop 99", "enter"]:
        view.keypress((100, 20), key)
    assert "row 99 is not shown; rows are 1-30; nothing changed" in render_text(view, (100, 20))


def test_confirm_dialog_runs_only_on_yes(tmp_path: Path) -> None:
    shell = FakeShell(tmp_path, tmp_path)
    said: list[str] = []
    shell.push(object(), "under")
    shell.push(ConfirmDialog(shell, "Delete demo?", lambda: said.append("yes")), "Confirm")
    assert "Delete demo?" in shell.screen()
    shell.press("x")  # swallowed
    assert len(shell.stack) == 2
    shell.press("n")
    assert said == [] and len(shell.stack) == 1
    shell.push(ConfirmDialog(shell, "Again?", lambda: said.append("yes")), "Confirm")
    shell.press("y")
    assert said == ["yes"] and len(shell.stack) == 1


async def test_dashboard_screen_renders_empty_then_runs(tmp_path: Path) -> None:
    shell = FakeShell(tmp_path / "results", tmp_path / "state")
    screen = DashboardScreen(shell)
    shell.push(screen, "Managed runs")
    try:
        assert "No managed run yet. Press n to create one." in shell.screen()
        assert "n new" in shell.screen()
        make_run(tmp_path / "results")
        await shell.until(lambda: "demo · inline · 3 tasks" in shell.screen())
        assert "llm-openai__gpt-4o" in shell.screen()
        assert shell.press("ctrl q") == ["ctrl q"]
    finally:
        await shell.shutdown()


async def test_monitor_screen_renders_sanitised_logs_and_tasks(tmp_path: Path) -> None:
    results = tmp_path / "results"
    folder = make_run(results)
    checkpoint(results, "demo", "scripted", record("sre-001", reward=1.0, error="bad\x1b[2Jthing"))
    (folder / "targets" / "scripted" / "console.log").write_bytes(b"hello \x1b]0;title\x07 world\n")
    (folder / "targets" / "scripted" / "runner.log").write_bytes(b"INFO started\npartial")
    shell = FakeShell(results, tmp_path / "state")
    source = ManagedApiSource(results, tmp_path / "state")
    shell.push(MonitorScreen(shell, source, "demo", "scripted", folder), "monitor")
    try:
        await shell.until(lambda: "1/3 completed" in shell.screen())
        text = shell.screen()
        assert "\x1b" not in text
        assert "hello \\x1b]0;title\\x07 world" in text
        assert "INFO started" in text and "partial" in text
        assert "bad\\x1b[2Jthing" in text
        assert "no daily budget" in text and "p pause after this task" in text
    finally:
        await shell.shutdown()
