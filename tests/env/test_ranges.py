"""The range calibrator and the decoys that defeat it.

An agent that learns every configuration key's healthy range from other task sets and puts back
whatever stands out must not pass the hard tier: worlds carry unusual but harmless values, and
injected limits sit inside what other worlds find healthy. These tests hold the pieces: learning
leaves the injected keys out, the decoys are real and harmless, touching one costs, and the
calibrator's scores on the canonical set stay where the card says.
"""

from __future__ import annotations

import pytest
import rewardkit as rk
from envkit import a

from conftest import BY_ID, TASK_IDS, TASKS
from srez_env.agents import make_agent
from srez_env.baselines import ranges
from srez_env.baselines.memorised import Snapshot
from srez_env.generator.sets import reference_ranges
from srez_env.generator.unusual import DECOYS
from srez_env.generator.worlds import draw_world
from srez_env.grade import grade_episode
from srez_env.play import play_episode
from srez_env.task import Task
from srez_env.world import topology as topo
from srez_env.world.conffile import Value
from srez_env.world.schema import BASE_FILES


def _snap(pool: int, port: int, flag: bool) -> Snapshot:
    configs: dict[str, dict[str, Value]] = {
        "payments": {"db.pool_max": pool, "db.port": port, "flags.new_fraud_check": flag},
    }
    return Snapshot(configs=configs, versions={})


def test_learning_leaves_each_tasks_injected_keys_out_and_ties_keys_to_kinds() -> None:
    injected = next(t for t in TASKS if t.id == "sre-007")  # payments' pool exhausted
    healthy = next(t for t in TASKS if t.fault_kind == "none")
    learnt = ranges.summarise(
        [
            (_snap(2, 5432, False), injected),  # its pool is the fault: not a healthy value
            (_snap(12, 5432, False), healthy),
            (_snap(30, 6432, False), healthy),
        ]
    )
    assert learnt.bounds[("payments", "db.pool_max")] == (12.0, 30.0)
    assert learnt.seen[("payments", "db.port")] == frozenset({"5432", "6432"})
    assert learnt.modal[("payments", "db.port")] == "5432"
    assert learnt.kind_of("payments", "db.pool_max") == "conn_pool_exhaustion"
    assert learnt.kind_of("cache", "memory.maxmemory_mb") == "cache_eviction_stampede"  # table
    assert learnt.tasks == 3


def test_out_of_range_orders_by_distance_and_sets_the_nearest_bound() -> None:
    healthy = next(t for t in TASKS if t.fault_kind == "none")
    learnt = ranges.summarise(
        [(_snap(12, 5432, False), healthy), (_snap(30, 6432, False), healthy)]
    )
    found = ranges.out_of_range(
        {"payments": {"db.pool_max": 3, "db.port": 5433, "flags.new_fraud_check": True}}, learnt
    )
    assert [(o.key, o.target) for o in found] == [
        ("db.pool_max", 12),  # log(12/3) = 1.39, farther than an unseen value (log 2)
        ("db.port", 5432),
        ("flags.new_fraud_check", False),
    ]
    assert ranges.out_of_range({"payments": {"db.pool_max": 20, "db.port": 6432}}, learnt) == []


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_every_world_carries_harmless_decoys(difficulty: str) -> None:
    low, high = DECOYS[difficulty]
    counts = []
    for seed in range(30):
        draw = draw_world(seed, topo.DEFAULT_T0, {}, (low, high))  # healthy, or it raises
        counts.append(len(draw.decoys))
        assert len(draw.decoys) <= high
    assert min(counts) >= 1 and sum(counts) / len(counts) >= low * 0.75, counts


def _decoy_resets(task: Task) -> list[tuple[str, dict[str, object]]]:
    """Each of the task's world decoys outside its allowed changes, set back to the typical
    world's value (what a range calibrator would do)."""
    draw = draw_world(task.world.seed, task.incident.start, {}, DECOYS[task.difficulty])
    allowed = set(task.ground_truth.allowed_changes)
    t0 = rk.t0_values(task)
    out = []
    for item in draw.decoys:
        service, key = item.split(":", 1)
        typical = BASE_FILES[service].values[key]
        if item in allowed or t0[service][key] == typical:  # a decoy may land on the typical
            continue
        if key == "deploy.replicas":
            out.append((item, a("scale", service=service, replicas=int(typical))))
        else:
            value = str(typical).lower() if isinstance(typical, bool) else str(typical)
            out.append((item, a("set_config", service=service, key=key, value=value)))
    return out


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_touching_a_decoy_fails_the_task_the_oracle_passes(task_id: str) -> None:
    task = BY_ID[task_id]
    resets = _decoy_resets(task)
    assert task.world.generator.startswith("srez-worlds/")
    oracle = rk.grade(task, rk.oracle(task))
    for item, reset in resets:
        touched = rk.grade(task, [*rk.oracle(task), reset])
        assert not touched.passed, item
        assert touched.reward.total < oracle.reward.total, item


def test_most_canonical_tasks_carry_a_decoy_outside_their_allowed_changes() -> None:
    with_decoys = [t.id for t in TASKS if _decoy_resets(t)]
    assert len(with_decoys) >= 0.8 * len(TASKS), with_decoys


def test_range_runs_are_deterministic() -> None:
    learnt = reference_ranges()[0]
    hard = [t for t in TASKS if t.difficulty == "hard"]
    first = ranges.run(hard, learnt, "culprit")
    again = ranges.run(hard, learnt, "culprit")
    assert {k: g.to_json() for k, g in first.items()} == {k: g.to_json() for k, g in again.items()}


def test_heuristic_expert_is_unchanged_by_the_decoys() -> None:
    """The decoys are invisible to an agent that diagnoses from symptoms: the heuristic expert
    passes exactly the tasks whose calibration block says it does."""
    for task in TASKS:
        grade = grade_episode(
            play_episode(task, make_agent("heuristic", task, 0), name="heuristic").record()
        )
        assert grade.passed == task.calibration.heuristic_expected, task.id
