"""Maintenance of managed runs: the exported queue, deletions, and starting a detached runner.

Deletion never reaches outside what a managed run owns: ``delete`` removes its folder only, and
``delete-target-artifacts`` removes exactly the results folders the target's attempts name, and
only when they sit at their place in the results layout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from srez_client.errors import UsageError
from srez_client.layout import run_path
from srez_client.managed.models import check_name
from srez_client.managed.plan import queue, queue_commands
from srez_client.managed.store import (
    ManagedError,
    ManagedPaths,
    load_checkpoint,
    load_run,
    runner_alive,
)
from srez_core.atomic import atomic_write_bytes


def _paths(root: Path, name: str) -> ManagedPaths:
    return ManagedPaths.of(root, name)


def export_queue(root: Path, name: str, *, program: str = "srez") -> tuple[Path, Path]:
    """Write ``command.sh`` and ``command.ps1``: the remaining targets, in queue order."""
    paths = _paths(root, name)
    run = load_run(paths)
    checkpoints = {t.name: load_checkpoint(paths, t.name) for t in run.targets}
    sh, ps1 = queue_commands(run, queue(run, checkpoints), program=program)
    atomic_write_bytes(paths.root / "command.sh", sh.encode())
    (paths.root / "command.sh").chmod(0o755)
    atomic_write_bytes(paths.root / "command.ps1", ps1.encode())
    return paths.root / "command.sh", paths.root / "command.ps1"


def delete_target_artifacts(root: Path, name: str, target: str) -> list[Path]:
    """Delete a target's results folders (those its attempts name, at their layout place only)
    and its folder under ``targets/``; the target stays queued and starts over.

    Returns:
        The results folders deleted.
    """
    paths = _paths(root, name)
    run = load_run(paths)
    found = run.target(check_name(target, "target name"))
    if found is None:
        msg = f"managed run {name!r} has no target {target!r}"
        raise UsageError(msg)
    _refuse_if_running(paths)
    deleted: list[Path] = []
    for record in load_checkpoint(paths, target).tasks.values():
        for attempt in record.attempts():
            if attempt.run_id is None or attempt.results_dir is None:
                continue
            expected = run_path(
                Path(run.results_root), record.task_id, found.model, found.agent, attempt.run_id
            )
            here = Path(attempt.results_dir)
            if here == expected and here.is_dir() and not here.is_symlink():
                shutil.rmtree(here)
                deleted.append(here)
    folder = paths.target_dir(target)
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)
    return deleted


def delete_managed(root: Path, name: str) -> Path:
    """Delete the managed run's folder, and nothing else (its runs' results stay)."""
    paths = _paths(root, name)
    load_run(paths)
    _refuse_if_running(paths)
    if paths.root.is_symlink():
        msg = f"{paths.root} is a symbolic link; not deleting through it"
        raise ManagedError(msg)
    shutil.rmtree(paths.root)
    return paths.root


def _refuse_if_running(paths: ManagedPaths) -> None:
    if runner_alive(paths):
        msg = f"managed run {paths.root.name!r} has a runner; 'srez managed stop' it first"
        raise ManagedError(msg)


def start_runner(
    root: Path, name: str, *, target: str | None = None, retry_failed: bool = False
) -> int:
    """Start ``srez managed run`` as a detached process (its output goes to ``runner.out``).

    Returns:
        The runner's pid (it takes the run's lock itself; a second runner exits at once).
    """
    import subprocess
    import sys

    paths = _paths(root, name)
    load_run(paths)
    argv = [sys.executable, "-m", "srez_client.cli", "managed", "run", name, "--results", str(root)]
    argv += ["--target", check_name(target, "target name")] if target else []
    argv += ["--retry-failed"] if retry_failed else []
    with (paths.root / "runner.out").open("ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    return proc.pid
