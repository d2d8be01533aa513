"""The host model relay (``srez_client.relay.server``) in front of the fake OpenAI server, no Docker:
the scoped token reaches the run's real model with the host's key, refusals are one-line JSON,
provider errors keep their status and ``Retry-After``, and litellm loads on the first request."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from fakes.openai_server import FakeOpenAI, error, text, tool_call
from srez_client.backends.docker.model_settings import bridge_gateway
from srez_client.errors import BackendError
from srez_client.relay.server import MAX_BODY, MODEL_HEADER, ModelRelay, RelayGrant
from srez_client.relay.settings import llm_settings, model_environment, relay_target
from srez_client.relay.wire import forwarded_params, host_secret_values, redact
from srez_daemon.protocol.agent import ATTEMPT_HEADER

HOST_KEY = "sk-host-relay-test-0123456789"
REAL_MODEL = "openai/real-model"
CHAT: dict[str, Any] = {"model": "whatever", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
async def relay(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ModelRelay]:
    monkeypatch.setenv("OPENAI_API_KEY", HOST_KEY)
    made = ModelRelay("127.0.0.1")
    await made.start()
    try:
        yield made
    finally:
        await made.close()


async def post(
    grant: RelayGrant | str,
    body: dict[str, Any] | bytes,
    token: str | None = None,
    attempt: str | None = None,
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """POST a chat request to the relay as an agent would (``attempt``: its attempt id);
    (status, JSON body, headers)."""
    base = grant.base_url if isinstance(grant, RelayGrant) else grant
    bearer = token if token is not None else grant.token if isinstance(grant, RelayGrant) else ""
    data = io.BytesIO(body if isinstance(body, bytes) else orjson.dumps(body))
    headers = {"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"}
    if attempt is not None:
        headers[ATTEMPT_HEADER] = attempt
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{base}/chat/completions", data=data, headers=headers) as resp,
    ):
        raw = await resp.read()
        assert b"\n" not in raw.strip()  # one line, errors included
        return resp.status, orjson.loads(raw), dict(resp.headers)


LOST, AGAIN = "0123456789abcdef", "fedcba9876543210"


async def test_relay_forwards_to_the_real_model_with_the_host_key(
    relay: ModelRelay, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    grant = relay.register("run-a", REAL_MODEL, fake_openai.base_url)
    assert len(grant.token) == 43 and grant.token not in repr(grant)
    fake_openai.push(tool_call("get_alerts", {}, usage=(321, 12)))
    with FakeOpenAI() as elsewhere:  # where a hostile body would send the host's key
        body = {
            **CHAT,
            "tools": [{"type": "function", "function": {"name": "get_alerts", "parameters": {}}}],
            "tool_choice": "auto",
            "temperature": 0.2,
            "max_tokens": 50,
            "api_base": elsewhere.base_url,
            "base_url": elsewhere.base_url,
            "api_key": "sk-agent-chosen",
            "extra_headers": {"X-Leak": "1"},
        }
        status, reply, headers = await post(grant, body)
        assert elsewhere.requests == []
    assert status == 200, reply
    assert reply["model"] == REAL_MODEL and headers[MODEL_HEADER] == REAL_MODEL
    assert reply["usage"]["prompt_tokens"] == 321 and reply["usage"]["completion_tokens"] == 12
    call = reply["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "get_alerts", "arguments": "{}"}
    (seen,) = fake_openai.requests
    assert seen.headers["Authorization"] == f"Bearer {HOST_KEY}"  # the host's key, upstream only
    assert grant.token not in repr(seen.headers)  # the token stays at the relay
    assert seen.model == "real-model"  # the token decided, not the body's "whatever"
    assert seen.body["temperature"] == 0.2 and seen.body["max_tokens"] == 50
    assert seen.body["tool_choice"] == "auto" and seen.tools is not None
    assert "X-Leak" not in seen.headers and HOST_KEY not in orjson.dumps(reply).decode()
    assert "relay: run run-a openai/real-model -> 200" in caplog.text
    assert grant.token not in caplog.text and HOST_KEY not in caplog.text


async def test_relay_refuses_missing_wrong_and_revoked_tokens(
    relay: ModelRelay, fake_openai: FakeOpenAI
) -> None:
    grant = relay.register("run-a", REAL_MODEL, fake_openai.base_url)
    other = relay.register("run-b", "openai/other-model", fake_openai.base_url)
    for token in ("", "x" * 43, grant.token + "x", f" {grant.token[:-1]}"):
        status, reply, _ = await post(grant, CHAT, token=token)
        assert status == 401 and reply["error"]["code"] == "invalid_relay_token"
    fake_openai.push(text("b"))
    status, reply, _ = await post(other, CHAT)
    assert status == 200 and reply["model"] == "openai/other-model"
    relay.revoke("run-a")
    relay.revoke("run-a")  # idempotent
    status, _, _ = await post(grant, CHAT)
    assert status == 401
    assert len(fake_openai.requests) == 1  # refused requests never went upstream
    again = relay.register("run-b", "openai/other-model")  # a new token replaces the old one
    assert (await post(other, CHAT))[0] == 401 and again.token != other.token


async def test_relay_passes_provider_errors_through(
    relay: ModelRelay, fake_openai: FakeOpenAI
) -> None:
    grant = relay.register("run-a", REAL_MODEL, fake_openai.base_url)
    fake_openai.push(error(429, "slow down", retry_after=7), error(500, "boom"))
    status, reply, headers = await post(grant, CHAT)
    assert status == 429 and headers["Retry-After"] == "7"
    assert "slow down" in reply["error"]["message"] and reply["error"]["type"] == "provider_error"
    status, reply, headers = await post(grant, CHAT)
    assert status == 500 and "boom" in reply["error"]["message"] and "Retry-After" not in headers
    assert len(fake_openai.requests) == 2  # the relay never retries


async def test_an_agent_reads_the_relayed_rate_limit_as_from_the_provider(
    relay: ModelRelay, fake_openai: FakeOpenAI
) -> None:
    """The agent's own thin client, pointed at the relay, classifies what it relays."""
    from srez_daemon.agent.model_client import HTTPModelClient
    from srez_env.agents.llm import LLMSettings

    grant = relay.register("run-a", REAL_MODEL, fake_openai.base_url)
    settings = LLMSettings(
        model=REAL_MODEL,
        call_model="openai/srez-run-a",
        api_base=grant.base_url,
        api_key=grant.token,
    )
    client = HTTPModelClient(settings)
    fake_openai.push(error(429, retry_after=3), tool_call("get_alerts", {}))
    with pytest.raises(Exception) as caught:
        await asyncio.to_thread(client.complete, CHAT["messages"], None)
    failure = client.classify(caught.value)
    assert failure is not None and failure.kind == "rate_limit" and failure.retry_after_s == 3
    reply = await asyncio.to_thread(client.complete, CHAT["messages"], None)
    assert reply.tool_calls[0].name == "get_alerts" and reply.input_tokens == 100


async def test_relay_refuses_an_oversized_or_malformed_body(
    monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAI
) -> None:
    assert MAX_BODY == 8 << 20
    relay = ModelRelay("127.0.0.1", max_body=1 << 20)
    await relay.start()
    try:
        grant = relay.register("run-a", REAL_MODEL, fake_openai.base_url)
        big = orjson.dumps({"messages": [{"role": "user", "content": "x" * (1 << 20)}]})
        status, reply, _ = await post(grant, big)
        assert status == 413 and reply["error"]["code"] == "body_too_large"

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: capped while read
            for _ in range(3):
                yield b"x" * (512 << 10)

        headers = {"Authorization": f"Bearer {grant.token}"}
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"{grant.base_url}/chat/completions", data=chunks(), headers=headers) as r,
        ):
            assert r.status == 413
        for body, code in ((b"{", "bad_json"), (b"[]", "bad_request"), (b"{}", "bad_request")):
            status, reply, _ = await post(grant, body)
            assert (status, reply["error"]["code"]) == (400, code)
        status, reply, _ = await post(grant, {**CHAT, "stream": "yes"})
        assert (status, reply["error"]["code"]) == (400, "bad_request")
        assert "'stream' must be true or false" in reply["error"]["message"]
        async with aiohttp.ClientSession() as http, http.get(grant.base_url + "/nope") as r:
            assert r.status == 404 and (await r.json())["error"]["code"] == "http_error"
        async with (
            aiohttp.ClientSession() as http,
            http.get(grant.base_url + "/models", headers=headers) as r,
        ):
            assert (await r.json())["data"][0]["id"] == REAL_MODEL
        assert fake_openai.requests == []
    finally:
        await relay.close()
    await relay.close()  # idempotent


def test_litellm_is_imported_only_by_the_first_request(tmp_path: Path) -> None:
    """In a fresh interpreter (this one may have imported litellm already)."""
    script = """
import asyncio, sys
import aiohttp
from fakes.openai_server import FakeOpenAI, text
from srez_client.relay.server import ModelRelay

async def main() -> None:
    with FakeOpenAI() as fake:
        relay = ModelRelay("127.0.0.1")
        await relay.start()
        grant = relay.register("run-a", "openai/real", fake.base_url)
        print("after start", "litellm" in sys.modules)
        fake.push(text("hi"))
        headers = {"Authorization": "Bearer " + grant.token}
        body = {"messages": [{"role": "user", "content": "hi"}]}
        async with aiohttp.ClientSession() as http:
            async with http.post(grant.base_url + "/chat/completions", json=body, headers=headers) as r:
                print("status", r.status)
        print("after request", "litellm" in sys.modules)
        await relay.close()

asyncio.run(main())
"""
    tests = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(tests), "OPENAI_API_KEY": "sk-x"}
    env.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:3] == [
        "after start False",
        "status 200",
        "after request True",
    ]


async def test_relay_listens_on_one_address_only() -> None:
    for host in ("0.0.0.0", "::", ""):
        with pytest.raises(ValueError, match="one address"):
            ModelRelay(host)
    relay = ModelRelay("192.0.2.1")  # TEST-NET: not an address of this host
    with pytest.raises(OSError):
        await relay.start()
    assert not relay.running
    with pytest.raises(RuntimeError, match="start"):
        relay.register("run-a", REAL_MODEL)


def test_forwarded_params_drop_routing_and_credentials() -> None:
    body = {
        **CHAT,
        "api_base": "http://evil",
        "api_key": "k",
        "custom_llm_provider": "x",
        "metadata": {},
        "temperature": None,
        "seed": 3,
    }
    assert forwarded_params(orjson.dumps(body)) == {"messages": CHAT["messages"], "seed": 3}


def test_host_secrets_are_redacted() -> None:
    environ = {
        "OPENAI_API_KEY": HOST_KEY,
        "GITHUB_TOKEN": "ghp_abcdefgh",
        "AWS_SECRET_ACCESS_KEY": "abcdefghij",
        "PATH": "/usr/bin:/bin",
        "SHORT_API_KEY": "abc",
        "SREZ_LLM_INPUT_COST_PER_TOKEN": "0.0000025",
    }
    found = host_secret_values(environ)
    assert found == {HOST_KEY, "ghp_abcdefgh", "abcdefghij"}
    assert redact(f"Incorrect API key provided: {HOST_KEY}.", found) == (
        "Incorrect API key provided: <redacted>."
    )


def test_bridge_gateway_from_the_engine_or_the_subnet() -> None:
    reported = {"IPAM": {"Config": [{"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"}]}}
    assert bridge_gateway(reported) == "172.18.0.1"
    subnet_only = {"IPAM": {"Config": [{"Subnet": "fd00::/64"}, {"Subnet": "172.17.0.0/16"}]}}
    assert bridge_gateway(subnet_only) == "172.17.0.1"
    with pytest.raises(BackendError, match="no IPv4 gateway"):
        bridge_gateway({"Name": "bridge", "IPAM": {"Config": None}})


def test_container_gets_settings_and_the_relay_never_a_host_key() -> None:
    host = {
        "OPENAI_API_KEY": HOST_KEY,
        "SREZ_LLM_TIMEOUT_S": "30",
        "SREZ_LLM_API_BASE": "http://host-only:11434",
        "SREZ_LLM_API_KEY": "sk-explicit-host-key",
        "SREZ_LLM_SESSION_TOKEN": "hidden",
        "SREZ_LLM_PROXY_PASSWORD": "hidden",
        "SREZ_LLM_INPUT_COST_PER_TOKEN": "0.000001",
    }
    settings = llm_settings(host, {"SREZ_LLM_COST_CAP_USD": "0.5", "SREZ_LLM_TIMEOUT_S": "9"})
    target = relay_target(settings)
    assert (target.api_base, target.api_key, target.timeout_s) == (
        "http://host-only:11434",
        "sk-explicit-host-key",
        9.0,
    )
    assert "sk-explicit" not in repr(target)
    env = model_environment(settings, base_url="http://172.17.0.1:5/v1", token="tok", run_id="R")
    assert env == {
        "SREZ_LLM_INPUT_COST_PER_TOKEN": "0.000001",
        "SREZ_LLM_COST_CAP_USD": "0.5",
        "SREZ_LLM_TIMEOUT_S": "9",
        "SREZ_LLM_API_BASE": "http://172.17.0.1:5/v1",
        "SREZ_LLM_API_KEY": "tok",
        "SREZ_LLM_CALL_MODEL": "openai/srez-R",
    }


async def test_another_attempt_of_a_run_is_answered_what_the_lost_one_was_with_no_call(
    relay: ModelRelay, fake_openai: FakeOpenAI
) -> None:
    """A new attempt of a run (a lost ray node) replays its deterministic episode: its requests
    are those of the lost attempt, and the relay answers them from what it sent, calling the
    provider only for what the lost attempt never asked. Failures are never kept."""
    grant = relay.register("run-again", REAL_MODEL, fake_openai.base_url)
    other = relay.register("run-other", REAL_MODEL, fake_openai.base_url)
    later = {**CHAT, "messages": [*CHAT["messages"], {"role": "user", "content": "and then?"}]}
    fake_openai.push(error(503, "busy"), text("first"), text("second"), text("other run"))
    assert (await post(grant, CHAT, attempt=LOST))[0] == 503
    status, reply, headers = await post(grant, CHAT, attempt=LOST)
    assert (status, reply["choices"][0]["message"]["content"]) == (200, "first")
    assert "X-Srez-Replayed" not in headers
    assert (await post(grant, later, attempt=LOST))[1]["choices"][0]["message"][
        "content"
    ] == "second"
    calls = len(fake_openai.requests)
    # the new attempt: the same two requests again, in the same order
    for body, expected in ((CHAT, "first"), (later, "second")):
        status, reply, headers = await post(grant, body, attempt=AGAIN)
        assert (status, reply["choices"][0]["message"]["content"]) == (200, expected)
        assert headers["X-Srez-Replayed"] == "1" and headers[MODEL_HEADER] == REAL_MODEL
    assert len(fake_openai.requests) == calls
    # another run's identical request is its own call
    assert (await post(other, CHAT, attempt=AGAIN))[1]["choices"][0]["message"]["content"] == (
        "other run"
    )
    assert len(fake_openai.requests) == calls + 1


async def test_an_attempt_asking_the_same_request_again_on_purpose_gets_a_new_call(
    relay: ModelRelay, fake_openai: FakeOpenAI
) -> None:
    """An agent that samples one request three times (self-consistency) gets three replies, not
    its first one back; with no attempt id at all the same holds. Another attempt then replays
    the three in order, and a fourth asking is a call again."""
    grant = relay.register("run-sampling", REAL_MODEL, fake_openai.base_url)
    fake_openai.push(text("a"), text("b"), text("c"), text("d"), text("e"), text("f"))

    async def content(attempt: str | None) -> tuple[str, bool]:
        status, reply, headers = await post(grant, CHAT, attempt=attempt)
        assert status == 200
        return reply["choices"][0]["message"]["content"], "X-Srez-Replayed" in headers

    assert [await content(LOST) for _ in range(3)] == [("a", False), ("b", False), ("c", False)]
    assert [await content(None) for _ in range(2)] == [("a", True), ("b", True)]
    assert [await content(AGAIN) for _ in range(4)] == [
        ("a", True),
        ("b", True),
        ("c", True),
        ("d", False),
    ]
    assert len(fake_openai.requests) == 4


async def test_once_a_newer_attempt_has_called_the_older_one_is_refused_for_good(
    relay: ModelRelay, fake_openai: FakeOpenAI
) -> None:
    """A node given up for lost may still run its attempt: its agent would go on paying for a
    run that is being played again elsewhere."""
    grant = relay.register("run-superseded", REAL_MODEL, fake_openai.base_url)
    other = {**CHAT, "messages": [{"role": "user", "content": "something else"}]}
    fake_openai.push(text("lost"), text("again"), text("more"))
    assert (await post(grant, CHAT, attempt=LOST))[0] == 200
    assert (await post(grant, other, attempt=AGAIN))[0] == 200
    status, body, _ = await post(grant, other, attempt=LOST)
    assert (status, body["error"]["code"]) == (403, "attempt_superseded")
    assert (await post(grant, CHAT, attempt=AGAIN))[1]["choices"][0]["message"]["content"] == (
        "lost"  # the newer attempt still gets what the older one was sent
    )
    assert (await post(grant, {**other, "seed": 1}, attempt=AGAIN))[0] == 200
    assert len(fake_openai.requests) == 3


@pytest.mark.parametrize("attempt", ["", "XYZ", "12345", "a" * 65, "0123abcd-1"])
async def test_a_malformed_attempt_id_is_refused_in_one_line(
    relay: ModelRelay, fake_openai: FakeOpenAI, attempt: str
) -> None:
    grant = relay.register("run-bad-attempt", REAL_MODEL, fake_openai.base_url)
    fake_openai.push(text("unused"))
    status, body, _ = await post(grant, CHAT, attempt=attempt)
    if attempt == "":
        assert status == 200  # an empty header names no attempt
        return
    assert status == 400 and body["error"]["code"] == "bad_attempt"
    assert "8 to 64 lowercase hex digits" in body["error"]["message"]
    assert fake_openai.requests == []
