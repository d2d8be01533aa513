"""Recover runs nobody mirrored: a ``local`` run whose ``srez run`` or ``srez eval`` was killed.

A local run whose launcher died keeps its files only under ``$SREZ_STATE/live/<run-id>/run``.
``srez mirror RUN`` and ``srez runs list`` mirror such runs of this state into their own
``srez.results`` folder, as :mod:`srez_client.backends.docker.watch` does for docker containers:

* a run whose daemon still runs is skipped (it is mirrored when it stops);
* a run whose results folder exists is skipped: mirroring is idempotent and never replaces a
  run folder;
* otherwise its agent, if its daemon died and left it, is killed, its files are copied out, a
  run without a grade is graded by the host from its transcript (:mod:`srez_client.results.regrade`),
  and it is mirrored. Its live state is kept (``srez runs rm`` deletes it, now that a copy
  exists).

Only runs this state launched are recovered (owner and nonce match): their own labels name the
results folder.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from srez_client.backends.base import Backend, RunHandle
from srez_client.errors import ClientError, ResultsError, RunNotFoundError
from srez_client.results.layout import run_path
from srez_client.runs import collect

logger = logging.getLogger(__name__)

Outcome = Literal["mirrored", "skipped", "refused", "failed"]
"""``failed``: copying or writing went wrong (the run can be mirrored again later)."""


@dataclass(frozen=True, slots=True)
class MirrorOutcome:
    """What happened to one run."""

    run_id: str
    outcome: Outcome
    detail: str
    """The results folder, or why."""


def results_folder(handle: RunHandle) -> Path:
    """Where the run is mirrored to, from its labels.

    Raises:
        ResultsError: If a label cannot name a results folder.
    """
    return run_path(handle.results_root, handle.task_id, handle.model, handle.agent, handle.run_id)


def is_mirrored(handle: RunHandle) -> bool:
    """Whether the run's results folder exists (a bad label counts as not mirrored)."""
    try:
        final = results_folder(handle)
    except ResultsError:
        return False
    return final.exists() or final.is_symlink()


async def mirror_owned(backend: Backend, handle: RunHandle, scratch: Path) -> MirrorOutcome:
    """Mirror one stopped run this state launched; see the module docstring for the rules."""
    run_id = handle.run_id
    if handle.status == "running":
        return MirrorOutcome(run_id, "skipped", "still running")
    if not handle.owned:
        return MirrorOutcome(run_id, "refused", "not launched from this state")
    try:
        final = results_folder(handle)
    except ResultsError as e:
        return MirrorOutcome(run_id, "refused", str(e))
    if await asyncio.to_thread(is_mirrored, handle):
        return MirrorOutcome(run_id, "skipped", f"already mirrored in {final}")
    try:
        path = await collect(backend, handle, scratch)
    except RunNotFoundError:
        return MirrorOutcome(run_id, "skipped", "its state is gone")
    except (ClientError, OSError) as e:
        return MirrorOutcome(run_id, "failed", str(e))
    return MirrorOutcome(run_id, "mirrored", str(path))


async def mirror_owned_stopped(backend: Backend, scratch: Path) -> list[MirrorOutcome]:
    """Mirror every stopped, unmirrored run this state launched (what the next ``srez runs
    list`` does for runs whose launcher died), oldest first."""
    outcomes = []
    for handle in await backend.list(include_exited=True):
        if handle.owned and handle.status != "running" and not is_mirrored(handle):
            outcomes.append(await mirror_owned(backend, handle, scratch))
    return outcomes
