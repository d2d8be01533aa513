"""The backend conformance suite (DESIGN.md §9): one battery of checks every backend must pass.

Each check is a reusable async function taking the backend under test. :func:`run_contract`
runs the whole lifecycle in order and returns, per step, ``"ok"`` or ``"n/a: <why>"``:

    launch -> listed -> endpoint answers /api/health -> token -> wait (finished) -> copy_out
    (run.json, result.json, summary.json, the dialog) -> stop (twice) -> remove (twice) -> gone

Launches use ``keep=True`` so a daemon stays up to be asked. Steps that cannot apply to a backend
are declared in :data:`NOT_APPLICABLE` with the reason, and the suite checks that the backend
refuses them the documented way (so "not applicable" is tested too, not skipped).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Final

import aiohttp

from srez_client.backends.base import Backend, LaunchSpec, RunHandle
from srez_client.errors import NoDaemonError, RunNotFoundError
from srez_daemon.protocol import RunManifest, RunSummary, SessionStarted, iter_dialog
from srez_daemon.protocol.api import Health

NOT_APPLICABLE: Final[dict[str, dict[str, str]]] = {
    "inline": {
        "running": "launch runs the whole episode before it returns; the run is never running",
        "endpoint": "inline runs have no daemon, so no endpoint (NoDaemonError)",
        "token": "inline runs have no daemon, so no token (NoDaemonError)",
        "logs": "an inline run has no process output of its own (logs yields nothing)",
    },
    "local": {},
}
"""Steps that do not apply to a backend, and why."""

RUN_FILES: Final = ("run.json", "result.json", "summary.json", "archive/dialog.jsonl")


def spec_for(results: Path, task_id: str = "sre-001", agent: str = "scripted") -> LaunchSpec:
    """A quick run that keeps its daemon (where there is one)."""
    return LaunchSpec(task_id=task_id, agent_spec=agent, keep=True, results_root=results)


def applies(backend: Backend, step: str) -> bool:
    """Whether ``step`` applies to ``backend``."""
    return step not in NOT_APPLICABLE.get(backend.name, {})


async def check_launch_listed(backend: Backend, spec: LaunchSpec) -> RunHandle:
    """Launch; the run is listed (with include_exited), owned, labelled, findable by prefix."""
    handle = await backend.launch(spec)
    assert handle.backend == backend.name
    assert handle.task_id == spec.task_id
    assert handle.owned
    assert handle.labels["srez.run"] == handle.run_id
    assert handle.labels["srez.task"] == spec.task_id
    assert len(handle.labels["srez.nonce"]) == 32
    listed = {r.run_id for r in await backend.list(include_exited=True)}
    assert handle.run_id in listed
    if applies(backend, "running"):
        assert handle.status == "running"
        assert handle.run_id in {r.run_id for r in await backend.list()}
    found = await backend.get(handle.run_id[:-3])
    assert found.run_id == handle.run_id
    return handle


async def check_endpoint(backend: Backend, handle: RunHandle) -> str:
    """The endpoint is loopback and answers /api/health; the token is a usable header value."""
    if not applies(backend, "endpoint"):
        try:
            await backend.endpoint(handle)
        except NoDaemonError as e:
            return f"n/a: {e}"
        raise AssertionError(f"{backend.name}: endpoint should raise NoDaemonError")
    base = await backend.endpoint(handle)
    assert base.startswith(("http://127.0.0.1:", "http://[::1]:")), base
    async with aiohttp.ClientSession() as http, http.get(f"{base}/api/health") as resp:
        assert resp.status == 200
        Health.model_validate_json(await resp.read())
        assert "Authorization" not in resp.headers
    token = await backend.token(handle)
    assert len(token) >= 43 and token.strip() == token
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/api/run") as resp:
            assert resp.status == 401
        headers = {"Authorization": f"Bearer {token}"}
        async with http.get(f"{base}/api/run", headers=headers) as resp:
            assert resp.status == 200
    return "ok"


async def check_wait(backend: Backend, handle: RunHandle) -> RunHandle:
    """wait returns the run finished (summary.json written)."""
    done = await backend.wait(handle, timeout_s=60)
    assert done.finished, done
    assert done.run_id == handle.run_id
    return done


async def check_copy_out(backend: Backend, handle: RunHandle, dest: Path) -> None:
    """copy_out gives run.json, result.json, summary.json and the dialog, all consistent."""
    assert await backend.copy_out(handle, dest) == dest
    for name in RUN_FILES:
        assert (dest / name).is_file(), name
    assert (dest / "mirror.json").is_file()
    manifest = RunManifest.model_validate_json((dest / "run.json").read_bytes())
    assert manifest.run_id == handle.run_id
    summary = RunSummary.model_validate_json((dest / "summary.json").read_bytes())
    assert summary.run_id == handle.run_id
    entries = list(iter_dialog((dest / "archive/dialog.jsonl").read_bytes()))
    assert isinstance(entries[0], SessionStarted)
    assert entries[0].run_id == handle.run_id
    assert not (dest / "token").exists()


async def check_logs(backend: Backend, handle: RunHandle) -> str:
    """logs yields the process output (or, where n/a, nothing)."""
    text = "".join([chunk async for chunk in backend.logs(handle)])
    if not applies(backend, "logs"):
        assert text == ""
        return f"n/a: {NOT_APPLICABLE[backend.name]['logs']}"
    assert text.strip(), "the daemon wrote nothing"
    return "ok"


async def check_stop_idempotent(backend: Backend, handle: RunHandle) -> None:
    """stop ends the process; stopping again (and concurrently) is not an error."""
    await asyncio.gather(backend.stop(handle), backend.stop(handle))
    await backend.stop(handle)
    after = await backend.get(handle.run_id)
    assert after.status == "exited"
    assert after.finished  # SIGTERM or not, summary.json stays


async def check_remove_idempotent(backend: Backend, handle: RunHandle) -> None:
    """remove forgets the run; removing again is not an error; results stay."""
    results = handle.results_root
    before = sorted(p for p in results.rglob("*")) if results.exists() else []
    await backend.remove(handle)
    await asyncio.gather(backend.remove(handle), backend.remove(handle))
    after = sorted(p for p in results.rglob("*")) if results.exists() else []
    assert after == before


async def check_gone(backend: Backend, handle: RunHandle) -> None:
    """A removed run is not listed, cannot be found, and stop on it is still fine."""
    assert handle.run_id not in {r.run_id for r in await backend.list(include_exited=True)}
    try:
        await backend.get(handle.run_id)
    except RunNotFoundError:
        pass
    else:
        raise AssertionError("a removed run is still found")
    await backend.stop(handle)


async def run_contract(backend: Backend, spec: LaunchSpec, scratch: Path) -> dict[str, str]:
    """The whole lifecycle in order; returns step -> ``ok`` or ``n/a: why``."""
    report: dict[str, str] = {}
    handle = await check_launch_listed(backend, spec)
    report["launch"] = "ok"
    try:
        report["endpoint"] = await check_endpoint(backend, handle)
        handle = await check_wait(backend, handle)
        report["wait"] = "ok"
        await check_copy_out(backend, handle, scratch / "copy")
        report["copy_out"] = "ok"
        report["logs"] = await check_logs(backend, handle)
        await check_stop_idempotent(backend, handle)
        report["stop"] = "ok"
    finally:
        await check_remove_idempotent(backend, handle)
    report["remove"] = "ok"
    await check_gone(backend, handle)
    report["gone"] = "ok"
    return report
