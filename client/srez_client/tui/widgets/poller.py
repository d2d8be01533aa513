"""Polling while a screen is shown, with no lifecycle hook in the :class:`~srez_client.tui.shell.Shell`
protocol.

Each tick invalidates the screen and asks the shell to redraw; if no draw followed by the next
tick, the screen is hidden (popped, or under another screen), and the loop ends. The next draw
starts it again, so a screen under the run viewer is refreshed as soon as the viewer closes (the
attach list after a run was stopped from the viewer, a monitor after a task was opened).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from srez_client.tui.shell import Shell


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


__all__ = ["ShownPoller"]
