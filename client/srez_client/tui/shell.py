"""The contract between the application shell and the screens it hosts.

The shell (``tui/app.py``) owns the urwid main loop inside ``asyncio.run()``; screens (the run
viewer, the dashboard, the live monitor, the model picker, dialogs) are urwid widgets that reach
the shell only through this protocol, so each can be built and tested alone against a fake shell.

A screen may name the contexts of the keymap (``tui/keys.py``) its keys belong to, as a tuple in
its ``help_contexts`` attribute: the ``?`` help lists those first, then the global keys, then the
other screens'.
"""

from __future__ import annotations

from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Protocol


class Shell(Protocol):
    """What a screen may ask of the application."""

    results_root: Path
    """Root of the results layout (``results/``)."""
    state_dir: Path
    """``$SREZ_STATE``."""

    def push(self, widget: Any, title: str) -> None:
        """Shows ``widget`` on top of the current screen (Esc or :meth:`pop` goes back)."""
        ...

    def pop(self) -> None:
        """Closes the top screen; closing the last one quits the application."""
        ...

    def close(self, widget: Any) -> None:
        """Closes ``widget``'s screen wherever it is in the stack. Asynchronous work (a stop that
        answered after a while) closes its own screen with this, never :meth:`pop`, which would
        close whatever the user opened meanwhile; closing the last screen quits."""
        ...

    def open_run(self, run_ref: str) -> None:
        """Opens the run viewer on a run: a run id (live or finished) or a results folder."""
        ...

    def notify(self, message: str) -> None:
        """A one-line message in the status bar (already sanitised by the caller or not: the
        shell sanitises it again)."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        """Runs a coroutine on the shell's loop; its exceptions are shown, not lost."""
        ...

    def redraw(self) -> None:
        """Redraws the screen now (needed after a change made from an asyncio task)."""
        ...

    def quit(self) -> None:
        """Leaves the application."""
        ...
