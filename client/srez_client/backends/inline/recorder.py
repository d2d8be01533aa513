"""The ``inline`` backend: one episode in this process, no daemon (DESIGN.md §9).

The simulator and the agent run in the calling thread. The run is recorded exactly as a daemon
records it: the dialog (``session_started``, ``task_prompt``, a ``tool_call`` / ``tool_result``
pair per step, then ``session_completed`` or ``session_failed``), the grade and the other files of
the results layout (:mod:`srez_client.results.layout`).

LLM agents are refused (one-line :class:`~srez_env.agents.AgentSpecError`): they call their model
from ``srez-agent``, with provider retries, waits excluded from the time limit and credentials kept
out of this process; the ``local`` backend runs them with the same results layout.

Nothing is lost when the agent fails: if ``act`` raises, the episode is ended with
``force_submit("agent_exit")``, graded as it stands, the dialog ends with ``session_failed`` and
``summary.json`` has status ``error``. When the agent keeps acting, the environment ends the
episode itself once the step budget is used. An interrupted run (Ctrl-C: ``KeyboardInterrupt``)
leaves nothing: its ``.<run-id>.partial`` folder is deleted before the interrupt goes on.

:class:`~srez_client.backends.inline.backend.InlineBackend` puts :func:`run_inline` behind the
common backend interface.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Final

import orjson
from pydantic import JsonValue

from srez_client.errors import ResultsError
from srez_client.results.layout import RandomBytes, RunFolder, new_run_id, run_path
from srez_client.results.report import GradeView
from srez_daemon.protocol import (
    RunManifest,
    RunSummary,
    SessionCompleted,
    SessionFailed,
    SessionStarted,
    TaskPrompt,
    ToolCall,
    ToolResult,
)
from srez_daemon.storage import Clock, DialogWriter, system_clock, utc_timestamp
from srez_env.agents import Agent, AgentSpecError, make_agent
from srez_env.env import SREEnv
from srez_env.grade import Grade, grade_episode
from srez_env.task import Task

logger = logging.getLogger(__name__)

BACKEND: Final = "inline"
"""Name of this backend in ``run.json``."""

Timer = Callable[[], float]
"""A monotonic clock in seconds (``time.perf_counter`` in production)."""


@dataclass(frozen=True, slots=True)
class InlineRun:
    """A finished inline run."""

    run_id: str
    """The run id."""
    run_dir: Path
    """The completed run folder."""
    grade: Grade
    """The grade (also in ``result.json``)."""
    summary: RunSummary
    """What ``summary.json`` says (status, reward, error ...)."""

    @property
    def error(self) -> str | None:
        """What went wrong, or None when the run ended normally."""
        return self.summary.error


def srez_version() -> str:
    """Version of the installed ``srez`` distribution (``0+unknown`` when not installed)."""
    try:
        return metadata.version("srez")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def run_inline(
    task: Task,
    agent_spec: str,
    run_seed: int,
    results_root: Path,
    *,
    clock: Clock = system_clock,
    timer: Timer = time.perf_counter,
    random_bytes: RandomBytes = os.urandom,
) -> InlineRun:
    """Run one episode of ``task`` with the agent ``agent_spec`` and write its run folder.

    Args:
        task: The task.
        agent_spec: ``scripted``, ``heuristic``, ``random`` or ``replay:PATH``.
        run_seed: Seed of the run.
        results_root: Root of the results layout (``./results`` on the command line).
        clock: Wall clock, for the run id and the timestamps.
        timer: Monotonic clock, for durations.
        random_bytes: Randomness of the run id.

    Returns:
        The run, with its grade and its final folder.

    Raises:
        srez_env.errors.EnvError: If the agent cannot be made (unknown agent, malformed replay
            file); nothing is written then.
        srez_client.errors.ResultsError: If the run folder cannot be created.
    """
    start = timer()
    agent = make_agent(agent_spec, task, run_seed)
    if agent.name == "llm":
        msg = f"the inline backend runs the baselines only: run {agent_spec!r} with --backend local or docker"
        raise AgentSpecError(msg)
    model = "none"  # the baselines have no model; LLM agents arrive with the daemon's agent runner
    env = SREEnv(task, run_seed=run_seed, agent=agent.name, model=model)
    prompt = env.reset()
    started = clock()
    run_id = new_run_id(started, random_bytes)
    folder = RunFolder.create(run_path(results_root, task.id, model, agent.name, run_id))
    try:
        manifest = RunManifest(
            run_id=run_id,
            task_id=task.id,
            agent=agent.name,
            agent_spec=agent_spec,
            model=model,
            backend=BACKEND,
            run_seed=run_seed,
            srez_version=srez_version(),
            started_at=utc_timestamp(started),
        ).model_copy(update=task.provenance())
        folder.write_json("run.json", manifest)
        with folder.open_dialog(clock=clock) as dialog:
            dialog.append(
                lambda seq, ts: SessionStarted(
                    seq=seq, ts=ts, agent=agent.name, model=model, task_id=task.id, run_id=run_id
                )
            )
            text = prompt.get("text")
            dialog.append(lambda seq, ts: TaskPrompt(seq=seq, ts=ts, text=str(text)))
            turns, error = _play(env, agent, prompt, dialog, timer, task.max_steps)
            duration = round(timer() - start, 6)
            end = SessionFailed if error else SessionCompleted
            dialog.append(
                lambda seq, ts: end(seq=seq, ts=ts, turns=turns, duration_s=duration, error=error)
            )
        grade = grade_episode(env.record())
        grade_json = grade.to_json()
        folder.write_bytes("result.json", grade_json)
        folder.write_bytes("final.patch", grade.diff.encode())
        folder.write_bytes("reference.patch", grade.reference_patch.encode())
        transcript = "".join(f"{line}\n" for line in env.transcript)
        folder.write_bytes(Path("archive") / "transcript.jsonl", transcript.encode())
        view = GradeView.model_validate_json(grade_json)
        summary = RunSummary(
            run_id=run_id,
            task_id=task.id,
            agent=agent.name,
            model=model,
            status="error" if error else "ok",
            reward=view.reward.total,
            resolved=view.resolved,
            passed=view.passed,
            steps=view.steps,
            end_reason=view.metrics.end_reason,
            duration_s=round(timer() - start, 6),
            finished_at=utc_timestamp(clock()),
            error=error,
        )
        folder.write_json("summary.json", summary)
        run_dir = folder.complete()
        logger.info("run %s: %s on %s, reward %.3f", run_id, agent.name, task.id, view.reward.total)
        return InlineRun(run_id=run_id, run_dir=run_dir, grade=grade, summary=summary)
    except ResultsError:  # the final folder appeared meanwhile: the partial one is kept, and said
        raise
    except BaseException:  # Ctrl-C included: no half-written run folder is left behind
        folder.discard()
        raise


def _play(
    env: SREEnv,
    agent: Agent,
    prompt: Mapping[str, object],
    dialog: DialogWriter,
    timer: Timer,
    max_steps: int,
) -> tuple[int, str | None]:
    """Drive the agent until the episode ends; returns (turns, error or None)."""
    observation = prompt
    turns = 0
    while not env.done:
        try:
            action = agent.act(dict(observation))
        except Exception as e:  # the agent is untrusted code: any failure ends its phase
            logger.info("agent %s failed: %s", agent.name, e)
            logger.debug("traceback of the agent's failure", exc_info=True)
            env.force_submit("agent_exit")
            return turns, one_line(f"agent {agent.name} raised {type(e).__name__}: {e}")
        turns += 1
        observation = _execute(env, action, dialog, timer, f"call-{turns}")
        if turns > max_steps and not env.done:  # the env ends at its budget; never loop forever
            env.force_submit("step_budget")
    return turns, None


def _execute(
    env: SREEnv,
    action: Mapping[str, object] | str,
    dialog: DialogWriter,
    timer: Timer,
    call_id: str,
) -> Mapping[str, object]:
    """Record the call, execute it on the simulator, record the result; returns the observation."""
    name, args = describe_action(action)
    dialog.append(lambda seq, ts: ToolCall(seq=seq, ts=ts, call_id=call_id, name=name, args=args))
    began = timer()
    result = env.step(action)
    duration_ms = round(max(0.0, timer() - began) * 1000, 3)
    observation = result.observation
    dialog.append(
        lambda seq, ts: ToolResult(
            seq=seq,
            ts=ts,
            call_id=call_id,
            status="success" if observation.get("ok") else "error",
            result=observation_text(observation),
            duration_ms=duration_ms,
            step=_int(observation, "step"),
            steps_left=_int(observation, "steps_left"),
        )
    )
    return observation


def describe_action(action: object) -> tuple[str, dict[str, JsonValue]]:
    """The tool name and arguments of an action, for the ``tool_call`` entry.

    An action is ``{"tool": str, "args": {...}}`` or a raw JSON string (text adapters); whatever
    the agent sent is recorded, made JSON-safe, even when the environment will reject it.
    """
    if isinstance(action, str | bytes):
        raw = action if isinstance(action, str) else action.decode("utf-8", "replace")
        try:
            action = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return "", {"raw": raw[:2000]}
    if not isinstance(action, dict):
        return "", {"raw": repr(action)[:2000]}
    tool = action.get("tool")
    args = action.get("args", {})
    safe = orjson.loads(orjson.dumps(args, default=repr))
    return (
        tool if isinstance(tool, str) else "",
        safe if isinstance(safe, dict) else {"args": safe},
    )


def observation_text(observation: Mapping[str, object]) -> str:
    """What the agent saw: the output of a successful call, or the error object as JSON."""
    if observation.get("ok"):
        output = observation.get("output")
        return output if isinstance(output, str) else ""
    error = observation.get("error")
    return orjson.dumps(error, default=repr, option=orjson.OPT_SORT_KEYS).decode()


def one_line(text: str, limit: int = 500) -> str:
    """Collapse a message to one line of at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _int(observation: Mapping[str, object], key: str) -> int:
    value = observation.get(key)
    return value if isinstance(value, int) and value >= 0 else 0
