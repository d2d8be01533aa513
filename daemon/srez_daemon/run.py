"""The run controller: owns the phases ``starting -> agent -> sealed -> grading -> done | error``.

The agent phase ends when the agent submits, exits, uses its step budget, reaches its time
limit, or reaches the hard wall-clock cap (``DaemonSettings.wall_cap_s``), which holds whatever
was excluded. Time the built-in LLM agents wait on their model provider does not count against the
limit, backoffs as well as cooldowns (a backoff is as much the provider's time as a cooldown;
counting only cooldowns would charge an agent for a provider's bad minute, docs/design.md §13.3),
but only as the daemon observed it and within caps (:mod:`srez_daemon.agent_clock`);
``state.cooldown_s`` is the time excluded so far. A custom command's ``provider_error`` notes
exclude nothing. The failed request itself (up to its timeout) still counts: the agent chose to
wait for it.

The agent process and what it runs with come from :mod:`srez_daemon.run_setup`. Only the built-in
agent running ``scripted`` is handed the task file (the oracle).

Why a run failed is recorded as ``error_kind`` in ``summary.json`` and ``result.json``. What an
agent's exit counts as is decided by :func:`srez_daemon.attest.judge_exit`: exit code 75 is
``provider`` and exit code 2 ``harness`` only when the harness attests them (the built-in
``srez-agent``; for 75, an LLM agent); a custom agent's claim is recorded as
``claimed_error_kind`` and the run counts as ``agent``. A run that cannot start, failed grading
and a stop are ``harness``; another non-zero exit and the time limit are ``agent``.

A run file that cannot be written (a full disk, an I/O error) ends the run as a ``harness``
error at once: the agent's request gets ``507 storage_failed`` (JSON, like every error), later
requests the same, and the agent phase ends by itself with the reason in ``summary.json``.
Space for the files that end a run is held back from the start (:class:`SpaceReserve`) and
given back just before they are written, and ``summary.json`` is retried for a few seconds, so
it is written even on a disk that stays full. Leaving the agent phase, the controller
first kills the agent's whole process group, then seals the run (the diff and the reference patch
are written only now), grades it and writes ``summary.json`` last. SIGTERM at any phase ends in a
written ``summary.json`` (docs/design.md §2).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from srez_core.aio import spawn
from srez_core.clock import utc_timestamp
from srez_daemon.agent_clock import AgentClock, time_left
from srez_daemon.agent_socket import create_agent_app
from srez_daemon.agent_start import EarlyAgent, bind_agent_socket
from srez_daemon.attest import exit_error, judge_exit, provider_waits_attested
from srez_daemon.errors import RecordError, RunSetupError
from srez_daemon.protocol.api import EndReason, GradeFrame, Phase, PhaseFrame, RunState
from srez_daemon.record.episode import Episode, ForcedReason, Outcome, run_summary
from srez_daemon.record.folder import NoteLimits
from srez_daemon.record.storage import DialogWriter, SpaceReserve
from srez_daemon.run_agent import AgentRequests, Publish
from srez_daemon.run_files import RunFiles
from srez_daemon.run_setup import (
    agent_command,
    agent_env,
    agent_network,
    agent_sandbox,
    load_manifest,
    load_task,
)
from srez_daemon.settings import DaemonSettings
from srez_daemon.supervisor import AgentProcess, AgentUser
from srez_env.agents.failures import ErrorKind
from srez_env.grade import Grade

logger = logging.getLogger(__name__)

RESERVE_BYTES = 1 << 20
"""Disk space held back for the files that end a run (patches, grade, summary)."""


def _now_utc() -> str:
    return utc_timestamp(datetime.now(UTC))


class RunController(AgentRequests):
    """One run: the episode, the agent process, the phases and the files they write."""

    def __init__(
        self,
        settings: DaemonSettings,
        *,
        publish: Publish = lambda _frame: None,
        environ: dict[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        early: EarlyAgent | None = None,
    ) -> None:
        self.settings = settings
        self._early = early
        """The agent the host started while the run loaded (:mod:`srez_daemon.agent_start`)."""
        self.paths = settings.paths
        self.files = RunFiles(self.paths)
        self.manifest = load_manifest(self.paths.run_json)
        self.agent_argv, self.agent_is_builtin = agent_command(self.manifest, settings)
        self._now = clock
        self.agent_clock = AgentClock(
            attested=provider_waits_attested(
                builtin_agent=self.agent_is_builtin, agent_spec=self.manifest.agent_spec
            ),
            note_cap_s=settings.provider_wait_cap_s,
            run_cap_s=settings.provider_wait_run_cap_s,
        )
        """Provider waits excluded from the agent's time limit."""
        self.task = load_task(self.manifest, settings)
        self._publish = publish
        self._environ = environ or {}
        self._clock_started = clock()
        self.state = RunState(
            run_id=self.manifest.run_id,
            phase="starting",
            step_budget=self.task.max_steps,
            started_at=_now_utc(),
        )
        self.episode: Episode | None = None
        self._dialog: DialogWriter | None = None
        self.agent: AgentProcess | None = early.process if early else None
        self.grade_summary: GradeFrame | None = None
        self.finished = asyncio.Event()
        self.finished_callbacks: list[Callable[[], None]] = []
        """Called once the run has ended (grade and summary written), e.g. to finish the tail."""
        self._lock = asyncio.Lock()
        self._calls = asyncio.Lock()
        self._agent_runner: web.AppRunner | None = None
        self._agent_started = 0.0
        self._agent_user = AgentUser.lookup(settings.agent_user) if settings.agent_user else None
        self.error_kind: ErrorKind | None = None
        self.claimed_error_kind: ErrorKind | None = None
        """What an agent's exit claimed when the claim was not attested (:mod:`.attest`)."""
        self._provider_error = ""
        self._storage_error: str | None = None
        """Why a run file could not be written: the run is ending as a harness error."""
        self._reserve = SpaceReserve(self.paths.root / ".srez-reserve", RESERVE_BYTES)

    # ------------------------------------------------------------------ state
    def _update(self, **changes: Any) -> None:
        self.state = self.state.model_copy(update=changes)
        self.files.write_state(self.state)

    def _set_phase(self, phase: Phase, *, publish: bool = True, **changes: Any) -> None:
        self._update(phase=phase, **changes)
        logger.info("phase %s", phase)
        if publish:
            self._publish(PhaseFrame(phase=phase))

    # ------------------------------------------------------------------ start
    def prepare(self) -> None:
        """Creates the run's folders and ``state.json`` (phase ``starting``); cheap and synchronous,
        so the daemon can listen before the episode and the agent start."""
        for folder in (self.paths.archive, self.paths.logs, self.paths.world):
            folder.mkdir(parents=True, exist_ok=True)
        if self._agent_user is not None:
            # an agent with a shell must not read the live run (world configs, dialog, state):
            # that would bypass its step budget and the evidence rules
            self.paths.root.chmod(0o700)
        self._update()

    async def start(self) -> None:
        """Starts the episode, the agent socket and the agent process; a failure ends the run
        in phase ``error`` with a written summary."""
        try:
            await self._start()
        except Exception as e:
            logger.exception("the run could not start")
            if self.agent is not None:
                await self.agent.kill()
            await self._end_in_error(f"the run could not start: {type(e).__name__}: {e}")

    async def _start(self) -> None:
        self.prepare()
        if not self._reserve.hold():  # without it the run could not write how it ended
            msg = (
                f"no room for the run's space reserve ({RESERVE_BYTES} bytes) in"
                f" {self.paths.root}: the disk is full; free space there and launch it again"
            )
            raise RunSetupError(msg)
        self._dialog = DialogWriter(self.paths.dialog)
        limits = NoteLimits(
            max_bytes=self.settings.notes_max_bytes,
            max_count=self.settings.notes_max_count,
            max_note_bytes=self.settings.note_max_bytes,
        )
        self.episode = Episode(
            self.task, self.manifest, self.paths, self._dialog, note_limits=limits
        )
        self.episode.start()
        await self._serve_agent_socket()
        early = self._early
        if early is not None:  # started while the run loaded: its clock started with it
            self._agent_started = early.started_at
            self._set_phase("agent", agent_started_at=early.started_utc)
            start_error = early.start_error
        else:
            self._agent_started = self._now()
            self._set_phase("agent", agent_started_at=_now_utc())
            start_error = await self._start_agent()
        if start_error is not None:
            await self.end_agent_phase(
                "agent_exit",
                "failed",
                f"the agent could not start: {start_error}",
                error_kind="harness",
            )
            return
        spawn(self._watch_agent(), name="watch-agent")
        limit, wall = self.settings.agent_time_limit_s, self.settings.wall_cap_s
        if limit is not None or wall is not None:
            spawn(self._watch_time_limit(limit, wall), name="time-limit")

    async def _start_agent(self) -> OSError | None:
        """Starts the agent now (no early start); why it could not start, or None."""
        sandbox = agent_sandbox(self.settings, self.manifest, self.agent_argv, self._environ)
        env = agent_env(self.settings, self.manifest, self._environ)
        self.agent = AgentProcess(
            self.agent_argv,
            env,
            self.paths.log("agent"),
            sandbox=sandbox,
            network=agent_network(self.settings, self.manifest, self._environ, self._agent_user),
            log_max=self.settings.agent_log_max_bytes,
        )
        try:
            cwd = Path(self._agent_user.home) if self._agent_user else self.paths.root
            await self.agent.start(cwd, self._agent_user)
        except OSError as e:
            return e
        return None

    async def _serve_agent_socket(self) -> None:
        if self._early is not None:
            listener = self._early.listener  # bound before the agent started; it may be waiting
        else:
            listener = bind_agent_socket(self.settings.socket_path, self._agent_user)
        self._agent_runner = web.AppRunner(create_agent_app(self), handle_signals=False)
        await self._agent_runner.setup()
        await web.SockSite(self._agent_runner, listener).start()

    # ------------------------------------------------------------------ ending the agent phase
    async def _watch_agent(self) -> None:
        assert self.agent is not None
        code = await self.agent.wait()
        if self.phase == "agent":
            spec = self.manifest.agent_spec
            verdict = judge_exit(code, builtin_agent=self.agent_is_builtin, agent_spec=spec)
            await self.end_agent_phase(
                "agent_exit",
                "completed" if code == 0 else "failed",
                exit_error(code, verdict, self._provider_error),
                error_kind=verdict.error_kind,
                claimed_error_kind=verdict.claimed,
            )

    async def _watch_time_limit(self, limit_s: float | None, wall_s: float | None) -> None:
        """Ends the agent phase at its time limit (attested provider waits excluded) or at the
        hard wall-clock cap (nothing excluded), whichever comes first."""
        while self.phase == "agent":
            now = self._now()
            excluded = self.agent_clock.excluded_s(now)
            left, why = time_left(now - self._agent_started, excluded, limit_s, wall_s)
            if why is not None:
                self._update(cooldown_s=round(excluded, 3))
                await self.end_agent_phase("time_limit", "timed_out", why, error_kind="agent")
                return
            await asyncio.sleep(min(1.0, max(0.01, left)))

    async def end_agent_phase(
        self,
        reason: str,
        outcome: Outcome,
        error: str | None = None,
        *,
        stopped: bool = False,
        error_kind: ErrorKind | None = None,
        claimed_error_kind: ErrorKind | None = None,
    ) -> None:
        """Kills the agent, then seals, grades and finishes the run; idempotent (the first call
        decides how the run ended, ``error_kind`` included). ``claimed_error_kind`` is what an
        agent's exit claimed when :func:`~srez_daemon.attest.judge_exit` did not attest it: kept
        in ``summary.json`` and the evaluator log, never counted."""
        async with self._lock, self._calls:
            if self.phase not in ("starting", "agent"):
                return
            episode = self._episode()
            self._reserve.release()  # room for the files that end the run, even on a full disk
            self.error_kind = "harness" if stopped else error_kind
            if claimed_error_kind is not None and not stopped:
                self.claimed_error_kind = claimed_error_kind
                self.files.evaluator_log(
                    f"the agent's exit claimed a {claimed_error_kind} failure: not attested (only"
                    f" the built-in agents' claims are); recorded as error_kind {error_kind}"
                )
            if self.agent is not None:
                await self.agent.kill()
            if not episode.done:
                episode.force_submit(_forced_reason(reason))
            try:
                episode.finish(outcome, error)
            except RecordError as e:  # the summary still says why the run ended
                logger.error("the closing dialog entry was not written: %s", e)
            end: EndReason = "stopped" if stopped else episode.end_reason or "submit"
            if self._storage_error is not None and not stopped:
                end = "error"
            self._set_phase("sealed", agent_ended_at=_now_utc(), end_reason=end)
            status_error = error if (outcome != "completed" or stopped) else None
            try:
                await self._seal_and_grade(episode, end, status_error)
            except Exception as e:  # the run must still end in a written summary
                logger.exception("grading failed")
                message = f"grading failed: {type(e).__name__}: {e}"
                if self._storage_error is not None:
                    message = f"{self._storage_error} (then {message})"
                await self._end_in_error(message)
            finally:
                self._finish()

    async def _seal_and_grade(self, episode: Episode, end: EndReason, error: str | None) -> None:
        episode.seal()
        self.files.evaluator_log(f"sealed: final.patch and reference.patch written (end: {end})")
        self._set_phase("grading")
        grade = episode.grade(self.error_kind)
        self.grade_summary = GradeFrame(
            reward=grade.reward.total, resolved=grade.resolved, passed=grade.passed
        )
        checks = " ".join(f"{k}={'pass' if c.passed else 'fail'}" for k, c in grade.checks.items())
        self.files.evaluator_log(
            f"graded: reward {grade.reward.total} resolved {grade.resolved} passed {grade.passed} "
            + checks
        )
        self._publish(self.grade_summary)
        # not published: _finish publishes it, after the dialog's last entries
        self._set_phase("done", publish=False, finished_at=_now_utc(), error=error)
        await self._write_summary(error, grade)

    async def _end_in_error(self, message: str) -> None:
        """Ends the run in phase ``error`` with a written summary (a harness error)."""
        self.error_kind = "harness"
        self._reserve.release()
        self._set_phase("error", publish=False, finished_at=_now_utc(), error=message)
        await self._write_summary(message, None)
        self._finish()

    def _finish(self) -> None:
        """The run has ended: flush the listeners (the dialog tail reads to the end), then tell
        viewers the final phase and where the dialog ends, so ``done`` never overtakes the last
        dialog entries and a viewer knows when it has them all."""
        if self.finished.is_set():
            return
        self._reserve.release()
        self.finished.set()
        for callback in self.finished_callbacks:
            callback()
        end = self._dialog.size if self._dialog is not None else 0
        self._publish(PhaseFrame(phase=self.phase, end_offset=end))

    async def stop(self) -> None:
        """SIGTERM: end now, keep what was done, and write the summary."""
        if self.phase in ("starting", "agent") and self.episode is not None:
            await self.end_agent_phase("agent_exit", "failed", "stopped by SIGTERM", stopped=True)
        elif self.phase in ("starting",) or not self.paths.summary_json.exists():
            await self._end_in_error("stopped by SIGTERM before the run started")

    async def close(self) -> None:
        """Kills a still-running agent, closes the agent socket and the run's files."""
        if self.agent is not None:
            await self.agent.kill()
        if self.episode is not None:
            self.episode.close()
        if self._dialog is not None:
            self._dialog.close()
        if self._agent_runner is not None:
            await self._agent_runner.cleanup()
            self._agent_runner = None
        self.settings.socket_path.unlink(missing_ok=True)

    async def _write_summary(self, error: str | None, grade: Grade | None) -> None:
        summary = run_summary(
            self.manifest,
            self.episode,
            error=error,
            error_kind=self.error_kind,
            claimed_error_kind=self.claimed_error_kind,
            grade=grade,
            end_reason=self.state.end_reason,
            duration_s=self._now() - self._clock_started,
            finished_at=datetime.now(UTC),
            agent_output_dropped=self.agent.output_dropped if self.agent is not None else 0,
        )
        await self.files.write_summary(summary)


def _forced_reason(reason: str) -> ForcedReason:
    if reason == "time_limit":
        return "time_limit"
    if reason == "step_budget":
        return "step_budget"
    return "agent_exit"
