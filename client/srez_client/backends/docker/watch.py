"""Mirror stopped ``docker`` runs into their results folders: one run, or each as it stops.

The hooks :meth:`~srez_client.backends.docker.backend.DockerBackend.mirror_stopped` (``srez mirror
RUN``, and what recovers a run whose ``srez run`` died: the container finishes on its own, stops,
and is mirrored from its labels) and ``watch_stopped`` (``srez mirror --watch``). Per container,
the rules of :mod:`srez_client.backends.recovery`, with what containers add:

* a container this state launched (owner, nonce and container id match) is copied out with
  :meth:`~srez_client.backends.docker.backend.DockerBackend.copy_out` into its ``srez.results``
  folder; with ``remove`` it is removed once its run folder exists (mirrored now or before);
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
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srez_client.backends.base import MirrorOutcome, RunHandle, WatchOptions
from srez_client.backends.docker.container_attrs import label_problem
from srez_client.backends.recovery import mirror_one
from srez_client.errors import RunNotFoundError

if TYPE_CHECKING:  # the backend imports this module for its hooks
    from srez_client.backends.docker.backend import DockerBackend

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
    refusal = None
    if not handle.owned and handle.status != "running":
        refusal = label_problem(handle.labels)
        accepted = await asyncio.to_thread(results_root.resolve)
        if refusal is None and Path(handle.labels["srez.results"]) != accepted:
            refusal = f"not launched from this state and its results folder {handle.labels['srez.results']!r} is not {str(accepted)!r}"
    return await mirror_one(
        backend,
        handle,
        scratch,
        refusal=refusal,
        copy=backend.copy_out if handle.owned else backend.copy_out_read_only,
        gone="its container is gone",
        remove=remove,
    )


async def watch(
    backend: DockerBackend, scratch: Path, options: WatchOptions
) -> list[MirrorOutcome]:
    """Mirror every stopped srez container, then (unless ``options.once``) each one as the
    engine reports it stopped (its ``die`` or ``stop`` event).

    Returns:
        Every outcome, in order.
    """
    say = options.report or (lambda _outcome: None)
    done: list[MirrorOutcome] = []
    settled: set[str] = set()  # one stop gives two events (die, stop): report a run once

    async def one(handle: RunHandle) -> None:
        if handle.run_id in settled:
            return
        outcome = await mirror_stopped(
            backend, handle, scratch, results_root=options.results_root, remove=options.remove
        )
        if outcome.outcome in ("mirrored", "refused") or outcome.detail.startswith("already"):
            settled.add(handle.run_id)
        done.append(outcome)
        say(outcome)

    events = None if options.once else await _open_events(backend, options.timeout_s)
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
