"""Held-out task sets on the ``docker`` backend: ``srez eval --tasks-dir SET --agent llm`` solves a
held-out task in a container through the model relay, with the set named in its provenance; and
the agent's user finds neither the task file the host put into the container nor its ground truth
(docs/security.md §4.8 test 49).

The docker backend runs no ``cmd:`` agent, so the thief (``tests/fakes/heldout_thief.py``) runs as
the run's agent user (uid 1001) inside the live run's container, during its agent phase, with the
agent's view of the file system: what any agent process of that run could do. As root, the same
probes find the task file (the control: they can fail).
"""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from client_helpers import HeldOut, held_out_set
from docker_kit import Engine, in_agent_phase

from fakes.expert import expert_replies
from fakes.openai_server import FakeOpenAI, tool_call
from srez_client.backends.base import LaunchSpec
from srez_client.backends.docker.backend import DockerBackend
from srez_client.backends.docker.state import container_name
from srez_client.lifecycle.launch import RunLauncher
from srez_client.lifecycle.run import run_to_results
from srez_client.task_sets import folder_set

pytestmark = pytest.mark.docker

THIEF = Path(__file__).resolve().parents[1] / "fakes" / "heldout_thief.py"


@pytest.fixture(scope="module")
def held_out(tmp_path_factory: pytest.TempPathFactory) -> HeldOut:
    return held_out_set(tmp_path_factory.mktemp("held-out") / "set", 5151, 2)


def test_an_llm_evaluates_a_held_out_set_on_docker(
    engine: Engine,
    held_out: HeldOut,
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-host-key")
    monkeypatch.setenv("SREZ_LLM_API_BASE", fake_openai.base_url)  # the relay's upstream
    task = held_out.first
    fake_openai.push(*expert_replies(task))
    results = tmp_path / "results"
    done = engine.srez(
        tmp_path / "state", "eval", "--backend", "docker", "--agent", "llm",
        "--model", "openai/fake-model", "--tasks-dir", str(held_out.folder), "--tasks", task.id,
        "--no-floors", "--json", "--results", str(results), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = json.loads(done.stdout)["runs"]
    assert (row["status"], row["resolved"], row["reward"]) == ("ok", True, 1.0), row
    assert row["provenance"]["task_set_digest"] == held_out.digest
    (run_json,) = results.glob("*/*/*/*/run.json")
    manifest = json.loads(run_json.read_text())
    assert (manifest["backend"], manifest["isolation"]) == ("docker", "container")
    assert (manifest["task_id"], manifest["task_set_digest"]) == (task.id, held_out.digest)
    assert task.incident.brief.split("\n")[0][:60] in json.dumps(fake_openai.requests[0].messages)
    assert list(results.rglob("task.json")) == []  # the task went in, and no further
    gone = engine.client.containers.list(
        all=True, filters={"name": container_name(manifest["run_id"])}
    )
    assert gone == []  # and the container that held it went with the run


def probe(container: Any, task_id: str, user: str) -> dict[str, Any]:
    """The thief's probes, run as ``user`` in ``container``."""
    argv = ["python", "/tmp/thief.py", "probe", task_id, "/run/srez", "/srez"]  # noqa: S108
    done = container.exec_run(argv, user=user)
    assert done.exit_code == 0, done.output[-2000:]
    return dict(json.loads(done.output))


def copy_thief(container: Any) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = THIEF.read_bytes()
        info = tarfile.TarInfo("thief.py")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    assert container.put_archive("/tmp", buffer.getvalue())  # noqa: S108


async def test_the_agent_user_of_a_held_out_run_finds_no_task_file(
    engine: Engine,
    backend: DockerBackend,
    held_out: HeldOut,
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-host-key")
    fake_openai.push(tool_call("get_alerts", {}).after(60))  # the agent waits on its model
    task = held_out.first
    spec = LaunchSpec(
        task_id=task.id,
        agent_spec="llm",
        model="openai/fake-model",
        results_root=tmp_path / "results",
        agent_env={"SREZ_LLM_API_BASE": fake_openai.base_url},
        task_file=folder_set(held_out.folder).task_file(task),
    )
    launcher = RunLauncher(backend)
    try:
        handle, container = await in_agent_phase(engine, launcher, spec, fake_openai)
        copy_thief(container)
        stolen = await asyncio.to_thread(probe, container, task.id, "agent")
        control = await asyncio.to_thread(probe, container, task.id, "root")
        await launcher.stop(handle)
        outcome = await run_to_results(
            backend, spec, tmp_path / "scratch", handle=await backend.get(handle.run_id),
            launcher=launcher,
        )  # fmt: skip
    finally:
        launcher.close()
    assert stolen["files_walked"] > 1000  # it looked everywhere the agent user can see
    assert any(p["path"] == "/run/srez/task.json" for p in stolen["probes"])  # and there
    assert stolen["readable"] == [] and not any(p.get("secret") for p in stolen["probes"])
    # the control: root reads the task the host put in, ground truth and all
    assert {p["path"] for p in control["readable"] if p.get("secret")} == {"/run/srez/task.json"}
    manifest = json.loads((outcome.results_dir / "run.json").read_text())
    assert (manifest["task_id"], manifest["task_set_digest"]) == (task.id, held_out.digest)
    assert outcome.summary is not None and outcome.summary.provenance is not None
    assert outcome.summary.provenance.task_set_digest == held_out.digest
    await backend.remove(outcome.handle)
