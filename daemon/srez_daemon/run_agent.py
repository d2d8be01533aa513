"""The run as its agent sees it through the agent socket: the task, tool calls and notes, each
checked against the phase and recorded by the episode (docs/design.md §5).

:class:`AgentRequests` is the agent socket's side of the run controller
(:class:`srez_daemon.run.RunController` is one): it declares what it uses of the controller, which
owns the phases and ends the agent phase.

A run file that cannot be written (a full disk, an I/O error) ends the run as a ``harness`` error
at once: the agent's request gets ``507 storage_failed``, later requests the same, and the agent
phase ends by itself with the reason in ``summary.json``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from srez_core.aio import spawn
from srez_daemon.agent_clock import AgentClock
from srez_daemon.agent_socket import AgentPort
from srez_daemon.errors import NoteRefused, RecordError
from srez_daemon.http import ApiError
from srez_daemon.protocol import RunManifest
from srez_daemon.protocol.api import (
    AgentNote,
    AgentTask,
    DiffFrame,
    GradeFrame,
    Phase,
    PhaseFrame,
    RunState,
    TokenTotals,
)
from srez_daemon.record.episode import Episode, Outcome
from srez_env.agents.failures import ErrorKind
from srez_env.task import Task

logger = logging.getLogger(__name__)

Frame = PhaseFrame | DiffFrame | GradeFrame
Publish = Callable[[Frame], None]


class AgentRequests(AgentPort):
    """Answers the agent's requests for the run controller that inherits it."""

    manifest: RunManifest
    task: Task
    agent_is_builtin: bool
    agent_clock: AgentClock
    state: RunState
    episode: Episode | None
    _now: Callable[[], float]
    _publish: Publish
    _calls: asyncio.Lock
    """One tool call at a time; ending the agent phase waits for the one in flight."""
    _provider_error: str
    """The message of the agent's last ``provider_error`` note."""
    _storage_error: str | None
    """Why a run file could not be written: the run is ending as a harness error."""

    @property
    def phase(self) -> Phase:
        return self.state.phase

    def _update(self, **changes: Any) -> None:
        raise NotImplementedError

    end_agent_phase: Callable[..., Coroutine[Any, Any, None]]
    """Kills the agent, then seals, grades and finishes the run (the controller's)."""

    def _end_soon(
        self,
        reason: str,
        outcome: Outcome,
        error: str | None = None,
        error_kind: ErrorKind | None = None,
    ) -> None:
        """Ends the agent phase in a task of its own (the request that asked is answered first)."""
        end = self.end_agent_phase(reason, outcome, error, error_kind=error_kind)
        spawn(end, name="end-agent-phase")

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
            # off the loop: each call appends two fsynced dialog entries (and diffs the configs
            # it changed), and every viewer (and every other request) would wait for those
            try:
                outcome = await asyncio.to_thread(episode.call, tool, args)
            except RecordError as e:
                raise self._storage_failed(e) from e
            if outcome.rewritten:  # on the loop: viewers' transports are not thread-safe
                world = outcome.world
                self._publish(DiffFrame(files=list(world.files), diff=world.diff))
            await asyncio.to_thread(self._update, steps_used=episode.steps_used)
            if episode.done:
                reason = episode.end_reason or "submit"
                self._end_soon(reason, "completed")
            return outcome.observation

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
            self._end_soon("error", "failed", self._storage_error, error_kind="harness")
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
