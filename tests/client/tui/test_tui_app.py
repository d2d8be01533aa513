"""Widgets rendered to canvases, and the whole application driven by key names (no terminal)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tui_kit import GRADE, RUN_ID, FakeShell, MemoryBackend, ScriptedSource, session, write_run

from srez_client.tui.app import TuiApp
from srez_client.tui.keys import BINDINGS
from srez_client.tui.recent import load_recent, remember
from srez_client.tui.source_results import FinishedRunSource
from srez_client.tui.viewmodels.changes import ChangesModel
from srez_client.tui.viewmodels.dialog_fold import DialogFold
from srez_client.tui.viewmodels.evaluation import build_evaluation
from srez_client.tui.viewmodels.log_buffer import Logs
from srez_client.tui.viewmodels.tabs import TABS
from srez_client.tui.widgets.changes_view import ChangesView
from srez_client.tui.widgets.dialog_view import DialogPane
from srez_client.tui.widgets.evaluation_view import EvaluationView
from srez_client.tui.widgets.logs_view import LogsView
from srez_client.tui.widgets.run_list import RunList
from srez_client.tui.widgets.tab_panes import PANES
from srez_client.tui.widgets.viewer import ACTIONS, RunViewer
from srez_core.aio import spawn
from srez_daemon.protocol.api import GradeFrame, PhaseFrame

SIZE = (140, 40)


def text_of(widget: object, size: tuple[int, ...]) -> str:
    canvas = widget.render(size, focus=True)  # type: ignore[attr-defined]
    return "\n".join(line.decode() for line in canvas.text)


async def until(check: object, limit_s: float = 10.0) -> None:
    async with asyncio.timeout(limit_s):
        while not check():  # type: ignore[operator]  # noqa: ASYNC110 - polling the screen
            await asyncio.sleep(0.01)


# ---------------------------------------------------------------------- widgets


def test_dialog_pane_renders_items_and_footer_and_toggles() -> None:
    fold = DialogFold()
    pane = DialogPane(fold, live=True)
    assert "Waiting for agent…" in text_of(pane, (80, 10))
    fold.add_all(session(n_tools=1)[:-1])
    pane.refresh(len(fold.items) - 1)
    screen = text_of(pane, (100, 30))
    assert "Tool call: get_logs" in screen and "[success]" in screen and "Live · entry #5" in screen
    assert "secret reasoning" not in screen and "Thinking (" in screen
    assert "• check logs" in screen  # Markdown bullet, bold markers gone
    pane.walker.set_focus(2)
    assert pane.walker.toggle_focus()
    assert "secret reasoning" in text_of(pane, (100, 30))


def test_changes_view_gains_truth_under_a_banner_after_the_agent_phase() -> None:
    model = ChangesModel()
    view = ChangesView(model)
    model.set_agent_diff(write_diff())
    view.refresh()
    screen = text_of(view, (100, 20))
    assert "a Agent" in screen and "t Truth" not in screen and "+port = 5432" in screen
    model.set_reference(write_diff(), 0.9)
    model.choose("truth")
    view.refresh()
    screen = text_of(view, (100, 20))
    assert (
        "t Truth" in screen
        and "s Split" in screen
        and "REFERENCE FIX" in screen
        and "90%" in screen
    )


def test_split_view_lines_up_each_file_of_the_agent_and_the_fix() -> None:
    model = ChangesModel()
    view = ChangesView(model)
    model.set_agent_diff(write_diff() + write_diff("extra.conf", "a = 1", "a = 2"))
    model.set_reference(write_diff() + write_diff("db.conf", "max = 1", "max = 9"), 0.5)
    model.choose("split")
    view.refresh()
    lines = text_of(view, (140, 40)).split("\n")
    row = next(line for line in lines if "M x.conf" in line)
    assert row.count("M x.conf") == 2  # the same file, once per side, on one row
    assert any("+port = 5432" in line and line.count("+port = 5432") == 2 for line in lines)
    assert any(
        "M extra.conf" in line and "(the fix leaves extra.conf alone)" in line for line in lines
    )
    assert any("(the agent leaves db.conf alone)" in line and "M db.conf" in line for line in lines)
    assert "REFERENCE FIX" in lines[1]  # the right column sits under the banner
    model.toggle_raw()
    view.refresh()
    raw = text_of(view, (140, 40))
    assert "REFERENCE FIX" in raw and raw.count("+port = 5432") == 2


def write_diff(name: str = "x.conf", old: str = "port = 5433", new: str = "port = 5432") -> str:
    return f"--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-{old}\n+{new}\n"


def test_evaluation_and_logs_views_render() -> None:
    view = EvaluationView()
    view.show(
        build_evaluation(GRADE, {"duration_s": 2.5, "end_reason": "time_limit"}, agent="scripted")
    )
    screen = text_of(view, (100, 30))
    for needle in (
        "Reward 0.500",
        "PASS",
        "FAIL",
        "N/A",
        "restarted db",
        "TIMEOUT",
        "steps 7/20",
        "Scripted oracle",
    ):
        assert needle in screen, needle
    logs = Logs()
    view_logs = LogsView(logs)
    for i in range(50):
        logs.buffer("agent").append(f"line {i}\n")
    view_logs.refresh()
    assert "line 49" in text_of(view_logs, (60, 6))
    view_logs.keypress((60, 6), "up")
    assert not logs.follow
    logs.buffer("agent").append("line 50\n")
    view_logs.refresh()
    assert "line 50" not in text_of(view_logs, (60, 6))
    view_logs.to_bottom()
    assert logs.follow and "line 50" in text_of(view_logs, (60, 6))


# ---------------------------------------------------------------------- the whole app


def make_app(tmp_path: Path, backends: list[object] | None = None) -> TuiApp:
    return TuiApp(
        results_root=tmp_path / "results", state_dir=tmp_path / "state", backends=backends or []
    )  # type: ignore[arg-type]


async def test_live_run_entries_arrive_and_reference_appears_on_phase(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    source = ScriptedSource()
    app.attach(source)
    await until(lambda: "Waiting for agent" in app.screen_text(SIZE))
    entries = session(n_tools=2)
    source.send(entries[:5])
    await until(lambda: "Live · entry #4" in app.screen_text(SIZE))
    source.diff_text = write_diff()
    source.send(entries[5:-1])
    await until(lambda: "Live · entry #7" in app.screen_text(SIZE))
    app.feed_keys(["t"], SIZE)
    assert "Truth" not in app.screen_text(SIZE).split("Changes")[1][:200]
    source.phase = "sealed"
    source.send(PhaseFrame(phase="sealed"))
    await until(lambda: "t Truth" in app.screen_text(SIZE))
    source.grade_value = GRADE
    source.send(entries[-1:])
    source.send(GradeFrame(reward=0.5, resolved=False, passed=False))
    source.finish()
    await until(lambda: "Session complete" in app.screen_text(SIZE))
    app.feed_keys(["3"], SIZE)
    await until(lambda: "Reward 0.500" in app.screen_text(SIZE))
    app.feed_keys(["1", "s"], SIZE)
    assert "REFERENCE FIX" in app.screen_text(SIZE)
    assert app.errors == []


def test_every_viewer_key_has_its_action() -> None:
    viewer_actions = {b.action for b in BINDINGS if b.context == "viewer"}
    # the terminal tab restarts its shell, and the host switches between the attached runs
    elsewhere = {"restart_terminal", "next_run", "prev_run"}
    assert viewer_actions - set(ACTIONS) == elsewhere
    assert set(ACTIONS) <= viewer_actions


def test_every_tab_row_has_its_pane() -> None:
    assert list(PANES) == [tab.name for tab in TABS]


async def test_tab_panes_are_built_when_first_shown_and_catch_up(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    source = ScriptedSource()
    app.attach(source)
    assert app.host is not None
    viewer = app.host.viewers[0]
    assert set(viewer.panes) == {"changes"}
    source.grade_value = GRADE
    source.send(GradeFrame(reward=0.5, resolved=False, passed=False))
    await until(lambda: viewer.feed.models.evaluation.graded)
    assert "evaluation" not in viewer.panes
    app.feed_keys(["3"], SIZE)
    assert "Reward 0.500" in app.screen_text(SIZE)  # built now, from the grade already fetched
    app.feed_keys(["4"], SIZE)
    assert "Terminal is not available for this run" in app.status.text


async def test_keys_hide_areas_resize_and_show_help_and_details(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    source = ScriptedSource()
    app.attach(source)
    source.send(session())
    await until(lambda: "Session started" in app.screen_text(SIZE))
    app.feed_keys(["["], SIZE)
    assert "Dialog" not in app.screen_text(SIZE)
    app.feed_keys(["[", "\\"], SIZE)
    screen = app.screen_text(SIZE)
    assert "Dialog" in screen and "Logs:" not in screen
    app.feed_keys([">", ">", "+"], SIZE)
    assert app.host is not None and app.host.viewers[0].layout.left_percent == 55
    app.feed_keys(["?"], SIZE)
    assert "toggle" in app.screen_text(SIZE) or "hide/show" in app.screen_text(SIZE)
    app.feed_keys(["esc", "m"], SIZE)
    screen = app.screen_text(SIZE)
    assert (
        "Checkout is down." in screen
        and "ServiceDown on payments" in screen
        and "seed: 0" in screen
    )


class SlowFinishedRun(FinishedRunSource):
    """A results folder whose dialog is read only once ``read`` is set."""

    read = asyncio.Event()

    async def events(self) -> AsyncIterator[object]:
        await self.read.wait()
        async for event in super().events():
            yield event


async def test_a_finished_run_says_loading_until_its_dialog_is_read(tmp_path: Path) -> None:
    """Connected, its dialog not read yet, a finished run's pane once said "Session complete ·
    0 items"."""
    folder = write_run(tmp_path / "results")
    SlowFinishedRun.read = asyncio.Event()
    viewer = RunViewer(FakeShell(tmp_path), SlowFinishedRun(folder))  # type: ignore[arg-type]
    feed = spawn(viewer.feed.run(), name="test-feed")
    await until(lambda: "Starting" not in text_of(viewer.dialog, (100, 30)))
    before = text_of(viewer.dialog, (100, 30))
    assert "Loading the dialog… · 0 items" in before and "Session complete" not in before
    SlowFinishedRun.read.set()
    await feed
    after = text_of(viewer.dialog, (100, 30))
    assert re.search(r"Session complete · entry #\d+ · [1-9]\d* items", after), after


async def test_finished_run_opens_from_results_and_offers_detach_only(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "results", logs={"agent": "agent says hi\n"})
    app = make_app(tmp_path)
    app.open_run(RUN_ID[:12])
    await until(lambda: "Session complete" in app.screen_text(SIZE))
    await until(lambda: "agent says hi" in app.screen_text(SIZE))
    assert load_recent(tmp_path / "state") == [RUN_ID]
    app.feed_keys(["q"], SIZE)
    await until(lambda: "Detach from" in app.screen_text(SIZE))
    screen = app.screen_text(SIZE)
    assert "< Detach " in screen and "Stop" not in screen and "Remove" not in screen
    app.feed_keys(["enter"], SIZE)
    await until(lambda: app.host is None)
    assert folder.is_dir()


@pytest.mark.parametrize(
    ("status", "option", "call"),
    [("running", "Detach + Stop", "stop"), ("exited", "Detach + Remove", "remove")],
)
async def test_live_detach_stops_or_removes_through_the_backend(
    tmp_path: Path, status: str, option: str, call: str
) -> None:
    backend = MemoryBackend(tmp_path / "results")
    backend.add(status=status)  # type: ignore[arg-type]
    app = make_app(tmp_path, [backend])
    app.open_run(RUN_ID)
    await until(lambda: "Starting…" in app.screen_text(SIZE))
    app.feed_keys(["q"], SIZE)
    await until(lambda: option in app.screen_text(SIZE))
    app.feed_keys(["down", "enter"], SIZE)
    await until(lambda: backend.calls == [(call, RUN_ID)])
    await until(lambda: app.host is None)


async def test_a_slow_stop_closes_the_viewer_not_the_screen_opened_meanwhile(
    tmp_path: Path,
) -> None:
    """The stop answers after the user pressed ``ctrl r``: the attach list stays on top (the
    viewer closing used to pop whatever screen was on top, the list, and leave the viewer)."""
    backend = MemoryBackend(tmp_path / "results")
    backend.add(status="running")
    backend.stop_gate = asyncio.Event()
    app = make_app(tmp_path, [backend])
    app.open_run(RUN_ID)
    await until(lambda: "Starting…" in app.screen_text(SIZE))
    app.feed_keys(["q"], SIZE)
    await until(lambda: "Detach + Stop" in app.screen_text(SIZE))
    app.feed_keys(["down", "enter"], SIZE)
    await until(lambda: backend.calls == [("stop", RUN_ID)])
    app.show_runs()  # what ctrl r does, while the stop is still out
    backend.stop_gate.set()
    await until(lambda: app.host is None)
    assert [title for _, title in app.stack][-1] == "Runs"
    await until(lambda: "Exited (1)" in app.screen_text(SIZE))


async def test_the_run_list_counts_a_run_stopped_from_the_viewer(tmp_path: Path) -> None:
    """The list under the viewer is current again when the viewer closes: no stale Running."""
    backend = MemoryBackend(tmp_path / "results")
    backend.add(status="running")
    backend.add("20260101T000001Z-00000002", status="running")
    app = make_app(tmp_path, [backend])
    app.show_runs()
    await until(lambda: "Running (2)" in app.screen_text(SIZE))
    app.feed_keys(["enter"], SIZE)
    await until(lambda: "Starting…" in app.screen_text(SIZE))
    app.feed_keys(["q"], SIZE)
    await until(lambda: "Detach + Stop" in app.screen_text(SIZE))
    app.feed_keys(["down", "enter"], SIZE)
    await until(lambda: app.host is None)
    await until(lambda: "Running (1)" in app.screen_text(SIZE))
    assert "Exited (1)" in app.screen_text(SIZE)


async def test_the_run_list_keeps_the_cursor_on_its_run_across_refreshes(tmp_path: Path) -> None:
    backend = MemoryBackend(tmp_path / "results")
    for n in range(3):
        backend.add(f"20260101T00000{n}Z-0000000{n}")
    screen = RunList(FakeShell(tmp_path), [backend])  # type: ignore[arg-type]
    await screen._reload()
    screen.keypress((120, 12), "down")
    before = screen.selected()
    backend.add("20260101T000009Z-00000009")  # a newer run lands at the top
    await screen._reload()
    assert before is not None and screen.selected() == before


async def test_save_never_overwrites_without_asking(tmp_path: Path) -> None:
    write_run(tmp_path / "results")
    app = make_app(tmp_path)
    app.open_run(str(tmp_path / "results" / "sre-001" / "none" / "heuristic" / RUN_ID))
    await until(lambda: "Session complete" in app.screen_text(SIZE))
    out = tmp_path / "out"
    out.mkdir()
    (out / "patch.diff").write_text("keep me")
    app.feed_keys(["p"], SIZE)
    assert "Save patch.diff into folder" in app.screen_text(SIZE)
    app.stack[-1][0].top_w.edit.set_edit_text(str(out))  # type: ignore[attr-defined]
    app.feed_keys(["enter"], SIZE)
    await until(lambda: "< Overwrite" in app.screen_text(SIZE))
    app.feed_keys(["down", "enter"], SIZE)  # Cancel
    await until(lambda: "kept the existing" in app.screen_text(SIZE))
    assert (out / "patch.diff").read_text() == "keep me"
    app.feed_keys(["d"], SIZE)
    app.stack[-1][0].top_w.edit.set_edit_text(str(out))  # type: ignore[attr-defined]
    app.feed_keys(["enter"], SIZE)
    await until(lambda: (out / "dialog.jsonl").exists())
    assert (out / "dialog.jsonl").read_bytes().count(b"\n") == len(session())


async def test_run_list_filters_and_attaches(tmp_path: Path) -> None:
    write_run(tmp_path / "results")
    write_run(
        tmp_path / "results", run_id="20260101T000000Z-ffffffff", task="sre-002", agent="scripted"
    )
    backend = MemoryBackend(tmp_path / "results")
    backend.add("20260101T000001Z-00000001")
    shell = FakeShell(tmp_path)
    screen = RunList(shell, [backend])  # type: ignore[arg-type]
    await screen._reload()
    text = text_of(screen, (120, 12))
    assert "Running (1)" in text and "All (3)" in text and "Finished" in text
    for key in "script":
        screen.keypress((120, 12), key)
    text = text_of(screen, (120, 12))
    assert "sre-002" in text and "sre-001" not in text
    screen.keypress((120, 12), "enter")
    assert shell.opened == [
        str(tmp_path / "results" / "sre-002" / "none" / "scripted" / "20260101T000000Z-ffffffff")
    ]
    remember(shell.state_dir, "20260101T000001Z-00000001")
    await screen._reload()
    screen.keypress((120, 12), "left")
    assert screen.model.tab == "exited"


async def test_finished_source_reads_a_torn_dialog_without_crashing(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "results")
    with (folder / "archive" / "dialog.jsonl").open("ab") as f:
        f.write(b'{"seq": 99, "ty\xff')
    source = FinishedRunSource(folder)
    batches = [e async for e in source.events()]
    entries = [e for b in batches if hasattr(b, "entries") for e in b.entries]  # type: ignore[attr-defined]
    assert entries[-1].type == "error" and len(entries) == len(session()) + 1
    ref, similarity = await source.reference()
    assert similarity == 1.0 and "port = 5432" in ref
