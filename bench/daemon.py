"""The daemon's figures for ``make bench`` (DESIGN.md §11), each next to a same-run reference.

* ``start``: ``srez-daemon`` process start to a 200 from ``/api/health`` on loopback, median of 5,
  next to a bare aiohttp server started the same way (target under 0.4 s); ``run_loaded_s`` is
  the time until the run itself is loaded and its agent started (phase past ``starting``).
* ``rss_idle_mb``: the daemon's resident memory with the simulator loaded and the agent phase
  idle, next to the bare server's, and the bare server's with pydantic loaded (the floor of a
  daemon whose contract types are pydantic models; target under 45 MB).
* ``exec``: round trip of ``POST /api/exec`` running ``true``, p50/p99 over 200, next to spawning
  ``true`` in this process (the floor; target within 0.5 ms of it).
* ``health_during_exec``: the slowest of 100 health requests sent while a 2 s exec runs (target
  under 20 ms: a long exec must never block the loop).
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
from typing import Any

import aiohttp
import psutil

from srez_daemon.protocol import RunManifest

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]
BARE_SERVER = """
import sys
from aiohttp import web
async def health(request):
    return web.json_response({"status": "ok"})
app = web.Application()
app.router.add_get("/api/health", health)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
"""
PYDANTIC_LINES = """
from pydantic import BaseModel
class Health(BaseModel):
    status: str
Health.model_validate({"status": "ok"})
"""
BARE_PYDANTIC_SERVER = BARE_SERVER.replace(
    "from aiohttp import web", "from aiohttp import web" + PYDANTIC_LINES
)
"""The bare server with pydantic loaded and one model built: the floor of any daemon that uses
pydantic (the daemon's contract types are pydantic models)."""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_healthy(url: str, deadline_s: float = 15) -> float:
    started = time.perf_counter()
    async with aiohttp.ClientSession() as http:
        while time.perf_counter() - started < deadline_s:
            try:
                async with http.get(url) as resp:
                    if resp.status == 200:
                        return time.perf_counter() - started
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.005)
    msg = f"{url} never became healthy"
    raise TimeoutError(msg)


async def _wait_loaded(url: str, since: float, deadline_s: float = 15) -> float:
    """Seconds from spawn until health reports the run past ``starting``."""
    async with aiohttp.ClientSession() as http:
        while time.perf_counter() - since < deadline_s:
            async with http.get(url) as resp:
                if (await resp.json())["phase"] != "starting":
                    return time.perf_counter() - since
            await asyncio.sleep(0.005)
    msg = f"{url} never left the starting phase"
    raise TimeoutError(msg)


class _Daemon:
    def __init__(self, root: Path) -> None:
        self.root = root
        run = root / "run"
        run.mkdir(parents=True)
        manifest = RunManifest(
            run_id="20261130T000000Z-0badc0de",
            task_id="sre-025",
            agent="bench",
            agent_spec="heuristic",
            model="none",
            backend="local",
            run_seed=0,
            srez_version="0",
            started_at="2026-11-30T00:00:00.000Z",
        )
        (run / "run.json").write_text(manifest.model_dump_json())
        self.token = secrets.token_urlsafe(32)
        (root / "token").write_text(self.token)
        self.port = _free_port()
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "VIRTUAL_ENV")}
        env.update(
            SREZ_RUN_DIR=str(run),
            SREZ_TOKEN_FILE=str(root / "token"),
            SREZ_HOST="127.0.0.1",
            SREZ_PORT=str(self.port),
            SREZ_AGENT_CMD=json.dumps(SLEEPER),
        )
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "srez_daemon", "--keep"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self.headers = {"Authorization": f"Bearer {self.token}", "X-Srez-Admin": "1"}

    def stop(self) -> None:
        for child in psutil.Process(self.proc.pid).children(recursive=True):
            child.kill()
        self.proc.terminate()
        self.proc.wait(10)


def _spawn_bare(port: int, server: str = BARE_SERVER) -> subprocess.Popen[bytes]:
    # Popen returns at once (fork + exec); what is timed is the wait for a healthy answer
    return subprocess.Popen(
        [sys.executable, "-c", server, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _start_figures(runs: int = 5) -> dict[str, Any]:
    daemon_s, loaded_s, bare_s, daemon_rss, bare_rss = [], [], [], [], []
    pydantic_rss: list[float] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            d = _Daemon(Path(tmp))
            try:
                daemon_s.append(await _wait_healthy(d.url + "/api/health"))
                loaded_s.append(await _wait_loaded(d.url + "/api/health", d.started))
                await asyncio.sleep(0.5)  # RSS with the simulator and the agent phase running
                daemon_rss.append(psutil.Process(d.proc.pid).memory_info().rss / 2**20)
            finally:
                d.stop()
        port = _free_port()
        proc = _spawn_bare(port)
        try:
            bare_s.append(await _wait_healthy(f"http://127.0.0.1:{port}/api/health"))
            bare_rss.append(psutil.Process(proc.pid).memory_info().rss / 2**20)
        finally:
            proc.terminate()
            proc.wait(10)
        port = _free_port()
        proc = _spawn_bare(port, BARE_PYDANTIC_SERVER)
        try:
            await _wait_healthy(f"http://127.0.0.1:{port}/api/health")
            pydantic_rss.append(psutil.Process(proc.pid).memory_info().rss / 2**20)
        finally:
            proc.terminate()
            proc.wait(10)
    daemon, bare = statistics.median(daemon_s), statistics.median(bare_s)
    return {
        "start": {
            "daemon_s": round(daemon, 3),
            "bare_aiohttp_s": round(bare, 3),
            "ratio": round(daemon / bare, 2),
            "target_s": 0.4,
            "run_loaded_s": round(statistics.median(loaded_s), 3),
        },
        "rss_idle_mb": {
            "daemon": round(statistics.median(daemon_rss), 1),
            "bare_aiohttp": round(statistics.median(bare_rss), 1),
            "bare_aiohttp_with_pydantic": round(statistics.median(pydantic_rss), 1),
            "target": 45,
        },
    }


async def _spawn_floor(n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec("true")
        await proc.wait()
        times.append(1000 * (time.perf_counter() - started))
    return times


async def _exec_figures(n: int = 200) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        d = _Daemon(Path(tmp))
        try:
            await _wait_healthy(d.url + "/api/health")
            async with aiohttp.ClientSession(headers=d.headers) as http:
                rtt = []
                for _ in range(n):
                    started = time.perf_counter()
                    async with http.post(
                        d.url + "/api/exec", json={"argv": ["true"], "timeout_s": 5}
                    ) as resp:
                        await resp.read()
                    rtt.append(1000 * (time.perf_counter() - started))
                floor = await _spawn_floor(n)
                long_exec = asyncio.ensure_future(
                    http.post(d.url + "/api/exec", json={"argv": ["sleep", "2"], "timeout_s": 10})
                )
                await asyncio.sleep(0.1)
                waits = []
                for _ in range(100):
                    started = time.perf_counter()
                    async with http.get(d.url + "/api/health") as resp:
                        await resp.read()
                    waits.append(1000 * (time.perf_counter() - started))
                    await asyncio.sleep(0.01)
                (await long_exec).release()
        finally:
            d.stop()
    rtt.sort()
    floor.sort()
    p50, floor50 = statistics.median(rtt), statistics.median(floor)
    return {
        "exec": {
            "p50_ms": round(p50, 3),
            "p99_ms": round(rtt[int(0.99 * (n - 1))], 3),
            "spawn_floor_p50_ms": round(floor50, 3),
            "over_floor_ms": round(p50 - floor50, 3),
            "target_over_floor_ms": 0.5,
        },
        "health_during_exec": {
            "max_ms": round(max(waits), 3),
            "p50_ms": round(statistics.median(waits), 3),
            "target_max_ms": 20,
        },
    }


async def daemon_figures() -> dict[str, Any]:
    """Every daemon figure, plus the live-stream figures when that bench is present."""
    figures: dict[str, Any] = {}
    figures.update(await _start_figures())
    figures.update(await _exec_figures())
    try:
        from bench.stream import stream_figures
    except ImportError:
        return figures
    figures["stream"] = await stream_figures()
    return figures
