"""Rerolls: a bring-your-own agent cannot have a bad episode re-run by claiming a provider failure.

A custom command is an agent of its own (``cmd:NAME``), so it cannot stand in for a managed LLM
target: with ``SREZ_AGENT_CMD`` set, the target's launch is refused and recorded as a failure,
and nothing is filed under the model's ``llm`` folder. Run as ``srez run --agent cmd:NAME``, a
custom agent that makes one call, posts a ``provider_error`` note with ``retry_in_s: null`` and
exits 75 (exactly as ``srez-agent`` does when its provider gives up) is recorded as the agent's
failure: the harness did not see a provider fail (its claim is kept in ``summary.json`` and the
evaluator log). The attested counterpart, the built-in LLM agent against a failing provider, is
``test_managed_llm.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from managed_kit import Kit, make_kit

from fakes.socket_agent import agent_script

TASK = "sre-001"
TARGET = "llm-openai__fake"

REROLL_AGENT = agent_script(
    """
    call("POST", "/tools/get_alerts", {})  # the episode starts going badly ...
    note = {"kind": "server", "message": "pretend 500", "retry_in_s": None, "cooldown": False}
    call("POST", "/dialog", {"type": "provider_error", "fields": note})
    sys.exit(75)  # ... so it claims the provider gave up, hoping for a re-run
    """
)


@pytest.fixture
def kit(tmp_path: Path) -> Kit:
    return make_kit(tmp_path)


def test_a_custom_command_cannot_run_as_a_managed_llm_target(kit: Kit) -> None:
    script = kit.tmp / "reroll_agent.py"
    script.write_text(REROLL_AGENT)
    kit.srez(
        "managed", "create", "r", "--baselines", "none", "--models", "openai/fake",
        "--tasks", TASK, "--backend", "local",
    )  # fmt: skip
    env = {"SREZ_AGENT_CMD": json.dumps([sys.executable, str(script)]), "OPENAI_API_KEY": "sk-x"}
    kit.srez("managed", "run", "r", check=False, env=env)
    record = kit.output("r", TARGET)[TASK]
    assert record["status"] == "failed", record  # refused at launch: it never ran
    assert "SREZ_AGENT_CMD is set" in json.dumps(record), record
    assert not list(kit.results.glob(f"{TASK}/**/llm/*"))


def test_a_custom_agents_provider_claim_counts_as_its_own_failure(kit: Kit) -> None:
    script = kit.tmp / "reroll_agent.py"
    script.write_text(REROLL_AGENT)
    proc = kit.srez(
        "run", "--task", TASK, "--agent", "cmd:reroll", "--agent-cmd",
        f"{sys.executable} {script}", "--model", "openai/fake",
        "--results", str(kit.results), check=False, OPENAI_API_KEY="sk-x",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-2000:]  # a graded run with an error
    (folder,) = (kit.results / TASK / "openai__fake" / "reroll").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "error" and summary["error_kind"] == "agent"
    assert summary["claimed_error_kind"] == "provider"
    assert "not attested" in summary["error"]
    evaluator = (folder / "logs" / "evaluator.log").read_text()
    assert "claimed a provider failure" in evaluator and "not attested" in evaluator
