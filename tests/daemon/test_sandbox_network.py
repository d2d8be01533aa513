"""What an agent in the ``local`` sandbox reaches on the network (docs/security.md, A13): a
built-in model agent reaches its model relay through the forwarded socket and nothing else (no
other loopback port of the host: no view, no daemon, no other run); a custom command given a
model keeps the host's network, as documented (the control)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from srez_daemon.sandbox import MODEL_SOCKET, build_sandbox, relay_address
from srez_daemon.supervisor import AgentProcess

BWRAP = Path("/usr/bin/bwrap")
PROBE = """
import http.client, json, os, socket, sys
relay_port, other_port = int(sys.argv[1]), int(sys.argv[2])
seen = {}
def tcp(host, port):
    try:
        socket.create_connection((host, port), timeout=2).close()
        return "reached"
    except OSError as e:
        return type(e).__name__
seen["relay_tcp"] = tcp("127.0.0.1", relay_port)
seen["other_tcp"] = tcp("127.0.0.1", other_port)
path = os.environ.get("SREZ_LLM_SOCKET")
if path:
    from srez_daemon.agent.model_client import _UnixConnection
    conn = _UnixConnection(path, "127.0.0.1", relay_port, timeout=5)
    conn.request("POST", "/v1/chat/completions", b"{}", {"Content-Type": "application/json"})
    seen["relay_socket"] = conn.getresponse().read().decode()
print("PROBE " + json.dumps(seen), flush=True)
"""


@pytest.fixture
async def relay_and_other() -> AsyncIterator[tuple[int, int]]:
    """A stand-in model relay and another loopback service of the host (a view, a daemon)."""

    async def answer(request: web.Request) -> web.Response:
        return web.json_response({"from": "relay", "path": request.path})

    servers = []
    for _ in range(2):
        app = web.Application()
        app.router.add_post("/v1/chat/completions", answer)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        servers.append(server)
    yield servers[0].port or 0, servers[1].port or 0
    for server in servers:
        await server.close()


async def _probe(tmp_path: Path, agent_spec: str, relay: int, other: int) -> dict[str, str]:
    (tmp_path / "live").mkdir()
    sock = tmp_path / "live" / "agent.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock))
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    command = [sys.executable, str(script), str(relay), str(other)]
    environ = {**os.environ, "SREZ_LLM_API_BASE": f"http://127.0.0.1:{relay}/v1"}
    box = build_sandbox(
        BWRAP,
        socket=sock,
        command=command,
        agent_spec=agent_spec,
        model="openai/m",
        environ=environ,
        model_socket=tmp_path / "live" / "model.sock" if agent_spec == "llm" else None,
    )
    agent = AgentProcess(command, environ, tmp_path / "agent.log", sandbox=box)
    try:
        await agent.start(tmp_path)
        async with asyncio.timeout(30):
            await agent.wait()
    finally:
        await agent.kill()
        listener.close()
    log = (tmp_path / "agent.log").read_text()
    (line,) = [x for x in log.splitlines() if x.startswith("PROBE ")]
    return dict(json.loads(line.removeprefix("PROBE ")))


async def test_a_builtin_model_agent_reaches_its_relay_alone(
    tmp_path: Path, bwrap: None, relay_and_other: tuple[int, int]
) -> None:
    relay, other = relay_and_other
    seen = await _probe(tmp_path, "llm", relay, other)
    assert json.loads(seen["relay_socket"]) == {"from": "relay", "path": "/v1/chat/completions"}
    assert seen["other_tcp"] != "reached" and seen["relay_tcp"] != "reached", seen
    assert not (tmp_path / "live" / "model.sock").exists()  # removed with the agent


async def test_a_custom_command_given_a_model_keeps_the_hosts_network(
    tmp_path: Path, bwrap: None, relay_and_other: tuple[int, int]
) -> None:
    """The control: the probe above can see a reachable port when one is reachable."""
    relay, other = relay_and_other
    seen = await _probe(tmp_path, "cmd:probe", relay, other)
    assert seen["other_tcp"] == "reached" and "relay_socket" not in seen, seen


def test_only_a_plain_loopback_relay_is_forwarded() -> None:
    """A model server elsewhere needs the network: the sandbox then keeps it."""
    assert relay_address({"SREZ_LLM_API_BASE": "http://127.0.0.1:8080/v1"}) == ("127.0.0.1", 8080)
    for base in ("https://127.0.0.1:8080/v1", "http://10.0.0.5:8080/v1", "http://[::1", ""):
        assert relay_address({"SREZ_LLM_API_BASE": base}) is None, base
    box = build_sandbox(
        BWRAP,
        socket=Path("/tmp/a.sock"),  # noqa: S108 - never created: the command line only
        command=["x"],
        agent_spec="llm",
        model="openai/m",
        environ={"SREZ_LLM_API_BASE": "https://api.example.org/v1"},
        model_socket=Path("/tmp/m.sock"),  # noqa: S108
    )
    assert box.network and box.model_socket is None
    assert str(MODEL_SOCKET) not in box.argv(["x"])
