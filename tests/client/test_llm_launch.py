"""Launching LLM runs: ``LaunchSpec.agent_env`` takes SREZ_LLM_* only, and the local backend passes
it (with the model relay's grant, never a provider credential) to the daemon of a run with a
model, never to a baseline run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from fakes.expert import expert_replies
from fakes.openai_server import FakeOpenAI
from srez_client.backends.base import LaunchSpec
from srez_client.backends.inline.host import run_inline
from srez_client.backends.local.environment import daemon_environment
from srez_daemon.supervisor import agent_environment
from srez_env.agents import AgentSpecError
from srez_env.tasks import load_tasks


def test_agent_env_accepts_llm_settings_only(tmp_path: Path) -> None:
    spec = LaunchSpec(
        task_id="sre-007", agent_spec="llm", model="openai/x", results_root=tmp_path,
        agent_env={"SREZ_LLM_COST_CAP_USD": "0.5"},
    )  # fmt: skip
    assert spec.agent_env == {"SREZ_LLM_COST_CAP_USD": "0.5"}
    with pytest.raises(ValidationError, match="SREZ_LLM_"):
        LaunchSpec(
            task_id="sre-007", agent_spec="llm", results_root=tmp_path,
            agent_env={"OPENAI_API_KEY": "sk"},
        )  # fmt: skip


def test_local_daemon_gets_no_credentials_only_the_relay_grant_of_a_run_with_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("SREZ_LLM_TIMEOUT_S", "9")
    monkeypatch.setenv("UNRELATED_SECRET", "x")
    state = tmp_path / "state"
    llm = LaunchSpec(
        task_id="sre-007", agent_spec="llm", model="openai/x", results_root=tmp_path,
        agent_env={"SREZ_LLM_TIMEOUT_S": "3"},
    )  # fmt: skip
    grant = {"SREZ_LLM_TIMEOUT_S": "3", "SREZ_LLM_API_KEY": "relay-token"}
    env = daemon_environment(tmp_path, llm.model_copy(update={"model_env": grant}), state)
    assert "OPENAI_API_KEY" not in env and env["SREZ_LLM_TIMEOUT_S"] == "3"
    assert env["SREZ_LLM_API_KEY"] == "relay-token" and "UNRELATED_SECRET" not in env
    baseline = LaunchSpec(task_id="sre-007", agent_spec="heuristic", results_root=tmp_path)
    assert "SREZ_LLM_API_KEY" not in daemon_environment(
        tmp_path, baseline.model_copy(update={"model_env": grant}), state
    )
    assert "OPENAI_API_KEY" not in daemon_environment(tmp_path, baseline, state)
    # a custom command with a model (no relay grant: it may speak its provider's own protocol)
    custom = LaunchSpec(
        task_id="sre-007", agent_spec="cmd:mine", model="openai/x", results_root=tmp_path,
        agent_env={"SREZ_LLM_TIMEOUT_S": "3"},
    )  # fmt: skip
    env = daemon_environment(tmp_path, custom, state)
    assert env["OPENAI_API_KEY"] == "sk-test" and env["SREZ_LLM_TIMEOUT_S"] == "3"


def test_agent_environment_forwards_model_variables_by_pattern(tmp_path: Path) -> None:
    daemon_env = {
        "PATH": "/bin",
        "OPENAI_API_KEY": "k",
        "ANTHROPIC_API_BASE": "http://b",
        "OLLAMA_HOST": "h",
        "AZURE_API_VERSION": "v",
        "SREZ_LLM_COST_CAP_USD": "1",
        "SREZ_TOKEN_FILE": "/secret",
        "AWS_SECRET": "no",
        "openai_api_key": "lower case is not forwarded",
    }
    env = agent_environment(daemon_env, tmp_path / "s", {"SREZ_MODEL": "openai/x"})
    assert {"OPENAI_API_KEY", "ANTHROPIC_API_BASE", "OLLAMA_HOST", "AZURE_API_VERSION"} <= set(env)
    assert env["SREZ_LLM_COST_CAP_USD"] == "1"
    assert not {"SREZ_TOKEN_FILE", "AWS_SECRET", "openai_api_key"} & set(env)
    baseline = agent_environment(daemon_env, tmp_path / "s", {"SREZ_MODEL": "none"})
    assert "OPENAI_API_KEY" not in baseline and "SREZ_LLM_COST_CAP_USD" not in baseline


def test_inline_refuses_llm_agents_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(AgentSpecError, match="--backend local"):
        run_inline(load_tasks(["sre-007"])[0], "llm", 0, tmp_path)
    assert not any(tmp_path.iterdir())


SREZ = Path(sys.executable).parent / "srez"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "--task", "sre-001", "--agent", "llm"], "needs --model SLUG"),
        (["run", "--task", "sre-001", "--agent", "scripted", "--model", "openai/x"], "only for"),
        (["run", "--task", "sre-001", "--agent", "llm", "--model", "gpt4"], "not a model slug"),
        (["eval", "--agent", "llm-json", "--tasks", "sre-001"], "needs --model SLUG"),
        (["eval", "--agent", "llm", "--model", "openai/x", "--tasks", "sre-001"], "not inline"),
    ],
)
def test_model_flag_errors_are_one_line(tmp_path: Path, argv: list[str], says: str) -> None:
    env = {**os.environ, "SREZ_STATE": str(tmp_path / "state")}
    done = subprocess.run([str(SREZ), *argv], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("srez: error:") and says in done.stderr
    assert done.stderr.count("\n") == 1


def test_srez_run_an_llm_agent_on_local_end_to_end(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.push(*expert_replies("sre-001"))
    run_env = {
        **os.environ,
        "SREZ_STATE": str(tmp_path / "state"),
        "SREZ_LLM_API_BASE": fake_openai.base_url,
        "OPENAI_API_KEY": "sk-fake",
    }
    argv = ["run", "--task", "sre-001", "--agent", "llm", "--model", "openai/fake"]
    done = subprocess.run(
        [str(SREZ), *argv, "--results", str(tmp_path / "results")],
        capture_output=True,
        text=True,
        env=run_env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (folder,) = (tmp_path / "results" / "sre-001" / "openai__fake" / "llm").iterdir()
    result = json.loads((folder / "result.json").read_text())
    assert result["passed"] is True and result["error_kind"] is None
    assert fake_openai.pending == 0
