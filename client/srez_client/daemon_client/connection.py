"""The connection under :class:`~srez_client.daemon_client.api.DaemonClient` (docs/design.md §4).

:class:`DaemonConnection` holds the session and the token and sends requests and opens WebSockets
on the routes of the daemon's route table (:mod:`srez_daemon.protocol.routes`): the method, the
path and whether the token goes with it come from there, never from a path written here. Error
answers become the daemon's closed codes mapped to one exception class per family
(:func:`srez_client.errors.daemon_api_error`); a daemon that does not answer raises
:class:`~srez_client.errors.DaemonUnreachableError`.

The token travels in the ``Authorization`` header only: never in a URL, a query string, a log
record or the client's ``repr`` (docs/security.md A3). Open routes (``/api/health``) are asked
without it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Final, Self

import aiohttp
from pydantic import ValidationError

from srez_client.daemon_client.stream import ReconnectPolicy
from srez_client.errors import DaemonAPIError, DaemonUnreachableError, daemon_api_error
from srez_daemon.protocol import routes
from srez_daemon.protocol.api import ErrorResponse

ADMIN_CLAIM: Final = {routes.ADMIN_HEADER: "1"}
"""The header that claims the admin capability exec and pty need (docs/security.md A4)."""

_STATUS_CODES: Final = {401: "unauthorized", 403: "forbidden", 404: "not_found"}


class DaemonConnection:
    """One run daemon's session and token, and requests on the routes of the table.

    An async context manager (or call :meth:`close`); :class:`DaemonClient` adds the endpoints.

    Args:
        base_url: ``http://host:port`` of the daemon (a trailing ``/`` is ignored).
        token: The run's token; sent as ``Authorization: Bearer <token>``.
        session: An aiohttp session to use (not closed by :meth:`close`); one is made otherwise.
        timeout_s: Total time allowed for a plain request.
        reconnect: How :meth:`DaemonClient.stream` retries a dropped WebSocket.
        admin: Claim the admin capability (``X-Srez-Admin: 1``) that :meth:`DaemonClient.exec`
            and :meth:`DaemonClient.pty` need. Off by default: an attachment is view-only unless
            the user asked to run commands (docs/security.md A4), and the daemon refuses exec and
            pty without the claim.

    Raises:
        ValueError: If the token is empty or holds whitespace (it could not be a header value).
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        session: aiohttp.ClientSession | None = None,
        timeout_s: float = 30.0,
        reconnect: ReconnectPolicy | None = None,
        admin: bool = False,
    ) -> None:
        if not token or any(c.isspace() for c in token):
            msg = "the daemon token is empty or holds whitespace; read it from the run's token file"
            raise ValueError(msg)
        self.base_url = base_url.rstrip("/")
        """``http://host:port`` of the daemon."""
        self._auth = {"Authorization": f"Bearer {token}"}
        self._session = session
        self._own_session = session is None
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._connect_timeout_s = min(timeout_s, 10.0)
        self.reconnect = reconnect or ReconnectPolicy()
        """The retry policy of :meth:`DaemonClient.stream` (and of a lost exec answer)."""
        self._admin = {**ADMIN_CLAIM} if admin else {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r})"  # never the token

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the session this client made (idempotent; a given session is left open)."""
        if self._own_session and self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            if not self._own_session:
                msg = "the aiohttp session given to DaemonClient is closed"
                raise RuntimeError(msg)
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    def _url(self, route: routes.Route) -> str:
        return f"{self.base_url}{route.path}"

    # ------------------------------------------------------------------ plain requests

    @contextlib.asynccontextmanager
    async def _response(
        self,
        route: routes.Route,
        *,
        params: dict[str, str] | None = None,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        auth: bool | None = None,
        limits: aiohttp.ClientTimeout | None = None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """The open 2xx answer to one request on ``route``, to read as it arrives.

        The token goes with it unless the route is open (``auth`` overrides that); ``limits``
        replaces the client's timeout. A redirect is never followed (the token would go with
        it). A connection lost while the body is read is mapped as one lost before it.

        Raises:
            DaemonAPIError: For a non-2xx answer (a subclass per code family).
            DaemonUnreachableError: If the daemon does not answer.
        """
        send_token = route.access != "open" if auth is None else auth
        all_headers = {**(self._auth if send_token else {}), **(headers or {})}
        try:
            async with self._http().request(
                route.method,
                self._url(route),
                params=params,
                data=body,
                headers=all_headers,
                timeout=limits or self._timeout,
                allow_redirects=False,
            ) as resp:
                if resp.status >= 300:
                    raise api_error(resp.status, await resp.read())
                yield resp
        except (aiohttp.ClientConnectionError, TimeoutError) as e:
            raise self._unreachable(route, e) from e

    def _unreachable(self, route: routes.Route, e: BaseException) -> DaemonUnreachableError:
        reason = type(e).__name__ if isinstance(e, TimeoutError) else str(e) or type(e).__name__
        msg = f"daemon at {self.base_url} did not answer {route.method} {route.path}: {reason}"
        return DaemonUnreachableError(msg)

    async def _json(self, route: routes.Route, **kwargs: Any) -> bytes:
        """The whole body of a 2xx answer (arguments and errors as for :meth:`_response`)."""
        async with self._response(route, **kwargs) as resp:
            return await resp.read()

    # ------------------------------------------------------------------ WebSockets

    async def websocket(
        self,
        route: routes.Route,
        params: dict[str, str],
        *,
        connect_timeout_s: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> aiohttp.ClientWebSocketResponse:
        """Open the WebSocket ``route`` with the token in the header (errors mapped as for
        requests).

        The handshake is bounded (``connect_timeout_s``, default 10 s): a daemon that is shutting
        down may accept a connection and never answer it.
        """
        try:
            async with asyncio.timeout(connect_timeout_s or self._connect_timeout_s):
                return await self._http().ws_connect(
                    self._url(route),
                    params=params,
                    headers={**self._auth, **(headers or {})},
                    autoping=True,
                    timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=5.0),
                )
        except aiohttp.WSServerHandshakeError as e:
            raise daemon_api_error(
                _STATUS_CODES.get(e.status, f"http_{e.status}"), e.message, e.status
            ) from e
        except (aiohttp.ClientConnectionError, TimeoutError) as e:
            err = self._unreachable(route, e)
            raise err from e


def api_error(status: int, data: bytes) -> DaemonAPIError:
    """The exception for an error answer (a daemon error body, or anything else)."""
    try:
        body = ErrorResponse.model_validate_json(data).error
    except ValidationError:
        code = _STATUS_CODES.get(status, f"http_{status}")
        text = " ".join(data[:200].decode("utf-8", "replace").split()) or "no error body"
        return daemon_api_error(code, text, status)
    return daemon_api_error(body.code, body.message, status)
