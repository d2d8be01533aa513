"""Whether a run's transcript is trusted: the task it ran, replayed action by action.

Steps 1 and 2 of a host grade (:mod:`srez_client.results.regrade`). :func:`task_for` finds the
task a run used and holds it to the world provenance ``run.json`` recorded; :func:`replay` drives
a fresh episode of it with the transcript's actions and refuses the first line the simulator does
not write identically; :func:`check_dialog` holds the dialog's tool results to the transcript.
Pure apart from loading the task files; every refusal is a :class:`RegradeError` naming where.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from srez_client.errors import RegradeError
from srez_daemon.protocol import DialogEntry, RunManifest, ToolResult
from srez_env.env import SREEnv
from srez_env.errors import EnvError
from srez_env.provenance import task_digest
from srez_env.task import Task
from srez_env.tasks import load_task, load_tasks


def task_for(manifest: RunManifest, tasks_dir: Path | None, given: Task | None = None) -> Task:
    """The task a run used: ``given`` (the task the host handed the run), or by id, packaged or
    from ``tasks_dir``, with the recorded provenance (and content digest, when recorded).

    Raises:
        RegradeError: If the task is unknown or is not the one the run recorded.
    """
    try:
        if given is not None:
            if given.id != manifest.task_id:
                msg = f"run {manifest.run_id} ran task {manifest.task_id}, not {given.id}"
                raise RegradeError(msg)
            task = given
        elif tasks_dir is None:
            (task,) = load_tasks([manifest.task_id])
        else:
            found = list(map(load_task, sorted(tasks_dir.glob("*.yaml"))))
            matches = [t for t in found if t.id == manifest.task_id]
            if not matches:
                msg = f"task {manifest.task_id!r} is not in {tasks_dir}"
                raise RegradeError(msg)
            task = matches[0]
    except EnvError as e:
        msg = f"cannot load task {manifest.task_id!r} of run {manifest.run_id}: {e}"
        raise RegradeError(msg) from e
    recorded = {
        "world_generator": manifest.world_generator,
        "world_seed": manifest.world_seed,
        "task_set_seed": manifest.task_set_seed,
    }
    if task.provenance() != recorded:
        where = "the packaged tasks" if tasks_dir is None else str(tasks_dir)
        msg = (
            f"task {task.id} in {where} has provenance {task.provenance()}, but run "
            f"{manifest.run_id} recorded {recorded}: not the task it ran (give --tasks-dir DIR "
            "with the task set it used)"
        )
        raise RegradeError(msg)
    if manifest.task_digest is not None and task_digest(task) != manifest.task_digest:
        msg = (
            f"task {task.id} has digest {task_digest(task)}, but run {manifest.run_id} recorded"
            f" {manifest.task_digest}: not the content it ran (give --tasks-dir DIR with the task"
            " set it used)"
        )
        raise RegradeError(msg)
    return task


def replay(task: Task, manifest: RunManifest, lines: list[str]) -> SREEnv:
    """A fresh episode of ``task`` driven by the actions of ``lines``, each checked to produce
    the same line.

    Raises:
        RegradeError: At the first line that is not what the simulator writes for its action.
    """
    env = SREEnv(task, run_seed=manifest.run_seed, agent=manifest.agent, model=manifest.model)
    env.reset()
    for number, line in enumerate(lines, start=1):
        where = f"transcript line {number}"
        if env.done:
            msg = f"{where}: the episode had already ended at line {number - 1}; refusing to grade"
            raise RegradeError(msg)
        env.step(_action(line, where))
        if env.transcript[-1] != line:
            msg = (
                f"{where} does not replay: the simulator writes another line for its action; "
                "a transcript that does not replay is not trustworthy, so it is not graded"
            )
            raise RegradeError(msg)
    return env


def check_dialog(dialog: list[DialogEntry], lines: list[str], *, ended: bool) -> None:
    """The dialog's tool results agree with the transcript, in order.

    The daemon writes the ``tool_result`` entry just before the transcript line, so a daemon that
    died in between leaves one result more (only while the agent phase ran); a call that arrived
    after the episode ended is refused with ``ALREADY_SUBMITTED`` and has no transcript line.

    Raises:
        RegradeError: If they disagree.
    """
    results = [e for e in dialog if isinstance(e, ToolResult)]
    if len(results) < len(lines):
        msg = (
            f"the dialog holds {len(results)} tool results but the transcript {len(lines)} lines; "
            "refusing to grade"
        )
        raise RegradeError(msg)
    for number, (entry, line) in enumerate(zip(results, lines, strict=False), start=1):
        obs = orjson.loads(line)["observation"]
        agree = entry.step == obs.get("step") and (entry.status == "success") == bool(obs["ok"])
        if agree and obs["ok"]:
            agree = entry.result == obs.get("output")
        if not agree:
            msg = f"transcript line {number} disagrees with the dialog's tool result {number}"
            raise RegradeError(msg)
    extra = [e for e in results[len(lines) :] if "ALREADY_SUBMITTED" not in e.result]
    if len(extra) > (0 if ended else 1):
        msg = (
            f"the dialog holds {len(extra)} tool results the transcript does not have; "
            "refusing to grade"
        )
        raise RegradeError(msg)


def _action(line: str, where: str) -> dict[str, object] | str:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        msg = f"{where} is not JSON ({e}); refusing to grade"
        raise RegradeError(msg) from e
    action = record.get("action") if isinstance(record, dict) else None
    if isinstance(action, dict) and isinstance(action.get("tool"), str):
        args = action.get("args", {})
        return {"tool": action["tool"], "args": args}
    if isinstance(action, dict) and isinstance(action.get("raw"), str):
        return str(action["raw"])
    msg = f"{where} has no action to replay; refusing to grade"
    raise RegradeError(msg)
