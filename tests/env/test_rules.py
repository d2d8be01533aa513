"""Rules (docs/environment.md §5.2 test 5): the base state fires nothing, T0 fires exactly the
injected instances, the reference fix clears everything, and decoy config edits fire nothing."""

from __future__ import annotations

import pytest
from envkit import injected_instances, play

from conftest import BY_ID, TASK_IDS
from srez_env.env import SREEnv
from srez_env.sim.scenario import world_at_t0
from srez_env.world import topology as topo
from srez_env.world.schema import is_inert


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_baseline_hour_fires_no_rule(task_id: str) -> None:
    """The fixed hour behind baseline_1h (T0-180 ... T0-121) is fault-free in every task."""
    world = world_at_t0(BY_ID[task_id])
    first, last = topo.BASELINE_WINDOW
    for minute in range(first, last + 1):
        assert world.rules_at(minute) == [], (task_id, minute)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_t0_fires_exactly_the_injected_instances(task_id: str) -> None:
    task = BY_ID[task_id]
    assert world_at_t0(task).rules_at(0) == injected_instances(task)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_reference_fix_leaves_no_rule_firing(oracle_runs: dict[str, SREEnv], task_id: str) -> None:
    env = oracle_runs[task_id]
    assert env.log.submit_clock is not None
    assert env.world.rules_at(env.log.submit_clock + topo.SOAK_MINUTES) == []


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_decoy_config_edits_are_inert_and_fire_nothing(task_id: str) -> None:
    task = BY_ID[task_id]
    decoys = [e for e in task.noise.decoy_events if e.kind == "config_change"]
    for event in decoys:
        assert event.key is not None and is_inert(event.service, event.key), event
    # the task without its injection, at T0: only decoys acted, and nothing fires
    bare = task.model_copy(update={"injection": task.injection.model_copy(update={"config": []})})
    assert world_at_t0(bare).rules_at(0) == []


def test_collateral_edit_fires_another_rule() -> None:
    # a payments pool of 200 breaks the db connection budget: K04 fires (§3.4)
    env = play(
        BY_ID["sre-007"],
        [
            {
                "tool": "set_config",
                "args": {"service": "payments", "key": "db.pool_max", "value": "200"},
            }
        ],
    )
    end = (env.log.submit_clock or 0) + topo.SOAK_MINUTES
    assert [str(h) for h in env.world.rules_at(end)] == ["db_max_connections_low@db"]
