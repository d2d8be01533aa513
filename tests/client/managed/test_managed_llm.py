"""An LLM target of a managed run, end to end: the real runner, the ``local`` backend, the real
LLM agent and litellm against the fake OpenAI-compatible server.

The first attempt meets a provider that keeps failing: the task ends with ``error_kind:
provider`` (attested: the built-in agent saw the provider fail) and is recorded as a provider
error, not as the model's failure and not counted. The resume re-runs it (attempt 2) against a
provider that answers with the expert's tool calls, and only that attempt is scored; both
attempts stay in ``output.json`` and the summaries count the re-run. The budget ledger holds both attempts' reservations, settled.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from managed_kit import Kit, make_kit

from fakes.expert import expert_replies
from fakes.openai_server import FakeOpenAI, error
from srez_client.managed.ledger import BudgetLedger

TASK = "sre-001"
TARGET = "llm-openai__fake"


@pytest.fixture
def kit(tmp_path: Path) -> Kit:
    return make_kit(tmp_path)


def test_a_provider_error_is_retried_on_resume_and_never_counted(
    kit: Kit, fake_openai: FakeOpenAI
) -> None:
    kit.srez(
        "managed",
        "create",
        "m",
        "--baselines",
        "none",
        "--models",
        "openai/fake",
        "--tasks",
        TASK,
        "--backend",
        "local",
        "--daily-budget-usd",
        "5",
        "--cost-cap-usd",
        "0.5",
    )
    llm_env = {
        "SREZ_LLM_API_BASE": fake_openai.base_url,
        "OPENAI_API_KEY": "sk-fake",
        "SREZ_LLM_MAX_ATTEMPTS": "2",
        "SREZ_LLM_BACKOFF_S": "0.01",
        "SREZ_LLM_BACKOFF_MAX_S": "0.05",
        "SREZ_LLM_INPUT_COST_PER_TOKEN": "0.000001",
        "SREZ_LLM_OUTPUT_COST_PER_TOKEN": "0.000002",
        "SREZ_TODAY": "2026-03-01",
    }
    fake_openai.push(error(500), error(500))
    first = kit.srez("managed", "run", "m", check=False, env=llm_env)
    record = kit.output("m", TARGET)[TASK]
    assert record["status"] == "provider_error", (record, first.stderr[-2000:])
    assert first.returncode == 0, first.stderr[-2000:]  # the queue ran; the task awaits a retry

    fake_openai.push(*expert_replies(TASK))
    second = kit.srez("managed", "run", "m", check=False, env=llm_env)
    assert second.returncode == 0, second.stderr[-2000:]
    record = kit.output("m", TARGET)[TASK]
    assert record["status"] == "completed" and record["attempt"] == 2
    assert record["reward"] == 1.0
    assert record["cost_usd"] > 0
    assert record["error_kind"] is None and record["claimed_error_kind"] is None
    # the first attempt stays visible, with its own results folder, as the provider error it was
    previous = record["previous"]
    assert isinstance(previous, list)
    (earlier,) = previous
    assert earlier["attempt"] == 1 and earlier["status"] == "provider_error"
    assert earlier["error_kind"] == "provider" and earlier["claimed_error_kind"] is None
    assert earlier["run_id"] not in (None, record["run_id"])
    assert Path(earlier["results_dir"], "summary.json").is_file()
    target_file = kit.managed("m") / "targets" / TARGET / "summary.json"
    assert json.loads(target_file.read_text())["reruns"] == 1
    combined = json.loads((kit.managed("m") / "summary.json").read_text())
    assert combined["reruns"] == 1 and combined["targets"][0]["reruns"] == 1
    markdown = (kit.managed("m") / "summary.md").read_text()
    assert "re-runs" in markdown and "Re-runs, all targets: 1." in markdown

    status = json.loads(kit.srez("managed", "status", "m", "--json", **llm_env).stdout)
    (target,) = [t for t in status["targets"] if t["target"] == TARGET]
    assert target["completed"] == 1 and target["state"] == "done"
    assert target["provider_errors"] == 0 and target["provider_error_attempts"] == 1
    view = BudgetLedger(kit.state / "budget").view("2026-03-01")
    assert view.outstanding_usd == 0.0 and len(view.reserved_keys) == 2
    assert 0 < view.spent_usd <= 2 * 0.5


def test_a_provider_outage_pauses_the_queue_until_its_cooldown_is_over(
    kit: Kit, fake_openai: FakeOpenAI
) -> None:
    tasks = ["sre-001", "sre-002", "sre-003", "sre-004"]
    kit.srez(
        "managed", "create", "o", "--baselines", "none", "--models", "openai/fake",
        "--tasks", ",".join(tasks), "--backend", "local",
    )  # fmt: skip
    llm_env = {
        "SREZ_LLM_API_BASE": fake_openai.base_url,
        "OPENAI_API_KEY": "sk-fake",
        "SREZ_LLM_MAX_ATTEMPTS": "1",
        "SREZ_PROVIDER_COOLDOWN_S": "3600",
    }
    fake_openai.push(error(503), error(503), error(503))
    first = kit.srez("managed", "run", "o", check=False, env=llm_env)
    assert first.returncode == 75, first.stderr[-2000:]  # paused, not through
    pause = json.loads((kit.managed("o") / "PAUSE").read_text())
    assert pause["reason"] == "provider"
    records = kit.output("o", TARGET)
    assert [records[t]["status"] for t in tasks[:3]] == ["provider_error"] * 3
    assert tasks[3] not in records  # the outage did not burn the rest of the queue
    # within the cooldown it stays paused; after it, the run goes on and retries all four
    assert kit.srez("managed", "run", "o", check=False, env=llm_env).returncode == 75
    for task in tasks:
        fake_openai.push(*expert_replies(task))
    after = kit.srez("managed", "run", "o", env={**llm_env, "SREZ_PROVIDER_COOLDOWN_S": "0"})
    assert after.returncode == 0
    records = kit.output("o", TARGET)
    assert {t: records[t]["status"] for t in tasks} == dict.fromkeys(tasks, "completed")
    assert not (kit.managed("o") / "PAUSE").exists()
