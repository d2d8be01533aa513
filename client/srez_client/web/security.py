"""Who may talk to ``srez view``, and what every answer carries.

* **The token.** The address ``srez view`` prints carries a random token once
  (``/?token=...``, as Jupyter does). The first request with it gets the token as an HttpOnly,
  SameSite=Strict cookie and is redirected to the same address without it, so the token is in no
  page, no later URL, no ``Referer`` and no access log line after the first. Every other request
  needs the cookie; a wrong token is refused, compared in constant time.
* **The Host header** must name this server (its bound address and port, ``localhost`` or one
  of the names given with ``--allow-host``): a page of another site that rebinds its DNS name to
  127.0.0.1 is refused before the token is even looked at.
* **Origin.** A WebSocket upgrade and every POST must come from a page of this server: their
  ``Origin`` must be this server's own. Browsers always send it on both.
* **Headers.** A strict Content-Security-Policy (scripts, styles and connections to this origin
  only, no inline script, no frames, no plugins), ``nosniff``, no referrer, and no caching of
  API answers.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode

from aiohttp import web

COOKIE: Final = "srez_view"
CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    """A token for one server (256 bits)."""
    return secrets.token_urlsafe(32)


def allowed_hosts(host: str, port: int, extra: Collection[str] = ()) -> frozenset[str]:
    """The ``Host`` headers this server answers to."""
    names = {host, "localhost", "127.0.0.1"} if host in ("127.0.0.1", "localhost") else {host}
    if host in ("::1", "[::1]"):
        names = {"[::1]", "localhost"}
    names |= set(extra)
    return frozenset(f"{name}:{port}" for name in names) | frozenset(names if port == 80 else ())


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def _refuse(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers=HEADERS)


@dataclass
class Gate:
    """The token, and the Host names answered to (set once the port is known)."""

    token: str = field(default_factory=new_token, repr=False)
    hosts: frozenset[str] = frozenset()


def guard(gate: Gate) -> Any:
    """The middleware (aiohttp's middleware type) that checks Host, token and Origin, and sets
    the headers."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        token = gate.token
        if request.host not in gate.hosts:
            return _refuse(421, f"this server does not answer to Host {request.host!r}")
        offered = request.query.get("token")
        if offered is not None:
            if not _same(offered, token):
                return _refuse(403, "wrong token: open the address srez view printed")
            rest = [(k, v) for k, v in request.query.items() if k != "token"]
            target = request.path + (f"?{urlencode(rest)}" if rest else "")
            redirect = web.HTTPSeeOther(target, headers=HEADERS)
            redirect.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
            raise redirect
        if not _same(request.cookies.get(COOKIE, ""), token):
            return _refuse(401, "no token: open the address srez view printed (it carries one)")
        writes = request.method not in ("GET", "HEAD") or request.headers.get("Upgrade")
        if writes and request.headers.get("Origin") != f"{request.scheme}://{request.host}":
            return _refuse(403, "refused: this request did not come from a page of this server")
        response = await handler(request)
        if not response.prepared:  # a WebSocket has sent its headers already
            response.headers.update(HEADERS)
            if request.path.startswith("/api/"):
                response.headers["Cache-Control"] = "no-store"
        return response

    return middleware
