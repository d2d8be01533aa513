"""LLM runs on the ``local`` backend reach their model through the launcher's model relay, as on
``docker`` (docs/security.md A12): no host provider key reaches the run's daemon or agent, the agent
process never imports litellm, and the run's token stops working once the run is over."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import psutil
import pytest

from fakes.expert import expert_replies
from fakes.openai_server import FakeOpenAI, tool_call
from srez_client.backends.base import LaunchSpec
from srez_client.backends.local.backend import LocalBackend
from srez_client.backends.local.environment import daemon_environment
from srez_client.backends.local.files import agent_socket_path
from srez_client.backends.process import processes_with_env
from srez_client.lifecycle.launch import RunLauncher
from srez_client.lifecycle.run import run_to_results
from srez_client.relay.settings import model_environment

HOST_KEYS = {
    "OPENAI_API_KEY": "sk-host-openai-must-stay-0001",
    "ANTHROPIC_API_KEY": "sk-host-anthropic-must-stay-0002",
    "GEMINI_API_KEY": "host-gemini-must-stay-0003",
}


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.decode().partition("=") for item in raw.split(b"\0") if item)
    return {name: value for name, _, value in pairs}


def test_the_daemon_environment_of_a_model_run_has_the_grant_and_no_host_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in HOST_KEYS.items():
        monkeypatch.setenv(name, value)
    spec = LaunchSpec(
        task_id="sre-007", agent_spec="llm", model="openai/x", results_root=tmp_path,
        agent_env={"SREZ_LLM_COST_CAP_USD": "0.5"},
    )  # fmt: skip
    grant = model_environment(
        {"SREZ_LLM_COST_CAP_USD": "0.5", "SREZ_LLM_API_KEY": "sk-explicit-host-key"},
        base_url="http://127.0.0.1:9/v1",
        token="relay-token",
        run_id="R",
    )
    env = daemon_environment(
        tmp_path, spec.model_copy(update={"model_env": grant}), tmp_path / "state"
    )
    assert env["SREZ_LLM_API_BASE"] == "http://127.0.0.1:9/v1"
    assert env["SREZ_LLM_API_KEY"] == "relay-token" and env["SREZ_LLM_COST_CAP_USD"] == "0.5"
    assert env["SREZ_LLM_CALL_MODEL"] == "openai/srez-R"
    assert not set(HOST_KEYS.values()) & set(env.values())
    assert "sk-explicit-host-key" not in env.values()


async def test_a_local_llm_run_calls_through_the_relay_with_no_key_and_no_litellm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAI
) -> None:
    for name, value in HOST_KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SREZ_LLM_API_BASE", fake_openai.base_url)  # host-side: the relay's
    # the first reply comes late, so the run's processes can be looked at while they wait
    replies = expert_replies("sre-001")
    fake_openai.push(tool_call("get_alerts", {}).after(1.5), *replies)
    backend = LocalBackend(tmp_path / "state")
    launcher = RunLauncher(backend)
    spec = LaunchSpec(
        task_id="sre-001", agent_spec="llm", model="openai/gpt-4o-mini",
        results_root=tmp_path / "results",
    )  # fmt: skip
    try:
        handle = await launcher.launch(spec)
        record = backend._record(handle.run_id)
        assert record is not None and record.pid is not None
        socket = agent_socket_path(backend.live / handle.run_id)
        for _ in range(500):  # until the provider sees the first request (10 s at most)
            if fake_openai.requests:
                break
            await asyncio.sleep(0.02)
        # the agent and its sandbox are the daemon's descendants; a daemon forked from the run
        # template shows the template's starting environment in /proc (no key either), so the
        # relay's grant is looked for in what the daemon started
        agents = {p.pid for p in psutil.Process(record.pid).children(recursive=True)}
        agents |= set(processes_with_env("SREZ_AGENT_SOCKET", str(socket))) - {record.pid}
        assert agents, "no agent process found while it waited on its model"
        assert not set(HOST_KEYS.values()) & set(environ_of(record.pid).values())
        token = ""
        for pid in sorted(agents):
            env = environ_of(pid)
            assert not set(HOST_KEYS.values()) & set(env.values()), pid
            assert env.get("SREZ_LLM_API_BASE", "").startswith("http://127.0.0.1:")
            assert env["SREZ_LLM_API_BASE"] != fake_openai.base_url
            token = env["SREZ_LLM_API_KEY"]
        outcome = await run_to_results(
            backend, spec, tmp_path / "scratch", timeout_s=60, handle=handle, launcher=launcher
        )
        assert outcome.handle.finished
        relay = await launcher.relay()
        headers = {"Authorization": f"Bearer {token}"}
        body = {"messages": [{"role": "user", "content": "still there?"}]}
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"{relay.base_url}/chat/completions", json=body, headers=headers) as r,
        ):
            assert r.status == 401  # revoked once the run was seen finished
        dest = outcome.results_dir
        result = json.loads((dest / "result.json").read_text())
        assert result["passed"] is True and result["error_kind"] is None
        summary = json.loads((dest / "summary.json").read_text())
        assert summary["cost_usd"] is not None and summary["cost_usd"] > 0  # priced on the host
        log = (dest / "logs" / "agent.log").read_text()
        assert "litellm imported: False" in log, log[-2000:]
        upstream = {r.headers.get("Authorization") for r in fake_openai.requests}
        assert upstream == {f"Bearer {HOST_KEYS['OPENAI_API_KEY']}"}
        await backend.remove(handle)
    finally:
        launcher.close()
        backend.close()
    assert launcher.models.running is None
