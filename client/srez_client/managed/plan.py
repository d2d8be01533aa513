"""Queue planning and resume decisions: pure functions over the models, no I/O.

The rules a resume follows (docs/design.md §10):

* a target whose every task is ``completed`` (and verified) is skipped;
* in a target, a task is run when it has no record, or its last attempt is ``interrupted``,
  ``provider_error`` or still ``running`` (a crashed runner; :mod:`.recover` settles it first);
  ``failed`` (a harness failure) is final unless ``retry_failed``;
* a ``completed`` task whose results folder no longer matches its hash is run again: a record
  that cannot be verified is not a completed task;
* a new attempt keeps the earlier ones in ``previous``: nothing of a partial attempt is dropped.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Final

from srez_client.backends.base import LaunchSpec
from srez_client.managed.models import (
    Attempt,
    Checkpoint,
    ManagedRun,
    Target,
    TaskRecord,
    TaskStatus,
)

RETRIED: Final[frozenset[TaskStatus]] = frozenset({"interrupted", "provider_error", "running"})
"""Statuses a resume runs again."""


def classify(
    *,
    graded: bool,
    status: str | None,
    error_kind: str | None,
    has_result: bool,
    end_reason: str | None = None,
) -> TaskStatus:
    """How an attempt ended, from its ``summary.json`` (None fields when there is none).

    A run that was stopped (``end_reason`` ``stopped``: SIGTERM) is ``interrupted`` even though
    the daemon grades what it had: a stopped task is never counted. A provider error is never
    counted either: it is retried. An agent that crashed or misbehaved is the agent's result,
    so a graded run is ``completed`` whatever the agent did; a run that was not graded, or whose
    ``result.json`` is missing, is a harness failure.
    """
    if end_reason == "stopped":
        return "interrupted"
    if error_kind == "provider":
        return "provider_error"
    if status is None or not graded or not has_result or error_kind == "harness":
        return "failed"
    return "completed"


def wants_run(record: TaskRecord | None, *, verified: bool, retry_failed: bool) -> bool:
    """Whether a task must be (re-)run on this pass."""
    if record is None:
        return True
    if record.status == "completed":
        return not verified
    if record.status == "failed":
        return retry_failed
    return record.status in RETRIED


def pending_tasks(
    run: ManagedRun,
    checkpoint: Checkpoint,
    *,
    unverified: Collection[str] = (),
    retry_failed: bool = False,
) -> list[str]:
    """Tasks of ``run`` still to run for the checkpoint's target, in run order.

    Args:
        run: The managed run.
        checkpoint: The target's checkpoint.
        unverified: Ids of ``completed`` tasks whose results folder failed its hash check.
        retry_failed: Also re-run ``failed`` tasks.
    """
    return [
        task
        for task in run.tasks
        if wants_run(
            checkpoint.tasks.get(task),
            verified=task not in unverified,
            retry_failed=retry_failed,
        )
    ]


def queue(
    run: ManagedRun,
    checkpoints: dict[str, Checkpoint],
    *,
    only: str | None = None,
    retry_failed: bool = False,
) -> list[Target]:
    """The targets with work left, in queue order (``only``: that target alone)."""
    targets = [t for t in run.targets if only is None or t.name == only]
    return [
        t
        for t in targets
        if pending_tasks(
            run, checkpoints.get(t.name, Checkpoint(target=t.name)), retry_failed=retry_failed
        )
    ]


def target_state(run: ManagedRun, checkpoint: Checkpoint) -> str:
    """``pending`` (nothing run), ``partial`` or ``done`` (nothing left without retry_failed)."""
    if not checkpoint.tasks:
        return "pending"
    return "partial" if pending_tasks(run, checkpoint) else "done"


def start_attempt(previous: TaskRecord | None, task_id: str, started_at: str) -> TaskRecord:
    """The ``running`` record of a new attempt; the previous attempts move to ``previous``."""
    if previous is None:
        return TaskRecord(task_id=task_id, attempt=1, status="running", started_at=started_at)
    return TaskRecord(
        task_id=task_id,
        attempt=previous.attempt + 1,
        status="running",
        started_at=started_at,
        previous=previous.attempts(),
    )


def end_attempt(record: TaskRecord, **fields: object) -> TaskRecord:
    """``record`` with the fields of its outcome set (validated)."""
    return TaskRecord.model_validate({**record.model_dump(), **fields})


def referenced_run_ids(checkpoint: Checkpoint) -> set[str]:
    """Every run id an attempt of the checkpoint names (its own results folders)."""
    return {
        a.run_id for r in checkpoint.tasks.values() for a in r.attempts() if a.run_id is not None
    }


def stamp_of(iso: str) -> str:
    """``2026-11-30T05:30:06.898Z`` as the run-id stamp ``20261130T053006Z`` (for ordering)."""
    digits = iso.replace("-", "").replace(":", "")
    return digits[:15] + "Z"


def started_after(run_id: str, started_at: str) -> bool:
    """Whether the run id's stamp is at or after the attempt's start (same second counts)."""
    return run_id[:16] >= stamp_of(started_at)


def queue_commands(
    run: ManagedRun, targets: Iterable[Target], *, program: str = "srez"
) -> tuple[str, str]:
    """The text of ``command.sh`` and ``command.ps1``: one ``managed run`` per target, in order.

    Both stop at the first command that does not exit 0 (a pause exits 75), so a paused or
    stopped queue does not start the next target.
    """
    names = [t.name for t in targets]
    root = run.results_root
    sh = ["#!/bin/sh", f"# remaining targets of managed run {run.name}", "set -e"]
    sh += [
        shlex.join([program, "managed", "run", run.name, "--target", n, "--results", root])
        for n in names
    ]
    ps = [f"# remaining targets of managed run {run.name}", "$ErrorActionPreference = 'Stop'"]
    for n in names:
        args = " ".join(_ps_quote(a) for a in ("managed", "run", run.name, "--target", n))
        ps.append(f"& {_ps_quote(program)} {args} --results {_ps_quote(root)}")
        ps.append("if ($LASTEXITCODE -ne 0) { exit $LASTEXITCODE }")
    return "\n".join(sh) + "\n", "\n".join(ps) + "\n"


def _ps_quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def last_attempts(checkpoint: Checkpoint) -> list[Attempt]:
    """The latest attempt of every task of a checkpoint."""
    return [r.attempts()[-1] for r in checkpoint.tasks.values()]


def launch_spec(run: ManagedRun, target: Target, task_id: str) -> LaunchSpec:
    """What the backend launches for one task of a target.

    LLM targets get their per-task cost cap as ``SREZ_LLM_COST_CAP_USD`` in ``agent_env``, when
    the installed :class:`LaunchSpec` has that field (it arrives with the LLM agent).
    """
    fields: dict[str, object] = {
        "task_id": task_id,
        "agent_spec": target.agent,
        "model": target.model,
        "run_seed": run.run_seed,
        "time_limit_s": run.time_limit_s,
        "results_root": Path(run.results_root),
    }
    if target.is_llm and "agent_env" in LaunchSpec.model_fields:
        env = {}
        if run.cost_cap_usd is not None:
            env["SREZ_LLM_COST_CAP_USD"] = f"{run.cost_cap_usd:g}"
        fields["agent_env"] = env
    return LaunchSpec.model_validate(fields)


def budget_key(run: ManagedRun, target: Target, record: TaskRecord) -> str:
    """The ledger key of one attempt: unique across managed runs sharing a ledger, and the same
    when a crashed attempt is started again (so it is never charged twice)."""
    return f"{run.name}/{target.name}/{record.task_id}/{record.attempt}"
