"""The Inspect AI registry of ``srez`` (entry point ``inspect_ai: srez``): ``srez/sre_zero``."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task

from srez_client.integrations.inspect import sre_zero_task


@task
def sre_zero(
    tasks: str | list[str] | None = None,
    difficulty: str | list[str] | None = None,
    tasks_dir: str | None = None,
    seed: int | None = None,
    count: int | None = None,
    kinds: str | list[str] | None = None,
) -> Task:
    """SRE-Zero: incident response in a simulated production system, graded in five checks.

    Args:
        tasks: Task ids (a comma list; default: all).
        difficulty: Keep only these tiers: easy, medium, hard (a comma list).
        tasks_dir: Read the task files of this folder instead of the packaged ones.
        seed: Generate a fresh task set from this seed (as ``srez tasks generate``).
        count: Tasks in the generated set (default 40).
        kinds: Fault kinds of the generated set (a comma list; default: all).
    """
    return sre_zero_task(
        tasks, difficulty, Path(tasks_dir) if tasks_dir else None, seed, count, kinds
    )
