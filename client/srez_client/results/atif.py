"""A run's dialog as an ATIF trajectory (Agent Trajectory Interchange Format, v1.8).

ATIF is the JSON trajectory format of Harbor / Terminal-Bench. The root has ``schema_version``
(``ATIF-v1.8``), ``session_id`` and ``trajectory_id`` (both the run id), ``agent`` (name, version,
model_name, ``tool_definitions``: the tools in OpenAI function form, as the agent was offered
them, and ``extra.agent_spec``), ``steps``, ``final_metrics``, ``notes`` and ``extra``. Each step has a ``step_id``
(from 1), a ``source`` (``system``, ``user`` or ``agent``), a ``message`` and ``llm_call_count``;
an agent step may carry ``reasoning_content``, ``tool_calls`` (``tool_call_id``,
``function_name``, ``arguments``), an ``observation`` (``results`` with ``source_call_id``,
``content`` and ``extra``) and ``metrics`` (``prompt_tokens``, ``completion_tokens``,
``cost_usd``). Of what came after v1.4 (which this export wrote before) it uses
``agent.tool_definitions`` and v1.7's ``llm_call_count``, ``trajectory_id`` and result ``extra``;
content parts (images, and v1.8's audio), subagent trajectories and copied context have no
counterpart in a run.

How the dialog maps (docs/design.md §6):

* ``task_prompt`` is the ``user`` step;
* ``thinking`` and ``assistant`` are one model reply: they open an ``agent`` step, or fill the one
  already open if it has no tool call and no text of that kind yet; the ``tool_call`` that follows
  joins it (or gets an agent step of its own when none is open: baselines write no reply), and its
  ``tool_result`` is the step's observation (``extra``: status, step, steps_left, duration_ms).
  So an agent step holds at most one reply and at most one tool call. The function name is the
  one the agent sent (an unknown tool, or ``_reply`` for a reply that did not parse as a call);
  the environment rejected those, and they used a step like any call;
* ``llm_call_count`` is 1 on an agent step that holds a model reply (a ``thinking`` entry, or an
  ``assistant`` entry with ``tokens``: how ``srez-agent`` records each completion), else 0: the
  baselines' steps, and a note written without a model call (the LLM agent's cost-cap submit) are
  deterministic dispatch, with no ``metrics`` and no ``reasoning_content``. ``user`` and ``system``
  steps are 0. ``metrics.cost_usd`` is the rise of the running cost in the ``usage`` that follows
  the reply, when both figures are known;
* ``provider_error`` is a ``system`` step (the harness waited on the provider; no inference came of
  the failed attempt, so it counts no LLM call);
* ``usage`` gives ``final_metrics`` (the last running totals); the session end entry and
  ``summary.json`` go to the root ``extra``; reader-made ``error`` entries (unparseable lines)
  are counted in ``notes`` and otherwise skipped.

**Step counts.** ``final_metrics.total_steps`` is ``len(steps)``, as ATIF defines it. It agrees
with ``summary.json`` by this identity, checked in the tests on baseline, replay and LLM runs::

    total_steps = episode_steps + user steps (the task prompt) + system steps (provider errors)
                  + agent steps without an answered tool call

``episode_steps`` (also written as ``final_metrics.extra.episode_steps``) is the number of agent
steps whose tool call has its result, which is the number of steps the episode counted: every call
uses one (invalid ones included) and each answered call is its own agent step, so it equals the
last result's ``step`` and ``summary.json``'s ``steps``. Only a torn or damaged dialog can make
them differ, and ``notes`` then says so. ``final_metrics.extra.llm_calls`` is the sum of
``llm_call_count``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from srez_client.dialog_entries import EntryVisitor, SessionEnd
from srez_daemon.protocol import dialog
from srez_env.actions import openai_tools

ATIF_VERSION: Final = "ATIF-v1.8"


Step = dict[str, Any]
"""One ATIF step, as JSON."""


class _TrajectorySteps(EntryVisitor[None]):
    """The steps, built entry by entry (the mapping is in the module docstring)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.open_step: Step | None = None
        """The agent step the next thinking, assistant text or tool call may join."""
        self.replied: set[int] = set()
        """Step ids of the agent steps that already hold an ``assistant`` text."""
        self.by_call: dict[str, Step] = {}
        self.final: dict[str, Any] = {}
        self.cost: float | None = 0.0
        """The running cost of the last ``usage``, None once unknown."""
        self.end: dict[str, Any] = {}
        self.answered = 0
        """Tool calls with their result: the episode's steps."""
        self.skipped = 0
        """Entries that could not be read or paired."""

    def _new_step(self, source: str, entry: dialog.DialogEntry, message: str = "") -> Step:
        step: Step = {
            "step_id": len(self.steps) + 1,
            "timestamp": entry.ts,
            "source": source,
            "message": message,
            "llm_call_count": 0,
        }
        self.steps.append(step)
        return step

    def _reply_step(self, entry: dialog.Thinking | dialog.Assistant) -> Step:
        """The agent step a reply's thinking or text goes in: the open one while it has no tool
        call and none of that part yet (thinking comes before its text), else a new one."""
        step = self.open_step
        if (
            step is None
            or "tool_calls" in step
            or step["step_id"] in self.replied
            or (isinstance(entry, dialog.Thinking) and "reasoning_content" in step)
        ):
            step = self._new_step("agent", entry)
        self.open_step = step
        return step

    def session_started(self, entry: dialog.SessionStarted) -> None:
        return  # the root's session_id and agent come from run.json

    def task_prompt(self, entry: dialog.TaskPrompt) -> None:
        self._new_step("user", entry, entry.text)
        self.open_step = None

    def thinking(self, entry: dialog.Thinking) -> None:
        step = self._reply_step(entry)
        step["reasoning_content"] = entry.text
        step["llm_call_count"] = 1

    def assistant(self, entry: dialog.Assistant) -> None:
        step = self._reply_step(entry)
        step["message"] = entry.text
        self.replied.add(step["step_id"])
        if entry.tokens is not None:
            step["metrics"] = {
                "prompt_tokens": entry.tokens.input,
                "completion_tokens": entry.tokens.output,
            }
            step["llm_call_count"] = 1

    def tool_call(self, entry: dialog.ToolCall) -> None:
        step = self.open_step
        if step is None or "tool_calls" in step:
            step = self.open_step = self._new_step("agent", entry)
        call = {"tool_call_id": entry.call_id, "function_name": entry.name, "arguments": entry.args}
        step["tool_calls"] = [call]
        self.by_call[entry.call_id] = step

    def tool_result(self, entry: dialog.ToolResult) -> None:
        step = self.by_call.pop(entry.call_id, None)
        if step is None:
            self.skipped += 1
            return
        outcome = {
            "status": entry.status,
            "step": entry.step,
            "steps_left": entry.steps_left,
            "duration_ms": entry.duration_ms,
        }
        result = {"source_call_id": entry.call_id, "content": entry.result, "extra": outcome}
        step["observation"] = {"results": [result]}
        self.answered += 1
        if step is self.open_step:
            self.open_step = None

    def provider_error(self, entry: dialog.ProviderError) -> None:
        wait = "no retry" if entry.retry_in_s is None else f"retry in {entry.retry_in_s:g} s"
        kind = "cooldown" if entry.cooldown else entry.kind
        step = self._new_step("system", entry, f"provider error ({kind}, {wait}): {entry.message}")
        step["extra"] = entry.model_dump(mode="json", exclude={"seq", "ts", "type"})
        self.open_step = None

    def usage(self, entry: dialog.Usage) -> None:
        self.final = {
            "total_prompt_tokens": entry.tokens.input,
            "total_completion_tokens": entry.tokens.output,
        }
        if entry.cost_usd is not None:
            self.final["total_cost_usd"] = entry.cost_usd
        metrics = self.open_step.get("metrics") if self.open_step is not None else None
        rise = _rise(self.cost, entry.cost_usd)
        if metrics is not None and "cost_usd" not in metrics and rise is not None:
            metrics["cost_usd"] = rise  # the reply's share of the spend
        self.cost = entry.cost_usd

    def notes_dropped(self, entry: dialog.NotesDropped) -> None:
        return  # the tool record goes on; the missing notes simply leave no steps

    def session_ended(self, entry: SessionEnd) -> None:
        self.end = entry.model_dump(mode="json", exclude={"seq", "ts"})

    def unreadable(self, entry: dialog.ErrorEntry) -> None:
        self.skipped += 1


def to_atif(
    entries: Iterable[dialog.DialogEntry],
    *,
    run: Mapping[str, Any],
    summary: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The trajectory of one run.

    Args:
        entries: The run's dialog entries, in file order (the tolerant parser's output).
        run: ``run.json`` (run id, agent, agent spec, model, srez version, task id).
        summary: ``summary.json``, when the run has one.

    Returns:
        The ATIF root object, ready for ``json.dumps``.
    """
    built = _TrajectorySteps()
    for entry in entries:
        built.visit(entry)
    final = {
        **built.final,
        "total_steps": len(built.steps),
        "extra": {
            "episode_steps": built.answered,
            "llm_calls": sum(step["llm_call_count"] for step in built.steps),
        },
    }
    run_id = str(run.get("run_id", ""))
    trajectory: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "session_id": run_id,
        "trajectory_id": run_id,
        "agent": _agent(run),
        "steps": built.steps,
        "final_metrics": final,
        "extra": {
            "task_id": run.get("task_id"),
            "session_end": built.end or None,
            "summary": summary,
        },
    }
    if notes := _notes(built, summary):
        trajectory["notes"] = notes
    return trajectory


def _rise(before: float | None, after: float | None) -> float | None:
    """How much a running cost rose, when both figures are known."""
    if before is None or after is None:
        return None
    return round(max(0.0, after - before), 9)


def _agent(run: Mapping[str, Any]) -> dict[str, Any]:
    """The root's ``agent``: who played, with the tools it was offered."""
    agent: dict[str, Any] = {
        "name": str(run.get("agent", "")),
        "version": str(run.get("srez_version", "")),
    }
    model = str(run.get("model", "none"))
    if model != "none":
        agent["model_name"] = model
    agent["tool_definitions"] = openai_tools()
    if spec := run.get("agent_spec"):
        agent["extra"] = {"agent_spec": str(spec)}
    return agent


def _notes(built: _TrajectorySteps, summary: Mapping[str, Any] | None) -> str:
    """What a reader should know of the gaps: lines skipped, a step count the dialog lacks."""
    notes = []
    if built.skipped:
        notes.append(f"{built.skipped} dialog line(s) could not be read or paired and were skipped")
    counted = summary.get("steps") if summary is not None else None
    if isinstance(counted, int) and counted != built.answered:
        notes.append(
            f"summary.json counts {counted} episode step(s) but the dialog answers "
            f"{built.answered} tool call(s)"
        )
    return "; ".join(notes)
