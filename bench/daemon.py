"""The daemon's figures for ``make bench`` (docs/design.md §11), each next to a same-run reference.

* ``start``: ``srez-daemon`` process start to a 200 from ``/api/health`` on loopback, median of 5,
  next to a bare aiohttp server started the same way (target under 0.4 s); ``run_loaded_s`` is
  the time until the run itself is loaded and its agent started (phase past ``starting``).
* ``rss_idle_mb``: the daemon's resident memory with the simulator loaded and the agent phase
  idle, next to the bare server's, and the bare server's with pydantic loaded (the floor of a
  daemon whose contract types are pydantic models; target 48 MB, within 2 MB of that floor).
* ``exec``: round trip of ``POST /api/exec`` running ``echo``, p50/p99 over 200 one after
  another, next to a minimal aiohttp daemon (:mod:`bench.minimal_daemon`; target within 0.25 ms
  of it) and to spawning ``echo`` in this process (the floor).
* ``exec_throughput``: execs answered per second with 16 clients sending back to back for 2 s,
  and how many were refused 429 (target none), next to the minimal daemon; each round's figure
  too, and with SWE-ReX each round's ratio to it (the target holds in every round).
* With ``SREZ_BENCH_SWEREX`` naming a ``swerex-remote`` program (SWE-ReX 1.4.0 installed in a
  venv of its own), the same figures for it in the same rounds (targets: exec p50 at most 0.7x
  its, throughput at least 1.9x its) and its idle RSS.
* ``health_during_exec``: the slowest of 100 health requests sent while a 2 s exec runs (target
  under 20 ms: a long exec must never block the loop).

No figure is built from error answers: exec is timed only once the run has left ``starting`` and
one exec has succeeded, and every answer timed is checked (a non-200, or a 200 without the
command's output, stops the bench with ``BenchError``; only the throughput figure counts 429s,
which it reports).
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
from collections.abc import Callable
from dataclasses import dataclass
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


async def _wait_healthy(
    url: str, deadline_s: float = 60, headers: dict[str, str] | None = None
) -> float:
    started = time.perf_counter()
    async with aiohttp.ClientSession(headers=headers) as http:
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


async def _wait_loaded(url: str, since: float, deadline_s: float = 60) -> float:
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
        keep = ("PATH", "HOME", "LANG", "VIRTUAL_ENV", "PYTHONPATH")
        env = {k: v for k, v in os.environ.items() if k in keep}
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
            "over_bare_aiohttp_with_pydantic": round(
                statistics.median(daemon_rss) - statistics.median(pydantic_rss), 1
            ),
            "target": 48,
        },
    }


async def _spawn_floor(n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec("echo", "hi", stdout=subprocess.DEVNULL)
        await proc.wait()
        times.append(1000 * (time.perf_counter() - started))
    return times


class BenchError(RuntimeError):
    """An answer a figure would have been built from was not a success: the bench stops."""


@dataclass
class _ExecTarget:
    """One server that runs ``echo WORD``: its exec route and the shape of its requests."""

    name: str
    url: str
    headers: dict[str, str]
    body: Callable[[list[str]], dict[str, Any]]
    proc: subprocess.Popen[bytes]

    async def exec(self, http: aiohttp.ClientSession, word: str) -> int:
        """Runs ``echo word``; returns 200, or 429 (counted by the caller). Any other answer, or
        a 200 without the word on stdout, raises ``BenchError``."""
        async with http.post(self.url, json=self.body(["echo", word])) as resp:
            raw = await resp.read()
            if resp.status == 429:
                return 429
            if resp.status != 200:
                msg = f"{self.name}: exec answered {resp.status}: {raw[:300]!r}"
                raise BenchError(msg)
        if json.loads(raw).get("stdout") != f"{word}\n":
            msg = f"{self.name}: exec answered 200 without its output: {raw[:300]!r}"
            raise BenchError(msg)
        return 200

    def stop(self) -> None:
        for child in psutil.Process(self.proc.pid).children(recursive=True):
            child.kill()
        self.proc.terminate()
        self.proc.wait(10)


async def _latencies(target: _ExecTarget, n: int) -> list[float]:
    """Round trips of ``n`` execs one after another, in ms; a single non-200 raises."""
    rtt = []
    async with aiohttp.ClientSession(headers=target.headers) as http:
        for i in range(n):
            started = time.perf_counter()
            status = await target.exec(http, f"w{i}")
            rtt.append(1000 * (time.perf_counter() - started))
            if status != 200:
                msg = f"{target.name}: exec refused with {status} with one client"
                raise BenchError(msg)
    return rtt


async def _throughput(target: _ExecTarget, clients: int, seconds: float) -> tuple[float, int]:
    """Execs answered 200 per second with ``clients`` clients sending back to back, and how
    many were refused 429 (any other answer raises)."""
    ok = refused = 0
    deadline = time.perf_counter() + seconds

    async def client(n: int) -> None:
        nonlocal ok, refused
        async with aiohttp.ClientSession(headers=target.headers) as http:
            i = 0
            while time.perf_counter() < deadline:
                i += 1
                if await target.exec(http, f"c{n}.{i}") == 200:
                    ok += 1
                else:
                    refused += 1

    started = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    return ok / (time.perf_counter() - started), refused


def _start_minimal() -> _ExecTarget:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("minimal_daemon.py")), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/api/exec"
    return _ExecTarget("minimal", url, {}, lambda argv: {"argv": argv}, proc)


def _start_swerex(program: str) -> _ExecTarget:
    port, token = _free_port(), secrets.token_hex(16)
    argv = [program, "--host", "127.0.0.1", "--port", str(port), "--auth-token", token]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}/execute"
    body: Callable[[list[str]], dict[str, Any]] = lambda argv: {"command": argv, "timeout": 5}  # noqa: E731
    return _ExecTarget("swe-rex", url, {"X-API-Key": token}, body, proc)


async def _ready(target: _ExecTarget, health: str) -> None:
    """Waits for ``health`` to answer 200, then for one exec to succeed (a server that answers
    health before it can exec is not timed until it can)."""
    await _wait_healthy(health, headers=target.headers)
    async with aiohttp.ClientSession(headers=target.headers) as http:
        if await target.exec(http, "ready") != 200:
            msg = f"{target.name}: the first exec was refused"
            raise BenchError(msg)


async def _exec_figures(n: int = 200, rounds: int = 3, clients: int = 16) -> dict[str, Any]:
    """Exec latency and throughput for the daemon, the minimal daemon and (when
    ``SREZ_BENCH_SWEREX`` names its ``swerex-remote``) SWE-ReX, in alternating rounds."""
    swerex_program = os.environ.get("SREZ_BENCH_SWEREX")
    with tempfile.TemporaryDirectory() as tmp:
        d = _Daemon(Path(tmp))
        ours = _ExecTarget("srez", d.url + "/api/exec", d.headers, _srez_body, d.proc)
        targets = [ours, _start_minimal()]
        if swerex_program:
            targets.append(_start_swerex(swerex_program))
        swerex_rss = None
        try:
            await _wait_healthy(d.url + "/api/health")
            await _wait_loaded(d.url + "/api/health", d.started)
            await _ready(ours, d.url + "/api/health")
            await _ready(targets[1], targets[1].url.replace("/exec", "/health"))
            if swerex_program:
                await _ready(targets[2], targets[2].url.replace("/execute", "/is_alive"))
                await asyncio.sleep(0.5)
                swerex_rss = psutil.Process(targets[2].proc.pid).memory_info().rss / 2**20
            p50: dict[str, list[float]] = {t.name: [] for t in targets}
            p99: dict[str, list[float]] = {t.name: [] for t in targets}
            rate: dict[str, list[float]] = {t.name: [] for t in targets}
            refused: dict[str, list[int]] = {t.name: [] for t in targets}
            for r in range(rounds):
                for target in targets[r % len(targets) :] + targets[: r % len(targets)]:
                    rtt = sorted(await _latencies(target, n))
                    p50[target.name].append(statistics.median(rtt))
                    p99[target.name].append(rtt[int(0.99 * (n - 1))])
                    ok_per_s, no = await _throughput(target, clients, 2.0)
                    rate[target.name].append(ok_per_s)
                    refused[target.name].append(no)
            floor = await _spawn_floor(n)
            waits = await _health_during_exec(d)
        finally:
            for target in targets:
                target.stop()
    med = {name: statistics.median(values) for name, values in p50.items()}
    thr = {name: statistics.median(values) for name, values in rate.items()}
    floor50 = statistics.median(floor)
    exec_fig: dict[str, Any] = {
        "p50_ms": round(med["srez"], 3),
        "p99_ms": round(statistics.median(p99["srez"]), 3),
        "minimal_p50_ms": round(med["minimal"], 3),
        "over_minimal_ms": round(med["srez"] - med["minimal"], 3),
        "target_over_minimal_ms": 0.25,
        "spawn_floor_p50_ms": round(floor50, 3),
        "over_floor_ms": round(med["srez"] - floor50, 3),
        "rounds": rounds,
    }
    thr_fig: dict[str, Any] = {
        "clients": clients,
        "ok_per_s": round(thr["srez"]),
        "ok_per_s_by_round": [round(x) for x in rate["srez"]],
        "refused_429": sum(refused["srez"]),
        "minimal_ok_per_s": round(thr["minimal"]),
        "ratio_to_minimal": round(thr["srez"] / thr["minimal"], 2),
        "target_refused_429": 0,
    }
    if swerex_program:
        exec_fig |= {
            "swerex_p50_ms": round(med["swe-rex"], 3),
            "ratio_to_swerex": round(med["srez"] / med["swe-rex"], 2),
            "target_ratio_to_swerex": 0.7,
        }
        thr_fig |= {
            "swerex_ok_per_s": round(thr["swe-rex"]),
            "swerex_refused_429": sum(refused["swe-rex"]),
            "ratio_to_swerex": round(thr["srez"] / thr["swe-rex"], 2),
            # the target holds in every round, not only in the median one
            "ratio_to_swerex_by_round": [
                round(ours / theirs, 2)
                for ours, theirs in zip(rate["srez"], rate["swe-rex"], strict=True)
            ],
            "target_ratio_to_swerex": 1.9,
        }
    return {
        "exec": exec_fig,
        "exec_throughput": thr_fig,
        "swerex": {
            "measured": bool(swerex_program),
            "idle_rss_mb": None if swerex_rss is None else round(swerex_rss, 1),
            "how": "SREZ_BENCH_SWEREX names swerex-remote (swe-rex 1.4.0 in its own venv)",
        },
        "health_during_exec": {
            "max_ms": round(max(waits), 3),
            "p50_ms": round(statistics.median(waits), 3),
            "target_max_ms": 20,
        },
    }


def _srez_body(argv: list[str]) -> dict[str, Any]:
    return {"argv": argv, "timeout_s": 5}


async def _health_during_exec(d: _Daemon) -> list[float]:
    """Health round trips (ms) while a 2 s exec runs; every answer must be a 200."""
    async with aiohttp.ClientSession(headers=d.headers) as http:
        long_exec = asyncio.ensure_future(
            http.post(d.url + "/api/exec", json={"argv": ["sleep", "2"], "timeout_s": 10})
        )
        await asyncio.sleep(0.1)
        waits = []
        for _ in range(100):
            started = time.perf_counter()
            async with http.get(d.url + "/api/health") as resp:
                await resp.read()
                if resp.status != 200:
                    msg = f"health answered {resp.status} during an exec"
                    raise BenchError(msg)
            waits.append(1000 * (time.perf_counter() - started))
            await asyncio.sleep(0.01)
        resp = await long_exec
        if resp.status != 200:
            msg = f"the 2 s exec answered {resp.status}"
            raise BenchError(msg)
        resp.release()
    return waits


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
