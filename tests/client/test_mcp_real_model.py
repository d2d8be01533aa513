"""``--agent mcp:NAME`` driven by a real model: an MCP client (``tests/fakes/mcp_model_agent.py``)
whose every next call is chosen by llama.cpp's own server serving SmolLM2-135M-Instruct
(``bench/llama_server.py``), plays a ``local`` run in its sandbox through ``srez mcp``.

``srez mcp`` takes no model of its own (its client is the model), so this is the MCP path with a
real model: the server's tools go to the model as the reply's schema, the model's calls come back
through MCP into the episode, step by step, and the run is graded. The client keeps the network
(a custom agent given a model calls its provider itself), which is how it reaches the server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bench.llama_server import LlamaServer
from mcp_kit import SREZ, grade_of, tool_record

from srez_env.actions import TOOLS

AGENT = Path(__file__).resolve().parents[1] / "fakes" / "mcp_model_agent.py"
TASK = "sre-001"
CALLS = 3


@pytest.mark.usefixtures("bwrap")
def test_an_mcp_client_driven_by_a_real_model_plays_a_graded_local_run(
    llama: LlamaServer, tmp_path: Path
) -> None:
    pytest.importorskip("mcp")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SREZ_", "PYTEST"))}
    results = tmp_path / "results"
    agent_cmd = f"{sys.executable} {AGENT} {{mcp_config}} {llama.base_url} smollm2 {CALLS}"
    done = subprocess.run(
        [
            str(SREZ), "run", "--task", TASK, "--backend", "local", "--agent", "mcp:smol",
            "--model", "openai/smollm2", "--agent-cmd", agent_cmd, "--results", str(results),
        ],
        env={**env, "SREZ_STATE": str(tmp_path / "state")}, cwd=tmp_path,
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = (results / TASK / "openai__smollm2" / "smol").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    assert (manifest["agent_spec"], manifest["model"]) == ("mcp:smol", "openai/smollm2")
    assert manifest["isolation"] == "bubblewrap"
    facts = [
        json.loads(line)
        for line in (run_dir / "logs" / "agent.log").read_text().splitlines()
        if line.startswith("{")
    ]
    assert facts[0] == {"tools": sorted(TOOLS)}, facts[0]
    chosen = [f for f in facts[1:] if f.get("model_reply")]
    # the schema holds the real model to the server's tools: every reply is one call of them
    assert not [f for f in facts if "unparsed" in f], facts
    assert len(chosen) == CALLS and all(f["tool"] in TOOLS for f in chosen), facts
    assert facts[-1] == {"tool": "submit", "model_reply": False}
    # each call went through MCP into the episode, in order, and the run was graded
    calls = [entry[1] for entry in tool_record(run_dir) if entry[0] == "call"]
    assert calls == [f["tool"] for f in facts[1:]], (calls, facts)
    grade = grade_of(run_dir)
    assert grade["task_id"] == TASK and set(grade["checks"]) == {
        "valid",
        "func",
        "safe",
        "intent",
        "rca",
    }
