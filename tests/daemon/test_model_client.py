"""The agent's thin model client over real HTTP: against the fake OpenAI server directly, and
through the host's model relay (which prices replies and passes provider errors through)."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from fakes.openai_server import FakeOpenAI, Scripted, error, text, tool_call
from srez_client.relay.server import ModelRelay
from srez_daemon.agent.model_client import (
    OPENAI_BASE,
    Endpoint,
    HTTPModelClient,
    ModelConnectionError,
    ModelHTTPError,
    ModelTimeout,
    retry_after,
)
from srez_daemon.protocol.agent import ATTEMPT_HEADER, ATTEMPT_PATTERN
from srez_env.agents.llm import LLMConfigError, LLMSettings
from srez_env.agents.llm_retry import Failure

HI = [{"role": "user", "content": "hi"}]


def client_of(base: str, **fields: object) -> HTTPModelClient:
    return HTTPModelClient(LLMSettings(model="openai/fake", api_base=base, **fields))  # type: ignore[arg-type]


def failure_of(client: HTTPModelClient) -> Failure:
    with pytest.raises(Exception) as caught:
        client.complete(HI, None)
    failure = client.classify(caught.value)
    assert failure is not None, caught.value
    return failure


def test_a_reply_is_read_with_tools_tokens_and_reasoning(fake_openai: FakeOpenAI) -> None:
    client = client_of(fake_openai.base_url, api_key="sk-x", temperature=0.2, max_tokens=50)
    fake_openai.push(tool_call("get_logs", {"service": "db"}, reasoning="why", usage=(7, 3)))
    tools = [{"type": "function", "function": {"name": "get_logs", "parameters": {}}}]
    reply = client.complete(HI, tools)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("get_logs", '{"service":"db"}')]
    assert (reply.input_tokens, reply.output_tokens, reply.reasoning) == (7, 3, "why")
    assert reply.cost_usd is None  # no relay header, no configured price: unknown
    sent = fake_openai.requests[0]
    assert sent.model == "fake" and sent.headers["Authorization"] == "Bearer sk-x"
    assert sent.body["tool_choice"] == "auto" and sent.body["temperature"] == 0.2
    assert sent.body["max_tokens"] == 50 and sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    fake_openai.push(text("done"))
    assert client.complete(HI, None).text == "done"
    assert "tools" not in fake_openai.requests[1].body


def test_every_call_of_one_agent_names_its_attempt_and_another_agent_another(
    fake_openai: FakeOpenAI,
) -> None:
    """The relay replays kept replies only to another attempt of a run (docs in
    srez_client.relay.server): one client is one attempt, the same id on all its calls."""
    first, second = client_of(fake_openai.base_url), client_of(fake_openai.base_url)
    fake_openai.push(text("1"), text("2"), text("3"))
    for client in (first, first, second):
        client.complete(HI, None)
    ids = [r.headers[ATTEMPT_HEADER] for r in fake_openai.requests]
    assert ids[0] == ids[1] != ids[2]
    assert all(re.fullmatch(ATTEMPT_PATTERN, i) for i in ids)


@pytest.mark.parametrize(
    ("reply", "kind", "retryable", "wait"),
    [
        (error(429, "slow", retry_after=2), "rate_limit", True, 2.0),
        (error(401, "bad key"), "auth", False, None),
        (error(403, "forbidden"), "auth", False, None),
        (error(500, "Missing credentials. Please pass an `api_key`"), "auth", False, None),
        (error(502, "bad gateway", retry_after=1), "server", True, 1.0),
        (error(408, "too slow"), "timeout", True, None),
        (error(409, "conflict"), "other", True, None),
        (error(400, "context too long"), "other", False, None),
        (error(404, "no such model"), "other", False, None),
        (Scripted(status=200, body={"nope": 1}), "server", True, None),
    ],
)
def test_failures_are_classified_by_status(
    fake_openai: FakeOpenAI, reply: Scripted, kind: str, retryable: bool, wait: float | None
) -> None:
    fake_openai.push(reply)
    failure = failure_of(client_of(fake_openai.base_url))
    assert (failure.kind, failure.retryable, failure.retry_after_s) == (kind, retryable, wait)


def test_retry_after_ms_wins_and_an_http_date_counts() -> None:
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 < (retry_after({"retry-after": soon}) or 0) <= 30
    assert retry_after({"retry-after": "whenever"}) is None and retry_after({}) is None


def test_a_stalled_server_is_a_timeout_and_a_closed_port_a_server_failure(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.push(text("late").after(2))
    client = client_of(fake_openai.base_url, timeout_s=0.3)
    with pytest.raises(ModelTimeout):
        client.complete(HI, None)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    failure = failure_of(client_of(f"http://127.0.0.1:{port}/v1"))
    assert failure.kind == "server" and failure.retryable
    assert client.classify(ValueError("a bug")) is None
    assert isinstance(ModelHTTPError(500, "x", {}), Exception)
    assert issubclass(ModelConnectionError, Exception)


def test_a_streamed_reply_is_the_same_reply_as_a_whole_one(fake_openai: FakeOpenAI) -> None:
    scripted = tool_call("get_logs", {"service": "db", "grep": "x"}, reasoning="why", usage=(7, 3))
    fake_openai.push(scripted, scripted)
    streamed = client_of(fake_openai.base_url).complete(HI, None)
    whole = client_of(fake_openai.base_url, stream=False).complete(HI, None)
    assert streamed == whole and streamed.tool_calls and streamed.finish_reason == "tool_calls"
    assert [r.body.get("stream") for r in fake_openai.requests] == [True, None]


def test_the_timeout_is_an_idle_one_while_the_model_still_writes(fake_openai: FakeOpenAI) -> None:
    """A slow model on a CPU: eight characters every 0.15 s for a second and a half, four times
    the timeout, and the reply arrives whole; a server silent for longer than the timeout is
    one. Unstreamed, the same slow reply is cut off by the timeout (a total then)."""
    slow = text("x" * 80, usage=(5, 10)).streamed(gap_s=0.15)
    fake_openai.push(slow)
    started = time.monotonic()
    reply = client_of(fake_openai.base_url, timeout_s=0.4).complete(HI, None)
    assert reply.text == "x" * 80 and reply.output_tokens == 10
    assert time.monotonic() - started > 1.2  # it took longer than any total of 0.4 s allows
    fake_openai.push(text("late").streamed(gap_s=0.15).after(1.0))
    with pytest.raises(ModelTimeout, match="for 0.4 s"):
        client_of(fake_openai.base_url, timeout_s=0.4).complete(HI, None)
    fake_openai.push(text("x" * 80).after(1.2))  # unstreamed, the time to the whole reply
    with pytest.raises(ModelTimeout):
        client_of(fake_openai.base_url, timeout_s=0.4, stream=False).complete(HI, None)


def test_a_stream_cut_before_its_end_is_a_server_failure_and_retried(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.push(tool_call("get_alerts", {}).streamed(cut_after=3))
    failure = failure_of(client_of(fake_openai.base_url))
    assert (failure.kind, failure.retryable) == ("server", True)
    assert "without [DONE]" in failure.message or "cannot reach" in failure.message


def test_configured_prices_win_over_the_relay_header(fake_openai: FakeOpenAI) -> None:
    fake_openai.push(text("a", usage=(100, 10)))
    client = client_of(fake_openai.base_url, input_cost_per_token=0.001, output_cost_per_token=0.01)
    assert client.complete(HI, None).cost_usd == pytest.approx(0.2)


def test_headless_endpoints_fall_back_to_openai_variables() -> None:
    settings = LLMSettings(model="openai/gpt-4o-mini")
    assert Endpoint.of(settings, {}) == Endpoint(OPENAI_BASE, "gpt-4o-mini")
    found = Endpoint.of(settings, {"OPENAI_API_BASE": "http://x/v1/", "OPENAI_API_KEY": "k"})
    assert (found.base_url, found.api_key) == ("http://x/v1", "k")
    relayed = LLMSettings(
        model="anthropic/claude", call_model="openai/srez-r1", api_base="http://r/v1", api_key="t"
    )
    assert Endpoint.of(relayed, {"OPENAI_API_KEY": "k"}) == Endpoint("http://r/v1", "srez-r1", "t")
    with pytest.raises(LLMConfigError, match="SREZ_LLM_API_BASE"):
        Endpoint.of(LLMSettings(model="anthropic/claude"), {})
    with pytest.raises(LLMConfigError, match="http"):
        HTTPModelClient(LLMSettings(model="openai/x", api_base="ftp://x"))


@pytest.fixture
def relay() -> Iterator[ModelRelay]:
    relay = ModelRelay("127.0.0.1", environ={"OPENAI_API_KEY": "sk-host-secret-1234"})
    relay.start_blocking()
    yield relay
    relay.close_blocking()


def test_through_the_relay_replies_are_priced_and_errors_keep_their_class(
    relay: ModelRelay, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret-1234")
    grant = relay.register("run-a", "openai/gpt-4o-mini", fake_openai.base_url)
    settings = LLMSettings(
        model="openai/gpt-4o-mini",
        call_model="openai/srez-run-a",
        api_base=grant.base_url,
        api_key=grant.token,
    )
    client = HTTPModelClient(settings)
    fake_openai.push(tool_call("get_alerts", {}, usage=(1000, 100)))
    # another prompt than failure_of's: the relay replays a run's reply to the same request
    reply = client.complete([{"role": "user", "content": "first"}], None)
    assert reply.tool_calls[0].name == "get_alerts" and reply.input_tokens == 1000
    assert reply.cost_usd is not None and reply.cost_usd > 0  # the host's price list
    assert fake_openai.requests[0].headers["Authorization"] == "Bearer sk-host-secret-1234"
    fake_openai.push(error(429, "slow down", retry_after=3))
    failure = failure_of(client)
    assert (failure.kind, failure.retry_after_s) == ("rate_limit", 3.0)
    # the relay streams too, its price the stream's last comment; a provider failing once the
    # stream has begun is an error event, and the agent's server failure (retried)
    fake_openai.push(text("slowly", usage=(1000, 100)).streamed(gap_s=0.05))
    streamed = client.complete([{"role": "user", "content": "second"}], None)
    assert streamed.text == "slowly" and streamed.cost_usd == reply.cost_usd
    assert fake_openai.requests[-1].body["stream"] is True
    fake_openai.push(text("never finished").streamed(cut_after=2))
    broken = failure_of(client)
    assert (broken.kind, broken.retryable) == ("server", True)
    relay.revoke("run-a")
    assert failure_of(client).kind == "auth"  # a revoked token is refused for good
