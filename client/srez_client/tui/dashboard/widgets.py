"""urwid pieces shared by the dashboard's screens: line lists, a confirmation, polling, and the
screen that polls and hands its keys to its model (:class:`PolledScreen`).

Display attributes are names from the application's palette (``tui/widgets/palette.py``):
``title``, ``focus``, ``error``, ``dim``, ``running``, ``success``, ``yellow`` and ``code``.

:class:`~srez_client.tui.widgets.poller.ShownPoller` (re-exported here) is how the dashboard and
the monitor refresh: a screen polls only while it is being drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import urwid

from srez_client.tui.dashboard.dashboard_model import Action
from srez_client.tui.keys import Context, context_action
from srez_client.tui.shell import Shell
from srez_client.tui.widgets.poller import ShownPoller


def line_walker(lines: Sequence[tuple[bool, str]], style: str | None = None) -> list[urwid.Widget]:
    """Text widgets for ``(focused, text)`` lines; the focused one is highlighted."""
    return [
        urwid.AttrMap(urwid.Text(text, wrap="clip"), "focus" if f else style) for f, text in lines
    ]


def message_markup(text: str, error: bool) -> tuple[str, str] | str:
    """A footer message, red when it reports a problem."""
    return ("error", text) if error else text


class KeyedModel(Protocol):
    """A view model that turns a key into the action the screen carries out."""

    def press(self, key: str) -> Action | None:
        """The action ``key`` asks for, or None (it only changed the model, or nothing)."""
        ...


M = TypeVar("M", bound=KeyedModel)


class PolledScreen(urwid.WidgetWrap[urwid.Frame[Any, Any, Any]], Generic[M]):
    """A screen that polls while it is drawn and hands the keys of its context to its model
    (the dashboard and the monitor). Subclasses set ``model``, ``poller`` and ``context``."""

    context: ClassVar[Context]
    model: M
    poller: ShownPoller

    @property
    def help_contexts(self) -> tuple[Context, ...]:
        """The keys the help lists first (the shell's ``?``)."""
        return (self.context,)

    def render(self, size: tuple[int, ...], focus: bool = False) -> Any:
        """Draws, and keeps the polling going while the screen is shown."""
        self.poller.drawn()
        return super().render(size, focus)

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        """Keys of the screen's context; others go back to the application."""
        if context_action(self.context, key) is None:
            return key
        action = self.model.press(key)
        if action is not None:
            self.act(action)
        self._show()
        return None

    def act(self, action: Action) -> None:
        """Carries out one action of the model."""
        raise NotImplementedError

    def _show(self) -> None:
        """Shows the model."""
        raise NotImplementedError


class ConfirmDialog(urwid.WidgetWrap[urwid.Widget]):
    """A yes/no question: ``y`` runs ``on_yes``, ``n`` or Esc cancels; both close it."""

    modal = True
    """The application shows it as an overlay over the screen it asks about."""
    help_contexts: ClassVar[tuple[Context, ...]] = ("confirm",)

    def __init__(self, shell: Shell, question: str, on_yes: Callable[[], None]) -> None:
        """Ask ``question`` (already sanitised)."""
        self.shell = shell
        self.on_yes = on_yes
        body = urwid.Pile(
            [urwid.Text(("title", question)), urwid.Divider(), urwid.Text("y: yes   n / Esc: no")]
        )
        super().__init__(urwid.Filler(urwid.LineBox(body), valign="top"))

    def selectable(self) -> bool:
        """Takes keys although it holds only text (an overlay sends keys to selectable tops)."""
        return True

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        """y or n; every other key is swallowed so nothing happens behind the question."""
        answer = context_action("confirm", key)
        if answer is None:
            return None
        self.shell.pop()
        if answer == "yes":
            self.on_yes()
        return None


def render_text(widget: urwid.Widget, size: tuple[int, int] = (120, 40)) -> str:
    """The widget drawn at ``size`` as plain text (for tests and debugging)."""
    canvas: Any = widget.render(size, focus=True)
    return "\n".join(line.decode("utf-8", "replace") for line in canvas.text)


__all__ = [
    "ConfirmDialog",
    "KeyedModel",
    "PolledScreen",
    "ShownPoller",
    "line_walker",
    "message_markup",
    "render_text",
]
