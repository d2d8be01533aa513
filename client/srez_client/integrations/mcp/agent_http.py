"""HTTP to a run's agent socket for the MCP proxy: aiohttp's client on a unix socket.

One :class:`aiohttp.ClientSession` serves the proxy's life, so its calls share one kept-alive
connection (the connector holds one at most: the proxy sends one call at a time). A connection
the daemon closed while idle is not reused: the connector drops it and opens another (it also
lets a connection idle for :data:`IDLE_S` go, well before the daemon would). Whatever keeps an answer
from arriving (no socket, nobody listening, a connection cut mid-answer, no answer within
:data:`CALL_TIMEOUT_S`) is one :class:`~srez_client.errors.DaemonUnreachableError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import aiohttp

from srez_client.errors import DaemonUnreachableError

IDLE_S: Final = 15.0
"""How long an idle connection is kept for the next call."""
CALL_TIMEOUT_S: Final = 300.0
"""How long a call may take, its connection included, before the socket counts as not answering
(a call is a simulator step: milliseconds)."""
HEADERS: Final = {"Content-Type": "application/json"}


class AgentHTTP:
    """Requests to the agent socket at ``path`` (the session opens with the first request)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._session: aiohttp.ClientSession | None = None

    def _opened(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.UnixConnector(
                path=str(self.path), limit=1, keepalive_timeout=IDLE_S
            )
            self._session = aiohttp.ClientSession(
                "http://agent",
                connector=connector,
                headers=HEADERS,
                skip_auto_headers=("User-Agent",),
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT_S),
            )
        return self._session

    async def request(self, method: str, target: str, body: bytes = b"") -> tuple[int, bytes]:
        """(status, body) of one request.

        Raises:
            DaemonUnreachableError: If the socket does not answer, or answers what is not HTTP.
        """
        try:
            async with self._opened().request(method, target, data=body) as response:
                return response.status, await response.read()
        except (aiohttp.ClientError, OSError) as e:  # TimeoutError is an OSError
            msg = f"the agent socket {self.path} does not answer: {_reason(e)}"
            raise DaemonUnreachableError(msg) from e

    async def close(self) -> None:
        """Closes the session and its connection (a later request opens another session)."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


def _reason(error: BaseException) -> str:
    """What went wrong, in one line: the system's words when a system call failed."""
    cause = error.os_error if isinstance(error, aiohttp.ClientConnectorError) else error
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror
    return " ".join(str(error).split()) or type(error).__name__
