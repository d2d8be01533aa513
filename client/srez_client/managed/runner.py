"""The runner process of a managed run: ``srez managed run NAME [--target T]``.

One target at a time, one task at a time, through the run's backend. Per task, in this order:
check ``PAUSE``; reserve the cost cap in the daily ledger (LLM targets with a budget; a refusal
writes ``PAUSE`` with reason ``budget``); write the ``running`` record; launch; write the run id;
wait and mirror (:func:`srez_client.lifecycle.run.run_to_results`); write the outcome; settle the ledger.
The checkpoint is rewritten atomically at each of those steps, so a ``kill -9`` anywhere leaves a
record that :mod:`.recover` can finish on the next start.

Stop: SIGTERM (or SIGINT) stops the in-flight run through ``backend.stop``; the daemon writes its
summary (``end_reason: stopped``) and exits, the run is mirrored as usual and its record is marked
``interrupted`` (``error_kind: stopped``), never ``completed``, and nothing new starts. The run's
summary decides, not the moment of the stop: a run that had already finished when the stop came
(its result graded, not yet recorded) is recorded as it ended, ``completed`` and never run again,
as :mod:`.recover` adopts one after a crash. If the run does not end within :data:`STOP_GRACE_S`,
the wait is cancelled and the record is written ``interrupted``, unless the run's complete results
folder is already there: then it is adopted too.

Exit statuses: 0 when the queue is done, :data:`EXIT_PAUSED` when it paused (user, budget or
provider), :data:`EXIT_STOPPED` after a stop. With ``--wait`` the runner sleeps through budget and
provider pauses (until the next day, or the end of the cooldown) and goes on; only a user pause
or a stop ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from srez_client.backends.base import Backend, RunHandle
from srez_client.disk import is_no_space, no_space_line
from srez_client.errors import ClientError
from srez_client.lifecycle.launch import RunLauncher
from srez_client.lifecycle.run import run_to_results, scratch_dir
from srez_client.managed.cooldown import (
    PROVIDER_PAUSE_AFTER,
    provider_cooldown_s,
    seconds_since,
    seconds_until_lifted,
)
from srez_client.managed.ledger import TODAY_ENV, BudgetLedger, today
from srez_client.managed.logs import TargetLogs, now_iso
from srez_client.managed.models import (
    Checkpoint,
    ManagedRun,
    PauseInfo,
    RunnerState,
    Target,
    TaskRecord,
)
from srez_client.managed.outcome import STOPPED, outcome_fields, outcome_of
from srez_client.managed.plan import (
    budget_key,
    end_attempt,
    launch_spec,
    pending_tasks,
    queue,
    start_attempt,
)
from srez_client.managed.recover import recover_target, results_of
from srez_client.managed.store import (
    ManagedPaths,
    RunnerLock,
    clear_pause,
    load_checkpoint,
    load_run,
    read_pause,
    save_checkpoint,
    verified,
    write_model,
    write_pause,
)
from srez_client.managed.summarize import summarize
from srez_core.aio import spawn
from srez_env.errors import EnvError

logger = logging.getLogger(__name__)

EXIT_PAUSED: Final = 75
"""Exit status of a runner that paused (EX_TEMPFAIL: run it again later)."""
EXIT_STOPPED: Final = 143
"""Exit status of a runner that was stopped."""
STOP_GRACE_S: Final = 10.0
"""How long a stopped run may take to end before the runner gives up waiting for it."""
MIN_WAIT_S: Final = 1.0
"""The shortest sleep of ``--wait`` between looks at a pause (a clock a little off never spins)."""
PAUSE_POLL_S: Final = 2.0
"""How often ``--wait`` looks at ``PAUSE`` while it sleeps (a ``clear-pause`` ends the wait)."""


DISK_FULL: Final = "disk_full"
"""The ``error_kind`` of an attempt a full disk ended: ``interrupted``, so a resume runs it again."""


class DiskFullError(OSError):
    """The queue stopped on a full disk; its one line says where and what to do next."""


class _Stopped(Exception):
    """The runner was told to stop."""


class Runner:
    """Runs the queue of one managed run; see the module docstring."""

    def __init__(
        self,
        paths: ManagedPaths,
        backend: Backend,
        state_dir: Path,
        *,
        environ: Mapping[str, str] | None = None,
        echo: Callable[[str], None] | None = None,
        png: bool = True,
    ) -> None:
        """Args: the managed run's paths, its backend, ``$SREZ_STATE``, the environment (for
        ``$SREZ_TODAY``), where progress lines are echoed (stderr in the CLI), and whether to
        draw ``summary.png`` when the queue is done (matplotlib costs about a second)."""
        self.paths = paths
        self.backend = backend
        self.launcher = RunLauncher(backend)
        """Launches the attempts (the host's model relay lives in it, until :meth:`main` ends)."""
        self.state_dir = state_dir
        self.environ = dict(os.environ if environ is None else environ)
        self.echo = echo or (lambda _line: None)
        self.ledger = BudgetLedger(state_dir / "budget")
        self.stopping = False
        self.in_flight: RunHandle | None = None
        self._attempt_task: asyncio.Task[TaskRecord] | None = None
        self._in_flight_record: TaskRecord | None = None
        """The attempt's record as last saved (with its run id once launched)."""
        self._stop_requested = asyncio.Event()
        self._started_at = now_iso()
        self.png = png

    async def main(
        self, only: str | None = None, *, retry_failed: bool = False, wait: bool = False
    ) -> int:
        """Run the queue (``only``: one target); returns the exit status. With ``wait``, a
        budget or provider pause is slept through (until the next day, or the cooldown's end)
        and the queue goes on; a user pause, or a stop, still ends the runner."""
        lock = RunnerLock(self.paths)
        lock.acquire()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        try:
            self._state(None, None)
            while True:
                status = await self._queue(only, retry_failed)
                if status != EXIT_PAUSED or not wait:
                    return status
                delay = self._pause_left()
                if delay is None:
                    return status
                self.echo(
                    f"waiting {delay:.0f} s for the pause to lift ('srez managed stop' ends the wait)"
                )
                if not await self._sleep_through_pause():
                    return status
        except _Stopped:
            return EXIT_STOPPED
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            self.launcher.close()
            lock.release()

    async def _sleep_through_pause(self) -> bool:
        """Sleep until the pause lifts, looking at ``PAUSE`` every :data:`PAUSE_POLL_S`: True to
        go on (it lifted, or ``clear-pause`` removed it), False if it became a pause only its
        user lifts (``srez managed pause`` meanwhile).

        Raises:
            _Stopped: On ``srez managed stop`` (SIGTERM).
        """
        while True:
            left = self._pause_left()
            if left is None:
                return False
            if left <= 0:
                return True
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(min(left, PAUSE_POLL_S), MIN_WAIT_S)):
                    await self._stop_requested.wait()
            if self.stopping:
                raise _Stopped

    def _pause_left(self) -> float | None:
        """Seconds until the current pause lifts by itself, or None (see
        :func:`~srez_client.managed.cooldown.seconds_until_lifted`)."""
        pause = read_pause(self.paths)
        if pause is None:
            return 0.0
        return seconds_until_lifted(
            pause,
            now=datetime.now(UTC),
            cooldown_s=provider_cooldown_s(self.environ),
            day_is_forced=bool(self.environ.get(TODAY_ENV, "").strip()),
        )

    def request_stop(self) -> None:
        """SIGTERM: stop the in-flight run now and start nothing new."""
        if self.stopping:
            return
        self.stopping = True
        self._stop_requested.set()
        logger.warning("stop requested")
        loop = asyncio.get_running_loop()
        if self.in_flight is not None:
            handle = self.in_flight
            spawn(self._stop_run(handle), name=f"stop-{handle.run_id}")
        attempt = self._attempt_task
        if attempt is not None:
            loop.call_later(STOP_GRACE_S, attempt.cancel)

    async def _stop_run(self, handle: RunHandle) -> None:
        with contextlib.suppress(ClientError, OSError):
            await self.backend.stop(handle)

    async def _queue(self, only: str | None, retry_failed: bool) -> int:
        run = load_run(self.paths)
        if only is not None and run.target(only) is None:
            names = ", ".join(t.name for t in run.targets)
            msg = f"managed run {run.name!r} has no target {only!r} (targets: {names})"
            raise ClientError(msg)
        if self._paused(run):
            return EXIT_PAUSED
        scope = [t for t in run.targets if only is None or t.name == only]
        for target in scope:
            await recover_target(self.backend, self.paths, self.ledger, self.state_dir, run, target)
        checkpoints = {t.name: load_checkpoint(self.paths, t.name) for t in scope}
        todo = queue(run, checkpoints, only=only, retry_failed=retry_failed)
        if not todo:
            self.echo(nothing_to_run(run, list(checkpoints.values()), only))
        finished = False
        try:
            for target in todo:
                status = await self._target(run, target, retry_failed)
                if status != 0:
                    return status
            finished = True
        finally:  # the JSON and Markdown always; the chart once the queue is through
            self._state(None, None)
            summarize(self.paths, png=finished and self.png)
        return 0

    def _paused(self, run: ManagedRun) -> bool:
        pause = read_pause(self.paths)
        if pause is None:
            return False
        day = today(self.environ)
        if pause.reason == "budget" and pause.day < day:
            clear_pause(self.paths)
            self.echo(f"managed run {run.name}: budget pause of {pause.day} lifted ({day})")
            return False
        cooldown = provider_cooldown_s(self.environ)
        if pause.reason == "provider" and seconds_since(pause.at) >= cooldown:
            clear_pause(self.paths)
            self.echo(f"managed run {run.name}: provider cooldown of {cooldown:g} s is over")
            return False
        self.echo(f"managed run {run.name}: paused ({pause.reason}): {pause.message}")
        return True

    async def _target(self, run: ManagedRun, target: Target, retry_failed: bool) -> int:
        with TargetLogs(self.paths.target_dir(target.name), self.echo) as logs:
            checkpoint = load_checkpoint(self.paths, target.name)
            unverified = {
                k
                for k, r in checkpoint.tasks.items()
                if r.status == "completed" and not verified(r.results_dir, r.result_sha256)
            }
            for task in unverified:
                logs.say(f"{target.name} {task}: results do not match the checkpoint; re-running")
            todo = pending_tasks(run, checkpoint, unverified=unverified, retry_failed=retry_failed)
            logs.say(f"{target.name}: {len(todo)} of {len(run.tasks)} tasks to run")
            provider_failures = 0  # in a row: an outage is not worth burning the queue on
            for task in todo:
                if self.stopping:
                    raise _Stopped
                if read_pause(self.paths) is not None:
                    logs.say(f"{target.name}: paused before {task}")
                    return EXIT_PAUSED
                record = start_attempt(checkpoint.tasks.get(task), task, now_iso())
                granted, day = self._reserve(run, target, record, logs)
                if not granted:
                    return EXIT_PAUSED
                record = end_attempt(record, budget_day=day)
                checkpoint = self._save(checkpoint.with_record(record))
                self._state(target.name, task)
                record = await self._attempt(run, target, record, checkpoint)
                self._state(target.name, None)  # first: never a recorded task still "in flight"
                checkpoint = self._save(checkpoint.with_record(record))
                self._settle(run, target, record)
                logs.say(
                    f"{target.name} {task} attempt {record.attempt}: {record.status}"
                    f" reward={record.reward} cost=${record.cost_usd:.4f}"
                    + (f" ({record.error})" if record.error else "")
                    + (
                        f" [claimed {record.claimed_error_kind}, not attested: not re-run]"
                        if record.claimed_error_kind
                        else ""
                    )
                )
                if self.stopping:
                    raise _Stopped
                if record.error_kind == DISK_FULL:
                    msg = (
                        f"managed run {run.name} stopped: {target.name} {task}: {record.error};"
                        f" the task is not counted and runs again: free some space, then"
                        f" 'srez managed run {run.name}' goes on"
                    )
                    raise DiskFullError(msg)
                provider_failures = (
                    provider_failures + 1 if record.status == "provider_error" else 0
                )
                if provider_failures >= PROVIDER_PAUSE_AFTER:
                    message = (
                        f"the model provider failed on {provider_failures} tasks in a row; 'srez"
                        f" managed run' goes on after a {provider_cooldown_s(self.environ):g} s"
                        " cooldown (or 'srez managed clear-pause' now)"
                    )
                    info = PauseInfo(
                        reason="provider", at=now_iso(), day=today(self.environ), message=message
                    )
                    write_pause(self.paths, info)
                    logs.say(f"{target.name}: paused (provider): {message}")
                    return EXIT_PAUSED
        return 0

    def _reserve(
        self, run: ManagedRun, target: Target, record: TaskRecord, logs: TargetLogs
    ) -> tuple[bool, str | None]:
        """Reserve the attempt's cost cap; (granted, ledger day or None when not charged).

        The key is the same when a crashed attempt is started again, so a reservation left by a
        crash before its record was written is reused, not charged twice.
        """
        if not target.is_llm or run.daily_budget_usd is None:
            return True, None
        day = today(self.environ)
        cap = run.cost_cap_usd or 0.0
        if self.ledger.reserve(day, budget_key(run, target, record), cap, run.daily_budget_usd):
            return True, day
        view = self.ledger.view(day)
        message = (
            f"daily budget ${run.daily_budget_usd:.2f} of {day}: ${view.committed_usd:.4f} committed,"
            f" next task needs ${cap:.4f}; 'srez managed run' continues on a later day"
        )
        write_pause(self.paths, PauseInfo(reason="budget", at=now_iso(), day=day, message=message))
        logs.say(f"{target.name}: paused (budget): {message}")
        return False, None

    def _settle(self, run: ManagedRun, target: Target, record: TaskRecord) -> None:
        if record.budget_day is None:
            return
        self.ledger.settle(record.budget_day, budget_key(run, target, record), record.cost_usd)

    def _save(self, checkpoint: Checkpoint) -> Checkpoint:
        save_checkpoint(self.paths, checkpoint)
        return checkpoint

    def _state(self, target: str | None, task: str | None) -> None:
        """``runner.json``: the task in flight, or none (between tasks, or writing the summaries
        once the queue is through), so nothing reads a recorded task as still running."""
        state = RunnerState(pid=os.getpid(), started_at=self._started_at, target=target, task=task)
        write_model(self.paths.runner_json, state)

    async def _attempt(
        self, run: ManagedRun, target: Target, record: TaskRecord, checkpoint: Checkpoint
    ) -> TaskRecord:
        """Run one attempt to its outcome record (``interrupted`` when stopped)."""
        self._attempt_task = spawn(
            self._execute(run, target, record, checkpoint), name=f"attempt-{record.task_id}"
        )
        try:
            return await self._attempt_task
        except asyncio.CancelledError:
            if not self.stopping:
                raise
            saved = self._in_flight_record or record  # keeps the run id of a launched run
            folder = results_of(run, target, saved.task_id, saved.run_id) if saved.run_id else None
            if folder is not None:  # it finished and was mirrored: adopted, as after a crash
                fields = outcome_of(folder, unknown_cost=run.cost_cap_usd or 0.0)
                if fields["status"] != "failed":
                    return end_attempt(saved, **fields, finished_at=now_iso())
            return end_attempt(
                saved,
                status="interrupted",
                finished_at=now_iso(),
                error_kind=STOPPED,
                error=f"stopped; its run did not end within {STOP_GRACE_S:g} s",
            )
        finally:
            self._attempt_task = None
            self._in_flight_record = None
            self.in_flight = None

    async def _execute(
        self, run: ManagedRun, target: Target, record: TaskRecord, checkpoint: Checkpoint
    ) -> TaskRecord:
        spec = launch_spec(run, target, record.task_id)
        try:
            handle = await self.launcher.launch(spec)
            self.in_flight = handle
            record = end_attempt(record, run_id=handle.run_id)
            self._save(checkpoint.with_record(record))
            self._in_flight_record = record
            if self.stopping:
                await self._stop_run(handle)
            timeout = None if run.time_limit_s is None else 2 * run.time_limit_s + 60
            outcome = await run_to_results(
                self.backend,
                spec,
                scratch_dir(self.state_dir),
                timeout_s=timeout,
                progress=lambda line: logger.info("%s", line),
                handle=handle,
                launcher=self.launcher,
            )
            with contextlib.suppress(ClientError, OSError):
                await self.backend.remove(outcome.handle)
        except (ClientError, EnvError, OSError) as e:
            logger.warning("%s %s: %s", target.name, record.task_id, e)
            fields: dict[str, object] = {"status": "failed", "error": str(e)[:500]}
            if is_no_space(e):  # not the agent's failure: run again once there is room
                root = Path(run.results_root)
                where = no_space_line(e, root, roots=(root, self.state_dir))
                fields = {"status": "interrupted", "error_kind": DISK_FULL, "error": where}
        else:
            fields = outcome_fields(
                outcome.results_dir, outcome.summary, unknown_cost=run.cost_cap_usd or 0.0
            )
        if self.stopping and fields["status"] == "failed":
            # not graded, and a stop came: the stop may be why, so the task is run again. A graded
            # run is kept whenever the stop came: its summary says whether the stop ended it.
            why = fields.get("error") or "not graded"
            fields.update(status="interrupted", error_kind=STOPPED, error=f"stopped ({why})")
        return end_attempt(record, **fields, finished_at=now_iso())


def nothing_to_run(run: ManagedRun, checkpoints: list[Checkpoint], only: str | None) -> str:
    """The line a runner with an empty queue says: all done, and what would add work."""
    failed = sum(r.status == "failed" for c in checkpoints for r in c.tasks.values())
    scope = f"target {only}" if only is not None else "every target"
    line = f"managed run {run.name}: nothing to run, all {len(run.tasks)} tasks of {scope} are done"
    if failed:
        line += f" ({failed} failed by the harness: 'srez managed run {run.name} --retry-failed' re-runs them)"
    return line + f"; 'srez managed add-target {run.name} TARGET' queues another target"


async def run_managed(
    paths: ManagedPaths,
    backend: Backend,
    state_dir: Path,
    *,
    only: str | None = None,
    retry_failed: bool = False,
    wait: bool = False,
    echo: Callable[[str], None] | None = None,
    png: bool = True,
) -> int:
    """Run a managed run's queue in this process (what ``srez managed run`` calls)."""
    load_run(paths)
    runner = Runner(paths, backend, state_dir, echo=echo, png=png)
    return await runner.main(only, retry_failed=retry_failed, wait=wait)
