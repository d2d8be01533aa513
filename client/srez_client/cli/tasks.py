"""``srez tasks list`` and ``srez tasks show ID``, and how every command picks its tasks.

Listing the packaged tasks reads only the fields it shows
(:func:`srez_env.tasks.packaged_summaries`: no task models are built, so the listing answers at
once); task files from ``--tasks-dir`` and ``show --private`` are read and validated whole.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from srez_client.cli.options import comma_list
from srez_client.errors import UsageError
from srez_client.results.table import render_table
from srez_env.tasks import TaskSummary, packaged_summaries

if TYPE_CHECKING:
    from srez_env.task import Task


def select_tasks(spec: str | None, tasks_dir: Path | None) -> list[Task]:
    """The tasks named by ``spec`` (``all``, None, or a comma list of ids), from ``tasks_dir``.

    Raises:
        srez_env.errors.TaskError: If an id is unknown or a task file is invalid.
        UsageError: If ``tasks_dir`` holds no task file, or ``spec`` has an empty item.
    """
    from srez_env.tasks import load_task, load_tasks

    ids = task_ids(spec)
    if tasks_dir is None:
        return load_tasks(ids)
    files = sorted(tasks_dir.glob("*.yaml"))
    if not files:
        msg = f"no task files (*.yaml) in {tasks_dir}"
        raise UsageError(msg)
    found = {task.id: task for task in (load_task(path) for path in files)}
    if ids is None:
        return [found[k] for k in sorted(found)]
    unknown = [i for i in ids if i not in found]
    if unknown:
        msg = f"unknown task id {unknown[0]!r} (not in {tasks_dir})"
        raise UsageError(msg)
    return [found[i] for i in ids]


def one_task(task_id: str, tasks_dir: Path | None) -> Task:
    """The task ``task_id`` (one id, not a list).

    Raises:
        srez_env.errors.TaskError: If the id is unknown or the task file is invalid.
        UsageError: If ``task_id`` is not a single id.
    """
    return select_tasks(_one_id(task_id), tasks_dir)[0]


def task_ids(spec: str | None) -> list[str] | None:
    """The ids ``--tasks`` names: None for ``all`` (or nothing), else its comma list.

    Raises:
        UsageError: If the list has an empty item.
    """
    return None if spec in (None, "all") else comma_list("--tasks", spec or "")


def _one_id(task_id: str) -> str:
    if task_id == "all" or "," in task_id:
        msg = f"expected one task id, got {task_id!r}"
        raise UsageError(msg)
    return task_id


def summaries(spec: str | None, tasks_dir: Path | None) -> list[TaskSummary]:
    """What a listing shows of the tasks ``spec`` names: read lightly from the packaged files,
    validated whole from ``tasks_dir``."""
    if tasks_dir is None:
        return packaged_summaries(task_ids(spec))
    return [TaskSummary.of(task) for task in select_tasks(spec, tasks_dir)]


def cmd_tasks_list(args: argparse.Namespace) -> int:
    """``srez tasks list``."""
    tasks = summaries(None, args.tasks_dir)
    if args.json:
        rows = [
            {
                "id": t.id,
                "title": t.title,
                "fault_kind": t.fault_kind,
                "root_service": t.root_service,
                "difficulty": t.difficulty,
                "max_steps": t.max_steps,
            }
            for t in tasks
        ]
        print(json.dumps(rows, indent=2))
        return 0
    headers = ["id", "kind", "root service", "difficulty", "max steps"]
    cells = [[t.id, t.fault_kind, t.root_service, t.difficulty, str(t.max_steps)] for t in tasks]
    print(render_table(headers, cells, right=[4]))
    return 0


def cmd_tasks_show(args: argparse.Namespace) -> int:
    """``srez tasks show ID``: the public brief; ``--private`` adds what an agent must not see."""
    if args.private:
        return _show_private(one_task(args.task_id, args.tasks_dir))
    (task,) = summaries(_one_id(args.task_id), args.tasks_dir)
    _show_public(task)
    return 0


def _show_public(task: TaskSummary) -> None:
    print(f"id:         {task.id}")
    print(f"title:      {task.title}")
    print(f"difficulty: {task.difficulty}")
    print(f"max steps:  {task.max_steps}")
    print()
    for paragraph in task.brief.strip().split("\n\n"):
        print(textwrap.fill(" ".join(paragraph.split()), width=100))


def _show_private(task: Task) -> int:
    import yaml

    sys.stderr.write(
        "srez: warning: printing private task data (ground truth, reference fix); "
        "keep it away from agents\n"
    )
    sys.stderr.flush()
    _show_public(TaskSummary.of(task))
    private = {
        "fault_kind": task.fault_kind,
        "ground_truth": task.ground_truth.model_dump(mode="json"),
        "reference_fix": [a.model_dump(mode="json") for a in task.reference_fix],
        "calibration": task.calibration.model_dump(mode="json"),
    }
    print()
    print(yaml.safe_dump(private, sort_keys=False, allow_unicode=True).rstrip())
    return 0
