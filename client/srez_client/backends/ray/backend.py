"""The ``ray`` backend: each run a Ray task, executed by its node's own backend (docs/design.md §9).

``launch`` names the run (its id, labels and ledger entry, as every backend does), registers it
with the cluster's run registry (:mod:`.actor`) and submits :func:`.task.execute_run` with
``max_retries``: on its node the run executes under the node's ``local`` backend (sandboxed) or
``docker``, and the task returns the finished run folder as a tar stream. ``wait`` receives it and
keeps it in ``$SREZ_STATE/ray/<run-id>/`` (``run.tar``, ``daemon.log``, ``record.json``); the
mirror then writes it into ``results/`` as for any backend (``copy_out`` extracts it with the
tar planner of :mod:`srez_client.transfer.tar`, the mirror renames ``.partial`` into place).

A task that is not packaged (``LaunchSpec.task_file``: a ``--tasks-dir`` or ``--task-seed``
set's) travels in the request with the spec; the node's backend keeps it from the agent as it
keeps any run's (``local``: in its state folder, hidden by the sandbox; ``docker``: root-only).

A worker or node lost mid-run: Ray runs the task again elsewhere under a new attempt id; only the
attempt that returns is written, and its ``run.json`` lists every attempt that started.

What does not apply, and why: a run's daemon listens on its node's loopback only, so ``endpoint``
and ``token`` raise :class:`~srez_client.errors.NoDaemonError`; ``srez attach`` follows the run
through the registry instead (:meth:`RayBackend.relayed_dialog`). ``keep`` has no effect (the
task returns once the run is finished), custom agent commands (``cmd:NAME``) are not sent to
nodes, and ``logs`` has the daemon's output once the run came back.

LLM runs: the launcher's model relay listens on ``relay_host`` (``127.0.0.1`` for a cluster on
this machine), and the spec a node gets carries the relay's URL and the run's scoped token
(``LaunchSpec.model_env``), never a provider key. The relay keeps each run's replies: an attempt
that starts again after a lost node asks the same questions of the same deterministic episode
and gets the replies it had without a second provider call, up to the step where the lost
attempt stopped (:mod:`srez_client.relay.server`).

Without ``ray_address`` each command starts a Ray instance of its own on 127.0.0.1, which ends
with it: runs are then in flight only while their launcher lives, and ``srez runs list`` of
another command sees their records only.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import io
import logging
import secrets
import shutil
import tarfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, Self

from pydantic import BaseModel, ConfigDict

from srez_client.backends.base import Backend, LaunchSpec, RunHandle, not_found
from srez_client.backends.config import BackendConfig
from srez_client.backends.local.config import SandboxMode
from srez_client.backends.ray.actor import TERMINAL, in_flight, registry_actor
from srez_client.backends.ray.config import RayConfig
from srez_client.backends.ray.connect import connect
from srez_client.backends.ray.task import NodeRequest, NodeResult, execute_run
from srez_client.backends.state import Ledger, is_owned, private_dir, read_record
from srez_client.errors import BackendError, NoDaemonError, NotOwnedError, UsageError
from srez_client.layout import RUN_ID_RE, new_run_id, run_path
from srez_client.transfer.tar_fs import extract_run_tar, finish_copy_out
from srez_core.atomic import atomic_write_bytes, atomic_write_json
from srez_core.clock import utc_timestamp
from srez_daemon.protocol import RunManifest, srez_version
from srez_env.agents import custom_agent_name, make_agent
from srez_env.agents.llm import LLM_SPECS
from srez_env.provenance import task_provenance

logger = logging.getLogger(__name__)

BACKEND: Final = "ray"
STOP_GRACE_S: Final = 30.0
"""How long ``stop`` waits for a run to stop itself (and come back) before cancelling its task."""

Outcome = Literal["submitted", "returned", "failed"]


class RayRecord(BaseModel):
    """``$SREZ_STATE/ray/<run-id>/record.json``: a run this state submitted."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    labels: dict[str, str]
    manifest: RunManifest
    created_at: str
    outcome: Outcome = "submitted"
    finished: bool = False
    """The folder that came back holds ``summary.json``."""
    attempt: str | None = None
    """The attempt that came back."""
    node: str | None = None
    error: str | None = None
    """Why every attempt failed (``failed``)."""


class RayBackend(Backend):
    """Runs as Ray tasks; see the module docstring for what applies."""

    name: ClassVar[str] = BACKEND
    relays_dialog: ClassVar[bool] = True
    reaches_host: ClassVar[bool] = True

    def __init__(
        self,
        state_dir: Path,
        *,
        any_owner: bool = False,
        ray_address: str | None = None,
        temp_dir: Path | None = None,
        node_backend: str = "local",
        sandbox: SandboxMode = "auto",
        run_template: bool = True,
        max_retries: int = 3,
        namespace: str = "srez",
        poll_s: float = 0.2,
        relay_host: str = "127.0.0.1",
    ) -> None:
        self.state_dir = state_dir
        self.folder = state_dir / "ray"
        """One folder per run."""
        self.ledger = Ledger(state_dir)
        self.any_owner = any_owner
        self.ray_address = ray_address
        self.temp_dir = temp_dir
        self.node_backend = node_backend
        self.sandbox: SandboxMode = sandbox
        self.run_template = run_template
        self.max_retries = max_retries
        self.namespace = namespace
        self.poll_s = poll_s
        self.relay_host = relay_host
        self._ray: Any = None
        self._connected_here = False
        self._actor: Any = None
        self._remote: Any = None
        self._refs: dict[str, Any] = {}
        """The tasks of the runs this backend submitted, by run id."""

    @classmethod
    def from_config(cls, config: BackendConfig) -> Self:
        """The backend a :class:`~.config.RayConfig` describes."""
        return cls(config.state_dir, **RayConfig.of(config).options())

    async def host_address(self) -> str:
        """Where the nodes reach this host (``relay_host``): the launcher's model relay listens
        there, and each LLM run's spec carries its URL and the run's scoped token to its node."""
        return self.relay_host

    def close(self) -> None:
        """Disconnect from Ray if this backend connected (a local instance ends with it)."""
        if self._connected_here and self._ray is not None:
            self._ray.shutdown()
        self._ray = self._actor = self._remote = None
        self._connected_here = False
        self._refs.clear()

    # ------------------------------------------------------------------ Ray

    def _cluster(self) -> tuple[Any, Any]:
        """Ray and the registry actor (connecting on first use; blocking, once)."""
        if self._ray is None:
            ray, here = connect(self.ray_address, self.namespace, self.temp_dir)
            self._ray, self._connected_here = ray, here
            self._actor = registry_actor(ray, self.namespace)
            self._remote = ray.remote(execute_run)
        return self._ray, self._actor

    def _registry_runs(self) -> dict[str, dict[str, Any]]:
        """What the registry knows of each run, when the cluster outlives commands (an
        address) or this backend is connected; nothing otherwise."""
        if self._ray is None and self.ray_address is None:
            return {}
        ray, actor = self._cluster()
        return {run["run_id"]: run for run in ray.get(actor.runs.remote())}

    # ------------------------------------------------------------------ launch

    async def launch(self, spec: LaunchSpec) -> RunHandle:
        """Name the run, register it and submit its task (it is ``running`` until it comes
        back)."""
        task = spec.task()
        agent_spec = spec.agent_spec
        if custom_agent_name(agent_spec):
            msg = f"the ray backend does not send custom agent commands to its nodes ({agent_spec!r}); use --backend local or docker"
            raise UsageError(msg)
        name = make_agent(agent_spec, task, spec.run_seed).name  # fails fast on a bad agent
        if name in LLM_SPECS and spec.model in ("", "none"):
            msg = f"agent {spec.agent_spec!r} needs a model: give a litellm slug, e.g. openai/gpt-4o-mini"
            raise UsageError(msg)
        now = datetime.now(UTC)
        run_id = spec.run_id or new_run_id(now)
        run_path(spec.results_root, task.id, spec.model, name, run_id)  # names are safe
        manifest = RunManifest(
            run_id=run_id,
            task_id=task.id,
            agent=name,
            agent_spec=agent_spec,
            model=spec.model,
            backend=BACKEND,
            run_seed=spec.run_seed,
            srez_version=srez_version(),
            started_at=utc_timestamp(now),
        ).model_copy(
            update=spec.provenance
            or task_provenance(task, spec.task_file.set_digest if spec.task_file else None)
        )
        ray, actor = self._cluster()
        labels = self.ledger.claim(
            manifest,
            backend=BACKEND,
            results_root=spec.results_root.resolve(),
            created_at=manifest.started_at,
        )
        record = RayRecord(
            run_id=run_id, labels=labels, manifest=manifest, created_at=manifest.started_at
        )
        private_dir(self.folder / run_id)
        atomic_write_json(self.folder / run_id / "record.json", record)
        await actor.register.remote(run_id, labels)
        settings: dict[str, object] = (
            {"sandbox": self.sandbox, "run_template": self.run_template}
            if self.node_backend == "local"
            else {}
        )
        request = NodeRequest(
            spec=spec.model_copy(update={"agent_spec": agent_spec}).model_dump_json(),
            run_id=run_id,
            namespace=self.namespace,
            node_backend=self.node_backend,
            settings=settings,
            poll_s=self.poll_s,
        )
        self._refs[run_id] = self._remote.options(
            max_retries=self.max_retries, retry_exceptions=False, name=f"srez-run-{run_id}"
        ).remote(request)
        logger.info("submitted run %s to Ray", run_id)
        return self._handle(record, in_flight=True)

    # ------------------------------------------------------------------ discovery

    def _record(self, run_id: str) -> RayRecord | None:
        record = read_record(self.folder, run_id, RayRecord)
        if record is None or record.labels.get("srez.run") != run_id:
            return None
        return record

    def _in_flight(self, record: RayRecord, registered: dict[str, dict[str, Any]]) -> bool:
        if record.outcome != "submitted":
            return False
        ref = self._refs.get(record.run_id)
        if ref is not None:
            ready, _ = self._ray.wait([ref], timeout=0)
            return not ready
        known = registered.get(record.run_id)
        return known is not None and in_flight(known)

    def _handle(self, record: RayRecord, *, in_flight: bool) -> RunHandle:
        return RunHandle.from_labels(
            BACKEND,
            record.labels,
            status="running" if in_flight else "exited",
            finished=record.finished,
            owned=is_owned(record.labels, self.ledger, BACKEND),
        )

    async def list(self, include_exited: bool = False) -> builtins.list[RunHandle]:
        """Every run with a record under ``ray/``, oldest first; in flight as the registry (or
        this backend's own tasks) says."""
        try:
            names = sorted(p.name for p in self.folder.iterdir() if RUN_ID_RE.match(p.name))
        except FileNotFoundError:
            return []
        records = [r for r in map(self._record, names) if r is not None]
        registered = self._registry_runs() if any(r.outcome == "submitted" for r in records) else {}
        handles = [self._handle(r, in_flight=self._in_flight(r, registered)) for r in records]
        return [h for h in handles if include_exited or h.status == "running"]

    def _owned(self, run: RunHandle) -> RayRecord | None:
        record = self._record(run.run_id)
        if record is None:
            return None
        if not self.any_owner and not is_owned(record.labels, self.ledger, BACKEND):
            msg = f"ray run {run.run_id} was not launched from this state ({self.state_dir}); pass --any to act on it"
            raise NotOwnedError(msg)
        return record

    def _require(self, run: RunHandle) -> RayRecord:
        record = self._owned(run)
        if record is None:
            raise not_found(BACKEND, run.run_id)
        return record

    async def endpoint(self, run: RunHandle) -> str:
        """Always raises: the daemon listens on its node's loopback only."""
        self._require(run)
        msg = f"ray run {run.run_id}: its daemon listens on its node's loopback only; 'srez attach {run.run_id} --plain --backend ray' follows it"
        raise NoDaemonError(msg)

    async def token(self, run: RunHandle) -> str:
        """Always raises: the token stays on the run's node."""
        self._require(run)
        msg = f"ray run {run.run_id}: its token stays on its node"
        raise NoDaemonError(msg)

    # ------------------------------------------------------------------ lifecycle

    async def wait(self, run: RunHandle, timeout_s: float | None = None) -> RunHandle:
        """Wait for the run's task to return (its folder is kept in the state), or for the
        registry to say it ended when another command submitted it."""
        record = self._require(run)
        ref = self._refs.get(run.run_id)
        if ref is not None and record.outcome == "submitted":
            future = asyncio.wrap_future(ref.future())
            try:
                result = await asyncio.wait_for(asyncio.shield(future), timeout_s)
            except TimeoutError:
                msg = f"run {run.run_id} did not finish within {timeout_s:g} s"
                raise TimeoutError(msg) from None
            except Exception as e:  # every attempt failed, or the task was cancelled
                record = await self._failed(record, e)
            else:
                record = await self._store(record, result)
            return self._handle(record, in_flight=False)
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        while True:
            handle = await self.get(run.run_id)
            if handle.status != "running":
                return handle
            if deadline is not None and loop.time() >= deadline:
                msg = f"run {run.run_id} did not finish within {timeout_s:g} s"
                raise TimeoutError(msg)
            await asyncio.sleep(self.poll_s)

    async def _store(self, record: RayRecord, result: NodeResult) -> RayRecord:
        folder = self.folder / record.run_id
        await asyncio.to_thread(atomic_write_bytes, folder / "run.tar", result.archive)
        await asyncio.to_thread(atomic_write_bytes, folder / "daemon.log", result.log)
        finished = f"{record.run_id}/summary.json" in _member_names(result.archive)
        record = record.model_copy(
            update={
                "outcome": "returned",
                "finished": finished,
                "attempt": result.attempt,
                "node": result.node,
            }
        )
        atomic_write_json(folder / "record.json", record)
        self._refs.pop(record.run_id, None)
        with contextlib.suppress(Exception):
            await self._actor.finish.remote(record.run_id, "returned")
        logger.info("run %s came back from node %s", record.run_id, result.node)
        return record

    async def _failed(self, record: RayRecord, error: BaseException) -> RayRecord:
        line = str(error).strip().splitlines()[-1:] or [type(error).__name__]
        record = record.model_copy(update={"outcome": "failed", "error": line[0][:500]})
        atomic_write_json(self.folder / record.run_id / "record.json", record)
        self._refs.pop(record.run_id, None)
        with contextlib.suppress(Exception):
            await self._actor.finish.remote(record.run_id, "failed")
        logger.warning("run %s failed on every attempt: %s", record.run_id, record.error)
        return record

    async def stop(self, run: RunHandle) -> None:
        """Ask the run's node to stop it (it writes its summary and comes back); cancel its
        task if it has not come back after a grace. Nothing if it ended."""
        record = self._owned(run)
        if record is None or record.outcome != "submitted":
            return
        if self._ray is None and self.ray_address is None:
            return  # its instance ended with the command that launched it
        _, actor = self._cluster()
        await actor.request_stop.remote(run.run_id)
        ref = self._refs.get(run.run_id)
        if ref is None:
            return
        try:
            await self.wait(run, STOP_GRACE_S)
        except TimeoutError:
            self._ray.cancel(ref, force=True)
            await self.wait(run)

    async def remove(self, run: RunHandle) -> None:
        """Stop the run, then delete ``ray/<run-id>`` and its ledger entry (not its results)."""
        record = self._owned(run)
        if record is None:
            if not (self.folder / run.run_id).exists():
                self.ledger.forget(run.run_id)
            return
        await self.stop(run)
        if self._actor is not None:
            await self._actor.forget.remote(run.run_id)
        trash = self.folder / f".removing-{run.run_id}-{secrets.token_hex(4)}"
        try:
            (self.folder / run.run_id).rename(trash)
        except FileNotFoundError:
            return
        await asyncio.to_thread(shutil.rmtree, trash, True)
        self.ledger.forget(run.run_id)

    async def logs(self, run: RunHandle, *, follow: bool = False) -> AsyncIterator[str]:
        """The daemon's output, once the run came back (nothing before)."""
        self._require(run)
        path = self.folder / run.run_id / "daemon.log"
        with contextlib.suppress(FileNotFoundError):
            yield (await asyncio.to_thread(path.read_bytes)).decode("utf-8", "replace")

    async def copy_out(self, run: RunHandle, dest: Path) -> Path:
        """Write the folder that came back into ``dest`` (the tar planner's rules), plus
        ``logs/container.log`` and ``mirror.json``."""
        record = self._require(run)
        folder = self.folder / run.run_id
        if record.outcome == "failed":
            msg = (
                f"ray run {run.run_id} failed on every attempt ({record.error}); nothing came back"
            )
            raise BackendError(msg)
        if record.outcome != "returned":
            msg = f"ray run {run.run_id} has not come back from its node yet"
            raise BackendError(msg)
        try:
            archive = await asyncio.to_thread((folder / "run.tar").read_bytes)
        except FileNotFoundError:
            raise not_found(BACKEND, run.run_id) from None
        log = b""
        with contextlib.suppress(FileNotFoundError):
            log = await asyncio.to_thread((folder / "daemon.log").read_bytes)
        await asyncio.to_thread(dest.parent.mkdir, parents=True, exist_ok=True)
        report = await asyncio.to_thread(extract_run_tar, [archive], dest, run.run_id.encode())
        await asyncio.to_thread(finish_copy_out, dest, report, [log], run_id=run.run_id)
        return dest

    # ------------------------------------------------------------------ optional

    async def copyable(self) -> builtins.list[RunHandle]:
        """The runs that came back (a run that never came back, its launcher gone, has nothing
        to copy)."""
        handles = []
        for handle in await self.list(include_exited=True):
            record = self._record(handle.run_id)
            if record is not None and record.outcome == "returned" and handle.status != "running":
                handles.append(handle)
        return handles

    async def relayed_dialog(self, run: RunHandle, offset: int = 0) -> AsyncIterator[bytes]:
        """The run's dialog lines as its node relays them to the registry, from line ``offset``
        of its latest attempt, until the run ends (a retried run starts again at its new
        attempt's first line)."""
        self._require(run)
        _, actor = self._cluster()
        attempt, index = "", offset
        while True:
            latest, start, lines, phase = await actor.lines.remote(run.run_id, attempt, index)
            if latest != attempt and attempt:
                yield b""  # a new attempt: the follower may say so
            attempt = latest
            for line in lines:
                yield line.encode()
            index = start + len(lines)
            if phase in TERMINAL or phase == "forgotten":
                if not lines:
                    return
                continue
            await asyncio.sleep(self.poll_s)


def _member_names(archive: bytes) -> set[str]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        return set(tar.getnames())
