"""A typed async client of a run daemon's public API (docs/design.md §4).

One method per route, each returning the wire models of :mod:`srez_daemon.protocol.api`, so the
client and the daemon share one definition of every body. The session, the token, the route
table and the mapping of errors to exceptions are the connection's
(:class:`~srez_client.daemon_client.connection.DaemonConnection`, which this client extends).

:meth:`DaemonClient.stream` follows the live WebSocket and survives a dropped connection: it
reconnects with bounded backoff from the last ``next_offset`` it delivered, so every dialog entry
reaches the caller exactly once, in order.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import secrets
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Final

import aiohttp
import orjson
from pydantic import JsonValue

from srez_client.daemon_client.connection import ADMIN_CLAIM, DaemonConnection
from srez_client.daemon_client.stream import ReconnectPolicy, follow
from srez_client.errors import DaemonAPIError, DaemonAuthError, DaemonUnreachableError
from srez_daemon.protocol import routes
from srez_daemon.protocol.api import (
    DialogPage,
    ExecRequest,
    ExecResult,
    FilesResponse,
    Health,
    PtyResize,
    RunInfo,
    Similarity,
    StreamFrame,
)

logger = logging.getLogger(__name__)

__all__ = ["LOG_NAMES", "DaemonClient", "ReconnectPolicy", "pty_resize"]

LOG_NAMES: Final = routes.LOG_NAMES
"""The logs ``/api/logs`` serves."""
_EXEC_MARGIN_S: Final = 15.0  # the daemon answers a timed-out exec after killing it: allow that


class DaemonClient(DaemonConnection):
    """Talks to one run daemon; built as a :class:`DaemonConnection` is.

    Use it as an async context manager (or call :meth:`close`)::

        async with DaemonClient("http://127.0.0.1:40123", token) as daemon:
            info = await daemon.run()
            async for frame in daemon.stream():
                ...
    """

    async def health(self) -> Health:
        """``GET /api/health`` (sent without the token)."""
        return Health.model_validate_json(await self._json(routes.HEALTH))

    async def run(self) -> RunInfo:
        """``GET /api/run``: the run's metadata."""
        return RunInfo.model_validate_json(await self._json(routes.RUN))

    async def dialog(self, offset: int = 0, limit: int | None = None) -> DialogPage:
        """``GET /api/dialog``: complete entries from byte ``offset`` (at most ``limit``)."""
        params = {"offset": str(offset)}
        if limit is not None:
            params["limit"] = str(limit)
        return DialogPage.model_validate_json(await self._json(routes.DIALOG, params=params))

    async def diff(self) -> str:
        """``GET /api/diff``: every change to the services' config files (unified diff)."""
        return (await self._json(routes.DIFF)).decode("utf-8", "replace")

    async def files(self) -> FilesResponse:
        """``GET /api/files``: the changed config files."""
        return FilesResponse.model_validate_json(await self._json(routes.FILES))

    async def reference(self) -> str:
        """``GET /api/reference``: the reference patch.

        Raises:
            DaemonConflictError: ``agent_phase`` while the agent acts.
        """
        return (await self._json(routes.REFERENCE)).decode("utf-8", "replace")

    async def similarity(self) -> Similarity:
        """``GET /api/similarity``: the share of changed lines the two diffs have in common.

        Raises:
            DaemonConflictError: ``agent_phase`` while the agent acts.
        """
        return Similarity.model_validate_json(await self._json(routes.SIMILARITY))

    async def grade(self) -> dict[str, JsonValue]:
        """``GET /api/grade``: ``result.json`` as a dict.

        Raises:
            DaemonNotFoundError: ``no_grade`` until the run is graded.
        """
        value = orjson.loads(await self._json(routes.GRADE))
        if not isinstance(value, dict):
            err = DaemonAPIError("internal", "result.json is not a JSON object", 200)
            raise err
        return value

    async def openapi(self) -> dict[str, JsonValue]:
        """``GET /api/openapi.json``: the OpenAPI document of the API."""
        value = orjson.loads(await self._json(routes.OPENAPI))
        return value if isinstance(value, dict) else {}

    async def exec(
        self,
        argv: Sequence[str],
        timeout_s: float,
        *,
        cwd: str | None = None,
        request_id: str | None = None,
        retries: int = 1,
    ) -> ExecResult:
        """``POST /api/exec``: run a command in the run and wait for it.

        Every request carries an ``X-Request-ID`` (a fresh one unless given), so a retry after a
        lost answer returns the first execution's result instead of running the command again.

        Args:
            argv: The command and its arguments.
            timeout_s: Wall-time limit; the daemon kills the command's process group after it.
            cwd: Working directory inside the run.
            request_id: Id for retry safety; reuse it only to retry the same command.
            retries: How many times to resend after a lost connection.

        Raises:
            DaemonRequestError: If the daemon refuses the request (``bad_request``).
            DaemonBusyError: If too many sessions run (``too_many_sessions``).
            DaemonUnreachableError: If no attempt got an answer.
        """
        body = ExecRequest(argv=list(argv), timeout_s=timeout_s, cwd=cwd).model_dump_json()
        headers = {
            "Content-Type": "application/json",
            "X-Request-ID": request_id or uuid.uuid4().hex,
            **self._admin,
        }
        timeout = aiohttp.ClientTimeout(total=timeout_s + _EXEC_MARGIN_S)
        for attempt in range(retries + 1):
            try:
                data = await self._json(
                    routes.EXEC, body=body.encode(), headers=headers, limits=timeout
                )
                return ExecResult.model_validate_json(data)
            except DaemonUnreachableError:
                if attempt == retries:
                    raise
                logger.info("exec answer lost; retrying with the same request id")
                await asyncio.sleep(self.reconnect.delay(attempt + 1))
        msg = "exec retry loop ended without an answer"
        raise AssertionError(msg)  # pragma: no cover

    async def logs(self, name: str, *, follow: bool = False) -> AsyncIterator[str]:
        """``GET /api/logs``: a log as text chunks, following it while the daemon runs if asked.

        Args:
            name: ``agent``, ``evaluator`` or ``daemon``.
            follow: Keep the response open and yield what is appended.

        Yields:
            Text chunks (invalid UTF-8 replaced; a character split across chunks is kept whole).

        Raises:
            ValueError: If ``name`` is not a log the daemon serves.
            DaemonAPIError: If the daemon refuses.
        """
        if name not in LOG_NAMES:
            msg = f"unknown log {name!r}; the daemon serves {', '.join(LOG_NAMES)}"
            raise ValueError(msg)
        params = {"name": name, "follow": "1" if follow else "0"}
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=10, sock_read=None if follow else self._timeout.total
        )
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        async with self._response(routes.LOGS, params=params, limits=timeout) as resp:
            async for chunk in resp.content.iter_any():
                if text := decoder.decode(chunk):
                    yield text
        if tail := decoder.decode(b"", final=True):
            yield tail

    async def verify(self) -> RunInfo:
        """Check this is the daemon we launched before trusting anything it says (docs/security.md
        A2).

        A real daemon refuses a request with no token and one with a wrong token (401), and
        accepts ours. An impostor that took the port cannot tell our token from a wrong one
        without reading the token file, which only the daemon's user can: one that accepts
        anything fails the first two checks, one that refuses everything fails the last.

        Returns:
            The run's metadata.

        Raises:
            DaemonAuthError: If the daemon answers without the token or with a wrong one, or
                refuses the token.
        """
        wrong = {"Authorization": "Bearer " + secrets.token_urlsafe(32)}
        for what, headers in (("without a token", {}), ("with a wrong token", wrong)):
            try:
                await self._json(routes.RUN, auth=False, headers=headers)
            except DaemonAuthError:
                continue
            msg = f"{self.base_url} answered {routes.RUN.path} {what}: not a daemon to trust"
            raise DaemonAuthError(code="unauthorized", message=msg, status=200)
        return await self.run()

    async def pty(
        self, cols: int = 80, rows: int = 24, *, admin: bool | None = None
    ) -> aiohttp.ClientWebSocketResponse:
        """``GET /api/pty``: a shell in the run, as an open WebSocket (close it when done).

        Send keystrokes as binary frames and read output from binary frames;
        :func:`pty_resize` makes the resize text frame. ``admin`` makes (True) or withholds
        (False) the admin claim for this call; None keeps the client's own setting.

        Raises:
            DaemonAPIError: If the daemon refuses (``too_many_sessions``, no terminal ...).
            DaemonUnreachableError: If the daemon does not answer.
        """
        return await self.websocket(
            routes.PTY,
            {"cols": str(cols), "rows": str(rows)},
            headers=self._admin if admin is None else ({**ADMIN_CLAIM} if admin else {}),
        )

    async def stream(
        self,
        offset: int = 0,
        *,
        stop: asyncio.Event | None = None,
        heartbeats: bool = False,
    ) -> AsyncIterator[StreamFrame]:
        """Follow ``/api/ws``: the dialog from ``offset``, then live frames, until the run ends.

        A dropped or silent connection is reopened from the last delivered ``next_offset``
        (bounded backoff, :attr:`reconnect`), and dialog frames the client already delivered are
        dropped, so every entry is yielded exactly once. Phase, diff and grade frames may repeat
        after a reconnect (the daemon restates them).

        The stream ends when a ``done`` or ``error`` phase has been seen and the dialog is drained
        (the caller has every entry up to the end of the file), when ``stop`` is set, or when the
        caller stops iterating.

        Args:
            offset: Byte offset to start from (0, or the ``next_offset`` of an earlier stream).
            stop: Set it to end the stream.
            heartbeats: Also yield heartbeat frames.

        Yields:
            The frames, in the daemon's order.

        Raises:
            DaemonAuthError: If the token is refused.
            DaemonUnreachableError: If the daemon stays unreachable for a whole reconnect policy.
            DaemonAPIError: If a frame is not a valid stream frame.
        """
        async with contextlib.aclosing(
            follow(self, offset, stop=stop, heartbeats=heartbeats)
        ) as frames:
            async for frame in frames:
                yield frame


def pty_resize(cols: int, rows: int) -> str:
    """The text frame that resizes a pty: ``{"resize": [cols, rows]}``."""
    return PtyResize(resize=(cols, rows)).model_dump_json()
