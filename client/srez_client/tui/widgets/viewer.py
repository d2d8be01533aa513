"""The run viewer: top bar, dialog (left), tabs (center), logs (bottom), for one run.

It adapts a :class:`~srez_client.tui.viewer_feed.RunFeed` (which fills the models from a live or
finished run source) and the :class:`~srez_client.tui.viewmodels.layout.Layout`. Keys go to the
focused panel first; what it leaves is looked up in the key table (``tui/keys.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import urwid

from srez_client.tui.keys import action_for
from srez_client.tui.shell import Shell
from srez_client.tui.source import RunSource
from srez_client.tui.viewer_feed import RunFeed
from srez_client.tui.viewmodels.changes import Side
from srez_client.tui.viewmodels.layout import CENTER_TITLES, CenterTab, Layout
from srez_client.tui.viewmodels.run_details import alerts_at_t0, details_text, top_line
from srez_client.tui.widgets.changes_view import ChangesView, FilesView
from srez_client.tui.widgets.dialog_view import DialogPane
from srez_client.tui.widgets.dialogs import TextBox
from srez_client.tui.widgets.evaluation_view import EvaluationView
from srez_client.tui.widgets.logs_view import LogsView
from srez_client.tui.widgets.sizing import Size
from srez_client.tui.widgets.viewer_save import save_dialog, save_patch

_SIDES: dict[str, Side] = {"side_agent": "agent", "side_truth": "truth", "side_split": "split"}
_TABS: dict[str, CenterTab] = {f"tab_{t}": t for t in CENTER_TITLES}


class RunViewer(urwid.WidgetWrap[urwid.Widget]):
    """One run on screen. ``on_detach`` is called by the detach key (the host asks what to do)."""

    def __init__(
        self,
        shell: Shell,
        source: RunSource,
        *,
        on_detach: Callable[[RunViewer], None] | None = None,
        terminal_allowed: bool = True,
    ) -> None:
        self.shell = shell
        self.source = source
        self.on_detach = on_detach
        self.feed = RunFeed(source, self._changed, shell.spawn)
        m = self.feed.models
        self.layout = Layout(terminal=False)
        self._terminal_allowed = terminal_allowed
        self.top = urwid.Text("", wrap="clip")
        self.status = urwid.Text("", wrap="clip")
        self.dialog = DialogPane(m.fold, live=source.live)
        self.dialog.walker.follow = source.live
        self.changes = ChangesView(m.changes)
        self.files = FilesView(m.changes)
        self.evaluation = EvaluationView()
        self.logs = LogsView(m.logs)
        self.tabs_bar = urwid.Text("", wrap="clip")
        self._extra: dict[str, urwid.Widget] = {}
        self._root: urwid.WidgetPlaceholder[urwid.Widget] = urwid.WidgetPlaceholder(
            urwid.SolidFill(" ")
        )
        super().__init__(self._root)
        self._changed("meta")
        self.relayout()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start following the run (on the shell's loop)."""
        self.feed.start()
        self.feed.spawn(self._probe_terminal(), "viewer-terminal-probe")

    async def close(self) -> None:
        """Stop following the run and release its connections."""
        self.feed.stop()
        terminal = self._extra.get("terminal")
        term = getattr(terminal, "term", None)
        if term is not None:
            term.terminate()
        await self.source.close()

    async def _probe_terminal(self) -> None:
        for _ in range(100):
            if await self.source.terminal():
                self.layout.terminal = self._terminal_allowed
                self._changed("meta")
                return
            if not self.source.live:
                return
            await asyncio.sleep(0.5)

    # ------------------------------------------------------------------ model changes

    def _changed(self, part: str) -> None:
        m = self.feed.models
        if part == "dialog":
            self.dialog.live = self.source.live and not m.ended
            self.dialog.refresh(len(m.fold.items) - 1 if m.fold.items else None)
        elif part == "changes":
            self.changes.refresh()
            self.files.refresh()
        elif part == "evaluation":
            self.evaluation.show(m.evaluation)
        elif part == "logs":
            self.logs.refresh()
        elif part in ("meta", "status"):
            self._refresh_top()
        if hasattr(self, "_root"):
            self.shell.redraw()

    def _refresh_top(self) -> None:
        m = self.feed.models
        meta = m.meta
        self.top.set_text(
            top_line(
                task_id=meta.task_id if meta else self.source.run_id,
                difficulty=meta.difficulty if meta else "",
                model=meta.model if meta else "",
                agent=meta.agent if meta else "",
                phase=m.phase,
                version=meta.version if meta else "",
            )
            + "  · m: More details · ?: help"
        )
        self.status.set_text(("yellow", m.status) if m.status else "")
        if m.status:
            self.dialog.set_starting(m.status)
        else:
            self.dialog.refresh()
        tabs: list[Any] = []
        for tab in self.layout.tabs():
            on = tab == self.layout.tab
            tabs += [("tab_on" if on else "tab", f" {CENTER_TITLES[tab]} "), " "]
        self.tabs_bar.set_text(tabs)

    # ------------------------------------------------------------------ layout

    def center_widget(self) -> urwid.Widget:
        """The widget of the current center tab."""
        tab = self.layout.tab
        if tab == "changes":
            return self.changes
        if tab == "files":
            return self.files
        if tab == "evaluation":
            return self.evaluation
        if tab not in self._extra:
            self._extra[tab] = self._make_extra(tab)
        return self._extra[tab]

    def _make_extra(self, tab: str) -> urwid.Widget:
        if tab == "terminal":
            from srez_client.tui.widgets.terminal_view import TerminalPanel

            return TerminalPanel(self.shell, self.source)
        from srez_client.tui.widgets.explain_view import ExplainPanel

        return ExplainPanel(self.shell, self.feed)

    def relayout(self) -> None:
        """Rebuild the arrangement from the layout model."""
        lay = self.layout
        cols: list[Any] = []
        if lay.left:
            cols.append(("weight", lay.left_percent, urwid.LineBox(self.dialog, title="Dialog")))
        if lay.center:
            center: urwid.Widget = urwid.Frame(self.center_widget(), header=self.tabs_bar)
            cols.append(("weight", 100 - lay.left_percent, urwid.LineBox(center)))
        rows: list[Any] = [("pack", urwid.AttrMap(self.top, "bar")), ("pack", self.status)]
        rows.append(("weight", 1, urwid.Columns(cols)))
        if lay.bottom:
            rows.append((lay.bottom_rows + 2, urwid.LineBox(self.logs)))
        self._refresh_top()
        self._root.original_widget = urwid.Pile(rows, focus_item=2)

    # ------------------------------------------------------------------ keys

    def keypress(self, size: Size, key: str) -> str | None:
        rest: str | None = super().keypress(size, key)
        if rest is None:
            return None
        action = action_for("viewer", rest)
        if action is not None and self.do(action):
            return None
        return rest

    def do(self, action: str) -> bool:
        """Perform a viewer action; False when it is not one (the shell may handle it)."""
        lay = self.layout
        simple: dict[str, Callable[[], object]] = {
            "toggle_left": lambda: lay.toggle("left"),
            "toggle_center": lambda: lay.toggle("center"),
            "toggle_bottom": lambda: lay.toggle("bottom"),
            "narrow_left": lambda: lay.widen_left(-1),
            "widen_left": lambda: lay.widen_left(1),
            "grow_bottom": lambda: lay.grow_bottom(1),
            "shrink_bottom": lambda: lay.grow_bottom(-1),
        }
        if action in simple:
            simple[action]()
        elif action in _TABS:
            if not lay.choose(_TABS[action]):
                self.shell.notify(f"{CENTER_TITLES[_TABS[action]]} is not available for this run")
                return True
        elif action in _SIDES:
            if not self.feed.models.changes.choose(_SIDES[action]):
                self.shell.notify("the reference is shown once the agent phase is over")
            self.changes.refresh()
            return True
        elif action == "toggle_raw":
            self.feed.models.changes.toggle_raw()
            self.changes.refresh()
            return True
        elif action == "toggle_item":
            return self.dialog.walker.toggle_focus()
        elif action == "next_focus":
            return self._next_focus()
        elif action == "next_log":
            self.feed.models.logs.next_log()
            self.logs.refresh()
            return True
        elif action == "logs_bottom":
            self.logs.to_bottom()
            return True
        elif action == "more_details":
            return self._details()
        elif action == "reconnect":
            self.feed.reconnect()
            self.shell.notify("reconnecting…")
            return True
        elif action == "save_dialog":
            save_dialog(self.shell, self.source)
            return True
        elif action == "save_patch":
            save_patch(self.shell, self.source)
            return True
        elif action == "detach" and self.on_detach is not None:
            self.on_detach(self)
            return True
        else:
            return False
        self.relayout()
        return True

    def _next_focus(self) -> bool:
        pile = self._root.original_widget
        if not isinstance(pile, urwid.Pile):
            return False
        columns = pile.contents[2][0]
        if not isinstance(columns, urwid.Columns):
            return False
        if len(columns.contents) > 1 and columns.focus_position + 1 < len(columns.contents):
            pile.focus_position = 2
            columns.focus_position += 1
        elif len(pile.contents) > 3 and pile.focus_position == 2:
            pile.focus_position = 3
        else:
            pile.focus_position = 2
            columns.focus_position = 0
        return True

    def _details(self) -> bool:
        m = self.feed.models
        meta = m.meta
        text = details_text(
            meta.brief if meta else "", alerts_at_t0(m.prompt), dict(meta.settings) if meta else {}
        )
        self.shell.push(TextBox("More details", text, self.shell.pop), "More details")
        return True
