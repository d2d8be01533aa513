"""One episode, hosted and recorded: the simulator plus everything a run folder must show.

:class:`Episode` wraps ``SREEnv`` and is the only writer of the run's dialog (DESIGN.md §5, §6): the
agent cannot forge the tool record, because the ``tool_call`` / ``tool_result`` entries are
written here, around the real call. It also keeps ``archive/transcript.jsonl`` (the simulator's
replayable step log) and the live ``world/<service>/<service>.conf`` files a person in the pty can
read, and at the end writes ``final.patch``, ``reference.patch`` and ``result.json``.

It does no networking, so the daemon and the inline backend record runs the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final, Literal

from srez_daemon.protocol import (
    Assistant,
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
from srez_daemon.protocol.api import AgentNote
from srez_daemon.settings import RunPaths
from srez_daemon.storage import DialogWriter, atomic_write_bytes
from srez_env.actions import MUTATING
from srez_env.env import SREEnv
from srez_env.grade import Grade, reference_patch
from srez_env.task import Task
from srez_env.world import topology as topo

Outcome = Literal["completed", "failed", "timed_out"]
Timer = Callable[[], float]
ErrorKind = Literal["provider", "agent", "harness"]

RAW_REPLY_TOOL: Final = "_reply"
"""``POST /tools/_reply {"text": ...}``: a reply the agent could not turn into a call. The text
goes to the environment as it is, which rejects it with its closed codes (``PARSE_ERROR``,
``BAD_ARGS`` ...) and counts the step, so a malformed reply is recorded like any invalid call."""


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
        self.paths.transcript.touch()
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
            )
        )
        self._append_transcript(before)
        if obs.get("ok") and tool in MUTATING:
            self._sync_world()
        return obs

    def note(self, note: AgentNote) -> None:
        """Records an entry the agent writes about itself (assistant, thinking, errors, usage)."""
        f = dict(note.fields)
        match note.type:
            case "assistant":
                self.dialog.append(lambda seq, ts: Assistant(seq=seq, ts=ts, **f))
            case "thinking":
                self.dialog.append(lambda seq, ts: Thinking(seq=seq, ts=ts, **f))
            case "provider_error":
                self.dialog.append(lambda seq, ts: ProviderError(seq=seq, ts=ts, **f))
            case "usage":
                entry = self.dialog.append(lambda seq, ts: Usage(seq=seq, ts=ts, **f))
                self._tokens = entry.tokens
                self._cost = entry.cost_usd

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
        grade = self.env.grade()
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
    def _append_transcript(self, before: int) -> None:
        lines = self.env.transcript[before:]
        if lines:
            with self.paths.transcript.open("a", encoding="utf-8") as f:
                f.write("".join(line + "\n" for line in lines))

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
