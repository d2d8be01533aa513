"""Which tasks an integration plays: packaged ids, task files, Task objects or generated sets.

The RL integrations name their tasks by reference (:class:`TaskRef`), never by content: a
reference is public (an id, a set seed and a position, a file path), so it can ride in a trace or
cross a process boundary, and only the process that runs the episode turns it into a
:class:`~srez_env.task.Task` (:func:`resolve`). A generated set is realised lazily, one task the
first time it is played (:func:`srez_env.generator.sets.member`), so a set of 999 costs nothing
until its tasks are drawn.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from srez_core.field_docs import field_docstrings
from srez_env.generator import sets
from srez_env.task import Task
from srez_env.tasks import load_task, load_tasks


class TaskRef(BaseModel):
    """A public reference to one task: a packaged id, a task file, or a member of a set."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=field_docstrings)

    id: str
    """The task id (``sre-007``, or ``sre-<tag>-NNN`` in a generated set)."""
    path: str | None = None
    """A task file to read instead of the packaged one."""
    set_seed: int | None = None
    """The seed of the generated set this task belongs to."""
    index: int | None = None
    """The task's position (from 0) in its generated set."""
    kinds: tuple[str, ...] | None = None
    """The fault kinds the generated set was drawn from (all when None)."""
    difficulties: tuple[str, ...] | None = None
    """The difficulties the generated set was drawn from (all when None)."""


class TaskSetSpec(BaseModel):
    """A task set generated on demand (``srez tasks generate`` without writing files)."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=field_docstrings)

    seed: int
    """The set's seed: the same seed gives the same tasks."""
    count: int = Field(default=40, ge=1, le=999)
    """How many tasks."""
    kinds: tuple[str, ...] | None = None
    """Only these fault kinds (all when None)."""
    difficulties: tuple[str, ...] | None = None
    """Only these difficulties: easy, medium, hard (all when None)."""

    def refs(self) -> list[TaskRef]:
        """A reference per task of the set, in order, without realising any.

        Raises:
            ValueError: an unknown kind or difficulty, or a filter no row matches.
        """
        sets.select_rows(self.kinds, self.difficulties)  # refuse a bad filter now, not per task
        return [
            TaskRef(
                id=sets.member_id(self.seed, n),
                set_seed=self.seed,
                index=n,
                kinds=self.kinds,
                difficulties=self.difficulties,
            )
            for n in range(self.count)
        ]


@functools.lru_cache(maxsize=256)
def resolve(ref: TaskRef) -> Task:
    """The task a reference names; realised once per process and reference.

    Raises:
        srez_env.errors.TaskError: an unknown id or an invalid task file.
        srez_env.generator.sets.GenerationError: a set member with no valid world.
    """
    if ref.path is not None:
        return load_task(ref.path)
    if ref.set_seed is None or ref.index is None:
        return load_tasks([ref.id])[0]
    rows = sets.select_rows(ref.kinds, ref.difficulties)
    return sets.member(rows, ref.set_seed, ref.index)


TaskLike = str | Task | TaskRef
"""A task as a caller names it: a packaged id, a Task, or a reference."""


def task_refs(
    task: TaskLike | Sequence[TaskLike] | None = None,
    task_set: TaskSetSpec | Mapping[str, Any] | None = None,
    tasks_dir: str | Path | None = None,
) -> list[TaskRef | Task]:
    """The tasks to play, in order: ``task`` (one or several), else the set ``task_set``
    describes, else every task file of ``tasks_dir``, else the 40 packaged tasks.

    Raises:
        ValueError: both ``task`` and ``task_set`` given, an empty list, a bad set spec or an
            empty ``tasks_dir``.
        srez_env.errors.TaskError: an unknown packaged id.
    """
    if task is not None and task_set is not None:
        msg = "give task or task_set, not both"
        raise ValueError(msg)
    if task_set is not None:
        spec = task_set if isinstance(task_set, TaskSetSpec) else TaskSetSpec(**task_set)
        return list(spec.refs())
    if task is not None:
        items = [task] if isinstance(task, str | Task | TaskRef) else list(task)
        if not items:
            msg = "task: an empty list names no task"
            raise ValueError(msg)
        return [_ref(item, tasks_dir) for item in items]
    if tasks_dir is not None:
        files = sorted(Path(tasks_dir).glob("sre-*.yaml"))
        if not files:
            msg = f"tasks_dir {str(tasks_dir)!r} holds no sre-*.yaml task file"
            raise ValueError(msg)
        return [TaskRef(id=f.stem, path=str(f)) for f in files]
    return [TaskRef(id=t.id) for t in load_tasks()]


def _ref(item: TaskLike, tasks_dir: str | Path | None) -> TaskRef | Task:
    if not isinstance(item, str):
        return item
    if tasks_dir is not None:
        return TaskRef(id=item, path=str(Path(tasks_dir) / f"{item}.yaml"))
    load_tasks([item])  # an unknown id fails here, with the known range
    return TaskRef(id=item)


def task_of(entry: TaskRef | Task) -> Task:
    """The Task of an entry of :func:`task_refs`."""
    return entry if isinstance(entry, Task) else resolve(entry)
