"""The cap on concurrent exec and pty sessions, shared by both services (SECURITY.md A9).

A plain counter is enough: every caller runs on the daemon's event loop, so no lock is needed,
and a session over the cap is refused at once (429) rather than queued, so a client never waits
behind sessions it cannot see.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


class SessionLimiter:
    """Counts running sessions against a fixed limit.

    Args:
        limit: the most sessions that may run at once (``DaemonSettings.max_sessions``).
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            msg = f"session limit must be at least 1, got {limit}"
            raise ValueError(msg)
        self._limit = limit
        self._in_use = 0

    @property
    def limit(self) -> int:
        """The most sessions that may run at once."""
        return self._limit

    @property
    def in_use(self) -> int:
        """How many sessions hold a slot now."""
        return self._in_use

    def try_acquire(self) -> bool:
        """Takes a slot if one is free.

        Returns:
            True if the caller now holds a slot (and must ``release`` it), False at the cap.
        """
        if self._in_use >= self._limit:
            logger.info("session refused: %d of %d in use", self._in_use, self._limit)
            return False
        self._in_use += 1
        return True

    def release(self) -> None:
        """Gives back a slot taken by ``try_acquire``."""
        if self._in_use == 0:
            msg = "release() without a matching try_acquire()"
            raise RuntimeError(msg)
        self._in_use -= 1
