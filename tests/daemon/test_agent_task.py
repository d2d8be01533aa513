"""The agent process reads ``GET /task`` without the wire models: the same fields as the daemon's
``AgentTask``, the same refusals, and none of pydantic's start-up cost."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from processkit import loaded_by

from srez_daemon.protocol.agent import AgentTaskFields, parse_agent_task
from srez_daemon.protocol.api import AgentTask


def _task(**changes: Any) -> dict[str, Any]:
    task = AgentTask(
        task_id="sre-001", run_id="r1", run_seed=3, max_steps=20, prompt={"text": "hi"}
    ).model_dump(mode="json")
    return task | changes


def test_the_agent_reads_the_fields_the_daemon_sends() -> None:
    names = [f.name for f in dataclasses.fields(AgentTaskFields)]
    assert names == list(AgentTask.model_fields)
    parsed = parse_agent_task(_task(oracle={"id": "sre-001"}))
    assert parsed == AgentTaskFields("sre-001", "r1", 3, 20, {"text": "hi"}, {"id": "sre-001"})
    assert parse_agent_task(_task(newer_field=1)).oracle is None


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ([], "not a JSON object"),
        (_task(run_seed="3"), "'run_seed' must be int"),
        (_task(max_steps=True), "'max_steps' must be int"),
        ({k: v for k, v in _task().items() if k != "task_id"}, "'task_id' must be str"),
        (_task(prompt="text"), "'prompt' must be an object"),
        (_task(oracle=[1]), "'oracle' must be an object or null"),
    ],
)
def test_a_body_that_is_not_a_task_is_refused_in_one_line(body: object, says: str) -> None:
    with pytest.raises(ValueError, match=says) as refused:
        parse_agent_task(body)
    assert "\n" not in str(refused.value)


def test_the_agent_process_imports_no_wire_model_library() -> None:
    watched = ("pydantic", "aiohttp", "litellm", "srez_daemon.protocol.api", "srez_env.task")
    assert loaded_by("srez_daemon.agent.__main__", watched) == []
    # a positive control: the check sees the modules a heavier import does load
    assert loaded_by("srez_daemon.protocol.api", watched) == [
        "pydantic",
        "srez_daemon.protocol.api",
    ]
