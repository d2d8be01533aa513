"""The MCP proxy's client of the agent socket (aiohttp's, one session), against a real aiohttp
server on a unix socket: keep-alive, a connection the server closed while idle, a chunked answer,
an answer cut short, a dead socket."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from aiohttp import web

from srez_client.errors import DaemonUnreachableError
from srez_client.integrations.mcp.agent_http import AgentHTTP


@pytest.fixture
async def agent_socket(tmp_path: Path) -> AsyncIterator[Path]:
    accepted: list[object] = []  # the connections' handlers, in order (held: numbers stay theirs)

    async def echo(request: web.Request) -> web.Response:
        if not any(request.protocol is seen for seen in accepted):
            accepted.append(request.protocol)
        number = next(i for i, seen in enumerate(accepted) if request.protocol is seen)
        body = (await request.read()).decode()
        return web.json_response({"path": request.path, "body": body, "connection": number})

    async def chunked(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for part in (b'{"parts": ', b"[1, 2, 3]", b"}"):
            await response.write(part)
        await response.write_eof()
        return response

    async def cut(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Length": "100"})
        await response.prepare(request)
        await response.write(b'{"half": ')
        assert request.transport is not None
        request.transport.close()  # the daemon gone mid-answer
        return response

    app = web.Application()
    app.router.add_post("/tools/{name}", echo)
    app.router.add_get("/chunked", chunked)
    app.router.add_get("/cut", cut)
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
        answers = [
            await http.request("POST", "/tools/get_alerts", b"{}"),
            await http.request("POST", "/tools/wait", b'{"minutes": 1}'),
        ]
        await asyncio.sleep(0.6)  # the server closes the idle connection
        answers.append(await http.request("POST", "/tools/list_services", b""))
        assert [status for status, _ in answers] == [200, 200, 200]
        first, second, third = (orjson.loads(body) for _, body in answers)
        assert (second["path"], second["body"]) == ("/tools/wait", '{"minutes": 1}')
        assert first["connection"] == second["connection"]  # kept alive
        assert third["connection"] != second["connection"]  # a new one after the close
        status, body = await http.request("GET", "/chunked")
        assert (status, body) == (200, b'{"parts": [1, 2, 3]}')
        assert (await http.request("GET", "/nowhere"))[0] == 404
    finally:
        await http.close()


async def test_an_answer_cut_short_is_unreachable_and_the_next_call_reconnects(
    agent_socket: Path,
) -> None:
    http = AgentHTTP(agent_socket)
    try:
        with pytest.raises(DaemonUnreachableError, match="does not answer") as cut:
            await http.request("GET", "/cut")
        assert "\n" not in str(cut.value)
        assert (await http.request("POST", "/tools/get_alerts", b"{}"))[0] == 200
    finally:
        await http.close()


async def test_a_dead_socket_is_unreachable_in_one_line(tmp_path: Path) -> None:
    http = AgentHTTP(tmp_path / "nothing.sock")
    with pytest.raises(DaemonUnreachableError) as missing:
        await http.request("GET", "/task")
    assert str(missing.value) == (
        f"the agent socket {tmp_path / 'nothing.sock'} does not answer: No such file or directory"
    )
    await http.close()

    deaf = tmp_path / "deaf.sock"  # a socket file nobody listens on any more
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(deaf))
    http = AgentHTTP(deaf)
    with pytest.raises(DaemonUnreachableError, match="does not answer: Connection refused$"):
        await http.request("POST", "/tools/get_alerts", b"{}")
    await http.close()
