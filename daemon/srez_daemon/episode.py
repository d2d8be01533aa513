"""One episode, hosted and recorded: the simulator plus everything a run folder must show.

:class:`Episode` wraps ``SREEnv`` and is the only writer of the run's dialog (DESIGN.md §5, §6): the
agent cannot forge the tool record, because the ``tool_call`` / ``tool_result`` entries are
written here, around the real call. It also keeps ``archive/transcript.jsonl`` (the simulator's
replayable step log) and the live ``world/<service>/<service>.conf`` files a person in the pty can
read, and at the end writes ``final.patch``, ``reference.patch`` and ``result.json``.

It does no networking, so the daemon and the inline backend record runs the same way.

Bounds: the agent's notes are capped per run (:class:`NoteLimits`); past a cap they are refused
(:class:`~srez_daemon.errors.NoteRefused`) and one ``notes_dropped`` entry says so, while tool
calls are always recorded. A step's transcript line and its ``tool_result`` are written together
or not at all; a failed write raises :class:`~srez_daemon.errors.RecordError` and leaves both
files at their last whole line. Thread-safe where the daemon needs it: a tool call (in a worker
thread) and notes (in others) may run at once; :class:`~srez_daemon.storage.DialogWriter` orders
them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import ValidationError

from srez_daemon.errors import NoteRefused
from srez_daemon.protocol import (
    Assistant,
    NotesDropped,
    ProviderError,
    RunManifest,
    SessionCompleted,
    SessionFailed,
    SessionStarted,
    SessionTimedOut,
    TaskPrompt,
    Thinking,
    TokenCount,
    ToolCall,
    ToolResult,
    Usage,
)
from srez_daemon.protocol.agent import RAW_REPLY_TOOL
from srez_daemon.protocol.api import AgentNote
from srez_daemon.settings import NOTE_MAX_BYTES, NOTES_MAX_BYTES, NOTES_MAX_COUNT, RunPaths
from srez_daemon.storage import DialogWriter, JsonlFile, atomic_write_bytes
from srez_env.actions import MUTATING
from srez_env.env import SREEnv
from srez_env.grade import Grade, grade_episode, reference_patch
from srez_env.task import Task
from srez_env.world import topology as topo

Outcome = Literal["completed", "failed", "timed_out"]
Timer = Callable[[], float]
ErrorKind = Literal["provider", "agent", "harness"]
# ``POST /tools/_reply {"text": ...}`` (RAW_REPLY_TOOL): a reply the agent could not turn into a
# call. The text goes to the environment as it is, which rejects it with its closed codes
# (``PARSE_ERROR``, ``BAD_ARGS`` ...) and counts the step, so a malformed reply is recorded like
# any invalid call.


RESERVED_NOTE_FIELDS: Final = frozenset({"seq", "ts", "type"})
"""Fields the daemon stamps on every entry: a note may not set them."""
_NOTE_MODELS: Final[
    dict[str, type[Assistant] | type[Thinking] | type[ProviderError] | type[Usage]]
] = {
    "assistant": Assistant,
    "thinking": Thinking,
    "provider_error": ProviderError,
    "usage": Usage,
}


@dataclass(frozen=True, slots=True)
class NoteLimits:
    """Caps on the agent's notes in one run (``SREZ_NOTES_MAX_BYTES`` and friends)."""

    max_bytes: int = NOTES_MAX_BYTES
    """Bytes of dialog lines all notes may take."""
    max_count: int = NOTES_MAX_COUNT
    """Notes recorded at most."""
    max_note_bytes: int = NOTE_MAX_BYTES
    """The longest line one note may take (a longer note alone is refused)."""


class Episode:
    """Hosts one episode of a task and records it into a run folder."""

    def __init__(
        self,
        task: Task,
        manifest: RunManifest,
        paths: RunPaths,
        dialog: DialogWriter,
        *,
        on_world_change: Callable[[], None] | None = None,
        timer: Timer = time.monotonic,
        note_limits: NoteLimits = NoteLimits(),
    ) -> None:
        self.task = task
        self.manifest = manifest
        self.paths = paths
        self.dialog = dialog
        self.env = SREEnv(
            task, run_seed=manifest.run_seed, agent=manifest.agent, model=manifest.model
        )
        self._on_world_change = on_world_change
        self._timer = timer
        self._started = timer()
        self._turns = 0
        self._tokens = TokenCount()
        self._cost: float | None = 0.0
        self.prompt: dict[str, Any] = {}
        self.initial_world: dict[str, str] = {}
        self._note_limits = note_limits
        self._notes_kept = 0
        self._notes_bytes = 0
        self._notes_cut: NotesDropped | None = None  # the marker, once a cap was reached
        self._notes_dropped = 0
        self._marker_due = False
        self._notes_lock = threading.Lock()  # the counters; the dialog has its own lock
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
        self._transcript = JsonlFile(self.paths.transcript)
        files = self.env.world.at(0).files
        self.initial_world = {s: files[s].text for s in topo.SERVICES}
        for s in topo.SERVICES:
            self._write_conf(s, self.initial_world[s])
        return self.prompt

    @property
    def done(self) -> bool:
        return self.env.done

    @property
    def steps_used(self) -> int:
        return self.env.steps_used

    @property
    def tokens(self) -> TokenCount:
        return self._tokens

    @property
    def notes_dropped(self) -> int:
        """Notes refused and not recorded (oversized, or past a cap)."""
        return self._notes_dropped

    @property
    def cost_usd(self) -> float | None:
        """The agent's running cost: 0 before any model call, None once a call had no price
        (an unpriced model: a number would understate it, and budgets rely on it)."""
        return self._cost

    # ------------------------------------------------------------------ the agent's calls
    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Executes one tool call on the simulator and records it; returns the observation."""
        self._turns += 1
        call_id = f"call-{self._turns}"
        self.dialog.append(
            lambda seq, ts: ToolCall(seq=seq, ts=ts, call_id=call_id, name=tool, args=args)
        )
        before = len(self.env.transcript)
        started = time.perf_counter()
        text = args.get("text") if tool == RAW_REPLY_TOOL else None
        action = text if isinstance(text, str) else {"tool": tool, "args": args}
        result = self.env.step(action)
        elapsed_ms = 1000 * (time.perf_counter() - started)
        obs = result.observation
        text = obs["output"] if obs.get("ok") else _error_text(obs.get("error", {}))
        lines = "".join(line + "\n" for line in self.env.transcript[before:]).encode()
        self.dialog.append(
            lambda seq, ts: ToolResult(
                seq=seq,
                ts=ts,
                call_id=call_id,
                status="success" if obs.get("ok") else "error",
                result=text,
                duration_ms=round(elapsed_ms, 3),
                step=int(obs.get("step", self.env.steps_used)),
                steps_left=int(obs.get("steps_left", self.env.steps_left)),
            ),
            also=(self._transcript_file(), lines),
        )
        if obs.get("ok") and tool in MUTATING:
            self._sync_world()
        return obs

    def note(self, note: AgentNote) -> None:
        """Records an entry the agent writes about itself (assistant, thinking, errors, usage).

        Raises:
            NoteRefused: ``bad_request`` if the fields are not the type's (or set ``seq``,
                ``ts`` or ``type``); ``payload_too_large`` if the note's line is over the
                per-note cap, or the notes reached their byte cap; ``too_many_notes`` once they
                reached their count cap. Nothing of a refused note is recorded.
            RecordError: If the dialog could not be written.
        """
        f = dict(note.fields)
        reserved = sorted(RESERVED_NOTE_FIELDS & f.keys())
        if reserved:
            msg = f"fields may not set {', '.join(reserved)}: the daemon stamps them"
            raise NoteRefused(code="bad_request", message=msg)
        model = _NOTE_MODELS[note.type]
        try:
            entry = self.dialog.append(
                lambda seq, ts: model(seq=seq, ts=ts, **f), check=self._admit_note
            )
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            where = ".".join(str(x) for x in first["loc"]) or "fields"
            msg = f"fields.{where}: {first['msg']}"
            raise NoteRefused(code="bad_request", message=msg) from e
        except NoteRefused:
            with self._notes_lock:
                self._notes_dropped += 1
                marker = self._notes_cut if self._marker_due else None
                self._marker_due = False
            if marker is not None:
                self.dialog.append(lambda seq, ts: marker.model_copy(update={"seq": seq, "ts": ts}))
            raise
        if isinstance(entry, Usage):
            self._tokens = entry.tokens
            self._cost = entry.cost_usd

    def _admit_note(self, line: bytes) -> None:
        """Counts a note about to be written, or refuses it (called under the dialog's lock)."""
        limits = self._note_limits
        with self._notes_lock:
            if self._notes_cut is None:
                reason: Literal["bytes", "count"] | None = None
                if len(line) > limits.max_note_bytes:
                    msg = (
                        f"the note's line is {len(line)} bytes, over the {limits.max_note_bytes}-byte"
                        " cap of one note; it was not recorded (shorten it)"
                    )
                    raise NoteRefused(code="payload_too_large", message=msg)
                if self._notes_kept >= limits.max_count:
                    reason = "count"
                elif self._notes_bytes + len(line) > limits.max_bytes:
                    reason = "bytes"
                if reason is None:
                    self._notes_kept += 1
                    self._notes_bytes += len(line)
                    return
                self._notes_cut = NotesDropped(
                    seq=0,
                    ts="1970-01-01T00:00:00Z",
                    reason=reason,
                    limit=limits.max_count if reason == "count" else limits.max_bytes,
                    notes_kept=self._notes_kept,
                    bytes_kept=self._notes_bytes,
                )
                self._marker_due = True
            cut = self._notes_cut
        if cut.reason == "count":
            msg = (
                f"the run's notes reached their cap of {cut.limit} notes: this and every later"
                " note is dropped (tool calls go on)"
            )
            raise NoteRefused(code="too_many_notes", message=msg)
        msg = (
            f"the run's notes reached their cap of {cut.limit} bytes: this and every later note"
            " is dropped (tool calls go on)"
        )
        raise NoteRefused(code="payload_too_large", message=msg)

    def force_submit(self, reason: Literal["agent_exit", "time_limit", "step_budget"]) -> None:
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
        atomic_write_bytes(self.paths.final_patch, self.current_diff().encode())
        atomic_write_bytes(self.paths.reference_patch, reference_patch(self.task).encode())

    def grade(self, error_kind: ErrorKind | None = None) -> Grade:
        """Grades the episode and writes ``result.json`` (with ``error_kind`` when the run failed
        for a reason other than the agent's play)."""
        grade = grade_episode(self.env.record())
        if error_kind is not None:
            grade = grade.model_copy(update={"error_kind": error_kind})
        atomic_write_bytes(self.paths.result_json, grade.to_json())
        return grade

    def current_diff(self) -> str:
        """Every change to the config files since the incident started."""
        from srez_env.grade import unified_diff_texts

        return unified_diff_texts(self.initial_world, self.current_world())

    def current_world(self) -> dict[str, str]:
        """The config files as the simulator has them now."""
        files = self.env.world.at(self.env.clock).files
        return {s: files[s].text for s in topo.SERVICES}

    # ------------------------------------------------------------------ files
    def _transcript_file(self) -> JsonlFile:
        if self._transcript is None:
            msg = "the episode has not started: call start() first"
            raise RuntimeError(msg)
        return self._transcript

    def _sync_world(self) -> None:
        changed = False
        for s, text in self.current_world().items():
            path = self.paths.conf(s)
            if path.read_text(encoding="utf-8") != text:
                self._write_conf(s, text)
                changed = True
        if changed and self._on_world_change is not None:
            self._on_world_change()

    def _write_conf(self, service: str, text: str) -> None:
        path = self.paths.conf(service)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, text.encode())


def _error_text(error: dict[str, Any]) -> str:
    code, message, hint = error.get("code", ""), error.get("message", ""), error.get("hint", "")
    return f"error {code}: {message}" + (f" (hint: {hint})" if hint else "")
