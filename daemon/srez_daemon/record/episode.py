"""One episode, hosted and recorded: the simulator plus everything a run folder must show.

:class:`Episode` wraps ``SREEnv`` and is the only writer of the run's dialog (docs/design.md §5,
§6): the agent cannot forge the tool record, because the ``tool_call`` / ``tool_result`` entries are
written here, around the real call. It also keeps ``archive/transcript.jsonl`` (the simulator's
replayable step log) and the live ``world/<service>/<service>.conf`` files a person in the pty can
read, and at the end writes ``final.patch``, ``reference.patch`` and ``result.json``.

It does no networking: the daemon and the inline backend host it alike, so a run's files are the
same whichever ran it. :meth:`Episode.call` hands its host the files the call changed
(:class:`~srez_daemon.record.world.WorldFiles`, from the texts in memory), which the daemon
publishes as the stream's diff frame.

Bounds: the agent's notes are capped per run (:mod:`srez_daemon.record.notes`), while tool calls
are always recorded. A step's transcript line and its ``tool_result`` are written together or not
at all; a failed write raises :class:`~srez_daemon.errors.RecordError` and leaves both files at
their last whole line. Thread-safe where the daemon needs it: a tool call (in a worker thread) and
notes (in others) may run at once; :class:`~srez_daemon.record.storage.DialogWriter` orders them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from srez_core.atomic import atomic_write_bytes
from srez_core.clock import utc_timestamp
from srez_daemon.protocol import (
    Provenance,
    RunManifest,
    RunSummary,
    SessionCompleted,
    SessionFailed,
    SessionStarted,
    SessionTimedOut,
    TaskPrompt,
    TokenCount,
    ToolCall,
    ToolResult,
    Usage,
)
from srez_daemon.protocol.agent import RAW_REPLY_TOOL
from srez_daemon.protocol.api import AgentNote
from srez_daemon.record.folder import DEFAULT_NOTE_LIMITS, NoteLimits, RunPaths
from srez_daemon.record.notes import NoteGate
from srez_daemon.record.storage import DialogWriter, JsonlFile
from srez_daemon.record.world import WorldFiles
from srez_env.actions import MUTATING
from srez_env.agents.failures import ErrorKind
from srez_env.env import SREEnv
from srez_env.episode import EndReason
from srez_env.grade import Grade, grade_episode, reference_patch
from srez_env.task import Task
from srez_env.world import topology as topo

Outcome = Literal["completed", "failed", "timed_out"]
Timer = Callable[[], float]
"""A monotonic clock in seconds."""
ForcedReason = Literal["agent_exit", "time_limit", "step_budget"]
# ``POST /tools/_reply {"text": ...}`` (RAW_REPLY_TOOL): a reply the agent could not turn into a
# call. The text goes to the environment as it is, which rejects it with its closed codes
# (``PARSE_ERROR``, ``BAD_ARGS`` ...) and counts the step, so a malformed reply is recorded like
# any invalid call.


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What one tool call did: the agent's observation, and the config files it changed."""

    observation: dict[str, Any]
    """What the agent gets back."""
    world: WorldFiles
    """The config files after the call, against those at the incident's start."""
    rewritten: Mapping[str, str]
    """Service -> new text, for each file this call changed (empty for most calls)."""


class Episode:
    """Hosts one episode of a task and records it into a run folder."""

    def __init__(
        self,
        task: Task,
        manifest: RunManifest,
        paths: RunPaths,
        dialog: DialogWriter,
        *,
        timer: Timer = time.perf_counter,
        note_limits: NoteLimits = DEFAULT_NOTE_LIMITS,
        sync: bool = True,
    ) -> None:
        """``sync``: fsync each file as it is written; False when the host makes the whole run
        folder durable at its end (:mod:`srez_daemon.record.storage`)."""
        self.task = task
        self.manifest = manifest
        self.paths = paths
        self.dialog = dialog
        self.env = SREEnv(
            task, run_seed=manifest.run_seed, agent=manifest.agent, model=manifest.model
        )
        self._timer = timer
        self._sync = sync
        self._started = timer()
        self._turns = 0
        self._tokens = TokenCount()
        self._cost: float | None = 0.0
        self.prompt: dict[str, Any] = {}
        self._initial: dict[str, str] = {}
        self._world = WorldFiles({}, "", ())
        self._notes = NoteGate(note_limits)
        self._transcript: JsonlFile | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> dict[str, Any]:
        """Resets the simulator, writes the opening entries and the world files; the prompt."""
        self.prompt = self.env.reset()
        m = self.manifest
        self.dialog.append(
            lambda seq, ts: SessionStarted(
                seq=seq, ts=ts, agent=m.agent, model=m.model, task_id=m.task_id, run_id=m.run_id
            )
        )
        self.dialog.append(lambda seq, ts: TaskPrompt(seq=seq, ts=ts, text=self.prompt["text"]))
        self.paths.archive.mkdir(parents=True, exist_ok=True)
        self._transcript = JsonlFile(self.paths.transcript, sync=self._sync)
        self._initial = self._simulated_world()
        self._world = WorldFiles.between(self._initial, self._initial)
        for s, text in self._initial.items():
            self._write_conf(s, text)
        return self.prompt

    @property
    def done(self) -> bool:
        return self.env.done

    @property
    def steps_used(self) -> int:
        return self.env.steps_used

    @property
    def turns(self) -> int:
        """Tool calls made so far."""
        return self._turns

    @property
    def tokens(self) -> TokenCount:
        return self._tokens

    @property
    def notes_dropped(self) -> int:
        """Notes refused and not recorded (oversized, or past a cap)."""
        return self._notes.dropped

    @property
    def cost_usd(self) -> float | None:
        """The agent's running cost: 0 before any model call, None once a call had no price
        (an unpriced model: a number would understate it, and budgets rely on it)."""
        return self._cost

    @property
    def world(self) -> WorldFiles:
        """The config files now, against those at the incident's start (a snapshot, replaced
        whole after each call that changes one: safe to read from any thread)."""
        return self._world

    @property
    def end_reason(self) -> EndReason | None:
        """How the episode ended (``submit``, ``agent_exit`` ...), None while it runs."""
        return self.env.log.end_reason

    # ------------------------------------------------------------------ the agent's calls
    def call(self, tool: str, args: dict[str, Any]) -> CallOutcome:
        """Executes one tool call on the simulator and records it; what it did."""
        self._turns += 1
        call_id = f"call-{self._turns}"
        self.dialog.append(
            lambda seq, ts: ToolCall(seq=seq, ts=ts, call_id=call_id, name=tool, args=args)
        )
        before = len(self.env.transcript)
        started = self._timer()
        text = args.get("text") if tool == RAW_REPLY_TOOL else None
        action = text if isinstance(text, str) else {"tool": tool, "args": args}
        result = self.env.step(action)
        elapsed_ms = 1000 * max(0.0, self._timer() - started)
        obs = result.observation
        lines = "".join(line + "\n" for line in self.env.transcript[before:]).encode()
        self.dialog.append(
            lambda seq, ts: ToolResult(
                seq=seq,
                ts=ts,
                call_id=call_id,
                status="success" if obs.get("ok") else "error",
                result=observation_text(obs),
                duration_ms=round(elapsed_ms, 3),
                step=int(obs.get("step", self.env.steps_used)),
                steps_left=int(obs.get("steps_left", self.env.steps_left)),
            ),
            also=(self._transcript_file(), lines),
        )
        rewritten: dict[str, str] = {}
        if obs.get("ok") and tool in MUTATING:
            rewritten = self._sync_world()
        return CallOutcome(observation=obs, world=self._world, rewritten=rewritten)

    def note(self, note: AgentNote) -> None:
        """Records an entry the agent writes about itself (assistant, thinking, errors, usage).

        Raises:
            NoteRefused: If the note is malformed or over a cap
                (:meth:`~srez_daemon.record.notes.NoteGate.record`); nothing of it is recorded.
            RecordError: If the dialog could not be written.
        """
        entry = self._notes.record(self.dialog, note)
        if isinstance(entry, Usage):
            self._tokens = entry.tokens
            self._cost = entry.cost_usd

    def force_submit(self, reason: ForcedReason) -> None:
        """Ends the episode where it stands (the agent left, ran out of time, or of steps)."""
        self.env.force_submit(reason)

    def finish(self, outcome: Outcome, error: str | None = None) -> None:
        """Writes the closing dialog entry."""
        kwargs: dict[str, Any] = {
            "turns": self._turns,
            "duration_s": round(self._timer() - self._started, 3),
            "tokens_total": self._tokens.input + self._tokens.output,
            "cost_usd": self._cost,
            "error": error,
        }
        if outcome == "completed":
            self.dialog.append(lambda seq, ts: SessionCompleted(seq=seq, ts=ts, **kwargs))
        elif outcome == "failed":
            self.dialog.append(lambda seq, ts: SessionFailed(seq=seq, ts=ts, **kwargs))
        else:
            self.dialog.append(lambda seq, ts: SessionTimedOut(seq=seq, ts=ts, **kwargs))

    # ------------------------------------------------------------------ after the agent phase
    def seal(self) -> None:
        """Writes the run's diff and the reference patch (only once the agent phase is over)."""
        if not self.env.done:
            msg = "the agent phase is still running: end the episode before sealing it"
            raise RuntimeError(msg)
        reference = reference_patch(self.task).encode()
        atomic_write_bytes(self.paths.final_patch, self._world.diff.encode(), sync=self._sync)
        atomic_write_bytes(self.paths.reference_patch, reference, sync=self._sync)

    def grade(self, error_kind: ErrorKind | None = None) -> Grade:
        """Grades the episode and writes ``result.json`` (with ``error_kind`` when the run failed
        for a reason other than the agent's play)."""
        grade = grade_episode(self.env.record())
        if error_kind is not None:
            grade = grade.model_copy(update={"error_kind": error_kind})
        atomic_write_bytes(self.paths.result_json, grade.to_json(), sync=self._sync)
        return grade

    def close(self) -> None:
        """Closes the transcript (idempotent); the dialog is its host's to close."""
        if self._transcript is not None:
            self._transcript.close()

    # ------------------------------------------------------------------ files
    def _transcript_file(self) -> JsonlFile:
        if self._transcript is None:
            msg = "the episode has not started: call start() first"
            raise RuntimeError(msg)
        return self._transcript

    def _simulated_world(self) -> dict[str, str]:
        """The config files as the simulator has them now."""
        files = self.env.world.at(self.env.clock).files
        return {s: files[s].text for s in topo.SERVICES}

    def _sync_world(self) -> dict[str, str]:
        """Takes the simulator's config files, rewrites those that changed; which they are."""
        world = WorldFiles.between(self._initial, self._simulated_world())
        rewritten = world.rewritten(self._world)
        for s, text in rewritten.items():
            self._write_conf(s, text)
        self._world = world
        return rewritten

    def _write_conf(self, service: str, text: str) -> None:
        path = self.paths.conf(service)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, text.encode(), sync=self._sync)


def observation_text(observation: Mapping[str, Any]) -> str:
    """What a ``tool_result`` records of an observation: the output of a successful call, or
    ``error CODE: message (hint: ...)``."""
    if observation.get("ok"):
        output = observation.get("output")
        return output if isinstance(output, str) else ""
    error = observation.get("error")
    error = error if isinstance(error, Mapping) else {}
    code, message, hint = error.get("code", ""), error.get("message", ""), error.get("hint", "")
    return f"error {code}: {message}" + (f" (hint: {hint})" if hint else "")


def run_summary(
    manifest: RunManifest,
    episode: Episode | None,
    *,
    error: str | None,
    error_kind: ErrorKind | None,
    grade: Grade | None,
    end_reason: str | None,
    duration_s: float,
    finished_at: datetime,
    claimed_error_kind: ErrorKind | None = None,
    agent_output_dropped: int = 0,
) -> RunSummary:
    """``summary.json`` of a run that ended: ``error`` None means ``ok``; ``grade`` None means the
    run was not graded; ``episode`` None means it never started."""
    dropped = episode.notes_dropped if episode is not None else 0
    tokens = episode.tokens if episode is not None else TokenCount()
    return RunSummary(
        run_id=manifest.run_id,
        task_id=manifest.task_id,
        agent=manifest.agent,
        model=manifest.model,
        status="error" if error else "ok",
        reward=grade.reward.total if grade is not None else None,
        resolved=grade.resolved if grade is not None else None,
        passed=grade.passed if grade is not None else None,
        steps=episode.steps_used if episode is not None else None,
        end_reason=end_reason,
        duration_s=round(duration_s, 3),
        finished_at=utc_timestamp(finished_at),
        error=error,
        error_kind=error_kind if error else None,
        claimed_error_kind=claimed_error_kind if error else None,
        cost_usd=episode.cost_usd if episode is not None else 0.0,
        tokens=tokens,
        notes_dropped=dropped,
        agent_output_dropped=agent_output_dropped,
        truncated=dropped > 0,
        provenance=Provenance.of(manifest, grade.schema_version if grade is not None else None),
    )
