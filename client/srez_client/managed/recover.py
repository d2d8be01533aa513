"""The resume's cleanup pass: finish the records a crashed runner left ``running``.

A runner killed with ``kill -9`` leaves at most one record ``running`` per target (one task in
flight). Its run may be anywhere: not launched, still running (the ``local`` daemon lives in its
own session and outlives the runner), finished but not mirrored, or mirrored but not recorded.
The pass finds the run (by the recorded run id; else by its labels and a start no earlier than
the attempt's), and then:

* a run still going is stopped (no orphan survives the resume), mirrored and marked
  ``interrupted``; its results folder is kept, the task is run again. The summary decides: a run
  still listed as running whose summary says it ended by itself (graded, not stopped) is
  adopted as below;
* a run that finished on its own is mirrored if needed and *adopted*: recorded with the outcome it
  had, so no completed work is lost and no second results folder is made for it;
* no run found: ``interrupted``, run again.

A budget reservation of the crashed attempt is settled with the cost the run's summary reports,
or at its full cap when nothing says what was spent (the ledger errs on the safe side).
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from srez_client.backends.base import Backend, RunHandle
from srez_client.errors import ClientError, RunNotFoundError
from srez_client.layout import RUN_ID_RE, run_path
from srez_client.lifecycle.run import run_to_results, scratch_dir
from srez_client.managed.ledger import BudgetLedger
from srez_client.managed.logs import TargetLogs, now_iso
from srez_client.managed.models import Checkpoint, ManagedRun, Target, TaskRecord
from srez_client.managed.outcome import CRASHED, outcome_of
from srez_client.managed.plan import (
    budget_key,
    end_attempt,
    launch_spec,
    referenced_run_ids,
    started_after,
)
from srez_client.managed.store import ManagedPaths, load_checkpoint, save_checkpoint

logger = logging.getLogger(__name__)


async def recover_target(
    backend: Backend,
    paths: ManagedPaths,
    ledger: BudgetLedger,
    state_dir: Path,
    run: ManagedRun,
    target: Target,
    echo: TargetLogs | None = None,
) -> Checkpoint:
    """Finish every ``running`` record of ``target``; returns the saved checkpoint."""
    checkpoint = load_checkpoint(paths, target.name)
    for record in list(checkpoint.tasks.values()):
        if record.status != "running":
            continue
        fixed = await _recover(backend, state_dir, run, target, record, checkpoint)
        checkpoint = checkpoint.with_record(fixed)
        save_checkpoint(paths, checkpoint)
        if record.budget_day is not None:
            known = fixed.results_dir is not None
            cost = fixed.cost_usd if known else (run.cost_cap_usd or 0.0)
            ledger.settle(record.budget_day, budget_key(run, target, record), cost)
        line = (
            f"{target.name} {record.task_id} attempt {record.attempt}: recovered as {fixed.status}"
        )
        if echo is not None:
            echo.say(line)
        logger.warning("%s", line)
    return checkpoint


async def _recover(
    backend: Backend,
    state_dir: Path,
    run: ManagedRun,
    target: Target,
    record: TaskRecord,
    checkpoint: Checkpoint,
) -> TaskRecord:
    taken = referenced_run_ids(checkpoint) - ({record.run_id} if record.run_id else set())
    handle = await _find_run(backend, run, target, record, taken)
    stopped = False
    folder: Path | None = None
    if handle is not None:
        if handle.status == "running" and not handle.finished:
            with contextlib.suppress(ClientError, OSError):
                await backend.stop(handle)
            stopped = True
        folder = results_of(run, target, record.task_id, handle.run_id)
        if folder is None:
            spec = launch_spec(run, target, record.task_id)
            try:
                outcome = await run_to_results(
                    backend, spec, scratch_dir(state_dir), handle=handle, timeout_s=30
                )
                folder = outcome.results_dir
            except (ClientError, OSError, TimeoutError) as e:
                logger.warning("cannot mirror run %s: %s", handle.run_id, e)
        with contextlib.suppress(ClientError, OSError):
            await backend.remove(handle)
    elif record.run_id is not None:
        folder = results_of(run, target, record.task_id, record.run_id)
    else:
        folder = _scan_results(run, target, record, taken)
    if folder is None:
        run_id = handle.run_id if handle is not None else record.run_id
        return end_attempt(
            record,
            status="interrupted",
            run_id=run_id,
            finished_at=now_iso(),
            error_kind=CRASHED,
            error="the runner died; the run was not found",
        )
    fields = outcome_of(folder, unknown_cost=run.cost_cap_usd or 0.0)
    # the summary decides: a run listed as running may have ended by itself (a submit, graded)
    # before the stop reached it; only a run the stop cut, or one with no summary, is interrupted
    if stopped and fields["status"] != "completed":
        fields.update(
            status="interrupted", error_kind=CRASHED, error="the runner died; its run was stopped"
        )
    return end_attempt(record, **fields, finished_at=now_iso())


async def _find_run(
    backend: Backend, run: ManagedRun, target: Target, record: TaskRecord, taken: set[str]
) -> RunHandle | None:
    """The backend's run of this attempt: by run id, else the newest unclaimed run with the
    attempt's labels that started no earlier than it."""
    if record.run_id is not None:
        try:
            return await backend.get(record.run_id)
        except RunNotFoundError:
            return None
    for handle in reversed(await backend.list(include_exited=True)):
        if _claims(handle, run, target, record, taken):
            return handle
    return None


def _claims(
    handle: RunHandle, run: ManagedRun, target: Target, record: TaskRecord, taken: set[str]
) -> bool:
    """Whether a backend's run is this attempt's: ours, same task, agent, model and results root,
    unclaimed by another record, started no earlier than the attempt."""
    return (
        handle.owned
        and handle.task_id == record.task_id
        and handle.agent == target.agent
        and handle.model == target.model
        and handle.results_root.resolve() == Path(run.results_root).resolve()
        and handle.run_id not in taken
        and started_after(handle.run_id, record.started_at)
    )


def results_of(run: ManagedRun, target: Target, task_id: str, run_id: str) -> Path | None:
    """The complete results folder of run ``run_id`` of this target and task, if it exists (a
    folder under its final name is complete: runs are written under ``.<id>.partial/``)."""
    folder = run_path(Path(run.results_root), task_id, target.model, target.agent, run_id)
    return folder if folder.is_dir() else None


def _scan_results(
    run: ManagedRun, target: Target, record: TaskRecord, taken: set[str]
) -> Path | None:
    """A complete results folder of this attempt that no record claims (an inline run that
    finished just before the crash); the newest one."""
    probe = run_path(
        Path(run.results_root),
        record.task_id,
        target.model,
        target.agent,
        "00000000T000000Z-00000000",
    )
    folder = probe.parent
    if not folder.is_dir():
        return None
    found = sorted(
        p
        for p in folder.iterdir()
        if RUN_ID_RE.match(p.name)
        and p.name not in taken
        and started_after(p.name, record.started_at)
        and p.is_dir()
    )
    return found[-1] if found else None
