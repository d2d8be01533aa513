"""``srez mcp`` exercised by the ``mcp`` client library (issue 14): over stdio and streamable HTTP
against a live daemon's agent socket, and over stdio on an episode in its own process. A replayed
trajectory grades as ``srez eval`` (inline) grades it and leaves the same tool record."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from client_helpers import one_line_error
from mcp_kit import (
    SREZ,
    TASK,
    Action,
    expert,
    grade_of,
    inline_reference,
    server_env,
    tool_record,
    wrong,
)
from tests.daemon.daemonkit import SLEEPER, live_daemon

from srez_env.tasks import load_tasks

pytest.importorskip("mcp")

from httpx2 import AsyncClient, Response  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp_types import CallToolResult  # noqa: E402

from mcp import Client, StdioServerParameters  # noqa: E402
from srez_env.actions import openai_tools  # noqa: E402

TRAJECTORIES = {"expert": expert, "wrong": wrong}


def without_agent(grade: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in grade.items() if k != "agent"}


def stdio(*args: str) -> Client:
    params = StdioServerParameters(command=str(SREZ), args=["mcp", *args], env=server_env())
    return Client(stdio_client(params))


async def replay(client: Client, actions: list[Action]) -> list[CallToolResult]:
    return [await client.call_tool(a["tool"], a["args"]) for a in actions]


def text(result: CallToolResult) -> str:
    (block,) = result.content
    assert block.type == "text"
    return block.text


async def assert_served_as_the_task(client: Client) -> None:
    """The tools with the exact schemas of ``srez_env.actions``; the prompt twice."""
    listed = (await client.list_tools()).tools
    specs = [t["function"] for t in openai_tools()]
    assert [(t.name, t.description, t.input_schema) for t in listed] == [
        (s["name"], s["description"], s["parameters"]) for s in specs
    ]
    prompt = await client.get_prompt("incident")
    (message,) = prompt.messages
    assert message.content.type == "text" and message.content.text == client.instructions
    # the task's own page, and never its id (an id is a key to look the answer up by)
    title = next(t for t in load_tasks() if t.id == TASK).title
    assert f"Incident: {title}" in message.content.text and TASK not in message.content.text


@pytest.mark.parametrize("trajectory", sorted(TRAJECTORIES))
async def test_mcp_stdio_on_a_live_agent_socket_grades_and_records_like_inline_eval(
    tmp_path: Path, trajectory: str
) -> None:
    actions = TRAJECTORIES[trajectory]()
    reference = inline_reference(tmp_path / "inline", actions)
    with live_daemon(
        tmp_path / "daemon", task_id=TASK, agent_spec="cmd:mcp-proxy", recorded_cmd=SLEEPER
    ) as daemon:
        async with stdio("--socket", str(daemon.run_dir / "agent.sock")) as client:
            await assert_served_as_the_task(client)
            results = await replay(client, actions)
            after = await client.call_tool("get_alerts", {})
        daemon.wait_phase("done")
    assert tool_record(daemon.run_dir) == tool_record(reference)
    assert without_agent(grade_of(daemon.run_dir)) == without_agent(grade_of(reference))
    assert grade_of(daemon.run_dir)["passed"] is (trajectory == "expert")
    # an invalid call is a tool error whose text is the socket's observation; so is a refused one
    observations = [json.loads(text(r)) for r in results]
    assert [r.is_error for r in results] == [not o["ok"] for o in observations]
    assert observations[-1]["done"] and not results[-1].is_error
    assert after.is_error and json.loads(text(after))["error"]["code"] == "conflict"
    seen = json.dumps(observations)  # the grade is never shown to the agent
    assert all(word not in seen for word in ("reward", "passed", "resolved", "checks"))


async def test_mcp_errors_are_the_agent_sockets_own(tmp_path: Path) -> None:
    with live_daemon(
        tmp_path / "daemon", task_id=TASK, agent_spec="cmd:mcp-proxy", recorded_cmd=SLEEPER
    ) as daemon:
        sock = str(daemon.run_dir / "agent.sock")
        bad = {"service": "payments", "limit": "many", "surprise": 1}
        async with stdio("--socket", sock) as client:
            over_mcp = await client.call_tool("get_logs", bad)
            too_long = await client.call_tool("submit", {"summary": "x" * 501})
            strange = await client.call_tool("submit", {"summary": "ok", "extra": True})
        connector_body = await _post(sock, "/tools/get_logs", bad)
    # the same observation as a direct call (one step later: the MCP call used one)
    direct = json.loads(connector_body)
    mcp_observation = json.loads(text(over_mcp))
    assert over_mcp.is_error and mcp_observation["error"] == direct["error"]
    assert (mcp_observation["step"], direct["step"]) == (1, 2)
    for refused in (too_long, strange):
        assert refused.is_error
        assert json.loads(text(refused))["error"]["code"] == "bad_request"  # nothing executed


async def _post(sock: str, path: str, body: dict[str, Any]) -> bytes:
    import aiohttp

    async with (
        aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=sock)) as http,
        http.post(f"http://agent{path}", json=body) as resp,
    ):
        return await resp.read()


@dataclass(frozen=True)
class Served:
    url: str
    header: str
    """The ``Authorization`` header's value the server's stderr line gave."""


@asynccontextmanager
async def http_server(sock: Path, *args: str) -> AsyncIterator[Served]:
    """``srez mcp --socket SOCK --http [ARGS]``: its URL and header while it serves; SIGTERM after."""
    proc = await asyncio.create_subprocess_exec(
        str(SREZ), "mcp", "--socket", str(sock), "--http", *args,
        env=server_env(), stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        found = re.fullmatch(
            r"srez: MCP \(streamable HTTP\) at (http://127\.0\.0\.1:\d+/mcp); send the header"
            r' "Authorization: (Bearer [^"]+)"(?: with the token in .+)?\n',
            line,
        )
        assert found, line
        yield Served(found.group(1), found.group(2))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 30)


@asynccontextmanager
async def over_http(
    url: str, authorization: str | None, statuses: list[int] | None = None
) -> AsyncIterator[Client]:
    """The ``mcp`` library's client over streamable HTTP, sending ``authorization`` (the status
    of each HTTP answer it gets is added to ``statuses``)."""
    headers = {} if authorization is None else {"Authorization": authorization}

    async def seen(response: Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    async with (
        AsyncClient(headers=headers, event_hooks={"response": [seen]}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def test_mcp_streamable_http_on_loopback_grades_like_inline_eval(tmp_path: Path) -> None:
    actions = expert()
    reference = inline_reference(tmp_path / "inline", actions)
    with live_daemon(
        tmp_path / "daemon", task_id=TASK, agent_spec="cmd:mcp-http", recorded_cmd=SLEEPER
    ) as daemon:
        async with http_server(daemon.run_dir / "agent.sock") as served:
            token = served.header.removeprefix("Bearer ")
            assert re.fullmatch(r"[\w-]{43}", token)  # 32 random bytes, URL-safe base64
            async with over_http(served.url, served.header) as client:
                await assert_served_as_the_task(client)
                await replay(client, actions)
                after = await client.call_tool("wait", {"minutes": 1})
            daemon.wait_phase("done")
    assert after.is_error
    assert tool_record(daemon.run_dir) == tool_record(reference)
    assert without_agent(grade_of(daemon.run_dir)) == without_agent(grade_of(reference))
    assert grade_of(daemon.run_dir)["reward"]["total"] == 1.0


CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_alerts"}}
HELLO = {
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "probe", "version": "1"}},
}  # fmt: skip


async def test_mcp_http_refuses_a_request_without_its_token_before_the_agent_socket(
    tmp_path: Path,
) -> None:
    actions = expert()
    reference = inline_reference(tmp_path / "inline", actions)
    token_file = tmp_path / "mcp.token"
    with live_daemon(
        tmp_path / "daemon", task_id=TASK, agent_spec="cmd:mcp-http", recorded_cmd=SLEEPER
    ) as daemon:
        async with http_server(
            daemon.run_dir / "agent.sock", "--token-file", str(token_file)
        ) as served:
            assert served.header == "Bearer <token>"  # the line does not show it
            assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
            token = token_file.read_text().strip()
            other = f"Bearer {secrets.token_urlsafe(32)}"
            refused = [None, other, f"Bearer {token[:-1]}", token, f"bearer {token}"]
            for authorization in refused:  # none, another, almost, no scheme, the scheme's case
                statuses: list[int] = []
                with pytest.raises(BaseExceptionGroup, match="TaskGroup"):  # the library's
                    async with over_http(served.url, authorization, statuses) as client:
                        await client.call_tool("get_alerts", {})
                assert statuses and set(statuses) == {401}, statuses
                for body in (HELLO, CALL):
                    status, answer, challenge = await _raw_post(served.url, authorization, body)
                    assert (status, challenge) == (401, "Bearer")
                    assert answer.count(b"\n") == 0
                    assert json.loads(answer)["error"]["code"] == "unauthorized"
            # not one call reached the agent socket: the episode is the expert's alone
            async with over_http(served.url, f"Bearer {token}") as client:
                await replay(client, actions)
            daemon.wait_phase("done")
        assert not token_file.exists()  # removed as the server stopped
    assert tool_record(daemon.run_dir) == tool_record(reference)
    assert grade_of(daemon.run_dir)["reward"]["total"] == 1.0


async def _raw_post(
    url: str, authorization: str | None, body: dict[str, Any]
) -> tuple[int, bytes, str | None]:
    import aiohttp

    headers = {"Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    async with aiohttp.ClientSession() as http, http.post(url, json=body, headers=headers) as resp:
        return resp.status, await resp.read(), resp.headers.get("WWW-Authenticate")


@pytest.mark.parametrize("trajectory", sorted(TRAJECTORIES))
async def test_mcp_task_runs_an_episode_here_and_files_it_like_inline_eval(
    tmp_path: Path, trajectory: str
) -> None:
    actions = TRAJECTORIES[trajectory]()
    reference = inline_reference(tmp_path / "inline", actions)
    results = tmp_path / "results"
    async with stdio("--task", TASK, "--results", str(results), "--name", "probe") as client:
        await assert_served_as_the_task(client)
        await replay(client, actions)
        after = await client.call_tool("get_alerts", {})
    assert after.is_error
    (run_dir,) = (results / TASK / "none" / "probe").iterdir()
    assert tool_record(run_dir) == tool_record(reference)
    assert without_agent(grade_of(run_dir)) == without_agent(grade_of(reference))
    manifest = json.loads((run_dir / "run.json").read_text())
    assert (manifest["agent"], manifest["agent_spec"], manifest["backend"]) == (
        "probe",
        "mcp:probe",
        "inline",
    )
    reference_files = sorted(p.relative_to(reference).as_posix() for p in reference.rglob("*"))
    assert sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*")) == reference_files


async def test_mcp_task_client_that_leaves_without_submitting_ends_as_agent_exit(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    async with stdio("--task", TASK, "--results", str(results)) as client:
        await client.call_tool("get_alerts", {})
    (run_dir,) = (results / TASK / "none" / "mcp").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["end_reason"], summary["steps"]) == ("agent_exit", 1)
    assert grade_of(run_dir)["passed"] is False


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "one of the arguments --socket --task is required"),
        (["--socket", "S", "--task", TASK], "not allowed with"),
        (["--socket", "/nonexistent/agent.sock"], "No such file or directory"),
        (["--socket", "{here}"], "is not a unix socket"),
        (["--socket", "S", "--seed", "3"], "--seed is for --task"),
        (["--task", TASK, "--http"], "--http (and its --token-file) serve a run's agent socket"),
        (["--task", "sre-999"], "sre-999"),
        (["--task", TASK, "--name", "scripted"], "--name 'scripted'"),
        (["--socket", "S", "--http", "99999"], "must be a TCP port"),
        (["--socket", "S", "--token-file", "t"], "--token-file is the token of --http"),
        (["--task", TASK, "--token-file", "t"], "serve a run's agent socket"),
        (["--socket", "{sock}", "--http", "--token-file", "/nonexistent/t"], "--token-file"),
    ],
)
def test_srez_mcp_bad_input_is_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "agent.sock"))  # a socket: what is checked before its answer
    args = [
        a.replace("{here}", str(tmp_path)).replace("{sock}", listener.getsockname()) for a in args
    ]
    proc = subprocess.run(
        [str(SREZ), "mcp", *args], capture_output=True, text=True, env=server_env(),
        cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    listener.close()
    one_line_error(proc, needle)


def python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=server_env(),
        cwd=cwd, timeout=60, check=False,
    )  # fmt: skip


def test_srez_mcp_without_the_library_names_the_extra_in_one_line(tmp_path: Path) -> None:
    hidden = "import sys; sys.modules['mcp'] = None; from srez_client.cli import main; "
    for args in (["mcp", "--task", TASK], ["run", "--task", TASK, "--agent", "mcp:x",
                                          "--agent-cmd", "true {mcp_config}"]):  # fmt: skip
        proc = python(hidden + f"raise SystemExit(main({args!r}))", tmp_path)
        one_line_error(proc, "pip install 'srez[mcp]'")


def test_the_command_line_starts_without_importing_mcp(tmp_path: Path) -> None:
    proc = python(
        "import sys; from srez_client.cli import main; print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'uvicorn', 'starlette')))",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_sandbox_entry_point_imports_neither_the_command_line_nor_the_task_files(
    tmp_path: Path,
) -> None:
    """What ``python -m srez_client.integrations.mcp --socket`` imports to serve, stdio or HTTP:
    the sandbox hides the task files that ``srez`` (its command line) reads as it starts."""
    proc = python(
        "import sys, runpy; sys.argv = ['x', '--help']\n"
        "from srez_client.integrations.mcp import serve, http_token, agent_http\n"
        "try: runpy.run_module('srez_client.integrations.mcp', run_name='__main__')\n"
        "except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('srez_client.cli', 'srez_env.tasks',"
        " 'srez_env.generator', 'srez_client.backends'))), 'aiohttp' in sys.modules)",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[] True"


def test_the_sandbox_entry_point_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    for args, needle in (
        (["--socket", "/nonexistent/agent.sock"], "No such file or directory"),
        ([], "--socket"),
        (["--socket", "/nonexistent/agent.sock", "--token-file", "t"], "the token of --http"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "srez_client.integrations.mcp", *args], capture_output=True,
            text=True, env=server_env(), cwd=tmp_path, timeout=60, check=False,
        )  # fmt: skip
        one_line_error(proc, needle)
