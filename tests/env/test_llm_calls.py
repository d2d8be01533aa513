"""The LLM agent through its thin model client (plain HTTP, no litellm) against the scripted fake
OpenAI server: both adapters, malformed replies, every provider failure class, retries and the
cost cap."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from fakes.openai_server import FakeOpenAI, error, text, tool_call
from srez_daemon.agent.model_client import HTTPModelClient
from srez_env.actions import TOOLS
from srez_env.agents import build_agent
from srez_env.agents.llm import LLMAgent, LLMConfigError, LLMSettings
from srez_env.agents.llm_retry import ProviderGaveUp
from srez_env.env import SREEnv
from srez_env.tasks import load_tasks

FAST = {"SREZ_LLM_BACKOFF_S": "0.01", "SREZ_LLM_BACKOFF_MAX_S": "0.05", "SREZ_LLM_TIMEOUT_S": "5"}


@pytest.fixture(autouse=True)
def _fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")


def make(server: FakeOpenAI, spec: str = "llm", **env: str) -> LLMAgent:
    environ = {"SREZ_MODEL": "openai/fake", "SREZ_LLM_API_BASE": server.base_url, **FAST, **env}
    settings = LLMSettings.from_env(environ, spec=spec)
    return LLMAgent(settings, HTTPModelClient(settings), seed=1)


def episode(task_id: str = "sre-007") -> tuple[SREEnv, dict[str, Any]]:
    env = SREEnv(load_tasks([task_id])[0], agent="llm")
    return env, env.reset()


def notes_of(agent: LLMAgent, kind: str) -> list[dict[str, Any]]:
    return [n["fields"] for n in agent.drain_notes() if n["type"] == kind]


def test_tool_calling_sends_the_tools_and_the_brief_and_reports_tokens(
    fake_openai: FakeOpenAI,
) -> None:
    agent = make(fake_openai)
    env, prompt = episode()
    fake_openai.push(tool_call("get_alerts", {}, reasoning="alerts first", usage=(321, 12)))
    action = agent.act(prompt)
    assert action == {"tool": "get_alerts", "args": {}}
    sent = fake_openai.requests[0]
    assert sent.model == "fake"
    assert [t["function"]["name"] for t in sent.tools or []] == [
        t["function"]["name"] for t in prompt["tools"]
    ]
    assert len(sent.tools or []) == len(TOOLS)
    assert sent.messages[0]["role"] == "system" and sent.messages[1]["content"] == prompt["text"]
    notes = agent.drain_notes()
    assert [n["type"] for n in notes] == ["thinking", "assistant", "usage"]
    assert notes[0]["fields"]["text"] == "alerts first"
    assert notes[1]["fields"]["tokens"] == {"input": 321, "output": 12}
    assert notes[2]["fields"]["tokens"] == {"input": 321, "output": 12}
    # the observation goes back as the tool message answering that call id
    obs = env.step(action).observation
    fake_openai.push(tool_call("submit", {"summary": "done"}))
    assert agent.act(obs) == {"tool": "submit", "args": {"summary": "done"}}
    answer = fake_openai.requests[1].messages[-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == sent_call_id(fake_openai, 1)
    assert '"ok":true' in answer["content"]


def sent_call_id(server: FakeOpenAI, request: int) -> str:
    assistant = server.requests[request].messages[-2]
    return str(assistant["tool_calls"][0]["id"])


def test_json_text_mode_parses_one_object_and_sends_no_tools(fake_openai: FakeOpenAI) -> None:
    agent = make(fake_openai, "llm-json")
    env, prompt = episode()
    fake_openai.push(
        text('{"tool": "get_logs", "args": {"service": "db"}}'),
        text('Let me look:\n```json\n{"tool": "get_status", "args": {"service": "db"}}\n```'),
        text("I think the database is down."),
    )
    assert agent.act(prompt) == {"tool": "get_logs", "args": {"service": "db"}}
    assert fake_openai.requests[0].tools is None
    assert '"tool": "<tool name>"' in fake_openai.requests[0].messages[0]["content"]
    obs = env.step({"tool": "get_logs", "args": {"service": "db"}}).observation
    assert agent.act(obs) == {"tool": "get_status", "args": {"service": "db"}}
    obs = env.step({"tool": "get_status", "args": {"service": "db"}}).observation
    prose = agent.act(obs)
    assert prose == "I think the database is down."
    result = env.step(prose)  # the environment rejects it with a code, and counts the step
    assert result.observation["error"]["code"] == "PARSE_ERROR"
    assert result.observation["step"] == 3
    assert fake_openai.requests[-1].messages[-1]["role"] == "user"


def test_malformed_tool_arguments_cost_a_step_and_the_run_goes_on(
    fake_openai: FakeOpenAI,
) -> None:
    agent = make(fake_openai)
    env, prompt = episode()
    fake_openai.push(
        tool_call("get_logs", '{"service": "db", '),
        tool_call("get_metrics", "[1, 2]"),
        tool_call("get_alerts", {}),
    )
    bad = agent.act(prompt)
    assert isinstance(bad, str)
    first = env.step(bad).observation
    assert first["ok"] is False and first["error"]["code"] == "PARSE_ERROR" and first["step"] == 1
    second = env.step(agent.act(first)).observation
    assert second["error"]["code"] == "BAD_ARGS" and second["step"] == 2
    assert agent.act(second) == {"tool": "get_alerts", "args": {}}
    error_back = fake_openai.requests[1].messages[-1]
    assert error_back["role"] == "tool" and "PARSE_ERROR" in error_back["content"]


def test_429_with_retry_after_waits_at_least_that_long(fake_openai: FakeOpenAI) -> None:
    agent = make(fake_openai)
    _, prompt = episode()
    fake_openai.push(error(429, "slow down", retry_after=0.4), tool_call("get_alerts", {}))
    assert agent.act(prompt) == {"tool": "get_alerts", "args": {}}
    first, second = fake_openai.requests
    assert second.at - first.at >= 0.4
    (failure,) = notes_of(agent, "provider_error")
    assert failure["kind"] == "rate_limit" and failure["retry_in_s"] >= 0.4
    assert "slow down" in failure["message"] and failure["cooldown"] is False


@pytest.mark.parametrize(
    ("reply", "kind", "timeout_s"),
    [
        # An answered error must never read as a timeout, however slow a loaded machine makes
        # the first call: only the stalled reply gets a short timeout.
        (error(429, "no header"), "rate_limit", "60"),
        (error(500, "boom"), "server", "60"),
        (error(503, "overloaded"), "server", "60"),
        (tool_call("get_alerts", {}).after(6), "timeout", "2"),
    ],
)
def test_each_provider_failure_is_reported_and_retried(
    fake_openai: FakeOpenAI, reply: Any, kind: str, timeout_s: str
) -> None:
    agent = make(fake_openai, SREZ_LLM_TIMEOUT_S=timeout_s)
    _, prompt = episode()
    fake_openai.push(reply, tool_call("list_services", {}))
    assert agent.act(prompt) == {"tool": "list_services", "args": {}}
    (failure,) = notes_of(agent, "provider_error")
    assert failure["kind"] == kind
    assert 0.01 <= failure["retry_in_s"] <= 0.05 * 1.25 + 1e-9  # backoff within its bounds


def test_cooldown_after_k_consecutive_failures(fake_openai: FakeOpenAI) -> None:
    agent = make(fake_openai, SREZ_LLM_COOLDOWN_AFTER="2", SREZ_LLM_COOLDOWN_S="0.3")
    _, prompt = episode()
    fake_openai.push(error(500), error(502), tool_call("get_alerts", {}))
    started = time.monotonic()
    agent.act(prompt)
    failures = notes_of(agent, "provider_error")
    assert [f["cooldown"] for f in failures] == [False, True]
    assert failures[1]["retry_in_s"] >= 0.3 and time.monotonic() - started >= 0.3


def test_attempts_exhausted_raise_provider_gave_up_with_a_final_note(
    fake_openai: FakeOpenAI,
) -> None:
    agent = make(fake_openai, SREZ_LLM_MAX_ATTEMPTS="3")
    _, prompt = episode()
    fake_openai.push(error(500), error(500), error(500), tool_call("get_alerts", {}))
    with pytest.raises(ProviderGaveUp):
        agent.act(prompt)
    assert len(fake_openai.requests) == 3  # no hidden retries
    waits = [f["retry_in_s"] for f in notes_of(agent, "provider_error")]
    assert waits[:2] != [None, None] and waits[2] is None


def test_auth_failure_gives_up_at_once(fake_openai: FakeOpenAI) -> None:
    agent = make(fake_openai)
    _, prompt = episode()
    fake_openai.push(error(401, "bad key"))
    with pytest.raises(ProviderGaveUp, match="auth"):
        agent.act(prompt)
    assert len(fake_openai.requests) == 1
    assert notes_of(agent, "provider_error")[0]["kind"] == "auth"


def test_cost_cap_submits_without_another_call(fake_openai: FakeOpenAI) -> None:
    agent = make(
        fake_openai,
        SREZ_LLM_COST_CAP_USD="0.001",
        SREZ_LLM_INPUT_COST_PER_TOKEN="0.000005",
        SREZ_LLM_OUTPUT_COST_PER_TOKEN="0.00001",
    )
    env, prompt = episode()
    fake_openai.push(tool_call("get_alerts", {}, usage=(150, 30)), tool_call("get_alerts", {}))
    obs = env.step(agent.act(prompt)).observation  # 150*5e-6 + 30*1e-5 = 0.00105 >= cap
    usage = notes_of(agent, "usage")[-1]
    assert usage["cost_usd"] == pytest.approx(0.00105)
    action = agent.act(obs)
    assert isinstance(action, dict) and action["tool"] == "submit"
    assert "Cost cap of $0.001 reached" in action["args"]["summary"]
    assert len(fake_openai.requests) == 1
    assert env.step(action).done


def test_settings_refuse_a_missing_model_and_bad_numbers() -> None:
    with pytest.raises(LLMConfigError, match="SREZ_MODEL"):
        LLMSettings.from_env({})
    with pytest.raises(LLMConfigError, match="SREZ_LLM_MAX_ATTEMPTS"):
        LLMSettings.from_env({"SREZ_MODEL": "openai/x", "SREZ_LLM_MAX_ATTEMPTS": "0"})
    with pytest.raises(LLMConfigError, match="SREZ_LLM_TIMEOUT_S"):
        LLMSettings.from_env({"SREZ_MODEL": "openai/x", "SREZ_LLM_TIMEOUT_S": "soon"})


def test_an_llm_spec_without_a_client_is_a_spec_check_only() -> None:
    agent = build_agent("llm-json", task_id="sre-007")
    assert agent.name == "llm-json"  # each mode files its runs under its own name
    _, prompt = episode()
    with pytest.raises(LLMConfigError, match="srez-agent"):
        agent.act(prompt)


def test_importing_the_agents_and_the_agent_process_does_not_import_litellm() -> None:
    code = (
        "import sys, srez_env.agents, srez_env.agents.llm, srez_daemon.agent.model_client, "
        "srez_daemon.agent.__main__, srez_daemon.run, srez_client.cli; "
        "from srez_env.agents import build_agent; build_agent('llm', task_id='sre-007'); "
        "print('litellm' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        check=True,
    )
    assert out.stdout.strip() == "False"
