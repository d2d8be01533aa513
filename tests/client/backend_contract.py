"""The backend conformance suite (docs/design.md §9): one battery of checks every backend must pass.

Each check is a reusable async function taking the backend under test. :func:`run_contract`
runs the whole lifecycle in order and returns, per step, ``"ok"`` or ``"n/a: <why>"``:

    launch -> listed -> endpoint answers /api/health -> token -> wait (finished) -> copy_out
    (run.json, result.json, summary.json, the dialog) -> stop (twice) -> mirror hooks ->
    remove (twice) -> gone

Launches use ``keep=True`` so a daemon stays up to be asked. The suite runs against every backend
of the registry, one :class:`ContractCase` each (:data:`CASES`; a test checks that every backend
has one): its marks, the settings its config needs in tests, and the steps that cannot apply to it
with the reason; the suite checks that the backend refuses those the documented way (so "not
applicable" is tested too, not skipped).
"""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp
import pytest

from srez_client.backends.base import Backend, LaunchSpec, RunHandle
from srez_client.backends.registry import make_backend, parse_config
from srez_client.errors import NoDaemonError, RunNotFoundError
from srez_client.lifecycle.launch import RunLauncher
from srez_client.lifecycle.recovery import is_mirrored, mirror_stopped, recover_unmirrored
from srez_daemon.protocol import Provenance, RunManifest, RunSummary, SessionStarted, iter_dialog
from srez_daemon.protocol.api import Health
from srez_env.generator.sets import CANONICAL_SEED
from srez_env.grade import GRADE_SCHEMA_VERSION
from srez_env.provenance import packaged_set_digest, task_digest
from srez_env.tasks import load_tasks

Settings = Callable[[pytest.FixtureRequest], Mapping[str, object]]


def _docker_settings(request: pytest.FixtureRequest) -> Mapping[str, object]:
    """The session's run image, and its label (the session's finaliser removes what carries it)."""
    engine: Any = request.getfixturevalue("engine")  # skips without an engine or image
    return {"image": engine.image, "extra_labels": engine.labels}


def _ray_settings(request: pytest.FixtureRequest) -> Mapping[str, object]:
    """A Ray instance of the test's own on 127.0.0.1, its files in a short private folder (unix
    socket paths are limited to about 107 characters), removed after the test."""
    folder = Path(tempfile.mkdtemp(prefix="r", dir="/tmp"))  # noqa: S108
    request.addfinalizer(lambda: shutil.rmtree(folder, ignore_errors=True))
    return {"temp_dir": folder, "poll_s": 0.05}


NO_RAY: Final = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="ray is not installed (pip install 'srez[ray]')"
)
"""Skips a test of the ray backend where Ray is not importable, and only there."""


@dataclass(frozen=True)
class ContractCase:
    """How the suite runs against one backend."""

    name: str
    """The backend's name in the registry."""
    not_applicable: Mapping[str, str] = field(default_factory=dict)
    """Steps that do not apply to it, and why."""
    marks: tuple[pytest.MarkDecorator, ...] = ()
    """Its pytest marks (``docker`` needs an engine)."""
    settings: Settings = lambda _request: {}
    """Config values its tests need beyond the state folder."""

    def param(self) -> Any:
        """This case as a ``pytest.param`` (id: the backend's name)."""
        return pytest.param(self, marks=self.marks, id=self.name)

    def make(self, request: pytest.FixtureRequest, state_dir: Path) -> Backend:
        """The backend under test, made from its config through the registry."""
        values = {"kind": self.name, "state_dir": state_dir, **self.settings(request)}
        return make_backend(parse_config(values))


CASES: Final = (
    ContractCase(
        "inline",
        not_applicable={
            "running": "launch runs the whole episode before it returns; the run is never running",
            "endpoint": "inline runs have no daemon, so no endpoint (NoDaemonError)",
            "token": "inline runs have no daemon, so no token (NoDaemonError)",
            "logs": "an inline run has no process output of its own (logs yields nothing)",
        },
    ),
    ContractCase("local"),
    ContractCase("docker", marks=(pytest.mark.docker,), settings=_docker_settings),
    ContractCase(
        "ray",
        not_applicable={
            "endpoint": "a run's daemon listens on its node's loopback only (NoDaemonError)",
            "token": "a run's token stays on its node (NoDaemonError)",
        },
        marks=(NO_RAY,),
        settings=_ray_settings,
    ),
)
"""One case per backend of the registry."""

NOT_APPLICABLE: Final = {case.name: case.not_applicable for case in CASES}
"""Steps that do not apply to a backend, and why."""

RUN_FILES: Final = ("run.json", "result.json", "summary.json", "archive/dialog.jsonl")


def spec_for(results: Path, task_id: str = "sre-001", agent: str = "scripted") -> LaunchSpec:
    """A quick run that keeps its daemon (where there is one)."""
    return LaunchSpec(task_id=task_id, agent_spec=agent, keep=True, results_root=results)


def applies(backend: Backend, step: str) -> bool:
    """Whether ``step`` applies to ``backend``."""
    return step not in NOT_APPLICABLE.get(backend.name, {})


async def check_launch_listed(backend: Backend, spec: LaunchSpec) -> RunHandle:
    """Launch what the host gives a run (its spec completed by the host's launcher: the agent's
    command, the task's provenance); the run is listed (with include_exited), owned, labelled,
    findable by prefix."""
    launcher = RunLauncher(backend)
    try:
        handle = await backend.launch(await launcher.prepare(spec))
    finally:
        launcher.close()
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
    # where the score comes from, whoever ran it: the packaged task, this srez, this grade
    (task,) = load_tasks([manifest.task_id])
    assert summary.provenance == Provenance(
        task_set="canonical",
        generator=manifest.world_generator,
        task_set_seed=CANONICAL_SEED,
        task_digest=task_digest(task),
        task_set_digest=packaged_set_digest(),
        srez_version=manifest.srez_version,
        grade_version=GRADE_SCHEMA_VERSION,
    )
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


async def check_mirror_hooks(backend: Backend, handle: RunHandle, scratch: Path) -> None:
    """A stopped run is mirrored into its results folder by the host's ``mirror_stopped`` (or is
    there already), a second time changes nothing, and ``recover_unmirrored`` then has nothing
    left: the host composes every backend with the mirror through its lifecycle alone."""
    stopped = await backend.get(handle.run_id)
    first = await mirror_stopped(backend, stopped, scratch, results_root=stopped.results_root)
    assert first.run_id == stopped.run_id
    assert first.outcome == ("skipped" if backend.writes_results else "mirrored"), first
    assert is_mirrored(stopped)
    again = await mirror_stopped(backend, stopped, scratch, results_root=stopped.results_root)
    assert again.outcome == "skipped", again
    assert await recover_unmirrored(backend, scratch) == []
    assert stopped.run_id in {r.run_id for r in await backend.list(include_exited=True)}


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
        await check_mirror_hooks(backend, handle, scratch / "mirror")
        report["mirror"] = "ok"
    finally:
        await check_remove_idempotent(backend, handle)
    report["remove"] = "ok"
    await check_gone(backend, handle)
    report["gone"] = "ok"
    return report
