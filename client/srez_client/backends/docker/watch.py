"""Mirror stopped ``docker`` runs into their results folders: one run, or each as it stops.

What ``srez mirror`` does, and what recovers a run whose ``srez run`` died (``kill -9``): the
container finishes on its own, stops, and is mirrored from its labels. Per container:

* a container that still runs is skipped (it is mirrored when it stops);
* a run whose results folder exists is skipped: mirroring is idempotent, and an existing run
  folder is never replaced (SECURITY.md A10: a replayed run id changes nothing);
* a container this state launched (owner, nonce and container id match) is copied out with
  :meth:`~srez_client.backends.docker.backend.DockerBackend.copy_out` into its ``srez.results`` folder
  (a run its daemon left without a grade is graded from its transcript first,
  :mod:`srez_client.results.regrade`);
  with ``remove`` it is removed once its run folder exists (mirrored now or before);
* any other container is mirrored read-only (never paused, stopped or removed), and only when its
  labels are well-formed names and its ``srez.results`` is the results root given here: a label
  written by someone else never chooses where this user's files go.

Watching follows the engine's ``die`` and ``stop`` events of containers labelled ``srez.run``;
the event stream is opened before the containers already stopped are listed, so a run that stops
in between is not missed (it may be seen twice, which the idempotency absorbs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from srez_client.backends.base import RunHandle
from srez_client.backends.docker.backend import DockerBackend
from srez_client.backends.docker.state import label_problem
from srez_client.backends.local.recover import MirrorOutcome as MirrorOutcome  # re-exported
from srez_client.backends.local.recover import Outcome as Outcome  # re-exported
from srez_client.errors import ClientError, ResultsError, RunNotFoundError
from srez_client.mirror.copier import mirror_run
from srez_client.results.layout import run_path
from srez_client.results.regrade import regrade_copy
from srez_client.runs import manifest_for

logger = logging.getLogger(__name__)


async def mirror_stopped(
    backend: DockerBackend,
    handle: RunHandle,
    scratch: Path,
    *,
    results_root: Path,
    remove: bool = False,
) -> MirrorOutcome:
    """Mirror one run if its container has stopped; see the module docstring for the rules.

    Args:
        backend: The docker backend.
        handle: The run.
        scratch: A private folder for the copy before the mirror.
        results_root: The only results root accepted for runs this state did not launch.
        remove: Remove the container once mirrored (runs this state launched only).
    """
    run_id = handle.run_id
    if handle.status == "running":
        return MirrorOutcome(run_id, "skipped", "still running")
    if not handle.owned:
        problem = label_problem(handle.labels)
        accepted = await asyncio.to_thread(results_root.resolve)
        if problem is None and Path(handle.labels["srez.results"]) != accepted:
            problem = f"not launched from this state and its results folder {handle.labels['srez.results']!r} is not {str(accepted)!r}"
        if problem is not None:
            return MirrorOutcome(run_id, "refused", problem)
    root = handle.results_root
    try:
        final = run_path(root, handle.task_id, handle.model, handle.agent, run_id)
    except ResultsError as e:
        return MirrorOutcome(run_id, "refused", str(e))
    if await asyncio.to_thread(_exists, final):
        if remove and handle.owned:
            await backend.remove(handle)
        return MirrorOutcome(run_id, "skipped", f"already mirrored in {final}")
    await asyncio.to_thread(scratch.mkdir, mode=0o700, parents=True, exist_ok=True)
    copied = scratch / f".copy-{run_id}-{secrets.token_hex(4)}"
    try:
        if handle.owned:
            await backend.copy_out(handle, copied)
        else:
            await backend.copy_out_read_only(handle, copied)
        await asyncio.to_thread(regrade_copy, copied, run_id)
        manifest = manifest_for(handle, copied)
        path = await asyncio.to_thread(mirror_run, copied, root, manifest)
    except RunNotFoundError:
        return MirrorOutcome(run_id, "skipped", "its container is gone")
    except (ClientError, OSError) as e:
        return MirrorOutcome(run_id, "failed", str(e))
    finally:
        await asyncio.to_thread(shutil.rmtree, copied, True)
    if remove and handle.owned:
        await backend.remove(handle)
    return MirrorOutcome(run_id, "mirrored", str(path))


async def mirror_ours_stopped(backend: DockerBackend, scratch: Path) -> list[MirrorOutcome]:
    """Mirror every stopped run this state launched that is not mirrored yet (what the next
    ``srez runs`` call does for a run whose ``srez run`` died): the runs are ours, so their own
    ``srez.results`` folder is used, and nothing is removed."""
    outcomes: list[MirrorOutcome] = []
    for handle in await backend.list(include_exited=True):
        if handle.owned and handle.status != "running":
            outcome = await mirror_stopped(
                backend, handle, scratch, results_root=handle.results_root
            )
            outcomes.append(outcome)
    return outcomes


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


async def watch(
    backend: DockerBackend,
    scratch: Path,
    *,
    results_root: Path,
    once: bool = False,
    timeout_s: float | None = None,
    remove: bool = False,
    report: Callable[[MirrorOutcome], None] | None = None,
) -> list[MirrorOutcome]:
    """Mirror every stopped srez container, then (unless ``once``) each one as it stops.

    Args:
        backend: The docker backend.
        scratch: A private folder for copies.
        results_root: The results root accepted for runs this state did not launch.
        once: Only the containers stopped now; do not follow events.
        timeout_s: Stop following events after this long (None: until cancelled).
        remove: Remove the containers this state launched once mirrored.
        report: Receives each outcome as it happens.

    Returns:
        Every outcome, in order.
    """
    say = report or (lambda _outcome: None)
    done: list[MirrorOutcome] = []
    settled: set[str] = set()  # one stop gives two events (die, stop): report a run once

    async def one(handle: RunHandle) -> None:
        if handle.run_id in settled:
            return
        outcome = await mirror_stopped(
            backend, handle, scratch, results_root=results_root, remove=remove
        )
        if outcome.outcome in ("mirrored", "refused") or outcome.detail.startswith("already"):
            settled.add(handle.run_id)
        done.append(outcome)
        say(outcome)

    events = None if once else await _open_events(backend, timeout_s)
    try:
        for handle in await backend.list(include_exited=True):
            if handle.status != "running":
                await one(handle)
        while events is not None:
            event = await asyncio.to_thread(next, events, None)
            if event is None:
                break
            run_id = str(((event.get("Actor") or {}).get("Attributes") or {}).get("srez.run", ""))
            try:
                handle = await backend.get(run_id)
            except RunNotFoundError:
                continue  # removed already (its launcher mirrored it), or not a run id
            if handle.run_id == run_id:
                await one(handle)
    finally:
        if events is not None:
            with contextlib.suppress(Exception):  # closing a stream that ended is fine
                events.close()
    return done


async def _open_events(backend: DockerBackend, timeout_s: float | None) -> Any:
    """The engine's stream of ``die``/``stop`` events of srez containers (decoded dicts)."""
    client = await backend.client()
    until = None
    if timeout_s is not None:
        until = int(datetime.now(UTC).timestamp() + timeout_s) + 1
    filters = {"label": "srez.run", "type": "container", "event": ["die", "stop"]}
    return await asyncio.to_thread(client.events, filters=filters, decode=True, until=until)
