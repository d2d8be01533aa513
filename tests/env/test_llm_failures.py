"""Failures told apart (srez_env.agents.failures), the history kept within the model's window
(srez_env.agents.llm_context), the completion cap and the action schema of ``llm-json``: the
logic, and the agent through its thin HTTP client against the scripted fake server (the faults a
real server cannot produce on demand; tests/client/test_real_model.py meets a real one)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from fakes.openai_server import FakeOpenAI, error, text, tool_call
from srez_client.relay.wire import provider_failure
from srez_client.results.report import build_report
from srez_daemon.agent.model_client import HTTPModelClient
from srez_daemon.attest import exit_error, judge_exit
from srez_daemon.protocol.agent import EXIT_MODEL_LIMIT
from srez_env.agents.failures import (
    CONTENT_FILTER,
    CONTEXT_WINDOW,
    counted,
    limit_code_of_exception,
    model_limit_reason,
)
from srez_env.agents.llm import DEFAULT_MAX_TOKENS, LLMAgent, LLMConfigError, LLMSettings
from srez_env.agents.llm_adapters import (
    REPLY_OVERHEAD_TOKENS,
    TOKENS_PER_CHARACTER,
    response_format,
)
from srez_env.agents.llm_context import ELIDED, ContextFit, size
from srez_env.agents.llm_retry import ModelLimitReached
from srez_env.env import SREEnv
from srez_env.tasks import load_tasks

FAST = {"SREZ_LLM_BACKOFF_S": "0.01", "SREZ_LLM_BACKOFF_MAX_S": "0.05", "SREZ_LLM_TIMEOUT_S": "5"}
TOO_LONG = "request (9744 tokens) exceeds the available context size (8192 tokens)"


def make(server: FakeOpenAI, spec: str = "llm", **env: str) -> LLMAgent:
    environ = {"SREZ_MODEL": "openai/fake", "SREZ_LLM_API_BASE": server.base_url, **FAST, **env}
    settings = LLMSettings.from_env(environ, spec=spec)
    return LLMAgent(settings, HTTPModelClient(settings, {}), seed=1)


def episode() -> tuple[SREEnv, dict[str, Any]]:
    env = SREEnv(load_tasks(["sre-007"])[0], agent="llm")
    return env, env.reset()


def provider_notes(agent: LLMAgent) -> list[tuple[str, float | None]]:
    return [
        (n["fields"]["kind"], n["fields"]["retry_in_s"])
        for n in agent.drain_notes()
        if n["type"] == "provider_error"
    ]


# ---------------------------------------------------------------------- the taxonomy


@pytest.mark.parametrize(
    ("status", "codes", "message", "limit"),
    [
        (400, ("context_window_exceeded",), "relay", CONTEXT_WINDOW),  # the relay's
        (400, ("context_length_exceeded",), "x", CONTEXT_WINDOW),  # OpenAI
        (400, ("400", "exceed_context_size_error"), TOO_LONG, CONTEXT_WINDOW),  # llama.cpp
        (400, (), "This model's maximum context length is 4096 tokens", CONTEXT_WINDOW),  # vLLM
        (413, (), "prompt is too long: 210000 tokens > 200000 maximum", CONTEXT_WINDOW),
        (400, ("content_policy_violation",), "x", CONTENT_FILTER),
        (400, ("content_filter",), "x", CONTENT_FILTER),
        (400, ("invalid_request_error",), "unknown model 'x'", None),
        (500, (), "context window exceeded while loading", None),  # a 5xx is the server's
        (429, ("context_length_exceeded",), "slow down", None),
        (401, (), "maximum context length", None),
    ],
)
def test_a_model_limit_is_read_from_the_code_or_the_words_of_a_4xx(
    status: int, codes: tuple[str, ...], message: str, limit: str | None
) -> None:
    assert model_limit_reason(status, codes, message) == limit


def test_only_infrastructure_failures_are_left_out_of_the_count() -> None:
    assert [counted(k) for k in ("provider", "harness", "model_limit", "agent", None)] == [
        False,
        False,
        True,
        True,
        True,
    ]


def test_the_relay_names_litellms_limit_exceptions_in_the_code() -> None:
    import litellm

    too_long = litellm.ContextWindowExceededError(
        message=TOO_LONG, model="m", llm_provider="openai"
    )
    refused = litellm.ContentPolicyViolationError(
        message="flagged", model="m", llm_provider="openai"
    )
    other = litellm.BadRequestError(message="unknown model", model="m", llm_provider="openai")
    codes = []
    for exc in (too_long, refused, other):
        answer = provider_failure(exc, frozenset())
        assert answer is not None and answer.status == 400
        codes.append(json.loads(answer.body)["error"]["code"])
    assert codes[:2] == [CONTEXT_WINDOW, CONTENT_FILTER] and codes[2] not in (CONTEXT_WINDOW,)
    assert limit_code_of_exception(c.__name__ for c in type(other).__mro__) is None


def test_the_daemon_attests_a_model_limit_of_its_own_llm_agent_only() -> None:
    mine = judge_exit(EXIT_MODEL_LIMIT, builtin_agent=True, agent_spec="llm-json")
    assert mine.error_kind == "model_limit"
    assert exit_error(EXIT_MODEL_LIMIT, mine, "too long").startswith("the model reached its limit")
    theirs = judge_exit(EXIT_MODEL_LIMIT, builtin_agent=False, agent_spec="cmd:x")
    assert (theirs.error_kind, theirs.claimed) == ("agent", "model_limit")


def test_reports_leave_infrastructure_failures_out_and_count_them() -> None:
    from srez_env.agents import make_agent
    from srez_env.grade import grade_episode
    from srez_env.play import play_episode

    task = load_tasks(["sre-001"])[0]
    env = play_episode(task, make_agent("scripted", task, 0), name="scripted")
    grade = grade_episode(env.record()).model_dump(mode="json")
    runs = [
        {**grade, "agent": "llm", "model": "openai/m", "run_seed": 0},
        {**grade, "agent": "llm", "model": "openai/m", "run_seed": 1, "error_kind": "provider"},
        {**grade, "agent": "llm", "model": "openai/m", "run_seed": 2, "error_kind": "model_limit",
         "reward": {**grade["reward"], "total": 0.0}},
    ]  # fmt: skip
    report = build_report(runs, bootstrap=None)
    (agent,) = report.agents
    assert agent.overall.n == 2  # the provider failure is in no aggregate
    assert agent.overall.mean_reward == pytest.approx(grade["reward"]["total"] / 2)
    assert report.left_out == {"llm (openai/m)": 1}


# ---------------------------------------------------------------------- the agent


def test_a_full_window_elides_the_oldest_observation_and_asks_again(
    fake_openai: FakeOpenAI,
) -> None:
    agent = make(fake_openai)
    env, prompt = episode()
    fake_openai.push(tool_call("get_alerts", {}), tool_call("list_services", {}))
    obs1 = env.step(agent.act(prompt)).observation
    obs2 = env.step(agent.act(obs1)).observation
    fake_openai.push(
        error(400, TOO_LONG, code="exceed_context_size_error"), tool_call("submit", {})
    )
    assert agent.act(obs2) == {"tool": "submit", "args": {}}
    refused, accepted = fake_openai.requests[-2:]
    observations = [m for m in accepted.messages[2:] if m["role"] == "tool"]
    assert [m["content"] == ELIDED for m in observations] == [True, False]
    assert size(accepted.messages) < size(refused.messages)  # all there was to cut
    assert provider_notes(agent)[-1] == ("model_limit", 0.0)


@pytest.mark.parametrize(
    "answer",
    [
        error(400, TOO_LONG, code="exceed_context_size_error"),  # nothing to elide yet
        error(400, "flagged by the content filter", code="content_filter"),
        # some providers answer a filtered request 200, finish_reason content_filter, no text
        text("", finish="content_filter"),
    ],
)
def test_a_model_limit_ends_the_episode_after_one_request_and_no_retry(
    fake_openai: FakeOpenAI, answer: Any
) -> None:
    agent = make(fake_openai)
    _, prompt = episode()
    fake_openai.push(answer)
    with pytest.raises(ModelLimitReached, match="reached its limit"):
        agent.act(prompt)
    assert len(fake_openai.requests) == 1
    assert provider_notes(agent) == [("model_limit", None)]


def test_llm_json_sends_a_schema_of_exactly_the_tools_actions(fake_openai: FakeOpenAI) -> None:
    env, prompt = episode()
    fake_openai.push(text('{"tool": "get_alerts", "args": {}}'))
    make(fake_openai, "llm-json").act(prompt)
    sent = fake_openai.requests[-1].body
    assert "tools" not in sent and sent["max_tokens"] == DEFAULT_MAX_TOKENS
    schema = sent["response_format"]["json_schema"]["schema"]
    assert sent["response_format"] == response_format(prompt["tools"], DEFAULT_MAX_TOKENS)
    good = [
        {"tool": "get_logs", "args": {"service": "db", "since": "2h", "limit": 5}},
        {"tool": "submit", "args": {"summary": "done"}},
        {"tool": "list_services", "args": {}},
    ]
    bad = [
        {"tool": "get_logs", "args": {"service": "mars"}},
        {"tool": "rm_rf", "args": {}},
        {"tool": "list_services"},
        {"tool": "list_services", "args": {}, "extra": 1},
    ]
    for action in good:
        jsonschema.validate(action, schema)
    for action in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(action, schema)
    for variant, tool in zip(schema["anyOf"], prompt["tools"], strict=True):
        assert variant["properties"]["tool"] == {"const": tool["function"]["name"]}


def test_under_a_small_cap_the_schema_bounds_every_free_string_so_a_reply_fits() -> None:
    """The longest reply the schema admits fits the cap: each action's free strings together
    cost at most what the cap leaves, two tokens a character (an escape), so the grammar ends a
    string before the cap cuts the JSON. Enumerated and patterned strings keep their own bound;
    with no cap, or a large one, the tools' own bounds stand."""
    _, prompt = episode()
    tools = prompt["tools"]
    for cap in (128, 256, 1024):
        schema = response_format(tools, cap)["json_schema"]["schema"]
        for variant in schema["anyOf"]:
            args = variant["properties"]["args"]
            lengths = [_free_length(spec) for spec in (args.get("properties") or {}).values()]
            free = sum(n for n in lengths if n is not None)
            cost = free * TOKENS_PER_CHARACTER + REPLY_OVERHEAD_TOKENS
            assert cost <= cap, (cap, variant["properties"]["tool"])
    assert response_format(tools, None) == response_format(tools, 100_000)
    unbounded = [
        (tool["function"]["name"], name)
        for tool in tools
        for name, spec in (tool["function"]["parameters"].get("properties") or {}).items()
        if _is_free_string(spec) and _free_length(spec) is None
    ]
    assert unbounded == [], "every free string of an action needs a maxLength"


def _branches(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [spec, *spec.get("anyOf", [])]


def _is_free_string(spec: dict[str, Any]) -> bool:
    return any(
        b.get("type") == "string" and "enum" not in b and "const" not in b for b in _branches(spec)
    )


def _free_length(spec: dict[str, Any]) -> int | None:
    for b in _branches(spec):
        if b.get("type") == "string" and "maxLength" in b and "enum" not in b:
            return int(b["maxLength"])
    return None


def test_a_reply_cut_by_the_cap_says_so_in_the_dialog(fake_openai: FakeOpenAI) -> None:
    _, prompt = episode()
    agent = make(fake_openai, "llm-json")
    fake_openai.push(
        text('{"tool": "get_logs", "args": {"service": "db", "grep": "aaaa', finish="length")
    )
    fake_openai.push(text('{"tool": "get_alerts", "args": {}}'))
    agent.act(prompt)
    agent.act({"tool": "get_logs", "status": "error", "result": "PARSE_ERROR"})
    notes = [n["fields"] for n in agent.drain_notes() if n["type"] == "assistant"]
    assert [n.get("finish_reason") for n in notes] == ["length", None]


def test_the_schema_and_the_cap_can_be_turned_off(fake_openai: FakeOpenAI) -> None:
    _, prompt = episode()
    fake_openai.push(text("{}"), tool_call("get_alerts", {}))
    make(fake_openai, "llm-json", SREZ_LLM_RESPONSE_FORMAT="0", SREZ_LLM_MAX_TOKENS="provider").act(
        prompt
    )
    make(fake_openai, "llm").act(prompt)
    unformatted, tools = (r.body for r in fake_openai.requests[-2:])
    assert "response_format" not in unformatted and "max_tokens" not in unformatted
    assert "response_format" not in tools and tools["max_tokens"] == DEFAULT_MAX_TOKENS


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SREZ_LLM_MAX_TOKENS", "0"),
        ("SREZ_LLM_MAX_TOKENS", "lots"),
        ("SREZ_LLM_RESPONSE_FORMAT", "maybe"),
    ],
)
def test_bad_settings_are_refused_in_one_line_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(LLMConfigError, match=name) as caught:
        LLMSettings.from_env({"SREZ_MODEL": "openai/x", name: value})
    assert "\n" not in str(caught.value)


# ---------------------------------------------------------------------- the window


def history(*observations: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s" * 10},
        {"role": "user", "content": "p" * 100},
    ]
    for o in observations:
        messages += [{"role": "assistant", "content": "a"}, {"role": "user", "content": o}]
    return messages


def test_the_window_keeps_the_prompts_and_the_newest_observation_and_learns_a_budget() -> None:
    fit = ContextFit()
    messages = history("x" * 500, "y" * 500, "z" * 500)
    assert fit.refused(messages)
    assert [m["content"][:1] for m in messages[3::2]] == ["[", "y", "z"]
    assert fit.budget == int(size(history("x" * 500, "y" * 500, "z" * 500)) * 0.8)
    # the budget stays: the next history is cut before it is sent
    messages += [{"role": "assistant", "content": "a"}, {"role": "user", "content": "w" * 500}]
    fit.fit(messages)
    assert size(messages) <= (fit.budget or 0)
    assert messages[-1]["content"] == "w" * 500 and messages[1]["content"] == "p" * 100


def test_a_window_too_small_for_the_prompt_and_one_observation_is_a_limit() -> None:
    fit = ContextFit()
    messages = history("x" * 500)
    assert not fit.refused(messages)
    assert messages == history("x" * 500)  # nothing of the prompt or the newest is cut
