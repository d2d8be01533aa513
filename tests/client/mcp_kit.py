"""Helpers for the MCP tests: trajectories, an inline reference run, and the tool record."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from client_helpers import expert_actions

from srez_client.backends.inline.host import run_inline
from srez_daemon.protocol import iter_dialog
from srez_daemon.protocol.dialog import ToolCall, ToolResult
from srez_env.tasks import load_tasks

SREZ = Path(sys.executable).parent / "srez"
TASK = "sre-007"
Action = dict[str, Any]


def expert(task_id: str = TASK) -> list[Action]:
    """The scripted expert's trajectory (evidence, declaration, reference fix, submit)."""
    return expert_actions(load_tasks([task_id])[0])


def wrong(task_id: str = TASK) -> list[Action]:
    """A wrong answer, with mistakes on the way: a bad argument, an unknown tool, the evidence,
    a wrong declaration, no fix, and a submit."""
    evidence = [a for a in expert(task_id) if a["tool"] not in ("declare_root_cause", "submit")]
    return [
        {"tool": "get_logs", "args": {"service": "nowhere", "limit": 0}},
        {"tool": "restart_everything", "args": {}},
        *evidence[:2],
        {"tool": "declare_root_cause", "args": {"service": "cache", "fault": "memory_leak"}},
        {"tool": "submit", "args": {"summary": "a guess"}},
    ]


def inline_reference(root: Path, actions: list[Action], task_id: str = TASK) -> Path:
    """The run folder of an inline ``srez eval`` of ``actions`` (a replay agent)."""
    root.mkdir(parents=True, exist_ok=True)
    replay = root / "actions.jsonl"
    replay.write_text("".join(json.dumps(a) + "\n" for a in actions))
    return run_inline(load_tasks([task_id])[0], f"replay:{replay}", 0, root / "results").run_dir


def tool_record(run_dir: Path) -> list[tuple[Any, ...]]:
    """The dialog's tool calls and results, without ids, sequence numbers and times."""
    record: list[tuple[Any, ...]] = []
    for entry in iter_dialog((run_dir / "archive" / "dialog.jsonl").read_bytes()):
        if isinstance(entry, ToolCall):
            record.append(("call", entry.name, entry.args))
        elif isinstance(entry, ToolResult):
            record.append(("result", entry.status, entry.result, entry.step, entry.steps_left))
    return record


def grade_of(run_dir: Path) -> dict[str, Any]:
    """``result.json`` of a finished run."""
    grade = json.loads((run_dir / "result.json").read_text())
    assert isinstance(grade, dict)
    return grade


def server_env() -> dict[str, str]:
    """What the ``srez mcp`` server process is started with (this tree's code)."""
    return {k: os.environ[k] for k in ("PYTHONPATH", "PATH", "HOME") if k in os.environ}
