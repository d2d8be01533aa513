"""Helpers for the client tests: the expert's actions for a task, read from its file; the
``srez`` command run as a user runs it."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from srez_client.cli import main
from srez_env.task import Task

Digest = TypeVar("Digest")
SREZ = Path(sys.executable).parent / "srez"
"""The installed ``srez`` command of this environment."""


def srez_command(
    state: Path, *args: str, cwd: Path | None = None, timeout: float = 240, **env: str
) -> subprocess.CompletedProcess[str]:
    """``srez ARGS`` in a subprocess with its own ``SREZ_STATE`` and ``env`` added."""
    return subprocess.run(
        [str(SREZ), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "SREZ_STATE": str(state), **env},
        cwd=cwd,
        check=False,
        timeout=timeout,
    )


def expert_actions(task: Task) -> list[dict[str, object]]:
    """The oracle's trajectory (docs/environment.md §3.10): evidence, declare, reference fix,
    submit."""
    actions: list[dict[str, object]] = [
        {"tool": item.tool, "args": {**item.match, **item.oracle_args}}
        for item in task.ground_truth.required_evidence
    ]
    root = task.ground_truth.root_cause
    actions.append(
        {"tool": "declare_root_cause", "args": {"service": root.service, "fault": root.fault}}
    )
    actions += [{"tool": a.tool, "args": dict(a.args)} for a in task.reference_fix]
    actions.append({"tool": "submit", "args": {}})
    return actions


def one_line_error(proc: subprocess.CompletedProcess[str], needle: str) -> None:
    """``proc`` failed as a usage error (exit 2) with one line ``srez: error: ...`` naming ``needle``."""
    assert proc.returncode == 2, proc
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("srez: error: "), proc.stderr
    assert needle in lines[0], lines[0]


def after_a_killed_mirror(final: Path, digest: Callable[[Path], Digest], reference: Digest) -> str:
    """What a mirror killed midway left under its final name: ``absent``, or ``complete`` (then
    asserted equal to ``reference`` and removed for the next try), never a partial folder."""
    if not final.exists():
        return "absent"
    assert digest(final) == reference  # complete, never partial under the final name
    shutil.rmtree(final)
    return "complete"


def play(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    task_id: str,
    lines: str,
) -> str:
    """What ``srez play TASK`` prints when a person types ``lines`` (it must exit 0)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    assert main(["play", task_id]) == 0
    return capsys.readouterr().out


@dataclass(frozen=True)
class HeldOut:
    """A generated task set in a folder of its own, as a held-out set is kept."""

    folder: Path
    tasks: dict[str, Task]
    digest: str

    @property
    def first(self) -> Task:
        return next(iter(self.tasks.values()))


def held_out_set(folder: Path, seed: int, count: int) -> HeldOut:
    """Generate the first ``count`` tasks of the set of ``seed`` into ``folder`` (made here)."""
    from srez_client.task_sets import folder_set, write_generated_set

    folder.mkdir(parents=True)
    write_generated_set(folder, seed, count)
    found = folder_set(folder)
    return HeldOut(found.folder or folder, found.tasks, found.digest)
