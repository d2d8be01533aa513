"""Which containers are runs, and which are ours: the discovery half of the ``docker`` backend.

Containers are discovered by the label ``srez.run`` (Authority, docs/security.md A10): the backend
acts on one (endpoint, token, logs, copy-out, stop, remove) only when this state's ledger holds its
nonce and owner uid *and* its record (``$SREZ_STATE/docker/<run-id>/record.json``) names that very
container (by id, pinned at creation), unless ``any_owner`` is set. Two containers claiming one run
id show as one: ours, else the newest.

The Docker SDK is synchronous: every call goes through ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from srez_client.backends.base import LABEL_KEYS, Backend, RunHandle, not_found
from srez_client.backends.docker import engine
from srez_client.backends.docker.container_attrs import SeenContainer
from srez_client.backends.docker.state import DockerRecord
from srez_client.backends.state import Ledger, is_owned, read_record
from srez_client.errors import NotOwnedError
from srez_client.layout import RUN_ID_RE

logger = logging.getLogger(__name__)

BACKEND: Final = "docker"
Inspected = tuple[SeenContainer, dict[str, Any]] | None
"""A container and its attributes, or None when it is gone."""


class ContainerRuns(Backend):
    """A backend whose runs are containers of one engine, found by their labels.

    Args:
        state_dir: The client's state folder (``$SREZ_STATE``).
        client_factory: Makes the SDK client; called once, lazily.
        any_owner: Act on containers this state did not launch.
    """

    def __init__(
        self, state_dir: Path, *, client_factory: Callable[[], Any], any_owner: bool = False
    ) -> None:
        self.state_dir = state_dir
        """The client's state folder."""
        self.folder = state_dir / "docker"
        """One folder per run this state launched."""
        self.ledger = Ledger(state_dir)
        """Which runs this state launched."""
        self.any_owner = any_owner
        self._factory = client_factory
        self._client: engine.DockerClient | None = None
        self._client_lock = asyncio.Lock()
        self._finished_exited: set[str] = set()  # containers seen exited with summary.json

    async def client(self) -> engine.DockerClient:
        """The SDK client (made on first use, in a thread).

        Raises:
            BackendError: If no engine answers.
        """
        async with self._client_lock:
            if self._client is None:
                self._client = await asyncio.to_thread(engine.connect, self._factory)
            return self._client

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, await self.client(), *args, **kwargs)

    # ------------------------------------------------------------------ discovery

    def _record(self, run_id: str) -> DockerRecord | None:
        return read_record(self.folder, run_id, DockerRecord)

    def _is_ours(self, seen: SeenContainer) -> bool:
        """Owner uid and nonce match the ledger, and the record names this very container."""
        record = self._record(seen.run_id)
        if record is None:
            return False
        pinned = (
            seen.id == record.container_id
            if record.container_id
            else seen.name == record.container_name
        )
        return pinned and is_owned(seen.labels, self.ledger, BACKEND)

    async def _finished(self, seen: SeenContainer) -> bool:
        """Whether ``/srez/summary.json`` is a regular file in the container."""
        if seen.id in self._finished_exited:
            return True
        found = await self._call(engine.has_regular_file, seen.id, "/srez/summary.json")
        if found and seen.status == "exited":
            self._finished_exited.add(seen.id)  # a stopped container's files do not change
        return bool(found)

    async def _handle(self, seen: SeenContainer) -> RunHandle:
        return RunHandle.from_labels(
            BACKEND,
            {k: seen.labels[k] for k in LABEL_KEYS if k in seen.labels},
            status=seen.status,
            finished=await self._finished(seen),
            owned=self._is_ours(seen),
        )

    def _pick(self, candidates: builtins.list[SeenContainer]) -> SeenContainer | None:
        """Of containers claiming one run id: ours if one is, else the newest."""
        ours = [c for c in candidates if self._is_ours(c)]
        pool = ours or candidates
        return max(pool, key=lambda c: c.created) if pool else None

    async def list(self, include_exited: bool = False) -> builtins.list[RunHandle]:
        """Containers labelled ``srez.run`` with a well-formed run id, oldest run first."""
        seen: builtins.list[SeenContainer] = await self._call(
            engine.list_labelled, None, include_exited
        )
        by_run: dict[str, builtins.list[SeenContainer]] = {}
        for item in seen:
            if RUN_ID_RE.match(item.run_id):
                by_run.setdefault(item.run_id, []).append(item)
            else:
                logger.debug("ignored container %s: label srez.run is not a run id", item.id[:12])
        chosen = [self._pick(group) for _, group in sorted(by_run.items())]
        return list(await asyncio.gather(*(self._handle(c) for c in chosen if c is not None)))

    async def get(self, run: str) -> RunHandle:
        """The run ``run`` (a whole run id is found without listing every container)."""
        if not RUN_ID_RE.match(run):
            return await super().get(run)
        seen = await self._locate(run)
        if seen is None:
            raise not_found(BACKEND, run)
        return await self._handle(seen)

    async def _locate(self, run_id: str) -> SeenContainer | None:
        """The run's container (ours, pinned by id, when this state launched it), or None."""
        record = self._record(run_id)
        if record is not None and record.container_id:
            found: Inspected = await self._call(engine.inspect, record.container_id)
            return None if found is None else found[0]
        candidates: builtins.list[SeenContainer] = await self._call(
            engine.list_labelled, run_id, True
        )
        if record is not None:  # created but its id not recorded yet: pinned by name
            candidates = [c for c in candidates if c.name == record.container_name]
        return self._pick(candidates)

    def _authorize(self, seen: SeenContainer) -> None:
        if not self.any_owner and not self._is_ours(seen):
            msg = f"docker run {seen.run_id} (container {seen.id[:12]}) was not launched from this state ({self.state_dir}); pass --any to act on it"
            raise NotOwnedError(msg)

    async def _require(self, run: RunHandle) -> SeenContainer:
        seen = await self._locate(run.run_id)
        if seen is None:
            raise not_found(BACKEND, run.run_id)
        self._authorize(seen)
        return seen

    async def _forget(self, run_id: str) -> None:
        """Delete ``docker/<run-id>`` (renamed aside first: one of many callers wins) and the
        ledger entry."""
        if not RUN_ID_RE.match(run_id):
            return
        trash = self.folder / f".removing-{run_id}-{secrets.token_hex(4)}"
        with contextlib.suppress(FileNotFoundError):
            (self.folder / run_id).rename(trash)
            await asyncio.to_thread(shutil.rmtree, trash, True)
        self.ledger.forget(run_id)
