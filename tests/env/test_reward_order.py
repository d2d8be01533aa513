"""The ordering invariants of the reward (docs/tasks.md, "What the grade rewards"), as properties over
every task and as a pure property of :func:`srez_env.grade.reward_total`.

Over the tasks: correct fix + correct RCA > a mitigation that keeps the SLO while the cause still
fires, or a fix that over-provisions its limit (same RCA and evidence) > the correct diagnosis
with no change > nothing, and no unresolved run reaches a resolved one. The trajectories come from ``rewardkit``, so the same properties can
run over a generated set of tasks.
"""

from __future__ import annotations

import itertools

import pytest
import rewardkit as rk

from conftest import BY_ID, TASK_IDS, TASKS
from srez_env.grade import RESOLVED_FLOOR, UNRESOLVED_CAP, Grade, reward_total
from srez_env.task import Task

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:
    HAVE_HYPOTHESIS = False
else:
    HAVE_HYPOTHESIS = True
    UNIT = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)

FAULT_IDS = [t.id for t in TASKS if not rk.is_control(t)]


def _mitigations(task: Task) -> list[tuple[str, Grade]]:
    """The candidate mitigations that keep the SLO in both states while the injected rule
    instances still fire at the end of the soak."""
    out = []
    for name, actions in rk.mitigation_candidates(task):
        grade, injected, fired = rk.graded(task, actions)
        if grade.reward.components["mitigation"] == 1.0 and set(injected) & set(fired):
            out.append((name, grade))
    return out


@pytest.mark.parametrize("task_id", FAULT_IDS)
def test_fix_beats_mitigation_beats_diagnosis_beats_nothing(task_id: str) -> None:
    task = BY_ID[task_id]
    fix = rk.grade(task, rk.oracle(task))
    diagnosis = rk.grade(task, rk.diagnosis_only(task))
    nothing = rk.grade(task, [])
    assert fix.resolved and not diagnosis.resolved and not nothing.resolved
    for name, mitigation in _mitigations(task):
        assert not mitigation.resolved, name
        assert fix.reward.total > mitigation.reward.total > diagnosis.reward.total, name
    assert diagnosis.reward.total > nothing.reward.total


@pytest.mark.parametrize("task_id", [t.id for t in TASKS if rk.over_provisioned_fixes(t)])
def test_fix_beats_an_over_provisioned_fix_beats_diagnosis(task_id: str) -> None:
    """The reference fix with its limit raised past four times the world's need: the same
    diagnosis and evidence, a mitigation at best (a pool past the db's connection budget is not
    even valid), never resolved."""
    task = BY_ID[task_id]
    fix = rk.grade(task, rk.oracle(task))
    diagnosis = rk.grade(task, rk.diagnosis_only(task))
    for name, actions in rk.over_provisioned_fixes(task):
        over = rk.grade(task, actions)
        assert not over.resolved, name
        assert fix.reward.total > over.reward.total >= diagnosis.reward.total, name


def test_some_tasks_have_a_generic_mitigation() -> None:
    found = {t.id: [n for n, _ in _mitigations(t)] for t in TASKS if not rk.is_control(t)}
    with_one = {k: v for k, v in found.items() if v}
    assert len(with_one) >= 3, with_one


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_no_unresolved_run_reaches_a_resolved_one(task_id: str) -> None:
    task = BY_ID[task_id]
    trajectories = [
        rk.oracle(task),
        rk.diagnosis_only(task),
        [],
        rk.restart_all(task),
        *(actions for _, actions in rk.shotguns(task)),
        *(actions for _, actions in rk.mitigation_candidates(task)),
        *(actions for _, actions in rk.rebreaks(task)),
        *(actions for _, actions in rk.over_provisioned_fixes(task)),
        rk.tls_up_down(task, restart=True),
    ]
    grades = [rk.grade(task, actions) for actions in trajectories]
    resolved = [g.reward.total for g in grades if g.resolved]
    unresolved = [g.reward.total for g in grades if not g.resolved]
    assert resolved, "the oracle resolves every task"
    assert not unresolved or max(unresolved) < min(resolved)


@pytest.mark.parametrize("task_id", [t.id for t in TASKS if rk.is_control(t)])
def test_on_a_control_the_declaration_is_the_whole_answer(task_id: str) -> None:
    task = BY_ID[task_id]
    oracle = rk.grade(task, rk.oracle(task))
    assert oracle.reward.total == 1.0
    assert oracle.reward.total > rk.grade(task, []).reward.total


# ------------------------------------------------------------------ the reward function itself
GRID = (0.0, 0.25, 0.5, 0.75, 1.0)


def _check_reward(
    rca: float, evidence: float, mitigation: float, minimal: float, eff: float
) -> None:
    def r(resolved: bool, safe: bool = True, **changes: float) -> float:
        values = {
            "rca": rca,
            "evidence": evidence,
            "mitigation": mitigation,
            "minimal": minimal,
            "eff": eff,
            **changes,
        }
        return reward_total(resolved=resolved, safe=safe, **values)

    def with_one(resolved: bool, name: str) -> float:
        return r(resolved, True, **{name: 1.0})

    resolved, unresolved = r(True), r(False)
    assert RESOLVED_FLOOR <= resolved <= 1.0
    assert 0.0 <= unresolved <= UNRESOLVED_CAP < RESOLVED_FLOOR
    assert r(False, safe=False) <= UNRESOLVED_CAP * 0.25
    # every component pays (weakly) in its tier
    for name in ("rca", "evidence", "mitigation"):
        assert with_one(False, name) >= unresolved
    for name in ("rca", "evidence", "minimal", "eff"):
        assert with_one(True, name) >= resolved
    # mitigation over a bare diagnosis; a diagnosis over nothing
    assert r(False, mitigation=1.0) > r(False, mitigation=0.0)
    assert r(False, rca=1.0, mitigation=0.0) > r(False, rca=0.0, evidence=0.0, mitigation=0.0)
    # three unneeded operations (minimal <= 0.25) cap a resolved run at 0.7 whatever else
    assert r(True, minimal=min(minimal, 0.25)) <= 0.7 + 1e-9
    assert r(True, rca=1.0, evidence=1.0, eff=1.0, minimal=1.0) == 1.0


def test_reward_function_over_an_exhaustive_grid() -> None:
    for values in itertools.product(GRID, repeat=5):
        _check_reward(*values)


if HAVE_HYPOTHESIS:  # not a declared dependency: the grid above runs either way

    @settings(max_examples=300, deadline=None, database=None)
    @given(UNIT, UNIT, UNIT, UNIT, UNIT)
    def test_reward_function_property_based(
        rca: float, evidence: float, mitigation: float, minimal: float, eff: float
    ) -> None:
        _check_reward(rca, evidence, mitigation, minimal, eff)
