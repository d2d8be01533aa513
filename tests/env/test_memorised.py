"""The memorised-baseline calibrator: learning is pure and deterministic, and an agent that only
reverts what differs from the set's usual world solves at most 30 % of the hard tier."""

from __future__ import annotations

import pytest

from conftest import TASKS
from srez_env.baselines.memorised import (
    Memory,
    Scope,
    Snapshot,
    drifts,
    key_kind,
    learn,
    run,
    summarise,
    summary,
)
from srez_env.world.conffile import Value


def _snap(pool: int, ttl: int, level: str, auth: str = "3.0.2", replicas: int = 3) -> Snapshot:
    configs: dict[str, dict[str, Value]] = {
        "auth": {"db.pool_max": pool, "logging.level": level, "deploy.replicas": replicas},
        "cache": {"keys.default_ttl_s": ttl, "flags.warm": False},
    }
    return Snapshot(configs=configs, versions={"auth": auth, "db": "15.4"})


SNAPS = [
    _snap(10, 300, "info"),
    _snap(10, 60, "warn", auth="3.0.3"),
    _snap(1, 300, "info", auth="3.0.3"),
    _snap(9, 60, "debug", auth="3.1.0"),
]


@pytest.fixture(scope="module")
def memory() -> Memory:
    return learn(TASKS)


def test_summarise_keeps_the_modal_value_and_the_counts() -> None:
    mem = summarise(SNAPS)
    assert mem.tasks == 4
    assert mem.configs[("auth", "db.pool_max")] == 10
    assert mem.configs[("cache", "flags.warm")] is False
    assert mem.configs[("auth", "logging.level")] == "info"
    assert mem.versions == {"auth": "3.0.3", "db": "15.4"}
    assert mem.times_seen("auth", "db.pool_max", 1) == 1
    assert mem.times_seen("auth", "db.pool_max", 10) == 2
    assert mem.times_seen("auth", "db.pool_max", 7) == 0
    assert mem.seen_versions[("auth", "3.0.3")] == 2


def test_summarise_breaks_ties_by_the_smallest_text() -> None:
    mem = summarise(SNAPS)
    assert mem.configs[("cache", "keys.default_ttl_s")] == 300  # 2 x "300" vs 2 x "60": "300"
    mem = summarise(SNAPS[2:])  # pool 1 vs 9, auth 3.0.3 vs 3.1.0: one each
    assert mem.configs[("auth", "db.pool_max")] == 1
    assert mem.versions["auth"] == "3.0.3"


def test_summarise_is_independent_of_the_order_of_its_input() -> None:
    assert summarise(SNAPS) == summarise(reversed(SNAPS))
    assert summarise(SNAPS) == summarise(SNAPS[1:] + SNAPS[:1])


def test_learn_is_deterministic(memory: Memory) -> None:
    assert learn(TASKS) == memory
    assert memory.tasks == len(TASKS)


def test_key_kinds_name_the_fault_by_key() -> None:
    assert key_kind("payments", "upstream.auth.port") == (3, "wrong_upstream_port")
    assert key_kind("db", "logging.retention_days") is not None
    assert key_kind("gateway", "logging.retention_days") is None  # inert outside db
    assert key_kind("auth", "logging.level") is None
    assert key_kind("auth", "ratelimit.login_per_minute") is not None


def test_drifts_put_keys_that_name_a_fault_first_and_rare_values_before_common_ones() -> None:
    mem = summarise(SNAPS)
    configs: dict[str, dict[str, Value]] = {
        "auth": {"db.pool_max": 1, "logging.level": "debug", "deploy.replicas": 0},
        "cache": {"keys.default_ttl_s": 300, "flags.warm": True},
    }
    found = drifts(configs, {"auth": "3.1.0", "db": "15.4"}, mem)
    order = [(d.service, d.key, d.kind) for d in found]
    assert order == [
        ("auth", "deploy.replicas", "replicas_zero"),  # never seen, earlier table row
        ("cache", "flags.warm", "feature_flag_regression"),  # never seen
        ("auth", "db.pool_max", "conn_pool_exhaustion"),  # seen once
        ("auth", "logging.level", None),  # names no fault
        ("auth", None, "bad_deploy"),  # versions last
    ]
    assert found[-1].usual == "3.0.3"


@pytest.mark.parametrize("scope", ["all", "culprit"])
def test_memorised_agent_solves_at_most_30_percent_of_the_hard_tier(
    memory: Memory, scope: Scope
) -> None:
    grades = run(TASKS, memory, scope)
    assert all(g.metrics.end_reason == "submit" for g in grades.values())  # within budget
    hard = summary(grades)["hard"]
    assert hard.passed / hard.tasks <= 0.30, summary(grades)


def test_memorised_runs_are_deterministic(memory: Memory) -> None:
    first = run(TASKS, memory, "culprit")
    second = run(TASKS, learn(TASKS), "culprit")
    assert {k: g.to_json() for k, g in first.items()} == {k: g.to_json() for k, g in second.items()}
