"""The real terminal's screen: urwid's raw display with the tty's flow control turned off.

With flow control on (``stty ixon``, the default of most terminals), the tty driver consumes
``ctrl s`` and ``ctrl q`` itself (stop and resume output), so the application never sees them
and ``ctrl q`` (quit) does nothing. While the screen runs, ``IXON`` is cleared and both keys
reach the application.

urwid saves the tty's settings at each start, before changing them, and restores them at each
stop, so the user's ``ixon`` comes back on exit and across a suspend (``ctrl z``); the start
after a resume clears it again. Clearing ``IXON`` is preferred to unmapping the two keys
(``tty_signal_keys(start="undefined", ...)``): Linux would then treat the NUL byte, which
``ctrl space`` sends, as the stop key.
"""

from __future__ import annotations

import contextlib
import os
import sys
import termios
from typing import Any, TextIO

from urwid.display.raw import Screen


class FlowControlFreeScreen(Screen):
    """A raw display that lets ``ctrl s`` and ``ctrl q`` through to the application."""

    def __init__(self, input: TextIO = sys.stdin, output: TextIO = sys.stdout) -> None:  # noqa: A002
        super().__init__(input=input, output=output)
        self._tty_input = input

    def _start(self, alternate_buffer: bool = True, *args: Any, **kwargs: Any) -> None:
        super()._start(alternate_buffer, *args, **kwargs)
        disable_flow_control(self._tty_input.fileno())


def disable_flow_control(fd: int) -> None:
    """Clear ``IXON`` on the tty ``fd`` (nothing when it is no tty)."""
    if not os.isatty(fd):
        return
    with contextlib.suppress(termios.error):  # a terminal that hung up has nothing to change
        mode = termios.tcgetattr(fd)
        mode[0] &= ~termios.IXON  # iflag
        termios.tcsetattr(fd, termios.TCSANOW, mode)


__all__ = ["FlowControlFreeScreen", "disable_flow_control"]
