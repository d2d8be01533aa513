"""The LLM agent end to end: ``srez-daemon --task ... --agent llm --out DIR`` (headless) with
``srez-agent`` calling the scripted fake OpenAI server directly over real HTTP with its thin
client (a headless daemon has no launcher, so no model relay)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from daemonkit import run_headless

from fakes.expert import expert_replies as scripted_replies
from fakes.openai_server import FakeOpenAI, Scripted, error, text, tool_call

TASK = "sre-025"


def expert_replies(task_id: str = TASK) -> list[Scripted]:
    """The scripted expert's actions for a task, as tool-call replies."""
    return scripted_replies(task_id, usage=(200, 10))


class Headless:
    """``srez-daemon --task TASK --agent ... --out DIR`` with the model at the fake OpenAI server."""

    def __init__(self, tmp_path: Path, server: FakeOpenAI) -> None:
        self.tmp_path = tmp_path
        self.server = server

    def run(self, agent: str = "llm", **settings: str) -> Path:
        """The run folder copied to ``--out``, once the run completed (exit 0: it was graded,
        whatever its score); ``settings`` are added to the daemon's environment."""
        out = self.tmp_path / "out"
        argv = ("--task", TASK, "--agent", agent, "--out", str(out))
        done = run_headless(
            self.tmp_path,
            *argv,
            SREZ_MODEL="openai/fake",
            SREZ_LLM_API_BASE=self.server.base_url,
            SREZ_LLM_BACKOFF_S="0.01",
            SREZ_LLM_BACKOFF_MAX_S="0.05",
            OPENAI_API_KEY="sk-fake",
            NOT_FORWARDED_SECRET="s3cret",
            **settings,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return out


@pytest.fixture
def headless(tmp_path: Path, fake_openai: FakeOpenAI) -> Headless:
    return Headless(tmp_path, fake_openai)


def dialog(out: Path) -> list[dict[str, Any]]:
    lines = (out / "archive" / "dialog.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def read(out: Path, name: str) -> dict[str, Any]:
    return dict(json.loads((out / name).read_text()))


def test_llm_agent_solves_a_task_through_the_daemon(
    headless: Headless, fake_openai: FakeOpenAI
) -> None:
    expert = expert_replies()
    fake_openai.push(
        error(429, "busy", retry_after=0.2),
        tool_call("get_logs", '{"service": ', reasoning="look at logs"),  # malformed: a step
        *expert,
    )
    out = headless.run()
    result, summary = read(out, "result.json"), read(out, "summary.json")
    assert result["passed"] is True and result["error_kind"] is None
    assert summary["status"] == "ok" and summary["error_kind"] is None
    assert summary["tokens"] == {"input": 100 + 200 * len(expert), "output": 20 + 10 * len(expert)}
    assert summary["cost_usd"] is None  # openai/fake has no price: unknown, never a made-up 0
    assert read(out, "run.json")["model"] == "openai/fake"
    entries = dialog(out)
    types = [e["type"] for e in entries]
    assert types[:2] == ["session_started", "task_prompt"] and types[-1] == "session_completed"
    assert {"assistant", "thinking", "tool_call", "tool_result", "usage", "provider_error"} <= set(
        types
    )
    limit = next(e for e in entries if e["type"] == "provider_error")
    assert limit["kind"] == "rate_limit" and limit["retry_in_s"] >= 0.2
    assert next(e for e in entries if e["type"] == "thinking")["text"] == "look at logs"
    assistant = next(e for e in entries if e["type"] == "assistant")
    assert assistant["tokens"] == {"input": 100, "output": 20}
    parse = [e for e in entries if e["type"] == "tool_result" and "PARSE_ERROR" in e["result"]]
    assert len(parse) == 1 and parse[0]["step"] == 1  # the malformed call cost a step
    assert result["steps"] == len(expert) + 1
    usage = [e for e in entries if e["type"] == "usage"]
    assert usage[-1]["tokens"] == summary["tokens"]
    state = read(out, "state.json")
    assert state["cooldown_s"] >= 0.2  # the Retry-After wait was excluded from the time limit
    # the agent saw the model settings and key, nothing else of the daemon's environment
    agent_log = (out / "logs" / "agent.log").read_text()
    assert "s3cret" not in agent_log


def test_json_text_agent_runs_through_the_daemon(
    headless: Headless, fake_openai: FakeOpenAI
) -> None:
    fake_openai.push(
        text("no JSON here"), text('{"tool": "submit", "args": {"summary": "giving up"}}')
    )
    out = headless.run(agent="llm-json")
    assert fake_openai.requests[0].tools is None
    results = [e for e in dialog(out) if e["type"] == "tool_result"]
    assert "PARSE_ERROR" in results[0]["result"] and results[1]["status"] == "success"
    assert read(out, "summary.json")["end_reason"] == "submit"


def test_provider_exhaustion_ends_the_run_with_error_kind_provider(
    headless: Headless, fake_openai: FakeOpenAI
) -> None:
    fake_openai.push(tool_call("get_alerts", {}), error(500), error(500))
    out = headless.run(SREZ_LLM_MAX_ATTEMPTS="2")  # the run completed (graded), unscored
    result, summary = read(out, "result.json"), read(out, "summary.json")
    assert result["error_kind"] == "provider" and summary["error_kind"] == "provider"
    assert summary["status"] == "error" and "model provider failed" in summary["error"]
    errors = [e for e in dialog(out) if e["type"] == "provider_error"]
    assert [e["retry_in_s"] is None for e in errors] == [False, True]
    assert dialog(out)[-1]["type"] == "session_failed"
    assert len(fake_openai.requests) == 3


def test_cooldown_does_not_count_against_the_time_limit(
    headless: Headless, fake_openai: FakeOpenAI
) -> None:
    # start-up (more on a busy machine) plus a 13 s cooldown would pass the 12 s limit if the
    # cooldown counted
    fake_openai.push(error(503, "overloaded"), *expert_replies())
    out = headless.run(
        SREZ_AGENT_TIME_LIMIT_S="12", SREZ_LLM_COOLDOWN_AFTER="1", SREZ_LLM_COOLDOWN_S="13"
    )
    summary = read(out, "summary.json")
    assert summary["end_reason"] == "submit" and summary["status"] == "ok", summary
    assert summary["duration_s"] > 13
    (cooldown,) = [e for e in dialog(out) if e["type"] == "provider_error"]
    assert cooldown["cooldown"] is True and cooldown["retry_in_s"] >= 13
    assert read(out, "state.json")["cooldown_s"] >= 13


def test_cost_cap_ends_the_task_cleanly(headless: Headless, fake_openai: FakeOpenAI) -> None:
    fake_openai.push(tool_call("get_alerts", {}), tool_call("list_services", {}))
    out = headless.run(
        SREZ_LLM_COST_CAP_USD="0.0001",
        SREZ_LLM_INPUT_COST_PER_TOKEN="0.000001",
        SREZ_LLM_OUTPUT_COST_PER_TOKEN="0.000002",
    )
    summary = read(out, "summary.json")
    assert summary["status"] == "ok" and summary["end_reason"] == "submit"
    assert summary["cost_usd"] == 0.00014  # 100 * 1e-6 + 20 * 2e-6
    entries = dialog(out)
    submit = [e for e in entries if e["type"] == "tool_call"][-1]
    assert submit["name"] == "submit" and "Cost cap" in submit["args"]["summary"]
    assert any(e["type"] == "assistant" and "Cost cap" in e["text"] for e in entries)
    assert entries[-1]["type"] == "session_completed"
    assert len(fake_openai.requests) == 1
