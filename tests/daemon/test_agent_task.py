"""The agent process reads ``GET /task`` without the wire models: the same fields as the daemon's
``AgentTask``, the same refusals, and none of pydantic's start-up cost."""

from __future__ import annotations

import re
import subprocess
import sys
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
    names = list(AgentTaskFields._fields)
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


def test_the_agent_process_goes_without_logging_and_dataclasses() -> None:
    """With what they import (inspect, ast, traceback, threading...), about 2 MB of a thin
    agent's private memory: 200 MB at 100 runs (bench/thin.py, ``pss_mb_per_run_by_part``)."""
    watched = ("dataclasses", "inspect", "logging")
    assert loaded_by("srez_daemon.agent.__main__", watched) == []
    assert loaded_by("srez_daemon.protocol.api", watched) == ["dataclasses", "inspect"]


AGENT_LOG_LINE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?:INFO|WARNING) [^\n]+\n"


@pytest.mark.parametrize("user_logs", [False, True])
def test_the_agent_log_reads_the_same_with_or_without_logging(user_logs: bool) -> None:
    """``say`` writes logging's format itself; once an agent of the user's imported logging,
    the agent's lines and the user's go through logging, in the same format."""
    code = (
        ("import logging\n" if user_logs else "") + "from srez_daemon.agent.__main__ import say\n"
        "say('INFO', 'exit 0; litellm imported: False')\n"
        + ("logging.getLogger('mine').warning('from the agent')\n" if user_logs else "")
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    lines = re.findall(AGENT_LOG_LINE, done.stderr)
    assert "".join(lines) == done.stderr  # every line in the format, nothing else
    said = [line.split(" ", 3)[3] for line in lines]
    expected = ["exit 0; litellm imported: False\n"] + ["from the agent\n"] * user_logs
    assert said == expected


@pytest.mark.parametrize("spec", ["heuristic", "noop", "restart-all", "llm"])
def test_an_agent_process_loads_only_its_own_agent(spec: str) -> None:
    """The agents that need no task model start without pydantic (0.1 s of every start); the
    scripted oracle, which is handed the task file, is the positive control."""
    code = (
        "import json, sys\n"
        "from srez_env.agents import build_agent\n"
        f"build_agent({spec!r}, task_id='sre-001')\n"
        "print(json.dumps(['pydantic' in sys.modules, 'srez_env.baselines.scripted' in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[false, false]"
    control = code.replace(
        f"build_agent({spec!r}, task_id='sre-001')",
        "import srez_env.agents.__init__; from srez_env.baselines.scripted import ScriptedAgent",
    )
    done = subprocess.run(
        [sys.executable, "-c", control], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[true, true]"
