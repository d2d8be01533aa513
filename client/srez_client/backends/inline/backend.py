"""The ``inline`` backend behind the common interface (:mod:`srez_client.backends.base`).

``launch`` runs the whole episode with :func:`~srez_client.backends.inline.host.run_inline` (in a
worker thread) and writes the results folder itself, so there is nothing to mirror; it records the run in
``$SREZ_STATE/inline/<run-id>.json`` with its labels, and the ledger makes it owned.

What does not apply, and why: an inline run has no process and no daemon. It is ``exited`` and
finished as soon as ``launch`` returns (``list`` shows it only with ``include_exited``), so
``wait`` returns at once, ``stop`` has nothing to stop, ``keep`` and ``time_limit_s`` have no
effect, ``logs`` yields nothing, and ``endpoint`` and ``token`` raise
:class:`~srez_client.errors.NoDaemonError`. ``remove`` forgets the record, never the results.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from srez_client.backends.base import Backend, LaunchSpec, RunHandle, not_found
from srez_client.backends.config import BackendConfig
from srez_client.backends.inline.config import InlineConfig
from srez_client.backends.inline.host import BACKEND, run_inline
from srez_client.backends.state import Ledger, is_owned, private_dir
from srez_client.errors import NoDaemonError, NotOwnedError, UsageError
from srez_client.layout import RUN_ID_RE
from srez_client.transfer.tree import copy_tree
from srez_core.atomic import atomic_write_json
from srez_env.agents.python_agent import import_path

logger = logging.getLogger(__name__)


class InlineRecord(BaseModel):
    """``$SREZ_STATE/inline/<run-id>.json``: an inline run and where its results are."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    run_id: str
    run_dir: str
    labels: dict[str, str]


class InlineBackend(Backend):
    """Runs in this process, synchronously; see the module docstring for what applies."""

    name: ClassVar[str] = BACKEND
    writes_results: ClassVar[bool] = True

    def __init__(self, state_dir: Path, *, any_owner: bool = False) -> None:
        """Keep records under ``state_dir/inline`` and the ledger under ``state_dir/owned``."""
        self.folder = state_dir / "inline"
        """Where the records are."""
        self.ledger = Ledger(state_dir)
        """Which runs this state launched."""
        self.any_owner = any_owner
        """Act on runs that are not owned."""

    @classmethod
    def from_config(cls, config: BackendConfig) -> Self:
        """The backend an :class:`~.config.InlineConfig` describes."""
        return cls(config.state_dir, **InlineConfig.of(config).options())

    async def launch(self, spec: LaunchSpec) -> RunHandle:
        """Run the whole episode now (in a worker thread) and write its results folder.

        Raises:
            UsageError: For a Python agent (``package.module:Class``) on a task that is not
                packaged: in this process it could read the task's ground truth.
        """
        task = spec.task()
        held = spec.task_file
        if held is not None and import_path(spec.agent_spec) is not None:
            msg = f"--agent {spec.agent_spec}: a Python agent on --backend inline runs in this process, where it could read the ground truth of a task that is not packaged; run it with --backend local (its own sandboxed process)"
            raise UsageError(msg)
        run = await asyncio.to_thread(
            functools.partial(
                run_inline,
                task,
                spec.agent_spec,
                spec.run_seed,
                spec.results_root,
                task_set_digest=held.set_digest if held is not None else None,
            )
        )
        labels = self.ledger.claim(
            run.summary,
            backend=BACKEND,
            results_root=spec.results_root,
            created_at=run.summary.finished_at,
        )
        record = InlineRecord(run_id=run.run_id, run_dir=str(run.run_dir), labels=labels)
        private_dir(self.folder)
        atomic_write_json(self.folder / f"{run.run_id}.json", record)
        return self._handle(record)

    def _handle(self, record: InlineRecord) -> RunHandle:
        labels = record.labels
        return RunHandle(
            run_id=record.run_id,
            backend=BACKEND,
            task_id=labels.get("srez.task", ""),
            agent=labels.get("srez.agent", ""),
            model=labels.get("srez.model", "none"),
            status="exited",
            finished=(Path(record.run_dir) / "summary.json").is_file(),
            owned=is_owned(labels, self.ledger, BACKEND),
            labels=labels,
        )

    def _record(self, run_id: str) -> InlineRecord | None:
        if not RUN_ID_RE.match(run_id):
            return None
        try:
            return InlineRecord.model_validate_json((self.folder / f"{run_id}.json").read_bytes())
        except (OSError, ValidationError):
            return None

    def _owned_record(self, run: RunHandle) -> InlineRecord | None:
        record = self._record(run.run_id)
        if record is None:
            return None
        if not self.any_owner and not is_owned(record.labels, self.ledger, BACKEND):
            msg = (
                f"inline run {run.run_id} was not launched from this state; pass --any to act on it"
            )
            raise NotOwnedError(msg)
        return record

    async def list(self, include_exited: bool = False) -> builtins.list[RunHandle]:
        """Inline runs are never running: listed only with ``include_exited``."""
        if not include_exited or not self.folder.is_dir():
            return []
        records = (self._record(p.stem) for p in sorted(self.folder.glob("*.json")))
        return [self._handle(r) for r in records if r is not None]

    async def endpoint(self, run: RunHandle) -> str:
        """Always raises: inline runs have no daemon."""
        msg = f"inline runs have no daemon (run {run.run_id}); launch with --backend local"
        raise NoDaemonError(msg)

    async def token(self, run: RunHandle) -> str:
        """Always raises: inline runs have no daemon, so no token."""
        msg = f"inline runs have no daemon and no token (run {run.run_id})"
        raise NoDaemonError(msg)

    async def wait(self, run: RunHandle, timeout_s: float | None = None) -> RunHandle:
        """Returns at once: an inline run is finished when ``launch`` returns."""
        record = self._record(run.run_id)
        if record is None:
            raise not_found(BACKEND, run.run_id)
        return self._handle(record)

    async def stop(self, run: RunHandle) -> None:
        """Nothing to stop (checks ownership only)."""
        self._owned_record(run)

    async def remove(self, run: RunHandle) -> None:
        """Forget the run's record and ledger entry; its results folder stays."""
        if self._owned_record(run) is None:
            return
        (self.folder / f"{run.run_id}.json").unlink(missing_ok=True)
        self.ledger.forget(run.run_id)

    async def logs(self, run: RunHandle, *, follow: bool = False) -> AsyncIterator[str]:
        """Nothing: an inline run has no process output of its own."""
        self._owned_record(run)
        empty: tuple[str, ...] = ()
        for chunk in empty:
            yield chunk

    async def copy_out(self, run: RunHandle, dest: Path) -> Path:
        """Copy the run's results folder into ``dest`` (links and special files skipped)."""
        record = self._owned_record(run)
        if record is None:
            raise not_found(BACKEND, run.run_id)
        await asyncio.to_thread(copy_tree, Path(record.run_dir), dest, run_id=run.run_id)
        return dest
