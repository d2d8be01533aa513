"""``--agent mcp:NAME``: any MCP client as the agent under test (issue 14). The launcher's
configuration is read by what real clients read (JSON, TOML), and a small MCP client agent of
ours (``tests/fakes/mcp_agent.py``) plays the expert's trajectory through ``srez run --backend
local``, in the sandbox, grading as ``srez eval`` (inline) does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from client_helpers import one_line_error
from mcp_kit import SREZ, TASK, expert, grade_of, inline_reference, tool_record

from srez_client.agent_command import agent_command
from srez_client.integrations.mcp.agent_kind import (
    LAUNCH_MODULE,
    config_json,
    config_toml,
    fill,
    server_spec,
)
from srez_env.actions import TOOLS

AGENT = Path(__file__).resolve().parents[1] / "fakes" / "mcp_agent.py"


def test_the_server_spec_is_srez_mcp_on_the_socket_in_json_and_toml() -> None:
    environ = {"PYTHONPATH": "/code/a:/code/b", "OPENAI_API_KEY": "sk-not-passed", "HOME": "/h"}
    spec = server_spec("/venv/bin/python", "/run/srez/agent.sock", environ)
    server = json.loads(config_json(spec))["mcpServers"]["srez"]
    assert server == {
        "command": "/venv/bin/python",
        "args": ["-m", "srez_client.integrations.mcp", "--socket", "/run/srez/agent.sock"],
        "env": {"PYTHONPATH": "/code/a:/code/b"},
    }
    assert tomllib.loads(f"srez = {config_toml(spec)}")["srez"] == server
    odd = server_spec('/p "q"\\', "/s", {"PYTHONPATH": "ä\n"})  # quotes, escapes, non-ASCII
    assert (
        tomllib.loads(f"s = {config_toml(odd)}")["s"]
        == json.loads(config_json(odd))["mcpServers"]["srez"]
    )


def test_placeholders_are_filled_inside_arguments_and_other_braces_kept() -> None:
    values = {"mcp_config": "/tmp/c.json", "prompt": "fix it", "mcp_toml": "{ a = 1 }"}
    command = ["claude", "-p", "{prompt}", "--mcp-config={mcp_config}", '{"json": 1}', "{other}"]
    assert fill(command, values) == [
        "claude", "-p", "fix it", "--mcp-config=/tmp/c.json", '{"json": 1}', "{other}",
    ]  # fmt: skip
    assert fill(["-c", "mcp_servers.srez={mcp_toml}"], values) == [
        "-c",
        "mcp_servers.srez={ a = 1 }",
    ]


def test_an_mcp_agent_runs_its_command_behind_the_launcher(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("")
    argv = agent_command("mcp:my-client", ["python3", "agent.py", "{mcp_config}"], {}, cwd=tmp_path)
    assert argv == (
        sys.executable, "-m", LAUNCH_MODULE, "--",
        "python3", str(tmp_path / "agent.py"), "{mcp_config}",
    )  # fmt: skip
    assert agent_command("cmd:my-client", ["python3", "agent.py"], {}, cwd=tmp_path) == (
        "python3",
        str(tmp_path / "agent.py"),
    )


def srez(state: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SREZ_AGENT_CMD"}
    return subprocess.run(
        [str(SREZ), *args], capture_output=True, text=True, env={**env, "SREZ_STATE": str(state)},
        cwd=cwd, check=False, timeout=300,
    )  # fmt: skip


@pytest.mark.usefixtures("bwrap")
def test_an_mcp_client_agent_plays_a_local_run_in_its_sandbox_like_inline_eval(
    tmp_path: Path,
) -> None:
    pytest.importorskip("mcp")
    actions = expert()
    (tmp_path / "actions.jsonl").write_text("".join(json.dumps(a) + "\n" for a in actions))
    reference = inline_reference(tmp_path / "inline", actions)
    results = tmp_path / "results"
    proc = srez(
        tmp_path / "state",
        "run", "--task", TASK, "--backend", "local", "--agent", "mcp:replayer",
        "--agent-cmd", f"{sys.executable} {AGENT} {{mcp_config}} actions.jsonl",
        "--results", str(results),
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (results / TASK / "none" / "replayer").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["isolation"] == "bubblewrap"
    assert manifest["agent_spec"] == "mcp:replayer"
    assert manifest["agent_cmd"][:4] == [sys.executable, "-m", LAUNCH_MODULE, "--"]
    assert tool_record(run_dir) == tool_record(reference)
    assert {k: v for k, v in grade_of(run_dir).items() if k != "agent"} == {
        k: v for k, v in grade_of(reference).items() if k != "agent"
    }
    assert grade_of(run_dir)["reward"]["total"] == 1.0
    facts = [
        json.loads(line)
        for line in (run_dir / "logs" / "agent.log").read_text().splitlines()
        if line.startswith("{")
    ]
    assert facts[0]["prompt_is_instructions"] is True and len(facts[0]["tools"]) == len(TOOLS)
    assert [f["tool"] for f in facts[1:]] == [a["tool"] for a in actions][: len(facts) - 1]


def test_an_mcp_agent_needs_its_command_and_a_name_of_its_own(tmp_path: Path) -> None:
    for args, needle in (
        (["--agent", "mcp:replayer"], "needs its command"),
        (["--agent", "mcp:scripted", "--agent-cmd", "true"], "built-in agent's"),
        (["--agent", "mcp:replayer", "--agent-cmd", "true", "--backend", "docker"], "local"),
    ):
        proc = srez(tmp_path / "state", "run", "--task", TASK, *args, cwd=tmp_path)
        one_line_error(proc, needle)
