"""Small modal dialogs: choices (detach), yes/no (overwrite), a text prompt (save to), text
(help, details). Each calls back with the answer; the shell shows them as overlays."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import urwid

from srez_client.tui.widgets.sizing import Size


class Choice(urwid.WidgetWrap[urwid.Widget]):
    """A titled list of buttons; ``esc`` means the last one (Cancel)."""

    modal = True
    """The shell shows it over the current screen."""

    def __init__(self, title: str, options: Sequence[str], on_pick: Callable[[str], None]) -> None:
        self.options = list(options)
        self.on_pick = on_pick
        buttons = [
            urwid.AttrMap(urwid.Button(o, on_press=self._press, user_data=o), None, "focus")
            for o in options
        ]
        pile = urwid.Pile([urwid.Text(("title", title)), urwid.Divider(), *buttons])
        super().__init__(urwid.AttrMap(urwid.LineBox(urwid.Filler(pile, valign="top")), "dialog"))

    def _press(self, _button: urwid.Button, option: str) -> None:
        self.on_pick(option)

    def keypress(self, size: Size, key: str) -> str | None:
        if key == "esc":
            self.on_pick(self.options[-1])
            return None
        result: str | None = super().keypress(size, key)
        return result


class Prompt(urwid.WidgetWrap[urwid.Widget]):
    """One line of text; ``enter`` answers it, ``esc`` answers None."""

    modal = True
    """The shell shows it over the current screen."""

    def __init__(self, title: str, default: str, on_answer: Callable[[str | None], None]) -> None:
        self.on_answer = on_answer
        self.edit = urwid.Edit("", default)
        pile = urwid.Pile(
            [
                urwid.Text(("title", title)),
                urwid.AttrMap(self.edit, "focus"),
                urwid.Text(("dim", "enter: ok  esc: cancel")),
            ]
        )
        super().__init__(urwid.AttrMap(urwid.LineBox(urwid.Filler(pile, valign="top")), "dialog"))

    def keypress(self, size: Size, key: str) -> str | None:
        if key == "enter":
            self.on_answer(self.edit.edit_text)
            return None
        if key == "esc":
            self.on_answer(None)
            return None
        result: str | None = super().keypress(size, key)
        return result


class TextBox(urwid.WidgetWrap[urwid.Widget]):
    """Scrollable text (help, details); ``esc`` or ``q`` closes it."""

    modal = True
    """The shell shows it over the current screen."""

    def __init__(self, title: str, text: str, on_close: Callable[[], None]) -> None:
        self.on_close = on_close
        rows = [urwid.Text(line) for line in text.split("\n")]
        body = urwid.ListBox(urwid.SimpleFocusListWalker(rows))
        frame = urwid.Frame(
            body, header=urwid.Text(("title", title)), footer=urwid.Text(("dim", "esc: close"))
        )
        super().__init__(urwid.AttrMap(urwid.LineBox(frame), "dialog"))

    def keypress(self, size: Size, key: str) -> str | None:
        if key in ("esc", "q", "?"):
            self.on_close()
            return None
        result: str | None = super().keypress(size, key)
        return result
