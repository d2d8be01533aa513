"""A docker run's agent reaches nothing outside its container (docs/security.md §5.1, test 59).

Before, every process of a run's container had the bridge: the agent reached the host's services
through the bridge's gateway, every other container on the bridge and the internet, while on
``local`` the same run had an empty network. Now the daemon takes every route from the agent's
user before the agent starts (:mod:`srez_daemon.agent_network`). The run here is a built-in model
agent, the hardest case: it must still reach its model relay (through the socket the daemon
forwards), and it does, while its user, probing from inside the live run, reaches neither a
service on the host nor a neighbour on the bridge nor the internet. The same probes as root (the
daemon's user) reach the host's service and the neighbour: the control, so the probes can fail.
"""

from __future__ import annotations

import asyncio
import errno
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker_kit import Engine, in_agent_phase

from fakes.openai_server import FakeOpenAI, tool_call
from srez_client.backends.base import LaunchSpec
from srez_client.backends.docker.backend import DockerBackend
from srez_client.lifecycle.launch import RunLauncher
from srez_client.lifecycle.run import run_to_results

pytestmark = pytest.mark.docker

PROBE = """
import errno, json, socket, sys
out = {}
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, int(port)))
        out[target] = "connected"
    except OSError as e:
        out[target] = errno.errorcode.get(e.errno, "timeout") if e.errno else "timeout"
    finally:
        s.close()
print(json.dumps(out))
"""


@pytest.fixture
def host_service() -> Iterator[int]:
    """A TCP service on every address of the host (what a developer's database or view is)."""
    server = socket.create_server(("0.0.0.0", 0))  # noqa: S104 - the host service under test
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        server.close()


def probe(container: Any, user: str, targets: list[str]) -> dict[str, str]:
    done = container.exec_run(["/opt/srez/bin/python", "-c", PROBE, *targets], user=user)
    assert done.exit_code == 0, done.output[-2000:]
    return dict(json.loads(done.output))


async def test_sec59_a_docker_runs_agent_reaches_its_relay_and_nothing_else(
    engine: Engine,
    backend: DockerBackend,
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    host_service: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-host-key")
    fake_openai.push(tool_call("get_alerts", {}).after(60))  # the agent waits on its model
    gateway = await backend.host_address()
    neighbour = engine.client.containers.run(
        backend.image, entrypoint=["python3", "-m", "http.server", "8000"], detach=True,
        remove=True, labels=engine.labels,
    )  # fmt: skip
    spec = LaunchSpec(
        task_id="sre-001",
        agent_spec="llm",
        model="openai/fake-model",
        results_root=tmp_path / "results",
        agent_env={"SREZ_LLM_API_BASE": fake_openai.base_url},
    )
    launcher = RunLauncher(backend)
    try:
        neighbour.reload()
        targets = [
            f"{gateway}:{host_service}",  # the host, through the bridge's gateway
            f"{neighbour.attrs['NetworkSettings']['IPAddress']}:8000",  # a neighbour
            "192.0.2.10:80",  # the internet (TEST-NET-1: never answers, so only a refusal is fast)
        ]
        handle, container = await in_agent_phase(engine, launcher, spec, fake_openai)
        agent = await asyncio.to_thread(probe, container, "agent", targets)
        root = await asyncio.to_thread(probe, container, "root", targets[:2])
        await launcher.stop(handle)
        outcome = await run_to_results(
            backend, spec, tmp_path / "scratch", handle=await backend.get(handle.run_id),
            launcher=launcher,
        )  # fmt: skip
    finally:
        launcher.close()
        neighbour.kill()
    assert agent == dict.fromkeys(targets, errno.errorcode[errno.EACCES]), agent
    assert root == dict.fromkeys(targets[:2], "connected"), root  # the control
    assert outcome.summary is not None
    await backend.remove(outcome.handle)
