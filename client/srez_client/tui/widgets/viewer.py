"""The run viewer: top bar, dialog (left), tabs (center), logs (bottom), for one run.

It adapts a :class:`~srez_client.tui.viewer_feed.RunFeed` (which fills the models from a live or
finished run source) and the :class:`~srez_client.tui.viewmodels.layout.Layout`. The center tabs
are the rows of :data:`~srez_client.tui.viewmodels.tabs.TABS`: each tab's pane is built by its
entry of :data:`~srez_client.tui.widgets.tab_panes.PANES` the first time it is shown, and
refreshed after the model changes its row names. Keys go to the focused panel first; what it
leaves is looked up in the key table (``tui/keys.py``), and the action found there in
:data:`ACTIONS`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final, get_args

import urwid

from srez_client.tui.keys import action_for, context_action, keys_for
from srez_client.tui.shell import Shell
from srez_client.tui.source import RunSource
from srez_client.tui.viewer_feed import RunFeed
from srez_client.tui.viewmodels.changes import Side
from srez_client.tui.viewmodels.layout import Layout
from srez_client.tui.viewmodels.run_details import alerts_at_t0, details_text, top_line
from srez_client.tui.viewmodels.tabs import TAB_BY_NAME, TABS
from srez_client.tui.widgets.dialog_view import DialogPane
from srez_client.tui.widgets.dialogs import TextBox
from srez_client.tui.widgets.logs_view import LogsView
from srez_client.tui.widgets.sizing import Size
from srez_client.tui.widgets.tab_panes import PANES, TabPane
from srez_client.tui.widgets.viewer_save import save_dialog, save_patch


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
        self.dialog = DialogPane(m.fold, live=source.live, loaded=source.live)
        self.dialog.walker.follow = source.live
        self.logs = LogsView(m.logs)
        self.tabs_bar = urwid.Text("", wrap="clip")
        self.panes: dict[str, TabPane] = {}
        """The tabs' panes built so far, by tab name."""
        self._announced: set[str] = set()
        """The model changes announced so far (a pane built later catches up on them)."""
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
        await self.feed.close()
        for pane in self.panes.values():
            pane.close()
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
        self._announced.add(part)
        if part == "dialog":
            self.dialog.live = self.source.live and not m.ended
            self.dialog.loaded = self.source.live or m.ended
            self.dialog.refresh(len(m.fold.items) - 1 if m.fold.items else None)
        elif part == "logs":
            self.logs.refresh()
        elif part in ("meta", "status"):
            self._refresh_top()
        self.refresh_panes(part)
        if hasattr(self, "_root"):
            self.shell.redraw()

    def refresh_panes(self, part: str) -> None:
        """Refresh the panes built so far whose tab follows the model change ``part``."""
        for name, pane in self.panes.items():
            if part in TAB_BY_NAME[name].refresh_on:
                pane.refresh()

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
            tabs += [("tab_on" if on else "tab", f" {TAB_BY_NAME[tab].title} "), " "]
        self.tabs_bar.set_text(tabs)

    # ------------------------------------------------------------------ layout

    def center_widget(self) -> urwid.Widget:
        """The widget of the current center tab."""
        return self.pane(self.layout.tab).widget

    def pane(self, name: str) -> TabPane:
        """The pane of tab ``name``, built (and brought up to date) on first use."""
        pane = self.panes.get(name)
        if pane is None:
            tab = TAB_BY_NAME[name]
            pane = self.panes[name] = PANES[name](self)
            if tab.refresh_on & self._announced:
                pane.refresh()
        return pane

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

    def viewer_action(self, key: str) -> str | None:
        """The viewer's action bound to ``key`` (for panes: they do not import the keymap)."""
        return context_action("viewer", key)

    def keys_for(self, context: str, action: str) -> list[str]:
        """The keys of ``action`` in ``context`` (for panes' hints)."""
        return keys_for(context, action)

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
        handler = ACTIONS.get(action)
        return handler is not None and handler(self)

    # ------------------------------------------------------------------ actions

    def choose_tab(self, name: str) -> bool:
        """Show tab ``name``, or say why it is not offered."""
        if not self.layout.choose(name):
            self.shell.notify(f"{TAB_BY_NAME[name].title} is not available for this run")
            return True
        self.relayout()
        if TAB_BY_NAME[name].takes_focus:
            self.focus_center()
            self.pane(name).focused()
        return True

    def focus_center(self) -> None:
        """Move the focus into the center tabs (the last column of the middle row)."""
        pile = self._root.original_widget
        if isinstance(pile, urwid.Pile) and self.layout.center:
            columns = pile.contents[2][0]
            if isinstance(columns, urwid.Columns):
                pile.focus_position = 2
                columns.focus_position = len(columns.contents) - 1

    def choose_side(self, side: Side) -> bool:
        """Changes: show the agent's diff, the reference, or both."""
        if not self.feed.models.changes.choose(side):
            self.shell.notify("the reference is shown once the agent phase is over")
        self.refresh_panes("changes")
        return True

    def toggle_raw(self) -> bool:
        """Changes: parsed cards or the raw diff."""
        self.feed.models.changes.toggle_raw()
        self.refresh_panes("changes")
        return True

    def toggle_item(self) -> bool:
        """Open or close the focused dialog item."""
        return self.dialog.walker.toggle_focus()

    def next_log(self) -> bool:
        """Show the next log at the bottom."""
        self.feed.models.logs.next_log()
        self.logs.refresh()
        return True

    def logs_bottom(self) -> bool:
        """Jump to the end of the log and follow it."""
        self.logs.to_bottom()
        return True

    def reconnect(self) -> bool:
        """Reconnect to the daemon now."""
        self.feed.reconnect()
        self.shell.notify("reconnecting…")
        return True

    def save_dialog(self) -> bool:
        """Save the dialog as dialog.jsonl."""
        save_dialog(self.shell, self.source)
        return True

    def save_patch(self) -> bool:
        """Save the agent's patch as patch.diff."""
        save_patch(self.shell, self.source)
        return True

    def detach(self) -> bool:
        """Ask the host what to do with the run (not an action without a host)."""
        if self.on_detach is None:
            return False
        self.on_detach(self)
        return True

    def next_focus(self) -> bool:
        """Move the focus to the next area."""
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

    def more_details(self) -> bool:
        """The brief, the alerts at T0 and the settings, in a box."""
        m = self.feed.models
        meta = m.meta
        text = details_text(
            meta.brief if meta else "", alerts_at_t0(m.prompt), dict(meta.settings) if meta else {}
        )
        self.shell.push(TextBox("More details", text, self.shell.pop), "More details")
        return True


ViewerAction = Callable[[RunViewer], bool]
"""Performs one action on a viewer; False when it does not apply (the key goes on)."""


def _arranging(change: Callable[[Layout], object]) -> ViewerAction:
    """An action that changes the layout, then shows the new arrangement."""

    def act(viewer: RunViewer) -> bool:
        change(viewer.layout)
        viewer.relayout()
        return True

    return act


def _tab(name: str) -> ViewerAction:
    return lambda viewer: viewer.choose_tab(name)


def _side(side: Side) -> ViewerAction:
    return lambda viewer: viewer.choose_side(side)


ACTIONS: Final[dict[str, ViewerAction]] = {
    "toggle_left": _arranging(lambda lay: lay.toggle("left")),
    "toggle_center": _arranging(lambda lay: lay.toggle("center")),
    "toggle_bottom": _arranging(lambda lay: lay.toggle("bottom")),
    "narrow_left": _arranging(lambda lay: lay.widen_left(-1)),
    "widen_left": _arranging(lambda lay: lay.widen_left(1)),
    "grow_bottom": _arranging(lambda lay: lay.grow_bottom(1)),
    "shrink_bottom": _arranging(lambda lay: lay.grow_bottom(-1)),
    **{tab.action: _tab(tab.name) for tab in TABS},
    **{f"side_{side}": _side(side) for side in get_args(Side)},
    "toggle_raw": RunViewer.toggle_raw,
    "toggle_item": RunViewer.toggle_item,
    "next_focus": RunViewer.next_focus,
    "next_log": RunViewer.next_log,
    "logs_bottom": RunViewer.logs_bottom,
    "more_details": RunViewer.more_details,
    "reconnect": RunViewer.reconnect,
    "save_dialog": RunViewer.save_dialog,
    "save_patch": RunViewer.save_patch,
    "detach": RunViewer.detach,
}
"""The run viewer's actions by name (the names of the ``viewer`` context of ``tui/keys.py``)."""
