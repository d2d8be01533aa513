"""Wakes a follower when one file may have changed (docs/design.md §6).

The source is the kernel's inotify on the file's *parent folder* (a watch on the file itself goes
silent once the file is replaced), filtered by name, with no polling at all; elsewhere, or when
asked, ``watchfiles.awatch`` on the parent folder. watchfiles' backend wakes every ``step`` ms to
look for events (measured: 2.7 % of a core at ``step=1``, 0.4 % at 10), so it is the fallback, not
the default. Neither is sure to see everything, so a follower still checks the file now and then.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from srez_core.aio import cancel_and_wait, spawn
from srez_daemon.inotify import Inotify

logger = logging.getLogger(__name__)

Watcher = Literal["auto", "inotify", "watchfiles"]
"""Change source: ``auto`` is inotify on Linux and watchfiles elsewhere."""


class FileWatch:
    """Calls ``wake()`` when the file at ``path`` may have changed.

    Nothing is watched until :meth:`ensure`; call it again whenever the folder may have appeared
    or the source died (it returns at once while the source is alive).
    """

    def __init__(
        self,
        path: Path,
        wake: Callable[[], None],
        *,
        watcher: Watcher = "auto",
        step_ms: int = 1,
    ) -> None:
        """Prepare a watch; nothing is watched before :meth:`ensure`.

        Args:
            path: The file; it and its folder may not exist yet.
            wake: Called on the event loop for every change reported.
            watcher: ``auto`` (inotify on Linux, else watchfiles), ``inotify`` or ``watchfiles``.
            step_ms: watchfiles' polling step (only when the watcher is watchfiles).
        """
        self._path = path
        self._wake = wake
        self._watcher: Watcher = watcher
        self._step_ms = max(1, step_ms)
        self._inotify: Inotify | None = None
        self._awatch: asyncio.Task[None] | None = None

    async def ensure(self) -> None:
        """Set up (or set up again) the change source on the parent folder, if it exists."""
        if (self._inotify is not None and self._inotify.alive) or (
            self._awatch is not None and not self._awatch.done()
        ):
            return
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        folder = self._path.parent
        if not folder.is_dir():
            return  # the follower's own check looks again
        use_inotify = self._watcher == "inotify" or (
            self._watcher == "auto" and sys.platform.startswith("linux")
        )
        if use_inotify:
            try:
                self._inotify = Inotify(folder, self._path.name, self._wake)
                return
            except (OSError, AttributeError) as e:
                logger.warning("inotify unavailable for %s (%s); using watchfiles", folder, e)
        self._awatch = spawn(self._watchfiles(folder), name=f"file-watch:{self._path.name}")
        # awatch() creates its watcher in its first step, before its first await: let it run
        # now, so that a change made before the next read is not missed.
        await asyncio.sleep(0)

    async def close(self) -> None:
        """Stop watching (idempotent)."""
        await cancel_and_wait(self._awatch)
        self._awatch = None
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None

    async def _watchfiles(self, folder: Path) -> None:
        import watchfiles  # only off Linux or when asked: the idle daemon does not load it

        name = self._path.name
        async for _changes in watchfiles.awatch(
            folder,
            watch_filter=lambda _change, changed: Path(changed).name == name,
            step=self._step_ms,
            debounce=max(20, 4 * self._step_ms),  # caps the wait under a continuous flood
            rust_timeout=5_000,
            recursive=False,
        ):
            self._wake()
