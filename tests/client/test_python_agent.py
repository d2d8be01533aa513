"""A Python agent by import path, ``--agent package.module:AgentClass``: inline, local, refused on
docker, and a one-line error for each way it can be wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from srez_client.cli import main
from srez_env.agents import build_agent
from srez_env.agents.python_agent import PythonAgentError, import_path

AGENT = """
class Prober:
    name = "prober"

    def __init__(self, run_seed=0, task_id=""):
        self.steps, self.seed, self.task_id = 0, run_seed, task_id

    def act(self, observation):
        self.steps += 1
        if self.steps == 1:
            return {"tool": "get_status", "args": {"service": "db"}}
        return {"tool": "submit", "args": {}}


class Nameless(Prober):
    name = ""


class Impostor(Prober):
    name = "scripted"


class Mute:
    name = "mute"
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module of agents in the current folder (not on sys.path)."""
    name = f"my_agents_{os.getpid()}_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    yield name
    sys.modules.pop(name, None)
    while str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


def test_import_path_specs() -> None:
    assert import_path("pkg.mod:Agent") == ("pkg.mod", "Agent")
    assert import_path("replay:moves") is None and import_path("cmd:mine") is None
    assert import_path("scripted") is None and import_path("pkg/mod:Agent") is None


def test_python_agent_runs_inline_under_its_own_name(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = build_agent(f"{module}:Prober", task_id="sre-001", run_seed=3)
    assert (agent.name, agent.seed, agent.task_id) == ("prober", 3, "sre-001")  # type: ignore[attr-defined]
    results = tmp_path / "results"
    argv = ["eval", "--agent", f"{module}:Prober", "--tasks", "sre-001", "--results", str(results)]
    assert main([*argv, "--detail"]) == 0
    (run,) = (results / "sre-001" / "none" / "prober").iterdir()
    manifest = json.loads((run / "run.json").read_text())
    assert (manifest["agent"], manifest["agent_spec"]) == ("prober", f"{module}:Prober")
    assert json.loads((run / "summary.json").read_text())["steps"] == 2
    assert capsys.readouterr().out.splitlines()[-1].split() == ["prober", "1", "0", "0.000", "0"]


@pytest.mark.parametrize(
    ("cls", "needle"),
    [
        ("Missing", "has no class 'Missing'"),
        ("Nameless", "agent name 'nameless'"),  # falls back to the class name: accepted
        ("Impostor", "is a built-in agent's"),
        ("Mute", "has no act(observation) method"),
    ],
)
def test_python_agent_errors_are_one_line(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], cls: str, needle: str
) -> None:
    argv = ["eval", "--agent", f"{module}:{cls}", "--tasks", "sre-001", "--results", str(tmp_path)]
    status = main(argv)
    err = capsys.readouterr().err
    if cls == "Nameless":
        assert status == 0 and (tmp_path / "sre-001" / "none" / "nameless").is_dir()
        return
    assert status == 2 and err.startswith("srez: error: ") and err.count("\n") == 1, err
    assert needle in err


def test_python_agent_missing_module_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(PythonAgentError, match="no module 'no_such_mod_xyz'"):
        build_agent("no_such_mod_xyz:Agent", task_id="sre-001")
    assert main(["eval", "--agent", "no_such_mod_xyz:Agent", "--tasks", "sre-001"]) == 2
    assert "no module 'no_such_mod_xyz'" in capsys.readouterr().err


def test_python_agent_runs_on_local_in_its_sandbox(module: str, tmp_path: Path) -> None:
    env = {**os.environ, "SREZ_STATE": str(tmp_path / "state")}
    results = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "srez_client.cli", "eval", "--agent", f"{module}:Prober",
         "--tasks", "sre-001", "--backend", "local", "--results", str(results)],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run,) = (results / "sre-001" / "none" / "prober").iterdir()
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["steps"]) == ("ok", 2), (
        run / "logs" / "agent.log"
    ).read_text()


def test_python_agent_is_refused_on_docker_with_a_reason(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "--agent", f"{module}:Prober", "--tasks", "sre-001", "--backend", "docker"]
    assert main([*argv, "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "runs on --backend inline or local" in err
