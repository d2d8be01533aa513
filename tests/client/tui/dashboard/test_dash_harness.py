"""The dashboard driven by key names against a fake Shell and real managed-run folders (the
managed API in tmp; the runner a real ``srez managed run`` process on the inline backend)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from dash_kit import SIZE, FakeShell, checkpoint, eventually, make_run, record

from srez_client.backends.registry import BACKEND_NAMES
from srez_client.managed import api
from srez_client.tui.dashboard import DashboardScreen, MonitorScreen, PickerView
from srez_client.tui.dashboard.forms import AddTargetForm, CreateForm
from srez_client.tui.dashboard.widgets import ConfirmDialog

CATALOG = """| slug | provider | default | note |
|---|---|---|---|
| openai/gpt-4o | OpenAI | yes | tool calling |
| anthropic/claude-a | Anthropic | | tool calling |
| anthropic/claude-b | Anthropic | yes | cheap |
| gemini/flash | Google | | cheap |
"""


@pytest.fixture
async def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeShell]:
    catalog = tmp_path / "models.md"
    catalog.write_text(CATALOG)
    monkeypatch.setenv("SREZ_MODELS_FILE", str(catalog))
    monkeypatch.setenv("SREZ_STATE", str(tmp_path / "state"))
    fake = FakeShell(tmp_path / "results", tmp_path / "state")
    fake.push(DashboardScreen(fake), "Managed runs")
    fake.redraw()
    try:
        yield fake
    finally:
        await fake.shutdown()


def run_json(shell: FakeShell, name: str = "demo") -> dict[str, object]:
    return orjson.loads((shell.results_root / "managed" / name / "run.json").read_bytes())  # type: ignore[no-any-return]


async def test_create_a_run_through_the_form_and_the_picker(shell: FakeShell) -> None:
    shell.press("n")
    await shell.settle()
    assert isinstance(shell.top, CreateForm)
    assert "openai/gpt-4o, anthropic/claude-b" in shell.screen()  # the catalogue defaults
    shell.write("demo")
    shell.press("down", "down", "down", " ")  # random, heuristic, scripted: tick scripted
    shell.press("down", "enter")  # Pick models…
    assert isinstance(shell.top, PickerView)
    shell.press("c", "/")
    shell.write("anthropic")
    shell.press("enter", ":")
    shell.write("select 1")
    shell.press("enter", "f", "down", "down", "down", " ", "enter")  # + gemini/flash
    assert isinstance(shell.top, CreateForm)
    assert "2: anthropic/claude-a, gemini/flash" in shell.screen()
    shell.press("down")
    shell.write("sre-001,sre-002")
    shell.press("down", " ")  # backend: inline
    shell.press(*["tab"] * len(BACKEND_NAMES))  # past the other backends' buttons: the budget
    shell.write("7")  # budget, with no cost cap: refused by the form
    shell.press("tab", "tab", "enter")
    assert "needs a cost cap" in shell.screen()
    shell.press("shift tab")
    shell.write("0.5")
    shell.press("tab", "enter")
    await shell.settle()
    assert isinstance(shell.top, DashboardScreen)
    run = run_json(shell)
    assert [t["name"] for t in run["targets"]] == [  # type: ignore[index, union-attr]
        "scripted",
        "llm-anthropic__claude-a",
        "llm-gemini__flash",
    ]
    assert (run["tasks"], run["backend"]) == (["sre-001", "sre-002"], "inline")
    assert (run["daily_budget_usd"], run["cost_cap_usd"]) == (7.0, 0.5)
    assert "created demo" in shell.notes[-1]
    assert "demo · inline · 2 tasks · $7.00/day" in shell.screen()


def focused_rows(form: object) -> list[str]:
    """What is drawn with the ``focus`` attribute (the highlight), line by line."""
    canvas = form.render(SIZE, focus=True)  # type: ignore[attr-defined]
    lines = [b"".join(t for attr, _cs, t in row if attr == "focus") for row in canvas.content()]
    return [line.decode().strip() for line in lines if line.strip()]


async def test_form_fields_show_their_focus_and_down_never_lands_on_cancel(
    shell: FakeShell,
) -> None:
    shell.press("n")
    await shell.settle()
    form = shell.top
    assert isinstance(form, CreateForm)
    assert [row.startswith("Name:") for row in focused_rows(form)] == [True]
    shell.press("down")
    assert [row.endswith("random") for row in focused_rows(form)] == [True]
    for _ in range(30):  # Down past the last field: onto Create, and no further
        shell.press("down")
    assert form.pile.focus is form.buttons and form.buttons.focus_position == 0
    assert focused_rows(form) == ["< Create   >"]
    shell.press("enter")  # Create: the form checks the fields, and stays with what is wrong
    assert isinstance(shell.top, CreateForm) and "the run needs a name" in shell.screen()
    shell.press("up", "right", "left")  # within the buttons, Cancel is still one key away
    assert form.buttons.focus_position == 0
    shell.press("tab", "tab", "shift tab", "shift tab")
    assert form.buttons.focus_position == 0  # Tab onto the buttons: Create too


async def test_create_refused_by_the_api_keeps_the_form_open(shell: FakeShell) -> None:
    make_run(shell.results_root)
    shell.press("n")
    await shell.settle()
    shell.write("demo")
    shell.press("tab", "tab", "tab", " ")  # scripted
    for _ in range(5 + len(BACKEND_NAMES)):  # the fields and each backend's button, to Create
        shell.press("tab")
    shell.press("enter")
    await shell.settle()
    assert isinstance(shell.top, CreateForm)
    assert "already exists" in shell.screen()


async def test_run_a_target_and_follow_it_in_the_monitor(shell: FakeShell) -> None:
    make_run(shell.results_root, tasks=("sre-001", "sre-002"), models=())
    await shell.until(lambda: "scripted" in shell.screen())
    shell.press("down", "r")
    assert isinstance(shell.top, MonitorScreen)
    await shell.until(lambda: "2/2 completed" in shell.screen(), limit=20)
    text = shell.screen()
    assert "evidence  100% (full on 2/2 graded tasks)" in text
    assert "score 1.000" in text and "errors    provider 0 · agent 0 · harness 0" in text
    await shell.until(lambda: "sre-002 attempt 1: completed" in shell.screen())
    shell.press("enter")
    first = run_json_checkpoint(shell, "scripted")["tasks"]["sre-001"]
    assert shell.opened == [first["results_dir"]]
    shell.press("q")
    assert isinstance(shell.top, DashboardScreen)
    await shell.until(lambda: " done " in shell.screen())
    await shell.until(lambda: not shell.top.source._launched, limit=20)  # reaped, exit 0
    assert not any("exited" in n for n in shell.notes)


def run_json_checkpoint(shell: FakeShell, target: str) -> dict[str, dict[str, dict[str, str]]]:
    path = shell.results_root / "managed" / "demo" / "targets" / target / "output.json"
    return orjson.loads(path.read_bytes())  # type: ignore[no-any-return]


async def test_a_runner_that_fails_to_start_is_reported(shell: FakeShell) -> None:
    make_run(shell.results_root, models=())
    await shell.until(lambda: "scripted" in shell.screen())
    api.remove_target(shell.results_root, "demo", "scripted")  # gone under the dashboard's feet
    shell.press("down", "r")
    shell.press("q")
    await shell.until(lambda: any("exited 2" in n for n in shell.notes), limit=20)
    note = next(n for n in shell.notes if "exited 2" in n)
    assert "runner of demo/scripted" in note and "scripted" in note


async def test_monitor_pause_stop_and_clear_keys(shell: FakeShell) -> None:
    folder = make_run(shell.results_root)
    await shell.until(lambda: "scripted" in shell.screen())
    shell.press("down", "enter")
    assert isinstance(shell.top, MonitorScreen)
    shell.press("p")
    await shell.settle()
    assert (folder / "PAUSE").is_file()
    await shell.until(lambda: "PAUSE set (paused by the user)" in shell.screen())
    shell.press("c")
    await shell.settle()
    assert not (folder / "PAUSE").exists()
    shell.press("b")  # the dashboard's summaries: nothing here
    await shell.settle()
    assert not (folder / "PAUSE").exists()
    for key in ("s", "S"):  # no runner: pause, then a stop that finds nothing to stop
        shell.press(key)
        await shell.settle()
        assert (folder / "PAUSE").is_file()
        assert "stopped" in shell.screen()
        shell.press("c")
        await shell.settle()
        assert not (folder / "PAUSE").exists()


async def test_add_and_remove_targets(shell: FakeShell) -> None:
    make_run(shell.results_root)
    await shell.until(lambda: "scripted" in shell.screen())
    shell.press("a")
    await shell.settle()
    assert isinstance(shell.top, AddTargetForm)
    assert "scripted" not in shell.screen().split("Baselines")[1].split("LLM")[0]
    shell.press(" ", "down", "down", "enter")  # random, then Pick models…
    shell.press("down", "down", "down", " ", "enter")  # + gemini/flash
    shell.press("tab", "enter")
    await shell.settle()
    names = [t["name"] for t in run_json(shell)["targets"]]  # type: ignore[union-attr]
    assert names == ["scripted", "llm-openai__gpt-4o", "random", "llm-gemini__flash"]
    await shell.until(lambda: "llm-gemini__flash" in shell.screen())
    shell.press("down", "x")
    assert isinstance(shell.top, ConfirmDialog)
    assert "Remove target scripted from demo?" in shell.screen()
    shell.press("y")
    await shell.settle()
    names = [t["name"] for t in run_json(shell)["targets"]]  # type: ignore[union-attr]
    assert names == ["llm-openai__gpt-4o", "random", "llm-gemini__flash"]


async def test_clear_pause_summaries_export_and_delete_artifacts(shell: FakeShell) -> None:
    folder = make_run(shell.results_root)
    checkpoint(shell.results_root, "demo", "scripted", record("sre-001", reward=1.0))
    api.pause(shell.results_root, "demo")
    await shell.until(lambda: "PAUSED" in shell.screen())
    shell.press("c")
    await shell.settle()
    assert not (folder / "PAUSE").exists()
    shell.press("b")
    await shell.settle(limit=30)
    assert (folder / "summary.json").is_file() and (folder / "summary.md").is_file()
    assert "summaries rebuilt" in shell.notes[-1] and "summary.json" in shell.notes[-1]
    shell.press("e")
    await shell.settle()
    assert "scripted" in (folder / "command.sh").read_text()
    assert (folder / "command.ps1").is_file()
    shell.press("down", "D")
    assert "Delete the checkpoint, logs and results of scripted" in shell.screen()
    shell.press("y")
    await shell.settle()
    assert not (folder / "targets" / "scripted").exists()


async def test_delete_a_run_only_after_yes(shell: FakeShell) -> None:
    folder = make_run(shell.results_root)
    await shell.until(lambda: "demo" in shell.screen())
    shell.press("X")
    assert "Delete managed run demo" in shell.screen()
    shell.press("n")
    await shell.settle()
    assert folder.is_dir() and isinstance(shell.top, DashboardScreen)
    shell.press("X", "y")
    await shell.settle()
    assert not folder.exists()
    await shell.until(lambda: "No managed run yet" in shell.screen())


async def test_q_leaves_the_dashboard_and_its_polling_stops(shell: FakeShell) -> None:
    screen = shell.top
    shell.press("q")
    assert shell.quitted and shell.stack == []
    assert screen.poller.running
    await eventually(lambda: not screen.poller.running, 5)  # it noticed it is not drawn
