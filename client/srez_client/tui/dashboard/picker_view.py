"""The model picker's widget: draws :class:`~.picker_model.PickerModel` and forwards keys to it.

The page size follows the widget's height (rows left after the header and the footer), so
Left/Right page through exactly what fits; the model stays the single source of truth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Final

import urwid

from srez_client.tui.dashboard.picker_model import PickerModel
from srez_client.tui.dashboard.widgets import line_walker, message_markup
from srez_client.tui.keys import Context

HELP: Final = (
    "↑↓ move · Space toggle · ←→ page · / filter · f clear filter · a/u select/clear shown · "
    "c clear all · d defaults · m add slugs · : command · Enter accept · Esc cancel · ? all keys"
)


class PickerView(urwid.WidgetWrap[urwid.Frame[Any, Any, Any]]):
    """A checklist of models; calls ``on_done`` with the chosen slugs, or None on cancel."""

    help_contexts: ClassVar[tuple[Context, ...]] = ("picker",)

    def __init__(
        self,
        model: PickerModel,
        on_done: Callable[[list[str] | None], None],
        title: str = "Pick models",
    ) -> None:
        """Show ``model``; ``on_done`` is called once, when the user accepts or cancels."""
        self.model = model
        self.on_done = on_done
        self._walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self._status = urwid.Text("")
        self._message = urwid.Text("")
        self._footer = urwid.Pile(
            [urwid.Divider("─"), self._status, self._message, urwid.Text(("dim", HELP))]
        )
        header = urwid.Pile([urwid.Text(("title", title)), urwid.Divider("─")])
        self._header = header
        frame = urwid.Frame(urwid.ListBox(self._walker), header=header, footer=self._footer)
        super().__init__(frame)
        self._refresh()

    def _refresh(self) -> None:
        model = self.model
        lines = model.lines() or [(False, "(no model matches the filter; f clears it)")]
        self._walker[:] = line_walker(lines)
        focus = next((i for i, (f, _) in enumerate(lines) if f), 0)
        self._walker.set_focus(focus)
        self._status.set_text(model.status())
        prompt = model.prompt_line()
        if prompt is not None:
            self._message.set_text(("code", prompt + "▏"))
        else:
            self._message.set_text(message_markup(model.message, model.error))

    def render(self, size: tuple[int, ...], focus: bool = False) -> Any:
        """Fits the model's page to the height, then draws."""
        if len(size) == 2:
            cols, rows = size
            used = self._header.rows((cols,)) + self._footer.rows((cols,))
            if rows - used >= 1 and rows - used != self.model.page_size:
                self.model.set_page_size(rows - used)
                self._refresh()
        return super().render(size, focus)

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        """Every bound key goes to the model; unbound ones go back to the application."""
        if not self.model.press(key):
            return key
        self._refresh()
        self._invalidate()
        outcome = self.model.outcome
        if outcome is not None:
            self.model.outcome = None
            self.on_done(self.model.chosen() if outcome == "accepted" else None)
        return None


__all__ = ["HELP", "PickerView"]
