"""LLM runs on the ``docker`` backend reach their model only through the host relay
(docs/security.md A12): an ``llm`` run in a container solves a task against the scripted fake OpenAI
server, every upstream call carries the host's key, and no host key is in the container's
environment, its labels, its inspect output or the mirrored run folder.

Figures are printed as ``FIGURE <name>: <value>`` lines (see them with ``pytest -s``).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from client_helpers import expert_actions
from docker_kit import Engine, figure

from fakes.openai_server import FakeOpenAI, error, tool_call
from srez_client.backends.base import LaunchSpec
from srez_client.backends.docker.backend import DockerBackend
from srez_client.backends.docker.state import container_name
from srez_client.lifecycle.launch import RunLauncher
from srez_client.lifecycle.run import run_to_results
from srez_env.tasks import load_tasks

pytestmark = pytest.mark.docker

TASK = "sre-025"


def container_env(attrs: dict[str, Any]) -> dict[str, str]:
    pairs = (item.partition("=") for item in attrs["Config"]["Env"] or [])
    return {name: value for name, _, value in pairs}


def files_containing(root: Path, needle: bytes) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


async def relay_status(base_url: str, token: str) -> int:
    body = {"messages": [{"role": "user", "content": "still there?"}]}
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{base_url}/chat/completions", json=body, headers=headers) as resp,
    ):
        return resp.status


async def test_llm_run_reaches_its_model_through_the_relay_without_host_keys(
    engine: Engine,
    backend: DockerBackend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_openai: FakeOpenAI,
) -> None:
    sentinel = f"sk-sentinel-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", sentinel)
    monkeypatch.setenv("ANTHROPIC_API_KEY", f"{sentinel}-ant")
    actions: list[dict[str, Any]] = expert_actions(load_tasks([TASK])[0])
    expert = [tool_call(a["tool"], a["args"], usage=(200, 10)) for a in actions]
    fake_openai.push(error(429, "busy", retry_after=0.2), *expert)
    spec = LaunchSpec(
        task_id=TASK,
        agent_spec="llm",
        model="openai/fake-model",
        results_root=tmp_path / "results",
        agent_env={
            "SREZ_LLM_API_BASE": fake_openai.base_url,  # host-side: the relay's upstream
            "SREZ_LLM_BACKOFF_S": "0.01",
            "SREZ_LLM_BACKOFF_MAX_S": "0.05",
            "SREZ_LLM_INPUT_COST_PER_TOKEN": "0.000001",
            "SREZ_LLM_OUTPUT_COST_PER_TOKEN": "0.000002",
        },
    )
    started = time.monotonic()
    launcher = RunLauncher(backend)
    handle = await launcher.launch(spec)
    container = engine.client.containers.get(container_name(handle.run_id))
    attrs: dict[str, Any] = container.attrs
    outcome = await run_to_results(
        backend, spec, tmp_path / "scratch", handle=handle, timeout_s=180, launcher=launcher
    )
    figure("relay_llm_run_s", round(time.monotonic() - started, 1))

    # the run solved its task, through the relay, with the agent's retry policy intact
    summary = outcome.summary
    assert summary is not None and summary.status == "ok", outcome.results_dir
    result = json.loads((outcome.results_dir / "result.json").read_text())
    assert result["passed"] is True
    assert summary.tokens.input == 200 * len(expert)  # the 429 carried no usage
    assert summary.cost_usd == pytest.approx(200 * len(expert) * 1e-6 + 10 * len(expert) * 2e-6)
    dialog = [
        json.loads(line)
        for line in (outcome.results_dir / "archive" / "dialog.jsonl").read_text().splitlines()
    ]
    limit = next(e for e in dialog if e["type"] == "provider_error")
    assert limit["kind"] == "rate_limit" and limit["retry_in_s"] >= 0.2  # Retry-After relayed
    assert fake_openai.pending == 0
    assert len(fake_openai.requests) == len(expert) + 1
    assert {r.headers["Authorization"] for r in fake_openai.requests} == {f"Bearer {sentinel}"}

    # the container holds the relay's URL and its scoped token, and no host key
    env = container_env(attrs)
    token = env["SREZ_LLM_API_KEY"]
    assert len(token) == 43 and "OPENAI_API_KEY" not in env
    relay = await launcher.relay()
    assert env["SREZ_LLM_API_BASE"] == relay.base_url and not relay.host.startswith("127.")
    assert "ANTHROPIC_API_KEY" not in env and fake_openai.base_url not in env.values()
    inspected = json.dumps(engine.client.api.inspect_container(container.id))
    assert sentinel not in inspected  # env, labels, Cmd, Args: the whole inspect output
    assert sentinel not in json.dumps(attrs["Config"]["Labels"])
    assert files_containing(outcome.results_dir, sentinel.encode()) == []
    assert files_containing(outcome.results_dir, token.encode()) == []  # not even in a log
    figure("host_key_occurrences_in_container_and_results", 0)

    # the run is over: its token no longer reaches the model
    assert await relay_status(relay.base_url, token) == 401
    assert len(fake_openai.requests) == len(expert) + 1
    await backend.remove(outcome.handle)
    launcher.close()


async def test_stopping_an_llm_run_revokes_its_relay_token(
    engine: Engine,
    backend: DockerBackend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_openai: FakeOpenAI,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-key-of-the-relay")
    fake_openai.push(tool_call("get_alerts", {}).after(60))  # the agent waits on its model
    spec = LaunchSpec(
        task_id=TASK,
        agent_spec="llm",
        model="openai/fake-model",
        results_root=tmp_path / "results",
        agent_env={"SREZ_LLM_API_BASE": fake_openai.base_url},
    )
    launcher = RunLauncher(backend)
    handle = await launcher.launch(spec)
    relay = await launcher.relay()
    attrs = engine.client.api.inspect_container(container_name(handle.run_id))
    token = container_env(attrs)["SREZ_LLM_API_KEY"]
    deadline = time.monotonic() + 60
    while not fake_openai.requests:  # the agent's first call is in flight (and held)
        assert time.monotonic() < deadline, "the agent never called its model"
        await asyncio.sleep(0.1)
    fake_openai.push(error(400, "probe"))
    assert await relay_status(relay.base_url, token) == 400  # a live token reaches the model
    await launcher.stop(handle)
    assert await relay_status(relay.base_url, token) == 401
    assert len(fake_openai.requests) == 2
    await backend.remove(handle)
    launcher.close()
