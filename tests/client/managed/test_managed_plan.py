"""The pure parts of managed runs: names, queue planning, resume decisions, ledger sums,
summaries and the exported queue."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from srez_client.backends.base import LaunchSpec
from srez_client.errors import UsageError
from srez_client.managed.cooldown import seconds_until_lifted
from srez_client.managed.ledger import BudgetLedger, parse_lines, sum_records, today
from srez_client.managed.models import (
    Checkpoint,
    ManagedRun,
    PauseInfo,
    TaskRecord,
    make_target,
    parse_target,
)
from srez_client.managed.plan import (
    classify,
    end_attempt,
    launch_spec,
    pending_tasks,
    queue,
    queue_commands,
    start_attempt,
    started_after,
)
from srez_client.managed.render import markdown
from srez_client.managed.summary import combine, completed_rewards, target_summary

T0 = "2026-01-01T10:00:00.000Z"


def _run(**kw: object) -> ManagedRun:
    fields: dict[str, object] = {
        "name": "m",
        "created_at": T0,
        "backend": "inline",
        "results_root": "/r",
        "tasks": ["sre-001", "sre-002", "sre-003"],
        "targets": [make_target("scripted"), make_target("llm", "openai/gpt-4o")],
        **kw,
    }
    return ManagedRun.model_validate(fields)


def _rec(task: str, status: str, **kw: object) -> TaskRecord:
    return TaskRecord.model_validate(
        {"task_id": task, "attempt": 1, "status": status, "started_at": T0, **kw}
    )


@pytest.mark.parametrize("name", ["", "-x", "a/b", "..", "a b", "x" * 65, "é"])
def test_managed_names_refused(name: str) -> None:
    from srez_client.managed.models import check_name

    with pytest.raises(UsageError, match="not valid"):
        check_name(name, "managed run name")


def test_managed_target_names() -> None:
    assert parse_target("scripted").name == "scripted"
    llm = parse_target("openai/gpt-4o")
    assert (llm.name, llm.agent, llm.model) == ("llm-openai__gpt-4o", "llm", "openai/gpt-4o")
    assert parse_target("llm:openai/gpt-4o") == llm
    with pytest.raises(UsageError, match="not a model slug"):
        parse_target("gpt4")
    with pytest.raises(UsageError, match="takes no model"):
        make_target("random", "openai/gpt-4o")


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        ({"graded": True, "status": "ok", "error_kind": None, "has_result": True}, "completed"),
        (
            {"graded": True, "status": "error", "error_kind": "agent", "has_result": True},
            "completed",
        ),
        (
            {"graded": True, "status": "error", "error_kind": "provider", "has_result": True},
            "provider_error",
        ),
        (
            {"graded": False, "status": "error", "error_kind": "harness", "has_result": False},
            "failed",
        ),
        ({"graded": True, "status": "ok", "error_kind": None, "has_result": False}, "failed"),
        ({"graded": False, "status": None, "error_kind": None, "has_result": False}, "failed"),
        (
            {
                "graded": True,
                "status": "error",
                "error_kind": "agent",
                "has_result": True,
                "end_reason": "stopped",
            },
            "interrupted",
        ),
    ],
)
def test_managed_classify(summary: dict[str, object], expected: str) -> None:
    assert classify(**summary) == expected  # type: ignore[arg-type]


def test_managed_resume_decisions() -> None:
    run = _run()
    cp = Checkpoint(target="scripted").with_record(_rec("sre-001", "completed"))
    cp = cp.with_record(_rec("sre-002", "provider_error")).with_record(_rec("sre-003", "failed"))
    assert pending_tasks(run, cp) == ["sre-002"]
    assert pending_tasks(run, cp, retry_failed=True) == ["sre-002", "sre-003"]
    assert pending_tasks(run, cp, unverified={"sre-001"}) == ["sre-001", "sre-002"]
    for status in ("interrupted", "running"):
        assert pending_tasks(run, cp.with_record(_rec("sre-002", status))) == ["sre-002"]
    done = cp.with_record(_rec("sre-002", "completed"))
    assert queue(run, {"scripted": done}) == [run.targets[1]]  # done target skipped
    assert queue(run, {"scripted": done}, only="scripted") == []


def test_managed_new_attempt_keeps_the_old_ones() -> None:
    first = end_attempt(_rec("sre-001", "interrupted"), run_id="20260101T100000Z-00000000")
    second = start_attempt(first, "sre-001", T0)
    assert second.attempt == 2 and second.status == "running"
    assert second.previous[0].run_id == "20260101T100000Z-00000000"
    third = start_attempt(end_attempt(second, status="provider_error"), "sre-001", T0)
    assert [a.attempt for a in third.attempts()] == [1, 2, 3]


def test_managed_started_after_compares_stamps() -> None:
    assert started_after("20260101T100000Z-0123abcd", "2026-01-01T10:00:00.900Z")
    assert not started_after("20260101T095959Z-0123abcd", "2026-01-01T10:00:00.000Z")


def test_managed_launch_spec_of_llm_target_carries_cost_cap() -> None:
    run = _run(cost_cap_usd=0.25, time_limit_s=30)
    spec = launch_spec(run, run.targets[1], "sre-002")
    assert (spec.agent_spec, spec.model, spec.time_limit_s) == ("llm", "openai/gpt-4o", 30)
    if "agent_env" in LaunchSpec.model_fields:
        assert spec.agent_env == {"SREZ_LLM_COST_CAP_USD": "0.25"}
    base = launch_spec(run, run.targets[0], "sre-002")
    assert (base.agent_spec, base.model) == ("scripted", "none")


def test_managed_ledger_arithmetic() -> None:
    view = sum_records(
        [
            {"op": "reserve", "key": "a", "usd": 0.5},
            {"op": "settle", "key": "a", "usd": 0.1},
            {"op": "reserve", "key": "b", "usd": 0.5},
            {"op": "reserve", "key": "b", "usd": 9.0},  # a second reserve of a key is ignored
            {"op": "settle", "key": "x", "usd": -1},  # invalid
        ]
    )
    assert view.spent_usd == pytest.approx(0.1)
    assert view.outstanding_usd == pytest.approx(0.5)
    assert view.admits(1.0, 0.4) and not view.admits(1.0, 0.41)
    assert view.left(0.5) == 0.0


def test_managed_ledger_file_survives_a_torn_tail(tmp_path: Path) -> None:
    ledger = BudgetLedger(tmp_path)
    assert ledger.reserve("2026-03-01", "a", 0.4, 1.0)
    with ledger.path("2026-03-01").open("ab") as f:
        f.write(b'{"op": "reserve", "key": "torn", "us')  # a crash mid-append
    assert ledger.reserve("2026-03-01", "b", 0.4, 1.0)
    assert not ledger.reserve("2026-03-01", "c", 0.4, 1.0)  # 0.8 committed
    assert ledger.reserve("2026-03-01", "a", 0.4, 1.0)  # re-reserving a key: no charge
    ledger.settle("2026-03-01", "a", 0.05)
    assert ledger.reserve("2026-03-01", "c", 0.4, 1.0)
    records = parse_lines(ledger.path("2026-03-01").read_bytes())
    assert [r["key"] for r in records] == ["a", "b", "a", "c"]


def test_managed_today_from_env() -> None:
    assert today({"SREZ_TODAY": "2026-05-04"}) == "2026-05-04"
    with pytest.raises(UsageError, match="SREZ_TODAY"):
        today({"SREZ_TODAY": "tomorrow"})


def test_managed_summary_counts_completed_only() -> None:
    run = _run()
    cp = Checkpoint(target="scripted")
    cp = cp.with_record(_rec("sre-001", "completed", reward=1.0, resolved=True, passed=True))
    cp = cp.with_record(
        _rec("sre-002", "completed", reward=0.5, resolved=False, error_kind="agent")
    )
    cp = cp.with_record(_rec("sre-003", "provider_error", reward=0.9, cost_usd=0.2))
    diffs = {"sre-001": "easy", "sre-002": "hard", "sre-003": "easy"}
    s = target_summary(run, run.targets[0], cp, diffs)
    assert (s.completed, s.remaining, s.provider_errors, s.agent_errors) == (2, 1, 1, 1)
    assert s.mean_reward == pytest.approx(0.75)
    assert s.reward_stderr == pytest.approx(0.25)
    assert s.resolved_by_difficulty["easy"].rate == 1.0
    assert s.resolved_by_difficulty["hard"].rate == 0.0
    # Two tasks (rewards 1.0 and 0.5): a resample draws each, or one of them twice.
    assert s.reward_ci == (0.5, 1.0)
    assert s.resolved_ci == (0.0, 1.0)
    assert s.resolved_by_difficulty["easy"].ci == (1.0, 1.0)  # one task: zero width
    assert s.cost_usd == pytest.approx(0.2)
    empty = target_summary(run, run.targets[1], Checkpoint(target=run.targets[1].name), diffs)
    combined = combine(run, [empty, s])
    assert [t.target for t in combined.targets] == ["scripted", "llm-openai__gpt-4o"]
    text = markdown(combined)
    assert "| scripted | baseline | 2/3 | 0.750 [0.50, 1.00] | 0.250 | 50% [0–100] |" in text
    assert "| scripted | 100% (1/1) [100–100] | 0% (0/1) [0–0] |" in text
    assert "llm-openai__gpt-4o | model | 0/3 | – | – | – |" in text
    assert empty.reward_ci is None


def test_managed_combined_summary_compares_ranked_targets() -> None:
    tasks = [f"sre-{i:03d}" for i in range(1, 21)]
    run = _run(
        tasks=tasks,
        targets=[make_target("scripted"), make_target("heuristic"), make_target("random")],
    )

    def checkpoint(name: str, reward: float) -> Checkpoint:
        cp = Checkpoint(target=name)
        for i, t in enumerate(tasks):
            r = reward * (i % 2)
            cp = cp.with_record(_rec(t, "completed", reward=r, resolved=r > 0, passed=r > 0))
        return cp

    cps = {
        "scripted": checkpoint("scripted", 1.0),
        "heuristic": checkpoint("heuristic", 1.0),  # the same rewards: within noise
        "random": checkpoint("random", 0.1).with_record(_rec("sre-001", "provider_error")),
    }
    summaries = [target_summary(run, t, cps[t.name], {}) for t in run.targets]
    rewards = {name: completed_rewards(run, cp) for name, cp in cps.items()}
    assert len(rewards["random"]) == 19  # sre-001 has no completed attempt
    combined = combine(run, summaries, rewards)
    first, second = combined.comparisons
    assert (first.a, first.b, first.diff, first.within_noise) == (
        "heuristic",
        "scripted",
        0.0,
        True,
    )
    assert (second.a, second.b, second.tasks, second.within_noise) == (
        "scripted",
        "random",
        19,
        False,
    )
    assert second.lo > 0
    text = markdown(combined)
    assert "| heuristic vs scripted | +0.000 [+0.00, +0.00] | 20 | ≈ within noise |" in text
    assert "| scripted vs random | " in text and "| 19 | > ahead |" in text
    assert combine(run, summaries).comparisons == []
    assert "## Differences" not in markdown(combine(run, summaries))


OLD_OUTPUT_JSON = """{
  "schema_version": 1,
  "target": "llm-openai__gpt-4o",
  "tasks": {
    "sre-001": {
      "attempt": 2, "status": "completed", "started_at": "2026-01-01T10:05:00.000Z",
      "finished_at": "2026-01-01T10:06:00.000Z", "run_id": "20260101T100500Z-00000002",
      "results_dir": "/r/sre-001/x/llm/20260101T100500Z-00000002", "result_sha256": "ab",
      "reward": 1.0, "resolved": true, "passed": true, "cost_usd": 0.01, "error_kind": null,
      "error": null, "budget_day": null, "task_id": "sre-001",
      "previous": [{
        "attempt": 1, "status": "provider_error", "started_at": "2026-01-01T10:00:00.000Z",
        "finished_at": "2026-01-01T10:01:00.000Z", "run_id": "20260101T100000Z-00000001",
        "results_dir": null, "result_sha256": null, "reward": 0.0, "resolved": false,
        "passed": false, "cost_usd": 0.02, "error_kind": "provider", "error": "500",
        "budget_day": null
      }]
    }
  }
}"""
"""An ``output.json`` written before ``claimed_error_kind`` existed."""


def test_managed_old_checkpoint_loads_and_counts_its_reruns() -> None:
    cp = Checkpoint.model_validate_json(OLD_OUTPUT_JSON)
    record = cp.tasks["sre-001"]
    assert [(a.attempt, a.status) for a in record.attempts()] == [
        (1, "provider_error"),
        (2, "completed"),
    ]
    assert all(a.claimed_error_kind is None for a in record.attempts())
    run = _run()
    s = target_summary(run, run.targets[1], cp, {})
    assert (s.attempts, s.reruns, s.provider_error_attempts, s.provider_claims) == (2, 1, 1, 0)
    assert Checkpoint.model_validate_json(cp.model_dump_json()) == cp  # and round-trips


def test_managed_summary_counts_reruns_and_unattested_claims() -> None:
    run = _run()
    first = end_attempt(_rec("sre-001", "provider_error"), error_kind="provider")
    second = end_attempt(start_attempt(first, "sre-001", T0), status="interrupted")
    third = end_attempt(start_attempt(second, "sre-001", T0), status="completed", reward=1.0)
    claim = _rec(
        "sre-002", "completed", reward=0.0, error_kind="agent", claimed_error_kind="provider"
    )
    cp = Checkpoint(target="scripted").with_record(third).with_record(claim)
    s = target_summary(run, run.targets[0], cp, {})
    assert (s.attempts, s.reruns, s.completed, s.agent_errors) == (4, 2, 2, 1)
    assert (s.provider_errors, s.provider_error_attempts, s.provider_claims) == (0, 1, 1)
    other = target_summary(run, run.targets[1], Checkpoint(target=run.targets[1].name), {})
    combined = combine(run, [s, other])
    assert combined.reruns == 2
    text = markdown(combined)
    assert "| attempts | re-runs | unattested claims |" in text
    assert "| 4 | 2 | 1 |" in text and "Re-runs, all targets: 2." in text
    assert classify(graded=True, status="error", error_kind="agent", has_result=True) == (
        "completed"
    )  # a claim the daemon did not attest is scored, never retried


def test_managed_exported_queue_commands() -> None:
    run = _run(results_root="/data/my results")
    sh, ps1 = queue_commands(run, run.targets)
    assert sh.splitlines()[2] == "set -e"
    assert "srez managed run m --target llm-openai__gpt-4o --results '/data/my results'" in sh
    assert "& 'srez' 'managed' 'run' 'm' '--target' 'scripted' --results '/data/my results'" in ps1
    assert ps1.count("if ($LASTEXITCODE -ne 0)") == 2


def test_an_unpriced_run_is_charged_its_cost_cap_not_nothing(tmp_path: Path) -> None:
    from srez_client.managed.outcome import outcome_fields
    from srez_daemon.protocol import RunSummary

    summary = RunSummary.model_validate(
        {
            "run_id": "20260101T000000Z-00000000",
            "task_id": "sre-001",
            "agent": "llm",
            "model": "openai/unpriced",
            "status": "ok",
            "reward": 0.5,
            "resolved": False,
            "passed": False,
            "steps": 3,
            "duration_s": 1.0,
            "finished_at": "2026-01-01T00:00:01Z",
            "cost_usd": None,
        }
    )
    assert outcome_fields(tmp_path, summary, unknown_cost=0.5)["cost_usd"] == 0.5
    priced = summary.model_copy(update={"cost_usd": 0.01})
    assert outcome_fields(tmp_path, priced, unknown_cost=0.5)["cost_usd"] == 0.01


def test_how_long_each_kind_of_pause_has_left() -> None:
    now = datetime(2026, 3, 1, 23, 0, 0).astimezone()  # 23:00 on the machine's clock
    utc = now.astimezone(UTC)

    def left(reason: str, *, at: str = "", day: str = "2026-03-01", forced: bool = False) -> object:
        pause = PauseInfo(reason=reason, at=at, day=day)  # type: ignore[arg-type]
        return seconds_until_lifted(pause, now=now, cooldown_s=60, day_is_forced=forced)

    def iso(moment: datetime) -> str:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    assert left("user") is None  # only its user lifts it
    assert left("provider", at=iso(utc - timedelta(seconds=10))) == pytest.approx(50)
    assert left("provider", at=iso(utc - timedelta(hours=1))) == 0.0  # the cooldown is over
    assert left("provider", at="not a time") == 0.0
    assert left("budget") == pytest.approx(3600)  # the ledger day ends at local midnight
    assert left("budget", day="2000-01-01") == 0.0  # a pause of a past day is lifted
    assert left("budget", forced=True) is None  # $SREZ_TODAY never ends
