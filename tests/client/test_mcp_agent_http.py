"""The MCP proxy's HTTP/1.1 client of the agent socket, against a real aiohttp server on a unix
socket: keep-alive, a connection the server closed while idle, a chunked answer, a dead socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from srez_client.errors import DaemonUnreachableError
from srez_client.integrations.mcp.agent_http import AgentHTTP


@pytest.fixture
async def agent_socket(tmp_path: Path) -> AsyncIterator[Path]:
    async def echo(request: web.Request) -> web.Response:
        return web.json_response({"path": request.path, "body": (await request.read()).decode()})

    async def chunked(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for part in (b'{"parts": ', b"[1, 2, 3]", b"}"):
            await response.write(part)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/tools/{name}", echo)
    app.router.add_get("/chunked", chunked)
    runner = web.AppRunner(app, keepalive_timeout=0.2)  # idle connections closed quickly
    await runner.setup()
    path = tmp_path / "agent.sock"
    await web.UnixSite(runner, str(path)).start()
    try:
        yield path
    finally:
        await runner.cleanup()


async def test_requests_share_a_connection_and_survive_an_idle_close(agent_socket: Path) -> None:
    http = AgentHTTP(agent_socket)
    try:
        first = await http.request("POST", "/tools/get_alerts", b"{}")
        streams = http._streams
        second = await http.request("POST", "/tools/wait", b'{"minutes": 1}')
        assert http._streams is streams  # kept alive
        await asyncio.sleep(0.6)  # the server closes the idle connection
        third = await http.request("POST", "/tools/list_services", b"")
        assert http._streams is not streams
        assert [s for s, _ in (first, second, third)] == [200, 200, 200]
        assert b'"/tools/wait"' in second[1] and b'{\\"minutes\\": 1}' in second[1]
        status, body = await http.request("GET", "/chunked")
        assert (status, body) == (200, b'{"parts": [1, 2, 3]}')
        assert (await http.request("GET", "/nowhere"))[0] == 404
    finally:
        await http.close()


async def test_a_dead_socket_is_unreachable(tmp_path: Path) -> None:
    http = AgentHTTP(tmp_path / "nothing.sock")
    with pytest.raises(DaemonUnreachableError, match="does not answer"):
        await http.request("GET", "/task")
