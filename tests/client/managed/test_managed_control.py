"""docs/security.md §4 test 42 (pause, stop, resume, budget) with the real runner process."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from managed_kit import (
    Kit,
    baseline_queue,
    make_kit,
    results_dirs,
    running_local_runs,
    wait_for,
)

from srez_client.managed.ledger import BudgetLedger

TASKS = "sre-001,sre-002,sre-003"


@pytest.fixture
def kit(tmp_path: Path) -> Kit:
    return make_kit(tmp_path)


def start_until_in_flight(
    kit: Kit, name: str, task: str, *, agent_delay_s: float
) -> subprocess.Popen[str]:
    """Create the scripted queue ``name`` over :data:`TASKS` on ``local``, start its runner with
    every agent sleeping ``agent_delay_s`` first, and return the runner once ``task`` has a run."""
    kit.srez("managed", *baseline_queue(name, TASKS, "local"))
    runner = kit.runner(name, env=kit.slow(agent_delay_s))
    wait_for(
        f"{task} in flight",
        lambda: kit.output(name, "scripted").get(task, {}).get("run_id") is not None,
    )
    return runner


def test_managed_pause_during_task_k_finishes_k_and_starts_nothing(kit: Kit) -> None:
    # task 2 must still be running when the pause lands: 3 s covers a slow `srez` start
    runner = start_until_in_flight(kit, "p", "sre-002", agent_delay_s=3.0)
    kit.srez("managed", "pause", "p")
    assert runner.wait(60) == 75, kit.runner_err()
    records = kit.output("p", "scripted")
    assert records["sre-002"]["status"] == "completed"  # task k finished and was checkpointed
    assert "sre-003" not in records  # nothing started after the pause
    assert not list(kit.results.glob("sre-003/**/scripted/*"))
    assert json.loads((kit.managed("p") / "PAUSE").read_text())["reason"] == "user"
    # a paused run does not start until the pause is cleared
    assert kit.srez("managed", "run", "p", check=False).returncode == 75
    kit.srez("managed", "clear-pause", "p")
    kit.srez("managed", "run", "p")
    records = kit.output("p", "scripted")
    assert [r["status"] for r in records.values()] == ["completed"] * 3
    assert all(r["attempt"] == 1 for r in records.values())


def test_managed_stop_interrupts_in_flight_task_and_its_run(kit: Kit) -> None:
    runner = start_until_in_flight(kit, "s", "sre-001", agent_delay_s=20.0)
    assert running_local_runs(kit.state)
    started = time.monotonic()
    kit.srez("managed", "stop", "s")
    took = time.monotonic() - started
    assert runner.wait(10) == 143
    # before the agent's 20 s delay would end: the task was interrupted, not waited out
    assert took < 20.0, f"stop took {took:.1f} s"
    record = kit.output("s", "scripted")["sre-001"]
    assert (record["status"], record["error_kind"]) == ("interrupted", "stopped")
    assert running_local_runs(kit.state) == []  # the backend run was stopped
    assert "sre-002" not in kit.output("s", "scripted")
    interrupted_dir = record["results_dir"]
    # resume: the interrupted task runs again as attempt 2; attempt 1 and its folder are kept
    kit.srez("managed", "run", "s", env=kit.slow(0.0))
    again = kit.output("s", "scripted")["sre-001"]
    assert again["status"] == "completed"
    assert again["attempt"] == 2
    assert again["previous"][0]["status"] == "interrupted"  # type: ignore[index]
    if interrupted_dir is not None:
        assert Path(str(interrupted_dir)).is_dir()
    assert [r["status"] for r in kit.output("s", "scripted").values()] == ["completed"] * 3


def test_managed_budget_exhaustion_pauses_and_resumes_next_day(kit: Kit) -> None:
    kit.srez(
        "managed",
        "create",
        "b",
        "--baselines",
        "scripted",
        "--models",
        "openai/gpt-4o-mini",
        "--tasks",
        "sre-001,sre-002",
        "--backend",
        "inline",
        "--daily-budget-usd",
        "1.0",
        "--cost-cap-usd",
        "0.3",
    )
    ledger = BudgetLedger(kit.state / "budget")
    ledger.reserve("2026-01-01", "other-run/x/sre-001/1", 0.8, 1.0)  # another run spent the day
    ledger.settle("2026-01-01", "other-run/x/sre-001/1", 0.8)
    # an LLM target's key is checked before the queue runs (none is called: inline refuses it)
    key = {"OPENAI_API_KEY": "sk-unused"}
    day1 = kit.srez("managed", "run", "b", check=False, SREZ_TODAY="2026-01-01", **key)
    assert day1.returncode == 75, day1.stderr
    pause = json.loads((kit.managed("b") / "PAUSE").read_text())
    assert pause["reason"] == "budget"
    assert pause["day"] == "2026-01-01"
    assert len(kit.output("b", "scripted")) == 2  # baselines cost nothing: not held back
    assert kit.output("b", "llm-openai__gpt-4o-mini") == {}
    # the same day, it stays paused
    again = kit.srez("managed", "run", "b", check=False, SREZ_TODAY="2026-01-01", **key)
    assert again.returncode == 75
    status = json.loads(
        kit.srez("managed", "status", "b", "--json", SREZ_TODAY="2026-01-01").stdout
    )
    assert status["budget"]["left_usd"] == pytest.approx(0.2)
    # the next day the pause lifts itself and the LLM target runs, reserving on the new day
    kit.srez("managed", "run", "b", SREZ_TODAY="2026-01-02", **key)
    assert not (kit.managed("b") / "PAUSE").exists()
    llm = kit.output("b", "llm-openai__gpt-4o-mini")
    assert set(llm) == {"sre-001", "sre-002"}
    assert {r["budget_day"] for r in llm.values()} == {"2026-01-02"}
    view = ledger.view("2026-01-02")
    assert view.outstanding_usd == 0.0  # every reservation was settled
    assert len(view.reserved_keys) == 2


def test_managed_results_of_runs_survive_delete(kit: Kit) -> None:
    kit.srez(
        "managed",
        *baseline_queue("d", "sre-001", "inline"),
    )
    kit.srez("managed", "run", "d")
    before = results_dirs(kit.results, "scripted")
    assert len(before) == 1
    refused = kit.srez("managed", "delete", "d", check=False)
    assert refused.returncode == 2
    assert refused.stderr.startswith("srez: error: ") and "--yes" in refused.stderr
    kit.srez("managed", "delete", "d", "--yes")
    assert not kit.managed("d").exists()
    assert results_dirs(kit.results, "scripted") == before


def _provider_pause(kit: Kit, name: str, ago_s: float = 0.0) -> None:
    """A provider pause as the runner writes one after an outage ``ago_s`` seconds ago (written
    whole, by a rename, so a runner polling the file never reads half of it)."""
    at = (datetime.now(UTC) - timedelta(seconds=ago_s)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    pause = {"reason": "provider", "at": at, "day": "2026-01-01", "message": "outage"}
    partial = kit.managed(name) / "PAUSE.partial"
    partial.write_text(json.dumps(pause))
    partial.replace(kit.managed(name) / "PAUSE")


def _create_inline(kit: Kit, name: str) -> None:
    kit.srez(
        "managed", "create", name, "--baselines", "scripted", "--models", "none",
        "--tasks", "sre-001,sre-002", "--backend", "inline",
    )  # fmt: skip


def test_managed_run_wait_sleeps_through_a_provider_pause_then_goes_on(kit: Kit) -> None:
    _create_inline(kit, "w")
    _provider_pause(kit, "w")
    env = {"SREZ_PROVIDER_COOLDOWN_S": "3600"}
    assert kit.srez("managed", "run", "w", check=False, env=env).returncode == 75  # no --wait
    runner = kit.runner("w", "--wait", env=env)
    wait_for("the runner waiting", lambda: "for the pause to lift" in kit.runner_err())
    # the outage turns out to be an hour old: the cooldown is over at the runner's next look,
    # whatever the time it took to start
    _provider_pause(kit, "w", ago_s=3601)
    assert runner.wait(60) == 0, kit.runner_err()
    said = kit.runner_err().splitlines()
    waited = next(i for i, line in enumerate(said) if "for the pause to lift" in line)
    lifted = next(i for i, line in enumerate(said) if "provider cooldown of 3600 s is over" in line)
    assert waited < lifted, kit.runner_err()
    assert [r["status"] for r in kit.output("w", "scripted").values()] == ["completed"] * 2
    assert not (kit.managed("w") / "PAUSE").exists()


def test_managed_run_wait_ends_on_stop_and_never_waits_out_a_user_or_forced_day_pause(
    kit: Kit,
) -> None:
    _create_inline(kit, "s")
    _provider_pause(kit, "s")
    runner = kit.runner("s", "--wait", env={"SREZ_PROVIDER_COOLDOWN_S": "3600"})
    wait_for("the runner waiting", lambda: "for the pause to lift" in kit.runner_err())
    kit.srez("managed", "stop", "s")
    assert runner.wait(30) == 143, kit.runner_err()
    assert kit.output("s", "scripted") == {}  # nothing ran
    kit.srez("managed", "clear-pause", "s")
    kit.srez("managed", "pause", "s")  # a user's pause is theirs to lift
    user = kit.srez("managed", "run", "s", "--wait", check=False)
    assert user.returncode == 75 and "for the pause to lift" not in user.stderr
    kit.srez("managed", "clear-pause", "s")
    budget = {"reason": "budget", "at": "2026-01-01T00:00:00Z", "day": "2026-01-01"}
    (kit.managed("s") / "PAUSE").write_text(json.dumps(budget))
    forced = kit.srez("managed", "run", "s", "--wait", check=False, SREZ_TODAY="2026-01-01")
    assert forced.returncode == 75 and "for the pause to lift" not in forced.stderr


def test_managed_run_wait_goes_on_at_a_clear_pause_and_ends_at_a_user_pause(kit: Kit) -> None:
    """While ``--wait`` sleeps through a long provider cooldown, ``clear-pause`` sends it on at
    once; ``pause`` (the user's) ends it instead."""
    _create_inline(kit, "c")
    _provider_pause(kit, "c")
    cooldown = {"SREZ_PROVIDER_COOLDOWN_S": "3600"}
    runner = kit.runner("c", "--wait", "--target", "scripted", env=cooldown)
    wait_for("the runner waiting", lambda: kit.runner_err().count("for the pause to lift") == 1)
    kit.srez("managed", "clear-pause", "c")
    assert runner.wait(60) == 0, kit.runner_err()
    assert [r["status"] for r in kit.output("c", "scripted").values()] == ["completed"] * 2
    kit.srez("managed", "add-target", "c", "random")
    _provider_pause(kit, "c")
    runner = kit.runner("c", "--wait", env=cooldown)
    wait_for("the runner waiting", lambda: kit.runner_err().count("for the pause to lift") == 2)
    kit.srez("managed", "pause", "c")
    assert runner.wait(60) == 75, kit.runner_err()
    assert kit.output("c", "random") == {}
