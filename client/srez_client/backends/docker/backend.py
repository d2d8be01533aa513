"""The ``docker`` backend: one container per run from the run image (docs/design.md §9).

A run's container is created from ``srez-run:<version>`` with the labels of docs/design.md §8, named
``srez-<run-id>``, with ``--init``, 512 pids, 2 GiB of memory, its run folder ``/srez`` on an
anonymous volume, and the daemon's port 4263 published on **127.0.0.1 only** on a port the engine
picks. Before it starts, ``/srez/run.json`` and the token (``/run/srez/token``, 0400, root) are put
into it as files: the token never goes through a label, the environment or the command line, and
the client never reads it back from the container (its own copy is ``$SREZ_STATE/docker/<run-id>/
token``). A task that is not packaged (``LaunchSpec.task_file``: a ``--tasks-dir`` or
``--task-seed`` set's) goes in the same way, as ``/run/srez/task.json`` (0400, root, in root's
0700 folder: the agent user cannot read it, as it cannot read the packaged task files), named by
``SREZ_TASK_FILE``. The only other environment given is ``SREZ_AGENT_TIME_LIMIT_S``, when a limit
is set, and, for an LLM run, what its agent needs to reach its model:

LLM runs (``llm``, ``llm-json``; docs/security.md A12) reach their model through the host's model
relay, which listens on :meth:`DockerBackend.host_address`: provider keys never enter a container;
it is given the relay's URL and a scoped token of its own (``LaunchSpec.model_env``), a different secret from the daemon's (that one
buys exec and a root shell, and never sits in the environment). The launching process must stay
alive while an LLM run's agent works: the relay lives in it.

Authority (docs/security.md A10): containers are discovered by the label ``srez.run`` and acted on
only when this state launched them (:mod:`.discovery`), unless ``any_owner`` is set.

Copy-out (docs/security.md A5, A6) reads the run folder as a tar stream only from a container whose
processes cannot change it: a stopped one; a paused one; or a finished run kept serving
(``--keep``), which is paused for the copy and thawed after. A running run that is not finished
is refused. The stream is written by :mod:`srez_client.transfer.tar_fs` (regular files and folders
only, capped by the tar headers' sizes).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, NoReturn, Self

import aiohttp

import docker  # type: ignore[import-untyped]
from srez_client.backends.base import LABEL_KEYS, LaunchSpec, RunHandle, not_found
from srez_client.backends.config import BackendConfig
from srez_client.backends.docker import engine
from srez_client.backends.docker.config import DockerConfig
from srez_client.backends.docker.container_attrs import SeenContainer, published_port
from srez_client.backends.docker.discovery import BACKEND, ContainerRuns, Inspected
from srez_client.backends.docker.state import (
    LaunchPlan,
    choose_agent,
    inputs_tar,
    plan_launch,
    read_replay,
    save_record,
    write_state,
)
from srez_client.backends.state import read_token
from srez_client.backends.wait import poll_until_finished
from srez_client.errors import BackendError, NoDaemonError
from srez_client.transfer.plan import DEFAULT_LIMITS, MirrorLimits
from srez_daemon.protocol import srez_version

logger = logging.getLogger(__name__)


def default_image() -> str:
    """The run image of this client's version: ``srez-run:<version>``."""
    return f"srez-run:{srez_version()}"


class DockerBackend(ContainerRuns):
    """One container per run on a Docker engine; see the module docstring.

    Args:
        state_dir: The client's state folder (``$SREZ_STATE``).
        image: The run image (default :func:`default_image`).
        client_factory: Makes the SDK client (default ``docker.from_env``); called once, lazily.
        any_owner: Act on containers this state did not launch.
        extra_labels: More labels for the containers this backend creates (never one of §8's).
        limits: The copy-out caps.
        ready_timeout_s: How long a launch waits for ``/api/health`` to pass ``starting``.
        stop_grace_s: How long ``stop`` waits after SIGTERM before SIGKILL.
        mem_limit: Memory limit of a container.
        pids_limit: Process limit of a container.
    """

    name: ClassVar[str] = BACKEND
    follows_stops: ClassVar[bool] = True
    copies_unowned: ClassVar[bool] = True
    reaches_host: ClassVar[bool] = True

    def __init__(
        self,
        state_dir: Path,
        *,
        image: str | None = None,
        client_factory: Callable[[], Any] = docker.from_env,
        any_owner: bool = False,
        extra_labels: Mapping[str, str] | None = None,
        limits: MirrorLimits = DEFAULT_LIMITS,
        ready_timeout_s: float = 60.0,
        stop_grace_s: float = 10.0,
        mem_limit: str = "2g",
        pids_limit: int = 512,
    ) -> None:
        super().__init__(state_dir, client_factory=client_factory, any_owner=any_owner)
        self.image = image or default_image()
        self.extra_labels = {k: v for k, v in (extra_labels or {}).items() if k not in LABEL_KEYS}
        self.limits = limits
        self.ready_timeout_s = ready_timeout_s
        self.stop_grace_s = stop_grace_s
        self.mem_limit = mem_limit
        self.pids_limit = pids_limit

    @classmethod
    def from_config(cls, config: BackendConfig) -> Self:
        """The backend a :class:`~.config.DockerConfig` describes."""
        return cls(config.state_dir, **DockerConfig.of(config).options())

    # ------------------------------------------------------------------ the engine

    def close(self) -> None:
        """Close the SDK client's connections (a later call makes new ones)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    async def host_address(self) -> str:
        """The Docker bridge's gateway: where containers reach this host.

        Raises:
            BackendError: If the ``bridge`` network has no IPv4 gateway.
        """
        address: str = await self._call(engine.bridge_gateway_address)
        return address

    # ------------------------------------------------------------------ launch

    async def launch(self, spec: LaunchSpec) -> RunHandle:
        """Create the container, put ``run.json`` and the token into it, start it, and wait until
        ``/api/health`` reports the run past ``starting``. An LLM run's ``model_env`` (the host's
        model relay, listening on :meth:`host_address`) is its only environment about its model."""
        choice = await asyncio.to_thread(choose_agent, spec)  # fails fast
        replay = None
        if choice.replay_file is not None:
            replay = await asyncio.to_thread(read_replay, choice.replay_file)
        await self.client()  # no engine: fail before any state is written
        plan = plan_launch(
            spec,
            task_id=choice.task_id,
            agent=choice.agent,
            agent_spec=choice.agent_spec,
            image=self.image,
            version=srez_version(),
            uid=os.getuid(),
            now=datetime.now(UTC),
        )
        environment = {**plan.environment, **spec.model_env}
        with contextlib.suppress(BackendError):  # no IPv4 bridge: served as before, to all
            # the daemon then serves the host (the bridge's gateway) alone: no other container
            environment["SREZ_ALLOWED_PEERS"] = await self.host_address()
        return await self._launch(spec, plan, environment, replay)

    async def _launch(
        self,
        spec: LaunchSpec,
        plan: LaunchPlan,
        environment: dict[str, str],
        replay: bytes | None,
    ) -> RunHandle:
        """The launch once everything is decided: state, container, inputs, start, readiness."""
        run_id = plan.run_id
        self.ledger.add(plan.owned)
        await asyncio.to_thread(write_state, self.folder / run_id, plan.record, plan.token)
        try:
            container_id: str = await self._call(
                engine.create,
                self.image,
                name=plan.record.container_name,
                labels={**self.extra_labels, **plan.labels},
                keep=spec.keep,
                environment=environment,
                mem_limit=self.mem_limit,
                pids_limit=self.pids_limit,
            )
        except BaseException:
            await self._forget(run_id)  # nothing was created: leave no trace
            raise
        record = plan.record.model_copy(update={"container_id": container_id})
        await asyncio.to_thread(save_record, self.folder / run_id, record)
        try:
            task_file = spec.task_file.content if spec.task_file is not None else None
            inputs = inputs_tar(plan.manifest, plan.token, replay, task_file)
            await self._call(engine.start, container_id, inputs)
        except BackendError:
            await self._call(engine.remove, container_id, 1.0)
            await self._forget(run_id)
            raise
        logger.info("launched run %s (container %s)", run_id, container_id[:12])
        seen = await self._wait_ready(container_id, run_id)
        return await self._handle(seen)

    async def _wait_ready(self, container_id: str, run_id: str) -> SeenContainer:
        """Wait until ``/api/health`` reports a phase past ``starting`` (or the run finished and
        its container exited); stop the container and raise otherwise."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.ready_timeout_s
        delay, port, polls = 0.01, None, 0
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http:
            while loop.time() < deadline:
                if port is None or polls % 10 == 0:  # the engine is asked now and then only
                    found: Inspected = await self._call(engine.inspect, container_id)
                    if found is None:
                        msg = f"run {run_id}: its container vanished during start-up"
                        raise BackendError(msg)
                    seen, attrs = found
                    if seen.status != "running":
                        if await self._finished(seen):
                            return seen
                        await self._failed(
                            run_id, container_id, "the container exited during start-up"
                        )
                    port = published_port(attrs)
                polls += 1
                if port is not None and await _health_past_starting(http, port):
                    return seen
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)
        await self._call(engine.stop, container_id, 2.0)
        why = f"the daemon did not answer /api/health within {self.ready_timeout_s:g} s"
        return await self._failed(run_id, container_id, why)

    async def _failed(self, run_id: str, container_id: str, why: str) -> NoReturn:
        tail = await self._call(engine.log_tail, container_id)
        msg = f"run {run_id}: {why}; container output: {tail or '(none)'}"
        raise BackendError(msg)

    # ------------------------------------------------------------------ reaching a run

    async def endpoint(self, run: RunHandle) -> str:
        """``http://127.0.0.1:<published port>`` of a running container."""
        seen = await self._require(run)
        found: Inspected = await self._call(engine.inspect, seen.id)
        port = None if found is None or found[0].state != "running" else published_port(found[1])
        if port is None:
            msg = f"run {run.run_id} has no daemon serving on loopback (its container is not running); its files are in results/ once mirrored"
            raise NoDaemonError(msg)
        return f"http://127.0.0.1:{port}"

    async def token(self, run: RunHandle) -> str:
        """The run's token, from this state (never from the container)."""
        await self._require(run)
        return read_token(self.folder, BACKEND, run.run_id)

    # ------------------------------------------------------------------ lifecycle

    async def wait(self, run: RunHandle, timeout_s: float | None = None) -> RunHandle:
        """Poll until ``summary.json`` exists or the container stopped."""

        async def probe() -> RunHandle | None:
            seen = await self._locate(run.run_id)
            return None if seen is None else await self._handle(seen)

        return await poll_until_finished(
            BACKEND, run.run_id, probe, timeout_s, first_delay_s=0.02, max_delay_s=0.25
        )

    async def stop(self, run: RunHandle) -> None:
        """``docker stop`` (SIGTERM, SIGKILL after the grace); nothing if it is gone."""
        seen = await self._locate(run.run_id)
        if seen is None:
            return
        self._authorize(seen)
        await self._call(engine.stop, seen.id, self.stop_grace_s)

    async def remove(self, run: RunHandle) -> None:
        """Stop and remove the container and its volume, then this state's record (not results)."""
        seen = await self._locate(run.run_id)
        if seen is not None:
            self._authorize(seen)
        if seen is not None:
            await self._call(engine.remove, seen.id, self.stop_grace_s)
        if seen is None or self._record(run.run_id) is not None:
            await self._forget(run.run_id)

    async def logs(self, run: RunHandle, *, follow: bool = False) -> AsyncIterator[str]:
        """The container's output; following it until the container stops."""
        seen = await self._require(run)
        client = await self.client()
        stream = await asyncio.to_thread(client.api.logs, seen.id, stream=True, follow=follow)
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            while (chunk := await asyncio.to_thread(next, stream, None)) is not None:
                if text := decoder.decode(chunk):
                    yield text
            if text := decoder.decode(b"", final=True):
                yield text
        finally:
            stream.close()

    async def copy_out(self, run: RunHandle, dest: Path) -> Path:
        """Copy ``/srez`` safely into ``dest``, plus ``logs/container.log``; see the module
        docstring for when (a running, unfinished run is refused)."""
        seen = await self._require(run)
        return await self._copy(seen, dest, may_pause=True)

    async def copy_out_read_only(self, run: RunHandle, dest: Path) -> Path:
        """Like :meth:`copy_out`, for any container (owned or not), never changing it: a container
        that runs is refused rather than paused. For ``srez mirror``."""
        seen = await self._locate(run.run_id)
        if seen is None:
            raise not_found(BACKEND, run.run_id)
        return await self._copy(seen, dest, may_pause=False)

    async def _copy(self, seen: SeenContainer, dest: Path, *, may_pause: bool) -> Path:
        paused = False
        if seen.state in ("running", "restarting"):
            if not may_pause or seen.state == "restarting" or not await self._finished(seen):
                msg = f"run {seen.run_id} is still running; its folder is copied only once its container has stopped ('srez runs stop {seen.run_id}')"
                raise BackendError(msg)
            await self._call(engine.pause, seen.id)  # a finished run kept serving: freeze it
            paused = True
        try:
            await asyncio.to_thread(dest.parent.mkdir, parents=True, exist_ok=True)
            await self._call(engine.copy_out, seen.id, dest, seen.run_id, self.limits)
        finally:
            if paused:
                await self._call(engine.unpause, seen.id)
        return dest

    @contextlib.asynccontextmanager
    async def stops(self, timeout_s: float | None = None) -> AsyncIterator[AsyncIterator[str]]:
        """The engine's ``die`` and ``stop`` events of containers labelled ``srez.run``, as run
        ids (one stop gives two events); the stream is open once the context is entered."""
        client = await self.client()
        until = None if timeout_s is None else int(datetime.now(UTC).timestamp() + timeout_s) + 1
        filters = {"label": "srez.run", "type": "container", "event": ["die", "stop"]}
        events = await asyncio.to_thread(client.events, filters=filters, decode=True, until=until)
        try:
            yield _run_ids(events)
        finally:
            with contextlib.suppress(Exception):  # closing a stream that ended is fine
                events.close()


async def _run_ids(events: Any) -> AsyncIterator[str]:
    while (event := await asyncio.to_thread(next, events, None)) is not None:
        yield str(((event.get("Actor") or {}).get("Attributes") or {}).get("srez.run", ""))


async def _health_past_starting(http: aiohttp.ClientSession, port: int) -> bool:
    with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError, KeyError):
        async with http.get(f"http://127.0.0.1:{port}/api/health") as resp:
            return resp.status == 200 and (await resp.json())["phase"] != "starting"
    return False
