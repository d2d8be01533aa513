"""The inline backend: a run's files, and nothing lost when the agent fails or overruns."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from srez_client.backends.inline import host as inline
from srez_client.backends.inline.host import run_inline
from srez_daemon.protocol import (
    ErrorEntry,
    SessionCompleted,
    SessionFailed,
    ToolCall,
    ToolResult,
    iter_dialog,
)
from srez_daemon.protocol.agent import RAW_REPLY_TOOL, tool_call
from srez_daemon.record.episode import observation_text
from srez_env.baselines.policy import Observation, Policy, PolicyAgent, call
from srez_env.task import Task
from srez_env.tasks import load_tasks

T0 = datetime(2025, 3, 14, 10, 0, tzinfo=UTC)


class FakeClock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=250)
        return self.now


class CrashingAgent(PolicyAgent):
    """Reads the alerts twice, then raises (its model went away)."""

    name = "crashy"

    def policy(self, prompt: Observation) -> Policy:
        yield call("get_alerts")
        yield call("get_alerts")
        msg = "model went away"
        raise RuntimeError(msg)


class StubbornAgent:
    """Never submits, and sends a bad call every other step."""

    name = "stubborn"

    def __init__(self) -> None:
        self.calls = 0

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        self.calls += 1
        if self.calls % 2:
            return {"tool": "get_metrics", "args": {"service": "db", "metric": "nope"}}
        return {"tool": "list_services", "args": {}}


@pytest.fixture
def task() -> Task:
    (found,) = load_tasks(["sre-007"])
    return found


def use_agent(monkeypatch: pytest.MonkeyPatch, agent: object) -> None:
    monkeypatch.setattr(inline, "make_agent", lambda spec, task, run_seed: agent)


def read_dialog(run_dir: Path) -> list[Any]:
    entries = list(iter_dialog((run_dir / "archive" / "dialog.jsonl").read_bytes()))
    assert not [e for e in entries if isinstance(e, ErrorEntry)]
    return entries


def test_run_inline_uses_the_injected_clock_and_randomness(task: Task, tmp_path: Path) -> None:
    run = run_inline(
        task, "scripted", 0, tmp_path, clock=FakeClock(), random_bytes=lambda n: b"\x01" * n
    )
    assert run.run_id == "20250314T100000Z-01010101"
    assert run.run_dir == tmp_path / "sre-007" / "none" / "scripted" / run.run_id
    assert run.error is None
    assert run.grade.reward.total == 1.0
    entries = read_dialog(run.run_dir)
    assert entries[0].ts == "2025-03-14T10:00:00.500Z"
    assert [e.ts for e in entries] == sorted(e.ts for e in entries)


def test_agent_crash_is_graded_and_recorded(
    task: Task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_agent(monkeypatch, CrashingAgent())
    run = run_inline(task, "crashy", 0, tmp_path)
    assert run.summary.status == "error"
    assert run.error is not None
    assert "RuntimeError: model went away" in run.error
    assert run.grade.metrics.end_reason == "agent_exit"
    assert run.grade.steps == 2
    summary = json.loads((run.run_dir / "summary.json").read_text())
    assert summary["status"] == "error"
    assert summary["end_reason"] == "agent_exit"
    assert "model went away" in summary["error"]
    assert (run.run_dir / "result.json").is_file()
    entries = read_dialog(run.run_dir)
    end = entries[-1]
    assert isinstance(end, SessionFailed)
    assert end.turns == 2
    assert end.error == run.error
    assert [e.type for e in entries[2:-1]] == ["tool_call", "tool_result"] * 2


def test_agent_past_the_budget_is_stopped_by_the_env(
    task: Task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = StubbornAgent()
    use_agent(monkeypatch, agent)
    run = run_inline(task, "stubborn", 0, tmp_path)
    assert agent.calls == task.max_steps
    assert run.summary.status == "ok"
    assert run.grade.metrics.end_reason == "step_budget"
    assert run.grade.metrics.invalid_actions == task.max_steps // 2
    entries = read_dialog(run.run_dir)
    assert isinstance(entries[-1], SessionCompleted)
    results = [e for e in entries if isinstance(e, ToolResult)]
    assert len(results) == task.max_steps
    assert [r.status for r in results[:2]] == ["error", "success"]
    assert results[0].result.startswith("error UNKNOWN_METRIC: ")
    assert results[-1].steps_left == 0
    calls = [e for e in entries if isinstance(e, ToolCall)]
    assert calls[0].args == {"service": "db", "metric": "nope"}


def test_an_action_is_called_as_the_agent_process_posts_it() -> None:
    assert tool_call({"tool": "get_logs", "args": {"service": "db"}}) == (
        "get_logs",
        {"service": "db"},
    )
    assert tool_call("not json") == (RAW_REPLY_TOOL, {"text": "not json"})
    assert tool_call({"tool": "get_alerts", "args": ["x"]}) == ("get_alerts", {})
    assert tool_call({"args": {}}) == (RAW_REPLY_TOOL, {"text": "{'args': {}}"})
    assert tool_call({"tool": "a/b"})[0] == RAW_REPLY_TOOL


def test_a_raw_reply_and_a_bad_submit_are_recorded_like_the_daemon_records_them(
    task: Task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Chatty:
        name = "chatty"
        replies = iter(["I think the database is down", {"tool": "submit", "args": {"x": 1}}])

        def act(self, observation: Mapping[str, Any]) -> dict[str, Any] | str:
            return next(self.replies)

    use_agent(monkeypatch, Chatty())
    run = run_inline(task, "chatty", 0, tmp_path)
    entries = read_dialog(run.run_dir)
    call, result = entries[2:4]
    assert isinstance(call, ToolCall) and isinstance(result, ToolResult)
    assert (call.name, call.args) == (RAW_REPLY_TOOL, {"text": "I think the database is down"})
    assert result.status == "error" and result.result.startswith("error PARSE_ERROR: ")
    # POST /submit refuses a field it does not know: the agent process fails on the 400
    assert run.summary.error_kind == "agent"
    assert "ValidationError" in (run.error or "")
    assert isinstance(entries[-1], SessionFailed)


def test_observation_text() -> None:
    assert observation_text({"ok": True, "output": "fine"}) == "fine"
    error = {"code": "BAD_ARGS", "message": "m", "hint": "h"}
    assert observation_text({"ok": False, "error": error}) == "error BAD_ARGS: m (hint: h)"
    assert observation_text({"ok": False, "error": {"code": "X", "message": "m"}}) == "error X: m"


def test_an_inline_run_flushes_its_folder_once_not_each_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No fsync per dialog entry or file: the partial folder is flushed whole once, before its
    rename, then the parent folder (the rename) once."""
    import os

    from srez_client import layout
    from srez_core import atomic

    fsyncs: list[int] = []
    trees: list[Path] = []
    real_fsync, real_tree = os.fsync, layout.fsync_tree
    monkeypatch.setattr(os, "fsync", lambda fd: fsyncs.append(fd) or real_fsync(fd))
    monkeypatch.setattr(layout, "fsync_tree", lambda root: trees.append(root) or real_tree(root))
    monkeypatch.setattr(atomic, "_syncfs", lambda _root: True)  # a flush of the whole folder
    (task,) = load_tasks(["sre-007"])
    run = run_inline(task, "scripted", 0, tmp_path)
    assert [t.name for t in trees] == [f".{run.run_id}.partial"]
    assert len(fsyncs) == 1  # the parent, after the rename
    entries = (run.run_dir / "archive" / "dialog.jsonl").read_text().splitlines()
    assert len(entries) > 10


def test_fsync_tree_flushes_each_file_and_folder_without_syncfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from srez_core import atomic

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    (tmp_path / "g").write_text("y")
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: fsyncs.append(fd) or real_fsync(fd))
    monkeypatch.setattr(atomic, "_syncfs", lambda _root: False)
    atomic.fsync_tree(tmp_path)
    assert len(fsyncs) == 2 + 3  # two files, two folders and the root
