"""Log lines an outsider cannot multiply (docs/security.md, test 56).

aiohttp logs a request its parser refused (a header past 8 KiB, a broken request line) with the
whole traceback, before any token is looked at: every local process, and every networked agent,
could grow ``daemon.log`` by 700 bytes a request. :class:`MalformedRequests` turns each such
record into one line without a traceback and lets at most :data:`PER_MINUTE` through a minute;
the next line let through says how many were left out. A record of any other error keeps its
traceback: that one is ours to read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final

PER_MINUTE: Final = 10
"""Malformed-request lines logged a minute at most."""


class MalformedRequests(logging.Filter):
    """The filter of the module docstring, for the ``aiohttp.server`` logger."""

    def __init__(self, per_minute: int = PER_MINUTE, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.per_minute = per_minute
        self.clock = clock
        self._window = clock()
        self._logged = 0
        self.left_out = 0
        """Lines left out since the last one logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        from aiohttp.http_exceptions import HttpProcessingError

        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, HttpProcessingError):
            return True
        now = self.clock()
        if now - self._window >= 60.0:
            self._window, self._logged = now, 0
        if self._logged >= self.per_minute:
            self.left_out += 1
            return False
        self._logged += 1
        peer = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
        reason = " ".join(f"{type(error).__name__}: {error.message}".split())[:200]
        note = f" ({self.left_out} more left out)" if self.left_out else ""
        self.left_out = 0
        record.msg, record.args = "refused a malformed request from %s: %s%s", (peer, reason, note)
        record.exc_info = record.exc_text = None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True
