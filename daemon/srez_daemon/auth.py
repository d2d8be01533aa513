"""Token auth and the host check of the public API (docs/design.md §4, docs/security.md A3, A4).

The token is 32 random bytes made by the host per run, read from a file. The daemon refuses to
start without it (fail closed). Every route the route table (:mod:`srez_daemon.protocol.routes`)
does not mark ``open`` (only ``/api/health``), and every unknown path, needs
``Authorization: Bearer <token>``, compared in constant time with :func:`hmac.compare_digest`
(the single call site), never taken from a query string. Requests naming a foreign ``Host`` or
carrying a foreign ``Origin`` (DNS rebinding, a web page poking loopback) are refused, and no CORS
header is ever sent.

Exec and the pty (``admin`` in the table) run commands in the run, so a token alone is not enough
for them: the request must also claim the admin capability with ``X-Srez-Admin: 1``
(docs/security.md A4). Viewers attach view-only (the client sends the claim only when the user asked
for a shell or a command), so a viewer bug, or a page that got hold of a token, cannot run anything.
Each refusal is logged.
"""

from __future__ import annotations

import hmac
import logging
from pathlib import Path
from typing import Final

from aiohttp import web

from srez_daemon.errors import TokenError
from srez_daemon.http import Handler, error_response
from srez_daemon.protocol.routes import ACCESS_BY_PATH, ADMIN_HEADER, Access

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


def load_token(path: Path) -> bytes:
    """Reads the token; raises TokenError (fail closed) if it is missing, unreadable or empty."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        msg = (
            f"cannot read the token file {path}: {e.strerror}; the daemon does not start without it"
        )
        raise TokenError(msg) from e
    token = raw.strip()
    if not token:
        msg = f"the token file {path} is empty; the daemon does not start without a token"
        raise TokenError(msg)
    return token


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


LOOPBACK_PEERS: Final = frozenset({"127.0.0.1", "::1"})


def make_auth_middleware(
    token: bytes,
    *,
    extra_hosts: frozenset[str] = frozenset(),
    allowed_peers: frozenset[str] = frozenset(),
) -> web.middleware:  # type: ignore[valid-type]
    """The middleware that enforces the peer check (with ``allowed_peers``: only they and
    loopback are served, health included), the host check, the bearer token and the admin
    claim.

    A path the route table does not name needs the token: an unknown path answers 401 to a caller
    without one, never whether it exists.
    """
    allowed_hosts = LOOPBACK_HOSTS | extra_hosts
    expected = b"Bearer " + token

    peers = allowed_peers | LOOPBACK_PEERS if allowed_peers else frozenset()

    @web.middleware
    async def auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        if peers and request.remote not in peers:
            return error_response("forbidden_host", "this run's daemon serves its host only")
        host = _host_name(request.headers.get("Host", ""))
        if host and host not in allowed_hosts:
            return error_response(
                "forbidden_host", f"Host {host!r} is not served here; use 127.0.0.1"
            )
        origin = request.headers.get("Origin")
        if origin is not None and _host_name(origin.split("://", 1)[-1]) not in allowed_hosts:
            return error_response("forbidden_host", "cross-origin requests are refused")
        needs: Access = ACCESS_BY_PATH.get(request.path, "token")
        if needs == "open":
            return await handler(request)
        given = request.headers.get("Authorization", "").encode("utf-8", "replace")
        if not hmac.compare_digest(given, expected):
            return error_response(
                "unauthorized", "a valid 'Authorization: Bearer <token>' header is required"
            )
        if needs == "admin" and request.headers.get(ADMIN_HEADER) != "1":
            logger.warning(
                "refused %s %s: no admin claim (view-only)", request.method, request.path
            )
            return error_response(
                "forbidden",
                f"{request.path} runs commands: send '{ADMIN_HEADER}: 1' (view-only attachments cannot)",
            )
        return await handler(request)

    return auth
