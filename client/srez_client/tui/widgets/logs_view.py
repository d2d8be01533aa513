"""The bottom area: one log at a time, following its end unless scrolled up."""

from __future__ import annotations

from typing import Any

import urwid

from srez_client.tui.viewmodels.log_buffer import Logs
from srez_client.tui.widgets.sizing import Size


class LogsView(urwid.WidgetWrap[urwid.Widget]):
    """Logs; ``G`` (the ``logs_bottom`` action) jumps back to the end and follows again."""

    def __init__(self, logs: Logs) -> None:
        self.logs = logs
        self.title = urwid.Text("", wrap="clip")
        self.walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self.listbox = urwid.ListBox(self.walker)
        self._shown: tuple[str, int] = ("", -1)
        self._complete = 0
        self._dropped = 0
        self._has_partial = False
        super().__init__(urwid.Frame(self.listbox, header=urwid.AttrMap(self.title, "bar_dim")))
        self.refresh()

    def refresh(self) -> None:
        """Show new lines of the current log; keep the position when not following."""
        buf = self.logs.buffer(self.logs.current)
        names = " ".join(f"[{n}]" if n == buf.name else n for n in self.logs.names())
        follow = "following" if self.logs.follow else "scrolled (G: follow)"
        self.title.set_text(f" Logs: {names}  · {follow} · l: next log")
        if self._shown == (buf.name, buf.version):
            return
        if self._shown[0] != buf.name or buf.dropped != self._dropped:
            self.walker[:] = []
            self._complete = 0
            self._dropped = buf.dropped
        if self._has_partial:
            self.walker.pop()
        self.walker.extend(urwid.Text(line, wrap="clip") for line in buf.lines[self._complete :])
        self._complete = len(buf.lines)
        tail = buf.all_lines()[len(buf.lines) :]
        self._has_partial = bool(tail)
        self.walker.extend(urwid.Text(line, wrap="clip") for line in tail)
        self._shown = (buf.name, buf.version)
        if self.logs.follow and len(self.walker):
            self.walker.set_focus(len(self.walker) - 1)

    def to_bottom(self) -> None:
        """Follow the end again."""
        self.logs.follow = True
        if len(self.walker):
            self.walker.set_focus(len(self.walker) - 1)
        self.refresh()

    def keypress(self, size: Size, key: str) -> str | None:
        if key in ("up", "page up", "home"):
            self.logs.follow = False
        result: str | None = super().keypress(size, key)
        if key in ("down", "page down", "end") and self.walker.focus == len(self.walker) - 1:
            self.logs.follow = True
        self.refresh()
        return result
