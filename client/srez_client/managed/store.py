"""The folder of a managed run, ``<results>/managed/<name>/``, and its file I/O.

Every state file is written with :func:`srez_core.atomic.atomic_write_bytes` (temp file,
fsync, rename, fsync of the folder), so a crash at any point leaves the old or the new version.
The runner holds an exclusive ``flock`` on ``runner.lock`` for its whole life: the kernel drops it
when the process dies, even on ``kill -9``, so "is a runner alive" never trusts a stale pid.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from srez_client.errors import ClientError, UsageError
from srez_client.managed.models import Checkpoint, ManagedRun, PauseInfo, RunnerState, check_name
from srez_core.atomic import atomic_write_bytes

M = TypeVar("M", bound=BaseModel)


class ManagedError(ClientError):
    """A managed run cannot be read or changed as asked (missing, busy, corrupt)."""


@dataclass(frozen=True, slots=True)
class ManagedPaths:
    """Where the files of one managed run are."""

    root: Path
    """The run's folder, ``<results>/managed/<name>``."""

    @classmethod
    def of(cls, results_root: Path, name: str) -> ManagedPaths:
        """The paths of managed run ``name`` under ``results_root`` (the name is validated)."""
        return cls(results_root / "managed" / check_name(name, "managed run name"))

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def pause(self) -> Path:
        return self.root / "PAUSE"

    @property
    def runner_json(self) -> Path:
        return self.root / "runner.json"

    @property
    def runner_lock(self) -> Path:
        return self.root / "runner.lock"

    def target_dir(self, target: str) -> Path:
        """``targets/<target>/`` (the name is validated)."""
        return self.root / "targets" / check_name(target, "target name")

    def output(self, target: str) -> Path:
        return self.target_dir(target) / "output.json"


def write_model(path: Path, value: BaseModel) -> None:
    """Write a model as indented JSON, atomically."""
    atomic_write_bytes(path, value.model_dump_json(indent=2).encode() + b"\n")


def read_model(path: Path, cls: type[M]) -> M | None:
    """A model from a JSON file; None when the file is missing.

    Raises:
        ManagedError: If the file exists but does not parse (names the file).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return cls.model_validate_json(data)
    except ValidationError as e:
        msg = f"{path} is not a valid {cls.__name__}: {e.errors()[0]['msg']}"
        raise ManagedError(msg) from e


def load_run(paths: ManagedPaths) -> ManagedRun:
    """``run.json``.

    Raises:
        UsageError: If there is no such managed run.
    """
    run = read_model(paths.run_json, ManagedRun)
    if run is None:
        msg = f"no managed run {paths.root.name!r} (no {paths.run_json}); see 'srez managed list'"
        raise UsageError(msg)
    return run


def load_checkpoint(paths: ManagedPaths, target: str) -> Checkpoint:
    """A target's ``output.json``, or an empty checkpoint."""
    found = read_model(paths.output(target), Checkpoint)
    return found if found is not None else Checkpoint(target=target)


def save_checkpoint(paths: ManagedPaths, checkpoint: Checkpoint) -> None:
    """Rewrite a target's ``output.json`` atomically."""
    folder = paths.target_dir(checkpoint.target)
    folder.mkdir(parents=True, exist_ok=True)
    write_model(folder / "output.json", checkpoint)


def read_pause(paths: ManagedPaths) -> PauseInfo | None:
    """The ``PAUSE`` flag; an unreadable one still pauses (as a ``user`` pause)."""
    if not paths.pause.exists():
        return None
    try:
        return read_model(paths.pause, PauseInfo)
    except ManagedError:
        return PauseInfo(reason="user", at="", day="", message="PAUSE (unreadable content)")


def write_pause(paths: ManagedPaths, info: PauseInfo) -> None:
    """Write ``PAUSE``."""
    write_model(paths.pause, info)


def clear_pause(paths: ManagedPaths) -> bool:
    """Remove ``PAUSE``; True if there was one."""
    try:
        paths.pause.unlink()
    except FileNotFoundError:
        return False
    return True


def file_sha256(path: Path) -> str | None:
    """sha256 of a regular file (links are not followed), None when it is not one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def verified(results_dir: str | None, sha256: str | None) -> bool:
    """Whether a results folder is complete and its ``result.json`` has the recorded hash."""
    if not results_dir or not sha256:
        return False
    folder = Path(results_dir)
    return (folder / "summary.json").is_file() and file_sha256(folder / "result.json") == sha256


class RunnerLock:
    """The runner's exclusive lock on ``runner.lock``; see the module docstring."""

    def __init__(self, paths: ManagedPaths) -> None:
        self.paths = paths
        self.fd: int | None = None

    def acquire(self) -> None:
        """Take the lock.

        Raises:
            ManagedError: If another runner holds it.
        """
        fd = os.open(self.paths.runner_lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            state = read_model(self.paths.runner_json, RunnerState)
            pid = f" (pid {state.pid})" if state else ""
            msg = f"managed run {self.paths.root.name!r} already has a runner{pid}"
            raise ManagedError(msg) from None
        self.fd = fd

    def release(self) -> None:
        """Drop the lock (and ``runner.json``)."""
        self.paths.runner_json.unlink(missing_ok=True)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def runner_alive(paths: ManagedPaths) -> bool:
    """Whether a runner holds the lock of this managed run now."""
    try:
        fd = os.open(paths.runner_lock, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    return False


def live_runner(paths: ManagedPaths) -> RunnerState | None:
    """The runner's state when one is alive, else None."""
    if not runner_alive(paths):
        return None
    try:
        return read_model(paths.runner_json, RunnerState)
    except ManagedError:
        return None
