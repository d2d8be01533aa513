"""Rebuild every summary of a managed run from its checkpoints (``srez managed summarize``).

Writes each ``targets/<target>/summary.json`` and the combined ``summary.json``, ``summary.md``
and, unless ``png=False``, ``summary.png``; every file atomically. Nothing is read from a
previous summary: they are always rebuilt whole from ``output.json`` and the task files.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from srez_client.managed.models import Checkpoint, ManagedRun
from srez_client.managed.render import draw_png, markdown
from srez_client.managed.store import ManagedPaths, load_checkpoint, load_run, write_model
from srez_client.managed.summary import (
    CombinedSummary,
    combine,
    completed_rewards,
    target_summary,
)
from srez_client.results.provenance import (
    IncompatibleResults,
    Scored,
    check_mergeable,
    leaderboard_provenance,
)
from srez_core.atomic import atomic_write_bytes
from srez_daemon.protocol import RunSummary

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


def scored_runs(run: ManagedRun, target: str, checkpoint: Checkpoint) -> list[Scored]:
    """The completed tasks of a target with their runs' provenance (None where the run's
    ``summary.json`` cannot be read or predates provenance)."""
    out = []
    for task_id, record in sorted(checkpoint.tasks.items()):
        if task_id not in run.tasks or record.status != "completed":
            continue
        provenance = None
        if record.results_dir:
            try:
                path = Path(record.results_dir) / "summary.json"
                provenance = RunSummary.model_validate_json(path.read_bytes()).provenance
            except (OSError, ValueError) as e:
                logger.warning("%s %s: no provenance: %s", target, task_id, e)
        out.append(Scored(f"{target} {task_id} ({record.results_dir})", task_id, provenance))
    return out


def provenance_note(scored: list[Scored]) -> str:
    """The provenance line of a set of runs, or why they do not compare."""
    try:
        check_mergeable(scored)
    except IncompatibleResults as e:
        return f"these scores do not compare: {e}"
    return leaderboard_provenance(scored).describe()


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
    everything: list[Scored] = []
    for target in run.targets:
        checkpoint = load_checkpoint(paths, target.name)
        rewards[target.name] = completed_rewards(run, checkpoint)
        scored = scored_runs(run, target.name, checkpoint)
        everything += scored
        summary = target_summary(run, target, checkpoint, diffs).model_copy(
            update={"provenance": leaderboard_provenance(scored).as_json()}
        )
        folder = paths.target_dir(target.name)
        folder.mkdir(parents=True, exist_ok=True)
        write_model(folder / "summary.json", summary)
        summaries.append(summary)
    combined = combine(run, summaries, rewards).model_copy(
        update={
            "provenance": leaderboard_provenance(everything).as_json(),
            "provenance_note": provenance_note(everything),
        }
    )
    write_model(paths.root / "summary.json", combined)
    atomic_write_bytes(paths.root / "summary.md", markdown(combined).encode())
    if png:
        atomic_write_bytes(paths.root / "summary.png", draw_png(combined))
    return combined
