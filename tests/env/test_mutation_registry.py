"""What counts as a mutation comes from the action registry, never from a copy of its list.

A tool the registry classes as mutating must be counted by the grade at once: in the episode's
``mutations`` metric, and as an unneeded operation on a control, where every change costs.
"""

from __future__ import annotations

import pytest
from envkit import a, grade_of

from conftest import TASKS
from srez_env import actions
from srez_env.grade.reward import is_mutation


def test_every_registered_mutating_tool_is_a_mutation_and_no_read_tool_is() -> None:
    for name, tool in actions.TOOLS.items():
        assert is_mutation(name) == (tool.tool_class == "mutate"), name


def test_a_tool_added_to_the_registry_as_mutating_is_counted_by_the_grade(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    control = next(t for t in TASKS if t.fault_kind == "none")
    moves = [a("get_alerts"), a("declare_root_cause", service="none", fault="none")]
    before = grade_of(control, moves)
    assert before.metrics.mutations == 0 and before.metrics.unneeded_ops == 0
    # the registry now says get_alerts changes the system: the grade must follow it
    monkeypatch.setattr(actions, "MUTATING", actions.MUTATING | {"get_alerts"})
    after = grade_of(control, moves)
    assert after.metrics.mutations == 1
    assert after.metrics.unneeded_ops == 1
    assert after.reward.total < before.reward.total
