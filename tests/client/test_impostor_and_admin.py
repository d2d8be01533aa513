"""docs/security.md §4 tests 7 (impostor daemon) and 8 (exec and pty gating), over real sockets.

7: twenty impostors, each a real HTTP server on loopback that behaves like a daemon that lost its
   token (accepts anything, accepts any bearer, refuses everything, hands out a forged grade);
   ``DaemonClient.verify`` must adopt none. Then a real takeover: a live run's daemon is killed
   with -9 and an impostor binds its very port; ``srez attach`` must refuse it and the mirrored
   ``result.json`` must be the real grade, never the forged one.
8: a view-only client (the default) calls exec 1000 times and the pty 50 times against a real
   daemon: 0 commands run. The same calls with the admin claim do run, so the count can fail.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from backend_contract import spec_for

from srez_client.backends.local.backend import LocalBackend
from srez_client.daemon_client.api import DaemonClient
from srez_client.errors import DaemonAuthError
from srez_client.lifecycle.run import collect

SREZ = Path(sys.executable).parent / "srez"
FORGED_REWARD = 0.987654321
Behaviour = Callable[[web.Request], Awaitable[web.Response]]


def _run_info() -> dict[str, object]:
    return {
        "run_id": "20260101T000000Z-deadbeef",
        "task": {"id": "sre-001", "title": "t", "difficulty": "easy", "brief": "b"},
        "model": "none",
        "agent": "random",
        "backend": "local",
        "phase": "done",
        "steps_used": 1,
        "step_budget": 30,
        "started_at": "2026-01-01T00:00:00Z",
    }


def _grade() -> dict[str, object]:
    return {"reward": {"total": FORGED_REWARD}, "resolved": True, "passed": True}


async def accept_anything(request: web.Request) -> web.Response:
    body = _grade() if request.path.endswith("grade") else _run_info()
    return web.json_response(body)


async def accept_any_bearer(request: web.Request) -> web.Response:
    if not request.headers.get("Authorization", "").startswith("Bearer "):
        return web.json_response({"error": {"code": "unauthorized", "message": "no"}}, status=401)
    return await accept_anything(request)


async def refuse_everything(_request: web.Request) -> web.Response:
    return web.json_response({"error": {"code": "unauthorized", "message": "no"}}, status=401)


async def accept_long_tokens(request: web.Request) -> web.Response:
    """Guesses at the token's shape: refuses short ones, accepts anything 40+ characters."""
    if len(request.headers.get("Authorization", "")) < 40:
        return web.json_response({"error": {"code": "unauthorized", "message": "no"}}, status=401)
    return await accept_anything(request)


async def forbid_then_accept(request: web.Request) -> web.Response:
    """Answers 403 (not 401) without a token, and 200 with any token."""
    if "Authorization" not in request.headers:
        return web.json_response({"error": {"code": "forbidden", "message": "no"}}, status=403)
    return await accept_anything(request)


IMPOSTORS: list[Behaviour] = [
    accept_anything,
    accept_any_bearer,
    refuse_everything,
    accept_long_tokens,
    forbid_then_accept,
]


async def _serve(behaviour: Behaviour, port: int = 0) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", behaviour)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    server = site._server
    assert server is not None
    sockets = getattr(server, "sockets", None) or []
    return runner, sockets[0].getsockname()[1]


async def test_sec7_twenty_impostors_none_adopted() -> None:
    token = "A" * 43  # what a real token looks like: 32 bytes, urlsafe base64
    adopted = 0
    refused = 0
    for i in range(20):
        runner, port = await _serve(IMPOSTORS[i % len(IMPOSTORS)])
        try:
            async with DaemonClient(f"http://127.0.0.1:{port}", token) as client:
                try:
                    await client.verify()
                    adopted += 1
                except DaemonAuthError:
                    refused += 1
        finally:
            await runner.cleanup()
    assert (adopted, refused) == (0, 20)


@pytest.fixture
def live_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LocalBackend, str]]:
    """A finished random-agent run whose daemon keeps serving."""
    monkeypatch.setenv("SREZ_STATE", str(tmp_path / "state"))
    backend = LocalBackend(tmp_path / "state")

    async def launch() -> str:
        handle = await backend.launch(spec_for(tmp_path / "results", "sre-003", "random"))
        await backend.wait(handle, 60)
        return handle.run_id

    run_id = asyncio.run(launch())
    yield backend, run_id

    async def remove() -> None:
        await backend.remove(await backend.get(run_id))

    asyncio.run(remove())


def test_sec7_a_takeover_of_the_port_is_refused_and_no_forged_grade_is_recorded(
    live_run: tuple[LocalBackend, str], tmp_path: Path
) -> None:
    backend, run_id = live_run

    async def takeover() -> tuple[web.AppRunner, int]:
        handle = await backend.get(run_id)
        url = await backend.endpoint(handle)
        port = int(url.rsplit(":", 1)[1])
        record = json.loads((tmp_path / "state" / "live" / run_id / "record.json").read_text())
        os.kill(record["pid"], signal.SIGKILL)
        for _ in range(100):  # the port is free once the kernel has reaped the listener
            try:
                return await _serve(accept_anything, port)
            except OSError:
                await asyncio.sleep(0.05)
        raise AssertionError("the port did not come free")

    async def scenario() -> subprocess.CompletedProcess[str]:
        runner, _ = await takeover()
        try:
            env = {**os.environ, "SREZ_STATE": str(tmp_path / "state")}
            attach = await asyncio.to_thread(
                subprocess.run,
                [str(SREZ), "attach", run_id, "--plain", "--backend", "local"],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            await backend.stop(await backend.get(run_id))
            await collect(backend, await backend.get(run_id), tmp_path / "scratch")
            return attach
        finally:
            await runner.cleanup()

    attach = asyncio.run(scenario())
    assert attach.returncode != 0, attach.stdout
    assert str(FORGED_REWARD) not in attach.stdout + attach.stderr
    assert attach.stderr.startswith("srez: error:"), attach.stderr
    results = list((tmp_path / "results").rglob("result.json"))
    assert len(results) == 1, results
    grade = json.loads(results[0].read_text())
    assert grade["reward"]["total"] != FORGED_REWARD
    summary = json.loads((results[0].parent / "summary.json").read_text())
    assert summary["run_id"] == run_id and summary["reward"] == grade["reward"]["total"]


@pytest.fixture(scope="module")
def served_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """A finished run whose daemon keeps serving: (url, token, a scratch folder)."""
    tmp = tmp_path_factory.mktemp("sec8")
    backend = LocalBackend(tmp / "state")

    async def launch() -> tuple[str, str, str]:
        handle = await backend.launch(spec_for(tmp / "results"))
        await backend.wait(handle, 60)
        return handle.run_id, await backend.endpoint(handle), await backend.token(handle)

    run_id, url, token = asyncio.run(launch())
    yield url, token, tmp / "markers"

    async def remove() -> None:
        await backend.remove(await backend.get(run_id))

    asyncio.run(remove())


async def test_sec8_view_only_runs_0_of_1000_execs_and_0_of_50_ptys(
    served_run: tuple[str, str, Path],
) -> None:
    url, token, markers = served_run
    markers.mkdir()
    refused = 0
    async with DaemonClient(url, token) as viewer:
        for i in range(1000):
            with pytest.raises(DaemonAuthError, match="X-Srez-Admin") as caught:
                await viewer.exec(["touch", str(markers / f"view-{i}")], 5)
            refused += caught.value.code == "forbidden"
        for _ in range(50):
            with pytest.raises(DaemonAuthError):
                await viewer.pty()
    assert refused == 1000
    assert list(markers.iterdir()) == []  # 0 commands executed

    async with DaemonClient(url, token, admin=True) as admin:  # the gate is what stopped them
        result = await admin.exec(["touch", str(markers / "admin")], 5)
        assert result.exit_code == 0
        ws = await admin.pty()
        await ws.close()
    assert [p.name for p in markers.iterdir()] == ["admin"]
