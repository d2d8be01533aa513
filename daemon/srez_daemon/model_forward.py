"""A built-in model agent's one way out of its sandbox: a unix socket forwarded to the model
relay (docs/security.md, A13).

On ``local`` (and inside a ``docker`` run's container, :mod:`srez_daemon.agent_network`) a
built-in model agent (``llm``, ``llm-json``) runs in an empty network namespace,
like a baseline, and the daemon listens on a unix socket bound into the sandbox; each connection
is joined, byte for byte, to a new TCP connection to the launcher's model relay on loopback.
Nothing is parsed here (the relay checks the run's scoped token, as for any request), so a
streamed reply passes as it comes. The agent reaches the relay and nothing else of the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)
CHUNK = 1 << 16


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(ConnectionError, OSError):
        if writer.can_write_eof():
            writer.write_eof()


async def forward(
    path: Path, host: str, port: int, owner: tuple[int, int] | None = None
) -> asyncio.Server:
    """Listens on the unix socket ``path`` and joins each connection to ``host:port``; the
    caller closes the server when the agent has ended. The socket is mode 0600, owned by
    ``owner`` (uid, gid) when the agent runs as another user than the daemon."""

    async def joined(agent_r: asyncio.StreamReader, agent_w: asyncio.StreamWriter) -> None:
        try:
            relay_r, relay_w = await asyncio.open_connection(host, port)
        except OSError as e:
            logger.warning("the model relay at %s:%s did not answer: %s", host, port, e)
            agent_w.close()
            return
        try:
            await asyncio.gather(_pipe(agent_r, relay_w), _pipe(relay_r, agent_w))
        finally:
            for w in (agent_w, relay_w):
                w.close()

    path.unlink(missing_ok=True)  # noqa: ASYNC240 - a stale socket: one quick call
    server = await asyncio.start_unix_server(joined, path=path)  # each client: its own task
    path.chmod(0o600)  # noqa: ASYNC240 - the agent's alone: no one else connects
    if owner is not None:
        os.chown(path, *owner)
    return server
