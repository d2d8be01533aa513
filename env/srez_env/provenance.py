"""Where a task comes from, as the results record it: the task set it belongs to and a digest of
its content.

A score is only comparable with another on the same tasks, so every run records, beside the
world block's generator and seeds (:meth:`Task.provenance`):

* ``task_set``: ``canonical`` when the task is the packaged task of its id, byte for byte of its
  model (an edited copy of a canonical task is not canonical, whatever its world block says);
  ``generated`` when its world was drawn by the world generator in a set of another seed than
  the canonical one;
  ``custom`` for anything else (a task file of one's own, or an edited one);
* ``task_digest``: 16 hex digits of the SHA-256 of the task's JSON, so two runs of one task id
  on different contents can be told apart (a generated task is not re-derived to check it: the
  digest names what ran);
* ``task_set_digest``: 16 hex digits naming the whole set the task was chosen from (every task
  of the folder, or the 40 packaged ones; :func:`task_set_digest`), whichever of its tasks ran, so
  that runs of two sets, even with no task id in common, are never taken for one evaluation.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from typing import Final, Literal

from srez_env.errors import TaskError
from srez_env.task import Task

TaskSetKind = Literal["canonical", "generated", "custom"]
TASK_SET_KINDS: Final = ("canonical", "generated", "custom")
WORLD_GENERATOR_PREFIX: Final = "srez-worlds/"
"""What the world generator's name starts with (its version follows)."""


def task_digest(task: Task) -> str:
    """16 hex digits naming the task's content."""
    return hashlib.sha256(task.model_dump_json().encode()).hexdigest()[:16]


@functools.cache
def _packaged_digest(task_id: str) -> str | None:
    from srez_env.tasks import load_tasks

    try:
        (packaged,) = load_tasks([task_id])
    except TaskError:
        return None
    return task_digest(packaged)


def task_set_kind(task: Task) -> TaskSetKind:
    """``canonical``, ``generated`` or ``custom`` (see the module docstring)."""
    if _packaged_digest(task.id) == task_digest(task):
        return "canonical"
    world = task.world
    if world is None or world.set_seed is None:
        return "custom"
    from srez_env.generator.sets import CANONICAL_SEED  # the generator: only when it may be one

    if world.set_seed != CANONICAL_SEED and world.generator.startswith(WORLD_GENERATOR_PREFIX):
        return "generated"
    return "custom"  # an edited canonical task, or a world of another generator


def task_set_digest(tasks: Iterable[Task]) -> str:
    """16 hex digits naming a set of tasks: the SHA-256 over its sorted ``id:task digest`` lines
    (the formula of a leaderboard's ``tasks digest``, so a leaderboard over a whole set shows the
    set's digest)."""
    pairs = sorted(f"{task.id}:{task_digest(task)}" for task in tasks)
    return hashlib.sha256("\n".join(pairs).encode()).hexdigest()[:16]


@functools.cache
def packaged_set_digest() -> str:
    """The digest of the 40 packaged tasks (:func:`task_set_digest`)."""
    from srez_env.tasks import load_tasks

    return task_set_digest(load_tasks())


def task_provenance(task: Task, set_digest: str | None = None) -> dict[str, object]:
    """What ``run.json`` records of the task: its world's origin, its set, its digest and the
    digest of the set it was chosen from (``set_digest``; by default the packaged set's for a
    canonical task, None for another task whose set is not known)."""
    kind = task_set_kind(task)
    if set_digest is None and kind == "canonical":
        set_digest = packaged_set_digest()
    return {
        **task.provenance(),
        "task_set": kind,
        "task_digest": task_digest(task),
        "task_set_digest": set_digest,
    }
