"""What a node does with a run (the body of the Ray task): run it with the node's own backend.

The task gets a :class:`NodeRequest`, makes a private state folder on its node, launches the run
there with the node's backend (``local``, sandboxed; or ``docker``) under the run id the launcher
chose and a new attempt id (:class:`~srez_client.backends.base.RelayedRun`), waits for it while
reporting its phase, steps and new dialog lines to the run registry (:mod:`.registry`), stops it
when the registry says so, and returns the finished run folder as a tar stream with the daemon's
output (:class:`NodeResult`); the node's state is deleted. The daemon listens on the node's
loopback only; nothing of the run leaves the node but through Ray.

When the worker or its node is lost, Ray runs the task again elsewhere (``max_retries``): the new
attempt starts the run from the beginning under a new attempt id, and only the attempt that
returns reaches ``results/``.
"""

from __future__ import annotations

import asyncio
import functools
import io
import logging
import os
import secrets
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from srez_client.backends.base import Backend, LaunchSpec, RelayedRun, RunHandle
from srez_client.backends.local.backend import LocalBackend
from srez_client.backends.local.template import RunTemplate
from srez_client.backends.registry import make_backend, parse_config
from srez_client.daemon_client.api import DaemonClient
from srez_client.errors import ClientError, NoDaemonError
from srez_core.atomic import atomic_write_json
from srez_core.clock import utc_timestamp
from srez_daemon.protocol import RunAttempt, RunManifest, encode_entry

logger = logging.getLogger(__name__)

BACKEND: Final = "ray"
EXIT_WAIT_S: Final = 30.0
"""How long a finished run's daemon may take to exit before it is stopped."""


@dataclass(frozen=True, slots=True)
class NodeRequest:
    """What the launcher sends with each run (plain values: it is pickled by Ray)."""

    spec: str
    """The :class:`LaunchSpec` as JSON (its ``results_root`` is the launcher's, unused here)."""
    run_id: str
    namespace: str
    """The registry's namespace."""
    node_backend: str
    settings: dict[str, Any]
    """The node backend's config values beyond ``kind`` and ``state_dir``."""
    poll_s: float = 0.2


@dataclass(frozen=True, slots=True)
class NodeResult:
    """What the task returns: the run folder, and where and how it ran."""

    attempt: str
    node: str
    started_at: str
    archive: bytes
    """The run folder as an uncompressed tar stream, every member under ``<run-id>/``."""
    log: bytes
    """The daemon's output (``logs/container.log`` of the copy)."""


def execute_run(request: NodeRequest) -> NodeResult:
    """The Ray task: run ``request`` on this node and return its folder (see the module docs)."""
    import ray

    from srez_client.backends.ray.actor import registry_actor

    attempt = secrets.token_hex(4)
    node = ray.get_runtime_context().get_node_id()
    started_at = utc_timestamp(datetime.now(UTC))
    registry = registry_actor(ray, request.namespace)
    wanted = ray.get(registry.attempt_started.remote(request.run_id, attempt, node, started_at))
    logger.info("run %s: attempt %s on node %s", request.run_id, attempt, node)
    archive, log = asyncio.run(_run_here(request, attempt, registry, stopped=not wanted))
    return NodeResult(attempt, node, started_at, archive, log)


@functools.cache
def worker_template() -> RunTemplate:
    """This Ray worker's run template, shared by the runs it executes one after another (a
    backend per run would start one per run, and fork one run from it: no gain). It starts with
    the worker's first ``local`` run and ends with the worker; its output stays in a folder of its
    own beside Ray's files."""
    folder = Path(tempfile.mkdtemp(prefix="srez-ray-template-", dir=os.environ.get("RAY_TMPDIR")))
    return RunTemplate(folder / "template.out")


async def _run_here(
    request: NodeRequest, attempt: str, registry: Any, *, stopped: bool
) -> tuple[bytes, bytes]:
    # beside Ray's own files where the node keeps them elsewhere: a lost attempt's leftovers go
    # with them (its node's folder is gone or cleaned with Ray's)
    state = Path(tempfile.mkdtemp(prefix="srez-ray-", dir=os.environ.get("RAY_TMPDIR")))
    values = {"kind": request.node_backend, "state_dir": state, **request.settings}
    backend = make_backend(parse_config(values))
    if isinstance(backend, LocalBackend):
        backend.share_template(worker_template())
    try:
        spec = LaunchSpec.model_validate_json(request.spec).model_copy(
            update={
                "keep": False,
                "results_root": state / "results",
                "relayed": RelayedRun(run_id=request.run_id, backend=BACKEND, attempt=attempt),
            }
        )
        handle = await backend.launch(spec)
        if stopped:
            await backend.stop(handle)
        offset = await _follow(backend, handle, request, attempt, registry)
        handle = await backend.wait(handle, EXIT_WAIT_S)
        await _ensure_exited(backend, handle)
        copy = state / "copy"
        await backend.copy_out(handle, copy)
        attempts = await registry.attempts.remote(request.run_id)
        await asyncio.to_thread(record_attempts, copy, attempts)
        archive, log, rest = await asyncio.to_thread(_pack, copy, request.run_id, offset)
        phase = "done" if (copy / "summary.json").is_file() else "error"
        await registry.report.remote(request.run_id, attempt, phase, -1, rest)
        await backend.remove(handle)
        return archive, log
    finally:
        backend.close()
        await asyncio.to_thread(shutil.rmtree, state, True)


async def _follow(
    backend: Backend, handle: RunHandle, request: NodeRequest, attempt: str, registry: Any
) -> int:
    """Report the run to the registry until it is finished; stop it when asked. Returns the byte
    offset of the dialog relayed so far."""
    offset = 0
    stop_sent = False
    try:
        client = DaemonClient(await backend.endpoint(handle), await backend.token(handle))
    except NoDaemonError:  # it ended already (stopped before it ran, or that quick)
        return offset
    async with client:
        while True:
            current = await backend.get(handle.run_id)
            if current.finished or current.status != "running":
                return offset
            try:
                info = await client.run()
                page = await client.dialog(offset)
            except ClientError:  # the daemon is ending: the copy holds the rest
                return offset
            offset = page.next_offset
            lines = [encode_entry(entry).decode().rstrip("\n") for entry in page.entries]
            stop = await registry.report.remote(
                request.run_id, attempt, info.phase, info.steps_used, lines
            )
            if stop and not stop_sent:
                stop_sent = True
                await backend.stop(handle)
            await asyncio.sleep(request.poll_s)


async def _ensure_exited(backend: Backend, handle: RunHandle) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + EXIT_WAIT_S
    while handle.status == "running" and loop.time() < deadline:
        await asyncio.sleep(0.05)
        handle = await backend.get(handle.run_id)
    if handle.status == "running":
        await backend.stop(handle)


def record_attempts(copy: Path, attempts: list[tuple[str, str, str]]) -> None:
    """Write every attempt of the run into the copy's ``run.json`` (its ``attempt`` is this one)."""
    path = copy / "run.json"
    try:
        manifest = RunManifest.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return  # the launcher names the folder from the labels
    listed = tuple(RunAttempt(attempt=a, node=n, started_at=t) for a, n, t in attempts)
    atomic_write_json(path, manifest.model_copy(update={"attempts": listed}))


def _pack(copy: Path, run_id: str, offset: int) -> tuple[bytes, bytes, list[str]]:
    """The copy as a tar stream under ``<run-id>/`` (without what the launcher's copy-out adds
    itself), the daemon's output, and the dialog lines after ``offset``."""
    log_path = copy / "logs" / "container.log"
    log = log_path.read_bytes() if log_path.is_file() else b""
    log_path.unlink(missing_ok=True)
    (copy / "mirror.json").unlink(missing_ok=True)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.add(copy, arcname=run_id)
    dialog = copy / "archive" / "dialog.jsonl"
    data = dialog.read_bytes()[offset:] if dialog.is_file() else b""
    rest = [line.decode("utf-8", "replace") for line in data.splitlines() if line.strip()]
    return buffer.getvalue(), log, rest
