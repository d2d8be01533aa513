"""What names tools is derived from the action registry (``srez_env.actions.TOOLS``), never copied.

A tool the registry gains is, at once, one the random agent may pick (a read tool or a mutation,
by its class) and one an evidence item may name (a read tool); a tool it does not hold is neither.
"""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

from srez_env import actions
from srez_env.actions import ServiceArgs, ToolClass, ToolSpec
from srez_env.baselines.random_agent import RandomAgent
from srez_env.task import EvidenceItem

STEPS = 2000
"""Steps of the random agent sampled per test: every read and mutating tool is picked."""


def _picks(agent: RandomAgent) -> Counter[str]:
    observation = {"max_steps": STEPS + 1}
    return Counter(agent.act(observation)["tool"] for _ in range(STEPS))


def _register(monkeypatch: pytest.MonkeyPatch, name: str, tool_class: ToolClass) -> None:
    spec = ToolSpec(
        name=name, tool_class=tool_class, description=f"a new {tool_class} tool", args=ServiceArgs
    )
    monkeypatch.setitem(actions.TOOLS, name, spec)


def _evidence(tool: str) -> EvidenceItem:
    return EvidenceItem.model_validate(
        {"id": "E1", "tool": tool, "match": {"service": "db"}, "why": "the db's own view"}
    )


def test_the_random_agent_picks_exactly_the_registry_tools_of_each_class() -> None:
    picked = set(_picks(RandomAgent(task_seed=11)))
    named = {"wait", "declare_root_cause"}  # picked by name: one tool each, a fixed share
    assert picked == {*actions.tools_of("read"), *actions.tools_of("mutate"), *named}


@pytest.mark.parametrize("tool_class", ["read", "mutate"])
def test_a_tool_added_to_the_registry_is_one_the_random_agent_may_pick(
    monkeypatch: pytest.MonkeyPatch, tool_class: ToolClass
) -> None:
    assert "get_traces" not in _picks(RandomAgent(task_seed=11))
    _register(monkeypatch, "get_traces", tool_class)
    agent = RandomAgent(task_seed=11)
    calls = [agent.act({"max_steps": STEPS + 1}) for _ in range(STEPS)]
    added = [call for call in calls if call["tool"] == "get_traces"]
    assert added, f"the random agent never picked the new {tool_class} tool"
    # it fills the arguments it knows of the tool's model: here the service
    assert all(set(call["args"]) == {"service"} for call in added)


def test_an_evidence_item_names_exactly_the_registry_read_tools() -> None:
    for name, tool in actions.TOOLS.items():
        if tool.tool_class == "read" and "service" in tool.args.model_fields:
            assert _evidence(name).tool == name
        elif tool.tool_class != "read":
            with pytest.raises(ValidationError, match="is not a read tool"):
                _evidence(name)


def test_a_read_tool_added_to_the_registry_is_one_evidence_may_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValidationError, match="'get_traces' is not a read tool"):
        _evidence("get_traces")
    _register(monkeypatch, "get_traces", "read")
    assert _evidence("get_traces").tool == "get_traces"
    with pytest.raises(ValidationError, match="grep not an argument of get_traces"):
        EvidenceItem.model_validate(
            {"id": "E1", "tool": "get_traces", "match": {"grep": "x"}, "why": "a filter"}
        )
