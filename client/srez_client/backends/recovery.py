"""Mirror runs that stopped: the rules every backend's mirror hooks share.

A run whose launcher died (``kill -9`` of ``srez run`` or ``srez eval``) keeps its files only in
its backend's state. ``srez runs list`` (:meth:`~srez_client.backends.base.Backend.recover_unmirrored`)
and ``srez mirror RUN`` (:meth:`~srez_client.backends.base.Backend.mirror_stopped`) bring such runs
into their ``srez.results`` folder. Per run:

* a run whose process still runs is skipped (it is mirrored when it stops);
* a run the backend may not mirror here is refused (by default, any run this state did not
  launch: its labels would choose where this user's files go);
* a run whose results folder exists is skipped: mirroring is idempotent and never replaces a run
  folder (docs/security.md A10: a replayed run id changes nothing);
* otherwise its files are copied out, a run its daemon left without a grade is graded by the host
  from its transcript (:mod:`srez_client.results.regrade`), and it is mirrored. Its state is kept
  unless the caller asks to remove it (``srez runs rm`` deletes it, now that a copy exists).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from srez_client.backends.base import Backend, MirrorOutcome, RunHandle
from srez_client.errors import ClientError, ResultsError, RunNotFoundError
from srez_client.results.layout import run_path
from srez_client.runs import CopyOut, collect

NOT_OURS = "not launched from this state"
"""Why a run another state launched is refused (where the backend accepts none)."""


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


async def mirror_one(
    backend: Backend,
    handle: RunHandle,
    scratch: Path,
    *,
    remove: bool = False,
    refusal: str | None = None,
    copy: CopyOut | None = None,
    gone: str = "its state is gone",
) -> MirrorOutcome:
    """Mirror one run by the rules of the module docstring.

    Args:
        backend: The run's backend.
        handle: The run.
        scratch: A private folder for the copy before the mirror.
        remove: Remove the run's state once its results folder exists (runs of this state only).
        refusal: Why the run may not be mirrored here (None: it may).
        copy: How its folder is copied out (default :meth:`Backend.copy_out`).
        gone: What to say when the run vanished before its copy.
    """
    run_id = handle.run_id
    if handle.status == "running":
        return MirrorOutcome(run_id, "skipped", "still running")
    if refusal is not None:
        return MirrorOutcome(run_id, "refused", refusal)
    try:
        final = results_folder(handle)
    except ResultsError as e:
        return MirrorOutcome(run_id, "refused", str(e))
    if await asyncio.to_thread(is_mirrored, handle):
        if remove and handle.owned:
            await backend.remove(handle)
        return MirrorOutcome(run_id, "skipped", f"already mirrored in {final}")
    try:
        path = await collect(backend, handle, scratch, copy=copy)
    except RunNotFoundError:
        return MirrorOutcome(run_id, "skipped", gone)
    except (ClientError, OSError) as e:
        return MirrorOutcome(run_id, "failed", str(e))
    if remove and handle.owned:
        await backend.remove(handle)
    return MirrorOutcome(run_id, "mirrored", str(path))


async def mirror_unmirrored(backend: Backend, scratch: Path) -> list[MirrorOutcome]:
    """Mirror every stopped, unmirrored run this state launched into its own ``srez.results``
    folder, oldest first, removing nothing (what the next ``srez runs list`` does for runs
    whose launcher died)."""
    outcomes = []
    for handle in await backend.list(include_exited=True):
        if handle.owned and handle.status != "running" and not is_mirrored(handle):
            outcome = await backend.mirror_stopped(
                handle, scratch, results_root=handle.results_root
            )
            outcomes.append(outcome)
    return outcomes
