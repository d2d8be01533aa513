"""The Inspect task: SRE-Zero's tasks as samples, the solver, the scorer.

``inspect eval srez/sre_zero --model ...`` builds it through :func:`srez._inspect.sre_zero` (the
entry point registers that module; Inspect names a task after the top-level package that
defines it, hence the one-module package ``srez``); in Python, ``inspect_ai.eval(sre_zero_task(...))``.
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task

from srez_client.integrations.inspect.dataset import Names, TaskSelection, task_dataset
from srez_client.integrations.inspect.scorer import srez_scorer
from srez_client.integrations.inspect.solver import srez_agent


def sre_zero_task(
    tasks: Names = None,
    difficulty: Names = None,
    tasks_dir: str | Path | None = None,
    seed: int | None = None,
    count: int | None = None,
    kinds: Names = None,
) -> Task:
    """SRE-Zero as an Inspect task (the arguments are those of
    :class:`~srez_client.integrations.inspect.dataset.TaskSelection`).

    Raises:
        ValueError: A task argument is wrong or selects no task.
    """
    selection = TaskSelection.of(tasks, difficulty, tasks_dir, seed, count, kinds)
    chosen = selection.load()
    return Task(
        dataset=task_dataset(chosen),
        solver=srez_agent({task.id: task for task in chosen}),
        scorer=srez_scorer(),
    )
