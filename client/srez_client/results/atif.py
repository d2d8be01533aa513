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

from srez_daemon.protocol.dialog import (
    Assistant,
    DialogEntry,
    ErrorEntry,
    ProviderError,
    SessionCompleted,
    SessionFailed,
    SessionTimedOut,
    TaskPrompt,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
)

ATIF_VERSION: Final = "ATIF-v1.4"


def to_atif(
    entries: Iterable[DialogEntry],
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
    steps: list[dict[str, Any]] = []
    open_step: dict[str, Any] | None = None
    by_call: dict[str, dict[str, Any]] = {}
    final: dict[str, Any] = {}
    end: dict[str, Any] = {}
    skipped = 0

    def new_step(source: str, entry: DialogEntry, message: str = "") -> dict[str, Any]:
        step: dict[str, Any] = {
            "step_id": len(steps) + 1,
            "timestamp": entry.ts,
            "source": source,
            "message": message,
        }
        steps.append(step)
        return step

    for entry in entries:
        if isinstance(entry, TaskPrompt):
            new_step("user", entry, entry.text)
            open_step = None
        elif isinstance(entry, Thinking | Assistant):
            if open_step is None or "tool_calls" in open_step:
                open_step = new_step("agent", entry)
            if isinstance(entry, Thinking):
                open_step["reasoning_content"] = entry.text
            else:
                open_step["message"] = entry.text
                if entry.tokens is not None:
                    open_step["metrics"] = {
                        "prompt_tokens": entry.tokens.input,
                        "completion_tokens": entry.tokens.output,
                    }
        elif isinstance(entry, ToolCall):
            if open_step is None or any(
                c["tool_call_id"] in by_call and "observation" in by_call[c["tool_call_id"]]
                for c in open_step.get("tool_calls", [])
            ):
                open_step = new_step("agent", entry)
            open_step.setdefault("tool_calls", []).append(
                {
                    "tool_call_id": entry.call_id,
                    "function_name": entry.name,
                    "arguments": entry.args,
                }
            )
            by_call[entry.call_id] = open_step
        elif isinstance(entry, ToolResult):
            step = by_call.get(entry.call_id)
            if step is None:
                skipped += 1
                continue
            step.setdefault("observation", {"results": []})["results"].append(
                {"source_call_id": entry.call_id, "content": entry.result}
            )
            step.setdefault("extra", {})[entry.call_id] = {
                "status": entry.status,
                "step": entry.step,
                "steps_left": entry.steps_left,
                "duration_ms": entry.duration_ms,
            }
            open_step = None
        elif isinstance(entry, ProviderError):
            wait = "no retry" if entry.retry_in_s is None else f"retry in {entry.retry_in_s:g} s"
            kind = "cooldown" if entry.cooldown else entry.kind
            step = new_step("system", entry, f"provider error ({kind}, {wait}): {entry.message}")
            step["extra"] = entry.model_dump(mode="json", exclude={"seq", "ts", "type"})
        elif isinstance(entry, Usage):
            final = {
                "total_prompt_tokens": entry.tokens.input,
                "total_completion_tokens": entry.tokens.output,
            }
            if entry.cost_usd is not None:
                final["total_cost_usd"] = entry.cost_usd
        elif isinstance(entry, SessionCompleted | SessionFailed | SessionTimedOut):
            end = entry.model_dump(mode="json", exclude={"seq", "ts"})
        elif isinstance(entry, ErrorEntry):
            skipped += 1
    final["total_steps"] = len(steps)
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
        "steps": steps,
        "final_metrics": final,
        "extra": {"task_id": run.get("task_id"), "session_end": end or None, "summary": summary},
    }
    if skipped:
        trajectory["notes"] = (
            f"{skipped} dialog line(s) could not be read or paired and were skipped"
        )
    return trajectory
