"""Errors (docs/environment.md §5.2 test 9): every error code is triggered by a crafted call; an
invalid call costs a step and a minute and changes nothing else."""

from __future__ import annotations

import pytest
from envkit import a, started

from conftest import BY_ID
from srez_env.actions import ERROR_CODES
from srez_env.env import SREEnv
from srez_env.errors import EpisodeError
from srez_env.grade import grade_episode

CRAFTED: dict[str, object] = {
    "PARSE_ERROR": '{"tool": "get_logs", "args": {"service": "db"',
    "UNKNOWN_TOOL": {"tool": "kubectl", "args": {}},
    "BAD_ARGS": {"tool": "get_logs", "args": {"service": "db", "limit": 500}},
    "UNKNOWN_SERVICE": {"tool": "get_status", "args": {"service": "billing"}},
    "UNKNOWN_METRIC": {"tool": "get_metrics", "args": {"service": "db", "metric": "hit_ratio"}},
    "UNKNOWN_KEY": a("set_config", service="cache", key="db.pool_max", value="5"),
    "READ_ONLY_KEY": a("set_config", service="payments", key="db.host", value="x"),
    "KEY_MANAGED_BY_TOOL": a("set_config", service="auth", key="deploy.replicas", value="3"),
    "INVALID_VALUE": a("set_config", service="payments", key="db.pool_max", value="0"),
    "UNKNOWN_VERSION": {"tool": "rollback", "args": {"service": "payments", "version": "9.9.9"}},
}


def _fresh() -> SREEnv:
    return started(BY_ID["sre-007"])


@pytest.mark.parametrize("code", sorted(CRAFTED))
def test_crafted_call_triggers_code_and_changes_nothing(code: str) -> None:
    env = _fresh()
    files_before = {s: f.text for s, f in env.world.at(0).files.items()}
    result = env.step(CRAFTED[code])  # type: ignore[arg-type]
    obs = result.observation
    assert obs["ok"] is False and obs["error"]["code"] == code
    assert obs["error"]["message"] and obs["error"]["hint"]
    assert (env.steps_used, env.clock, obs["steps_left"]) == (1, 1, env.task.max_steps - 1)
    env.step({"tool": "wait", "args": {"minutes": 5}})
    assert {s: f.text for s, f in env.world.at(env.clock).files.items()} == files_before
    assert env.log.first_mutation_step is None
    assert [e.text for e in env.world.events if "on-call agent" in e.text] == []


def test_already_submitted_is_not_counted() -> None:
    env = _fresh()
    env.step({"tool": "submit", "args": {}})
    used = env.steps_used
    result = env.step({"tool": "get_alerts", "args": {}})
    assert result.observation["error"]["code"] == "ALREADY_SUBMITTED"
    assert result.info == {"counted": False} and env.steps_used == used


def test_every_error_code_is_covered() -> None:
    assert set(CRAFTED) | {"ALREADY_SUBMITTED"} == set(ERROR_CODES)


def test_invalid_actions_are_reported_with_max_repeat() -> None:
    env = _fresh()
    for _ in range(3):
        env.step({"tool": "kubectl", "args": {}})
    env.step({"tool": "get_alerts", "args": {}})
    env.step({"tool": "kubectl", "args": {"x": 1}})
    env.step({"tool": "submit", "args": {}})
    metrics = grade_episode(env.record()).metrics
    assert (metrics.invalid_actions, metrics.max_repeat_invalid) == (4, 3)


def test_step_budget_ends_the_episode_like_a_submit() -> None:
    env = _fresh()
    for _ in range(env.task.max_steps):
        env.step({"tool": "get_alerts", "args": {}})
    assert env.done and grade_episode(env.record()).metrics.end_reason == "step_budget"


def test_force_submit_uses_no_step_and_records_the_reason() -> None:
    env = _fresh()
    env.step({"tool": "get_alerts", "args": {}})
    env.force_submit("time_limit")
    grade = grade_episode(env.record())
    assert grade.steps == 1 and grade.metrics.end_reason == "time_limit"


def test_grading_before_the_end_and_stepping_before_reset_are_refused() -> None:
    env = SREEnv(BY_ID["sre-007"])
    with pytest.raises(EpisodeError, match="reset"):
        env.step({"tool": "get_alerts", "args": {}})
    env.reset()
    with pytest.raises(EpisodeError, match="still running"):
        grade_episode(env.record())


def test_restart_key_waits_for_a_restart() -> None:
    task = BY_ID["sre-005"]
    renewed = next(a.args["value"] for a in task.reference_fix if a.tool == "set_config")
    env = started(task)
    out = env.step(
        {
            "tool": "set_config",
            "args": {"service": "db", "key": "tls.cert_file", "value": renewed},
        }
    )
    assert out.observation["output"].startswith("written; pending restart (tls.cert_file)")
    status = env.step({"tool": "get_status", "args": {"service": "db"}}).observation["output"]
    assert '"pending_restart": ["tls.cert_file"]' in status
    env.step({"tool": "submit", "args": {}})
    grade = grade_episode(env.record())
    assert not grade.checks["func"].passed and not grade.checks["intent"].passed
