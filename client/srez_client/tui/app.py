"""The application shell: the urwid main loop inside ``asyncio.run()``, a stack of screens, a
status bar, and the :class:`~srez_client.tui.shell.Shell` protocol every screen talks to.

``srez tui`` starts it on the dashboard (``srez_client.tui.dashboard.DashboardScreen``, imported
lazily) and attaches every running run of this user behind it; ``ctrl r`` opens the attach list
(every live and finished run, and the launch wizard), ``ctrl v`` the run viewer. ``srez attach
RUN`` starts it on a run.
Widgets marked ``modal`` are shown as overlays over the current screen. Redraws asked for from
tasks are coalesced into one ``draw_screen`` per loop turn. Tests drive the same object without a
terminal: :meth:`TuiApp.feed_keys` and :meth:`TuiApp.screen_text`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

import urwid

from srez_client.backends.base import Backend
from srez_client.errors import ClientError
from srez_client.results.finder import find_results
from srez_client.sanitize import sanitize_line
from srez_client.tui.keys import Context, action_for, help_lines
from srez_client.tui.recent import remember
from srez_client.tui.source import RunSource
from srez_client.tui.source_live import LiveRunSource
from srez_client.tui.source_results import FinishedRunSource
from srez_client.tui.terminal_screen import FlowControlFreeScreen
from srez_client.tui.widgets.dialogs import TextBox
from srez_client.tui.widgets.palette import PALETTE
from srez_client.tui.widgets.viewer_host import ViewerHost
from srez_core.aio import spawn as aio_spawn

logger = logging.getLogger(__name__)


class TuiApp:
    """The shell. Build it, then :meth:`run` (a terminal) or drive it headless in tests."""

    def __init__(
        self, *, results_root: Path, state_dir: Path, backends: Sequence[Backend] = ()
    ) -> None:
        self.results_root = results_root
        self.state_dir = state_dir
        self.backends = list(backends)
        self.stack: list[tuple[urwid.Widget, str]] = []
        self.status = urwid.Text("", wrap="clip")
        self.frame: urwid.Frame[Any, Any, Any] = urwid.Frame(
            urwid.SolidFill(" "), footer=urwid.AttrMap(self.status, "status")
        )
        self.loop: urwid.MainLoop | None = None
        self.host: ViewerHost | None = None
        self.done: asyncio.Future[None] | None = None
        self._redraw_pending = False
        self.errors: list[str] = []

    # ------------------------------------------------------------------ Shell

    def push(self, widget: Any, title: str) -> None:
        if getattr(widget, "modal", False) and self.stack:
            widget = urwid.Overlay(
                widget, self.frame.body, "center", ("relative", 70), "middle", ("relative", 60)
            )
        self.stack.append((widget, title))
        self._show()

    def pop(self) -> None:
        if self.stack:
            self.close(self.stack[-1][0])
        else:
            self.quit()

    def close(self, widget: Any) -> None:
        def shows(entry: urwid.Widget) -> bool:
            return entry is widget or (isinstance(entry, urwid.Overlay) and entry.top_w is widget)

        on_top = bool(self.stack) and shows(self.stack[-1][0])
        self.stack = [entry for entry in self.stack if not shows(entry[0])]
        if widget is self.host:
            self.host = None
        if not self.stack:
            self.quit()
        elif on_top:
            self._show()

    def open_run(self, run_ref: str) -> None:
        self.spawn(self._open(run_ref), f"open-{run_ref[:40]}")

    def notify(self, message: str) -> None:
        self.status.set_text(f" {sanitize_line(message)}")
        self.redraw()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        task = aio_spawn(coro, name=name)
        task.add_done_callback(self._task_done)

    def redraw(self) -> None:
        if self.loop is None or self._redraw_pending or self.done is None:
            return
        self._redraw_pending = True
        asyncio.get_running_loop().call_soon(self._draw)

    def quit(self) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    # ------------------------------------------------------------------ internals

    def _draw(self) -> None:
        self._redraw_pending = False
        if self.loop is not None and self.done is not None and not self.done.done():
            self.loop.draw_screen()

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        error = task.exception()
        text = f"{task.get_name()} failed: {type(error).__name__}: {error}"
        self.errors.append(text)
        self.notify(text)

    def _show(self) -> None:
        if self.stack:
            widget, title = self.stack[-1]
            self.frame.body = widget
            self.status.set_text(
                f" {sanitize_line(title)} · ? help · ctrl r runs · ctrl v viewer · ctrl q quit"
            )
        self.redraw()

    async def resolve(self, run_ref: str) -> RunSource | None:
        """A source for a results folder, a live run (by id or prefix), or a finished run id."""

        def is_folder() -> Path | None:
            path = Path(run_ref).expanduser()
            return (
                path if (path / "summary.json").is_file() or (path / "run.json").is_file() else None
            )

        if (path := await asyncio.to_thread(is_folder)) is not None:
            return FinishedRunSource(path)
        for backend in self.backends:
            with contextlib.suppress(ClientError, OSError):
                handle = await backend.get(run_ref)
                return LiveRunSource(backend, handle)
        found = await asyncio.to_thread(find_results, self.results_root)
        matches = [f for f in found if f.summary.run_id.startswith(run_ref)]
        if len(matches) == 1:
            return FinishedRunSource(matches[0].path)
        return None

    async def _open(self, run_ref: str) -> None:
        source = await self.resolve(run_ref)
        if source is None:
            self.notify(
                f"no run {run_ref!r} (not live on {', '.join(b.name for b in self.backends) or 'any backend'}, not in {self.results_root})"
            )
            return
        await asyncio.to_thread(remember, self.state_dir, source.run_id)
        self.attach(source)

    def attach(self, source: RunSource, *, show: bool = True) -> None:
        """Add ``source`` to the run viewer, and bring the viewer on top unless ``show`` is
        false (runs attached at start stay behind the dashboard until ``ctrl v``)."""
        if self.host is None:
            self.host = ViewerHost(self)
        if show:
            self.show_viewer()
        self.host.attach(source)
        self.redraw()

    def show_viewer(self) -> None:
        """Bring the run viewer on top (no-op before a run was attached)."""
        if self.host is None:
            self.notify("no run attached yet: ctrl r lists the runs")
            return
        if self.stack and self.stack[-1][0] is self.host:
            return
        self.stack = [entry for entry in self.stack if entry[0] is not self.host]
        self.stack.append((self.host, "Run viewer"))
        self._show()

    def show_runs(self) -> None:
        """The attach list (Running, Finished, Exited, All, Recent) with the launch wizard."""
        from srez_client.tui.widgets.launch_wizard import open_wizard
        from srez_client.tui.widgets.run_list import RunList

        screen = RunList(self, self.backends, launch=lambda: open_wizard(self, self.backends))
        screen.reload()
        self.push(screen, "Runs")

    async def attach_running(self) -> None:
        """Attach every running run of this user (the backends' own runs), behind the screen."""
        for backend in self.backends:
            with contextlib.suppress(ClientError, OSError):
                for handle in await backend.list(include_exited=False):
                    if handle.status == "running" and handle.owned:
                        self.attach(LiveRunSource(backend, handle), show=False)

    def help_contexts(self) -> tuple[Context, ...]:
        """The key contexts of the screen on top (its ``help_contexts``; a dialog's, inside its
        overlay), which the help lists first: none for a screen that names none."""
        if not self.stack:
            return ()
        widget = self.stack[-1][0]
        if isinstance(widget, urwid.Overlay):
            widget = widget.top_w
        contexts: tuple[Context, ...] = tuple(getattr(widget, "help_contexts", ()))
        return contexts

    def unhandled(self, key: str | tuple[Any, ...]) -> bool:
        """Keys no screen took: help, back, quit."""
        if not isinstance(key, str):
            return False
        action = action_for("global", key)
        if action == "help":
            first = self.help_contexts()
            self.push(TextBox("Keys", "\n".join(help_lines(first)), self.pop), "Help")
        elif action == "back":
            self.pop()
        elif action == "quit":
            self.quit()
        elif action == "runs":
            self.show_runs()
        elif action == "viewer":
            self.show_viewer()
        else:
            return False
        return True

    # ------------------------------------------------------------------ headless driving

    def feed_keys(self, keys: Sequence[str], size: tuple[int, int] = (120, 40)) -> None:
        """Press keys as the main loop would (tests and benchmarks)."""
        for key in keys:
            rest = self.frame.keypress(size, key)
            if rest is not None:
                self.unhandled(rest)

    def screen_text(self, size: tuple[int, int] = (120, 40)) -> str:
        """The screen as text (tests)."""
        canvas = self.frame.render(size, focus=True)
        return "\n".join(line.decode("utf-8", "replace") for line in canvas.text)

    # ------------------------------------------------------------------ running

    def first_screen(self, run_ref: str | None) -> None:
        """The dashboard (or the attach list), or a run when ``run_ref`` is given."""
        if run_ref is not None:
            self.open_run(run_ref)
            return
        from srez_client.tui.dashboard import DashboardScreen

        self.push(DashboardScreen(self), "Managed runs")
        self.spawn(self.attach_running(), "attach-running")

    async def run(self, run_ref: str | None = None, *, screen: Any = None) -> None:
        """Run on the terminal until quit (``screen``: the real terminal, flow control off)."""
        aloop = asyncio.get_running_loop()
        self.done = aloop.create_future()
        self.loop = urwid.MainLoop(
            self.frame,
            PALETTE,
            screen=FlowControlFreeScreen() if screen is None else screen,
            event_loop=urwid.AsyncioEventLoop(loop=aloop),
            unhandled_input=self.unhandled,
            handle_mouse=False,
        )
        with self.loop.start():
            self.first_screen(run_ref)
            await self.done
        if self.host is not None:
            for viewer in list(self.host.viewers):
                await viewer.close()


def default_backends(environ: dict[str, str] | None = None) -> list[Backend]:
    """The backends the TUI looks for live runs on: ``$SREZ_TUI_BACKENDS`` (comma list) when
    set, else ``local`` and every backend this state launched runs on
    (:func:`~srez_client.backends.registry.live_backend_names`). One that cannot be made here
    (a missing SDK, a bad setting) is left out."""
    from srez_client.backends.config import BackendSettings
    from srez_client.backends.registry import get_backend, live_backend_names
    from srez_client.backends.state import Ledger

    env = dict(os.environ if environ is None else environ)
    settings = BackendSettings.from_env(env)
    out: list[Backend] = []
    for name in live_backend_names(env, Ledger(settings.state_dir).backends()):
        with contextlib.suppress(ClientError, ImportError):
            out.append(get_backend(name, settings))
    return out
