"""The bearer token of ``srez mcp --socket PATH --http``: any process of this machine can reach
127.0.0.1, and the server would call the run's tools for it, so every request must carry the
token.

Each server makes its own (:func:`new_token`: 32 random bytes) and hands it to its user on
stderr, or in a file (``--token-file``, written 0600 and atomically, removed when the server
stops); never in an argument or a URL, where other processes and logs would see it.
:class:`BearerToken` checks it on every HTTP request, in constant time
(:func:`hmac.compare_digest`), and answers anything else with 401 and one line of JSON, before the
MCP application (and so the agent socket) sees the request.
"""

from __future__ import annotations

import contextlib
import hmac
import secrets
from pathlib import Path
from typing import Final

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from srez_client.errors import UsageError
from srez_core.atomic import atomic_write_bytes

HEADER: Final = "Authorization"
REFUSAL: Final = orjson.dumps(
    {
        "error": {
            "code": "unauthorized",
            "message": f"a valid '{HEADER}: Bearer <token>' header is required (srez mcp wrote "
            "the token on stderr as it started, or into its --token-file)",
        }
    }
)
"""The body of every refused request (the agent socket's error shape)."""


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def header_value(token: str) -> str:
    """The ``Authorization`` header's value a client sends."""
    return f"Bearer {token}"


def announcement(url: str, token: str, token_file: Path | None) -> str:
    """The line ``srez mcp --http`` writes on stderr once it listens: the URL and the header to
    send, with the token in it, or the file that holds it."""
    if token_file is None:
        return f'srez: MCP (streamable HTTP) at {url}; send the header "{HEADER}: Bearer {token}"'
    return (
        f'srez: MCP (streamable HTTP) at {url}; send the header "{HEADER}: Bearer <token>"'
        f" with the token in {token_file}"
    )


class BearerToken:
    """ASGI middleware: ``app`` behind the header ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = header_value(token).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and not self._presented(scope):
            await send({"type": "websocket.close", "code": 1008})  # policy violation
            return
        if scope["type"] == "http" and not self._presented(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(REFUSAL)).encode()),
                        (b"www-authenticate", b"Bearer"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": REFUSAL})
            return
        await self.app(scope, receive, send)

    def _presented(self, scope: Scope) -> bool:
        given = [v for k, v in scope["headers"] if k == b"authorization"]
        # one header, compared in full whatever its length: no early exit on the first wrong byte
        return len(given) == 1 and hmac.compare_digest(given[0], self._expected)


def write_token_file(path: Path, token: str) -> None:
    """Writes ``token`` (and a newline) to ``path``: readable by this user only, and whole or
    not at all (a temporary file in the same folder, renamed over ``path``).

    Raises:
        UsageError: If it cannot be written (no such folder, not writable).
    """
    try:
        atomic_write_bytes(path, token.encode() + b"\n", mode=0o600)
    except OSError as e:
        msg = f"--token-file {path}: {e.strerror or e} (a file in an existing, writable folder)"
        raise UsageError(msg) from None


def remove_token_file(path: Path, token: str) -> None:
    """Removes ``path`` if it still holds ``token`` (another server's is left alone)."""
    with contextlib.suppress(OSError):  # gone already, or not ours to read: nothing to remove
        if path.read_bytes().strip() == token.encode():
            path.unlink()
