"""The two ways ``srez mcp`` serves, as functions: a run's agent socket (stdio or HTTP), or an
episode in this process (stdio). They import the ``mcp`` library (through :mod:`.server`), so
callers import this module only once they are going to serve.

Serving a socket imports nothing that reads the task files: it runs in the agent's sandbox,
where they are hidden (the inline host, which loads tasks, is imported by :func:`serve_task`
alone)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from srez_client.integrations.mcp.http_token import (
    announcement,
    new_token,
    remove_token_file,
    write_token_file,
)
from srez_client.integrations.mcp.port import ToolCalls
from srez_client.integrations.mcp.server import (
    build_server,
    loopback_socket,
    serve_http,
    serve_stdio,
)
from srez_client.integrations.mcp.socket_port import SocketPort
from srez_env.task import Task

if TYPE_CHECKING:
    from srez_client.backends.inline.host import InlineRun


def serve_socket(path: Path, http_port: int | None, token_file: Path | None = None) -> None:
    """Proxies the agent socket at ``path``: on stdio until the client closes it, or on
    ``http://127.0.0.1:PORT/mcp`` (``http_port``; 0: a free one) until SIGINT or SIGTERM, to
    clients that send this server's token (:mod:`.http_token`): written on stderr with the URL,
    or into ``token_file`` (removed when the server stops).

    Raises:
        UsageError: If ``path`` is not a socket, or ``token_file`` cannot be written.
        DaemonUnreachableError: If it does not answer ``GET /task``.
        PortError: If it refuses it.
        OSError: If the HTTP port cannot be bound.
    """
    port = SocketPort.checked(path)
    listening = None if http_port is None else loopback_socket(http_port)
    token = new_token()

    def announce(url: str) -> None:
        sys.stderr.write(announcement(url, token, token_file) + "\n")
        sys.stderr.flush()

    async def serve() -> None:
        try:
            server = build_server(await port.task(), ToolCalls(port))
            if listening is None:
                await serve_stdio(server)
            else:
                await serve_http(server, listening, token, announce)
        finally:
            await port.close()

    if listening is None:
        asyncio.run(serve())
        return
    try:
        if token_file is not None:
            write_token_file(token_file, token)
        with _sigterm_exits():
            asyncio.run(serve())
    finally:
        listening.close()
        if token_file is not None:
            remove_token_file(token_file, token)


@contextlib.contextmanager
def _sigterm_exits() -> Iterator[None]:
    """SIGTERM as an exit (status 143) that runs ``finally`` blocks, rather than the process's
    death: the HTTP server (uvicorn) stops gracefully on it, then raises it again once it has
    put back the handler it found."""

    def terminated(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve_task(task: Task, *, name: str, model: str, run_seed: int, results: Path) -> InlineRun:
    """Serves an episode of ``task`` on stdio, recorded as an inline run of the agent ``name``
    (``mcp:NAME``) under ``results``; the finished run once the client has left. SIGTERM (how a client stops a server
    that does not leave on its own) ends the episode as the client leaving; Ctrl-C deletes the
    half-written run, as an interrupted inline ``srez eval`` does."""
    from srez_client.backends.inline.host import HostedRun, RunIdentity
    from srez_client.integrations.mcp.inline_port import InlinePort

    who = RunIdentity(agent=name, agent_spec=f"mcp:{name}", model=model, run_seed=run_seed)
    hosted = HostedRun.open(task, who, results)
    port = InlinePort(hosted)

    async def serve() -> None:
        serving = asyncio.current_task()
        assert serving is not None
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, serving.cancel)
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await serve_stdio(build_server(await port.task(), ToolCalls(port)))
        finally:
            loop.remove_signal_handler(signal.SIGTERM)
        await port.close()

    try:
        asyncio.run(serve())
    except BaseException:
        if port.run is None:
            hosted.discard()
        raise
    assert port.run is not None
    return port.run
