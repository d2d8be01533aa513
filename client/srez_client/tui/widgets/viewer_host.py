"""The attached runs: a sidebar with one tab per run, and the viewer of the selected one.

Detaching asks what to do with the run (:func:`~srez_client.tui.viewmodels.detach.detach_options`):
a live run can be stopped or, once stopped, removed through its backend; a finished run is only
detached. When the last run is detached the host closes.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import urwid

from srez_client.errors import ClientError
from srez_client.sanitize import sanitize_line
from srez_client.tui.keys import Context, context_action
from srez_client.tui.shell import Shell
from srez_client.tui.source import RunSource
from srez_client.tui.source_live import LiveRunSource
from srez_client.tui.viewmodels.detach import CANCEL, REMOVE, STOP, detach_options
from srez_client.tui.widgets.dialogs import Choice
from srez_client.tui.widgets.sizing import Size
from srez_client.tui.widgets.viewer import RunViewer

SIDEBAR_COLS = 26


def run_state(viewer: RunViewer) -> str:
    """``running``, ``finished`` or ``exited``, as the sidebar shows it.

    ``finished`` is about the episode: the run ended it (graded, or failed with its summary),
    whether or not its daemon still serves (a ``keep`` run does, for its terminal and reads).
    ``exited`` is a process gone before the episode ended. The same words as the attach list's
    (:func:`~srez_client.tui.viewmodels.attach_list.handle_state`), so a run reads the same in
    both and its label only moves forward.
    """
    source = viewer.source
    if not isinstance(source, LiveRunSource):
        return "finished"
    m = viewer.feed.models
    if source.handle.finished or m.phase in ("done", "error"):
        return "finished"
    return "exited" if m.ended or source.handle.status != "running" else "running"


class ViewerHost(urwid.WidgetWrap[urwid.Widget]):
    """Sidebar plus the selected run's viewer."""

    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self.viewers: list[RunViewer] = []
        self.current = 0
        self.sidebar: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self._body: urwid.WidgetPlaceholder[urwid.Widget] = urwid.WidgetPlaceholder(
            urwid.SolidFill(" ")
        )
        self._columns = urwid.Columns(
            [(SIDEBAR_COLS, urwid.LineBox(urwid.ListBox(self.sidebar), title="Runs")), self._body],
            focus_column=1,
        )
        super().__init__(self._columns)

    @property
    def help_contexts(self) -> tuple[Context, ...]:
        """The viewer's keys first, the Terminal tab's before them while it is shown."""
        on_terminal = bool(self.viewers) and self.viewers[self.current].layout.tab == "terminal"
        return ("terminal", "viewer") if on_terminal else ("viewer", "terminal")

    def find(self, run_id: str) -> int | None:
        """The index of an attached run."""
        for i, viewer in enumerate(self.viewers):
            if viewer.source.run_id == run_id:
                return i
        return None

    def attach(self, source: RunSource) -> RunViewer:
        """Add a run (or select it if already attached)."""
        index = self.find(source.run_id)
        if index is not None:
            self.select(index)
            return self.viewers[index]
        allowed = os.environ.get("SREZ_TERMINAL", "1") != "0"
        viewer = RunViewer(self.shell, source, on_detach=self.ask_detach, terminal_allowed=allowed)
        self.viewers.append(viewer)
        viewer.start()
        self.select(len(self.viewers) - 1)
        return viewer

    def select(self, index: int) -> None:
        """Show the viewer at ``index``."""
        if not self.viewers:
            return
        self.current = index % len(self.viewers)
        self._body.original_widget = self.viewers[self.current]
        self.refresh_sidebar()

    def refresh_sidebar(self) -> None:
        """Rebuild the run tabs (task id, model, agent, state)."""
        rows: list[urwid.Widget] = []
        for i, viewer in enumerate(self.viewers):
            meta = viewer.feed.models.meta
            task = meta.task_id if meta else viewer.source.run_id[-8:]
            who = f"{meta.model} · {meta.agent}" if meta else ""
            text = f"{sanitize_line(task)}\n {sanitize_line(who)}\n {run_state(viewer)}"
            attr = "tab_on" if i == self.current else None
            rows.append(urwid.AttrMap(urwid.Text(text), attr))
        self.sidebar[:] = rows

    def render(self, size: Size, focus: bool = False) -> urwid.Canvas:
        self.refresh_sidebar()
        return super().render(size, focus)

    def keypress(self, size: Size, key: str) -> str | None:
        action = context_action("viewer", key)
        if action in ("next_run", "prev_run") and self.viewers:
            self.select(self.current + (1 if action == "next_run" else -1))
            return None
        result: str | None = super().keypress(size, key)
        return result

    # ------------------------------------------------------------------ detach

    def ask_detach(self, viewer: RunViewer) -> None:
        """The detach key: refresh the run's state, then ask."""
        self.shell.spawn(self._ask(viewer), "detach-ask")

    async def _ask(self, viewer: RunViewer) -> None:
        source = viewer.source
        running = False
        if isinstance(source, LiveRunSource):
            with contextlib.suppress(ClientError):
                source.handle = await source.backend.get(source.run_id)
            running = source.handle.status == "running"
        options = detach_options(live=isinstance(source, LiveRunSource), running=running)

        def picked(option: str) -> None:
            self.shell.pop()
            if option != CANCEL:
                self.shell.spawn(self._detach(viewer, option), "detach")

        title = f"Detach from {sanitize_line(source.run_id)}?"
        self.shell.push(Choice(title, options, picked), "Detach")

    async def _detach(self, viewer: RunViewer, option: str) -> None:
        source = viewer.source
        if isinstance(source, LiveRunSource) and option in (STOP, REMOVE):
            try:
                if option == STOP:
                    await source.backend.stop(source.handle)
                else:
                    await source.backend.remove(source.handle)
            except ClientError as e:
                self.shell.notify(f"{option} failed: {e}")
                return
        await viewer.close()
        index = self.viewers.index(viewer)
        self.viewers.pop(index)
        self.shell.notify(
            f"detached from {source.run_id}" + (f" ({option})" if option in (STOP, REMOVE) else "")
        )
        if not self.viewers:
            self.shell.close(self)  # not pop(): the user may have opened a screen over us
            return
        self.select(min(index, len(self.viewers) - 1))
        self.shell.redraw()
