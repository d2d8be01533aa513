"""The tool specs exported to agents are built from the argument models (docs/environment.md
§3.7)."""

from __future__ import annotations

import inspect

from envkit import started

from conftest import BY_ID
from srez_env.actions import FAULT_GLOSSARY, TOOLS, openai_tools
from srez_env.env import SREEnv
from srez_env.observe import Observer
from srez_env.vocab import FAULT_KINDS


def test_the_registry_tools_in_openai_form_with_closed_arguments() -> None:
    specs = openai_tools()
    assert [s["function"]["name"] for s in specs] == list(TOOLS)
    assert len(specs) == len(TOOLS)
    for spec in specs:
        params = spec["function"]["parameters"]
        assert spec["type"] == "function" and spec["function"]["description"]
        assert params["type"] == "object" and params["additionalProperties"] is False
    by_name = {s["function"]["name"]: s["function"]["parameters"] for s in specs}
    assert by_name["get_logs"]["required"] == ["service"]
    assert by_name["get_logs"]["properties"]["limit"]["maximum"] == 100
    assert by_name["declare_root_cause"]["properties"]["fault"]["enum"] == list(FAULT_KINDS)
    assert by_name["scale"]["properties"]["replicas"]["minimum"] == 0
    # argument docstrings reach the schema the agent reads
    assert "case-insensitive" in by_name["get_logs"]["properties"]["grep"]["description"]


def test_every_fault_kind_has_a_gloss() -> None:
    assert tuple(FAULT_GLOSSARY) == FAULT_KINDS
    assert all(FAULT_GLOSSARY.values())


def test_openai_tools_returns_an_independent_copy() -> None:
    first = openai_tools()
    first[0]["function"]["name"] = "changed"
    assert openai_tools()[0]["function"]["name"] == "list_services"


def test_set_config_accepts_unquoted_numbers_and_booleans() -> None:
    env = started(BY_ID["sre-029"])
    pool = {"service": "payments", "key": "db.pool_max", "value": 20}
    assert env.step({"tool": "set_config", "args": pool}).observation["ok"]
    flag = {"service": "payments", "key": "flags.new_fraud_check", "value": False}
    assert env.step({"tool": "set_config", "args": flag}).observation["ok"]
    extra = {"tool": "get_alerts", "args": {"verbose": True}}
    assert env.step(extra).observation["error"]["code"] == "BAD_ARGS"


def test_prompt_holds_brief_alerts_budget_tools_and_glossary() -> None:
    task = BY_ID["sre-007"]
    prompt = SREEnv(task).reset()
    text = prompt["text"]
    assert task.incident.brief in text
    assert "Step budget: 40." in text
    assert "- get_logs(service, since?, grep?, limit?)" in text
    assert "- conn_pool_exhaustion:" in text
    # §4.1: every violating service alerts in the easy tier, all since the onset (09:48)
    assert {(a["name"], a["service"]) for a in prompt["alerts"]} == {
        ("HighErrorRate", "gateway"),
        ("HighLatencyP99", "gateway"),
        ("HighErrorRate", "payments"),
        ("HighLatencyP99", "payments"),
        ("ServiceDown", "payments"),
    }
    assert {a["since"] for a in prompt["alerts"]} == {"2025-03-14T09:48:00Z"}
    # the prompt never carries the answer, nor the task's id (an id is a key to look it up by)
    assert "pool_max" not in text and "ground_truth" not in str(prompt)
    assert task.id not in str(prompt) and "task_id" not in prompt


def test_every_read_tool_is_an_observer_method_taking_its_arguments() -> None:
    """A read tool is served by the Observer method of its name (env dispatches by name): adding
    one is its ToolSpec plus that method, whose parameters are the clock and the model's fields."""
    read_tools = [spec for spec in TOOLS.values() if spec.tool_class == "read"]
    assert len(read_tools) == 7
    for spec in read_tools:
        method = getattr(Observer, spec.name, None)
        assert callable(method), f"Observer has no method {spec.name}"
        params = list(inspect.signature(method).parameters)
        assert params == ["self", "clock", *spec.args.model_fields], spec.name
