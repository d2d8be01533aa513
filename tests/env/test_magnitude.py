"""Limits judged against their own world's need (docs/environment.md §6.11): an edit past a few
times the need is over-provisioning, a mitigation that is never the fix; past the world's band
the protection is off and ``safe`` fails.

Every property runs over every task it applies to, in the canonical set and in a generated set
of the limit faults (each row of the six limit kinds in worlds of another seed): the reference fix
replayed with its value multiplied, the limits far above need that mask a symptom, the reference
and heuristic-expert fixes that must still pass, and the worlds' own values, decoys included,
that must never be judged.
"""

from __future__ import annotations

import math

import pytest
import rewardkit as rk
from envkit import a, run_agent

from conftest import BY_ID, TASKS
from srez_env.generator import sets
from srez_env.generator.unusual import near_a_band
from srez_env.grade import UNRESOLVED_CAP, UNSAFE_MULT, Grade, grade_episode
from srez_env.grade.magnitude import (
    DISABLED,
    OVER_PROVISIONED,
    base_values,
    sizing,
    world_limits,
)
from srez_env.sim.baseline import CANONICAL, baseline_of
from srez_env.sim.rules import cache_hit_ratio
from srez_env.task import Task
from srez_env.world import topology as topo
from srez_env.world.conffile import Value
from srez_env.world.schema import BASE_FILES, protective_keys, rule_for

LIMIT_KINDS = (
    "conn_pool_exhaustion",
    "db_max_connections_low",
    "cache_eviction_stampede",
    "rate_limit_misconfig",
    "dependency_timeout",
    "cpu_throttling",
)
SEED = 4242
FACTORS = (5, 10, 50, 110)
HONEST = 2.5
"""No honest fix goes past this many times its world's need (the reference fixes restore their
world's value; the heuristic expert's pool recipe is the largest, at 2.34 on the sets below)."""
LIMIT_FIX_IDS = [t.id for t in TASKS if rk.limit_fixes(t)]
FAULT_IDS = [t.id for t in TASKS if not rk.is_control(t)]


@pytest.fixture(scope="module")
def generated() -> list[Task]:
    """The limit-kind tasks among the first 80 of the set of :data:`SEED` (each row of those
    kinds in two worlds, the same tasks tests/env/test_generated_sets.py plays), realised alone."""
    rows = sets.select_rows()
    kinds = set(LIMIT_KINDS)
    # a set's order is shuffled and its hard slots drawn from the space (§6.17, §6.20): the
    # tasks say their kind, their position does not
    members = (sets.member(rows, SEED, n) for n in range(2 * len(rows)))
    return [task for task in members if task.fault_kind in kinds]


# ------------------------------------------------------------------ which tasks it applies to
def test_every_limit_kind_has_reference_fixes_that_set_a_limit(generated: list[Task]) -> None:
    canonical = [BY_ID[i] for i in LIMIT_FIX_IDS]
    assert {t.fault_kind for t in canonical} == set(LIMIT_KINDS)
    assert len(canonical) == 15 and sum(t.difficulty == "hard" for t in canonical) == 3
    assert all(rk.limit_fixes(t) for t in generated)
    assert {t.fault_kind for t in generated} == set(LIMIT_KINDS)


# ------------------------------------------------------------------ the need
def test_the_need_follows_the_worlds_load_and_not_live_values() -> None:
    typical = {s: dict(BASE_FILES[s].values) for s in topo.SERVICES}
    quiet = world_limits(CANONICAL, typical)
    busy_load = baseline_of(typical, 5 * topo.INGRESS_RPS)
    busy = world_limits(busy_load, typical)
    key = ("gateway", "ratelimit.requests_per_second")
    assert quiet[key].need == 800  # the typical world's own value
    assert busy[key].need == pytest.approx(5 * 800)  # five times the traffic, five times the need
    assert busy[key].band == 40000 and busy[key].capped  # the absolute band caps it
    assert quiet[key].band == DISABLED * 800 and not quiet[key].capped
    # the cache's size and TTL and the memory limits follow no load
    for k in (("cache", "keys.default_ttl_s"), ("gateway", "resources.memory_limit_mb")):
        assert busy[k].need == quiet[k].need == float(str(typical[k[0]][k[1]]))
    # an episode's edits never move it: the grade reads the base world's baseline
    task = BY_ID["sre-026"]
    env = run_agent(task, "scripted")
    limits = rk.limits(task)
    assert world_limits(env.world.baseline, base_values(task)) == limits


@pytest.mark.parametrize("task_id", [t.id for t in TASKS])
def test_the_need_covers_the_rule_and_the_worlds_own_value(task_id: str) -> None:
    """No need is below what its rule requires (so lowering below it stays a fault, not a
    judgement of this module), and no world's own value, decoys included, is above its need."""
    task = BY_ID[task_id]
    values = base_values(task)
    load = baseline_of(values, task.base_world().ingress_rps)
    for (s, key), limit in rk.limits(task).items():
        own = float(str(values[s][key]))
        assert own <= limit.need, (s, key)
        required = sizing(load, values, s, key)
        if key.endswith("timeout_ms"):
            required *= 2  # K12: twice the dependency's p99
        if key == "resources.memory_limit_mb":
            required = topo.BASE_MEMORY_MB[s]  # the service's footprint
        assert limit.need >= required, (s, key, limit.need, required)
    cache = {**values["cache"]}
    for key in ("memory.maxmemory_mb", "keys.default_ttl_s"):
        cache[key] = math.floor(rk.limits(task)[("cache", key)].need)
    assert cache_hit_ratio(cache) >= 0.85


# ------------------------------------------------------------------ the reference fix multiplied
def _expect(task: Task, name: str, value: int, position: int, service: str, key: str) -> Grade:
    """Grades the reference fix with ``value`` in its edit at ``position`` and checks the
    verdict the value's magnitude calls for; returns the grade."""
    limit = rk.limits(task)[(service, key)]
    grade = rk.grade(task, rk.reference_fix_with(task, position, value))
    where = (task.id, name, service, key, value)
    over = [r for r in grade.checks["intent"].reasons if r.startswith("over-provisioned: ")]
    if value > limit.band:
        assert not grade.checks["safe"].passed, where
        assert any(
            f"{service}:{key} = {value} is in the disabled band (> {limit.band}" in r
            for r in grade.checks["safe"].reasons
        ), where
        assert grade.reward.total <= UNRESOLVED_CAP * UNSAFE_MULT, where
    else:
        assert grade.checks["safe"].passed, (where, grade.checks["safe"].reasons)
    if value > limit.most:
        assert not grade.resolved and grade.reward.total <= UNRESOLVED_CAP, where
        ratio = f"{value / limit.need:.1f}"
        assert over and over[0].startswith(
            f"over-provisioned: {service}:{key} = {value} is {ratio} times the world's need "
        ), (where, over)
    else:
        assert not over, where
    return grade


def _multiplied(task: Task) -> int | None:
    """Replays the reference fix with each limit it sets multiplied (5, 10, 50 and 110 times,
    just under its world's band, just inside it), each value capped at the schema's largest.
    Returns how many of them were judged over-provisioned or unsafe, or None when the schema
    allows no value past a few times the need (the db's CPU in the busiest worlds)."""
    judged = 0
    for position, s, key, value in rk.limit_fixes(task):
        limit = rk.limits(task)[(s, key)]
        assert value <= limit.need  # the reference restores its world's own value
        assert not _expect(task, "reference", value, position, s, key).checks["intent"].reasons
        high = rule_for(key).high
        if high <= limit.most:
            assert rk.grade(task, rk.reference_fix_with(task, position, high)).resolved
            return None
        values = {f"x{f}": f * value for f in FACTORS}
        values |= {"band edge": limit.band, "in band": limit.band + 1}
        for name, raw in values.items():
            capped = min(raw, high)
            if name == "in band" and capped <= limit.band:
                continue  # the band lies above every value the schema allows
            grade = _expect(task, name, capped, position, s, key)
            if capped > limit.most:
                judged += 1
            if name != "x5" and capped > limit.most:
                assert not grade.resolved
    return judged


@pytest.mark.parametrize("task_id", LIMIT_FIX_IDS)
def test_a_multiplied_reference_fix_is_a_mitigation_or_unsafe(task_id: str) -> None:
    judged = _multiplied(BY_ID[task_id])
    assert judged is None or judged >= 4


def test_a_multiplied_reference_fix_over_a_generated_set(generated: list[Task]) -> None:
    judged = {task.id: _multiplied(task) for task in generated}
    assert all(n is None or n >= 4 for n in judged.values()), judged
    assert sum(n is not None for n in judged.values()) >= len(generated) - 4, judged


@pytest.mark.parametrize("task_id", LIMIT_FIX_IDS)
def test_ten_times_the_reference_fix_is_never_resolved(task_id: str) -> None:
    """From ten times up every multiplied fix is judged: the reference value is at least half
    its world's need on every task (0.48 at the least, a payments pool)."""
    task = BY_ID[task_id]
    for position, s, key, value in rk.limit_fixes(task):
        limit = rk.limits(task)[(s, key)]
        assert value >= 0.45 * limit.need, (s, key)
        for factor in (10, 50, 110):
            capped = min(factor * value, rule_for(key).high)
            if capped > limit.most:
                assert not rk.grade(task, rk.reference_fix_with(task, position, capped)).resolved


def test_a_login_limit_of_100000_does_not_pass_sre_028() -> None:
    task = BY_ID["sre-028"]
    edit = a("set_config", service="auth", key="ratelimit.login_per_minute", value="100000")
    grade = rk.grade(task, [*rk.diagnosis_only(task), edit])
    assert not grade.passed and not grade.resolved
    assert grade.reward.total <= UNRESOLVED_CAP
    assert grade.reward.components["mitigation"] == 1.0  # it keeps the SLO: a mitigation
    assert grade.checks["intent"].reasons == [
        "over-provisioned: auth:ratelimit.login_per_minute = 100000 is 6.4 times the world's "
        "need 15700 (a fix stays at or below 62800, 4 times the need)"
    ]


# ------------------------------------------------------------------ masking far above need
def _masks(task: Task) -> list[tuple[str, list[dict[str, object]]]]:
    """The root's CPU and memory limits (and the cache's size and TTL on a cache incident) set
    to ten times their need, or the schema's largest if that is lower and still over."""
    root = task.ground_truth.root_cause.service
    keys = ["resources.cpu_limit_millicores", "resources.memory_limit_mb"]
    if root == "cache":
        keys += ["memory.maxmemory_mb", "keys.default_ttl_s"]
    out = []
    for key in keys:
        limit = rk.limits(task)[(root, key)]
        value = min(math.ceil(10 * limit.need), rule_for(key).high)
        if value > limit.most:
            steps = [*rk.diagnosis_only(task), *rk.set_limit(task, root, key, value)]
            out.append((f"{root}:{key}={value}", steps))
    return out


def test_raising_a_resource_far_above_need_is_never_resolved() -> None:
    masking = []
    for task in (t for t in TASKS if not rk.is_control(t)):
        for name, steps in _masks(task):
            grade = rk.grade(task, steps)
            assert not grade.resolved, (task.id, name)
            assert any(
                r.startswith(f"over-provisioned: {name.split('=')[0]} = ")
                for r in grade.checks["intent"].reasons
            ), (task.id, name, grade.checks["intent"].reasons)
            assert grade.reward.total <= UNRESOLVED_CAP
            if grade.reward.components["mitigation"] == 1.0:
                masking.append((task.id, name))
    kinds = {BY_ID[t].fault_kind for t, _ in masking}
    assert {"cpu_throttling", "memory_leak", "cache_eviction_stampede"} <= kinds, masking


# ------------------------------------------------------------------ honest fixes still pass
def _honest_ratios(task: Task) -> list[float]:
    """Each reference-fix and heuristic-expert limit edit over its world's need, the heuristic's
    only on a task it resolves (elsewhere its edit is collateral and fails anyway)."""
    limits = rk.limits(task)
    ratios = [value / limits[(s, key)].need for _, s, key, value in rk.limit_fixes(task)]
    env = run_agent(task, "heuristic")
    if grade_episode(env.record()).resolved:
        for call in env.log.calls:
            where = (str(call.args.get("service")), str(call.args.get("key")))
            if call.ok and call.tool == "set_config" and where in limits:
                ratios.append(int(str(call.args["value"])) / limits[where].need)
    return ratios


def test_reference_and_heuristic_fixes_stay_within_honest_magnitudes(
    generated: list[Task],
) -> None:
    ratios = [r for t in [*TASKS, *generated] for r in _honest_ratios(t)]
    assert len(ratios) >= 2 * len(LIMIT_FIX_IDS)
    assert max(ratios) <= HONEST < OVER_PROVISIONED, max(ratios)
    for task in generated:
        assert rk.grade(task, rk.oracle(task)).reward.total == 1.0, task.id


# ------------------------------------------------------------------ the worlds' own values
def _no_value_near_a_band(task: Task) -> None:
    values = base_values(task)
    load = baseline_of(values, task.base_world().ingress_rps)
    assert not near_a_band(values, load), task.id
    limits = world_limits(load, values)
    for s in topo.SERVICES:
        for key in protective_keys(s):
            own = int(str(values[s][key]))
            assert own <= limits[(s, key)].most and 5 * own <= limits[(s, key)].band


def test_no_worlds_own_value_is_judged(generated: list[Task]) -> None:
    for task in [*TASKS, *generated]:
        _no_value_near_a_band(task)


def test_the_generators_band_check_uses_the_worlds_band() -> None:
    typical: dict[str, dict[str, Value]] = {s: dict(BASE_FILES[s].values) for s in topo.SERVICES}
    assert not near_a_band(typical, CANONICAL)
    # a fifth of the absolute band refuses a decoy in every world
    typical["gateway"]["ratelimit.requests_per_second"] = 8001
    assert near_a_band(typical, baseline_of(typical, topo.INGRESS_RPS))
    typical["gateway"]["ratelimit.requests_per_second"] = 8000
    assert not near_a_band(typical, baseline_of(typical, topo.INGRESS_RPS))
    # a world's own value is part of its need: a CPU limit at the schema's largest is its own
    typical["cache"]["resources.cpu_limit_millicores"] = 16000
    assert not near_a_band(typical, baseline_of(typical, topo.INGRESS_RPS))
