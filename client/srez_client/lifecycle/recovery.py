"""Mirror runs that stopped into their results folders: one run, every run nobody mirrored, or
each run as it stops. The rules every backend shares, composed from its lifecycle alone.

A run whose launcher died (``kill -9`` of ``srez run`` or ``srez eval``) keeps its files only in
its backend's state. ``srez runs list`` (:func:`recover_unmirrored`), ``srez mirror RUN``
(:func:`mirror_stopped`) and ``srez mirror --watch`` (:func:`watch_stopped`) bring such runs into
their ``srez.results`` folder. Per run:

* a backend that writes its results itself (``inline``) has nothing to mirror: skipped;
* a run whose process still runs is skipped (it is mirrored when it stops);
* a run another state launched is refused, unless the backend copies such runs read-only
  (:attr:`~srez_client.backends.base.Backend.copies_unowned`, ``docker``): then its labels must be
  well-formed names (:func:`label_problem`) and its ``srez.results`` the results root given here,
  so a label written by someone else never chooses where this user's files go;
* a run whose results folder exists is skipped: mirroring is idempotent and never replaces a run
  folder (docs/security.md A10: a replayed run id changes nothing);
* otherwise its files are copied out, a run its daemon left without a grade is graded by the host
  from its transcript (:mod:`srez_client.results.regrade`), and it is mirrored. Its state is kept
  unless the caller asks to remove it (``srez runs rm`` deletes it, now that a copy exists).

Watching follows the backend's stops (:meth:`~srez_client.backends.base.Backend.stops`, opened
before the runs already stopped are listed, so a run that stops in between is not missed: it may
be seen twice, which the idempotency absorbs).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from srez_client.backends.base import Backend, RunHandle
from srez_client.errors import ClientError, ResultsError, RunNotFoundError
from srez_client.layout import RUN_ID_RE, run_path
from srez_client.lifecycle.run import CopyOut, collect

Outcome = Literal["mirrored", "skipped", "refused", "failed"]
"""What mirroring a stopped run did; ``failed``: copying or writing went wrong (the run can be
mirrored again later)."""

NOT_OURS = "not launched from this state"
"""Why a run another state launched is refused (where the backend copies none)."""

NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""What a task, agent or model-slug label must look like to name a results folder (docs/security.md
A5)."""


@dataclass(frozen=True, slots=True)
class MirrorOutcome:
    """What happened to one stopped run that was to be mirrored."""

    run_id: str
    outcome: Outcome
    detail: str
    """The results folder, or why."""


@dataclass(frozen=True, slots=True)
class WatchOptions:
    """How :func:`watch_stopped` watches (``srez mirror --watch``)."""

    results_root: Path
    """The only results root accepted for runs this state did not launch."""
    once: bool = False
    """Only the runs stopped now; do not follow stops."""
    timeout_s: float | None = None
    """Stop following after this long (None: until cancelled)."""
    remove: bool = False
    """Remove the runs this state launched once mirrored."""
    report: Callable[[MirrorOutcome], None] | None = None
    """Receives each outcome as it happens."""


def label_problem(labels: Mapping[str, str]) -> str | None:
    """Why a container's labels cannot name a results folder, or None if they can.

    The run id must be ``YYYYMMDDTHHMMSSZ-<8 hex>``; task, agent and model slug (``/`` written
    as ``__``) must match :data:`NAME_RE` (never ``.`` or ``..``); the results root must be an
    absolute path without ``..``.
    """
    run_id = labels.get("srez.run", "")
    if not RUN_ID_RE.match(run_id):
        return f"label srez.run={run_id!r} is not a run id"
    for key in ("srez.task", "srez.agent", "srez.model"):
        value = labels.get(key, "")
        slug = value.replace("/", "__") if key == "srez.model" else value
        if not NAME_RE.match(slug) or slug in (".", ".."):
            return f"label {key}={value!r} cannot name a results folder"
    root = labels.get("srez.results", "")
    if not root.startswith("/") or ".." in Path(root).parts or "\0" in root:
        return f"label srez.results={root!r} is not an absolute folder"
    return None


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


async def mirror_stopped(
    backend: Backend,
    handle: RunHandle,
    scratch: Path,
    *,
    results_root: Path,
    remove: bool = False,
) -> MirrorOutcome:
    """Mirror one run that has stopped into its results folder (``srez mirror RUN``).

    Args:
        backend: The run's backend.
        handle: The run.
        scratch: A private folder for the copy before the mirror.
        results_root: The only results root accepted for a run this state did not launch (on a
            backend that copies such runs at all).
        remove: Remove the run's state once its results folder exists (ours only).
    """
    if backend.writes_results:
        detail = f"the {backend.name} backend writes its results"
        return MirrorOutcome(handle.run_id, "skipped", detail)
    refusal = None
    if not handle.owned and not backend.copies_unowned:
        refusal = NOT_OURS
    elif not handle.owned and handle.status != "running":
        refusal = label_problem(handle.labels)
        accepted = await asyncio.to_thread(results_root.resolve)
        if refusal is None and Path(handle.labels["srez.results"]) != accepted:
            refusal = f"not launched from this state and its results folder {handle.labels['srez.results']!r} is not {str(accepted)!r}"
    copy = backend.copy_out if handle.owned else backend.copy_out_read_only
    gone = "its container is gone" if backend.copies_unowned else "its state is gone"
    return await mirror_one(
        backend, handle, scratch, refusal=refusal, copy=copy, gone=gone, remove=remove
    )


async def recover_unmirrored(backend: Backend, scratch: Path) -> list[MirrorOutcome]:
    """Mirror every stopped, unmirrored run this state launched into its own ``srez.results``
    folder, oldest first, removing nothing (what ``srez runs list`` does first, for runs whose
    launcher died). A backend that writes its results itself has nothing to recover."""
    if backend.writes_results:
        return []
    outcomes = []
    for handle in await backend.copyable():
        if handle.owned and not is_mirrored(handle):
            outcome = await mirror_stopped(
                backend, handle, scratch, results_root=handle.results_root
            )
            outcomes.append(outcome)
    return outcomes


STRAY_WAIT_S: Final = 900.0
"""How long a resumed eval waits for a run its killed predecessor left running before it stops
it (a stopped run is mirrored as it ended, and run again)."""


async def adopt_strays(
    backend: Backend,
    results_root: Path,
    scratch: Path,
    *,
    wait_s: float = STRAY_WAIT_S,
    report: Callable[[str], None] | None = None,
) -> list[MirrorOutcome]:
    """Before a resumed eval plans anything: the runs this state launched into ``results_root``
    that are not mirrored (an eval killed mid-run left them, its daemons in their own sessions).
    Each one still running is waited for (up to ``wait_s``, then stopped), and every one is
    mirrored, so the plan sees what they did and no (agent, task, seed) is played twice."""
    if backend.writes_results:
        return []
    root = await asyncio.to_thread(results_root.resolve)
    strays = [
        h
        for h in await backend.list(include_exited=True)
        if h.owned and h.results_root == root and not is_mirrored(h)
    ]
    if strays and report is not None:
        running = sum(h.status == "running" for h in strays)
        report(
            f"{len(strays)} runs of an earlier eval into {results_root} are not mirrored ({running} still running): adopting them first"
        )
    deadline = asyncio.get_running_loop().time() + wait_s
    outcomes = []
    for handle in strays:
        while handle.status == "running" and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.5)
            try:
                handle = await backend.get(handle.run_id)
            except RunNotFoundError:
                break
        if handle.status == "running":  # waited long enough: stopped, mirrored as it ended
            with contextlib.suppress(ClientError, OSError):
                await backend.stop(handle)
            with contextlib.suppress(RunNotFoundError):
                handle = await backend.get(handle.run_id)
        outcomes.append(await mirror_stopped(backend, handle, scratch, results_root=root))
    return outcomes


async def watch_stopped(
    backend: Backend, scratch: Path, options: WatchOptions
) -> list[MirrorOutcome]:
    """Mirror every stopped run, then (unless ``options.once``) each one as it stops, into their
    results folders (``scratch``: a private folder for copies). Following needs a backend that
    sets :attr:`~srez_client.backends.base.Backend.follows_stops`.

    Returns:
        Every outcome, in order.
    """
    say = options.report or (lambda _outcome: None)
    done: list[MirrorOutcome] = []
    settled: set[str] = set()  # one stop may be reported twice: report a run once

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

    async with contextlib.AsyncExitStack() as stack:
        stops = None
        if not options.once:
            stops = await stack.enter_async_context(backend.stops(options.timeout_s))
        for handle in await backend.list(include_exited=True):
            if handle.status != "running":
                await one(handle)
        if stops is not None:
            async for run_id in stops:
                try:
                    handle = await backend.get(run_id)
                except RunNotFoundError:
                    continue  # removed already (its launcher mirrored it), or not a run id
                if handle.run_id == run_id:
                    await one(handle)
    return done
