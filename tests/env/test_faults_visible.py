"""Faults really show (docs/environment.md §5.2 test 4, §6.6) and decoys stay benign (§6.10)."""

from __future__ import annotations

import pytest
from envkit import grade_of

from conftest import BY_ID, TASK_IDS, typical
from srez_env.sim.scenario import world_at_t0
from srez_env.task import Task
from srez_env.task_scenario import ConfigEdit
from srez_env.telemetry.alerts import alerts_at, in_scope
from srez_env.telemetry.status import gateway_slo, slo_holds, status_of

FAULT_IDS = [t for t in TASK_IDS if BY_ID[t].fault_kind != "none"]
CONTROL_IDS = [t for t in TASK_IDS if BY_ID[t].fault_kind == "none"]


def _without_injection(task: Task) -> Task:
    return task.model_copy(update={"injection": task.injection.model_copy(update={"config": []})})


@pytest.mark.parametrize("task_id", FAULT_IDS)
def test_fault_violates_the_gateway_slo_at_t0(task_id: str) -> None:
    # the stronger form of the T0-visibility contract holds for all 38 fault tasks (§6.14)
    assert not gateway_slo(world_at_t0(BY_ID[task_id]).snapshot(0))


@pytest.mark.parametrize("task_id", FAULT_IDS)
def test_fault_raises_a_new_in_scope_alert_at_t0(task_id: str) -> None:
    """The contract's other arm (an in-scope alert active that the task without its config
    injection does not have) also holds on its own for every fault task: a fault is visible in
    the alerts, not only in the gateway SLO tested above."""
    task = BY_ID[task_id]
    bare = {
        (a.name, a.service)
        for a in alerts_at(world_at_t0(_without_injection(task)), 0)
        if a.resolved_at is None
    }
    new = [
        a
        for a in alerts_at(world_at_t0(task), 0)
        if a.resolved_at is None
        and in_scope(a, task.noise.alert_scope, tuple(task.noise.alert_also))
        and (a.name, a.service) not in bare
    ]
    assert new, task_id


@pytest.mark.parametrize("task_id", FAULT_IDS)
def test_null_agent_fails_func_on_every_fault_task(task_id: str) -> None:
    grade = grade_of(BY_ID[task_id], [])
    assert not grade.checks["func"].passed
    assert grade.reward.total == 0.0


@pytest.mark.parametrize("task_id", CONTROL_IDS)
def test_controls_hold_every_slo_and_null_agent_scores_060(task_id: str) -> None:
    world = world_at_t0(BY_ID[task_id])
    assert slo_holds(world.snapshot(0)) and slo_holds(world.snapshot(10))
    grade = grade_of(BY_ID[task_id], [])
    assert grade.reward.total == 0.6
    assert grade.reward.components == {  # resolved: 0.5 + 0.5 * (0.2 eff) * minimal
        "rca": 0.0,
        "evidence": 0.0,
        "mitigation": 0.0,
        "minimal": 1.0,
        "eff": 1.0,
        "resolved": 1.0,
    }


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_decoy_effects_leave_the_bare_task_healthy_from_t0_minus_20(task_id: str) -> None:
    task = BY_ID[task_id]
    world = world_at_t0(_without_injection(task))
    for minute in range(-20, 11):
        snap = world.snapshot(minute)
        assert gateway_slo(snap), (task_id, minute)
        assert set(status_of(snap).values()) == {"healthy"}, (task_id, minute, status_of(snap))


def test_sre_039_decoy_batch_job_left_a_resolved_alert() -> None:
    alerts = [a for a in alerts_at(world_at_t0(BY_ID["sre-039"]), 0) if a.resolved_at is not None]
    assert alerts and all(a.since < -20 for a in alerts)


def test_k05_replicas_oom_on_schedule() -> None:
    # §6.5: payments 2.4.1 (150 MB/min, 2048 MB) has P = 9; 4 of every 9 minutes lose a replica
    world = world_at_t0(typical("sre-014"))  # the typical world's numbers
    killed = [sum(world.at(m).killed.values()) for m in range(-26, 1)]
    assert sum(1 for k in killed[-9:] if k) == 4
    assert world.at(0).killed == {"payments": 1}
    assert world.at(0).restarts_1h["payments"] == 17


def test_a_gateway_with_no_replica_left_fails_every_request() -> None:
    """The gateway has no caller inside the system, so no edge notices that it has no endpoint:
    the ingress does. A gateway scaled to zero once served as if nothing had happened (found by
    env/tools/reroot_probe.py)."""
    control = BY_ID["sre-039"]
    edit = ConfigEdit(service="gateway", key="deploy.replicas", value="0", minutes_before=None)
    scaled = control.model_copy(
        update={"injection": control.injection.model_copy(update={"config": [edit]})}
    )
    snapshot = world_at_t0(scaled).snapshot(0)
    assert not gateway_slo(snapshot)
    assert snapshot.route_err == {"signin": 1.0, "checkout": 1.0}
    assert gateway_slo(world_at_t0(control).snapshot(0))  # the same world at its replicas
