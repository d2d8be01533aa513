"""The live monitor of one target (urwid): figures, tasks, and the two logs following their end.

It polls through :class:`~.monitor_io.MonitorPoller` in a worker thread every
:data:`POLL_S` seconds while it is shown, so the loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any, ClassVar, Final

import urwid

from srez_client.errors import ClientError
from srez_client.sanitize import sanitize_line
from srez_client.tui.dashboard.dashboard_model import Action
from srez_client.tui.dashboard.monitor_io import MonitorPoller
from srez_client.tui.dashboard.monitor_model import HELP, MonitorModel
from srez_client.tui.dashboard.source import ManagedSource
from srez_client.tui.dashboard.widgets import (
    PolledScreen,
    ShownPoller,
    line_walker,
    message_markup,
)
from srez_client.tui.keys import Context
from srez_client.tui.shell import Shell

POLL_S: Final = 0.7
"""Seconds between two polls of the files."""


def _log_box(title: str) -> tuple[urwid.SimpleFocusListWalker[Any], urwid.Widget]:
    walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
    box = urwid.LineBox(urwid.ListBox(walker), title=title, title_align="left")
    return walker, box


class MonitorScreen(PolledScreen[MonitorModel]):
    """Follows one target of one managed run; ``q`` goes back to the run list."""

    context: ClassVar[Context] = "monitor"

    def __init__(
        self, shell: Shell, source: ManagedSource, run: str, target: str, folder: Path
    ) -> None:
        """Monitor ``target`` of ``run`` (whose folder is ``folder``)."""
        self.shell = shell
        self.source = source
        self.model = MonitorModel(run, target)
        self.reader = MonitorPoller(source, run, target, folder)
        self.poller = ShownPoller(shell, f"monitor {run}/{target}", self.refresh, POLL_S)
        self._header = urwid.Text("")
        self._tasks: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self._console, console_box = _log_box("console.log")
        self._runner, runner_box = _log_box("runner.log")
        self._message = urwid.Text("")
        body = urwid.Pile(
            [
                ("weight", 2, urwid.LineBox(urwid.ListBox(self._tasks), "tasks", "left")),
                ("weight", 2, console_box),
                ("weight", 1, runner_box),
            ]
        )
        footer = urwid.Pile([self._message, urwid.Text(("dim", HELP))])
        super().__init__(urwid.Frame(body, header=self._header, footer=footer))
        self._show()

    async def refresh(self) -> None:
        """Reads the files in a worker thread and shows the result."""
        for notice in self.model.update(await asyncio.to_thread(self.reader.poll)):
            self.shell.notify(notice)
        self._show()

    def _show(self) -> None:
        model = self.model
        self._header.set_text(("title", "\n".join(model.header())))
        lines = model.task_lines() or [(False, "(no task started yet)")]
        self._tasks[:] = line_walker(lines)
        self._tasks.set_focus(next((i for i, (f, _) in enumerate(lines) if f), 0))
        for walker, log in ((self._console, model.console()), (self._runner, model.runner_log())):
            walker[:] = [urwid.Text(line, wrap="clip") for line in log or ["(empty)"]]
            walker.set_focus(len(walker) - 1)
        self._message.set_text(message_markup(model.message, model.error))
        self._invalidate()

    def act(self, action: Action) -> None:
        """Carries out one action of the model."""
        run = self.model.run
        if action.name == "back":
            self.poller.stop()
            self.shell.pop()
        elif action.name == "open_task" and action.ref is not None:
            self.shell.open_run(action.ref)
        elif action.name == "pause":
            self._spawn(
                "pause set: the runner stops after the current task", self.source.pause, run
            )
        elif action.name == "stop":
            self.shell.spawn(self._stop(run), f"stop {run}")
        elif action.name == "clear_pause":
            self._spawn("pause cleared", self.source.clear_pause, run)

    def _spawn(self, done: str, fn: Any, *args: str) -> None:
        self.shell.spawn(self._call(done, functools.partial(fn, *args)), f"monitor {done}")

    async def _stop(self, run: str) -> None:
        await self._call("", functools.partial(self.source.pause, run))
        await self._call(
            "stopped: the in-flight run was ended", functools.partial(self.source.stop, run)
        )

    async def _call(self, done: str, fn: functools.partial[Any]) -> None:
        try:
            await asyncio.to_thread(fn)
        except (ClientError, ValueError, LookupError, OSError) as e:
            self.model.message, self.model.error = sanitize_line(str(e)), True
        else:
            if done:
                self.model.message, self.model.error = done, False
        await self.refresh()
        self.shell.redraw()


__all__ = ["POLL_S", "MonitorScreen"]
