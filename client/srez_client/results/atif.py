"""A run's dialog as an ATIF trajectory (Agent Trajectory Interchange Format, v1.4).

ATIF is the JSON trajectory format of Harbor / Terminal-Bench: a root object with
``schema_version``, ``session_id``, ``agent`` (name, version, model_name), ``steps`` and
``final_metrics``. Each step has a ``step_id`` (from 1), a ``source`` (``system``, ``user`` or
``agent``) and a ``message``; an agent step may carry ``reasoning_content``, ``tool_calls``
(``tool_call_id``, ``function_name``, ``arguments``), an ``observation`` (``results`` with
``source_call_id`` and ``content``) and ``metrics`` (``prompt_tokens``, ``completion_tokens``).

How the dialog maps (DESIGN.md §6):

* ``task_prompt`` is the ``user`` step;
* ``thinking`` and ``assistant`` open an ``agent`` step (or fill the one already open, if it has
  no tool call yet); the ``tool_call`` entries that follow join it, and their ``tool_result`` is
  its observation; a ``tool_call`` with no open step gets an agent step of its own (baselines
  write no assistant text);
* ``provider_error`` is a ``system`` step (the harness waited on the provider; the agent did not
  act);
* ``usage`` gives ``final_metrics`` (the last running totals); the session end entry and
  ``summary.json`` go to the root ``extra``; reader-made ``error`` entries (unparseable lines)
  are counted in ``notes`` and otherwise skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from srez_client.dialog_entries import EntryVisitor, SessionEnd
from srez_daemon.protocol import dialog

ATIF_VERSION: Final = "ATIF-v1.4"


Step = dict[str, Any]
"""One ATIF step, as JSON."""


class _TrajectorySteps(EntryVisitor[None]):
    """The steps, built entry by entry (the mapping is in the module docstring)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.open_step: Step | None = None
        """The agent step the next thinking, assistant text or tool call may join."""
        self.by_call: dict[str, Step] = {}
        self.final: dict[str, Any] = {}
        self.end: dict[str, Any] = {}
        self.skipped = 0
        """Entries that could not be read or paired."""

    def _new_step(self, source: str, entry: dialog.DialogEntry, message: str = "") -> Step:
        step: Step = {
            "step_id": len(self.steps) + 1,
            "timestamp": entry.ts,
            "source": source,
            "message": message,
        }
        self.steps.append(step)
        return step

    def _agent_step(self, entry: dialog.Thinking | dialog.Assistant) -> Step:
        """The open agent step, or a new one when the open one already called a tool."""
        if self.open_step is None or "tool_calls" in self.open_step:
            self.open_step = self._new_step("agent", entry)
        return self.open_step

    def _answered(self, call: dict[str, Any]) -> bool:
        step = self.by_call.get(call["tool_call_id"])
        return step is not None and "observation" in step

    def session_started(self, entry: dialog.SessionStarted) -> None:
        return  # the root's session_id and agent come from run.json

    def task_prompt(self, entry: dialog.TaskPrompt) -> None:
        self._new_step("user", entry, entry.text)
        self.open_step = None

    def thinking(self, entry: dialog.Thinking) -> None:
        self._agent_step(entry)["reasoning_content"] = entry.text

    def assistant(self, entry: dialog.Assistant) -> None:
        step = self._agent_step(entry)
        step["message"] = entry.text
        if entry.tokens is not None:
            step["metrics"] = {
                "prompt_tokens": entry.tokens.input,
                "completion_tokens": entry.tokens.output,
            }

    def tool_call(self, entry: dialog.ToolCall) -> None:
        step = self.open_step
        if step is None or any(self._answered(c) for c in step.get("tool_calls", [])):
            step = self.open_step = self._new_step("agent", entry)
        call = {"tool_call_id": entry.call_id, "function_name": entry.name, "arguments": entry.args}
        step.setdefault("tool_calls", []).append(call)
        self.by_call[entry.call_id] = step

    def tool_result(self, entry: dialog.ToolResult) -> None:
        step = self.by_call.get(entry.call_id)
        if step is None:
            self.skipped += 1
            return
        step.setdefault("observation", {"results": []})["results"].append(
            {"source_call_id": entry.call_id, "content": entry.result}
        )
        step.setdefault("extra", {})[entry.call_id] = {
            "status": entry.status,
            "step": entry.step,
            "steps_left": entry.steps_left,
            "duration_ms": entry.duration_ms,
        }
        self.open_step = None

    def provider_error(self, entry: dialog.ProviderError) -> None:
        wait = "no retry" if entry.retry_in_s is None else f"retry in {entry.retry_in_s:g} s"
        kind = "cooldown" if entry.cooldown else entry.kind
        step = self._new_step("system", entry, f"provider error ({kind}, {wait}): {entry.message}")
        step["extra"] = entry.model_dump(mode="json", exclude={"seq", "ts", "type"})

    def usage(self, entry: dialog.Usage) -> None:
        self.final = {
            "total_prompt_tokens": entry.tokens.input,
            "total_completion_tokens": entry.tokens.output,
        }
        if entry.cost_usd is not None:
            self.final["total_cost_usd"] = entry.cost_usd

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
        run: ``run.json`` (run id, agent, model, srez version, task id).
        summary: ``summary.json``, when the run has one.

    Returns:
        The ATIF root object, ready for ``json.dumps``.
    """
    built = _TrajectorySteps()
    for entry in entries:
        built.visit(entry)
    final = {**built.final, "total_steps": len(built.steps)}
    model = str(run.get("model", "none"))
    agent: dict[str, Any] = {
        "name": str(run.get("agent", "")),
        "version": str(run.get("srez_version", "")),
    }
    if model != "none":
        agent["model_name"] = model
    trajectory: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "session_id": str(run.get("run_id", "")),
        "agent": agent,
        "steps": built.steps,
        "final_metrics": final,
        "extra": {
            "task_id": run.get("task_id"),
            "session_end": built.end or None,
            "summary": summary,
        },
    }
    if built.skipped:
        trajectory["notes"] = (
            f"{built.skipped} dialog line(s) could not be read or paired and were skipped"
        )
    return trajectory
