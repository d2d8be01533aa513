"""The MCP server's figures for ``make bench`` (:mod:`srez_client.integrations.mcp`).

* ``tool_call``: one tool call through ``srez mcp --socket`` (stdio, the server an ``mcp:NAME``
  run's configuration starts) against the same call made directly on the agent socket, both on a
  live ``srez-daemon``, in turn within each episode (every call costs a step, so the episodes of
  a 40-step task are used up one after another); medians, the added milliseconds and the ratio.
  The MCP side is timed twice: with a minimal JSON-RPC client (newline-delimited JSON on the
  server's pipes, what the server itself adds: the figure held to the target of under 1 ms), and
  with the ``mcp`` library's own ``Client`` (which adds its client's cost on top). Every answer
  timed is checked to be a valid observation.
* ``episode_here``: the scripted expert's trajectory over ``srez mcp --task`` (stdio, an episode
  in the server's process, filed in a results folder), from the server's start to the client's
  exit (the run graded and written by then), against the same trajectory run inline
  (``run_inline`` of a replay agent) in this process.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import aiohttp

from srez_daemon.protocol import RunManifest

TASK: Final = "sre-002"  # 40 steps: room for 19 timed calls of each kind per episode
EPISODES: Final = 6
TARGET_ADDED_MS: Final = 1.0
SLEEPER: Final = [sys.executable, "-c", "import time; time.sleep(600)"]
READS: Final = ("get_status", "get_config", "get_alerts", "list_services")
KINDS: Final = ("direct", "raw", "library")
"""A direct socket call, one through the server by a minimal client, one by the library's."""
SCRATCH: Final = "/dev/shm"
"""Where the daemons' run folders go when it exists (a tmpfs): the dialog's fsyncs, which
dominate a call on a disk and vary with the machine's load, then cost little, so the
difference the server makes is not lost in their noise."""


def _args(tool: str) -> dict[str, Any]:
    return {"service": "payments"} if tool in ("get_status", "get_config") else {}


def _env() -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "VIRTUAL_ENV", "PYTHONPATH")
    return {k: v for k, v in os.environ.items() if k in keep}


def _start_daemon(root: Path) -> subprocess.Popen[bytes]:
    run = root / "run"
    run.mkdir(parents=True)
    manifest = RunManifest(
        run_id="20261130T000000Z-0badc0de",
        task_id=TASK,
        agent="bench",
        agent_spec="cmd:bench",
        agent_cmd=tuple(SLEEPER),
        model="none",
        backend="local",
        run_seed=0,
        srez_version="0",
        started_at="2026-11-30T00:00:00.000Z",
    )
    (run / "run.json").write_text(manifest.model_dump_json())
    (root / "token").write_text(secrets.token_urlsafe(32))
    env = _env() | {
        "SREZ_RUN_DIR": str(run),
        "SREZ_TOKEN_FILE": str(root / "token"),
        "SREZ_HOST": "127.0.0.1",
        "SREZ_PORT": "0",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "srez_daemon"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


async def _ready(http: aiohttp.ClientSession, deadline_s: float = 30) -> None:
    started = time.perf_counter()
    while time.perf_counter() - started < deadline_s:
        try:
            async with http.get("http://agent/task") as resp:
                if resp.status == 200:
                    return
        except (aiohttp.ClientError, OSError):
            pass
        await asyncio.sleep(0.02)
    msg = "the agent socket never answered GET /task"
    raise TimeoutError(msg)


class _RawClient:
    """A minimal MCP client: JSON-RPC lines on the server's stdin and stdout, legacy handshake."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    @classmethod
    async def start(cls, sock: Path) -> _RawClient:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "srez_client.integrations.mcp", "--socket", str(sock),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=_env(),
        )  # fmt: skip
        client = cls(proc)
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": _INFO}
        await client.request("initialize", hello)
        await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return client

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        answer = json.loads(await self.proc.stdout.readline())
        assert answer.get("id") == self.next_id, answer
        result = answer["result"]
        assert isinstance(result, dict)
        return result

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()


_INFO: Final = {"name": "srez-bench", "version": "1"}


async def _episode(root: Path, times: dict[str, list[float]]) -> None:
    from mcp.client.stdio import stdio_client

    from mcp import Client, StdioServerParameters

    proc = _start_daemon(root)
    sock = root / "run" / "agent.sock"
    try:
        connector = aiohttp.UnixConnector(path=str(sock))
        async with aiohttp.ClientSession(connector=connector) as http:
            await _ready(http)
            server = StdioServerParameters(
                command=sys.executable,
                args=["-m", "srez_client.integrations.mcp", "--socket", str(sock)],
                env=_env(),
            )
            raw = await _RawClient.start(sock)
            async with Client(stdio_client(server)) as client:
                steps_left, turn = 40, 0
                while steps_left > 3:
                    tool = READS[turn % len(READS)]
                    taken: dict[str, float] = {}
                    answers: list[dict[str, Any]] = []
                    for kind in KINDS[turn % 3 :] + KINDS[: turn % 3]:  # each goes first in turn
                        started = time.perf_counter()
                        if kind == "direct":
                            async with http.post(
                                f"http://agent/tools/{tool}", json=_args(tool)
                            ) as resp:
                                answer = await resp.json()
                        elif kind == "raw":
                            rpc = await raw.request(
                                "tools/call", {"name": tool, "arguments": _args(tool)}
                            )
                            text, error = rpc["content"][0]["text"], rpc["isError"]
                        else:
                            result = await client.call_tool(tool, _args(tool))
                            text, error = result.content[0].text, result.is_error  # type: ignore[union-attr]
                        taken[kind] = 1000 * (time.perf_counter() - started)
                        if kind != "direct":
                            answer = json.loads(text) | {"is_error": error}
                        answers.append(answer)
                    if any(not a["ok"] or a.get("is_error") for a in answers):
                        msg = f"{tool} failed: {answers}"
                        raise RuntimeError(msg)
                    if turn > 0:  # the first of each: connections and caches warming up
                        for kind, ms in taken.items():
                            times[kind].append(ms)
                    steps_left = min(int(a["steps_left"]) for a in answers)
                    turn += 1
            await raw.close()
    finally:
        proc.terminate()
        proc.wait(10)


def _expert_actions() -> list[dict[str, Any]]:
    from srez_env.agents import make_agent
    from srez_env.env import SREEnv
    from srez_env.tasks import load_tasks

    task = load_tasks([TASK])[0]
    env = SREEnv(task)
    observation: Any = env.reset()
    oracle = make_agent("scripted", task)
    actions = []
    while not env.done:
        action = oracle.act(observation)
        assert isinstance(action, dict)
        actions.append(action)
        observation = env.step(action).observation
    return actions


async def _episode_here(results: Path, actions: list[dict[str, Any]]) -> tuple[float, float]:
    """(seconds from the server's start to the client's exit, of which connecting)."""
    from mcp.client.stdio import stdio_client

    from mcp import Client, StdioServerParameters

    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "srez_client.cli", "mcp", "--task", TASK, "--results", str(results)],
        env=_env(),
    )
    started = time.perf_counter()
    async with Client(stdio_client(server)) as client:
        connected = time.perf_counter() - started
        for action in actions:
            result = await client.call_tool(action["tool"], action["args"])
            if result.is_error:
                msg = f"{action} failed: {result.content}"
                raise RuntimeError(msg)
    return time.perf_counter() - started, connected


def _inline_s(root: Path, actions: list[dict[str, Any]]) -> float:
    from srez_client.backends.inline.host import run_inline
    from srez_env.tasks import load_tasks

    root.mkdir(parents=True)
    replay = root / "actions.jsonl"
    replay.write_text("".join(json.dumps(a) + "\n" for a in actions))
    task = load_tasks([TASK])[0]
    started = time.perf_counter()
    run = run_inline(task, f"replay:{replay}", 0, root / "results")
    elapsed = time.perf_counter() - started
    assert run.summary.passed, run.summary
    return elapsed


def _scratch() -> str | None:
    return SCRATCH if Path(SCRATCH).is_dir() else None


async def mcp_figures() -> dict[str, Any]:
    """Both figures; a reason instead when the ``mcp`` library is not installed."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        return {"skipped": "the mcp library is not installed (pip install 'srez[mcp]')"}
    times: dict[str, list[float]] = {"direct": [], "raw": [], "library": []}
    with tempfile.TemporaryDirectory(dir=_scratch()) as runs:
        for i in range(EPISODES):
            await _episode(Path(runs) / f"episode-{i}", times)
    with tempfile.TemporaryDirectory() as tmp:
        actions = _expert_actions()
        here = [await _episode_here(Path(tmp) / f"here-{i}", actions) for i in range(3)]
        inline = [_inline_s(Path(tmp) / f"inline-{i}", actions) for i in range(3)]
    direct, over_mcp = statistics.median(times["direct"]), statistics.median(times["raw"])
    over_library = statistics.median(times["library"])
    here_s = statistics.median(s for s, _ in here)
    inline_s = statistics.median(inline)
    return {
        "tool_call": {
            "calls_each": len(times["direct"]),
            "direct_socket_ms": round(direct, 3),
            "mcp_stdio_ms": round(over_mcp, 3),
            "added_ms": round(over_mcp - direct, 3),
            "ratio": round(over_mcp / direct, 2),
            "mcp_library_client_ms": round(over_library, 3),
            "added_ms_with_library_client": round(over_library - direct, 3),
            "target_added_ms": TARGET_ADDED_MS,
            "added_vs_target": round((over_mcp - direct) / TARGET_ADDED_MS, 3),
        },
        "episode_here": {
            "task": TASK,
            "calls": len(actions),
            "mcp_task_stdio_s": round(here_s, 3),
            "of_which_start_and_connect_s": round(statistics.median(c for _, c in here), 3),
            "inline_s": round(inline_s, 3),
            "ratio": round(here_s / inline_s, 1),
        },
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(mcp_figures()), indent=2))
