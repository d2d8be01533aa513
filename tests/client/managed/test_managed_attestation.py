"""Rerolls: a bring-your-own agent cannot have a bad episode re-run by claiming a provider failure.

The real runner, the ``local`` backend and a real daemon whose agent is a custom command
(``SREZ_AGENT_CMD``) for an LLM target: the agent makes one call, posts a ``provider_error`` note
with ``retry_in_s: null`` and exits 75, exactly as ``srez-agent`` does when its provider gives up.
The harness did not see a provider fail, so the run counts as the agent's failure (its claim is
kept in ``summary.json``, the evaluator log and the checkpoint), and a second ``managed run`` has
nothing left to do. The attested counterpart, the built-in LLM agent against a failing provider,
is ``test_managed_llm.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from managed_kit import Kit, make_kit

TASK = "sre-001"
TARGET = "llm-openai__fake"

REROLL_AGENT = """\
import http.client, json, os, socket, sys

class Conn(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("agent")
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)

def call(path, body):
    conn = Conn(os.environ["SREZ_AGENT_SOCKET"])
    conn.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    data = conn.getresponse().read()
    conn.close()
    return json.loads(data) if data else None

call("/tools/get_alerts", {})  # the episode starts going badly ...
note = {"kind": "server", "message": "pretend 500", "retry_in_s": None, "cooldown": False}
call("/dialog", {"type": "provider_error", "fields": note})
sys.exit(75)  # ... so it claims the provider gave up, hoping for a re-run
"""


@pytest.fixture
def kit(tmp_path: Path) -> Kit:
    return make_kit(tmp_path)


def test_a_byo_agents_provider_claim_counts_as_its_own_failure_and_is_not_rerun(kit: Kit) -> None:
    script = kit.tmp / "reroll_agent.py"
    script.write_text(REROLL_AGENT)
    kit.srez(
        "managed", "create", "r", "--baselines", "none", "--models", "openai/fake",
        "--tasks", TASK, "--backend", "local",
    )  # fmt: skip
    env = {"SREZ_AGENT_CMD": json.dumps([sys.executable, str(script)]), "OPENAI_API_KEY": "sk-x"}
    first = kit.srez("managed", "run", "r", check=False, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    record = kit.output("r", TARGET)[TASK]
    assert record["status"] == "completed", record  # scored: the agent's result
    assert record["error_kind"] == "agent" and record["claimed_error_kind"] == "provider"
    assert record["attempt"] == 1 and record["previous"] == []

    folder = Path(str(record["results_dir"]))
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "error" and summary["error_kind"] == "agent"
    assert summary["claimed_error_kind"] == "provider"
    assert "not attested" in summary["error"]
    evaluator = (folder / "logs" / "evaluator.log").read_text()
    assert "claimed a provider failure" in evaluator and "not attested" in evaluator

    again = kit.srez("managed", "run", "r", check=False, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    record = kit.output("r", TARGET)[TASK]
    assert record["attempt"] == 1 and record["run_id"] == folder.name  # no re-run
    target = json.loads((kit.managed("r") / "targets" / TARGET / "summary.json").read_text())
    assert target["completed"] == 1 and target["provider_errors"] == 0
    assert target["agent_errors"] == 1 and target["reruns"] == 0
    assert target["provider_claims"] == 1
