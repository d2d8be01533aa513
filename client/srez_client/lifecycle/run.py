"""A run from launch to its results folder, on any backend: launch, wait, stop if late, mirror.

Used by ``srez run`` and ``srez eval --backend local``. The results folder is named from the
run's labels (what this client launched), never from files the run wrote; ``run.json`` from the
run folder fills the rest of the manifest only when it agrees with the labels.

When to mirror (docs/security.md A5: only what has stopped): a run without ``keep`` is mirrored
after its daemon has exited; a run with ``keep`` is mirrored once it is finished (``summary.json``
written: the run's files no longer change, though the daemon's log may still grow), and keeps
serving until it is stopped.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from srez_client.backends.base import Backend, LaunchSpec, RunHandle
from srez_client.disk import free_bytes, is_no_space
from srez_client.errors import BackendError, ResultsError
from srez_client.layout import run_path
from srez_client.lifecycle.launch import RunLauncher
from srez_client.mirror.copier import mirror_run
from srez_client.results.finder import read_summary
from srez_client.results.regrade import regrade_copy
from srez_client.transfer.fs import read_small_model
from srez_daemon.protocol import RunManifest, RunSummary
from srez_env.task import Task

logger = logging.getLogger(__name__)

EXIT_GRACE_S: Final = 30.0
"""How long a finished run's daemon may take to exit before it is stopped."""
STOP_WAIT_S: Final = 30.0
"""How long a stopped run may take to write its summary and exit."""

Progress = Callable[[str], None]
"""Receives one line of progress (for stderr)."""
CopyOut = Callable[[RunHandle, Path], Awaitable[Path]]
"""Copies a run's folder to a path (:meth:`Backend.copy_out` or a read-only variant)."""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """A run that ended and was mirrored."""

    handle: RunHandle
    results_dir: Path
    summary: RunSummary | None
    """``summary.json`` of the results folder (None if the run never wrote one)."""
    timed_out: bool = False
    """The client stopped the run because it did not finish in time."""


def manifest_for(handle: RunHandle, copied: Path | None) -> RunManifest:
    """The manifest naming a run's results folder: its labels, completed from ``run.json``."""
    labels = handle.labels
    naming = {
        "run_id": handle.run_id,
        "task_id": labels.get("srez.task", handle.task_id),
        "model": labels.get("srez.model", handle.model),
        "agent": labels.get("srez.agent", handle.agent),
    }
    manifest = (
        read_small_model(copied, b"run.json", RunManifest, 1 << 20) if copied is not None else None
    )
    if manifest is not None:
        if any(getattr(manifest, k) != v for k, v in naming.items()):
            logger.warning("run %s: run.json disagrees with its labels; labels win", handle.run_id)
        return manifest.model_copy(update=naming)
    # no run.json, or one that is not valid (read_small_model logged it): name from the labels
    return RunManifest(
        **naming,
        agent_spec=naming["agent"],
        backend=handle.backend,
        run_seed=0,
        srez_version=labels.get("srez.version", "0+unknown"),
        started_at="1970-01-01T00:00:00Z",
    )


async def collect(
    backend: Backend,
    handle: RunHandle,
    scratch: Path,
    *,
    copy: CopyOut | None = None,
    task: Task | None = None,
) -> Path:
    """Mirror a run into its results root (label ``srez.results``); returns the results folder.

    A run its daemon left without ``result.json`` is graded by the host from its transcript
    before the mirror (:func:`srez_client.results.regrade.regrade_copy`).

    Backends that write results themselves (``inline``) need no copy: their folder is returned.

    Args:
        backend: Where the run executed.
        handle: The run.
        scratch: A private folder for the copy before the mirror.
        copy: How the run's folder is copied out (default :meth:`Backend.copy_out`).
        task: The task the host handed the run, if it is not packaged (for a host grade).

    Raises:
        BackendError: If the run cannot be copied out.
        ResultsError: If a label cannot name a results folder.
    """
    root = handle.results_root
    if backend.writes_results:
        return run_path(root, handle.task_id, handle.model, handle.agent, handle.run_id)
    await asyncio.to_thread(scratch.mkdir, mode=0o700, parents=True, exist_ok=True)
    copied = scratch / f".copy-{handle.run_id}-{secrets.token_hex(4)}"
    try:
        await (copy or backend.copy_out)(handle, copied)
        await asyncio.to_thread(regrade_copy, copied, handle.run_id, task)
        manifest = manifest_for(handle, copied)
        return await asyncio.to_thread(mirror_run, copied, root, manifest)
    except OSError as e:
        if not is_no_space(e):
            raise
        where = root if e.filename is None or str(e.filename).startswith(str(root)) else scratch
        free = free_bytes(where)
        msg = (
            f"cannot mirror run {handle.run_id} into {where}: no space left on the device"
            f" ({free} bytes free); the run is kept: free some space, then `srez runs list`"
            " mirrors it"
        )
        raise ResultsError(msg) from e
    finally:
        await asyncio.to_thread(shutil.rmtree, copied, True)


async def run_to_results(
    backend: Backend,
    spec: LaunchSpec,
    scratch: Path,
    *,
    timeout_s: float | None = None,
    progress: Progress | None = None,
    handle: RunHandle | None = None,
    launcher: RunLauncher | None = None,
) -> RunOutcome:
    """Launch (unless ``handle`` is given), wait, stop if late, and mirror a run.

    Args:
        backend: Where the run executes.
        spec: What to run.
        scratch: A private folder for the copy before the mirror.
        timeout_s: Stop the run if it is not finished after this long.
        progress: Receives progress lines.
        handle: An already launched run to follow instead of launching one.
        launcher: What launched it, or launches it (default: a launcher of this run alone,
            whose model relay is closed once the run has ended); the run's relay token is
            revoked once it has ended.

    Returns:
        The outcome, with the results folder.

    Raises:
        BackendError: If the run cannot be launched or copied out.
        srez_env.errors.EnvError: If the task or agent is unknown.
    """
    own = launcher is None
    runs = RunLauncher(backend) if launcher is None else launcher
    try:
        return await _follow(backend, spec, scratch, timeout_s, progress, handle, runs)
    finally:
        if own:
            runs.close()


async def _follow(
    backend: Backend,
    spec: LaunchSpec,
    scratch: Path,
    timeout_s: float | None,
    progress: Progress | None,
    handle: RunHandle | None,
    launcher: RunLauncher,
) -> RunOutcome:
    say = progress or (lambda _line: None)
    if handle is None:
        handle = await launcher.launch(spec)
        say(f"run {handle.run_id}: launched on {backend.name}")
    try:
        handle, timed_out = await _wait_ended(backend, spec, handle, timeout_s, say)
    finally:
        launcher.revoke(handle.run_id)  # the agent phase is over: its model is no longer its
    if not handle.finished:
        logger.warning("run %s ended without summary.json", handle.run_id)
    task = await asyncio.to_thread(spec.task) if spec.task_file is not None else None
    results = await collect(backend, handle, scratch, task=task)
    say(f"run {handle.run_id}: results in {results}")
    return RunOutcome(handle, results, read_summary(results), timed_out)


async def _wait_ended(
    backend: Backend,
    spec: LaunchSpec,
    handle: RunHandle,
    timeout_s: float | None,
    say: Progress,
) -> tuple[RunHandle, bool]:
    """Wait until the run is finished (stopping it if late) and, unless kept, its process gone."""
    timed_out = False
    try:
        handle = await backend.wait(handle, timeout_s)
    except TimeoutError:
        timed_out = True
        say(f"run {handle.run_id}: not finished after {timeout_s:g} s; stopping it")
        await backend.stop(handle)
        handle = await backend.wait(handle, STOP_WAIT_S)
    if not spec.keep and handle.status == "running":
        try:
            handle = await _wait_exit(backend, handle, EXIT_GRACE_S)
        except TimeoutError:
            say(
                f"run {handle.run_id}: daemon still up {EXIT_GRACE_S:g} s after the run; stopping it"
            )
            await backend.stop(handle)
    return handle, timed_out


async def _wait_exit(backend: Backend, handle: RunHandle, timeout_s: float) -> RunHandle:
    """Wait until the run's process is gone."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    delay = 0.01
    while handle.status == "running":
        if loop.time() >= deadline:
            msg = f"run {handle.run_id} still running"
            raise TimeoutError(msg)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)
        handle = await backend.get(handle.run_id)
    return handle


async def wait_stopped(backend: Backend, handle: RunHandle, poll_s: float = 0.5) -> RunHandle:
    """Wait, without a limit, until the run's process (its container) has stopped: how
    ``srez run --keep-container`` waits for ``srez runs stop`` or ``docker stop``."""
    while handle.status == "running":
        await asyncio.sleep(poll_s)
        handle = await backend.get(handle.run_id)
    return handle


def scratch_dir(state_dir: Path) -> Path:
    """The private folder copies wait in before their mirror."""
    return state_dir / "tmp"


def check_backend(backend: Backend, spec: LaunchSpec) -> None:
    """Refuse options a backend cannot honour.

    Raises:
        BackendError: ``keep`` on a backend that writes results itself (there is no daemon).
    """
    if spec.keep and backend.writes_results:
        msg = f"--keep needs a daemon; the {backend.name} backend has none (use --backend local)"
        raise BackendError(msg)
