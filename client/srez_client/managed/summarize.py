"""Rebuild every summary of a managed run from its checkpoints (``srez managed summarize``).

Writes each ``targets/<target>/summary.json`` and the combined ``summary.json``, ``summary.md``
and, unless ``png=False``, ``summary.png``; every file atomically. Nothing is read from a
previous summary: they are always rebuilt whole from ``output.json`` and the task files.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from srez_client.managed.models import ManagedRun
from srez_client.managed.render import draw_png, markdown
from srez_client.managed.store import ManagedPaths, load_checkpoint, load_run, write_model
from srez_client.managed.summary import (
    CombinedSummary,
    combine,
    completed_rewards,
    target_summary,
)
from srez_daemon.record.storage import atomic_write_bytes

logger = logging.getLogger(__name__)


def task_difficulties(run: ManagedRun) -> Mapping[str, str]:
    """Task id → difficulty, from the packaged tasks (``unknown`` for tasks it cannot load)."""
    from srez_env.errors import EnvError
    from srez_env.tasks import load_tasks

    try:
        return {t.id: t.difficulty for t in load_tasks(list(run.tasks))}
    except EnvError as e:
        logger.warning("cannot read task difficulties: %s", e)
        return {}


def summarize(
    paths: ManagedPaths,
    *,
    png: bool = True,
    difficulty: Mapping[str, str] | None = None,
) -> CombinedSummary:
    """Rebuild and write every summary; returns the combined one."""
    run = load_run(paths)
    diffs = task_difficulties(run) if difficulty is None else difficulty
    summaries = []
    rewards: dict[str, dict[str, list[float]]] = {}
    for target in run.targets:
        checkpoint = load_checkpoint(paths, target.name)
        rewards[target.name] = completed_rewards(run, checkpoint)
        summary = target_summary(run, target, checkpoint, diffs)
        folder = paths.target_dir(target.name)
        folder.mkdir(parents=True, exist_ok=True)
        write_model(folder / "summary.json", summary)
        summaries.append(summary)
    combined = combine(run, summaries, rewards)
    write_model(paths.root / "summary.json", combined)
    atomic_write_bytes(paths.root / "summary.md", markdown(combined).encode())
    if png:
        atomic_write_bytes(paths.root / "summary.png", draw_png(combined))
    return combined
