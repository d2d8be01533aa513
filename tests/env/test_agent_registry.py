"""One table of the built-in agents (srez_env.agent_registry): every row is an agent that
exists under its name, and every place that needs agent names reads them from the table; no
module keeps a list of its own."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import get_args

import pytest

from literal_kit import copies
from srez_client.managed.models import AgentKind, make_target
from srez_client.results.report import FLOOR_AGENTS
from srez_client.tui.widgets.launch_wizard import AGENTS as WIZARD_AGENTS
from srez_daemon.agent.__main__ import tls_unused
from srez_daemon.headless import check_agent
from srez_env import agent_registry
from srez_env.agent_registry import AGENTS, BY_NAME
from srez_env.agents import AGENT_KINDS, build_agent
from srez_env.agents.llm import LLM_SPECS
from srez_env.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("env", "daemon", "client")
"""Where agent names are read (``bench`` picks the agents of each measurement on purpose)."""
ALLOWED = {
    Path("env/srez_env/agent_registry.py"),  # the table
    Path("client/srez_client/managed/models.py"),  # AgentKind: a Literal for the schema, held below
}


@pytest.mark.parametrize("agent", AGENTS, ids=lambda a: a.name)
def test_every_row_points_at_what_exists(agent: agent_registry.BuiltinAgent) -> None:
    module, _, attribute = agent.module.partition(":")
    implementation = getattr(importlib.import_module(module), attribute)
    declared = getattr(implementation, "name", None)
    if isinstance(declared, str):  # a class that files its runs under a fixed name
        assert declared == agent.name or agent.role == "calibrator"


@pytest.mark.parametrize("name", agent_registry.LAUNCHABLE)
def test_every_launchable_agent_is_built_under_its_own_name(name: str) -> None:
    task = load_tasks(["sre-007"])[0]
    built = build_agent(name, task_id=task.id, oracle=task if BY_NAME[name].needs_truth else None)
    assert built.name == name


def test_only_the_oracle_reads_the_truth_and_only_llms_call_out() -> None:
    assert [a.name for a in AGENTS if a.needs_truth] == ["scripted"]
    assert {a.name for a in AGENTS if a.networked} == set(agent_registry.LLM) == set(LLM_SPECS)


def test_every_place_that_names_agents_reads_the_table() -> None:
    launchable = set(agent_registry.LAUNCHABLE)
    assert {"diagnostician", "noop", "restart-all"} <= launchable
    assert launchable <= set(AGENT_KINDS) and "replay:FILE" in AGENT_KINDS
    assert set(WIZARD_AGENTS) == launchable and WIZARD_AGENTS[0] == "heuristic"
    for name in launchable:
        check_agent(name)  # headless mode: raises for a name it does not run
    assert set(get_args(AgentKind)) == {*agent_registry.MANAGED_BASELINES, *agent_registry.LLM}
    for name in agent_registry.MANAGED_BASELINES:
        assert make_target(name).agent == name
    assert FLOOR_AGENTS == agent_registry.FLOORS == ("noop", "restart-all")
    for name in agent_registry.OFFLINE:
        assert tls_unused({"SREZ_AGENT_SPEC": name})
    assert not tls_unused({"SREZ_AGENT_SPEC": "llm", "SREZ_LLM_API_BASE": "https://x"})


def test_no_module_keeps_a_list_of_agent_names_of_its_own() -> None:
    """A tuple, list or set literal naming three or more built-in agents outside the table is a
    copy that will drift (as ``range`` and ``loudest`` went missing from the reserved names)."""
    assert copies(agent_registry.NAMES, allowed=ALLOWED, sources=SOURCES) == []
