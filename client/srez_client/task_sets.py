"""The task set an evaluation draws its tasks from, and how its tasks reach a run.

Three kinds, one per option of ``srez eval`` and ``srez run``:

* the packaged 40 (no option);
* ``--tasks-dir DIR``: every task file (``*.yaml``) of a folder, such as a set ``srez tasks
  generate`` wrote;
* ``--task-seed N``: the set of 40 the generator draws from seed N, generated on first use into a
  private cache, ``$SREZ_STATE/task-sets/<generator>-seed-<N>/`` (0700; written whole into a
  temporary folder, then renamed into place, so a reader never meets half a set), and read from
  there afterwards. A held-out seed stays on this machine: the set's files are as private as the
  state folder, and a sandboxed agent sees nothing of it.

Whatever its kind, a set is named by its digest (:func:`srez_env.provenance.task_set_digest`, over
every task of the set, whichever of them run), which every run's ``run.json`` and ``summary.json``
record, so runs of two sets are never taken for one evaluation
(:mod:`srez_client.results.provenance`).

A task of a folder or a seed is not packaged: it reaches a run's daemon in the launch
(:class:`~srez_client.backends.base.TaskFile`), and each backend keeps it from the agent as the
packaged task files are kept. On ``inline`` an agent runs in this process, where a Python agent
(``--agent package.module:Class``) could read such a task's ground truth from memory: that
combination is refused (:func:`check_isolated`).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from srez_client.backends.base import TaskFile
from srez_client.backends.state import private_dir
from srez_client.errors import UsageError
from srez_core.atomic import naming
from srez_env.agents.python_agent import import_path
from srez_env.provenance import packaged_set_digest, task_set_digest

if TYPE_CHECKING:
    from srez_env.task import Task

MANIFEST: Final = "taskset.json"
"""What a generated set's folder says of itself (generator, seed, count, filters, task ids)."""
SEED_SET_COUNT: Final = 40
"""How many tasks ``--task-seed`` draws (the canonical set's size)."""
CACHE: Final = "task-sets"
"""The folder of ``$SREZ_STATE`` generated sets are cached in."""

Progress = Callable[[str], None]
"""Receives one line of progress (for stderr)."""


@dataclass(frozen=True, slots=True)
class TaskSet:
    """Every task of one set, where it lives and its digest."""

    tasks: dict[str, Task]
    """The set's tasks by id, in id order."""
    digest: str
    """:func:`srez_env.provenance.task_set_digest` of all of them."""
    folder: Path | None = None
    """Its files on this host; None for the packaged set."""
    seed: int | None = None
    """The seed it was generated from (``--task-seed``), None otherwise."""

    @property
    def packaged(self) -> bool:
        """Whether this is the packaged set (its tasks need not travel with a run)."""
        return self.folder is None

    def describe(self) -> str:
        """How messages name the set."""
        if self.seed is not None:
            return f"the set of seed {self.seed}"
        return "the packaged tasks" if self.folder is None else str(self.folder)

    def select(self, ids: list[str] | None) -> list[Task]:
        """The tasks ``ids`` names, in that order (None: all of them).

        Raises:
            UsageError: If an id is not in the set.
        """
        if ids is None:
            return list(self.tasks.values())
        unknown = [i for i in ids if i not in self.tasks]
        if unknown:
            msg = f"unknown task id {unknown[0]!r} (not in {self.describe()})"
            raise UsageError(msg)
        return [self.tasks[i] for i in ids]

    def task_file(self, task: Task) -> TaskFile | None:
        """What a launch carries of ``task``: None for a packaged task (the daemon has it), else
        the task itself with the set's digest and folder."""
        if self.packaged:
            return None
        return TaskFile(
            content=task.model_dump_json(), set_digest=self.digest, set_folder=self.folder
        )


def packaged_set() -> TaskSet:
    """The 40 packaged tasks."""
    from srez_env.tasks import load_tasks

    return TaskSet({t.id: t for t in load_tasks()}, packaged_set_digest())


def folder_set(folder: Path) -> TaskSet:
    """Every task file (``*.yaml``) of ``folder``.

    Raises:
        UsageError: If it holds none, or two files hold one task id.
        srez_env.errors.TaskError: If a file is not a valid task (naming the file and field).
    """
    from srez_env.tasks import load_task

    files = sorted(folder.glob("*.yaml"))
    if not files:
        msg = f"no task files (*.yaml) in {folder}"
        raise UsageError(msg)
    tasks: dict[str, Task] = {}
    for path in files:
        task = load_task(path)
        if task.id in tasks:
            msg = f"{folder}: two files hold task {task.id} ({path.name} is one)"
            raise UsageError(msg)
        tasks[task.id] = task
    ordered = {k: tasks[k] for k in sorted(tasks)}
    return TaskSet(ordered, task_set_digest(ordered.values()), folder.resolve())


def seed_set(seed: int, state_dir: Path, progress: Progress | None = None) -> TaskSet:
    """The set of 40 generated from ``seed``, from the private cache (generated there first if
    it is not there yet, or not whole; ``progress`` is told so).

    Raises:
        UsageError: If the set cannot be generated (a task that never verified).
    """
    from srez_env.generator.worlds import GENERATOR

    cache = private_dir(state_dir / CACHE)
    folder = cache / f"{GENERATOR.replace('/', '-')}-seed-{seed}"
    if not _whole(folder, GENERATOR, seed):
        if progress is not None:
            progress(f"generating the task set of seed {seed} into {folder} (a few seconds, once)")
        _generate_into(folder, GENERATOR, seed)
    found = folder_set(folder)
    return TaskSet(found.tasks, found.digest, found.folder, seed)


def _whole(folder: Path, generator: str, seed: int) -> bool:
    """Whether ``folder`` holds the set its manifest says, of this generator and seed."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict):
        return False
    ids = manifest.get("tasks")
    return (
        manifest.get("generator") == generator
        and manifest.get("seed") == seed
        and isinstance(ids, list)
        and len(ids) == SEED_SET_COUNT
        and sorted(p.stem for p in folder.glob("*.yaml")) == sorted(map(str, ids))
    )


def _generate_into(folder: Path, generator: str, seed: int) -> None:
    """Generate the set of ``seed`` into a private temporary folder beside ``folder``, then put
    it in place: a stale or partial one there is replaced, a whole one another process put there
    meanwhile is kept."""
    scratch = folder.parent / f".{folder.name}.{secrets.token_hex(4)}.tmp"
    scratch.mkdir(mode=0o700)
    try:
        try:
            write_generated_set(scratch, seed, SEED_SET_COUNT)
        except ValueError as e:  # GenerationError: a task that never verified
            msg = f"--task-seed {seed}: {e}; nothing written"
            raise UsageError(msg) from e
        if folder.exists():
            aside = folder.parent / f".{folder.name}.{secrets.token_hex(4)}.old"
            with contextlib.suppress(FileNotFoundError):
                folder.replace(aside)
            shutil.rmtree(aside, ignore_errors=True)
        try:
            scratch.replace(folder)
        except OSError:  # a folder appeared meanwhile: another process's copy
            if not _whole(folder, generator, seed):
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def write_generated_set(
    out: Path,
    seed: int,
    count: int,
    kinds: list[str] | None = None,
    difficulty: list[str] | None = None,
) -> list[str]:
    """Generate and verify a set, then write its task files and :data:`MANIFEST` into ``out`` (an
    empty or new folder); the task ids.

    Raises:
        ValueError: A bad filter, or a task that never verified (nothing is written then).
    """
    from srez_env.generator import sets, taskfiles
    from srez_env.generator.worlds import GENERATOR

    tasks = sets.generate(seed, count, kinds, difficulty)
    taskfiles.write(taskfiles.render_all(tasks), out, prune=False)
    ids = [t.id for t in tasks]
    manifest = {
        "generator": GENERATOR,
        "seed": seed,
        "count": len(tasks),
        "kinds": kinds,
        "difficulty": difficulty,
        "tasks": ids,
    }
    tmp = out / f".{MANIFEST}.tmp"
    with naming(tmp):
        tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    tmp.replace(out / MANIFEST)
    return ids


def load_task_set(
    tasks_dir: Path | None,
    task_seed: int | None,
    state_dir: Path,
    *,
    progress: Progress | None = None,
) -> TaskSet:
    """The set the options name: ``--tasks-dir``, ``--task-seed`` or the packaged one
    (``progress`` hears of a set being generated).

    Raises:
        UsageError: If both are given, or the set cannot be read or generated.
        srez_env.errors.TaskError: If a task file is not valid.
    """
    if tasks_dir is not None and task_seed is not None:
        msg = "give --tasks-dir DIR (a set's files) or --task-seed N (a set drawn here), not both"
        raise UsageError(msg)
    if tasks_dir is not None:
        return folder_set(tasks_dir)
    if task_seed is not None:
        return seed_set(task_seed, state_dir, progress)
    return packaged_set()


def check_isolated(
    agents: list[str], backend: str, *, tasks_dir: Path | None, task_seed: int | None
) -> None:
    """Refuse a Python agent (``package.module:Class``) on a set that is not packaged (the
    options ``--tasks-dir`` or ``--task-seed`` name one), on a backend that plays it in this
    process (``inline``): there it could read the task's ground truth from memory, and nothing
    would say so. Checked before the set is read or drawn.

    Raises:
        UsageError: Naming the agent, why, and the backend to use instead.
    """
    if tasks_dir is None and task_seed is None:
        return
    where = f"the set of seed {task_seed}" if task_seed is not None else str(tasks_dir)
    for spec in agents:
        if import_path(spec) is not None:
            msg = f"--agent {spec}: a Python agent on --backend {backend} runs in this process, where it could read the ground truth of {where}; run it with --backend local (its own sandboxed process)"
            raise UsageError(msg)
