"""urwid pieces shared by the dashboard's screens: line lists, a confirmation, polling.

Display attributes are names from the application's palette (``tui/widgets/palette.py``):
``title``, ``focus``, ``error``, ``dim``, ``running``, ``success``, ``yellow`` and ``code``.

:class:`ShownPoller` is how the dashboard and the monitor refresh without a lifecycle hook in the
:class:`~srez_client.tui.shell.Shell` protocol: a screen polls only while it is being drawn. Each
tick invalidates the screen and asks the shell to redraw; if no draw followed by the next tick,
the screen is hidden (popped, or under another screen), and the loop ends. The next draw starts
it again, so a monitor under the run viewer resumes when the viewer closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import urwid

from srez_client.tui.shell import Shell


def line_walker(lines: Sequence[tuple[bool, str]], style: str | None = None) -> list[urwid.Widget]:
    """Text widgets for ``(focused, text)`` lines; the focused one is highlighted."""
    return [
        urwid.AttrMap(urwid.Text(text, wrap="clip"), "focus" if f else style) for f, text in lines
    ]


def message_markup(text: str, error: bool) -> tuple[str, str] | str:
    """A footer message, red when it reports a problem."""
    return ("error", text) if error else text


class ShownPoller:
    """Calls ``tick`` every ``interval`` seconds while the owning screen keeps being drawn."""

    def __init__(
        self, shell: Shell, name: str, tick: Callable[[], Awaitable[None]], interval: float
    ) -> None:
        """Poll with ``tick`` (which must invalidate the screen) on the shell's loop."""
        self.shell = shell
        self.name = name
        self.tick = tick
        self.interval = interval
        self.running = False
        self.stopped = False
        self._drawn = False

    def drawn(self) -> None:
        """Called from the screen's ``render``: starts the loop when it is not running."""
        self._drawn = True
        if not self.running and not self.stopped:
            self.running = True
            self.shell.spawn(self._loop(), self.name)

    def stop(self) -> None:
        """Ends the loop for good (the screen was closed)."""
        self.stopped = True

    async def _loop(self) -> None:
        try:
            while not self.stopped:
                self._drawn = False
                await self.tick()
                self.shell.redraw()
                await asyncio.sleep(self.interval)
                if not self._drawn:
                    break
        finally:
            self.running = False


class ConfirmDialog(urwid.WidgetWrap[urwid.Widget]):
    """A yes/no question: ``y`` runs ``on_yes``, ``n`` or Esc cancels; both close it."""

    modal = True
    """The application shows it as an overlay over the screen it asks about."""

    KEYS: Final[dict[str, str]] = {"y": "yes", "Y": "yes", "n": "no", "N": "no", "esc": "no"}

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
        answer = self.KEYS.get(key)
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
    "ShownPoller",
    "line_walker",
    "message_markup",
    "render_text",
]
