"""The results layout on the host (docs/design.md §7) and the durable writes that build it.

A run lives in ``results/<task>/<model>/<agent>/<run-id>/``: ``<model>`` is the model slug with
``/`` written as ``__`` (``none`` for the baselines) and ``<run-id>`` is
``YYYYMMDDTHHMMSSZ-<8 hex>``. A run is written into ``.<run-id>.partial/`` beside its final place
and renamed when complete, so a folder under its final name is always complete. Its files:

* ``run.json``: what was launched (:class:`~srez_daemon.protocol.RunManifest`);
* ``archive/dialog.jsonl``: the dialog (:mod:`srez_daemon.protocol.dialog`);
* ``archive/transcript.jsonl``: the environment's own step log (replayable);
* ``result.json``: the grade; ``final.patch`` and ``reference.patch``: the two diffs;
* ``summary.json``: how it ended (:class:`~srez_daemon.protocol.RunSummary`), written last.

Durability: a folder made with ``sync=False`` (the inline backend's runs) writes its files
without an fsync per write or dialog entry; :meth:`RunFolder.complete` then flushes the folder
whole, once (:func:`~srez_core.atomic.fsync_tree`: one ``syncfs`` on Linux), before the
atomic rename and the fsync of the parent. A crash before the rename
leaves only the ``.partial`` folder (discarded, never reported); after it, the whole run is on
disk. With ``sync=True`` each file is flushed as it is written (the daemon's live dialog).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Self

from pydantic import BaseModel

from srez_client.errors import ResultsError
from srez_core.atomic import atomic_write_bytes, atomic_write_json, fsync_dir, fsync_tree
from srez_core.clock import Clock, system_clock
from srez_daemon.record.storage import DialogWriter

logger = logging.getLogger(__name__)

RandomBytes = Callable[[int], bytes]
"""Returns n random bytes (``os.urandom`` in production)."""

RUN_ID_RE: Final = re.compile(r"\A[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}\Z")
"""What a run id looks like."""

DIALOG_PATH: Final = Path("archive") / "dialog.jsonl"
"""Where the dialog sits inside a run folder."""

_UNSAFE_COMPONENT: Final = re.compile(r"[\x00-\x1f\x7f]")


def new_run_id(now: datetime, random_bytes: RandomBytes = os.urandom) -> str:
    """Make a run id, ``YYYYMMDDTHHMMSSZ-<8 hex>``.

    Args:
        now: The start time of the run (aware).
        random_bytes: Source of the 4 random bytes of the suffix.

    Returns:
        The run id.
    """
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{random_bytes(4).hex()}"


def model_slug(model: str | None) -> str:
    """The results-folder name of a model: ``/`` written as ``__``; ``none`` for no model.

    Args:
        model: A model slug such as ``anthropic/claude-x``, or None / ``""`` for baselines.

    Returns:
        A single, safe path component.

    Raises:
        ResultsError: If the name cannot be a folder name (``..``, control characters).
    """
    if not model:
        return "none"
    return path_component(model.replace("/", "__").replace("\\", "__"), "model")


def path_component(name: str, what: str) -> str:
    """Check that ``name`` is usable as one folder name inside the results tree.

    Args:
        name: The candidate name.
        what: What the name is, for the error message (``task``, ``agent``, ...).

    Returns:
        ``name`` unchanged.

    Raises:
        ResultsError: If it is empty, ``.`` or ``..``, or holds a separator or control character.
    """
    if (
        name in ("", ".", "..")
        or "/" in name
        or "\\" in name
        or _UNSAFE_COMPONENT.search(name)
        or len(name.encode()) > 200
    ):
        msg = f"{what} name {name!r} cannot be a results folder name (no '/', '..' or control characters)"
        raise ResultsError(msg)
    return name


def run_path(results_root: Path, task_id: str, model: str | None, agent: str, run_id: str) -> Path:
    """The final folder of a run: ``<root>/<task>/<model slug>/<agent>/<run-id>``.

    Raises:
        ResultsError: If a component is not a safe folder name or the run id is malformed.
    """
    if not RUN_ID_RE.match(run_id):
        msg = f"run id {run_id!r} is malformed (expected YYYYMMDDTHHMMSSZ-<8 hex>)"
        raise ResultsError(msg)
    agent_dir = path_component(agent.replace("/", "__").replace("\\", "__"), "agent")
    return results_root / path_component(task_id, "task") / model_slug(model) / agent_dir / run_id


class RunFolder:
    """A run folder being written under ``.<run-id>.partial/`` and renamed when complete."""

    def __init__(self, final_dir: Path, *, sync: bool = True) -> None:
        """Prepare (not create) the folders; see :meth:`create`."""
        self.sync = sync
        """fsync each file as it is written; when False, :meth:`complete` flushes them all once."""
        self.final_dir = final_dir
        """Where the run ends up."""
        self.partial_dir = final_dir.with_name(f".{final_dir.name}.partial")
        """Where it is written until :meth:`complete`."""
        self._completed = False
        self._handed_over = False

    @classmethod
    def create(cls, final_dir: Path, *, sync: bool = True) -> Self:
        """Create the partial folder (and the parents of the final one); ``sync``: as in the
        module's docstring.

        Raises:
            ResultsError: If the run folder or its partial folder already exists.
        """
        folder = cls(final_dir, sync=sync)
        if final_dir.exists():
            msg = f"run folder {final_dir} already exists; a run is never overwritten"
            raise ResultsError(msg)
        final_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            folder.partial_dir.mkdir()
        except FileExistsError as e:
            msg = f"run folder {folder.partial_dir} already exists; is another run writing it?"
            raise ResultsError(msg) from e
        return folder

    @property
    def completed(self) -> bool:
        """Whether :meth:`complete` has renamed the folder."""
        return self._completed

    def path(self, relative: Path | str) -> Path:
        """A path inside the folder as it is now (partial until complete), parents created."""
        base = self.final_dir if self._completed else self.partial_dir
        target = base / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def write_bytes(self, relative: Path | str, data: bytes) -> Path:
        """Write a file atomically; returns its path."""
        target = self.path(relative)
        atomic_write_bytes(target, data, sync=self.sync)
        return target

    def write_json(self, relative: Path | str, value: BaseModel | dict[str, object]) -> Path:
        """Write a JSON file atomically; returns its path."""
        target = self.path(relative)
        atomic_write_json(target, value, sync=self.sync)
        return target

    def open_dialog(self, *, clock: Clock = system_clock) -> DialogWriter:
        """Create ``archive/dialog.jsonl`` and return its writer."""
        return DialogWriter(self.path(DIALOG_PATH), clock=clock, sync=self.sync)

    def hand_over(self) -> None:
        """Mark the folder as whole and another's to complete (a
        :class:`~srez_client.commit_queue.CommitQueue`'s): :meth:`discard` leaves it alone from
        now on, since deleting it while the queue renames it would empty its final folder."""
        self._handed_over = True

    def discard(self) -> None:
        """Delete the partial folder of a run that will not complete (interrupted, failed);
        nothing once :meth:`complete` has renamed it or it was handed over (:meth:`hand_over`)."""
        if not (self._completed or self._handed_over):
            shutil.rmtree(self.partial_dir, ignore_errors=True)

    def complete(self, *, flushed: bool = False) -> Path:
        """Rename the partial folder to its final name, durably.

        Args:
            flushed: The folder's files were flushed after its last write (a
                :class:`~srez_client.commit_queue.CommitQueue` flushes several folders at once).

        Returns:
            The final folder.

        Raises:
            ResultsError: If the final folder appeared meanwhile (it is never replaced).
        """
        if self._completed:
            return self.final_dir
        if not flushed:
            if self.sync:  # each file was flushed as written: their folders' entries remain
                for folder in sorted(
                    (p for p in self.partial_dir.rglob("*") if p.is_dir() and not p.is_symlink()),
                    key=lambda p: len(p.parts),
                    reverse=True,
                ):
                    fsync_dir(folder)
                fsync_dir(self.partial_dir)
            else:  # written without a flush: the whole folder at once, before the rename
                fsync_tree(self.partial_dir)
        if self.final_dir.exists():
            msg = f"run folder {self.final_dir} appeared while the run was written; kept {self.partial_dir}"
            raise ResultsError(msg)
        self.partial_dir.rename(self.final_dir)
        fsync_dir(self.final_dir.parent)
        self._completed = True
        logger.debug("completed run folder %s", self.final_dir)
        return self.final_dir
