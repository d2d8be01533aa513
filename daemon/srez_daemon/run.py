"""The run controller: owns the phases ``starting -> agent -> sealed -> grading -> done | error``.

The agent phase ends when the agent submits, exits, uses its step budget, reaches its time
limit, or reaches the hard wall-clock cap (``DaemonSettings.wall_cap_s``), which holds whatever
was excluded. Time the built-in LLM agents wait on their model provider does not count against the
limit, backoffs as well as cooldowns (a backoff is as much the provider's time as a cooldown;
counting only cooldowns would charge an agent for a provider's bad minute, PEERS.md §3 item 9),
but only as the daemon observed it and within caps (:mod:`srez_daemon.agent_clock`);
``state.cooldown_s`` is the time excluded so far. A custom command's ``provider_error`` notes
exclude nothing. The failed request itself (up to its timeout) still counts: the agent chose to
wait for it.

The agent process is the daemon's own ``srez-agent`` unless ``SREZ_AGENT_CMD`` names another, or
``run.json`` names a custom agent (``agent_spec`` ``cmd:NAME``, its command in ``agent_cmd``).
Only the built-in agent running ``scripted`` is handed the task file (the oracle).

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
written ``summary.json`` (DESIGN.md §2).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from aiohttp import web
from pydantic import ValidationError

from srez_daemon.agent_clock import AgentClock
from srez_daemon.agent_socket import AgentPort, create_agent_app
from srez_daemon.aio import spawn
from srez_daemon.attest import judge_exit, provider_waits_attested
from srez_daemon.episode import Episode, ErrorKind, NoteLimits, Outcome
from srez_daemon.errors import NoteRefused, RecordError, RunSetupError
from srez_daemon.http import ApiError
from srez_daemon.probe import srez_version as srez_version  # re-exported
from srez_daemon.protocol import RunManifest, RunSummary, TokenCount
from srez_daemon.protocol.agent import EXIT_CONFIG as EXIT_CONFIG  # re-exported
from srez_daemon.protocol.agent import EXIT_PROVIDER as EXIT_PROVIDER  # re-exported
from srez_daemon.protocol.api import (
    AgentNote,
    AgentTask,
    DiffFrame,
    EndReason,
    FileChange,
    GradeFrame,
    Phase,
    PhaseFrame,
    RunState,
    TokenTotals,
)
from srez_daemon.sandbox import Sandbox, build_sandbox
from srez_daemon.settings import DaemonSettings
from srez_daemon.storage import DialogWriter, SpaceReserve, atomic_write_bytes, utc_timestamp
from srez_daemon.supervisor import AgentProcess, AgentUser, agent_environment
from srez_env.errors import TaskError
from srez_env.tasks import load_tasks

logger = logging.getLogger(__name__)

Frame = PhaseFrame | DiffFrame | GradeFrame
Publish = Callable[[Frame], None]
ForcedReason = Literal["agent_exit", "time_limit", "step_budget"]
RESERVE_BYTES = 1 << 20
"""Disk space held back for the files that end a run (patches, grade, summary)."""
SUMMARY_RETRY_S = 5.0
"""How long writing ``summary.json`` is retried when the disk refuses it."""
CUSTOM_PREFIX = "cmd:"
"""Agent specs of custom agent commands: ``cmd:NAME``."""


def load_manifest(path: Path) -> RunManifest:
    """Reads ``run.json``; raises RunSetupError with a one-line reason."""
    try:
        return RunManifest.model_validate_json(path.read_bytes())
    except OSError as e:
        msg = f"{path}: cannot read run.json: {e.strerror}"
        raise RunSetupError(msg) from e
    except ValidationError as e:
        first = e.errors()[0]
        msg = f"{path}: {'.'.join(str(x) for x in first['loc'])}: {first['msg']}"
        raise RunSetupError(msg) from e


class RunController(AgentPort):
    """One run: the episode, the agent process, the phases and the files they write."""

    def __init__(
        self,
        settings: DaemonSettings,
        *,
        publish: Publish = lambda _frame: None,
        environ: dict[str, str] | None = None,
        files_of: Callable[[], list[FileChange]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.paths = settings.paths
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
        try:
            self.task = load_tasks([self.manifest.task_id])[0]
        except TaskError as e:
            raise RunSetupError(str(e)) from e
        self._publish = publish
        self._environ = environ or {}
        self._files_of = files_of
        self._clock_started = clock()
        self.state = RunState(
            run_id=self.manifest.run_id,
            phase="starting",
            step_budget=self.task.max_steps,
            started_at=utc_timestamp(datetime.now(UTC)),
        )
        self.episode: Episode | None = None
        self.agent: AgentProcess | None = None
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
        self._loop: asyncio.AbstractEventLoop | None = None
        self._storage_error: str | None = None
        """Why a run file could not be written: the run is ending as a harness error."""
        self._reserve = SpaceReserve(self.paths.root / ".srez-reserve", RESERVE_BYTES)

    # ------------------------------------------------------------------ state
    @property
    def phase(self) -> Phase:
        return self.state.phase

    def _update(self, **changes: Any) -> None:
        self.state = self.state.model_copy(update=changes)
        try:
            atomic_write_bytes(self.paths.state_json, self.state.model_dump_json(indent=2).encode())
        except OSError as e:  # a convenience copy: the next change rewrites it
            logger.warning("state.json not written: %s", e)

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
            message = f"the run could not start: {type(e).__name__}: {e}"
            if self.agent is not None:
                await self.agent.kill()
            self._reserve.release()
            self._set_phase(
                "error", publish=False, finished_at=utc_timestamp(datetime.now(UTC)), error=message
            )
            self.error_kind = "harness"
            await self._write_summary(message, None, None, None)
            self._finish()

    async def _start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.prepare()
        self._reserve.hold()
        dialog = DialogWriter(self.paths.dialog)
        limits = NoteLimits(
            max_bytes=self.settings.notes_max_bytes,
            max_count=self.settings.notes_max_count,
            max_note_bytes=self.settings.note_max_bytes,
        )
        self.episode = Episode(
            self.task,
            self.manifest,
            self.paths,
            dialog,
            on_world_change=self._world_changed,
            note_limits=limits,
        )
        self.episode.start()
        await self._serve_agent_socket()
        self._agent_started = self._now()
        self._set_phase("agent", agent_started_at=utc_timestamp(datetime.now(UTC)))
        env = agent_environment(
            self._environ,
            self.settings.socket_path,
            {
                "SREZ_AGENT_SPEC": self.manifest.agent_spec,
                "SREZ_RUN_SEED": str(self.manifest.run_seed),
                "SREZ_MODEL": self.manifest.model,
            },
        )
        self.agent = AgentProcess(
            self.agent_argv, env, self.paths.log("agent"), sandbox=self._sandbox()
        )
        try:
            cwd = Path(self._agent_user.home) if self._agent_user else self.paths.root
            await self.agent.start(cwd, self._agent_user)
        except OSError as e:
            await self.end_agent_phase(
                "agent_exit", "failed", f"the agent could not start: {e}", error_kind="harness"
            )
            return
        spawn(self._watch_agent(), name="watch-agent")
        limit, wall = self.settings.agent_time_limit_s, self.settings.wall_cap_s
        if limit is not None or wall is not None:
            spawn(self._watch_time_limit(limit, wall), name="time-limit")

    def _sandbox(self) -> Sandbox | None:
        """The agent's bubblewrap sandbox when the settings ask for one (``local``)."""
        if self.settings.bwrap is None:
            return None
        return build_sandbox(
            self.settings.bwrap,
            socket=self.settings.socket_path,
            command=self.agent_argv,
            agent_spec=self.manifest.agent_spec,
            model=self.manifest.model,
            environ=self._environ,
            hide=(self.paths.root, self.settings.token_file, *self.settings.sandbox_hide),
        )

    async def _serve_agent_socket(self) -> None:
        path = self.settings.socket_path
        path.unlink(missing_ok=True)
        self._agent_runner = web.AppRunner(create_agent_app(self), handle_signals=False)
        await self._agent_runner.setup()
        await web.UnixSite(self._agent_runner, str(path)).start()
        path.chmod(0o600)  # the agent's alone: no other local user may act for it
        if self._agent_user is not None:
            os.chown(path, self._agent_user.uid, self._agent_user.gid)

    # ------------------------------------------------------------------ the agent's side
    def agent_task(self) -> AgentTask:
        episode = self._episode()
        # the oracle is for the built-in scripted expert alone: a custom command asking for
        # "scripted" would otherwise read the ground truth
        is_oracle = self.manifest.agent_spec == "scripted" and self.agent_is_builtin
        oracle = self.task.model_dump(mode="json") if is_oracle else None
        return AgentTask(
            task_id=self.task.id,
            run_id=self.manifest.run_id,
            run_seed=self.manifest.run_seed,
            max_steps=self.task.max_steps,
            prompt=episode.prompt,
            oracle=oracle,
        )

    async def agent_call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        self.agent_clock.activity(self._now())  # an open provider wait ends here, as observed
        async with self._calls:  # one call at a time, in the order they arrive
            self._require_agent_phase()
            episode = self._episode()
            # off the loop: each call appends two fsynced dialog entries, and every viewer
            # (and every other request) would wait for those fsyncs
            try:
                obs = await asyncio.to_thread(episode.call, tool, args)
            except RecordError as e:
                raise self._storage_failed(e) from e
            await asyncio.to_thread(self._update, steps_used=episode.steps_used)
            if episode.done:
                reason = episode.env.log.end_reason or "submit"
                spawn(self.end_agent_phase(reason, "completed"), name="end-agent-phase")
            return obs

    async def agent_note(self, note: AgentNote) -> None:
        self._require_agent_phase()
        episode = self._episode()
        try:  # off the loop, like a tool call: the dialog's lock orders the two
            await asyncio.to_thread(episode.note, note)
        except NoteRefused as e:
            raise ApiError(code=e.code, message=e.message) from e
        except RecordError as e:
            raise self._storage_failed(e) from e
        now = self._now()
        changes: dict[str, Any] = {}
        if note.type == "usage":
            tokens = episode.tokens
            changes = {
                "tokens": TokenTotals(input=tokens.input, output=tokens.output),
                "cost_usd": episode.cost_usd or 0.0,  # the live figure: 0 when unpriced
            }
        if note.type == "provider_error":
            self._provider_error = str(note.fields.get("message", ""))
            # every provider wait, not only cooldowns; believed only as attested and observed
            self.agent_clock.note(note.fields.get("retry_in_s"), now)
        else:
            self.agent_clock.activity(now)
        excluded = round(self.agent_clock.excluded_s(now), 3)
        if excluded != self.state.cooldown_s:
            changes["cooldown_s"] = excluded
        if changes:
            self._update(**changes)

    def _storage_failed(self, error: RecordError) -> ApiError:
        """A run file could not be written: the run ends now as a harness error (once), and the
        agent is told so."""
        if self._storage_error is None:
            self._storage_error = f"the run's files could not be written: {error}"
            logger.error("%s; ending the run", self._storage_error)
            spawn(
                self.end_agent_phase("error", "failed", self._storage_error, error_kind="harness"),
                name="end-agent-phase",
            )
        return ApiError(
            code="storage_failed",
            message=f"{self._storage_error}; the run ends as a harness error",
        )

    def _require_agent_phase(self) -> None:
        if self._storage_error is not None:
            raise ApiError(
                code="storage_failed",
                message=f"{self._storage_error}; the run ends as a harness error",
            )
        if self.phase != "agent":
            raise ApiError(
                code="conflict",
                message=f"the agent phase is over (phase {self.phase}); nothing was executed",
            )

    def _episode(self) -> Episode:
        if self.episode is None:
            msg = "the run is still starting"
            raise ApiError(code="unavailable", message=msg)
        return self.episode

    def _world_changed(self) -> None:
        """Called by the episode, in the tool call's worker thread: the changed files are read
        there, and the frame is published on the event loop (viewers' transports and queues are
        not thread-safe)."""
        if self._files_of is not None:
            self._publish_on_loop(DiffFrame(files=self._files_of()))

    def _publish_on_loop(self, frame: Frame) -> None:
        loop = self._loop
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if loop is None or here is loop:
            self._publish(frame)
        else:
            loop.call_soon_threadsafe(self._publish, frame)

    # ------------------------------------------------------------------ ending the agent phase
    async def _watch_agent(self) -> None:
        assert self.agent is not None
        code = await self.agent.wait()
        if self.phase == "agent":
            outcome: Outcome = "completed" if code == 0 else "failed"
            verdict = judge_exit(
                code,
                builtin_agent=self.agent_is_builtin,
                agent_spec=self.manifest.agent_spec,
            )
            error = None if code == 0 else f"the agent exited with code {code}"
            if verdict.error_kind == "provider":
                error = f"the model provider failed: {self._provider_error or 'no detail'}"
            elif verdict.error_kind == "harness":
                error = f"the agent refused its configuration (exit {code}; see logs/agent.log)"
            elif verdict.claimed is not None:
                detail = self._provider_error if verdict.claimed == "provider" else ""
                error = (
                    f"the agent exited with code {code}, claiming a {verdict.claimed} failure"
                    + (f" ({detail})" if detail else "")
                    + "; the claim is not attested (only the built-in agents' are), so it counts"
                    " as the agent's failure"
                )
            await self.end_agent_phase(
                "agent_exit",
                outcome,
                error,
                error_kind=verdict.error_kind,
                claimed_error_kind=verdict.claimed,
            )

    async def _watch_time_limit(self, limit_s: float | None, wall_s: float | None) -> None:
        """Ends the agent phase at its time limit (attested provider waits excluded) or at the
        hard wall-clock cap (nothing excluded), whichever comes first."""
        while self.phase == "agent":
            now = self._now()
            elapsed = now - self._agent_started
            left = [] if wall_s is None else [wall_s - elapsed]
            if limit_s is not None:
                left.append(limit_s - (elapsed - self.agent_clock.excluded_s(now)))
            if min(left) <= 0:
                if limit_s is not None and left[-1] <= 0:
                    why = f"the agent reached its {limit_s:g} s limit"
                else:
                    why = f"the agent phase reached its hard wall-clock cap of {wall_s:g} s"
                self._update(cooldown_s=round(self.agent_clock.excluded_s(now), 3))
                await self.end_agent_phase("time_limit", "timed_out", why, error_kind="agent")
                return
            await asyncio.sleep(min(1.0, max(0.01, min(left))))

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
                self._evaluator_log(
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
            end: EndReason = "stopped" if stopped else episode.env.log.end_reason or "submit"
            if self._storage_error is not None and not stopped:
                end = "error"
            self._set_phase(
                "sealed", agent_ended_at=utc_timestamp(datetime.now(UTC)), end_reason=end
            )
            status_error = error if (outcome != "completed" or stopped) else None
            try:
                episode.seal()
                self._evaluator_log(f"sealed: final.patch and reference.patch written (end: {end})")
                self._set_phase("grading")
                grade = episode.grade(self.error_kind)
                self.grade_summary = GradeFrame(
                    reward=grade.reward.total, resolved=grade.resolved, passed=grade.passed
                )
                self._evaluator_log(
                    f"graded: reward {grade.reward.total} resolved {grade.resolved} passed {grade.passed} "
                    + " ".join(
                        f"{k}={'pass' if c.passed else 'fail'}" for k, c in grade.checks.items()
                    )
                )
                self._publish(self.grade_summary)
                self._set_phase(
                    "done",
                    publish=False,  # _finish publishes it, after the dialog's last entries
                    finished_at=utc_timestamp(datetime.now(UTC)),
                    error=status_error,
                )
                await self._write_summary(
                    status_error, grade.reward.total, grade.resolved, grade.passed
                )
            except Exception as e:  # the run must still end in a written summary
                logger.exception("grading failed")
                message = f"grading failed: {type(e).__name__}: {e}"
                if self._storage_error is not None:
                    message = f"{self._storage_error} (then {message})"
                self.error_kind = "harness"
                self._set_phase(
                    "error",
                    publish=False,
                    finished_at=utc_timestamp(datetime.now(UTC)),
                    error=message,
                )
                await self._write_summary(message, None, None, None)
            finally:
                self._finish()

    def _finish(self) -> None:
        """The run has ended: flush the listeners (the dialog tail reads to the end), then tell
        viewers the final phase, so ``done`` never overtakes the last dialog entries."""
        if self.finished.is_set():
            return
        self._reserve.release()
        self.finished.set()
        for callback in self.finished_callbacks:
            callback()
        self._publish(PhaseFrame(phase=self.phase))

    async def stop(self) -> None:
        """SIGTERM: end now, keep what was done, and write the summary."""
        if self.phase in ("starting", "agent") and self.episode is not None:
            await self.end_agent_phase("agent_exit", "failed", "stopped by SIGTERM", stopped=True)
        elif self.phase in ("starting",) or not self.paths.summary_json.exists():
            message = "stopped by SIGTERM before the run started"
            self.error_kind = "harness"
            self._reserve.release()
            self._set_phase(
                "error", publish=False, finished_at=utc_timestamp(datetime.now(UTC)), error=message
            )
            await self._write_summary(message, None, None, None)
            self._finish()

    async def close(self) -> None:
        """Kills a still-running agent and closes the agent socket."""
        if self.agent is not None:
            await self.agent.kill()
        if self._agent_runner is not None:
            await self._agent_runner.cleanup()
            self._agent_runner = None
        self.settings.socket_path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ files
    async def _write_summary(
        self, error: str | None, reward: float | None, resolved: bool | None, passed: bool | None
    ) -> None:
        """Writes ``summary.json``, retrying for :data:`SUMMARY_RETRY_S` while the disk refuses
        it (then the failure is logged and the run ends all the same)."""
        steps = self.episode.steps_used if self.episode else None
        dropped = self.episode.notes_dropped if self.episode is not None else 0
        summary = RunSummary(
            run_id=self.manifest.run_id,
            task_id=self.manifest.task_id,
            agent=self.manifest.agent,
            model=self.manifest.model,
            status="error" if error else "ok",
            reward=reward,
            resolved=resolved,
            passed=passed,
            steps=steps,
            end_reason=self.state.end_reason,
            duration_s=round(self._now() - self._clock_started, 3),
            finished_at=utc_timestamp(datetime.now(UTC)),
            error=error,
            error_kind=self.error_kind if error else None,
            claimed_error_kind=self.claimed_error_kind if error else None,
            cost_usd=self.episode.cost_usd if self.episode is not None else 0.0,
            tokens=TokenCount(input=self.state.tokens.input, output=self.state.tokens.output),
            notes_dropped=dropped,
            truncated=dropped > 0,
        )
        data = summary.model_dump_json(indent=2).encode() + b"\n"
        deadline = time.monotonic() + SUMMARY_RETRY_S
        while True:
            try:
                atomic_write_bytes(self.paths.summary_json, data)
                return
            except OSError as e:
                if time.monotonic() >= deadline:
                    logger.error("summary.json not written after %g s: %s", SUMMARY_RETRY_S, e)
                    return
                logger.warning("summary.json not written yet (retrying): %s", e)
                await asyncio.sleep(0.2)

    def _evaluator_log(self, line: str) -> None:
        try:
            with self.paths.log("evaluator").open("a", encoding="utf-8") as f:
                f.write(f"{utc_timestamp(datetime.now(UTC))} {line}\n")
        except OSError as e:
            logger.warning("evaluator log not written: %s", e)


def agent_command(manifest: RunManifest, settings: DaemonSettings) -> tuple[tuple[str, ...], bool]:
    """The agent's command line, and whether it is the built-in ``srez-agent``.

    A ``cmd:NAME`` run runs the ``agent_cmd`` its ``run.json`` records (else the daemon's own
    ``SREZ_AGENT_CMD``), and is never the built-in agent, whatever the command; any other spec
    runs the daemon's agent command. Raises RunSetupError when ``run.json`` disagrees with itself.
    """
    spec = manifest.agent_spec
    if spec.startswith(CUSTOM_PREFIX):
        argv = manifest.agent_cmd or (None if settings.agent_is_builtin else settings.agent_argv)
        if not argv:
            msg = f"run.json names the custom agent {spec!r} but records no agent_cmd to run"
            raise RunSetupError(msg)
        return tuple(argv), False
    if manifest.agent_cmd is not None:
        msg = f"run.json records an agent_cmd for agent {spec!r}: a custom command runs as cmd:NAME"
        raise RunSetupError(msg)
    return settings.agent_argv, settings.agent_is_builtin


def _forced_reason(reason: str) -> ForcedReason:
    if reason == "time_limit":
        return "time_limit"
    if reason == "step_budget":
        return "step_budget"
    return "agent_exit"
