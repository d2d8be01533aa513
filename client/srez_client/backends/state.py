"""The client's own state under ``$SREZ_STATE``: which runs it launched, and their labels.

Discovery uses labels, authority does not (docs/design.md §8, docs/security.md A10). When a backend
launches a run it writes a ledger entry ``$SREZ_STATE/owned/<run-id>.json`` holding a fresh 128-bit
nonce and the launcher's uid, and gives the run the same nonce and uid as labels. A run is *owned*,
and the client acts on it (copy out, stop, remove), only when its labels and the ledger agree on
both; a stale record, a replayed run id or another user's run with our labels is listed but left
alone unless the caller passes ``any_owner`` (``--any``).

Every state file is written atomically (temp file, fsync, rename, fsync of the folder), and the
state folders are private (0700).
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from srez_client.backends.base import not_found
from srez_client.errors import BackendError
from srez_client.layout import RUN_ID_RE
from srez_core.atomic import atomic_write_json
from srez_daemon.protocol import srez_version

if TYPE_CHECKING:
    from srez_daemon.protocol import RunManifest, RunSummary

logger = logging.getLogger(__name__)

NONCE_BYTES: Final = 16
"""A nonce is 128 bits, written as 32 hex digits."""

Record = TypeVar("Record", bound=BaseModel)


class OwnedRun(BaseModel):
    """A ledger entry: this state launched the run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    run_id: str
    backend: str
    nonce: str
    owner: int
    """uid of the launcher."""
    created_at: str


def new_nonce() -> str:
    """A fresh 128-bit nonce (hex)."""
    return secrets.token_hex(NONCE_BYTES)


def make_labels(
    *,
    run_id: str,
    task_id: str,
    model: str,
    agent: str,
    results_root: Path,
    nonce: str,
    owner: int,
    version: str,
) -> dict[str, str]:
    """The labels of docs/design.md §8 for a run."""
    return {
        "srez.run": run_id,
        "srez.task": task_id,
        "srez.model": model,
        "srez.agent": agent,
        "srez.results": str(results_root),
        "srez.nonce": nonce,
        "srez.owner": str(owner),
        "srez.version": version,
    }


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 if missing; return it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


class Ledger:
    """The ledger of runs this state launched: ``<state>/owned/<run-id>.json``."""

    def __init__(self, state_dir: Path) -> None:
        """Use the ledger under ``state_dir`` (created on first write)."""
        self.folder = state_dir / "owned"
        """Where the entries live."""

    def _path(self, run_id: str) -> Path:
        if not RUN_ID_RE.match(run_id):
            msg = f"run id {run_id!r} is malformed (expected YYYYMMDDTHHMMSSZ-<8 hex>)"
            raise BackendError(msg)
        return self.folder / f"{run_id}.json"

    def add(self, entry: OwnedRun) -> None:
        """Record that this state launched ``entry.run_id`` (atomic write)."""
        private_dir(self.folder)
        atomic_write_json(self._path(entry.run_id), entry)

    def claim(
        self, run: RunManifest | RunSummary, *, backend: str, results_root: Path, created_at: str
    ) -> dict[str, str]:
        """Record that this state launched ``run`` under a fresh nonce; the run's labels
        (docs/design.md §8), which carry that nonce and this user's uid, as :func:`is_owned` checks
        them."""
        nonce, owner = new_nonce(), os.getuid()
        entry = OwnedRun(
            run_id=run.run_id, backend=backend, nonce=nonce, owner=owner, created_at=created_at
        )
        self.add(entry)
        return make_labels(
            run_id=run.run_id,
            task_id=run.task_id,
            model=run.model,
            agent=run.agent,
            results_root=results_root,
            nonce=nonce,
            owner=owner,
            version=srez_version(),
        )

    def get(self, run_id: str) -> OwnedRun | None:
        """The entry of ``run_id``, or None (missing, unreadable or invalid)."""
        try:
            data = self._path(run_id).read_bytes()
        except (OSError, BackendError):
            return None
        try:
            return OwnedRun.model_validate_json(data)
        except ValidationError:
            logger.warning("ignored an invalid ledger entry for run %s", run_id)
            return None

    def backends(self) -> set[str]:
        """The backends of the runs this state launched and has not removed (from every
        readable entry; none when there is no ledger yet)."""
        try:
            names = [p.stem for p in self.folder.iterdir() if p.suffix == ".json"]
        except OSError:
            return set()
        return {entry.backend for entry in map(self.get, names) if entry is not None}

    def changed(self) -> tuple[int, int]:
        """What changes when an entry is added or dropped: the folder's mtime (ns) and how many
        names it holds (two changes within one tick of the file system's clock still differ
        in count); ``(0, 0)`` when there is no ledger yet."""
        try:
            return self.folder.stat().st_mtime_ns, sum(1 for _ in self.folder.iterdir())
        except OSError:
            return 0, 0

    def forget(self, run_id: str) -> None:
        """Drop the entry of ``run_id`` (idempotent)."""
        try:
            self._path(run_id).unlink(missing_ok=True)
        except BackendError:
            return


def is_owned(labels: dict[str, str], ledger: Ledger, backend: str) -> bool:
    """Whether labels carry this state's owner uid and the nonce its ledger holds for the run."""
    run_id = labels.get("srez.run", "")
    entry = ledger.get(run_id)
    if entry is None or entry.backend != backend:
        return False
    owner = str(os.getuid())
    return (
        labels.get("srez.owner") == owner
        and entry.owner == os.getuid()
        and secrets.compare_digest(labels.get("srez.nonce", ""), entry.nonce)
    )


def read_record(folder: Path, run_id: str, model: type[Record]) -> Record | None:
    """A run's record, ``<folder>/<run-id>/record.json``, or None (a malformed run id, a missing,
    unreadable or invalid file)."""
    if not RUN_ID_RE.match(run_id):
        return None
    try:
        return model.model_validate_json((folder / run_id / "record.json").read_bytes())
    except (OSError, ValidationError):
        return None


def read_token(folder: Path, backend: str, run_id: str) -> str:
    """A run's token from the client's own state folder (``<folder>/<run-id>/token``); never from
    the run itself.

    Raises:
        RunNotFoundError: If there is none (the run is gone).
    """
    try:
        return (folder / run_id / "token").read_text().strip()
    except OSError as e:
        raise not_found(backend, run_id) from e
