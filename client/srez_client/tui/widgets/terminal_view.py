"""The Terminal tab: a shell in the run over ``/api/pty``, drawn by urwid's terminal emulator.

urwid's :class:`urwid.Terminal` emulates a terminal on a local pty. Here its "pty" is one end of
a socket pair: bytes from the daemon's pty WebSocket are written into the other end (the widget
reads and interprets them as it would a local child's output), and the keys the widget writes
are sent to the daemon. Escape sequences from the run are interpreted by the emulator into
cells, never passed to the real terminal. ``T`` restarts the shell once it has ended.

Who gets the keys is said on the tab's first line, since it changes with the focus: showing the
tab puts the focus in the shell (``Tab.takes_focus``), and from then on what is typed goes to
the shell; the release key (``ctrl a``, the ``terminal`` row of ``tui/keys.py``) hands the next
key to the viewer, as urwid's terminal does. Elsewhere in the viewer, keys are its shortcuts.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from typing import Any

import aiohttp
import urwid

from srez_client.daemon_client.api import pty_resize
from srez_client.errors import ClientError
from srez_client.tui.shell import Shell
from srez_client.tui.source import RunSource, SourceUnavailable
from srez_client.tui.widgets.sizing import Size


class RemoteTerminal(urwid.Terminal):
    """A terminal emulator fed by a WebSocket instead of a local child."""

    def __init__(self, shell: Shell, ws: Any, release_key: str) -> None:
        super().__init__(None, escape_sequence=release_key)
        self.shell = shell
        self.ws = ws
        self._ours, self._theirs = socket.socketpair()
        self._ours.setblocking(False)
        self._theirs.setblocking(False)
        self._pumps: set[asyncio.Task[Any]] = set()

    def spawn(self) -> None:
        self.pid = -1  # no local child: terminate() must not signal anything
        self.master = self._theirs.fileno()
        self.shell.spawn(self._pump_in(), "terminal-in")
        self.shell.spawn(self._pump_out(), "terminal-out")

    def set_termsize(self, width: int, height: int) -> None:
        if width > 0 and height > 0 and not self.ws.closed:
            self.shell.spawn(self.ws.send_str(pty_resize(width, height)), "terminal-resize")

    def change_focus(self, has_focus: bool) -> None:
        self.has_focus = has_focus  # the real tty's signal keys stay as the shell set them
        if self.term is not None:
            self.term.has_focus = has_focus
            self.term.set_term_cursor()

    async def _pump_in(self) -> None:
        """Daemon output into the emulator."""
        self._pumps.add(asyncio.current_task())  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        try:
            async for msg in self.ws:
                if msg.type == aiohttp.WSMsgType.BINARY:
                    await loop.sock_sendall(self._ours, msg.data)
                elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.ERROR):
                    break
        finally:
            with contextlib.suppress(OSError):
                self._ours.shutdown(socket.SHUT_WR)  # the emulator reads EOF: "closed"

    async def _pump_out(self) -> None:
        """Keys the emulator wrote, to the daemon."""
        self._pumps.add(asyncio.current_task())  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        while True:
            try:
                data = await loop.sock_recv(self._ours, 4096)
            except OSError:
                return
            if not data or self.ws.closed:
                return
            await self.ws.send_bytes(data)

    def terminate(self) -> None:
        if self.terminated:
            return
        self.terminated = True
        self.remove_watch()
        # The pumps wait on our socket in the event loop's selector. Unregister it before it is
        # closed: a closed descriptor left registered breaks the next socket to reuse its number
        # (the restarted shell would never see a key).
        with contextlib.suppress(RuntimeError, OSError, ValueError):  # RuntimeError: no loop
            loop = asyncio.get_running_loop()
            loop.remove_reader(self._ours.fileno())
            loop.remove_writer(self._ours.fileno())
            current = asyncio.current_task()
            for task in self._pumps:
                if task is not current:
                    task.cancel()
        for sock in (self._ours, self._theirs):
            with contextlib.suppress(OSError):
                sock.close()
        if not self.ws.closed:
            self.shell.spawn(self.ws.close(), "terminal-close")


class TerminalPanel(urwid.WidgetWrap[urwid.Widget]):
    """The tab: opens the shell on first use; ``T`` restarts it after it ended."""

    def __init__(
        self,
        shell: Shell,
        source: RunSource,
        action_of: Callable[[str], str | None],
        release_key: str = "ctrl a",
    ) -> None:
        self.shell = shell
        self.source = source
        self.action_of = action_of
        """The viewer's action for a key (its keymap), for the restart key once the shell ended."""
        self.release_key = release_key
        """The key that hands the next key to the viewer (the ``terminal`` row of the keymap)."""
        self.term: RemoteTerminal | None = None
        self._grab_on_open = False
        self.note = urwid.Text(("dim", "Opening a shell in the run…"))
        self.hint = urwid.Text("")
        self._holder: urwid.WidgetPlaceholder[urwid.Widget] = urwid.WidgetPlaceholder(
            urwid.Filler(self.note, valign="top")
        )
        super().__init__(urwid.Frame(self._holder, header=self.hint))
        self.restart()

    def grab(self) -> None:
        """Send every key to the shell from now on, until the release key (the tab was chosen:
        what is typed next is meant for the shell, arrows and tab included)."""
        if self.term is not None:
            self.term.keygrab = True
        else:
            self._grab_on_open = True

    def hint_text(self, focused: bool) -> tuple[str, str]:
        """The first line: where the keys go now, and how to change it."""
        if self.term is None:
            return ("dim", "")
        key = self.release_key
        if focused:
            return (
                "yellow",
                f"Keys go to the shell · {key}, then a key: that key is the viewer's "
                f"(1 Changes, tab leave, ? help, ctrl q quit) · {key} twice: {key} to the shell",
            )
        return (
            "dim",
            "Keys are the viewer's shortcuts · tab (or 4) moves the focus into the shell",
        )

    def render(self, size: Size, focus: bool = False) -> urwid.Canvas:
        hint = self.hint_text(focus)
        if self.hint.get_text()[0] != hint[1]:
            self.hint.set_text(hint)
        canvas: urwid.Canvas = super().render(size, focus)
        return canvas

    def restart(self) -> None:
        """Close the current shell (if any) and open a new one."""
        if self.term is not None:
            self.term.terminate()
            self.term = None
        self.note.set_text(("dim", "Opening a shell in the run…"))
        self._holder.original_widget = urwid.Filler(self.note, valign="top")
        self.shell.spawn(self._open(), "terminal-open")

    def close(self) -> None:
        """End the shell (the viewer is closing)."""
        if self.term is not None:
            self.term.terminate()

    async def _open(self) -> None:
        try:
            ws = await self.source.pty(80, 24)
        except (ClientError, SourceUnavailable, OSError) as e:
            self.note.set_text(("error", f"No terminal: {e}"))
            self.shell.redraw()
            return
        self.term = RemoteTerminal(self.shell, ws, self.release_key)
        self.term.keygrab, self._grab_on_open = self._grab_on_open, False
        urwid.connect_signal(self.term, "closed", self._closed)
        self._holder.original_widget = self.term
        self.shell.redraw()

    def _closed(self, *_args: object) -> None:
        self.note.set_text(("dim", "The shell ended. Press T to start a new one."))
        self._holder.original_widget = urwid.Filler(self.note, valign="top")
        self.term = None
        self.shell.redraw()

    def keypress(self, size: Size, key: str) -> str | None:
        if self.term is None and self.action_of(key) == "restart_terminal":
            self.restart()
            return None
        result: str | None = super().keypress(size, key)
        return result
