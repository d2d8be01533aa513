"""The dialog pane: a ListBox over the fold, built lazily.

:class:`FoldWalker` adapts :class:`~srez_client.tui.viewmodels.dialog_fold.DialogFold` to urwid
without copying it: a widget is made only for items the ListBox asks for (those on screen), and
cached until the item's ``version`` changes. 10,000 entries cost nothing until scrolled to. The
pane follows the end while the focus is on the last item, like ``tail -f``.
"""

from __future__ import annotations

from typing import Any

import urwid

from srez_client.tui.viewmodels import markdown
from srez_client.tui.viewmodels.dialog_fold import DialogFold, FoldItem
from srez_client.tui.widgets.sizing import Size

_STATUS_ATTR = {
    "running": "running",
    "success": "success",
    "error": "error",
    "completed": "success",
    "failed": "error",
    "timed out": "error",
}
_ICON = {
    "session_started": "▶",
    "task_prompt": "✎",
    "assistant": "◆",
    "thinking": "…",
    "tool": "⚙",
    "provider_error": "!",
    "session_end": "■",
    "error": "✗",
}


class ItemText(urwid.Text):
    """A selectable text: the ListBox can focus it; keys pass through to the pane."""

    _selectable = True

    def keypress(self, size: Size, key: str) -> str | None:
        return key


def item_markup(item: FoldItem) -> list[Any]:
    """The urwid markup of one item: a title line, then the (shortened) body."""
    status = f" [{item.status}]" if item.status else ""
    meta = f"  ({item.meta})" if item.meta else ""
    more = ""
    if item.can_expand:
        more = "  [enter: less]" if item.expanded else "  [enter: more]"
    head: list[Any] = [
        ("title", f"#{item.seq} {_ICON.get(item.kind, '·')} {item.title}"),
        (_STATUS_ATTR.get(item.status, "dim"), status),
        ("dim", meta + more),
    ]
    body = item.shown_body()
    if not body:
        return head
    if item.kind == "assistant":
        lines: list[Any] = []
        for line in markdown.render(body):
            lines.append("\n  ")
            lines.extend(line)
        return head + lines
    attr = "error" if item.kind in ("error", "provider_error") else "text"
    return [*head, (attr, "\n" + "\n".join(f"  {line}" for line in body.split("\n")))]


class FoldWalker(urwid.ListWalker[int, urwid.Widget]):
    """The fold as a list walker (positions are item indexes)."""

    def __init__(self, fold: DialogFold) -> None:
        self.fold = fold
        self.focus = 0
        self.follow = True
        self._cache: dict[int, tuple[int, urwid.Widget]] = {}

    def _widget(self, index: int) -> urwid.Widget:
        item = self.fold.items[index]
        cached = self._cache.get(index)
        if cached is not None and cached[0] == item.version:
            return cached[1]
        widget = urwid.AttrMap(ItemText(item_markup(item)), None, focus_map="focus")
        self._cache[index] = (item.version, widget)
        return widget

    def get_focus(self) -> tuple[urwid.Widget, int] | tuple[None, None]:
        if not self.fold.items:
            return None, None
        self.focus = min(self.focus, len(self.fold.items) - 1)
        return self._widget(self.focus), self.focus

    def set_focus(self, position: int) -> None:
        self.focus = position
        self.follow = position >= len(self.fold.items) - 1
        self._modified()

    def get_next(self, position: int) -> tuple[urwid.Widget, int] | tuple[None, None]:
        if position + 1 >= len(self.fold.items):
            return None, None
        return self._widget(position + 1), position + 1

    def get_prev(self, position: int) -> tuple[urwid.Widget, int] | tuple[None, None]:
        if position <= 0:
            return None, None
        return self._widget(position - 1), position - 1

    def positions(self, reverse: bool = False) -> range:
        n = len(self.fold.items)
        return range(n - 1, -1, -1) if reverse else range(n)

    def changed(self, index: int | None) -> None:
        """An item was added or updated: follow the end if following, and redraw."""
        if index is not None and self.fold.items and self.follow:
            self.focus = len(self.fold.items) - 1
        self._modified()

    def toggle_focus(self) -> bool:
        """Open or close the focused item."""
        if not self.fold.items:
            return False
        changed = self.fold.items[self.focus].toggle()
        if changed:
            self._modified()
        return changed


class DialogPane(urwid.WidgetWrap[urwid.Widget]):
    """The left area: the dialog list and its footer (Loading / Waiting / Live / Session complete)."""

    def __init__(self, fold: DialogFold, *, live: bool, loaded: bool = True) -> None:
        self.fold = fold
        self.live = live
        self.loaded = loaded
        """The dialog was read to its end (a finished run's is read after the pane is drawn)."""
        self.walker = FoldWalker(fold)
        self.listbox = urwid.ListBox(self.walker)  # type: ignore[arg-type]
        self.footer = urwid.Text("", wrap="clip")
        self.placeholder = urwid.Text("Starting…")
        self._body: urwid.Widget = urwid.Frame(
            self.listbox, footer=urwid.AttrMap(self.footer, "bar_dim")
        )
        super().__init__(self._body)
        self.refresh()

    def refresh(self, index: int | None = None) -> None:
        """After fold changes: follow the end, update the footer."""
        self.walker.changed(index)
        _state, text = self.fold.footer(live=self.live, loaded=self.loaded)
        self.footer.set_text(f" {text} · {len(self.fold.items)} items")

    def set_starting(self, text: str) -> None:
        """The footer while the daemon is not reachable yet."""
        self.footer.set_text(f" {text}")
