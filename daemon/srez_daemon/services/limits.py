"""The cap on concurrent exec and pty sessions, shared by both services (docs/security.md A9).

Every caller runs on the daemon's event loop, so a counter and a queue need no lock. An exec
over the cap waits in line for a slot, briefly (``DaemonSettings.session_wait_s``): a burst of
short commands from more clients than the cap is served in order rather than refused, while a
cap held by long sessions still answers 429 (with ``Retry-After``) once the wait is over, so a
client never hangs behind sessions it cannot see. A terminal takes a slot only if one is free
(``try_acquire``); a freed slot goes to the oldest waiter first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

logger = logging.getLogger(__name__)


class SessionLimiter:
    """Counts running sessions against a fixed limit, with a line of waiters.

    Args:
        limit: the most sessions that may run at once (``DaemonSettings.max_sessions``).
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            msg = f"session limit must be at least 1, got {limit}"
            raise ValueError(msg)
        self._limit = limit
        self._in_use = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def limit(self) -> int:
        """The most sessions that may run at once."""
        return self._limit

    @property
    def in_use(self) -> int:
        """How many sessions hold a slot now."""
        return self._in_use

    @property
    def waiting(self) -> int:
        """How many callers of ``acquire`` wait for a slot now."""
        return sum(not waiter.done() for waiter in self._waiters)

    def try_acquire(self) -> bool:
        """Takes a slot if one is free and nobody waits for one.

        Returns:
            True if the caller now holds a slot (and must ``release`` it), False at the cap.
        """
        if not self._take():
            logger.info("session refused: %d of %d in use", self._in_use, self._limit)
            return False
        return True

    async def acquire(self, wait_s: float) -> bool:
        """Takes a slot, waiting in line up to ``wait_s`` seconds for one to be released.

        Returns:
            True if the caller now holds a slot (and must ``release`` it), False if none was
            freed in time.
        """
        if self._take():
            return True
        if wait_s <= 0:
            logger.info("session refused: %d of %d in use", self._in_use, self._limit)
            return False
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(wait_s):
                await waiter
        except TimeoutError:
            handed = waiter.done() and not waiter.cancelled()  # released as the wait ran out
            if not handed:
                logger.info("session refused after %.1f s in line", wait_s)
            return handed
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot came as the caller was cancelled: pass it on
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
        return True

    def _take(self) -> bool:
        if self._in_use >= self._limit or self.waiting:
            return False
        self._in_use += 1
        return True

    def release(self) -> None:
        """Gives back a slot taken by ``try_acquire`` or ``acquire``: to the oldest waiter if
        one is in line (the slot stays taken), else to the pool."""
        if self._in_use == 0:
            msg = "release() without a matching acquire"
            raise RuntimeError(msg)
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._in_use -= 1
