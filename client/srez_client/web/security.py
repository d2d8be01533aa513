"""Who may talk to ``srez view``, and what every answer carries.

* **The address's token is good once.** ``srez view`` prints an address with a random token
  (``/?token=...``). The page it opens trades the token (``POST /api/session``) for a session
  secret and drops it from the address bar; a second trade of the same token is refused, so the
  address in the browser's history opens nothing.
* **The session secret is never sent by itself.** The page keeps it in this origin's storage and
  sends it in an ``Authorization: Bearer`` header on its own requests. It is no cookie: a browser
  sends cookies to every port of a host (the port is not part of a cookie's scope), so a cookie
  would reach any listener on the same machine a link pointed the browser at, an agent's among
  them. Two views on one host are two origins, with storage and secrets of their own.
* **WebSockets and downloads take a ticket.** A browser can put no header on a WebSocket
  upgrade or a link it follows, so the page first asks ``POST /api/ticket`` (with its secret)
  for a ticket bound to the one path it opens, good once and for :data:`TICKET_S` seconds.
* **The Host header** must name this server (its bound address and port, ``localhost`` or one
  of the names given with ``--allow-host``): a page of another site that rebinds its DNS name to
  127.0.0.1 is refused before any credential is looked at.
* **Origin and fetch metadata.** A WebSocket upgrade and every POST must come from a page of
  this server (``Origin`` is this server's own); a request a browser marks as coming from
  another site or another origin (``Sec-Fetch-Site``) is refused whatever it carries.
* **Headers.** Every answer, errors aiohttp raises included, carries a strict
  Content-Security-Policy (scripts, styles and connections to this origin only, no inline
  script, no frames, no plugins), ``nosniff``, no referrer; API answers are never cached.

``GET /`` and the page's static files need no credential: they are the same for everyone and
hold no secret.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Final

from aiohttp import web

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
TICKET_S: Final = 30.0
"""How long a ticket for a WebSocket or a download stays good (it is good once)."""
TICKETS_MAX: Final = 1024
"""Unredeemed tickets kept at most: the oldest go first (a page asks one per socket it opens)."""
PUBLIC: Final = frozenset({"/", "/api/session"})
"""Paths answered without a session (the static files are too)."""
FETCH_SITES: Final = frozenset({"same-origin", "none"})
"""``Sec-Fetch-Site`` values accepted: the page's own requests, or an address the user typed."""

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
    """The printed token, the sessions it was traded for, the tickets they asked, and the Host
    names answered to (set once the port is known)."""

    token: str = field(default_factory=new_token, repr=False)
    hosts: frozenset[str] = frozenset()
    traded: bool = False
    sessions: set[str] = field(default_factory=set, repr=False)
    tickets: dict[str, tuple[float, str]] = field(default_factory=dict, repr=False)

    def trade(self, offered: str) -> str | None:
        """A new session secret for the printed token, the first time it is offered."""
        if self.traded or not _same(offered, self.token):
            return None
        self.traded = True
        secret = new_token()
        self.sessions.add(secret)
        return secret

    def signed_in(self, request: web.Request) -> bool:
        scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
        return scheme == "Bearer" and any(_same(secret, s) for s in self.sessions)

    def ticket(self, path: str) -> str:
        """A ticket for one request of ``path``, good once and for :data:`TICKET_S` seconds."""
        now = time.monotonic()
        for old in [t for t, (until, _) in self.tickets.items() if until < now]:
            del self.tickets[old]
        while len(self.tickets) >= TICKETS_MAX:
            del self.tickets[next(iter(self.tickets))]
        ticket = new_token()
        self.tickets[ticket] = (now + TICKET_S, path)
        return ticket

    def redeem(self, ticket: str, path: str) -> bool:
        until, bound = self.tickets.pop(ticket, (0.0, ""))
        return until >= time.monotonic() and _same(bound, path)


def guard(gate: Gate) -> Any:
    """The middleware (aiohttp's middleware type) that checks Host, fetch metadata, the session
    or ticket and Origin, and puts the headers on every answer."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            response = await _checked(gate, request, handler)
        except web.HTTPException as raised:  # aiohttp's own 404s and 405s carry them too
            raised.headers.update(HEADERS)
            raise
        if not response.prepared:  # a WebSocket has sent its headers already
            response.headers.update(HEADERS)
            if request.path.startswith("/api/"):
                response.headers["Cache-Control"] = "no-store"
        return response

    return middleware


async def _checked(gate: Gate, request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.host not in gate.hosts:
        return _refuse(421, f"this server does not answer to Host {request.host!r}")
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in FETCH_SITES:
        return _refuse(403, f"refused: a request from another site or origin ({site})")
    writes = request.method not in ("GET", "HEAD") or request.headers.get("Upgrade")
    if writes and request.headers.get("Origin") != f"{request.scheme}://{request.host}":
        return _refuse(403, "refused: this request did not come from a page of this server")
    public = request.path in PUBLIC or request.path.startswith("/static/")
    if public or gate.signed_in(request):
        return await handler(request)
    ticket = request.query.get("ticket")
    if ticket is not None and request.method == "GET":
        if gate.redeem(ticket, request.path):
            return await handler(request)
        return _refuse(
            403,
            "this ticket is spent, expired or for another path: it opens one path, once, within 30 s",
        )
    return _refuse(401, "not signed in: open the address srez view printed (it is good once)")
