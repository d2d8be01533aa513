"""The trivial-agent floors stay low on every task set: no trivial agent passes (or resolves) a
fault task, and on the no-fault controls only restraint scores."""

from __future__ import annotations

import json

import pytest

from srez_env.agents import build_agent, make_agent
from srez_env.baselines.floors import FLOOR_AGENTS, loudest_service
from srez_env.generator.sets import generate
from srez_env.grade import Grade, grade_episode
from srez_env.play import play_episode
from srez_env.task import Task
from srez_env.tasks import load_tasks

FAULT_CEILING = 0.2
"""No floor earns more on a fault task (restart-all's best is 0.135: a restart's blip of relief
and a service guessed right)."""
RESTRAINT = 0.6
"""What doing nothing earns on a control: fix, minimal and efficiency, no RCA (docs/environment.md
§3.9)."""


def play(tasks: list[Task], spec: str) -> dict[str, Grade]:
    return {
        t.id: grade_episode(play_episode(t, make_agent(spec, t, 0), name=spec).record())
        for t in tasks
    }


@pytest.fixture(scope="module", params=["canonical", "generated"])
def task_set(request: pytest.FixtureRequest) -> list[Task]:
    return load_tasks() if request.param == "canonical" else generate(31337, 40)


def test_no_trivial_agent_passes_a_fault_task(task_set: list[Task]) -> None:
    faults = [t for t in task_set if t.fault_kind != "none"]
    assert len(faults) >= 30
    heuristic = play(faults, "heuristic")
    for spec in FLOOR_AGENTS:
        grades = play(faults, spec)
        for task in faults:
            grade = grades[task.id]
            assert not grade.resolved and not grade.passed, (spec, task.id)
            assert grade.reward.total <= FAULT_CEILING, (spec, task.id, grade.reward.total)
        mean = sum(g.reward.total for g in grades.values()) / len(grades)
        assert mean < 0.5 * sum(g.reward.total for g in heuristic.values()) / len(heuristic)


def test_on_the_controls_only_restraint_scores(task_set: list[Task]) -> None:
    controls = [t for t in task_set if t.fault_kind == "none"]
    assert controls
    noop, restart_all = play(controls, "noop"), play(controls, "restart-all")
    for task in controls:
        assert noop[task.id].reward.total == RESTRAINT, task.id
        assert noop[task.id].reward.components["rca"] == 0.0  # it declared nothing
        assert restart_all[task.id].reward.total < RESTRAINT, task.id  # restarts cost there
        assert not noop[task.id].passed and not restart_all[task.id].passed


def test_restart_all_restarts_everything_and_blames_the_loudest_service() -> None:
    (task,) = load_tasks(["sre-025"])  # cache's stampede alerts on gateway
    env = play_episode(task, make_agent("restart-all", task, 0), name="restart-all")
    grade = grade_episode(env.record())
    assert sorted(grade.metrics.restarts) == sorted(["gateway", "auth", "payments", "cache", "db"])
    assert grade.metrics.declared is not None and grade.metrics.declared.service == "gateway"
    assert grade.steps == 8


def test_loudest_service_weighs_active_alerts_by_severity() -> None:
    def alerts(*rows: tuple[str, str, str]) -> str:
        return json.dumps(
            {"alerts": [{"service": s, "severity": sev, "state": st} for s, sev, st in rows]}
        )

    assert (
        loudest_service(alerts(("db", "warning", "active"), ("auth", "critical", "active")))
        == "auth"
    )
    assert (
        loudest_service(
            alerts(
                ("db", "warning", "active"),
                ("db", "warning", "active"),
                ("auth", "critical", "active"),
            )
        )
        == "auth"
    )  # a tie: the earlier service
    assert loudest_service(alerts(("db", "critical", "resolved"))) == "gateway"
    assert loudest_service("not json") == "gateway"


def test_the_floors_need_no_task_file() -> None:
    for spec in FLOOR_AGENTS:
        agent = build_agent(spec, task_id="sre-001")
        assert agent.name == spec
        assert agent.act({"prompt": "..."})["tool"] in ("submit", "get_alerts")
