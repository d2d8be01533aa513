"""The ``local`` backend's sandbox figures for ``make bench`` (:mod:`srez_daemon.sandbox`).

What the sandbox costs a run's start: the daemon's :class:`~srez_daemon.supervisor.AgentProcess`
starting the agent and the agent's first request reaching the agent socket, with and without
the bubblewrap sandbox the daemon builds for a run, in this process, alternating, 15 rounds each
(medians). Two agents: ``true`` (the bare cost of a process) and the built-in agent's interpreter
importing ``srez_daemon.agent`` before it connects (what a run pays). Also the cost of killing
the sandbox at the end of the agent phase. Target: the sandbox adds under 50 ms to a start.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from srez_daemon.protocol.sandbox import find_bwrap
from srez_daemon.sandbox import Sandbox, build_sandbox
from srez_daemon.supervisor import AgentProcess

ROUNDS: Final = 15
TARGET_OVERHEAD_MS: Final = 50.0
CONNECT = (
    "import srez_daemon.agent.__main__, os, socket; "
    "s = socket.socket(socket.AF_UNIX); s.connect(os.environ['SREZ_AGENT_SOCKET']); s.send(b'x')"
)


async def _start_ms(
    argv: list[str], sandbox: Sandbox | None, sock: Path, server: asyncio.Queue[float], tmp: Path
) -> tuple[float, float]:
    """(ms until the agent's first byte reached the socket, or it exited; ms to kill it)."""
    env = {"PATH": os.environ.get("PATH", ""), "SREZ_AGENT_SOCKET": str(sock)}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    agent = AgentProcess(argv, env, tmp / "agent.log", sandbox=sandbox)
    started = time.perf_counter()
    await agent.start(tmp)
    if "-c" in argv:
        reached = await asyncio.wait_for(server.get(), 30)
    else:
        await agent.wait()
        reached = time.perf_counter()
    killing = time.perf_counter()
    await agent.kill()
    return 1000 * (reached - started), 1000 * (time.perf_counter() - killing)


async def sandbox_figures() -> dict[str, Any]:
    """Agent start with and without the sandbox; a reason instead when bwrap is not here."""
    bwrap = find_bwrap(os.environ)
    if bwrap is None:
        return {"skipped": "bwrap is not installed (apt-get install bubblewrap)"}
    from srez_client.backends.local.sandbox import bwrap_problem

    problem = bwrap_problem(bwrap)
    if problem is not None:
        return {"skipped": problem}
    tmp = Path(tempfile.mkdtemp(prefix="srez-bench-sandbox-"))
    try:
        (tmp / "live").mkdir()
        sock = tmp / "live" / "agent.sock"
        arrivals: asyncio.Queue[float] = asyncio.Queue()

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(1)
            arrivals.put_nowait(time.perf_counter())
            writer.close()

        server = await asyncio.start_unix_server(on_connect, path=str(sock))
        true = shutil.which("true") or "/bin/true"
        agents = {"true": [true], "srez_agent_import": [sys.executable, "-c", CONNECT]}
        out: dict[str, Any] = {}
        async with server:
            for name, argv in agents.items():
                box = build_sandbox(
                    bwrap, socket=sock, command=argv, agent_spec="bench", model="none",
                    environ=os.environ,
                )  # fmt: skip
                bare, boxed, kills = [], [], []
                await _start_ms(argv, box, sock, arrivals, tmp)  # warm caches both ways
                await _start_ms(argv, None, sock, arrivals, tmp)
                for _ in range(ROUNDS):
                    boxed_ms, kill_ms = await _start_ms(argv, box, sock, arrivals, tmp)
                    bare_ms, _ = await _start_ms(argv, None, sock, arrivals, tmp)
                    boxed.append(boxed_ms)
                    bare.append(bare_ms)
                    kills.append(kill_ms)
                b, s = statistics.median(bare), statistics.median(boxed)
                out[name] = {
                    "bare_ms": round(b, 2),
                    "bubblewrap_ms": round(s, 2),
                    "overhead_ms": round(s - b, 2),
                    "ratio": round(s / b, 3),
                    "kill_ms": round(statistics.median(kills), 2),
                }
        overhead = out["srez_agent_import"]["overhead_ms"]
        out["target_overhead_ms"] = TARGET_OVERHEAD_MS
        out["overhead_vs_target"] = round(overhead / TARGET_OVERHEAD_MS, 3)
        out["rounds"] = ROUNDS
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    import json

    print(json.dumps(asyncio.run(sandbox_figures()), indent=2))
