"""docs/security.md §4 test 37: SIGKILL at every crash point of the checkpoint writer.

A forked child rewrites a real checkpoint (``output.json``) with the writer the runner uses
(:func:`srez_client.managed.store.save_checkpoint`); the ``os`` calls on its path are wrapped so
that the child kills itself with SIGKILL just before or just after the n-th call, or in the
middle of writing the data (half of it written and flushed). Whatever happens, the file must
parse as the old or the new checkpoint and is never empty.
"""

from __future__ import annotations

import io
import os
import random
import signal
from pathlib import Path
from typing import Any

import pytest

from srez_client.managed.models import Checkpoint, TaskRecord
from srez_client.managed.store import ManagedPaths, load_checkpoint, save_checkpoint

WRAPPED = ("open", "fchmod", "fsync", "replace", "close", "rename", "unlink")


def _checkpoint(n: int, salt: int) -> Checkpoint:
    records = {
        f"sre-{i:03d}": TaskRecord(
            task_id=f"sre-{i:03d}",
            attempt=1 + salt % 3,
            status="completed",
            started_at="2026-01-01T00:00:00.000Z",
            reward=(i * salt % 97) / 97,
            error="x" * (salt % 50),
        )
        for i in range(n)
    }
    return Checkpoint(target="scripted", tasks=records)


def _crash_child(paths: ManagedPaths, new: Checkpoint, point: int) -> None:
    """In the child: count events, SIGKILL self at event ``point``, then write ``new``."""
    events = 0

    def tick() -> None:
        nonlocal events
        events += 1
        if events == point:
            os.kill(os.getpid(), signal.SIGKILL)

    def wrap(name: str) -> None:
        real = getattr(os, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            tick()
            result = real(*args, **kwargs)
            tick()
            return result

        setattr(os, name, wrapped)

    for name in WRAPPED:
        wrap(name)
    real_fdopen = os.fdopen

    def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
        f = real_fdopen(fd, *args, **kwargs)
        real_write = f.write

        def write(data: bytes) -> int:
            half = len(data) // 2
            real_write(data[:half])
            f.flush()
            tick()  # torn: half the data is in the temp file
            rest: int = real_write(data[half:])
            return half + rest

        f.write = write
        return f

    os.fdopen = fdopen
    save_checkpoint(paths, new)


def crash_sweep(tmp: Path, points: int, seed: int) -> tuple[int, int]:
    """Run ``points`` crash points; returns (outcomes equal to old, equal to new)."""
    rng = random.Random(seed)
    old_count = new_count = 0
    done = 0
    case = 0
    while done < points:
        case += 1
        paths = ManagedPaths(tmp / f"case-{case}")
        paths.target_dir("scripted").mkdir(parents=True)
        first = case % 5 == 0  # sometimes there is no old file
        old = None if first else _checkpoint(rng.randint(0, 40), rng.randint(1, 1000))
        if old is not None:
            save_checkpoint(paths, old)
        new = _checkpoint(rng.randint(0, 40), rng.randint(1, 1000))
        point = 1
        while done < points:
            backup = paths.output("scripted").read_bytes() if old is not None else None
            pid = os.fork()
            if pid == 0:  # the child: crash at ``point``, or finish
                try:
                    _crash_child(paths, new, point)
                finally:
                    os._exit(0)
            _, status = os.waitpid(pid, 0)
            killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            target = paths.output("scripted")
            if target.exists():
                assert target.stat().st_size > 0, "zero-length checkpoint"
                got = load_checkpoint(paths, "scripted")
                assert got in (old, new)
                if got == new:
                    new_count += 1
                else:
                    old_count += 1
            else:
                assert old is None, "the old checkpoint vanished"
                old_count += 1
            done += 1
            if not killed:
                break  # every point of this write was covered
            if backup is not None:  # start the next point from the old file again
                paths.output("scripted").write_bytes(backup)
            elif target.exists():
                target.unlink()
            point += 1
    return old_count, new_count


def test_managed_atomic_checkpoint_crash_points_reduced(tmp_path: Path) -> None:
    old, new = crash_sweep(tmp_path, points=60, seed=5)
    assert old + new == 60
    assert old > 0 and new > 0  # both outcomes were reached: the crash points were real


@pytest.mark.slow
def test_managed_atomic_checkpoint_crash_points_1000(tmp_path: Path) -> None:
    old, new = crash_sweep(tmp_path, points=1000, seed=9)
    assert old + new == 1000
    assert old > 0 and new > 0


def test_managed_crash_child_really_writes(tmp_path: Path) -> None:
    """The wrapped writer, with no crash point reached, writes the new checkpoint."""
    paths = ManagedPaths(tmp_path)
    paths.target_dir("scripted").mkdir(parents=True)
    new = _checkpoint(3, 7)
    pid = os.fork()
    if pid == 0:
        try:
            _crash_child(paths, new, point=10_000)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert load_checkpoint(paths, "scripted") == new
    assert io.BytesIO(paths.output("scripted").read_bytes()).read(1) == b"{"
