"""Which tasks an Inspect eval plays, and the dataset of them (one sample per task).

The task arguments (``-T name=value`` on ``inspect eval``) select the tasks, as ``srez eval``
and ``srez tasks generate`` do:

* ``tasks``: task ids, a comma list or a list (default: all of them);
* ``difficulty``: keep only these tiers (``easy``, ``medium``, ``hard``; a comma list or a list);
* ``tasks_dir``: read the task files of this folder instead of the packaged 40 (a set written by
  ``srez tasks generate``, or tasks of one's own);
* ``seed`` (and ``count``, default 40; ``kinds``): generate a fresh set on demand, the tasks
  ``srez tasks generate --seed S --count N`` writes (it cannot be combined with ``tasks_dir``).

A sample's id is its task id and its input the incident prompt; its metadata says the task's
title, difficulty and fault kind (nothing more of the ground truth).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from inspect_ai.dataset import MemoryDataset, Sample

from srez_env.env import SREEnv
from srez_env.generator import sets
from srez_env.task import Task
from srez_env.tasks import load_task, load_tasks

DIFFICULTIES: Final = ("easy", "medium", "hard")
DEFAULT_COUNT: Final = 40
"""Tasks in a generated set when ``count`` is not given (as ``srez tasks generate``)."""

Names = str | Sequence[str] | None
"""A task argument naming several things: a comma list, a list, or None for all."""


@dataclass(frozen=True, slots=True)
class TaskSelection:
    """The task arguments, checked."""

    tasks: tuple[str, ...] | None = None
    difficulty: tuple[str, ...] | None = None
    tasks_dir: Path | None = None
    seed: int | None = None
    count: int = DEFAULT_COUNT
    kinds: tuple[str, ...] | None = None

    @classmethod
    def of(
        cls,
        tasks: Names = None,
        difficulty: Names = None,
        tasks_dir: str | Path | None = None,
        seed: int | None = None,
        count: int | None = None,
        kinds: Names = None,
    ) -> TaskSelection:
        """Checks the task arguments.

        Raises:
            ValueError: One line naming the argument that is wrong and what it accepts.
        """
        wanted = _names("difficulty", difficulty)
        if wanted is not None and (bad := [d for d in wanted if d not in DIFFICULTIES]):
            msg = f"difficulty {bad[0]!r} is not one of {', '.join(DIFFICULTIES)}"
            raise ValueError(msg)
        if seed is not None and tasks_dir is not None:
            msg = "give seed (a generated set) or tasks_dir (task files), not both"
            raise ValueError(msg)
        if seed is None and (count is not None or kinds is not None):
            msg = "count and kinds select a generated set: give its seed too (-T seed=S)"
            raise ValueError(msg)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            msg = f"seed must be an integer >= 0, got {seed!r}"
            raise ValueError(msg)
        return cls(
            tasks=_names("tasks", tasks),
            difficulty=wanted,
            tasks_dir=Path(tasks_dir) if tasks_dir is not None else None,
            seed=seed,
            count=DEFAULT_COUNT if count is None else count,
            kinds=_names("kinds", kinds),
        )

    def load(self) -> list[Task]:
        """The selected tasks, in order (ids as given, else sorted by id).

        Raises:
            ValueError: No task matches, an id is unknown, or a task file is invalid
                (:class:`~srez_env.errors.TaskError` is a ValueError).
        """
        found = self._source()
        if self.tasks is not None:
            by_id = {task.id: task for task in found}
            if unknown := [i for i in self.tasks if i not in by_id]:
                msg = f"unknown task id {unknown[0]!r} ({self._where()})"
                raise ValueError(msg)
            found = [by_id[i] for i in self.tasks]
        if self.difficulty is not None:
            found = [task for task in found if task.difficulty in self.difficulty]
        if not found:
            msg = f"no task matches these arguments ({self._where()})"
            raise ValueError(msg)
        return found

    def _source(self) -> list[Task]:
        if self.seed is not None:
            return sets.generate(self.seed, self.count, self.kinds, self.difficulty)
        if self.tasks_dir is None:
            return load_tasks()
        files = sorted(self.tasks_dir.glob("*.yaml"))
        if not files:
            msg = f"no task files (*.yaml) in {self.tasks_dir}"
            raise ValueError(msg)
        return sorted((load_task(path) for path in files), key=lambda task: task.id)

    def _where(self) -> str:
        if self.seed is not None:
            return f"the set generated from seed {self.seed}"
        return f"the task files in {self.tasks_dir}" if self.tasks_dir else "the packaged tasks"


def _names(argument: str, value: Names) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    names = tuple(item.strip() for item in items)
    if not names or not all(names):
        msg = f"{argument} {value!r} has an empty item; give a comma list without blanks, e.g. a,b"
        raise ValueError(msg)
    return names


def task_sample(task: Task) -> Sample:
    """The sample of one task: the incident prompt as its input."""
    return Sample(
        id=task.id,
        input=str(SREEnv(task).reset()["text"]),
        metadata={"title": task.title, "difficulty": task.difficulty, "kind": task.fault_kind},
    )


def task_dataset(tasks: Sequence[Task], name: str = "sre_zero") -> MemoryDataset:
    """The dataset of ``tasks``, one sample each, in order."""
    return MemoryDataset([task_sample(task) for task in tasks], name=name)
