"""The launch wizard (bad input launches nothing; good input launches and attaches every run),
the Terminal tab on a real local run's pty (type, read, exit, restart with ``T``), and the
viewer's refusal of a daemon that cannot prove it is the run's (docs/security.md A2)."""

from __future__ import annotations

import asyncio
import contextlib
from functools import partial
from pathlib import Path

import pytest
from aiohttp import web
from tui_kit import FakeShell, MemoryBackend

from srez_client.backends.base import LaunchSpec, RunHandle
from srez_client.backends.local.backend import LocalBackend
from srez_client.tui.app import TuiApp
from srez_client.tui.keys import context_action
from srez_client.tui.source_live import LiveRunSource
from srez_client.tui.widgets.launch_wizard import LaunchWizard
from srez_client.tui.widgets.terminal_view import TerminalPanel

SIZE = (100, 30)


def screen(widget: object, size: tuple[int, int] = SIZE) -> str:
    canvas = widget.render(size, focus=True)  # type: ignore[attr-defined]
    return "\n".join(line.decode("utf-8", "replace") for line in canvas.text)


async def until(check: object, limit_s: float = 10.0) -> None:
    async with asyncio.timeout(limit_s):
        while not check():  # type: ignore[operator]  # noqa: ASYNC110 - polling a screen
            await asyncio.sleep(0.02)


class RecordingBackend(MemoryBackend):
    """The in-memory backend, keeping every spec it was asked to launch."""

    def __init__(self, results: Path) -> None:
        super().__init__(results)
        self.specs: list[LaunchSpec] = []

    async def launch(self, spec: LaunchSpec) -> RunHandle:
        self.specs.append(spec)
        return await super().launch(spec)


# ---------------------------------------------------------------------- launch wizard


@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        ("tasks", "sre-001,sre-999", "unknown task 'sre-999'"),
        ("limit", "soon", "time limit must be a number of seconds above 0, got 'soon'"),
        ("limit", "-5", "time limit must be a number of seconds above 0, got '-5'"),
        ("seed", "x1", "seed must be a whole number, got 'x1'"),
        ("model", "openai/gpt-4o-mini", "model 'openai/gpt-4o-mini' is only for the llm and"),
    ],
)
async def test_wizard_bad_input_says_what_is_wrong_and_launches_nothing(
    tmp_path: Path, field: str, text: str, message: str
) -> None:
    shell = FakeShell(tmp_path)
    backend = RecordingBackend(tmp_path / "results")
    wizard = LaunchWizard(shell, [backend])  # type: ignore[arg-type]
    getattr(wizard, field).set_edit_text(text)
    wizard.launch()
    await shell.settle()
    assert message in screen(wizard)
    assert backend.specs == [] and shell.opened == []


async def test_wizard_launches_every_task_with_its_settings_and_attaches_each(
    tmp_path: Path,
) -> None:
    shell = FakeShell(tmp_path)
    backend = RecordingBackend(tmp_path / "results")
    wizard = LaunchWizard(shell, [backend])  # type: ignore[arg-type]
    wizard.tasks.set_edit_text("sre-003, sre-007")
    next(b for b in wizard.agents if b.label == "scripted").set_state(True)
    wizard.limit.set_edit_text("90")
    wizard.seed.set_edit_text("4")
    wizard.keep.set_state(True)
    wizard.launch()
    await shell.settle()
    assert [
        (s.task_id, s.agent_spec, s.run_seed, s.time_limit_s, s.keep) for s in backend.specs
    ] == [
        ("sre-003", "scripted", 4, 90.0, True),
        ("sre-007", "scripted", 4, 90.0, True),
    ]
    assert all(s.results_root == shell.results_root for s in backend.specs)
    assert shell.opened == sorted(backend.runs)  # each launched run is attached at once
    assert shell.notes[-1] == "launched 2 of 2 runs on memory"


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("none", "agent llm needs a model: a litellm slug such as openai/gpt-4o-mini"),
        ("gpt4", "model 'gpt4' is not a slug (provider/model, e.g. openai/gpt-4o-mini)"),
    ],
)
async def test_wizard_llm_agent_needs_a_model_slug(
    tmp_path: Path, model: str, message: str
) -> None:
    shell = FakeShell(tmp_path)
    backend = RecordingBackend(tmp_path / "results")
    wizard = LaunchWizard(shell, [backend])  # type: ignore[arg-type]
    next(b for b in wizard.agents if b.label == "llm").set_state(True)
    wizard.keep.set_state(True)  # the in-memory run never exits: no 30 s wait for it to
    wizard.model.set_edit_text(model)
    wizard.launch()
    await shell.settle()
    assert message in screen(wizard) and backend.specs == []
    wizard.model.set_edit_text("openai/gpt-4o-mini")
    wizard.launch()
    await shell.settle()
    assert [(s.agent_spec, s.model) for s in backend.specs] == [("llm", "openai/gpt-4o-mini")]
    assert message not in screen(wizard)  # the old complaint is gone once the form is right


# ---------------------------------------------------------------------- terminal tab


@pytest.fixture
async def live_run(tmp_path: Path) -> object:
    """A finished local run whose daemon keeps serving (``keep``), and its source."""
    backend = LocalBackend(tmp_path / "state")
    spec = LaunchSpec(
        task_id="sre-001", agent_spec="scripted", keep=True, results_root=tmp_path / "results"
    )
    handle = await backend.launch(spec)
    source = LiveRunSource(backend, handle)
    try:
        async with asyncio.timeout(20):
            await source.connect()
        yield source
    finally:
        await source.close()
        await backend.remove(handle)


async def test_terminal_tab_runs_a_shell_in_the_run_and_restarts_it(
    tmp_path: Path, live_run: LiveRunSource
) -> None:
    """Keys typed in the tab reach the run's shell and its output is drawn; ``exit`` ends the
    shell and says so; ``T`` opens a new one (the pty is opened with the admin claim)."""
    shell = FakeShell(tmp_path)
    viewer_keys = partial(context_action, "viewer")
    panel = TerminalPanel(shell, live_run, viewer_keys)  # type: ignore[arg-type]
    await until(lambda: panel.term is not None)

    def type_line(text: str) -> None:
        for key in text:
            panel.keypress(SIZE, key)
        panel.keypress(SIZE, "enter")

    screen(panel)  # the first render sizes the emulator
    type_line("echo srez-$((6*7))")
    await until(lambda: "srez-42" in screen(panel))
    type_line("exit")
    await until(lambda: "The shell ended. Press T" in screen(panel))
    assert panel.term is None
    panel.keypress(SIZE, "T")
    await until(lambda: panel.term is not None)
    screen(panel)
    type_line("echo again-$((2+3))")
    await until(lambda: "again-5" in screen(panel))
    type_line("exit")
    await until(lambda: "The shell ended" in screen(panel))
    await shell.settle()
    assert all(t.done() for t in shell.tasks)  # no pump of either shell left behind


async def test_terminal_tab_takes_the_focus_and_says_who_gets_the_keys(
    tmp_path: Path, live_run: LiveRunSource
) -> None:
    """``4`` puts the focus in the shell, so typing goes there and fires no viewer shortcut
    (``l`` next log, ``s`` split...); the tab's first line says so and names the release key,
    which hands the next key back to the viewer; ``?`` lists that key too."""
    WIDE = (180, 40)
    app = TuiApp(results_root=tmp_path / "results", state_dir=tmp_path / "state")
    app.attach(live_run)
    host = app.host
    assert host is not None
    viewer = host.viewers[0]
    # The feed's own connection first (it replaces the fixture's client), then the terminal.
    await until(lambda: viewer.feed.models.meta is not None and viewer.layout.terminal)
    app.feed_keys(["4"], WIDE)
    await until(lambda: "Keys go to the shell · ctrl a, then a key" in app.screen_text(WIDE))
    assert viewer.layout.tab == "terminal"
    logs_before = viewer.feed.models.logs.current
    app.feed_keys([*"echo srez-$((6*7))", "enter"], WIDE)
    await until(lambda: "srez-42" in app.screen_text(WIDE))
    assert viewer.feed.models.logs.current == logs_before  # "l" reached the shell, not the logs
    app.feed_keys(["ctrl a", "1"], WIDE)  # released: "1" is the viewer's (Changes)
    assert viewer.layout.tab == "changes"
    app.feed_keys(["4", "ctrl a", "tab"], WIDE)  # in the shell again; released: tab leaves
    assert "Keys are the viewer's shortcuts" in app.screen_text(WIDE)
    app.feed_keys(["ctrl a", "?"], WIDE)
    help_text = app.screen_text(WIDE)
    assert "Terminal tab" in help_text and "ctrl a" in help_text
    app.feed_keys(["esc"], WIDE)
    app.feed_keys(["4", *"exit", "enter"], WIDE)
    await until(lambda: "The shell ended" in app.screen_text(WIDE))
    for viewer in host.viewers:
        await viewer.close()


# ---------------------------------------------------------------------- impostor


class ImpostorBackend(MemoryBackend):
    """A running run whose port is held by someone who answers every request."""

    def __init__(self, results: Path, url: str) -> None:
        super().__init__(results)
        self.url = url

    async def endpoint(self, run: RunHandle) -> str:
        return self.url

    async def token(self, run: RunHandle) -> str:
        return "our-token"


async def test_viewer_never_adopts_a_daemon_that_answers_without_the_token(
    tmp_path: Path, aiohttp_server: object
) -> None:
    seen: list[str] = []

    async def anything(request: web.Request) -> web.Response:
        seen.append(request.path)
        if request.path == "/api/health":  # a health answer as good as the real daemon's
            health = {"phase": "done", "protocol_version": 1, "version": "0.1.0"}
            return web.json_response({**health, "uptime_s": 1.0, "terminal": True})
        return web.json_response({"forged": True})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", anything)
    server = await aiohttp_server(app)  # type: ignore[operator]
    backend = ImpostorBackend(tmp_path / "results", str(server.make_url("")).rstrip("/"))
    source = LiveRunSource(backend, backend.add())
    said: list[str] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(1.5):
            await source.connect(status=said.append)
    assert source.client is None
    assert any(s.startswith("Not trusted:") and "without a token" in s for s in said), said
    assert seen and set(seen) == {"/api/run"}  # nothing but the identity check was asked


async def test_viewer_waits_on_a_port_that_accepts_and_never_answers(
    tmp_path: Path, aiohttp_server: object
) -> None:
    """The identity check is bounded: the viewer goes back to waiting (and retrying) instead of
    hanging for the client's 30 s timeout."""

    async def silent(_request: web.Request) -> web.Response:
        await asyncio.sleep(3600)
        raise AssertionError

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", silent)
    server = await aiohttp_server(app)  # type: ignore[operator]
    backend = ImpostorBackend(tmp_path / "results", str(server.make_url("")).rstrip("/"))
    source = LiveRunSource(backend, backend.add())
    source.identity_limit_s = 0.2
    said: list[str] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(2):
            await source.connect(status=said.append)
    assert source.client is None
    waits = [s for s in said if s.startswith("Starting… waiting for the daemon (TimeoutError)")]
    assert len(waits) >= 2, said  # it went back to waiting, and tried again
